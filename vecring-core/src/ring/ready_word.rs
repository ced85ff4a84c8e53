//! [`ReadyWord`]: the one word of shared memory that changes when a
//! consumer's next frame becomes ready, for waits that watch memory
//! instead of a descriptor: a CPU's monitor-and-wait instructions
//! (`UMONITOR`/`UMWAIT`, `MONITORX`/`MWAITX`), as DPDK's power management
//! uses them through a driver's `get_monitor_addr`.
//!
//! Such a wait arms a monitor on the word's cache line, checks the word
//! once more, and sleeps until the line is written (or a timeout, or an
//! interrupt). [`ReadyWord::ready`] says from the word's value whether a
//! frame may be ready (or the peer wrote something the next read will
//! judge): then do not sleep.

#[cfg(not(loom))]
use super::consumer::Consumer;
#[cfg(not(loom))]
use super::storage::RingStorage;
#[cfg(not(loom))]
use crate::abi::DESC_STAMP_MASK;

/// Where a consumer's next frame shows up: the word, the bits of it
/// that tell, and how their value says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyWord {
    /// The word: 8 bytes, aligned, in memory the producer writes. Valid
    /// as long as the consumer (its ring's memory) lives.
    pub addr: *const u64,
    /// The bits of the word that tell.
    pub mask: u64,
    /// The masked value compared with.
    pub value: u64,
    /// Whether a frame may be ready when the masked word equals
    /// [`value`](Self::value) (the next slot's descriptor carries the
    /// stamp of the reader's lap), or when it differs from it (an index
    /// moved on from the reader's position).
    pub ready_if_equal: bool,
}

impl ReadyWord {
    /// Whether `word`, read from [`addr`](Self::addr), says a frame may
    /// be ready.
    #[inline]
    pub fn ready(&self, word: u64) -> bool {
        (word & self.mask == self.value) == self.ready_if_equal
    }
}

#[cfg(not(loom))]
impl<S: RingStorage> Consumer<S> {
    /// The word that changes when this consumer's next frame is ready:
    /// the descriptor of the slot it reads next, which publishes that
    /// frame with the stamp of the reader's lap. It moves on with every
    /// read.
    pub fn ready_word(&self) -> ReadyWord {
        let tail = self.read_position();
        ReadyWord {
            addr: self.shape.desc(tail).0.as_ptr().cast_const(),
            mask: DESC_STAMP_MASK,
            value: self.shape.stamp(tail),
            ready_if_equal: true,
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
    fn a_word_stays_right_lap_after_lap() {
        let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(8, 64, 64).unwrap());
        let mut buf = [0u8; 64];
        for i in 0..100u8 {
            let w = rx.ready_word();
            assert!(!w.ready(load(&w)), "frame {i}: empty");
            tx.send(&[i; 60]).unwrap();
            assert!(w.ready(load(&w)), "frame {i}: published");
            assert_eq!(rx.recv(&mut buf), Ok(60));
        }
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
        assert!(w2.ready(load(&w2)));
        // One of three read: still ready.
        assert_eq!(rx.recv(&mut buf), Ok(60));
        let w3 = rx.ready_word();
        assert!(w3.ready(load(&w3)));
    }
}
