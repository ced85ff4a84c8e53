//! Error codes, the per-thread detail message, and `guard`, which every
//! exported function runs its body in so that no panic crosses into C.
//!
//! A call that fails returns one of the negative `VECRING_E_*` codes and
//! leaves a sentence saying what exactly went wrong in a thread-local slot
//! ([`vecring_last_error_message`]), as `dlerror` does. Errors of the hot
//! path (ring full or empty, link down) store a static sentence, so that
//! failing fast allocates nothing.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use vecring_core::memory::RegionError;
use vecring_core::ring::{Corruption, PushError};
use vecring_core::LinkError;
use vecring_core::{LinkRecvError, LinkSendError};

/// A `&'static CStr` from a string literal (`c"..."` needs Rust 1.77).
macro_rules! cstr {
    ($s:expr) => {
        match ::std::ffi::CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("string literal with an interior NUL"),
        }
    };
}
pub(crate) use cstr;

/// Success.
pub const VECRING_OK: c_int = 0;
/// An argument is invalid: a null pointer, a zero or out-of-range length,
/// a value that is not a link handle, a bad option, or a call out of
/// sequence.
pub const VECRING_E_INVAL: c_int = -1;
/// The link has no peer.
pub const VECRING_E_LINK_DOWN: c_int = -2;
/// The ring is full (send) or empty (receive): try again later.
pub const VECRING_E_AGAIN: c_int = -3;
/// The frame is longer than the link's maximum frame length.
pub const VECRING_E_TOOBIG: c_int = -4;
/// The buffer is too small for the next frame, which stays queued; the
/// length it needs is reported.
pub const VECRING_E_NOBUFS: c_int = -5;
/// The peer corrupted the shared memory; the link drops it and reconnects.
pub const VECRING_E_CORRUPT: c_int = -6;
/// The wait timed out.
pub const VECRING_E_TIMEDOUT: c_int = -7;
/// The peer refused us, or we refused the peer's memory.
pub const VECRING_E_REFUSED: c_int = -8;
/// Another live master holds the link.
pub const VECRING_E_EXISTS: c_int = -9;
/// A domain or link name is not allowed.
pub const VECRING_E_NAME: c_int = -10;
/// The NUMA node does not exist or memory could not be bound to it.
pub const VECRING_E_NUMA: c_int = -11;
/// The link memory could not be had (hugepages required but unavailable,
/// or out of memory).
pub const VECRING_E_NOMEM: c_int = -12;
/// A file-system, socket or other system call failed.
pub const VECRING_E_IO: c_int = -13;
/// The link's sender or receiver is in use by another thread right now.
pub const VECRING_E_BUSY: c_int = -14;
/// vecring had an internal error (a Rust panic, caught at the boundary).
pub const VECRING_E_PANIC: c_int = -15;
/// The peer broke the handshake protocol.
pub const VECRING_E_PROTO: c_int = -16;
/// The link handle was closed by `vecring_close` (before or during the
/// call).
pub const VECRING_E_CLOSED: c_int = -17;

/// Every code with the text [`vecring_strerror`] returns for it.
pub const ERROR_CODES: &[(c_int, &CStr)] = &[
    (VECRING_OK, cstr!("success")),
    (VECRING_E_INVAL, cstr!("invalid argument")),
    (VECRING_E_LINK_DOWN, cstr!("link is down")),
    (VECRING_E_AGAIN, cstr!("ring is full or empty, try again")),
    (
        VECRING_E_TOOBIG,
        cstr!("frame exceeds the link's maximum frame length"),
    ),
    (
        VECRING_E_NOBUFS,
        cstr!("buffer too small for the next frame"),
    ),
    (
        VECRING_E_CORRUPT,
        cstr!("shared memory corrupted by the peer"),
    ),
    (VECRING_E_TIMEDOUT, cstr!("timed out")),
    (VECRING_E_REFUSED, cstr!("refused by or of the peer")),
    (VECRING_E_EXISTS, cstr!("link already has a live master")),
    (VECRING_E_NAME, cstr!("invalid domain or link name")),
    (VECRING_E_NUMA, cstr!("NUMA node unavailable")),
    (
        VECRING_E_NOMEM,
        cstr!("link memory unavailable (hugepages or out of memory)"),
    ),
    (VECRING_E_IO, cstr!("system call failed")),
    (
        VECRING_E_BUSY,
        cstr!("sender or receiver in use by another thread"),
    ),
    (VECRING_E_PANIC, cstr!("internal error in vecring")),
    (VECRING_E_PROTO, cstr!("peer broke the handshake protocol")),
    (VECRING_E_CLOSED, cstr!("link handle is closed")),
];

const UNKNOWN: &CStr = cstr!("unknown vecring error code");
const NO_ERROR: &CStr = cstr!("");

