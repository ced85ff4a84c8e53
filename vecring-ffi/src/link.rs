//! Link-level calls: open, close, state, waiting, geometry and counters.
//! All but `vecring_close` may be called from any thread at any time.

use crate::error::{
    cstr, guard, link_error, Error, LINK_DOWN, VECRING_E_CLOSED, VECRING_E_LINK_DOWN,
    VECRING_E_TIMEDOUT, VECRING_OK,
};
use crate::handle::vecring_link;
use crate::options::{builder, vecring_options_t};
use crate::table::{self, Lane, Ref, POLL};
use std::ffi::{c_char, c_int, CStr};
use std::time::{Duration, Instant};
use vecring_core::{LinkError, LinkState};

/// A snapshot of a link's counters (`vecring_counters_t`); see
/// [`vecring_core::LinkCounters`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct vecring_counters_t {
    /// Current (or last) generation.
    pub generation: u64,
    /// Times the link came up.
    pub link_ups: u64,
    /// Times the link went down.
    pub link_downs: u64,
    /// Generations ended because the peer corrupted the memory.
    pub peer_corruptions: u64,
    /// Peers refused.
    pub rejected_peers: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames sent but unread when their generation ended.
    pub tx_lost_on_link_down: u64,
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
}

/// Opens a link as `*opts` says and stores its handle in `*link`.
///
/// # Safety
/// `opts` must be null or point to options filled by `vecring_options_init`
/// (strings NUL-terminated, arrays as long as their counts); `link` must be
/// null or writable.
#[no_mangle]
pub unsafe extern "C" fn vecring_open(
    opts: *const vecring_options_t,
    link: *mut *mut vecring_link,
) -> c_int {
    guard(|| {
        if link.is_null() {
            return Err(Error::inval("link (the handle's out pointer) is NULL"));
        }
        // SAFETY: non-null and writable (caller); cleared first so that a
        // failed open leaves NULL behind.
        unsafe { link.write(std::ptr::null_mut()) };
        if opts.is_null() {
            return Err(Error::inval("opts is NULL"));
        }
        // SAFETY: non-null; the caller guarantees the options' validity.
        let b = unsafe { builder(opts)? };
        let handle = table::insert(Box::new(vecring_link::new(b.open().map_err(link_error)?)?))?;
        // SAFETY: as above.
        unsafe { link.write(handle) };
        Ok(VECRING_OK)
    })
}

/// Closes a link: stops its control thread, disconnects the peer and (master)
/// removes its socket. `NULL` is accepted and does nothing. Calls on other
/// threads that are using the handle return (waits with
/// `VECRING_E_CLOSED`), and every later call on it gets `VECRING_E_CLOSED`;
/// the handle is freed when the last of those calls returns. Returns within
/// a second whatever the peer does.
///
/// # Safety
/// None: `link` may be any value (a handle is a token of the handle table,
/// checked, never dereferenced); `unsafe` for symmetry with the other calls.
#[no_mangle]
pub unsafe extern "C" fn vecring_close(link: *mut vecring_link) -> c_int {
    guard(|| {
        if link.is_null() {
            return Ok(VECRING_OK);
        }
        table::close(link)?;
        Ok(VECRING_OK)
    })
}

/// Runs `wait` (which waits up to the time it is given) in slices of
/// [`POLL`] until it returns `Some` or `timeout` passes, or until the
/// handle is closed.
fn wait_sliced<T>(
    h: &Ref,
    timeout: Duration,
    mut wait: impl FnMut(Duration) -> Option<T>,
) -> Result<Option<T>, Error> {
    let deadline = Instant::now().checked_add(timeout);
    loop {
        let left = deadline.map_or(POLL, |d| d.saturating_duration_since(Instant::now()));
        if let Some(done) = wait(left.min(POLL)) {
            return Ok(Some(done));
        }
        if h.closing() {
            return Err(Error::fixed(VECRING_E_CLOSED, CLOSED_WHILE_WAITING));
        }
        if left <= POLL {
            return Ok(None);
        }
    }
}

const CLOSED_WHILE_WAITING: &CStr = cstr!("the link was closed (by vecring_close) while waiting");

