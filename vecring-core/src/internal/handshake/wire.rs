//! The handshake message on the wire: one [`MSG_LEN`]-byte datagram of
//! little-endian fields, the same layout for every kind.
//!
//! **Do not change this layout** without bumping
//! [`abi::VERSION_MAJOR`] (or, for a field the other side may ignore,
//! [`abi::VERSION_MINOR`] and a feature bit in [`abi::FEATURES_KNOWN`]).
//! Every offset below is a named constant, and the fields are asserted at
//! compile time to tile the message without gap or overlap.
//!
//! ```text
//!  offset size  field           carried by
//!  +0     4     magic "VRHS"    every kind
//!  +4     4     kind            every kind (Kind as u32)
//!  +8     2     version_major   every kind (abi::VERSION_MAJOR)
//!  +10    2     version_minor   every kind (abi::VERSION_MINOR)
//!  +12    4     reserved, 0
//!  +16    8     features        every kind; within abi::FEATURES_KNOWN
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
//! A message whose major version is this build's is decoded whole: its
//! reserved bytes and the bytes after its text must be zero, and its
//! features a subset of [`abi::FEATURES_KNOWN`]. A message of another
//! major is decoded as far as the fields every major keeps at their place
//! (magic, kind, versions), the rest as this layout reads it, so that the
//! control layer refuses it naming both versions.

use super::error::DecodeError;
use crate::abi;
use crate::geometry::Geometry;

/// Bytes in every handshake message ([`abi::HANDSHAKE_MSG_LEN`]).
pub const MSG_LEN: usize = abi::HANDSHAKE_MSG_LEN;
/// `b"VRHS"` read as a little-endian `u32` ([`abi::HANDSHAKE_MAGIC`]).
pub const MSG_MAGIC: u32 = abi::HANDSHAKE_MAGIC;

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

/// `b"VRHS"`.
pub const MAGIC: Field = Field::new(0, 4);
/// [`Kind`] as a `u32`.
pub const KIND: Field = Field::new(4, 4);
/// The sender's [`abi::VERSION_MAJOR`].
pub const VERSION_MAJOR: Field = Field::new(8, 2);
/// The sender's [`abi::VERSION_MINOR`].
pub const VERSION_MINOR: Field = Field::new(10, 2);
/// Reserved, zero.
pub const RESERVED_12: Field = Field::new(12, 4);
/// Feature bits, within [`abi::FEATURES_KNOWN`].
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
const LAYOUT: [Field; 15] = [
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

/// The fields a decoder requires to be zero.
const RESERVED: [Field; 3] = [RESERVED_12, RESERVED_46, RESERVED_56];

// ---- compile-time layout assertions ----
const _: () = {
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
    assert!(MAGIC.len == core::mem::size_of::<u32>() && KIND.len == core::mem::size_of::<u32>());
    assert!(
        VERSION_MAJOR.len == core::mem::size_of::<u16>()
            && VERSION_MINOR.len == core::mem::size_of::<u16>()
    );
    assert!(
        FEATURES.len == core::mem::size_of::<u64>()
            && GENERATION.len == core::mem::size_of::<u64>()
    );
    assert!(
        SLOT_COUNT.len == core::mem::size_of::<u32>()
            && SLOT_SIZE.len == core::mem::size_of::<u32>()
    );
    assert!(
        MAX_FRAME_LEN.len == core::mem::size_of::<u32>()
            && QUEUE_COUNT.len == core::mem::size_of::<u16>()
    );
    assert!(REGION_SIZE.len == core::mem::size_of::<u64>());
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
    /// link's status (see [`crate::status`]); answered with one datagram of
    /// text, then the connection is closed.
    Status = 8,
}

impl Kind {
    /// Every kind, for decoding by value.
    const ALL: [Kind; 8] = [
        Kind::Hello,
        Kind::Reject,
        Kind::Ack,
        Kind::Nack,
        Kind::Request,
        Kind::Ready,
        Kind::Busy,
        Kind::Status,
    ];

    /// The kind whose wire value is `value`.
    fn from_wire(value: u32) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u32 == value)
    }
}

/// A decoded handshake message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    /// Message kind.
    pub kind: Kind,
    /// Sender's major ABI version.
    pub version_major: u16,
    /// Sender's minor ABI version.
    pub version_minor: u16,
    /// Feature bits.
    pub features: u64,
    /// Link generation the message is about.
    pub generation: u64,
    /// Slots per ring (Hello).
    pub slot_count: u32,
    /// Bytes per slot (Hello).
    pub slot_size: u32,
    /// Largest frame (Hello).
    pub max_frame_len: u32,
    /// Queue pairs in the region (Hello); the header must say the same.
    pub queue_count: u16,
    /// Region size in bytes (Hello).
    pub region_size: u64,
    /// Reason (Reject, Nack, Busy), at most [`TEXT_LEN`] bytes of UTF-8.
    pub text: String,
}

