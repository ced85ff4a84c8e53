//! Receiving a frame longer than one mbuf into a chain of mbufs
//! (`RTE_ETH_RX_OFFLOAD_SCATTER`), for the RX burst of [`super::rx`].

use super::filter::Filter;
use super::mbuf::{free_bulk, seg_room};
use crate::sys::compat::mbuf;
use crate::sys::ffi::{self, rte_mbuf, rte_mempool};
use std::ptr;

/// What [`scatter_into`] did with a frame.
pub(crate) enum Scatter {
    /// The frame is in the chain starting at the head mbuf.
    Filled,
    /// The pool had too few mbufs; the head mbuf is unchanged.
    NoMbufs,
    /// The copy did not pass the filter; the head mbuf is reusable,
    /// unchained.
    Filtered,
}

/// Copies a frame of `len > buf_space` bytes given as `segments` into the
/// chain starting at `head`, allocating the extra segments from `pool`,
/// then filters the copy (with `filter`, see
/// [`Filter::accept`]). Unless the frame is [`Scatter::Filled`] in, `head`
/// is left reusable and unchained.
///
/// # Safety
/// `head` must be a freshly allocated mbuf of `pool` owned by the caller,
/// with `buf_space` bytes of room; `pool` a packet pool.
#[cold]
pub(crate) unsafe fn scatter_into<'a>(
    head: *mut rte_mbuf,
    pool: *mut rte_mempool,
    buf_space: usize,
    segments: impl Iterator<Item = &'a [u8]>,
    len: usize,
    filter: &Filter,
) -> Scatter {
    // Frames are at most 9216 bytes; a chain of more than 256 segments would
    // need mbufs of fewer than 36 bytes.
    const MAX_SEGS: usize = 256;
    let nsegs = len.div_ceil(buf_space);
    if nsegs > MAX_SEGS {
        return Scatter::NoMbufs;
    }
    let mut extra = [ptr::null_mut::<rte_mbuf>(); MAX_SEGS];
    // SAFETY: `extra` has room for `nsegs - 1 < MAX_SEGS` pointers.
    if unsafe { ffi::vecring_pktmbuf_alloc_bulk(pool, extra.as_mut_ptr(), (nsegs - 1) as u32) } != 0
    {
        return Scatter::NoMbufs;
    }
    // The chain: head, extra[0], ..., extra[nsegs - 2].
    let seg = |i: usize| if i == 0 { head } else { extra[i - 1] };
    let mut seg_idx = 0;
    let mut seg_fill = 0usize;
    for mut src in segments {
        while !src.is_empty() {
            let m = seg(seg_idx);
            let n = (buf_space - seg_fill).min(src.len());
            // SAFETY: `m` is ours with `buf_space` bytes of room, and
            // `seg_fill + n <= buf_space`.
            let room = unsafe { seg_room(m, buf_space) };
            room[seg_fill..seg_fill + n].copy_from_slice(&src[..n]);
            seg_fill += n;
            src = &src[n..];
            if seg_fill == buf_space && seg_idx + 1 < nsegs {
                // SAFETY: `m` is ours.
                unsafe { mbuf::set_data_len(m, buf_space as u16) };
                seg_idx += 1;
                seg_fill = 0;
            }
        }
    }
    // The destination MAC as copied (segments hold `buf_space` bytes each,
    // the last the rest, so it may span several when they are tiny).
    let mut dst = [0u8; 6];
    let mut got = 0;
    for i in 0..nsegs {
        if got == dst.len() {
            break;
        }
        let n = (dst.len() - got).min(buf_space).min(len - i * buf_space);
        // SAFETY: `seg(i)` is ours and holds at least `n` copied bytes.
        let room = unsafe { seg_room(seg(i), n) };
        dst[got..got + n].copy_from_slice(room);
        got += n;
    }
    if !filter.accept(&dst[..got]) {
        // SAFETY: the extra mbufs are ours, unlinked; `head` was never
        // chained.
        unsafe { free_bulk(extra.as_mut_ptr(), nsegs - 1) };
        return Scatter::Filtered;
    }
    // SAFETY: every mbuf of the chain is ours; linking them makes `head` own
    // the chain, which the application frees as one packet.
    unsafe {
        mbuf::set_data_len(seg(seg_idx), seg_fill as u16);
        for i in 1..nsegs {
            (*seg(i - 1)).next = seg(i);
        }
        mbuf::set_nb_segs(head, nsegs as u16);
        mbuf::set_pkt_len(head, len as u32);
    }
    Scatter::Filled
}
