//! The shared-memory and handshake formats, defined in the `vecring-abi`
//! crate (its documentation draws them and states what each ABI version
//! promises), under the one name this crate's modules and vecring's other
//! crates use: `abi::RingControl`, `abi::ring_offset`, `abi::MAGIC`.
//! The handshake message's fields are `vecring_abi::wire`'s, re-exported
//! by `handshake::wire`.
//!
//! Under `--cfg loom` the four structures whose fields are atomics are
//! stand-ins of the same names and fields built on loom's atomics, so that
//! the ring code loom checks is the code that ships; their layout is not
//! the ABI's (loom's atomics are larger), and nothing under loom maps a
//! region.

pub use vecring_abi::region::*;
pub use vecring_abi::ring::*;
pub use vecring_abi::{align_up, CACHE_LINE, FEATURES_KNOWN, MAGIC, VERSION_MAJOR, VERSION_MINOR};

#[cfg(loom)]
pub use model::{IndexLine, RingControl, SlotDesc, WaitLine};

/// The loom stand-ins (see the module documentation).
#[cfg(loom)]
mod model {
    use crate::sync::{AtomicU32, AtomicU64};

    /// As [`vecring_abi::ring::IndexLine`].
    pub struct IndexLine {
        /// The free-running index.
        pub index: AtomicU64,
    }

    /// As [`vecring_abi::ring::RingControl`].
    pub struct RingControl {
        /// The producer's index.
        pub head: IndexLine,
        /// The consumer's index.
        pub tail: IndexLine,
        /// The consumer's wait line.
        pub consumer_wait: WaitLine,
        /// The producer's wait line.
        pub producer_wait: WaitLine,
    }

    /// As [`vecring_abi::ring::WaitLine`].
    pub struct WaitLine {
        /// Present, armed and the sleep sequence.
        pub state: AtomicU64,
        /// Non-zero once the owner checks the other side's line.
        pub ack: AtomicU32,
    }

    /// As [`vecring_abi::ring::SlotDesc`]; the word's functions are the
    /// ABI's.
    pub struct SlotDesc(pub AtomicU64);

    impl SlotDesc {
        /// [`vecring_abi::ring::SlotDesc::pack`].
        #[inline]
        pub const fn pack(len: u16, flags: u16) -> u64 {
            vecring_abi::ring::SlotDesc::pack(len, flags)
        }

        /// [`vecring_abi::ring::SlotDesc::unpack`].
        #[inline]
        pub const fn unpack(word: u64) -> (u16, u16) {
            vecring_abi::ring::SlotDesc::unpack(word)
        }

        /// [`vecring_abi::ring::SlotDesc::stamp`].
        #[inline]
        pub const fn stamp(index: u64, count_shift: u32) -> u64 {
            vecring_abi::ring::SlotDesc::stamp(index, count_shift)
        }
    }

    impl IndexLine {
        /// A line holding `index`.
        pub fn new(index: u64) -> Self {
            Self {
                index: AtomicU64::new(index),
            }
        }
    }

    impl WaitLine {
        /// A line with nothing set.
        pub fn new() -> Self {
            Self {
                state: AtomicU64::new(0),
                ack: AtomicU32::new(0),
            }
        }
    }

    impl RingControl {
        /// Both indices at zero, nobody waiting.
        pub fn new() -> Self {
            Self {
                head: IndexLine::new(0),
                tail: IndexLine::new(0),
                consumer_wait: WaitLine::new(),
                producer_wait: WaitLine::new(),
            }
        }
    }
}
