//! What a receiving agent counts of one trial's frames: every frame with
//! the trial's id is marked in a bitmap of sequence numbers, so a second
//! copy is a duplicate, a frame below the highest seen is reordered, and
//! the frames never seen are the lost ones, exactly.

use super::frame::{self, Fields};
use super::histogram::Histogram;

/// Counts of one trial (or, in a sink, since the last reset).
#[derive(Default)]
pub struct Tally {
    /// The trial whose frames count (0: any, a sink taking each trial
    /// id it sees first after a reset).
    pub trial: u16,
    /// Frames of the trial received (duplicates included).
    pub rx: u64,
    /// Distinct sequence numbers received.
    pub unique: u64,
    pub reordered: u64,
    pub dup: u64,
    /// Frames not of the trial, malformed, altered, or (in a generator)
    /// not addressed back to it.
    pub bad: u64,
    pub latency: Histogram,
    seen: Vec<u64>,
    /// One past the highest sequence number seen.
    next: u64,
    /// Sequence numbers from here up are bad: a generator's frames not
    /// yet offered, or beyond the room a sink keeps (so that no frame can
    /// make the bitmap grow without bound).
    pub limit: u64,
}

/// Sequence numbers a tally tracks at most: a trial offers at most 2^32
/// frames.
pub const MAX_SEQ: u64 = 1 << 32;

impl Tally {
    /// A tally for trial `trial` (0: the first trial id seen).
    pub fn new(trial: u16) -> Self {
        Self {
            trial,
            limit: MAX_SEQ,
            ..Self::default()
        }
    }

    /// Starts over for trial `trial`, keeping the bitmap's memory (only
    /// the part used is cleared).
    pub fn reset(&mut self, trial: u16) {
        let used = (self.next.div_ceil(64) as usize).min(self.seen.len());
        self.seen[..used].fill(0);
        let (seen, limit) = (std::mem::take(&mut self.seen), self.limit);
        *self = Self {
            seen,
            limit,
            ..Self::new(trial)
        };
    }

    /// Makes room for sequence numbers below `frames` now, with every page
    /// of the bitmap touched: growing it, or faulting its pages in, during
    /// a trial would stall the receiver for long enough to lose frames.
    pub fn reserve(&mut self, frames: u64) {
        let words = (frames.min(MAX_SEQ).div_ceil(64) as usize).next_power_of_two();
        if words <= self.seen.len() {
            return;
        }
        self.seen.resize(words, 0);
        // One write per 4 KiB page; volatile, so that the writes of zero
        // to memory the allocator gave zeroed are not left out.
        for w in self.seen.iter_mut().step_by(512) {
            // SAFETY: `w` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(w, 0) };
        }
    }

    /// Counts a frame received at `now` (CLOCK_MONOTONIC ns): one of the
    /// trial, with a sequence number below the limit and an IPv4 length
    /// that agrees with its own; `check` rejects frames whose headers are
    /// not what this side expects, and `verify` checks the payload
    /// pattern.
    pub fn frame(&mut self, f: &[u8], now: u64, check: impl Fn(&[u8]) -> bool, verify: bool) {
        let Some(Fields { trial, seq, stamp }) = frame::read_fields(f) else {
            self.bad += 1;
            return;
        };
        if self.trial == 0 && trial != 0 {
            self.trial = trial;
        }
        if trial != self.trial
            || seq >= self.limit
            || !frame::lengths_agree(f)
            || !check(f)
            || (verify && !frame::payload_intact(f, seq))
        {
            self.bad += 1;
            return;
        }
        self.rx += 1;
        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
        if word >= self.seen.len() {
            self.seen.resize((word + 1).next_power_of_two(), 0);
        }
        if self.seen[word] & bit != 0 {
            self.dup += 1;
            return;
        }
        self.seen[word] |= bit;
        self.unique += 1;
        if seq + 1 < self.next {
            self.reordered += 1;
        }
        self.next = self.next.max(seq + 1);
        self.latency.record(now.saturating_sub(stamp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::frame::{write_fields, Flows};

    fn frame(trial: u16, seq: u64) -> Vec<u8> {
        let mut f = vec![0u8; 80];
        Flows::default().write_headers(&mut f, 0);
        write_fields(&mut f, trial, seq, 1_000, true);
        f
    }

    #[test]
    fn loss_reordering_and_duplicates_are_counted_exactly() {
        let mut t = Tally::new(3);
        for seq in [0, 1, 3, 2, 2, 5, 70, 4] {
            t.frame(&frame(3, seq), 1_500, |_| true, true);
        }
        t.frame(&frame(2, 6), 1_500, |_| true, true); // an older trial's
        let mut altered = frame(3, 9);
        altered[70] ^= 0xff;
        t.frame(&altered, 1_500, |_| true, true);
        t.frame(&frame(3, 8), 1_500, |_| false, false); // wrong headers
        t.frame(&frame(3, 11)[..79], 1_500, |_| true, false); // truncated
        t.limit = 100;
        t.frame(&frame(3, 100), 1_500, |_| true, false); // never offered
        assert_eq!((t.rx, t.unique, t.dup, t.reordered, t.bad), (8, 7, 1, 2, 5));
        assert_eq!(t.latency.count(), 7);
        assert_eq!(t.latency.min(), Some(500));
    }

    #[test]
    fn a_sink_takes_the_first_trial_it_sees() {
        let mut t = Tally::new(0);
        t.frame(&frame(9, 0), 2_000, |_| true, false);
        t.frame(&frame(8, 1), 2_000, |_| true, false);
        assert_eq!((t.trial, t.unique, t.bad), (9, 1, 1));
    }

    #[test]
    fn a_reset_forgets_the_seen_numbers_and_keeps_the_room() {
        let mut t = Tally::new(1);
        t.reserve(1000);
        let room = t.seen.len();
        assert!(room * 64 >= 1000);
        t.frame(&frame(1, 999), 2_000, |_| true, false);
        t.reset(2);
        assert_eq!(t.seen.len(), room);
        assert!(t.seen.iter().all(|&w| w == 0));
        t.frame(&frame(2, 999), 2_000, |_| true, false);
        assert_eq!((t.unique, t.dup, t.reordered), (1, 0, 0));
    }
}
