//! Logging through DPDK's `rte_log`, under the driver's log type
//! `pmd.net.vecring` (default level NOTICE; `--log-level=pmd.net.vecring:debug`
//! shows more). Every line starts with `VECRING: `.
//!
//! The driver's own lines use [`vlog!`]; lines of `vecring-core`
//! (which logs with the `log` crate) are forwarded by the logger that [`install`] sets.

use super::ffi;
use std::ffi::CString;
use std::sync::Once;

/// Sends one line to `rte_log` at DPDK level `level` (see [`ffi::level`]).
pub fn emit(level: u32, msg: &str) {
    // An interior NUL cannot come from our own messages; replace it rather
    // than lose the line.
    let c = CString::new(msg)
        .unwrap_or_else(|_| CString::new(msg.replace('\0', "\\0")).expect("NULs were replaced"));
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call;
    // `vecring_log` passes it to rte_log as a `%s` argument only.
    unsafe { ffi::vecring_log(level, c.as_ptr()) }
}

/// Logs a formatted line at a DPDK level: `vlog!(ERR, "{name}: {e}")`.
macro_rules! vlog {
    ($level:ident, $($arg:tt)+) => {
        $crate::sys::log::emit($crate::sys::ffi::level::$level, &format!($($arg)+))
    };
}
pub(crate) use vlog;

/// Forwards `log` records (from `vecring-core`) to `rte_log`.
struct RteLogger;

impl log::Log for RteLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => ffi::level::ERR,
            log::Level::Warn => ffi::level::WARNING,
            log::Level::Info => ffi::level::INFO,
            log::Level::Debug | log::Level::Trace => ffi::level::DEBUG,
        };
        let text = record.args().to_string();
        // vecring-core prefixes its lines with "vecring: "; ours say VECRING.
        emit(level, text.strip_prefix("vecring: ").unwrap_or(&text));
    }

    fn flush(&self) {}
}

static LOGGER: RteLogger = RteLogger;
static INSTALL: Once = Once::new();

/// Installs the forwarder once per process and sets the `log` crate's
/// maximum level from the driver's current `rte_log` level, so that
/// `vecring-core` does not format lines that `rte_log` would drop.
pub fn install() {
    INSTALL.call_once(|| {
        // The `log` crate instance is private to this shared object, so the
        // logger cannot already be set by the host application.
        let _ = log::set_logger(&LOGGER);
    });
    // SAFETY: reading an `int` written once by glue.c's constructor, before
    // any probe can run.
    let logtype = unsafe { ffi::vecring_logtype };
    // SAFETY: plain call; an unknown log type yields a negative value.
    let lvl = unsafe { ffi::rte_log_get_level(logtype as u32) };
    let max = match lvl {
        l if l < 0 => log::LevelFilter::Warn,
        l if l as u32 <= ffi::level::ERR => log::LevelFilter::Error,
        l if l as u32 <= ffi::level::NOTICE => log::LevelFilter::Warn,
        l if l as u32 == ffi::level::INFO => log::LevelFilter::Info,
        _ => log::LevelFilter::Trace,
    };
    log::set_max_level(max);
}
