//! [`guarded`]: every entry point from C runs its Rust code under it, so a
//! bug reports an error and a log line instead of unwinding into C.

use super::log::vlog;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs a control operation, turning a panic (a bug) into `err` and a log
/// line instead of unwinding into C.
pub fn guarded<T>(what: &str, err: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            vlog!(ERR, "{what}: internal error (panic), operation failed");
            err
        }
    }
}
