//! The mbuf operations of the burst functions: a pool's data room, the
//! bytes and the room of one segment, and freeing in bulk. The fields whose
//! place differs between DPDK lines are read through
//! [`crate::sys::compat::mbuf`].

use crate::sys::compat::mbuf;
use crate::sys::ffi::{self, rte_mbuf, rte_mempool};
use std::slice;

/// Data bytes one mbuf of `pool` holds after its headroom (0 if none).
///
/// # Safety
/// `pool` must be a packet mbuf pool.
pub unsafe fn pool_buf_space(pool: *mut rte_mempool) -> usize {
    // SAFETY: the caller guarantees `pool` is a packet mbuf pool.
    usize::from(unsafe { ffi::vecring_pktmbuf_buf_space(pool) })
}

/// Frees `n` mbufs (and their chains) starting at `mbufs`.
///
/// # Safety
/// The mbufs must be valid and owned by the caller.
#[inline]
pub unsafe fn free_bulk(mbufs: *mut *mut rte_mbuf, n: usize) {
    if n > 0 {
        // SAFETY: the caller owns the `n` mbufs; `n <= u16::MAX` in every caller.
        unsafe { ffi::rte_pktmbuf_free_bulk(mbufs, n as u32) }
    }
}

/// Gives back the `n` mbufs a TX burst took. With fast free the application
/// has promised one pool and a reference count of 1 for every mbuf of the
/// queue; a burst the TX loop found `plain` (single-segment, direct mbufs
/// only) then goes straight back to that pool without the per-mbuf checks
/// of [`free_bulk`], which also read each mbuf's second cache line.
///
/// # Safety
/// The mbufs must be valid and owned by the caller; with `fast`, they must
/// keep the application's fast-free promise and be plain.
#[inline]
pub unsafe fn free_sent(mbufs: *mut *mut rte_mbuf, n: usize, fast: bool) {
    if fast && n > 0 {
        // SAFETY: per the caller, `n` raw-state mbufs of one pool (that of
        // the first); `n <= u16::MAX`.
        unsafe { ffi::vecring_mempool_put_bulk((**mbufs).pool, mbufs.cast(), n as u32) }
    } else {
        // SAFETY: per the caller.
        unsafe { free_bulk(mbufs, n) }
    }
}

/// The data bytes of one mbuf segment.
///
/// # Safety
/// `m` must be a valid mbuf whose `data_off + data_len` lies in its buffer.
#[inline]
pub unsafe fn seg_bytes<'a>(m: *const rte_mbuf) -> &'a [u8] {
    // SAFETY: the caller guarantees the segment's data lies inside its
    // buffer; the application does not modify an mbuf it passed to TX.
    unsafe {
        slice::from_raw_parts(
            (*m).buf_addr
                .cast::<u8>()
                .add(usize::from(mbuf::data_off(m))),
            usize::from(mbuf::data_len(m)),
        )
    }
}

/// The writable data room of one freshly reset mbuf (`buf_space` bytes).
///
/// # Safety
/// `m` must be a freshly allocated mbuf owned by the caller, with at least
/// `len` bytes after `data_off`.
#[inline]
pub unsafe fn seg_room<'a>(m: *mut rte_mbuf, len: usize) -> &'a mut [u8] {
    // SAFETY: the caller owns the mbuf and guarantees the room.
    unsafe {
        slice::from_raw_parts_mut(
            (*m).buf_addr
                .cast::<u8>()
                .add(usize::from(mbuf::data_off(m))),
            len,
        )
    }
}
