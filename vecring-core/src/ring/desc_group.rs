//! Comparing descriptors a group at a time: whether the next four or
//! eight one-slot frames' descriptors all hold one validated word, in two
//! 16-byte loads of four (one atomic load each under loom and Miri).

use crate::abi::SlotDesc;
#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
use crate::sync::Ordering;

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
