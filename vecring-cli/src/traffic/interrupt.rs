//! Ctrl-C (SIGINT) as a request to stop: a traffic mode that installs the
//! handler ends what it is doing (sending, receiving, waiting for a peer)
//! and prints its summary instead of dying without one.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the handler.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Async-signal-safe: one atomic store.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Installs the handler: from now on Ctrl-C sets the flag instead of
/// ending the process.
pub fn install() {
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
}

/// Whether Ctrl-C was pressed since [`install`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
