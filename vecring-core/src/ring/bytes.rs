//! Raw access to ring memory: moving a frame's bytes (the copies of the
//! hot paths, small frames without a `memcpy` call, and non-temporal
//! stores), hinting the cache (prefetches), and comparing descriptors a
//! group at a time (whether the next four or eight one-slot frames'
//! descriptors all hold one validated word, in two 16-byte loads of four;
//! one atomic load each under loom and Miri).

use crate::abi::SlotDesc;
#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
use crate::sync::Ordering;
use core::ptr;

/// Copies `len` bytes; frames of up to 64 bytes with a few overlapping
/// unaligned loads and stores instead of a `memcpy` call, which dominates
/// the cost of a small frame.
///
/// # Safety
/// `src..src+len` must be readable, `dst..dst+len` writable, and the two
/// must not overlap.
#[inline(always)]
pub(super) unsafe fn copy_bytes(dst: *mut u8, src: *const u8, len: usize) {
    use core::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY: every access below lies within the first or the last
    // `k <= len` bytes of the two ranges the caller guarantees.
    unsafe {
        if len > 64 {
            ptr::copy_nonoverlapping(src, dst, len);
        } else if len >= 32 {
            copy_32_to_64(dst, src, len);
        } else if len >= 16 {
            let (a, b) = (rd(src.cast::<u128>()), rd(src.add(len - 16).cast::<u128>()));
            wr(dst.cast::<u128>(), a);
            wr(dst.add(len - 16).cast::<u128>(), b);
        } else if len >= 8 {
            let (a, b) = (rd(src.cast::<u64>()), rd(src.add(len - 8).cast::<u64>()));
            wr(dst.cast::<u64>(), a);
            wr(dst.add(len - 8).cast::<u64>(), b);
        } else {
            for i in 0..len {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// How a loop over frames of one length copies each: chosen once for the
/// length, not per frame.
pub(super) const COPY_32_TO_64: u8 = 0;
/// Longer than 64 bytes: `memcpy`, without [`copy_bytes`]'s dispatch.
pub(super) const COPY_MEMCPY: u8 = 1;
/// Any length: [`copy_bytes`].
pub(super) const COPY_ANY: u8 = 2;

/// Copies `len` bytes from `src` to `dst` the way `HOW` names.
///
/// # Safety
/// As for [`copy_bytes`], and `len` is 32 to 64 for [`COPY_32_TO_64`].
#[inline(always)]
pub(super) unsafe fn copy_as<const HOW: u8>(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        match HOW {
            COPY_32_TO_64 => copy_32_to_64(dst, src, len),
            COPY_MEMCPY => ptr::copy_nonoverlapping(src, dst, len),
            _ => copy_bytes(dst, src, len),
        }
    }
}

/// [`copy_bytes`] for 32 to 64 bytes: four 16-byte moves (not two
/// `[u8; 32]`s: those go through the stack).
///
/// # Safety
/// As for `copy_bytes`, and `32 <= len <= 64`.
#[inline(always)]
pub(super) unsafe fn copy_32_to_64(dst: *mut u8, src: *const u8, len: usize) {
    use core::ptr::{read_unaligned as rd, write_unaligned as wr};
    let tail = len - 32;
    // SAFETY: every access lies within the first or the last 32 of the
    // `len >= 32` bytes of the two ranges the caller guarantees.
    unsafe {
        let (a, b) = (rd(src.cast::<u128>()), rd(src.add(16).cast::<u128>()));
        let (c, d) = (
            rd(src.add(tail).cast::<u128>()),
            rd(src.add(tail + 16).cast::<u128>()),
        );
        wr(dst.cast::<u128>(), a);
        wr(dst.add(16).cast::<u128>(), b);
        wr(dst.add(tail).cast::<u128>(), c);
        wr(dst.add(tail + 16).cast::<u128>(), d);
    }
}

/// Writes a frame as whole 64-byte lines from `dst` with non-temporal
/// stores, the last line padded with zeros (other architectures:
/// [`copy_bytes`]).
///
/// An ordinary store first takes the line for writing: from the consumer's
/// cache, which read it a lap ago and, when it keeps up with the producer,
/// reads (and prefetches) the lines just ahead of the ones it was given.
/// Each such store then waits for one transfer between the cores, which
/// can slow a sender of small frames several times over
/// (`docs/benchmarks/design-notes.md`, "The small-frame slow mode of the
/// driver"). A whole line written with non-temporal stores is written
/// without being read: the other copies are invalidated and the sender
/// does not wait. The receiver reads the line from memory: the rate is
/// then bounded by the memory's bandwidth rather than the cache's, and a
/// frame waited for arrives later. Hence an opt-in
/// of the writer ([`WriteChunk::set_streaming`](super::WriteChunk::set_streaming)).
/// Non-temporal stores are not ordered by a Release store: whoever
/// publishes them calls [`store_fence`] first.
///
/// # Safety
/// `src..src+len` readable; `dst` 64-byte aligned, the `len` bytes from it
/// rounded up to whole lines writable (the frame's slots: bytes past `len`
/// in its last line are left zero) and not overlapping `src`.
#[inline(always)]
pub(super) unsafe fn stream_lines(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: `dst` and the lines after it are 64-byte aligned lines of the
    // caller's (so each 16-byte store is aligned, as MOVNTDQ needs); every
    // line read is either 64 of the frame's bytes or a local line holding
    // its last ones; SSE2 is part of the x86_64 baseline.
    unsafe {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        #[repr(align(64))]
        struct Line([u8; 64]);
        let stream = |to: *mut u8, from: *const u8| {
            let (from, to) = (from.cast::<__m128i>(), to.cast::<__m128i>());
            for i in 0..4 {
                _mm_stream_si128(to.add(i), _mm_loadu_si128(from.add(i)));
            }
        };
        let full = len / 64;
        for l in 0..full {
            stream(dst.add(64 * l), src.add(64 * l));
        }
        let rest = len % 64;
        if rest > 0 {
            let mut line = Line([0; 64]);
            copy_bytes(line.0.as_mut_ptr(), src.add(64 * full), rest);
            stream(dst.add(64 * full), line.0.as_ptr());
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    // SAFETY: the caller's contract covers `len` bytes of both.
    unsafe {
        copy_bytes(dst, src, len);
    }
}

/// Orders every [`stream_lines`] store before the stores that follow
/// (`SFENCE`; nothing on other architectures, where `stream_lines` stores
/// ordinarily). Called by `WriteChunk::commit` before the Release stores
/// of the descriptors that publish streamed frames
/// (`shape::put_desc`), which on their own order only ordinary
/// stores.
#[inline(always)]
pub(super) fn store_fence() {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: SFENCE only orders stores; SSE is part of the x86_64
    // baseline.
    unsafe {
        core::arch::x86_64::_mm_sfence();
    }
}

/// Hints the CPU to fetch the cache line at `p` (no effect on other
/// architectures). Prefetching never faults, whatever the address.
#[inline(always)]
pub(super) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch instructions do not access memory architecturally
    // and cannot fault; SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Hints the CPU to fetch the cache line at `p` for writing (`PREFETCHW`;
/// no effect on other architectures). Never faults, whatever the address.
#[inline(always)]
pub(super) fn prefetch_for_write(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: PREFETCHW does not access memory architecturally and cannot
    // fault; processors without it execute the encoding as a NOP.
    unsafe {
        core::arch::asm!("prefetchw [{}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = p;
}

/// How far ahead, in slots, the consumer prefetches the published slots of
/// a run it validated: enough small frames to cover a cross-core
/// transfer. (The producer does not prefetch ahead within a batch: a
/// `PREFETCHW` of slots ahead in `send_batch` measured no better, of the
/// next frame's lines at 1514 bytes much worse. It primes one free slot
/// after publishing a single frame (`Producer::prime_next_slot`), and the
/// free slots of the next batch when its sender asks, having work to do
/// before that batch (`Producer::prefetch_next`); never a slot not known
/// to be free, whose line the consumer may still be reading.)
pub(super) const PREFETCH_SLOTS: u64 = 8;

/// One-slot frames' descriptors checked together, by [`all_hold`].
pub(super) const DESC_GROUP: usize = 8;

/// Whether the [`DESC_GROUP`] descriptors from `descs` all hold `word`:
/// one load of each and one test for the group.
///
/// # Safety
/// The `DESC_GROUP` descriptors from `descs` are within the descriptor
/// array.
#[inline(always)]
pub(super) unsafe fn all_hold(descs: *const SlotDesc, word: u64) -> bool {
    const { assert!(DESC_GROUP == 8) };
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: the two fours of descriptors are the caller's eight; the rest
    // is SSE2 (x86_64 baseline) on registers.
    unsafe {
        use core::arch::x86_64::{_mm_and_si128, _mm_movemask_epi8};
        let same = _mm_and_si128(four_equal(descs, word), four_equal(descs.add(4), word));
        _mm_movemask_epi8(same) == 0xffff
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    // SAFETY: the caller's.
    unsafe {
        each_holds(descs, DESC_GROUP, word)
    }
}

/// Whether the four descriptors from `descs` all hold `word`, as
/// [`all_hold`] for eight.
///
/// # Safety
/// The four descriptors from `descs` are within the descriptor array.
#[inline(always)]
pub(super) unsafe fn four_hold(descs: *const SlotDesc, word: u64) -> bool {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: the four descriptors are the caller's; the rest is SSE2
    // (x86_64 baseline) on registers.
    unsafe {
        core::arch::x86_64::_mm_movemask_epi8(four_equal(descs, word)) == 0xffff
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    // SAFETY: the caller's.
    unsafe {
        each_holds(descs, 4, word)
    }
}

/// [`all_hold`] and [`four_hold`] with one atomic load of each of the
/// `count` descriptors from `descs`, up to the first that differs (under
/// loom and Miri, and on other targets).
///
/// # Safety
/// The `count` descriptors from `descs` are within the descriptor array.
#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
#[inline(always)]
unsafe fn each_holds(descs: *const SlotDesc, count: usize, word: u64) -> bool {
    // Relaxed: the values are only compared with a validated word; a
    // caller that learns from them that frames are published follows
    // with an Acquire fence (`Shape::scan`, `Shape::copy_groups`,
    // `ReadChunk::start_run`).
    (0..count).all(|i| {
        // SAFETY: `i < count`: one of the caller's descriptors.
        let desc = unsafe { &*descs.add(i) };
        desc.0.load(Ordering::Relaxed) == word
    })
}

/// Four descriptors from `descs` compared with `word` in two 16-byte
/// loads: a lane of all ones per equal 32-bit half, so that a mask of
/// 0xffff means all four equal (SSE2 has no 64-bit comparison). For eight
/// descriptors, 11 instructions to load and compare them instead of 24.
///
/// In `asm!`, because the peer may store to these words at any time: the
/// compiler must not assume them unchanged, as it may for a plain load.
/// Whatever the peer did (a torn or changing value included), a word that
/// differs from the one compared only fails the group's test, and one that
/// equals it is that word: a word already validated. Ordered as the
/// Relaxed loads it stands for: a caller that learns from them that frames
/// are published follows with an Acquire fence (`Shape::scan`,
/// `Shape::copy_groups`, `ReadChunk::start_run`).
///
/// # Safety
/// The four descriptors from `descs` are within the descriptor array.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
#[inline(always)]
unsafe fn four_equal(descs: *const SlotDesc, word: u64) -> core::arch::x86_64::__m128i {
    use core::arch::x86_64::{_mm_and_si128, _mm_cmpeq_epi32, _mm_set1_epi64x};
    let (lo, hi);
    // SAFETY: 32 readable bytes at `descs` (the caller's); the loads write
    // only `lo` and `hi`.
    unsafe {
        core::arch::asm!(
            "movdqu {lo}, [{p}]",
            "movdqu {hi}, [{p} + 16]",
            p = in(reg) descs,
            lo = out(xmm_reg) lo,
            hi = out(xmm_reg) hi,
            options(nostack, preserves_flags, readonly),
        );
    }
    // SAFETY: SSE2 (x86_64 baseline) on registers.
    unsafe {
        let want = _mm_set1_epi64x(word as i64);
        _mm_and_si128(_mm_cmpeq_epi32(lo, want), _mm_cmpeq_epi32(hi, want))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_lines_hold_the_frame_then_zeros() {
        #[repr(align(64))]
        struct Lines([u8; 256]);
        let src: Vec<u8> = (1..=255).collect();
        for len in 1..=255 {
            let mut lines = Lines([0xee; 256]);
            // SAFETY: `len` readable bytes; local aligned lines, with room
            // for `len` rounded up to whole lines.
            unsafe { stream_lines(lines.0.as_mut_ptr(), src.as_ptr(), len) };
            store_fence();
            assert_eq!(&lines.0[..len], &src[..len], "len {len}");
            let end = len.div_ceil(64) * 64;
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            assert!(lines.0[len..end].iter().all(|&b| b == 0), "len {len}");
            assert!(lines.0[end..].iter().all(|&b| b == 0xee), "len {len}");
        }
    }
}
