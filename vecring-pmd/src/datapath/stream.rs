//! When a transmit burst is written with non-temporal stores
//! (`WriteChunk::set_streaming`): a burst of [`STREAM_MIN_BURST`] frames
//! or more from a sender that runs at [`STREAM_MIN_RATE`] frames a second
//! or faster.
//!
//! With ordinary stores, each of a small frame's lines waits for the line
//! to come back from the receiver's cache when the receiver keeps up (and
//! prefetches the lines ahead of the ones it was given): in a third of
//! testpmd txonly -> rxonly runs at 64 bytes the sender fell to 11-15 M
//! pps, against 32-50 M in every run with streaming (the benchmark report,
//! "The small-frame slow mode of the driver"). A streamed frame reaches the
//! receiver from memory instead: forwarding 64-byte frames at 5 M pps, the
//! median round trip rose from 351 to 399 ns with every burst of 32
//! streamed. So only a sender fast enough for the slow mode to matter
//! streams: a frame or two at a time, or bursts at a moderate rate, are a
//! receiver waiting for them.

use crate::sys::ffi;

/// The fewest frames of a burst that is streamed (testpmd sends 32).
pub const STREAM_MIN_BURST: usize = 8;

/// The slowest sender, in frames a second, whose bursts are streamed:
/// under the slow mode's rates (7-15 M pps), above a moderately loaded
/// forwarder's.
pub const STREAM_MIN_RATE: u64 = 6_000_000;

/// A transmit queue's record of its sender's pace.
#[derive(Debug, Default)]
pub struct StreamGate {
    /// TSC ticks a frame takes at [`STREAM_MIN_RATE`] (0: never stream).
    ticks_per_frame: u64,
    /// The TSC at the previous burst of [`STREAM_MIN_BURST`] frames or
    /// more.
    last: u64,
}

impl StreamGate {
    /// The gate of a queue in this process (EAL's TSC frequency).
    pub fn new() -> Self {
        // SAFETY: a plain query of EAL, initialised before any queue.
        let hz = unsafe { ffi::rte_get_tsc_hz() };
        StreamGate {
            ticks_per_frame: hz / STREAM_MIN_RATE,
            last: 0,
        }
    }

    /// Whether a burst of `frames` frames, given now, is streamed: enough
    /// frames, and they came at [`STREAM_MIN_RATE`] or faster since the
    /// previous burst of enough frames. A smaller burst costs one
    /// comparison (no clock read: a clock read on every burst added about
    /// 30 ns to a forwarded frame's round trip).
    #[inline]
    pub fn admit(&mut self, frames: usize) -> bool {
        if frames < STREAM_MIN_BURST {
            return false;
        }
        let now = tsc();
        let since = now.wrapping_sub(self.last);
        self.last = now;
        since <= frames as u64 * self.ticks_per_frame
    }
}

/// The time stamp counter (0 on other architectures, where nothing is
/// streamed).
#[inline(always)]
fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC reads a counter; it has no memory effects.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bursts_at_the_rate_are_streamed() {
        // A gate whose frame may take a 1024th of the counter's range:
        // every burst after the first counts as fast enough.
        let mut g = StreamGate {
            ticks_per_frame: u64::MAX / 1024,
            last: 0,
        };
        g.admit(STREAM_MIN_BURST);
        assert!(!g.admit(STREAM_MIN_BURST - 1), "too few frames");
        assert!(g.admit(STREAM_MIN_BURST));
        assert!(g.admit(32));
        // One that never streams.
        let mut never = StreamGate::default();
        never.admit(32);
        assert!(!never.admit(32));
    }
}
