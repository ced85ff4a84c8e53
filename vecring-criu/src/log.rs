//! Lines to CRIU's log (its `print_on_level`, looked up in the CRIU
//! process that loaded the plugin), or to stderr outside CRIU.

use std::ffi::{c_char, c_uint, CString};
use std::sync::OnceLock;

/// CRIU's `LOG_ERROR` and `LOG_INFO`.
const LOG_ERROR: c_uint = 1;
const LOG_INFO: c_uint = 3;

type PrintOnLevel = unsafe extern "C" fn(c_uint, *const c_char, ...);

fn criu_print() -> Option<PrintOnLevel> {
    static F: OnceLock<Option<PrintOnLevel>> = OnceLock::new();
    *F.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches
        // the process's global symbols.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"print_on_level".as_ptr()) };
        // SAFETY: CRIU's `void print_on_level(unsigned int, const char *,
        // ...)`, when the symbol exists.
        (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut libc::c_void, PrintOnLevel>(p) })
    })
}

fn line(level: c_uint, msg: &str) {
    let text = CString::new(format!("vecring: {}\n", msg.replace('\0', "\\0")))
        .unwrap_or_else(|_| CString::from(c"vecring: (unprintable)\n"));
    match criu_print() {
        // SAFETY: a "%s" format with one NUL-terminated string argument.
        Some(print) => unsafe { print(level, c"%s".as_ptr(), text.as_ptr()) },
        None => eprint!("{}", text.to_string_lossy()),
    }
}

pub(crate) fn error(msg: &str) {
    line(LOG_ERROR, msg);
}

pub(crate) fn info(msg: &str) {
    line(LOG_INFO, msg);
}
