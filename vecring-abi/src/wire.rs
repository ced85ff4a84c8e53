//! The handshake message on the link's Unix socket (`SOCK_SEQPACKET`):
//! one [`MSG_LEN`]-byte datagram of little-endian fields, the same layout
//! for every kind.
//!
//! **Do not change this layout** without bumping
//! [`VERSION_MAJOR`](crate::VERSION_MAJOR) (or, for a field the other side
//! never meets, [`VERSION_MINOR`](crate::VERSION_MINOR) and a feature bit
//! in [`FEATURES_KNOWN`](crate::FEATURES_KNOWN)). Every offset below is a
//! named constant, and the fields are asserted at compile time to tile the
//! message without gap or overlap.
//!
//! ```text
//!  offset size  field           carried by
//!  +0     4     magic "VRHS"    every kind
//!  +4     4     kind            every kind (Kind as u32)
//!  +8     2     version_major   every kind (VERSION_MAJOR)
//!  +10    2     version_minor   every kind (VERSION_MINOR)
//!  +12    4     reserved, 0
//!  +16    8     features        every kind; within FEATURES_KNOWN
//!  +24    8     generation      Hello, Ack, Nack, Ready (else 0)
//!  +32    4     slot_count      Hello (else 0)
//!  +36    4     slot_size       Hello (else 0)
//!  +40    4     max_frame_len   Hello (else 0)
//!  +44    2     queue_count     Hello (else 0)
//!  +46    2     reserved, 0
//!  +48    8     region_size     Hello (else 0)
//!  +56    8     reserved, 0
//!  +64    192   text            Reject, Nack, Busy: UTF-8 reason, cut at a
//!                               character boundary, the rest NUL
//!  +256         end (MSG_LEN)
//! ```
//!
//! A Hello carries, as `SCM_RIGHTS`, the region's memfd and then the
//! slave's end of each ring's doorbell (a socket), in ring order:
//! `1 + ring_count(queue_count)` descriptors, at most [`MAX_FDS`]. Every
//! other kind carries none.
//!
//! A message whose major version is the reader's is read whole: its
//! reserved bytes and the bytes after its text must be zero, and its
//! features a subset of [`FEATURES_KNOWN`](crate::FEATURES_KNOWN). A
//! message of another major is read as far as the fields every major keeps
//! at their place (the crate documentation lists them), so that the reader
//! refuses it naming both versions.

use crate::region::MAX_QUEUES;

/// Bytes in every handshake message, in every major.
pub const MSG_LEN: usize = 256;
/// A handshake message's first four bytes, `b"VRHS"`, read as a
/// little-endian `u32`.
pub const MSG_MAGIC: u32 = u32::from_le_bytes(*b"VRHS");
/// Descriptors one message carries at most: a Hello's region and a
/// doorbell per ring of the most queues.
pub const MAX_FDS: usize = 1 + 2 * MAX_QUEUES as usize;

/// Where a field lies in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Offset of its first byte.
    pub at: usize,
    /// Its size in bytes.
    pub len: usize,
}

impl Field {
    const fn new(at: usize, len: usize) -> Self {
        Field { at, len }
    }

    /// The field's bytes, as a range of the message.
    pub const fn range(self) -> core::ops::Range<usize> {
        self.at..self.at + self.len
    }
}

/// `b"VRHS"` ([`MSG_MAGIC`]).
pub const MAGIC: Field = Field::new(0, 4);
/// [`Kind`] as a `u32`.
pub const KIND: Field = Field::new(4, 4);
/// The sender's [`VERSION_MAJOR`](crate::VERSION_MAJOR).
pub const VERSION_MAJOR: Field = Field::new(8, 2);
/// The sender's [`VERSION_MINOR`](crate::VERSION_MINOR).
pub const VERSION_MINOR: Field = Field::new(10, 2);
/// Reserved, zero.
pub const RESERVED_12: Field = Field::new(12, 4);
/// Feature bits, within [`FEATURES_KNOWN`](crate::FEATURES_KNOWN).
pub const FEATURES: Field = Field::new(16, 8);
/// The link generation the message is about.
pub const GENERATION: Field = Field::new(24, 8);
/// Slots per ring (Hello).
pub const SLOT_COUNT: Field = Field::new(32, 4);
/// Bytes per slot (Hello).
pub const SLOT_SIZE: Field = Field::new(36, 4);
/// Largest frame (Hello).
pub const MAX_FRAME_LEN: Field = Field::new(40, 4);
/// Queue pairs in the region (Hello).
pub const QUEUE_COUNT: Field = Field::new(44, 2);
/// Reserved, zero.
pub const RESERVED_46: Field = Field::new(46, 2);
/// Region size in bytes (Hello).
pub const REGION_SIZE: Field = Field::new(48, 8);
/// Reserved, zero.
pub const RESERVED_56: Field = Field::new(56, 8);
/// The reason (Reject, Nack, Busy): UTF-8, NUL after its end.
pub const TEXT: Field = Field::new(64, TEXT_LEN);
/// Bytes of reason a message carries at most.
pub const TEXT_LEN: usize = 192;

