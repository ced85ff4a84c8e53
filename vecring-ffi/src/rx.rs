//! Receiving: copies of single frames and batches (at once, or waiting up
//! to a timeout), and the zero-copy peek / release form. All of these
//! belong to the link's one consumer thread; a second thread inside one of
//! them at the same moment gets `VECRING_E_BUSY`.

use crate::blocking::{self, RxWaiter};
use crate::error::{corruption, guard, recv_error, Error, VECRING_E_AGAIN, VECRING_OK};
use crate::handle::vecring_link;
use crate::table::{Lane, Ref};
use crate::tx::c_count;
use crate::{vecring_buf_t, vecring_frame_t, VECRING_FRAME_COPIED};
use std::ffi::{c_int, c_void};
use std::time::Duration;
use vecring_core::{LinkRecvError, Receiver};

/// Copies the next frame into `buf` (`cap` bytes); its length goes to
/// `*len`, or the length it needs if it does not fit.
///
/// # Safety
/// `link` any value (checked); `buf` null or writable for `cap` bytes; `len` null
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn vecring_recv(
    link: *mut vecring_link,
    buf: *mut c_void,
    cap: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: forwarded caller guarantees; 0 never sleeps.
    unsafe { vecring_recv_timeout(link, buf, cap, len, 0) }
}

/// [`vecring_recv`], waiting up to `timeout_ms` (-1: no limit) for a frame,
/// through link down and up; `VECRING_E_AGAIN` if none came.
///
/// # Safety
/// As [`vecring_recv`].
#[no_mangle]
pub unsafe extern "C" fn vecring_recv_timeout(
    link: *mut vecring_link,
    buf: *mut c_void,
    cap: usize,
    len: *mut usize,
    timeout_ms: c_int,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        if len.is_null() {
            return Err(Error::inval("len is NULL"));
        }
        let timeout = blocking::timeout(timeout_ms)?;
        let dst: &mut [u8] = if cap == 0 {
            &mut []
        } else if buf.is_null() {
            return Err(Error::inval(format!("buf is NULL but cap is {cap}")));
        } else {
            // SAFETY: non-null, writable for `cap` bytes (caller); capped
            // at isize::MAX, far above any frame.
            unsafe {
                std::slice::from_raw_parts_mut(buf.cast::<u8>(), cap.min(isize::MAX as usize))
            }
        };
        let mut rx = h.rx()?;
        let r = rx.receiver()?;
        // Set at the first miss, so that a frame found at once (the
        // polling path, `vecring_recv`) does not read the clock.
        let mut deadline = None;
        loop {
            match r.recv(dst) {
                Ok(n) => {
                    // SAFETY: non-null and writable (caller).
                    unsafe { len.write(n) };
                    return Ok(VECRING_OK);
                }
                Err(LinkRecvError::BufferTooSmall { needed }) => {
                    // SAFETY: as above.
                    unsafe { len.write(needed) };
                    return Err(recv_error(LinkRecvError::BufferTooSmall { needed }));
                }
                // Nothing yet, or down: wait (unless told not to).
                Err(e @ (LinkRecvError::Empty | LinkRecvError::NoPeer))
                    if timeout == Some(Duration::ZERO) =>
                {
                    return Err(recv_error(e))
                }
                Err(LinkRecvError::Empty | LinkRecvError::NoPeer) => {}
                Err(e) => return Err(recv_error(e)),
            }
            let until = *deadline.get_or_insert_with(|| blocking::deadline(timeout));
            if !blocking::block(&h, &mut RxWaiter(r), h.rx_fd(), blocking::left(until))? {
                return Err(no_frame(timeout_ms));
            }
        }
    })
}

/// A receive that waited in vain.
fn no_frame(timeout_ms: c_int) -> Error {
    Error::new(
        VECRING_E_AGAIN,
        format!("no frame came within {timeout_ms} ms"),
    )
}

/// A C buffer known to be valid, as `recv_batch` wants it.
#[repr(transparent)]
struct CheckedBuf(vecring_buf_t);

impl AsMut<[u8]> for CheckedBuf {
    fn as_mut(&mut self) -> &mut [u8] {
        if self.0.cap == 0 {
            return &mut [];
        }
        // SAFETY: `CheckedBuf`s are only made in `vecring_recv_batch`,
        // after checking `data` is non-null when `cap > 0`; the caller
        // guarantees `data` is writable for `cap` bytes.
        unsafe { std::slice::from_raw_parts_mut(self.0.data, self.0.cap as usize) }
    }
}

/// Copies up to `count` frames, frame `i` into `bufs[i]` (its length in
/// `bufs[i].len`), releasing them with one index update; returns how many.
///
/// # Safety
/// `link` any value (checked); `bufs` null or valid for `count` entries, each
/// `data` writable for its `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn vecring_recv_batch(
    link: *mut vecring_link,
    bufs: *mut vecring_buf_t,
    count: usize,
) -> c_int {
    // SAFETY: forwarded caller guarantees; 0 never sleeps.
    unsafe { vecring_recv_batch_timeout(link, bufs, count, 0) }
}

