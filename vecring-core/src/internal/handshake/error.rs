//! What makes a received handshake datagram malformed.

use crate::abi;
use vecring_abi::wire::{MSG_LEN, MSG_MAGIC};

/// Why [`Msg::decode`](super::Msg::decode) refused a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The datagram is not [`MSG_LEN`] bytes.
    #[error("handshake message of {len} bytes, expected {MSG_LEN}")]
    Size {
        /// Its size.
        len: usize,
    },
    /// The first four bytes are not `b"VRHS"`.
    #[error("handshake magic {magic:#x}, expected {MSG_MAGIC:#x}")]
    Magic {
        /// The magic it carries.
        magic: u32,
    },
    /// The kind is none this build knows.
    #[error("unknown handshake message kind {kind}")]
    Kind {
        /// The kind's wire value.
        kind: u32,
    },
    /// A reserved byte, or a byte after the text's end, is not zero.
    #[error("handshake message byte {at} is {value:#04x}; reserved bytes and those after the text must be zero")]
    NonZero {
        /// Its offset in the message.
        at: usize,
        /// Its value.
        value: u8,
    },
    /// The sender uses features this build does not know.
    #[error(
        "handshake message with unknown feature bits {unknown:#x} (this build knows {:#x})",
        abi::FEATURES_KNOWN
    )]
    UnknownFeatures {
        /// The bits outside [`abi::FEATURES_KNOWN`].
        unknown: u64,
    },
}