/// 1 if the link is up (and its generation in `*generation` if not null),
/// 0 if down.
///
/// # Safety
/// `link` any value (checked; see [`vecring_close`]), from any thread;
/// `generation` null or writable.
#[no_mangle]
pub unsafe extern "C" fn vecring_state(link: *const vecring_link, generation: *mut u64) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Link)?;
        let (up, g) = match h.link().state() {
            LinkState::Up { generation } => (1, generation),
            LinkState::Down => (0, 0),
        };
        if !generation.is_null() {
            // SAFETY: non-null and writable (caller).
            unsafe { generation.write(g) };
        }
        Ok(up)
    })
}

/// Waits up to `timeout_ms` for the link to come up.
///
/// # Safety
/// As [`vecring_state`].
#[no_mangle]
pub unsafe extern "C" fn vecring_wait_up(
    link: *const vecring_link,
    timeout_ms: u32,
    generation: *mut u64,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Link)?;
        let up = wait_sliced(
            &h,
            Duration::from_millis(timeout_ms.into()),
            |slice| match h.link().wait_up(slice) {
                Err(LinkError::Timeout(_)) => None,
                done => Some(done),
            },
        )?;
        let g = up
            .ok_or_else(|| {
                Error::new(
                    VECRING_E_TIMEDOUT,
                    format!("link did not come up within {timeout_ms} ms"),
                )
            })?
            .map_err(link_error)?;
        if !generation.is_null() {
            // SAFETY: non-null and writable (caller).
            unsafe { generation.write(g) };
        }
        Ok(VECRING_OK)
    })
}

/// Waits up to `timeout_ms` for the link to go down.
///
/// # Safety
/// As [`vecring_state`].
#[no_mangle]
pub unsafe extern "C" fn vecring_wait_down(link: *const vecring_link, timeout_ms: u32) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Link)?;
        let down = wait_sliced(&h, Duration::from_millis(timeout_ms.into()), |slice| {
            h.link().wait_down(slice).then_some(())
        })?;
        if down.is_some() {
            Ok(VECRING_OK)
        } else {
            Err(Error::new(
                VECRING_E_TIMEDOUT,
                format!("link still up after {timeout_ms} ms"),
            ))
        }
    })
}

/// The geometry of the current generation's rings.
///
/// # Safety
/// As [`vecring_state`]; each out pointer null or writable.
#[no_mangle]
pub unsafe extern "C" fn vecring_geometry(
    link: *const vecring_link,
    slot_count: *mut u32,
    slot_size: *mut u32,
    max_frame_len: *mut u32,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Link)?;
        let region = h
            .link()
            .region()
            .ok_or(Error::fixed(VECRING_E_LINK_DOWN, LINK_DOWN))?;
        let g = region.geometry();
        for (out, v) in [
            (slot_count, g.slot_count()),
            (slot_size, g.slot_size()),
            (max_frame_len, g.max_frame_len()),
        ] {
            if !out.is_null() {
                // SAFETY: non-null and writable (caller).
                unsafe { out.write(v) };
            }
        }
        Ok(VECRING_OK)
    })
}

/// Copies the link's counters into the first `size` bytes of `*out`.
///
/// # Safety
/// As [`vecring_state`]; `out` null or writable for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn vecring_counters(
    link: *const vecring_link,
    out: *mut vecring_counters_t,
    size: usize,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Link)?;
        if out.is_null() {
            return Err(Error::inval("out is NULL"));
        }
        if size == 0 {
            return Err(Error::inval("size is 0; pass sizeof(vecring_counters_t)"));
        }
        let c = h.link().counters();
        let snapshot = vecring_counters_t {
            generation: c.generation,
            link_ups: c.link_ups,
            link_downs: c.link_downs,
            peer_corruptions: c.peer_corruptions,
            rejected_peers: c.rejected_peers,
            tx_frames: c.tx_frames,
            tx_bytes: c.tx_bytes,
            tx_lost_on_link_down: c.tx_lost_on_link_down,
            rx_frames: c.rx_frames,
            rx_bytes: c.rx_bytes,
        };
        let n = size.min(std::mem::size_of::<vecring_counters_t>());
        // SAFETY: `n` bytes are readable from the local and writable at
        // `out` (caller guarantees `size >= n`); distinct memory.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&snapshot as *const vecring_counters_t).cast::<u8>(),
                out.cast::<u8>(),
                n,
            );
        }
        Ok(VECRING_OK)
    })
}

/// The library's version, e.g. `"0.1.0"`.
///
/// # Safety
/// Safe to call at any time. The string is static: the caller must not
/// free or write it.
#[no_mangle]
pub extern "C" fn vecring_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
