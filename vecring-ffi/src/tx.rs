//! Sending: copies of single frames and batches (at once, or waiting up to
//! a timeout for room), and the zero-copy reserve / alloc-or-push / commit
//! form. All of these belong to the link's one producer thread; a second
//! thread inside one of them at the same moment gets `VECRING_E_BUSY`.

use crate::blocking::{self, TxWaiter};
use crate::error::{
    guard, push_error, send_error, Error, FULL, VECRING_E_AGAIN, VECRING_E_TOOBIG, VECRING_OK,
};
use crate::handle::{vecring_link, Staged};
use crate::table::{Lane, Ref};
use crate::vecring_frame_t;
use std::ffi::{c_int, c_void};
use std::time::Duration;
use vecring_core::{LinkSendError, PushError};

/// The bytes of a C buffer, checked for null and size.
///
/// # Safety
/// `data` must be null or valid for `len` reads for the returned lifetime.
pub(crate) unsafe fn bytes<'a>(
    data: *const c_void,
    len: usize,
    what: &str,
) -> Result<&'a [u8], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Error::inval(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Error::new(
            VECRING_E_TOOBIG,
            format!("{what} has {len} bytes"),
        ));
    }
    // SAFETY: non-null, `len <= isize::MAX`, and readable (caller).
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
}

/// A count for C's `int` return value.
pub(crate) fn c_count(n: usize) -> c_int {
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// Copies one frame into the link.
///
/// # Safety
/// `link` any value (checked); `frame` null or readable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn vecring_send(
    link: *mut vecring_link,
    frame: *const c_void,
    len: usize,
) -> c_int {
    // SAFETY: forwarded caller guarantees; 0 never sleeps.
    unsafe { vecring_send_timeout(link, frame, len, 0) }
}

/// [`vecring_send`], waiting up to `timeout_ms` (-1: no limit) for room,
/// through link down and up; `VECRING_E_AGAIN` if none came.
///
/// # Safety
/// As [`vecring_send`].
#[no_mangle]
pub unsafe extern "C" fn vecring_send_timeout(
    link: *mut vecring_link,
    frame: *const c_void,
    len: usize,
    timeout_ms: c_int,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        // SAFETY: forwarded caller guarantee.
        let bytes = unsafe { bytes(frame, len, "frame")? };
        let timeout = blocking::timeout(timeout_ms)?;
        let mut tx = h.tx()?;
        let sender = tx.sender()?;
        // Set at the first miss, so that a frame sent at once (the polling
        // path, `vecring_send`) does not read the clock.
        let mut deadline = None;
        loop {
            match sender.send(bytes) {
                Ok(()) => return Ok(VECRING_OK),
                // No room yet, or down: wait (unless told not to).
                Err(LinkSendError::Push(PushError::Full) | LinkSendError::NoPeer)
                    if timeout != Some(Duration::ZERO) => {}
                Err(e) => return Err(send_error(e)),
            }
            let until = *deadline.get_or_insert_with(|| blocking::deadline(timeout));
            let mut w = TxWaiter { sender, len };
            if !blocking::block(&h, &mut w, h.tx_fd(), blocking::left(until))? {
                return Err(Error::new(
                    VECRING_E_AGAIN,
                    format!("no room for the frame within {timeout_ms} ms"),
                ));
            }
        }
    })
}

/// Copies as many of `frames[0..count]` as fit, in order, with one index
/// update; returns how many (0 when not even the first fits).
///
/// # Safety
/// `link` any value (checked); `frames` null or readable for `count` entries,
/// each `data` readable for its `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn vecring_send_batch(
    link: *mut vecring_link,
    frames: *const vecring_frame_t,
    count: usize,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        if count == 0 {
            return Ok(0);
        }
        if frames.is_null() {
            return Err(Error::inval("frames is NULL"));
        }
        let count = count.min(c_int::MAX as usize);
        // SAFETY: non-null, readable for `count` entries (caller).
        let frames = unsafe { std::slice::from_raw_parts(frames, count) };
        if let Some(i) = frames.iter().position(|f| f.data.is_null() && f.len > 0) {
            return Err(Error::inval(format!("frames[{i}].data is NULL")));
        }
        let mut tx = h.tx()?;
        let sent = tx
            .sender()?
            .send_batch(frames.iter().map(|f| {
                // SAFETY: checked non-null when `len > 0`; readable (caller).
                unsafe { bytes(f.data.cast(), f.len as usize, "frame") }.unwrap_or(&[])
            }))
            .map_err(send_error)?;
        Ok(c_count(sent))
    })
}

