//! `vecring_options_from_env`: the link's names from the process
//! environment, as a CDI device (`vecring cdi write`) sets it in a
//! container, so that a C application's image needs no per-container
//! command line. The same variables the tool's options and the DPDK
//! driver's `env=1` read.

use crate::error::{guard, Error};
use crate::options::{vecring_options_t, OPTIONS_SIZE_V1};
use std::ffi::{c_char, c_int, CStr};

/// The variables, and the field each fills.
const VARIABLES: [(&CStr, Field); 3] = [
    (c"VECRING_DOMAIN", Field::Domain),
    (c"VECRING_LINK", Field::Link),
    (c"VECRING_RUN_DIR", Field::RunDir),
];

#[derive(Clone, Copy)]
enum Field {
    Domain,
    Link,
    RunDir,
}

/// Sets `domain`, `link` and `run_dir` of `*opts` that are NULL to the
/// values of `VECRING_DOMAIN`, `VECRING_LINK` and `VECRING_RUN_DIR` that
/// are set (the environment's own strings, as `getenv` returns them:
/// `vecring_open` copies them). Returns how many fields it set.
///
/// # Safety
/// `opts` must be null or point to options filled by
/// `vecring_options_init` (at least their `size` bytes writable); no other
/// thread may change the environment meanwhile (as for `getenv`).
#[no_mangle]
pub unsafe extern "C" fn vecring_options_from_env(opts: *mut vecring_options_t) -> c_int {
    guard(|| {
        if opts.is_null() {
            return Err(Error::inval("opts is NULL"));
        }
        // SAFETY: non-null (checked) and readable (caller); `size` is the
        // first field, so 4 bytes are in bounds for any version.
        let size = unsafe { opts.cast::<u32>().read_unaligned() };
        let ours = std::mem::size_of::<vecring_options_t>() as u32;
        if !(OPTIONS_SIZE_V1..=ours).contains(&size) {
            return Err(Error::inval(format!(
                "options.size is {size}; call vecring_options_init() first (expected {ours})"
            )));
        }
        let mut set = 0;
        for (var, field) in VARIABLES {
            // SAFETY: the three fields lie in the first layout, inside the
            // caller's `size` bytes (checked above), which the caller
            // guarantees writable; the struct is the caller's, so the
            // fields are aligned.
            let slot: &mut *const c_char = unsafe {
                match field {
                    Field::Domain => &mut (*opts).domain,
                    Field::Link => &mut (*opts).link,
                    Field::RunDir => &mut (*opts).run_dir,
                }
            };
            if slot.is_null() {
                // SAFETY: a NUL-terminated name; the caller guarantees no
                // concurrent change of the environment.
                let value = unsafe { libc::getenv(var.as_ptr()) };
                if !value.is_null() {
                    *slot = value;
                    set += 1;
                }
            }
        }
        Ok(set)
    })
}
