//! Why a link could not be opened or brought up.

use crate::dirs::Unsafe;
use crate::geometry::GeometryError;
use crate::memory::{AttachError, RegionError};
use crate::name::NameError;
use crate::numa::NumaError;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why a link could not be opened or brought up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// A bad domain or link name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// A bad geometry.
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// A bad NUMA node.
    #[error(transparent)]
    Numa(#[from] NumaError),
    /// The master could not create the link memory.
    #[error(transparent)]
    Region(#[from] RegionError),
    /// The slave refused the master's region (which field differed).
    #[error("master's region refused: {0}")]
    Attach(AttachError),
    /// The master refused this slave.
    #[error("master refused this slave: {reason}")]
    Refused {
        /// The master's reason.
        reason: String,
    },
    /// Another live master holds the link.
    #[error("link {path} already has a live master")]
    MasterExists {
        /// The link's lock file.
        path: PathBuf,
    },
    /// A file-system or socket operation failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was attempted.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The system error.
        source: io::Error,
    },
    /// The peer broke the handshake protocol.
    #[error("handshake protocol error: {0}")]
    Protocol(String),
    /// The link did not come up in time.
    #[error("link did not come up within {0:?}")]
    Timeout(Duration),
    /// The queue's endpoint is taken: another one of its kind lives.
    #[error("the link's {what} on queue {queue} is already taken")]
    AlreadyTaken {
        /// `"sender"` or `"receiver"`.
        what: &'static str,
        /// The queue.
        queue: u16,
    },
    /// No such queue on this link.
    #[error("queue {queue} does not exist: the link has {queues} queues (0..{queues})")]
    NoSuchQueue {
        /// The queue asked for.
        queue: u16,
        /// Queues of the link (or the most a link carries, before a slave
        /// learns the master's count).
        queues: u16,
    },
    /// A directory or file of the link is not safe to use (a symlink,
    /// another owner, writable by others).
    #[error(transparent)]
    Unsafe(#[from] Unsafe),
    /// The process listening at the link's socket is not a master this
    /// slave trusts.
    #[error("the master (pid {pid}, uid {uid}) is not trusted: a master must run as one of uids {trusted:?} (see LinkBuilder::master_uid)")]
    UntrustedMaster {
        /// The listener's uid, as seen by this process.
        uid: u32,
        /// The listener's pid, as seen by this process.
        pid: i32,
        /// The uids accepted.
        trusted: Vec<u32>,
    },
    /// Options that cannot go together, or one a mode has no use for.
    #[error("{0}")]
    Options(String),
    /// The link's abstract socket name is bound in its network namespace
    /// by a process that is not a master of this link (the master holds
    /// the link's lock, so no live master of it can be there).
    #[error("refusing @{name} in network namespace {netns}: already bound by pid {pid} uid {uid}, not a vecring master of this link (this master holds the link's lock)")]
    NameTaken {
        /// The abstract name, without its leading NUL.
        name: String,
        /// The namespace file it was looked for in.
        netns: PathBuf,
        /// The squatter's pid, as this process sees it (0: not visible).
        pid: i32,
        /// The squatter's uid, as this process sees it.
        uid: u32,
    },
    /// The process listening at the link's abstract name is in this
    /// process's own pid namespace: a process of this container, never the
    /// master, which runs outside it.
    #[error("refusing the master at @{name}: it is pid {pid} (uid {uid}) of this process's pid namespace, a process of this container, not the master outside it")]
    MasterInside {
        /// The abstract name, without its leading NUL.
        name: String,
        /// Its pid in our pid namespace.
        pid: i32,
        /// Its uid, as this process sees it.
        uid: u32,
    },
}

/// A failure of the slave's last attempt, kept for
/// [`Link::wait_up`](crate::Link::wait_up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    Attach(AttachError),
    Refused(String),
    Protocol(String),
    Unsafe(Unsafe),
    UntrustedMaster {
        uid: u32,
        pid: i32,
        trusted: Vec<u32>,
    },
    MasterInside {
        name: String,
        pid: i32,
        uid: u32,
    },
}

impl From<Failure> for LinkError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Attach(e) => LinkError::Attach(e),
            Failure::Refused(reason) => LinkError::Refused { reason },
            Failure::Protocol(e) => LinkError::Protocol(e),
            Failure::Unsafe(u) => LinkError::Unsafe(u),
            Failure::UntrustedMaster { uid, pid, trusted } => {
                LinkError::UntrustedMaster { uid, pid, trusted }
            }
            Failure::MasterInside { name, pid, uid } => LinkError::MasterInside { name, pid, uid },
        }
    }
}
