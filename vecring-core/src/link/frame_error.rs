//! Why a link's [`Sender`](super::Sender) or [`Receiver`](super::Receiver)
//! moved no frame: the ring's own reasons ([`PushError`], [`Corruption`],
//! an empty ring, a short buffer), and the link's: no peer now, the link
//! closed, a wait that ran out of time. Each is its own variant, so that a
//! caller tells "try again" from "wait" from "stop".

use crate::ring::{Corruption, PushError, RecvError, SendError};

/// Why a link's [`Sender`](super::Sender) sent no frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkSendError {
    /// The ring cannot take the frame: full (nothing was written), too
    /// large, or empty.
    #[error(transparent)]
    Push(#[from] PushError),
    /// The peer corrupted the ring; the link drops this peer and
    /// reconnects.
    #[error("ring corrupted by peer: {0}")]
    Corrupt(#[from] Corruption),
    /// The link is down: no peer now. The link comes up again when one
    /// attaches.
    #[error("link is down: no peer attached")]
    NoPeer,
    /// The [`Link`](super::Link) is closed: nothing will be sent again.
    #[error("link is closed")]
    Closed,
    /// No room came within the wait's timeout.
    #[error("no room for the frame within the timeout")]
    Timeout,
}

impl From<SendError> for LinkSendError {
    #[inline]
    fn from(e: SendError) -> Self {
        match e {
            SendError::Push(p) => LinkSendError::Push(p),
            SendError::Corrupt(c) => LinkSendError::Corrupt(c),
        }
    }
}

/// Why a link's [`Receiver`](super::Receiver) received no frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkRecvError {
    /// No frame is waiting.
    #[error("no frame waiting")]
    Empty,
    /// The next frame needs a larger buffer; it stays in the ring.
    #[error("frame of {needed} bytes does not fit the buffer")]
    BufferTooSmall {
        /// The frame's length.
        needed: usize,
    },
    /// The peer corrupted the ring; the link drops this peer and
    /// reconnects.
    #[error("ring corrupted by peer: {0}")]
    Corrupt(#[from] Corruption),
    /// The link is down: no peer now. The link comes up again when one
    /// attaches.
    #[error("link is down: no peer attached")]
    NoPeer,
    /// The [`Link`](super::Link) is closed: no frame will come.
    #[error("link is closed")]
    Closed,
    /// No frame came within the wait's timeout.
    #[error("no frame within the timeout")]
    Timeout,
}

impl From<RecvError> for LinkRecvError {
    #[inline]
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::Empty => LinkRecvError::Empty,
            RecvError::BufferTooSmall { needed } => LinkRecvError::BufferTooSmall { needed },
            RecvError::Corrupt(c) => LinkRecvError::Corrupt(c),
        }
    }
}

/// Why an endpoint has no ring to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gone {
    /// No peer now.
    NoPeer,
    /// The link is closed.
    Closed,
}

impl From<Gone> for LinkSendError {
    fn from(g: Gone) -> Self {
        match g {
            Gone::NoPeer => LinkSendError::NoPeer,
            Gone::Closed => LinkSendError::Closed,
        }
    }
}

impl From<Gone> for LinkRecvError {
    fn from(g: Gone) -> Self {
        match g {
            Gone::NoPeer => LinkRecvError::NoPeer,
            Gone::Closed => LinkRecvError::Closed,
        }
    }
}