/// Every field in the order of its offset.
pub const LAYOUT: [Field; 15] = [
    MAGIC,
    KIND,
    VERSION_MAJOR,
    VERSION_MINOR,
    RESERVED_12,
    FEATURES,
    GENERATION,
    SLOT_COUNT,
    SLOT_SIZE,
    MAX_FRAME_LEN,
    QUEUE_COUNT,
    RESERVED_46,
    REGION_SIZE,
    RESERVED_56,
    TEXT,
];

/// The fields a reader of the same major requires to be zero.
pub const RESERVED: [Field; 3] = [RESERVED_12, RESERVED_46, RESERVED_56];

// ---- compile-time layout assertions ----
const _: () = {
    use core::mem::size_of;
    // The fields tile the message: each begins where the previous ends,
    // the last ends at MSG_LEN, and every number is aligned to its size.
    let mut end = 0;
    let mut i = 0;
    while i < LAYOUT.len() {
        let f = LAYOUT[i];
        assert!(f.at == end);
        assert!(f.len > 0);
        if f.len <= 8 {
            assert!(f.at % f.len == 0);
        }
        end = f.at + f.len;
        i += 1;
    }
    assert!(end == MSG_LEN);
    // The offsets the table above states.
    assert!(MAGIC.at == 0 && KIND.at == 4);
    assert!(VERSION_MAJOR.at == 8 && VERSION_MINOR.at == 10);
    assert!(RESERVED_12.at == 12 && FEATURES.at == 16);
    assert!(GENERATION.at == 24 && SLOT_COUNT.at == 32);
    assert!(SLOT_SIZE.at == 36 && MAX_FRAME_LEN.at == 40);
    assert!(QUEUE_COUNT.at == 44 && RESERVED_46.at == 46);
    assert!(REGION_SIZE.at == 48 && RESERVED_56.at == 56);
    assert!(TEXT.at == 64 && TEXT.at + TEXT_LEN == MSG_LEN);
    // Each number's field holds exactly its type.
    assert!(MAGIC.len == size_of::<u32>() && KIND.len == size_of::<u32>());
    assert!(VERSION_MAJOR.len == size_of::<u16>() && VERSION_MINOR.len == size_of::<u16>());
    assert!(FEATURES.len == size_of::<u64>() && GENERATION.len == size_of::<u64>());
    assert!(SLOT_COUNT.len == size_of::<u32>() && SLOT_SIZE.len == size_of::<u32>());
    assert!(MAX_FRAME_LEN.len == size_of::<u32>() && QUEUE_COUNT.len == size_of::<u16>());
    assert!(REGION_SIZE.len == size_of::<u64>());
    // The kinds every major keeps.
    assert!(Kind::Hello as u32 == 1 && Kind::Reject as u32 == 2);
    assert!(Kind::Nack as u32 == 4 && Kind::Request as u32 == 5);
};

/// What a message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// Master → slave, with the region's fd.
    Hello = 1,
    /// Master → slave: refused, with a reason.
    Reject = 2,
    /// Slave → master: region accepted.
    Ack = 3,
    /// Slave → master: region refused, with a reason.
    Nack = 4,
    /// Slave → master, first message: asks for a region.
    Request = 5,
    /// Master → slave: the region is sealed; the link is up.
    Ready = 6,
    /// Master → slave: not now (too many regions still held by departed
    /// peers, or another slave is being served); try again later.
    Busy = 7,
    /// Anyone → master, first message instead of `Request`: asks for the
    /// link's status; answered with one datagram of text (vecring-core's
    /// `status` module has its format), then the connection is closed.
    Status = 8,
    /// Root or the master's own uid → master, first message instead of
    /// `Request` (minor 1): detach the link's slave and make no offer
    /// while this connection stays open. The master closes the attached
    /// slave's connection (the link goes down as when the slave leaves),
    /// answers `Ack` once every region it had handed out for this link is
    /// released by every process, and resumes when the asker closes. A
    /// checkpoint tool holds it while it freezes and dumps the slave
    /// (vecring-core's `pause` module). A master of minor 0 refuses it as
    /// an unknown kind.
    Pause = 9,
}

impl Kind {
    /// The kind whose wire value is `value`, if any.
    pub const fn from_wire(value: u32) -> Option<Kind> {
        Some(match value {
            1 => Kind::Hello,
            2 => Kind::Reject,
            3 => Kind::Ack,
            4 => Kind::Nack,
            5 => Kind::Request,
            6 => Kind::Ready,
            7 => Kind::Busy,
            8 => Kind::Status,
            9 => Kind::Pause,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_wire_value() {
        for value in 0..16u32 {
            if let Some(kind) = Kind::from_wire(value) {
                assert_eq!(kind as u32, value);
            } else {
                assert!(value == 0 || value > 8, "{value}");
            }
        }
    }

    #[test]
    fn magic_spells_vrhs() {
        assert_eq!(&MSG_MAGIC.to_le_bytes(), b"VRHS");
    }
}