/// Reserves up to `max_slots` free slots for frames written in place;
/// the number reserved goes to `*slots` (if not null).
///
/// # Safety
/// `link` any value (checked); `slots` null or writable.
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_reserve(
    link: *mut vecring_link,
    max_slots: u32,
    slots: *mut u32,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        if max_slots == 0 {
            return Err(Error::inval("max_slots is 0"));
        }
        let mut tx = h.tx()?;
        let free = tx.open_chunk(max_slots as usize)?.free_slots();
        if free == 0 {
            tx.chunk = None;
            return Err(Error::fixed(VECRING_E_AGAIN, FULL));
        }
        if !slots.is_null() {
            // SAFETY: non-null and writable (caller); `free <= max_slots`.
            unsafe { slots.write(free as u32) };
        }
        Ok(VECRING_OK)
    })
}

fn no_chunk() -> Error {
    Error::inval("no TX chunk is open: call vecring_tx_reserve() first")
}

/// Whether consecutive segments follow each other in memory.
fn contiguous(segments: &[(*mut u8, usize)]) -> bool {
    segments
        .windows(2)
        .all(|w| w[0].0.wrapping_add(w[0].1) == w[1].0)
}

/// Adds a frame of `len` bytes to the open chunk and stores in `*data` where
/// to write it (valid until commit or abort).
///
/// # Safety
/// `link` any value (checked); `data` null or writable.
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_alloc(
    link: *mut vecring_link,
    len: u32,
    data: *mut *mut u8,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        if data.is_null() {
            return Err(Error::inval(
                "data (the frame pointer's out pointer) is NULL",
            ));
        }
        let mut tx = h.tx()?;
        let st = &mut *tx;
        let chunk = st.chunk.as_mut().ok_or_else(no_chunk)?;
        let mut staged = st.spare.pop().unwrap_or(Staged {
            buf: Vec::new(),
            segments: Vec::new(),
        });
        staged.segments.clear();
        let pushed = chunk.push_with(len as usize, |w| {
            for seg in w.segments_mut() {
                staged.segments.push((seg.as_mut_ptr(), seg.len()));
            }
        });
        if let Err(e) = pushed {
            st.spare.push(staged);
            return Err(push_error(e));
        }
        let out = if contiguous(&staged.segments) {
            let first = staged.segments[0].0;
            st.spare.push(staged);
            first
        } else {
            // The frame's slots wrap around the end of the ring: C gets a
            // staging buffer, copied into the slots at commit.
            staged.buf.clear();
            staged.buf.resize(len as usize, 0);
            let p = staged.buf.as_mut_ptr();
            st.staged.push(staged);
            p
        };
        // SAFETY: non-null and writable (caller).
        unsafe { data.write(out) };
        Ok(VECRING_OK)
    })
}

/// Copies a frame into the open chunk.
///
/// # Safety
/// `link` any value (checked); `frame` null or readable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_push(
    link: *mut vecring_link,
    frame: *const c_void,
    len: usize,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        // SAFETY: forwarded caller guarantee.
        let bytes = unsafe { bytes(frame, len, "frame")? };
        let mut tx = h.tx()?;
        let chunk = tx.chunk.as_mut().ok_or_else(no_chunk)?;
        chunk.push(bytes).map_err(push_error)?;
        Ok(VECRING_OK)
    })
}

/// Publishes the open chunk's frames with one index update and closes it;
/// returns how many frames were published.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_commit(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let mut tx = h.tx()?;
        let chunk = tx.chunk.take().ok_or_else(no_chunk)?;
        for s in &tx.staged {
            let mut at = 0;
            for &(dst, n) in &s.segments {
                // SAFETY: `dst..dst+n` is a slot segment of a frame of
                // `chunk`, reserved for us until `commit` below and kept
                // mapped by the chunk; `buf` holds the frame's `sum(n)`
                // bytes; local memory and the ring do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(s.buf.as_ptr().add(at), dst, n) };
                at += n;
            }
        }
        let frames = chunk.commit();
        tx.recycle_staged();
        tx.sender()?.flush_counters();
        Ok(c_count(frames))
    })
}

/// Discards the open chunk (if any): none of its frames is sent.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_abort(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let mut tx = h.tx()?;
        tx.chunk = None;
        tx.recycle_staged();
        Ok(VECRING_OK)
    })
}

/// Frames sent in the current generation that the peer has not read yet
/// (0 when the link is down).
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_unread(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let mut tx = h.tx()?;
        let unread = tx.sender()?.unread();
        Ok(c_count(usize::try_from(unread).unwrap_or(usize::MAX)))
    })
}

/// 1 if the peer has a receiver on the link now (frames sent while it has
/// none may never be read), 0 if not or if the link is down.
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_tx_peer_present(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Tx)?;
        let mut tx = h.tx()?;
        Ok(c_int::from(tx.sender()?.peer_present()))
    })
}
