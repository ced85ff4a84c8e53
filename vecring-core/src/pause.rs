//! Pausing a link from the host: its master lets go of the slave and
//! offers nothing while the pause is held.
//!
//! This is what a checkpoint needs. A process that holds a link cannot be
//! dumped with it: the region is memory shared with the master, and its
//! descriptors are the host's. Before the dump, a tool (the CRIU plugin
//! `vecring-criu`) calls [`pause`] on each link the process uses: the
//! master closes the slave's connection, the link goes down on both sides
//! with the usual accounting (what one side sent and the other never took
//! is counted lost on link down, never delivered twice), and the answer
//! comes once no process holds any of the link's memory. The slave keeps
//! running and asks again; its requests wait. The dump then holds nothing
//! of the link, and a restored slave attaches as a new generation, to the
//! same master or a new one. Dropping the [`Paused`] (or the process
//! ending) lets the master serve again.
//!
//! The question goes to the link's socket in the run directory (for a
//! link in a network namespace, the host's `<link>@ns<inode>.sock`), as a
//! [`status`](crate::status) question does. Only root and the master's
//! own uid may pause; one pause at a time.
//!
//! ```no_run
//! use std::path::Path;
//! use std::time::Duration;
//!
//! let socket = Path::new("/run/vecring/lab/l0.sock");
//! let held = vecring_core::pause::pause(socket, Duration::from_secs(10))?;
//! // ... checkpoint the slave's process ...
//! drop(held); // the master serves requests again
//! # Ok::<(), vecring_core::status::QueryError>(())
//! ```

use crate::closer::{self, PeerSocket};
use crate::handshake::{self, Kind, Msg};
use crate::status::QueryError;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::Duration;

/// A link held paused: its master makes no offer while this lives.
#[derive(Debug)]
pub struct Paused {
    conn: PeerSocket,
}

impl AsFd for Paused {
    /// Readable when the master ends the pause (it stopped).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.conn.as_fd()
    }
}

/// Asks the master listening at `socket` to detach its slave and hold off
/// new ones; returns once no process holds the link's memory, or fails
/// after `timeout`.
///
/// # Errors
/// [`QueryError::NoMaster`] when nobody listens; [`QueryError::Refused`]
/// with the master's reason (not root or the master's uid, already
/// paused, a master too old to know the question);
/// [`QueryError::Io`] with `TimedOut` when the slave still holds the
/// link's memory after `timeout` (a slave that stopped running its link:
/// its process is stopped, or never polls); [`QueryError::Malformed`].
pub fn pause(socket: &Path, timeout: Duration) -> Result<Paused, QueryError> {
    pause_master(socket, None, timeout)
}

/// [`pause`], asked only if the process listening at `socket` is
/// `master_pid` (as this process's pid namespace numbers it): a tool that
/// found the link from a slave's connection pauses that slave's master
/// and nobody else, whatever path the slave's side names.
///
/// # Errors
/// As [`pause`]; [`QueryError::Refused`] without asking when another
/// process listens there.
pub fn pause_master(
    socket: &Path,
    master_pid: Option<i32>,
    timeout: Duration,
) -> Result<Paused, QueryError> {
    let conn = handshake::connect(socket).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ECONNREFUSED) => QueryError::NoMaster {
            path: socket.display().to_string(),
        },
        _ => QueryError::Io(e),
    })?;
    if let Some(want) = master_pid {
        let cred = handshake::peer_credentials(&conn)?;
        if cred.pid != want {
            return Err(QueryError::Refused(format!(
                "{} is served by pid {}, not the link's master (pid {want}): not asked",
                socket.display(),
                cred.pid
            )));
        }
    }
    handshake::send(&conn, &Msg::new(Kind::Pause, 0), &[])?;
    if !handshake::wait_readable(&conn, timeout)? {
        return Err(QueryError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the link's slave still holds its memory after {timeout:?} \
                 (its process does not run its link: stopped, or never polls it)"
            ),
        )));
    }
    let (m, fds) = handshake::recv(&conn, Duration::ZERO).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => QueryError::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the master closed without answering",
        )),
        io::ErrorKind::InvalidData => QueryError::Malformed(e.to_string()),
        _ => QueryError::Io(e),
    })?;
    if !fds.is_empty() {
        closer::count_planted(fds.len());
        return Err(QueryError::Malformed(format!(
            "the answer came with {} file descriptors (closed apart); a master sends none",
            fds.len()
        )));
    }
    match m.kind {
        Kind::Ack => Ok(Paused { conn }),
        Kind::Reject | Kind::Busy => Err(QueryError::Refused(m.text)),
        other => Err(QueryError::Malformed(format!(
            "unexpected {other:?} in answer to a pause"
        ))),
    }
}