/// What the last failed call on this thread said.
enum Detail {
    /// A fixed sentence (hot-path errors: nothing allocated).
    Static(&'static CStr),
    /// A formatted sentence.
    Owned(CString),
}

thread_local! {
    static LAST: RefCell<Detail> = const { RefCell::new(Detail::Static(NO_ERROR)) };
}

fn record(detail: Detail) {
    // `try_with`: during thread teardown the slot may be gone; the code
    // alone still reaches the caller.
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = detail;
        }
    });
}

/// A failure on its way to C: the code to return and what to record.
#[derive(Debug)]
pub(crate) struct Error {
    code: c_int,
    detail: Option<String>,
    fixed: &'static CStr,
}

impl Error {
    /// `code` with a formatted explanation.
    pub(crate) fn new(code: c_int, detail: impl Into<String>) -> Self {
        Error {
            code,
            detail: Some(detail.into()),
            fixed: NO_ERROR,
        }
    }

    /// `code` with a fixed explanation (nothing allocated).
    pub(crate) fn fixed(code: c_int, detail: &'static CStr) -> Self {
        Error {
            code,
            detail: None,
            fixed: detail,
        }
    }

    /// An invalid argument.
    pub(crate) fn inval(detail: impl Into<String>) -> Self {
        Self::new(VECRING_E_INVAL, detail)
    }

    fn record(self) -> c_int {
        let code = self.code;
        match self.detail {
            Some(text) => {
                let bytes: Vec<u8> = text.into_bytes().into_iter().filter(|&b| b != 0).collect();
                // No interior NUL is left, so this cannot fail.
                let c = CString::new(bytes).unwrap_or_default();
                record(Detail::Owned(c));
            }
            None => record(Detail::Static(self.fixed)),
        }
        code
    }
}

/// Runs the body of an exported function: a panic becomes
/// [`VECRING_E_PANIC`], an error its code; either leaves its explanation
/// for [`vecring_last_error_message`].
pub(crate) fn guard<F>(body: F) -> c_int
where
    F: FnOnce() -> Result<c_int, Error>,
{
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(e)) => e.record(),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            // Dropping a panic payload can itself panic; keep it from
            // unwinding into C.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            Error::new(
                VECRING_E_PANIC,
                format!("internal error in vecring (please report): {what}"),
            )
            .record()
        }
    }
}

/// Why a link could not be opened or brought up.
pub(crate) fn link_error(e: LinkError) -> Error {
    let code = match &e {
        LinkError::Name(_) => VECRING_E_NAME,
        LinkError::Geometry(_) => VECRING_E_INVAL,
        LinkError::Numa(_) => VECRING_E_NUMA,
        LinkError::Region(RegionError::NoHugepages { .. }) => VECRING_E_NOMEM,
        LinkError::Region(RegionError::Numa(_)) => VECRING_E_NUMA,
        LinkError::Region(RegionError::Geometry(_)) => VECRING_E_INVAL,
        LinkError::Region(RegionError::Os { source, .. }) => {
            if source.raw_os_error() == Some(libc::ENOMEM) {
                VECRING_E_NOMEM
            } else {
                VECRING_E_IO
            }
        }
        LinkError::Attach(_)
        | LinkError::Refused { .. }
        | LinkError::UntrustedMaster { .. }
        | LinkError::MasterInside { .. } => VECRING_E_REFUSED,
        // The name is someone else's: like a live master, a taken link.
        LinkError::NameTaken { .. } => VECRING_E_EXISTS,
        LinkError::Options(_) => VECRING_E_INVAL,
        // A symlink, a foreign owner or a mode others can write: the
        // message names the path and the problem.
        LinkError::Unsafe(_) => VECRING_E_IO,
        LinkError::MasterExists { .. } => VECRING_E_EXISTS,
        LinkError::Io { .. } => VECRING_E_IO,
        LinkError::Protocol(_) => VECRING_E_PROTO,
        LinkError::Timeout(_) => VECRING_E_TIMEDOUT,
        LinkError::AlreadyTaken { .. } => VECRING_E_BUSY,
        LinkError::NoSuchQueue { .. } => VECRING_E_INVAL,
        // A variant this crate does not know yet: its message says it.
        _ => VECRING_E_IO,
    };
    Error::new(code, e.to_string())
}

/// The peer corrupted the ring.
pub(crate) fn corruption(c: Corruption) -> Error {
    Error::new(
        VECRING_E_CORRUPT,
        format!("ring corrupted by peer: {c}; the link drops this peer and reconnects"),
    )
}

pub(crate) const LINK_DOWN: &CStr = cstr!("link is down: no peer attached");
pub(crate) const FULL: &CStr = cstr!("ring is full");
const EMPTY_RING: &CStr = cstr!("no frame waiting");
const LINK_CLOSED: &CStr = cstr!("link is closed");

