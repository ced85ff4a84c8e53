//! The handshake message: its fields and kinds are the ABI's
//! (`vecring_abi::wire`, re-exported here, which draws the layout), and
//! this module reads and writes it ([`Msg`]).
//!
//! A message whose major version is this build's is decoded whole: its
//! reserved bytes and the bytes after its text must be zero, and its
//! features a subset of [`abi::FEATURES_KNOWN`]. A message of another
//! major is decoded as far as the fields every major keeps at their place
//! (magic, kind, versions, generation, text), the rest as this layout reads
//! it, so that the control layer refuses it naming both versions.

use super::error::DecodeError;
use crate::abi;
use crate::geometry::Geometry;

pub use vecring_abi::wire::*;

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
