//! The control thread of a link: the master's accept loop and the slave's
//! connect loop, running the [`handshake`] and installing sessions in
//! [`LinkShared`]. Nothing here is on the data path.
//!
//! The master serves every connection from one `poll` loop and never
//! blocks on a peer: silent, slow or flooding clients cost a legitimate
//! slave at most their share of one loop turn. Memory is created for a
//! peer only after its credentials passed and it asked, one offer at a
//! time, and at most [`MAX_REGIONS`] regions of a link exist at once,
//! counting those that departed peers still hold (see [`crate::pinned`]).

mod master;
mod slave;

use super::error::LinkError;
use super::shared::{Config, LinkShared, Meeting};
use crate::closer::PeerSocket;
use crate::dirs::{self, ClaimError, DirError, MasterClaim};
use crate::handshake;
use crate::pinned::PinWatch;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Connections the master keeps waiting for their request or their turn;
/// past this one of the uid that holds the most is closed, its oldest
/// silent one or else its oldest (`master::turns`).
pub const MAX_PENDING: usize = 16;
/// Regions of one link that may exist at once: the one offered or attached,
/// and those still held by peers that left. Past this, requests wait, then
/// get `Kind::Busy` (`handshake::Kind::Busy`).
pub const MAX_REGIONS: usize = 2;
/// First wait before the next offer after a peer took a region and left
/// without completing the handshake; doubles up to [`BACKOFF_MAX`].
pub(super) const BACKOFF_FIRST: Duration = Duration::from_millis(50);
/// Longest such wait: well under the one second a legitimate slave may
/// be delayed.
pub(super) const BACKOFF_MAX: Duration = Duration::from_millis(400);
/// A generation shorter than this makes the next offer wait (the
/// back-off above), so a peer that attaches and leaves in a loop gets at
/// most a few generations a second.
pub(super) const SHORT_GENERATION: Duration = Duration::from_secs(1);

fn claim_error(e: ClaimError) -> LinkError {
    match e {
        ClaimError::Held(path) => LinkError::MasterExists { path },
        ClaimError::Dir(e) => dir_error(e),
    }
}

fn dir_error(e: DirError) -> LinkError {
    match e {
        DirError::Unsafe(u) => LinkError::Unsafe(u),
        DirError::Io { what, path, source } => LinkError::Io { what, path, source },
    }
}

/// A master's claim on a link: its files in the run directory (the lock,
/// and the socket it listens on), and in a network namespace the listener
/// on the link's abstract name.
pub(crate) struct Claim {
    pub(crate) files: MasterClaim,
    pub(crate) meeting: Option<PeerSocket>,
}

/// Opens and checks the link's directory, takes its lock and listens; in a
/// network namespace, also on the link's abstract name there.
pub(crate) fn claim_master(
    config: &Config,
    owner: Option<(u32, u32)>,
    socket_mode: u32,
) -> Result<Claim, LinkError> {
    let file_link = match &config.netns {
        Some(m) => format!("{}@ns{}", config.link, m.ns.id().ino),
        None => config.link.clone(),
    };
    let files = dirs::MasterFiles {
        run_dir: &config.run_dir,
        domain: &config.domain,
        link: &file_link,
        socket_mode,
        owner,
    };
    let files = dirs::claim_master(&files, handshake::listen).map_err(claim_error)?;
    let meeting = match &config.netns {
        Some(m) => Some(listen_in(m)?),
        None => None,
    };
    Ok(Claim { files, meeting })
}

/// Listens on the meeting's abstract name inside its namespace. The name
/// being taken while we hold the link's lock means a process that is not a
/// master of this link took it: it is named, never served beside.
fn listen_in(m: &Meeting) -> Result<PeerSocket, LinkError> {
    let io_error = |what, source| LinkError::Io {
        what,
        path: m.ns.path().to_path_buf(),
        source,
    };
    let bound = m
        .run(|| handshake::listen_abstract(&m.name))
        .map_err(|e| io_error("entering the network namespace", e))?;
    match bound {
        Ok(listener) => Ok(listener),
        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
            // Who holds it: the credentials its listener had, as a
            // connection from inside sees them (sending nothing).
            let cred = m
                .run(|| {
                    handshake::connect_abstract(&m.name)
                        .and_then(|conn| handshake::peer_credentials(&conn))
                })
                .and_then(|r| r);
            let (pid, uid) = cred.map_or((0, u32::MAX), |c| (c.pid, c.uid));
            Err(LinkError::NameTaken {
                name: m.name.clone(),
                netns: m.ns.path().to_path_buf(),
                pid,
                uid,
            })
        }
        Err(e) => Err(io_error("listening on the abstract name in", e)),
    }
}