impl Msg {
    /// A message of `kind` about `generation` with no geometry.
    pub fn new(kind: Kind, generation: u64) -> Self {
        Msg {
            kind,
            version_major: abi::VERSION_MAJOR,
            version_minor: abi::VERSION_MINOR,
            features: 0,
            generation,
            slot_count: 0,
            slot_size: 0,
            max_frame_len: 0,
            queue_count: 0,
            region_size: 0,
            text: String::new(),
        }
    }

    /// A Hello announcing a region of `queues` queue pairs.
    pub fn hello(geometry: Geometry, queues: u16, region_size: u64, generation: u64) -> Self {
        Msg {
            slot_count: geometry.slot_count(),
            slot_size: geometry.slot_size(),
            max_frame_len: geometry.max_frame_len(),
            queue_count: queues,
            region_size,
            ..Msg::new(Kind::Hello, generation)
        }
    }

    /// A Reject, Nack or Busy with a reason.
    pub fn refusal(kind: Kind, generation: u64, reason: &str) -> Self {
        Msg {
            text: reason.to_string(),
            ..Msg::new(kind, generation)
        }
    }

    /// Encodes the message; a text longer than [`TEXT_LEN`] is cut at
    /// the last character boundary that fits.
    pub fn encode(&self) -> [u8; MSG_LEN] {
        let mut b = [0u8; MSG_LEN];
        b[MAGIC.range()].copy_from_slice(&MSG_MAGIC.to_le_bytes());
        b[KIND.range()].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[VERSION_MAJOR.range()].copy_from_slice(&self.version_major.to_le_bytes());
        b[VERSION_MINOR.range()].copy_from_slice(&self.version_minor.to_le_bytes());
        b[FEATURES.range()].copy_from_slice(&self.features.to_le_bytes());
        b[GENERATION.range()].copy_from_slice(&self.generation.to_le_bytes());
        b[SLOT_COUNT.range()].copy_from_slice(&self.slot_count.to_le_bytes());
        b[SLOT_SIZE.range()].copy_from_slice(&self.slot_size.to_le_bytes());
        b[MAX_FRAME_LEN.range()].copy_from_slice(&self.max_frame_len.to_le_bytes());
        b[QUEUE_COUNT.range()].copy_from_slice(&self.queue_count.to_le_bytes());
        b[REGION_SIZE.range()].copy_from_slice(&self.region_size.to_le_bytes());
        let mut end = self.text.len().min(TEXT_LEN);
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        b[TEXT.at..TEXT.at + end].copy_from_slice(&self.text.as_bytes()[..end]);
        b
    }

    /// Decodes a received datagram. The reason text comes back escaped
    /// (`str::escape_debug`): a peer's text goes into logs.
    ///
    /// # Errors
    /// What is malformed: the size, the magic, the kind, a reserved byte
    /// or a byte after the text that is not zero, or feature bits this
    /// build does not know.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let b: &[u8; MSG_LEN] = b
            .try_into()
            .map_err(|_| DecodeError::Size { len: b.len() })?;
        let magic = u32_at(b, MAGIC);
        if magic != MSG_MAGIC {
            return Err(DecodeError::Magic { magic });
        }
        let kind = u32_at(b, KIND);
        let kind = Kind::from_wire(kind).ok_or(DecodeError::Kind { kind })?;
        let text = &b[TEXT.range()];
        let end = text.iter().position(|&c| c == 0).unwrap_or(TEXT_LEN);
        let msg = Msg {
            kind,
            version_major: u16_at(b, VERSION_MAJOR),
            version_minor: u16_at(b, VERSION_MINOR),
            features: u64_at(b, FEATURES),
            generation: u64_at(b, GENERATION),
            slot_count: u32_at(b, SLOT_COUNT),
            slot_size: u32_at(b, SLOT_SIZE),
            max_frame_len: u32_at(b, MAX_FRAME_LEN),
            queue_count: u16_at(b, QUEUE_COUNT),
            region_size: u64_at(b, REGION_SIZE),
            text: String::from_utf8_lossy(&text[..end])
                .escape_debug()
                .to_string(),
        };
        if msg.version_major != abi::VERSION_MAJOR {
            // Another major's layout past the versions is its own: the
            // control layer refuses the message naming both versions.
            return Ok(msg);
        }
        let after_text = TEXT.at + end..MSG_LEN;
        let must_be_zero = RESERVED.iter().map(|f| f.range()).chain([after_text]);
        for range in must_be_zero {
            if let Some(i) = b[range.clone()].iter().position(|&c| c != 0) {
                let at = range.start + i;
                return Err(DecodeError::NonZero { at, value: b[at] });
            }
        }
        let unknown = msg.features & !abi::FEATURES_KNOWN;
        if unknown != 0 {
            return Err(DecodeError::UnknownFeatures { unknown });
        }
        Ok(msg)
    }
}

fn u16_at(b: &[u8; MSG_LEN], f: Field) -> u16 {
    let mut v = [0u8; 2];
    v.copy_from_slice(&b[f.range()]);
    u16::from_le_bytes(v)
}

fn u32_at(b: &[u8; MSG_LEN], f: Field) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[f.range()]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8; MSG_LEN], f: Field) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[f.range()]);
    u64::from_le_bytes(v)
}
