//! What the ring's calls report: the peer's corruption of the ring, and
//! why a frame could not be queued, sent or received. A ring has no peer
//! to lose and no clock: a link's endpoints add those
//! ([`LinkSendError`](crate::LinkSendError),
//! [`LinkRecvError`](crate::LinkRecvError)).

/// Which shared index a corrupt value was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// The producer's index, as seen by the consumer.
    Head,
    /// The consumer's index, as seen by the producer.
    Tail,
}

/// A value the peer wrote that breaks the ring protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    /// The peer's index moved backwards or past what the ring can hold.
    #[error("peer moved the {kind:?} index from {old} to {new}, impossible for a ring of {slot_count} slots")]
    Index {
        /// Which index.
        kind: IndexKind,
        /// The last valid value seen.
        old: u64,
        /// The value read.
        new: u64,
        /// Ring capacity.
        slot_count: u32,
    },
    /// A frame's descriptor holds a length of zero, or a continuation flag
    /// that disagrees with its length.
    #[error("slot {slot} holds an invalid length {len} (flags {flags:#x})")]
    Length {
        /// Slot index.
        slot: u32,
        /// Length read.
        len: u16,
        /// Flags read.
        flags: u16,
    },
    /// A descriptor holds flag bits this version does not define.
    #[error("slot {slot} holds unknown flags {flags:#x}")]
    Flags {
        /// Slot index.
        slot: u32,
        /// Flags read.
        flags: u16,
    },
    /// A frame's length exceeds the largest frame.
    #[error("frame starting at slot {slot} exceeds the maximum frame length {max}")]
    FrameTooLong {
        /// First slot of the frame.
        slot: u32,
        /// The maximum frame length.
        max: u32,
    },
    /// A frame's slots extend past the last published slot.
    #[error("frame starting at slot {slot} continues past the published head")]
    Truncated {
        /// First slot of the frame.
        slot: u32,
    },
}

/// Why a frame could not be queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// Not enough free slots; nothing was written.
    #[error("ring is full")]
    Full,
    /// The frame is longer than the link's maximum frame length.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// Frame length.
        len: usize,
        /// The maximum frame length.
        max: usize,
    },
    /// Frames carry at least one byte.
    #[error("empty frame")]
    Empty,
}

/// Why a frame could not be sent with [`Producer::send`].
///
/// [`Producer::send`]: super::Producer::send
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The frame cannot be queued.
    #[error(transparent)]
    Push(#[from] PushError),
    /// The peer corrupted the ring.
    #[error("ring corrupted by peer: {0}")]
    Corrupt(#[from] Corruption),
}

/// Why a frame could not be received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecvError {
    /// No frame is waiting.
    #[error("no frame waiting")]
    Empty,
    /// The next frame needs a larger buffer; it stays in the ring.
    #[error("frame of {needed} bytes does not fit the buffer")]
    BufferTooSmall {
        /// The frame's length.
        needed: usize,
    },
    /// The peer corrupted the ring.
    #[error("ring corrupted by peer: {0}")]
    Corrupt(#[from] Corruption),
}