/// What woke a control-thread wait.
pub(super) enum Wake {
    /// These descriptors (indices into the set) are readable or hung up.
    Ready(Vec<usize>),
    /// The link's eventfd: shutdown or a corruption report.
    Poked,
    /// The timeout passed.
    Timeout,
}

pub(super) fn wait(shared: &LinkShared, fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> Wake {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .chain(std::iter::once(libc::pollfd {
            fd: shared.wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }))
        .collect();
    // Rounded up, so that a deadline a fraction of a millisecond away is
    // not polled for again and again with a zero timeout.
    let ms = timeout.map_or(-1, |t| {
        t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
    });
    // SAFETY: `set` holds `set.len()` valid pollfds.
    let rc = unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, ms) };
    if rc <= 0 {
        // Timeout, or EINTR: both mean "look again".
        return Wake::Timeout;
    }
    let wake = set.len() - 1;
    if set[wake].revents != 0 {
        let mut buf = [0u8; 8];
        // SAFETY: reads 8 bytes into a live buffer; drains the eventfd.
        unsafe { libc::read(shared.wake.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        return Wake::Poked;
    }
    Wake::Ready(
        set[..wake]
            .iter()
            .enumerate()
            .filter(|(_, p)| p.revents != 0)
            .map(|(i, _)| i)
            .collect(),
    )
}

pub(super) fn stopping(shared: &LinkShared) -> bool {
    // Acquire: pairs with the Release store in `Link::drop`.
    shared.shutdown.load(Ordering::Acquire)
}

/// Whether the data path reported the current generation corrupt.
pub(super) fn corrupt(shared: &LinkShared, generation: u64) -> bool {
    shared.corrupt_generation.load(Ordering::Relaxed) == generation
}

/// Sleeps for `d` or until shutdown, whichever comes first.
pub(super) fn pause(shared: &LinkShared, d: Duration) {
    let _ = wait(shared, &[], Some(d));
}

/// How long dropping a [`Link`](super::Link) waits for its control thread.
/// The thread never blocks on a peer (descriptors a peer passes are closed
/// apart: [`crate::closer`]), so this bounds only what should not happen.
/// Half a second, so that a close (a port close, `vecring_close`) returns
/// within the second the documentation promises even then.
pub(crate) const JOIN_BOUND: Duration = Duration::from_millis(500);

/// A running control thread, with a way to wait for it within a bound.
pub(crate) struct ControlThread {
    handle: JoinHandle<()>,
    /// Set when the thread's closure returns (or unwinds).
    done: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

/// Sets the thread's `done` when dropped: at return and at unwinding.
struct Done(Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl Drop for Done {
    fn drop(&mut self) {
        let (flag, cv) = &*self.0;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

impl ControlThread {
    fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> io::Result<Self> {
        let done = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let mark = Done(done.clone());
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _mark = mark;
                f();
            })?;
        Ok(ControlThread { handle, done })
    }

    /// Waits at most `bound` for the thread to end; joins it if it did,
    /// else leaves it detached. True if it ended.
    pub(crate) fn join_within(self, bound: Duration) -> bool {
        let (flag, cv) = &*self.done;
        let guard = flag.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = cv
            .wait_timeout_while(guard, bound, |done| !*done)
            .unwrap_or_else(|e| e.into_inner());
        let ended = *guard;
        drop(guard);
        if ended {
            let _ = self.handle.join();
        }
        ended
    }
}

pub(crate) fn spawn_master(
    shared: Arc<LinkShared>,
    config: Config,
    claim: Claim,
    pins: PinWatch,
) -> io::Result<ControlThread> {
    ControlThread::spawn("vecring-master", move || {
        master::Master::new(&shared, &config, claim, pins).run()
    })
}

pub(crate) fn spawn_slave(shared: Arc<LinkShared>, config: Config) -> io::Result<ControlThread> {
    ControlThread::spawn("vecring-slave", move || slave::run(&shared, &config))
}

/// An instant no deadline reaches: for durations too long to add.
pub(super) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365)
}