/// Why a frame could not be queued.
pub(crate) fn push_error(e: PushError) -> Error {
    match e {
        PushError::Full => Error::fixed(VECRING_E_AGAIN, FULL),
        PushError::TooLarge { .. } => Error::new(VECRING_E_TOOBIG, e.to_string()),
        PushError::Empty => Error::inval("empty frame: frames carry 1 to 9216 bytes"),
    }
}

/// Why a frame could not be sent. A closed link is the handle's
/// `VECRING_E_CLOSED`; a timeout is the C API's `VECRING_E_AGAIN` of a
/// timed call that found no room.
pub(crate) fn send_error(e: LinkSendError) -> Error {
    match e {
        LinkSendError::Push(p) => push_error(p),
        LinkSendError::Corrupt(c) => corruption(c),
        LinkSendError::NoPeer => Error::fixed(VECRING_E_LINK_DOWN, LINK_DOWN),
        LinkSendError::Closed => Error::fixed(VECRING_E_CLOSED, LINK_CLOSED),
        LinkSendError::Timeout => Error::fixed(VECRING_E_AGAIN, FULL),
    }
}

/// Why a frame could not be received (`BufferTooSmall` is handled by the
/// callers, which report the length needed). A closed link and a timeout
/// as in [`send_error`].
pub(crate) fn recv_error(e: LinkRecvError) -> Error {
    match e {
        LinkRecvError::Empty | LinkRecvError::Timeout => Error::fixed(VECRING_E_AGAIN, EMPTY_RING),
        LinkRecvError::BufferTooSmall { needed } => Error::new(
            VECRING_E_NOBUFS,
            format!(
                "the next frame has {needed} bytes and does not fit the buffer; it stays queued"
            ),
        ),
        LinkRecvError::Corrupt(c) => corruption(c),
        LinkRecvError::NoPeer => Error::fixed(VECRING_E_LINK_DOWN, LINK_DOWN),
        LinkRecvError::Closed => Error::fixed(VECRING_E_CLOSED, LINK_CLOSED),
    }
}

/// The text of an error code: a static string, never null.
///
/// # Safety
/// Safe for any code. The string is static: the caller must not free or
/// write it.
#[no_mangle]
pub extern "C" fn vecring_strerror(code: c_int) -> *const c_char {
    ERROR_CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or(UNKNOWN, |(_, text)| *text)
        .as_ptr()
}

/// What the last failed call on this thread said, or `""`; valid until the
/// next failing vecring call on this thread. Never null.
///
/// # Safety
/// Safe to call at any time. The caller must not free or write the
/// string, nor use it after the thread's next failing vecring call.
#[no_mangle]
pub extern "C" fn vecring_last_error_message() -> *const c_char {
    let read = || {
        LAST.try_with(|last| match last.try_borrow() {
            Ok(d) => match &*d {
                Detail::Static(s) => s.as_ptr(),
                Detail::Owned(c) => c.as_ptr(),
            },
            Err(_) => NO_ERROR.as_ptr(),
        })
        .unwrap_or(NO_ERROR.as_ptr())
    };
    catch_unwind(read).unwrap_or(NO_ERROR.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: `vecring_last_error_message` returns a valid C string.
        unsafe { CStr::from_ptr(vecring_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_code_and_a_message() {
        let code = guard(|| -> Result<c_int, Error> { panic!("boom {}", 7) });
        assert_eq!(code, VECRING_E_PANIC);
        assert!(last().contains("boom 7"), "{}", last());
        let code = guard(|| -> Result<c_int, Error> { std::panic::panic_any(42u8) });
        assert_eq!(code, VECRING_E_PANIC);
        assert!(last().contains("unknown panic"));
    }

    #[test]
    fn errors_leave_their_message_and_successes_keep_it() {
        assert_eq!(
            guard(|| Err(Error::inval("bad thing\0here"))),
            VECRING_E_INVAL
        );
        assert_eq!(last(), "bad thinghere");
        assert_eq!(guard(|| Ok(5)), 5);
        assert_eq!(last(), "bad thinghere");
        assert_eq!(guard(|| Err(push_error(PushError::Full))), VECRING_E_AGAIN);
        assert_eq!(last(), "ring is full");
    }

    #[test]
    fn every_code_has_a_distinct_text() {
        let mut texts: Vec<&CStr> = ERROR_CODES.iter().map(|(_, t)| *t).collect();
        texts.sort();
        texts.dedup();
        assert_eq!(texts.len(), ERROR_CODES.len());
        for (i, (code, _)) in ERROR_CODES.iter().enumerate() {
            assert_eq!(*code, -(i as c_int), "codes are 0, -1, -2, ... in order");
        }
        // SAFETY: `vecring_strerror` returns static C strings.
        let unknown = unsafe { CStr::from_ptr(vecring_strerror(-1000)) };
        assert_eq!(unknown, UNKNOWN);
    }
}
