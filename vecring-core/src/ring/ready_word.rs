//! [`ReadyWord`]: the one word of shared memory that changes when a
//! consumer's next frame becomes ready, for waits that watch memory
//! instead of a descriptor: a CPU's monitor-and-wait instructions
//! (`UMONITOR`/`UMWAIT`, `MONITORX`/`MWAITX`), as DPDK's power management
//! uses them through a driver's `get_monitor_addr`.
//!
//! Such a wait arms a monitor on the word's cache line, checks the word
//! once more, and sleeps until the line is written (or a timeout, or an
//! interrupt). The consumer's ring is empty while the word, masked, holds
//! [`ReadyWord::empty`]; any other value means a frame may be ready (or
//! the peer wrote something the next read will judge): do not sleep.

#[cfg(not(loom))]
use super::consumer::Consumer;
#[cfg(not(loom))]
use super::storage::RingStorage;

/// Where a consumer's next frame shows up: the word, the bits of it
/// that tell, and their value while the ring is empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyWord {
    /// The word: 8 bytes, aligned, in memory the producer writes. Valid
    /// as long as the consumer (its ring's memory) lives.
    pub addr: *const u64,
    /// The bits of the word that tell.
    pub mask: u64,
    /// The masked value while no frame is ready for this consumer.
    pub empty: u64,
}

impl ReadyWord {
    /// Whether `value`, read from [`addr`](Self::addr), says a frame may
    /// be ready.
    #[inline]
    pub fn ready(&self, value: u64) -> bool {
        value & self.mask != self.empty
    }
}

#[cfg(not(loom))]
impl<S: RingStorage> Consumer<S> {
    /// The word that changes when this consumer's next frame is ready: the
    /// producer's index, which holds this consumer's read position while
    /// the ring has nothing more for it. It moves on with every read.
    pub fn ready_word(&self) -> ReadyWord {
        ReadyWord {
            addr: self.storage.control().head.index.as_ptr().cast_const(),
            mask: u64::MAX,
            empty: self.read_position(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::ring::heap_channel;
    use crate::Geometry;

    /// Reads the word as a monitoring wait would.
    fn load(w: &super::ReadyWord) -> u64 {
        // SAFETY: the word is an aligned u64 of the ring, alive while the
        // consumer is; a volatile read, as the CPU's monitor reads it.
        unsafe { w.addr.read_volatile() }
    }

    #[test]
    fn the_word_says_ready_once_a_frame_is_published_and_empty_once_read() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(64, 64, 1514).unwrap());
        let w = rx.ready_word();
        assert!(!w.ready(load(&w)), "an empty ring");
        tx.send(&[1; 60]).unwrap();
        assert!(w.ready(load(&w)), "a frame was published");
        let mut buf = [0u8; 64];
        assert_eq!(rx.recv(&mut buf), Ok(60));
        // The old word's expectation is stale: ask again after a read.
        assert!(w.ready(load(&w)));
        let w = rx.ready_word();
        assert!(!w.ready(load(&w)), "everything read");
        for _ in 0..3 {
            tx.send(&[2; 60]).unwrap();
        }
        let w2 = rx.ready_word();
        assert_eq!(w2.addr, w.addr, "the same word, ring after ring of reads");
        assert!(w2.ready(load(&w2)));
        // One of three read: still ready.
        assert_eq!(rx.recv(&mut buf), Ok(60));
        let w3 = rx.ready_word();
        assert!(w3.ready(load(&w3)));
    }
}
