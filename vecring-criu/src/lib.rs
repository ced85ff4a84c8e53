//! `vecring-criu`: a CRIU plugin (CRIU 4.0 or later, plugin interface
//! 0.2) that makes a process holding vecring links checkpointable.
//!
//! A slave's link is memory shared with a master outside the dump and
//! descriptors of the host (the region's memfd, the doorbells, the
//! connection): CRIU cannot dump it, and a restored copy of the region
//! would be stale. So the plugin takes the link out of the process before
//! the dump, and lets the process attach again after the restore:
//!
//! - **`PAUSE_DEVICES`** (before CRIU freezes the tree): for each
//!   connection of a process of the tree to a vecring master, it asks that
//!   master to pause the link ([`vecring_core::pause`]). The master
//!   detaches the slave; the link goes down on both sides with its usual
//!   accounting (what one side sent and the other never took is counted
//!   lost on link down). Once the master answers, no process holds any of
//!   the link's memory: the dump holds nothing of it. The slave keeps
//!   running and asks again; its request waits while the pause lasts.
//! - **`DUMP_UNIX_SK`**: that waiting request's connection (its peer is
//!   the master, outside the dump) is claimed and recorded in the image
//!   directory (`vecring-criu.img`).
//! - **`RESTORE_UNIX_SK`**: a claimed connection comes back as a socket
//!   whose peer is gone: the restored slave reads the end of the
//!   connection at once and asks again, and gets a new generation.
//! - **fini**: the pauses end (the master serves again), whether the dump
//!   succeeded or not; they also end if CRIU dies.
//!
//! CRIU finds the plugin in its plugin directory: `--libdir DIR`, or
//! `libdir DIR` in a CRIU configuration file (runc reads
//! `/etc/criu/runc.conf`, or the file a container's `org.criu.config`
//! annotation names). Its lines go to CRIU's log, prefixed `vecring:`.

mod claimed;
mod log;
mod tree;

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::Duration;

/// CRIU's plugin interface version this plugin speaks (0.2.0, CRIU 4.0+).
const PLUGIN_VERSION: c_uint = 2 << 8;
/// Hook slots up to and including `PAUSE_DEVICES` (10): a CRIU that knows
/// fewer refuses the plugin rather than call a hook it does not have.
const MAX_HOOKS: usize = 11;
const HOOK_DUMP_UNIX_SK: usize = 0;
const HOOK_RESTORE_UNIX_SK: usize = 1;
const HOOK_PAUSE_DEVICES: usize = 10;
/// CRIU's stage numbers (`CR_PLUGIN_STAGE__*`).
const STAGE_DUMP: c_int = 0;

/// How long a master may take to answer a pause: the slave's process must
/// let go of the link's memory meanwhile.
pub(crate) const PAUSE_TIMEOUT: Duration = Duration::from_secs(10);

/// CRIU's `cr_plugin_desc_t`.
#[repr(C)]
pub struct PluginDesc {
    name: *const c_char,
    init: Option<extern "C" fn(c_int) -> c_int>,
    exit: Option<extern "C" fn(c_int, c_int)>,
    version: c_uint,
    max_hooks: c_uint,
    hooks: [*const c_void; MAX_HOOKS],
}

// SAFETY: the descriptor is immutable and its pointers are to static data
// and functions.
unsafe impl Sync for PluginDesc {}

const fn hooks() -> [*const c_void; MAX_HOOKS] {
    let mut h = [std::ptr::null(); MAX_HOOKS];
    h[HOOK_DUMP_UNIX_SK] = dump_unix_sk as *const c_void;
    h[HOOK_RESTORE_UNIX_SK] = restore_unix_sk as *const c_void;
    h[HOOK_PAUSE_DEVICES] = pause_devices as *const c_void;
    h
}

/// The descriptor CRIU looks up by name after `dlopen`.
#[no_mangle]
pub static CR_PLUGIN_DESC: PluginDesc = PluginDesc {
    name: c"vecring".as_ptr(),
    init: Some(init),
    exit: Some(fini),
    version: PLUGIN_VERSION,
    max_hooks: MAX_HOOKS as c_uint,
    hooks: hooks(),
};

/// The pauses held for this dump; dropped by [`fini`].
static HELD: Mutex<Vec<tree::Held>> = Mutex::new(Vec::new());

/// Runs a hook body, turning a panic into CRIU's failure (-1).
fn guarded(what: &str, f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        log::error(&format!("{what}: internal error (panic)"));
        -1
    })
}

extern "C" fn init(_stage: c_int) -> c_int {
    0
}

extern "C" fn fini(stage: c_int, ret: c_int) {
    let _ = catch_unwind(|| {
        let held: Vec<tree::Held> =
            std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
        if stage == STAGE_DUMP && !held.is_empty() {
            let outcome = if ret == 0 { "dumped" } else { "dump failed" };
            log::info(&format!(
                "{outcome}: ending the pause of {} link(s); their masters serve again",
                held.len()
            ));
        }
        drop(held);
    });
}

/// `PAUSE_DEVICES(pid)`: pauses every link of the tree rooted at `pid`.
extern "C" fn pause_devices(pid: c_int) -> c_int {
    guarded("pause", || {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        match tree::pause_tree(pid, &mut held) {
            // Not "handled": other plugins' hooks run too.
            Ok(()) => -libc::ENOTSUP,
            Err(e) => {
                log::error(&e);
                -1
            }
        }
    })
}

/// `DUMP_UNIX_SK(fd, ino)`: claims a paused link's waiting connection.
extern "C" fn dump_unix_sk(fd: c_int, ino: c_int) -> c_int {
    guarded("dump", || {
        let held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if !tree::is_paused_peer(fd, &held) {
            return -libc::ENOTSUP;
        }
        match claimed::record(ino as u32) {
            Ok(()) => {
                log::info(&format!(
                    "socket {ino:#x}: a request to a paused link's master; restored closed"
                ));
                0
            }
            Err(e) => {
                log::error(&format!(
                    "socket {ino:#x}: cannot record it in the image: {e}"
                ));
                -1
            }
        }
    })
}

/// `RESTORE_UNIX_SK(ino)`: a claimed connection comes back closed.
extern "C" fn restore_unix_sk(ino: c_int) -> c_int {
    guarded("restore", || match claimed::contains(ino as u32) {
        Ok(false) => -libc::ENOTSUP,
        Ok(true) => match claimed::closed_socket() {
            Ok(fd) => fd,
            Err(e) => {
                log::error(&format!("socket {ino:#x}: {e}"));
                -1
            }
        },
        Err(e) => {
            log::error(&format!("cannot read the claimed sockets: {e}"));
            -1
        }
    })
}