/// [`vecring_recv_batch`], waiting up to `timeout_ms` (-1: no limit) for
/// the first frame, through link down and up; returns as soon as at least
/// one was read, or 0 if none came.
///
/// # Safety
/// As [`vecring_recv_batch`].
#[no_mangle]
pub unsafe extern "C" fn vecring_recv_batch_timeout(
    link: *mut vecring_link,
    bufs: *mut vecring_buf_t,
    count: usize,
    timeout_ms: c_int,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        let timeout = blocking::timeout(timeout_ms)?;
        if count == 0 {
            return Ok(0);
        }
        if bufs.is_null() {
            return Err(Error::inval("bufs is NULL"));
        }
        let count = count.min(c_int::MAX as usize);
        {
            // SAFETY: non-null, valid for `count` entries (caller).
            let plain = unsafe { std::slice::from_raw_parts(bufs, count) };
            if let Some(i) = plain.iter().position(|b| b.data.is_null() && b.cap > 0) {
                return Err(Error::inval(format!("bufs[{i}].data is NULL")));
            }
        }
        // SAFETY: `CheckedBuf` is a transparent wrapper, every entry was
        // checked above, and the shared view above has ended.
        let checked = unsafe { std::slice::from_raw_parts_mut(bufs.cast::<CheckedBuf>(), count) };
        let mut rx = h.rx()?;
        let mut lens = std::mem::take(&mut rx.lens);
        lens.clear();
        lens.resize(count, 0);
        let result = match rx.receiver() {
            Err(e) => Err(e),
            Ok(r) => recv_batch_waiting(&h, r, checked, &mut lens, timeout),
        };
        rx.lens = lens;
        result
    })
}

/// The loop of [`vecring_recv_batch_timeout`]: reads, and while there is
/// nothing to read waits up to `timeout` in all.
fn recv_batch_waiting(
    h: &Ref,
    r: &mut Receiver,
    bufs: &mut [CheckedBuf],
    lens: &mut [usize],
    timeout: Option<Duration>,
) -> Result<c_int, Error> {
    // Set at the first miss (see `vecring_recv_timeout`).
    let mut deadline = None;
    loop {
        match r.recv_batch(bufs, lens) {
            // Nothing yet, or down: wait (unless told not to).
            Ok(0) | Err(LinkRecvError::NoPeer) if timeout != Some(Duration::ZERO) => {}
            Ok(n) => {
                for (b, &l) in bufs.iter_mut().zip(&lens[..n]) {
                    b.0.len = l as u32;
                }
                return Ok(c_count(n));
            }
            Err(LinkRecvError::BufferTooSmall { needed }) => {
                bufs[0].0.len = u32::try_from(needed).unwrap_or(u32::MAX);
                return Err(recv_error(LinkRecvError::BufferTooSmall { needed }));
            }
            Err(e) => return Err(recv_error(e)),
        }
        let until = *deadline.get_or_insert_with(|| blocking::deadline(timeout));
        if !blocking::block(h, &mut RxWaiter(r), h.rx_fd(), blocking::left(until))? {
            return Ok(0);
        }
    }
}

/// Hands out up to `max` ready frames in place, in `frames[0..n]`; returns
/// `n`. They stay valid, and further peeks are refused, until
/// [`vecring_rx_release`].
///
/// # Safety
/// `link` any value (checked); `frames` null or writable for `max` entries.
#[no_mangle]
pub unsafe extern "C" fn vecring_rx_peek(
    link: *mut vecring_link,
    frames: *mut vecring_frame_t,
    max: usize,
) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        if max == 0 {
            return Err(Error::inval("max is 0"));
        }
        if frames.is_null() {
            return Err(Error::inval("frames is NULL"));
        }
        let max = max.min(c_int::MAX as usize);
        let mut rx = h.rx()?;
        rx.open_chunk(max)?;
        let st = &mut *rx;
        let Some(chunk) = st.chunk.as_mut() else {
            return Ok(0);
        };
        let mut n = 0;
        let mut failure = None;
        while n < max {
            let frame = match chunk.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(c) => {
                    failure = Some(c);
                    break;
                }
            };
            let len = frame.len();
            let first = frame.first_segment();
            // In place when the frame's slots follow each other in memory
            // (always, unless they wrap around the end of the ring).
            let mut end = first.as_ptr();
            let in_place = frame.segments().all(|s| {
                let follows = s.as_ptr() == end;
                end = s.as_ptr().wrapping_add(s.len());
                follows
            });
            let (data, flags) = if in_place {
                (first.as_ptr(), 0)
            } else {
                // Slots wrap around the end of the ring: hand out a copy.
                if st.bounce_used == st.bounce.len() {
                    st.bounce.push(Vec::new());
                }
                let b = &mut st.bounce[st.bounce_used];
                st.bounce_used += 1;
                b.clear();
                b.resize(len, 0);
                frame.copy_to(b);
                (b.as_ptr(), VECRING_FRAME_COPIED)
            };
            // SAFETY: `frames` is writable for `max > n` entries (caller).
            unsafe {
                frames.add(n).write(vecring_frame_t {
                    data,
                    len: len as u32,
                    flags,
                })
            };
            n += 1;
        }
        if n == 0 {
            // Nothing handed out: nothing to release.
            st.chunk = None;
            if let Some(c) = failure {
                return Err(corruption(c));
            }
        }
        Ok(c_count(n))
    })
}

/// Releases the frames of the last peek to the producer (does nothing if
/// none are held).
///
/// # Safety
/// None for `link` (any value is checked; see [`vecring_close`](crate::vecring_close)).
#[no_mangle]
pub unsafe extern "C" fn vecring_rx_release(link: *mut vecring_link) -> c_int {
    guard(|| {
        let h = Ref::new(link, Lane::Rx)?;
        let mut rx = h.rx()?;
        if rx.chunk.take().is_some() {
            rx.receiver()?.flush_counters();
        }
        Ok(VECRING_OK)
    })
}
