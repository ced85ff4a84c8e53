//! A link: the two rings of a region, opened by name by a master and a
//! slave in different processes, with a control thread that runs the
//! handshake and follows the peer's comings and goings.
//!
//! State lives in `LinkShared`; the control thread (module
//! `control`) installs a new *session* (one region, one generation)
//! when a peer attaches and removes it when the peer goes away, bumping an
//! epoch counter each time. The data-path endpoints ([`Sender`],
//! [`Receiver`]) load that epoch once per call and re-attach only when it
//! changed, so the hot path takes no lock. A master makes a fresh region for
//! every generation: nothing of a dead generation can reach the next one.

use crate::abi;
use crate::control;
use crate::dirs::Unsafe;
use crate::geometry::{Geometry, GeometryError};
use crate::memory::{AttachError, HugepagePolicy, Region, RegionError, RegionRing};
use crate::name::{self, NameError};
use crate::numa::{self, NumaError};
use crate::pinned::PinWatch;
use crate::ring::{
    Consumer, Corruption, EndpointStats, HoldBack, Producer, ReadChunk, RecvError, SendError,
    WriteChunk,
};
use crossbeam_utils::CachePadded;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use crate::control::{MAX_PENDING, MAX_REGIONS};

/// Default parent of the domain directories.
pub const DEFAULT_RUN_DIR: &str = "/run/vecring";

/// Default permission bits of the master's socket
/// ([`LinkBuilder::socket_mode`]).
pub const DEFAULT_SOCKET_MODE: u32 = 0o660;

/// Which end of the link this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Creates the memory and listens (typically the host).
    Master,
    /// Connects and maps the master's memory (typically the container).
    Slave,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Master => "master",
            Role::Slave => "slave",
        })
    }
}

/// Whether the link has a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// No peer attached.
    Down,
    /// A peer is attached; frames flow in generation `generation`.
    Up {
        /// Grows by one with every connection, and across master restarts
        /// (a master starts from the clock).
        generation: u64,
    },
}

impl LinkState {
    /// Whether the link is up.
    pub fn is_up(&self) -> bool {
        matches!(self, LinkState::Up { .. })
    }
}

/// Why a link could not be opened or brought up.
#[derive(Debug, thiserror::Error)]
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
    /// The endpoint was already taken.
    #[error("the link's {0} was already taken")]
    AlreadyTaken(&'static str),
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
}

/// A failure of the slave's last attempt, kept for [`Link::wait_up`].
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
        }
    }
}

/// A snapshot of a link's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Current (or last) generation.
    pub generation: u64,
    /// Times the link came up.
    pub link_ups: u64,
    /// Times the link went down.
    pub link_downs: u64,
    /// Generations ended because the peer corrupted the memory.
    pub peer_corruptions: u64,
    /// Peers refused (bad credentials, second slave, bad handshake).
    pub rejected_peers: u64,
    /// Regions of this link that peers which left still hold (master):
    /// their memory stays allocated until they let go. The master makes
    /// no new region while [`MAX_REGIONS`] are held.
    pub pinned_regions: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames sent but still unread when their generation ended.
    pub tx_lost_on_link_down: u64,
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
}

/// One generation: a region shared with one peer.
pub(crate) struct Session {
    pub(crate) region: Arc<Region>,
    pub(crate) generation: u64,
}

pub(crate) struct Inner {
    pub(crate) session: Option<Arc<Session>>,
    pub(crate) generation: u64,
    pub(crate) failure: Option<Failure>,
}

#[derive(Default)]
struct TxCounters {
    frames: AtomicU64,
    bytes: AtomicU64,
    lost: AtomicU64,
}

#[derive(Default)]
struct RxCounters {
    frames: AtomicU64,
    bytes: AtomicU64,
}

#[derive(Default)]
pub(crate) struct ControlCounters {
    pub(crate) link_ups: AtomicU64,
    pub(crate) link_downs: AtomicU64,
    pub(crate) peer_corruptions: AtomicU64,
    pub(crate) rejected_peers: AtomicU64,
    pub(crate) pinned_regions: AtomicU64,
}

/// State shared by the [`Link`], its endpoints and the control thread.
pub(crate) struct LinkShared {
    pub(crate) label: String,
    pub(crate) role: Role,
    /// Bumped (Release) after every session change; read once per
    /// data-path call. On its own line: written rarely, read constantly.
    epoch: CachePadded<AtomicU64>,
    pub(crate) inner: Mutex<Inner>,
    changed: Condvar,
    tx: CachePadded<TxCounters>,
    rx: CachePadded<RxCounters>,
    pub(crate) counters: ControlCounters,
    /// Generation a data-path endpoint found corrupt; 0 when none.
    pub(crate) corrupt_generation: AtomicU64,
    pub(crate) shutdown: AtomicBool,
    /// eventfd that wakes the control thread.
    pub(crate) wake: OwnedFd,
    on_change: Option<Box<dyn Fn(LinkState) + Send + Sync>>,
    sender_taken: AtomicBool,
    receiver_taken: AtomicBool,
}

impl LinkShared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave `Inner` inconsistent
        // (plain field stores), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn state(&self) -> LinkState {
        match &self.lock().session {
            Some(s) => LinkState::Up {
                generation: s.generation,
            },
            None => LinkState::Down,
        }
    }

    /// Installs or removes the session and tells everyone.
    pub(crate) fn set_session(&self, session: Option<Arc<Session>>) {
        let state = {
            let mut inner = self.lock();
            if let Some(s) = &session {
                inner.generation = s.generation;
                inner.failure = None;
            }
            let was_up = inner.session.is_some();
            inner.session = session;
            if inner.session.is_some() || was_up {
                // Bumped before the lock is released, so that whoever sees
                // the new session under the lock (`wait_up`, `wait_down`)
                // also sees the new epoch on its next data-path call.
                // Release: pairs with the Acquire load in `Endpoint::sync`,
                // which then reads the new session under the lock.
                self.epoch.fetch_add(1, Ordering::Release);
            }
            match (&inner.session, was_up) {
                (Some(s), _) => {
                    self.counters.link_ups.fetch_add(1, Ordering::Relaxed);
                    LinkState::Up {
                        generation: s.generation,
                    }
                }
                (None, true) => {
                    self.counters.link_downs.fetch_add(1, Ordering::Relaxed);
                    LinkState::Down
                }
                (None, false) => return,
            }
        };
        match state {
            LinkState::Up { generation } => {
                log::info!("vecring: {}: link up (generation {generation})", self.label)
            }
            LinkState::Down => log::info!("vecring: {}: link down", self.label),
        }
        if let Some(cb) = &self.on_change {
            cb(state);
        }
        // After the callback, so that a waiter woken here sees its effects.
        self.changed.notify_all();
    }

    /// Records why the slave's last attempt failed.
    pub(crate) fn set_failure(&self, failure: Failure) {
        self.lock().failure = Some(failure);
        self.changed.notify_all();
    }

    pub(crate) fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd; a full
        // counter (EAGAIN) already means "woken".
        unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    fn report_corruption(&self, generation: u64, c: &Corruption) {
        log::error!(
            "vecring: {}: peer corrupted generation {generation}: {c}; dropping the connection",
            self.label
        );
        self.corrupt_generation.store(generation, Ordering::Relaxed);
        self.wake();
    }
}

/// Builds a [`Link`]; see [`Link::builder`].
pub struct LinkBuilder {
    domain: String,
    link: String,
    role: Role,
    numa_node: Option<u32>,
    geometry: Option<Geometry>,
    run_dir: PathBuf,
    hugepages: HugepagePolicy,
    owner: Option<(u32, u32)>,
    socket_mode: u32,
    allowed_uids: Vec<u32>,
    master_uids: Vec<u32>,
    retry_interval: Duration,
    handshake_timeout: Duration,
    on_change: Option<Box<dyn Fn(LinkState) + Send + Sync>>,
}

/// Everything the control thread needs to know, fixed at open.
pub(crate) struct Config {
    pub(crate) run_dir: PathBuf,
    pub(crate) domain: String,
    pub(crate) link: String,
    pub(crate) geometry: Option<Geometry>,
    pub(crate) numa_node: Option<u32>,
    pub(crate) hugepages: HugepagePolicy,
    pub(crate) allowed_uids: Vec<u32>,
    pub(crate) master_uids: Vec<u32>,
    pub(crate) retry_interval: Duration,
    pub(crate) handshake_timeout: Duration,
}

impl LinkBuilder {
    /// This process's role (default: [`Role::Slave`]).
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// Shorthand for `role(Master)` / `role(Slave)`.
    pub fn master(self, master: bool) -> Self {
        self.role(if master { Role::Master } else { Role::Slave })
    }

    /// Binds the link memory to NUMA node `node` (master; the slave only
    /// checks that the node exists).
    pub fn numa_node(mut self, node: u32) -> Self {
        self.numa_node = Some(node);
        self
    }

    /// Ring geometry. The master uses [`Geometry::DEFAULT`] when unset; a
    /// slave that sets it refuses a master with another one.
    pub fn geometry(mut self, geometry: Geometry) -> Self {
        self.geometry = Some(geometry);
        self
    }

    /// Parent directory of the domain directories (default `/run/vecring`).
    pub fn run_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.run_dir = dir.into();
        self
    }

    /// Hugepage policy for the memory the master creates.
    pub fn hugepages(mut self, policy: HugepagePolicy) -> Self {
        self.hugepages = policy;
        self
    }

    /// Gives the socket to `uid:gid` (master), e.g. an unprivileged
    /// container's mapped root, and lets that uid (only it, unless
    /// [`allow_uid`](Self::allow_uid) says otherwise) attach. The domain
    /// directory stays the master's; `uid` gets search permission there.
    pub fn owner(mut self, uid: u32, gid: u32) -> Self {
        self.owner = Some((uid, gid));
        self
    }

    /// Mode of the socket (default `0o660`). The domain directory is the
    /// master's alone (`0o700`) plus search permission for the classes the
    /// socket mode lets connect.
    pub fn socket_mode(mut self, mode: u32) -> Self {
        self.socket_mode = mode & 0o777;
        self
    }

    /// Only slaves running as `uid` (as seen from the master) may attach;
    /// may be given several times. Default: any uid that can reach the
    /// socket.
    pub fn allow_uid(mut self, uid: u32) -> Self {
        self.allowed_uids.push(uid);
        self
    }

    /// The uid a master must run as, as seen by this slave; may be given
    /// several times. Default: root, or the owner of the run directory or
    /// of the domain directory (who alone can create the socket there, as
    /// the slave refuses directories writable by others). In an
    /// unprivileged container, host uids appear as the overflow uid
    /// (usually 65534).
    pub fn master_uid(mut self, uid: u32) -> Self {
        self.master_uids.push(uid);
        self
    }

    /// How often a waiting slave retries to connect (default 50 ms).
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Called from the control thread on every state change.
    pub fn on_state_change(mut self, f: impl Fn(LinkState) + Send + Sync + 'static) -> Self {
        self.on_change = Some(Box::new(f));
        self
    }

    /// Opens the link: a master claims the link and listens; a slave starts
    /// trying to attach. Neither waits for the peer; see
    /// [`Link::wait_up`].
    ///
    /// # Errors
    /// [`LinkError`] for a bad name, node or geometry, a live master
    /// (master), or a file-system failure.
    pub fn open(self) -> Result<Link, LinkError> {
        name::validate("domain", &self.domain)?;
        name::validate("link", &self.link)?;
        if let Some(node) = self.numa_node {
            numa::check_node(node)?;
        }
        let socket = self
            .run_dir
            .join(&self.domain)
            .join(format!("{}.sock", self.link));
        if socket.as_os_str().len() >= 108 {
            return Err(LinkError::Io {
                what: "socket path too long for a Unix socket (108 bytes)",
                path: socket,
                source: io::Error::from(io::ErrorKind::InvalidInput),
            });
        }
        // Giving the socket to an owner admits that uid alone, unless the
        // allowed uids are listed.
        let allowed_uids = match (self.owner, self.allowed_uids.is_empty()) {
            (Some((uid, _)), true) => vec![uid],
            _ => self.allowed_uids,
        };
        let config = Config {
            run_dir: self.run_dir,
            domain: self.domain,
            link: self.link,
            geometry: self.geometry,
            numa_node: self.numa_node,
            hugepages: self.hugepages,
            allowed_uids,
            master_uids: self.master_uids,
            retry_interval: self.retry_interval,
            handshake_timeout: self.handshake_timeout,
        };
        // SAFETY: plain eventfd creation; checked below.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake < 0 {
            return Err(LinkError::Io {
                what: "eventfd",
                path: PathBuf::new(),
                source: io::Error::last_os_error(),
            });
        }
        let shared = Arc::new(LinkShared {
            label: format!("{}/{} ({})", config.domain, config.link, self.role),
            role: self.role,
            epoch: CachePadded::new(AtomicU64::new(0)),
            inner: Mutex::new(Inner {
                session: None,
                generation: 0,
                failure: None,
            }),
            changed: Condvar::new(),
            tx: CachePadded::default(),
            rx: CachePadded::default(),
            counters: ControlCounters::default(),
            corrupt_generation: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            // SAFETY: `wake` is a fresh descriptor we own.
            wake: unsafe { OwnedFd::from_raw_fd(wake) },
            on_change: self.on_change,
            sender_taken: AtomicBool::new(false),
            receiver_taken: AtomicBool::new(false),
        });
        let (thread, socket) = match self.role {
            Role::Master => {
                let pins = PinWatch::new().map_err(|source| LinkError::Io {
                    what: "inotify (watching link memory)",
                    path: PathBuf::new(),
                    source,
                })?;
                let claim = control::claim_master(&config, self.owner, self.socket_mode)?;
                (
                    control::spawn_master(Arc::clone(&shared), config, claim, pins),
                    socket,
                )
            }
            Role::Slave => (control::spawn_slave(Arc::clone(&shared), config), socket),
        };
        let thread = thread.map_err(|source| LinkError::Io {
            what: "spawning the control thread",
            path: PathBuf::new(),
            source,
        })?;
        log::info!("vecring: {}: opened", shared.label);
        Ok(Link {
            shared,
            thread: Some(thread),
            socket: Some(socket),
        })
    }
}

/// An open link. Dropping it stops the control thread, disconnects the
/// peer, and (master) removes the socket and lock files, within a moment
/// whatever the peer does.
///
/// ```no_run
/// use std::time::Duration;
/// use vecring_core::{Link, Role};
///
/// let link = Link::builder("testcontainer", "tap456").role(Role::Master).open()?;
/// link.wait_up(Duration::from_secs(10))?;
/// let mut tx = link.sender()?;
/// tx.send(b"frame")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Link {
    shared: Arc<LinkShared>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The socket path: the master listens there (its control thread owns
    /// the files and removes them when it ends), the slave connects there.
    socket: Option<PathBuf>,
}

impl Link {
    /// A builder for the link `link` of domain `domain`.
    pub fn builder(domain: &str, link: &str) -> LinkBuilder {
        LinkBuilder {
            domain: domain.to_string(),
            link: link.to_string(),
            role: Role::Slave,
            numa_node: None,
            geometry: None,
            run_dir: PathBuf::from(DEFAULT_RUN_DIR),
            hugepages: HugepagePolicy::Prefer,
            owner: None,
            socket_mode: DEFAULT_SOCKET_MODE,
            allowed_uids: Vec::new(),
            master_uids: Vec::new(),
            retry_interval: Duration::from_millis(50),
            handshake_timeout: Duration::from_secs(2),
            on_change: None,
        }
    }

    /// This end's role.
    pub fn role(&self) -> Role {
        self.shared.role
    }

    /// Whether a peer is attached.
    pub fn state(&self) -> LinkState {
        self.shared.state()
    }

    /// The region of the current generation, if up (for diagnostics such as
    /// NUMA placement).
    pub fn region(&self) -> Option<Arc<Region>> {
        self.shared
            .lock()
            .session
            .as_ref()
            .map(|s| Arc::clone(&s.region))
    }

    /// Waits until the link is up; returns its generation.
    ///
    /// # Errors
    /// [`LinkError::Timeout`], or (slave) why the master or its region was
    /// refused, as soon as that happens.
    pub fn wait_up(&self, timeout: Duration) -> Result<u64, LinkError> {
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        loop {
            if let Some(s) = &inner.session {
                return Ok(s.generation);
            }
            if let Some(f) = &inner.failure {
                return Err(f.clone().into());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(LinkError::Timeout(timeout));
            }
            inner = self
                .shared
                .changed
                .wait_timeout(inner, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Waits until the link is down (the peer left), for at most `timeout`.
    /// Returns whether it is down.
    pub fn wait_down(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        while inner.session.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            inner = self
                .shared
                .changed
                .wait_timeout(inner, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }

    /// The transmit side; can be taken once.
    ///
    /// # Errors
    /// [`LinkError::AlreadyTaken`].
    pub fn sender(&self) -> Result<Sender, LinkError> {
        if self.shared.sender_taken.swap(true, Ordering::AcqRel) {
            return Err(LinkError::AlreadyTaken("sender"));
        }
        Ok(Sender {
            ep: Endpoint::new(Arc::clone(&self.shared)),
        })
    }

    /// The receive side; can be taken once.
    ///
    /// # Errors
    /// [`LinkError::AlreadyTaken`].
    pub fn receiver(&self) -> Result<Receiver, LinkError> {
        if self.shared.receiver_taken.swap(true, Ordering::AcqRel) {
            return Err(LinkError::AlreadyTaken("receiver"));
        }
        Ok(Receiver {
            ep: Endpoint::new(Arc::clone(&self.shared)),
            hold: None,
            hold_epoch: u64::MAX,
        })
    }

    /// The link's counters.
    pub fn counters(&self) -> LinkCounters {
        let s = &self.shared;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LinkCounters {
            generation: s.lock().generation,
            link_ups: r(&s.counters.link_ups),
            link_downs: r(&s.counters.link_downs),
            peer_corruptions: r(&s.counters.peer_corruptions),
            rejected_peers: r(&s.counters.rejected_peers),
            pinned_regions: r(&s.counters.pinned_regions),
            tx_frames: r(&s.tx.frames),
            tx_bytes: r(&s.tx.bytes),
            tx_lost_on_link_down: r(&s.tx.lost),
            rx_frames: r(&s.rx.frames),
            rx_bytes: r(&s.rx.bytes),
        }
    }

    /// The socket path of this link: where the master listens and the
    /// slave connects (what a side waiting for its peer waits on).
    pub fn socket_path(&self) -> Option<&Path> {
        self.socket.as_deref()
    }

    /// Closes the link (as dropping it does).
    pub fn close(self) {}
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("link", &self.shared.label)
            .field("state", &self.state())
            .finish()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        log::info!("vecring: {}: closed", self.shared.label);
    }
}

/// Per-endpoint attachment to the current session.
struct Endpoint<E> {
    shared: Arc<LinkShared>,
    epoch: u64,
    generation: u64,
    ring: Option<E>,
    reported: bool,
    /// Totals of earlier generations' rings.
    carried: EndpointStats,
}

/// What an endpoint attaches to a ring.
trait Attach: Sized {
    fn attach(region: &Arc<Region>, role: Role) -> Result<Self, Corruption>;
    fn corruption(&self) -> Option<Corruption>;
    fn stats(&self) -> EndpointStats;
    fn detach(self, shared: &LinkShared);
}

fn tx_ring(role: Role) -> usize {
    match role {
        Role::Master => abi::RING_MASTER_TO_SLAVE,
        Role::Slave => abi::RING_SLAVE_TO_MASTER,
    }
}

fn rx_ring(role: Role) -> usize {
    tx_ring(role) ^ 1
}

impl Attach for Producer<RegionRing> {
    fn attach(region: &Arc<Region>, role: Role) -> Result<Self, Corruption> {
        // SAFETY: `Link::sender` hands out one Sender per link, and each
        // Sender holds at most one Producer at a time.
        unsafe { Producer::attach(region.ring(tx_ring(role))) }
    }
    fn corruption(&self) -> Option<Corruption> {
        Producer::corruption(self)
    }
    fn stats(&self) -> EndpointStats {
        Producer::stats(self)
    }
    fn detach(self, shared: &LinkShared) {
        let lost = self.unread_frames();
        if lost > 0 {
            shared.tx.lost.fetch_add(lost, Ordering::Relaxed);
            log::warn!(
                "vecring: {}: {lost} frames sent but unread when the generation ended",
                shared.label
            );
        }
    }
}

impl Attach for Consumer<RegionRing> {
    fn attach(region: &Arc<Region>, role: Role) -> Result<Self, Corruption> {
        // SAFETY: as for the producer, via `Link::receiver`.
        unsafe { Consumer::attach(region.ring(rx_ring(role))) }
    }
    fn corruption(&self) -> Option<Corruption> {
        Consumer::corruption(self)
    }
    fn stats(&self) -> EndpointStats {
        Consumer::stats(self)
    }
    fn detach(self, _: &LinkShared) {}
}

impl<E: Attach> Endpoint<E> {
    fn new(shared: Arc<LinkShared>) -> Self {
        Endpoint {
            shared,
            epoch: u64::MAX,
            generation: 0,
            ring: None,
            reported: false,
            carried: EndpointStats::default(),
        }
    }

    /// Frames and bytes over all generations.
    fn totals(&self) -> (u64, u64) {
        let now = self.ring.as_ref().map(|r| r.stats()).unwrap_or_default();
        (
            self.carried.frames + now.frames,
            self.carried.bytes + now.bytes,
        )
    }

    /// Follows session changes: one atomic load when nothing changed.
    #[inline]
    fn sync(&mut self) {
        // Acquire: pairs with the Release bump in `LinkShared::set_session`.
        let epoch = self.shared.epoch.load(Ordering::Acquire);
        if epoch != self.epoch {
            self.resync(epoch);
        }
    }

    #[cold]
    fn resync(&mut self, epoch: u64) {
        self.epoch = epoch;
        if let Some(old) = self.ring.take() {
            let st = old.stats();
            self.carried.frames += st.frames;
            self.carried.bytes += st.bytes;
            old.detach(&self.shared);
        }
        self.reported = false;
        let session = self.shared.lock().session.clone();
        if let Some(s) = session {
            self.generation = s.generation;
            match E::attach(&s.region, self.shared.role) {
                Ok(ring) => self.ring = Some(ring),
                Err(c) => self.report(&c),
            }
        }
    }

    #[cold]
    fn report(&mut self, c: &Corruption) {
        if !self.reported {
            self.reported = true;
            self.shared.report_corruption(self.generation, c);
        }
    }

    /// The ring to use now, or why there is none.
    #[inline]
    fn ring(&mut self) -> Option<&mut E> {
        self.sync();
        if let Some(c) = self.ring.as_ref().and_then(|r| r.corruption()) {
            self.report(&c);
        }
        self.ring.as_mut()
    }
}

/// The transmit side of a [`Link`]. Use it from one thread at a time.
pub struct Sender {
    ep: Endpoint<Producer<RegionRing>>,
}

impl Sender {
    fn publish(&mut self) {
        let (frames, bytes) = self.ep.totals();
        // Relaxed stores of running totals (this thread is the only
        // writer); readers want a recent value, not an ordering.
        self.ep.shared.tx.frames.store(frames, Ordering::Relaxed);
        self.ep.shared.tx.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Whether the link is up, as this endpoint last saw it.
    pub fn is_up(&mut self) -> bool {
        self.ep.ring().is_some()
    }

    /// The geometry of the rings, if the link is up (it may change when a
    /// new master arrives).
    pub fn geometry(&mut self) -> Option<crate::Geometry> {
        Some(self.ep.ring()?.geometry())
    }

    /// The generation this endpoint sends into, if the link is up.
    pub fn generation(&mut self) -> Option<u64> {
        self.ep.ring()?;
        Some(self.ep.generation)
    }

    /// Reserves up to `max_slots` slots for writing frames in place; commit
    /// the chunk to send them.
    ///
    /// # Errors
    /// [`SendError::LinkDown`] without a peer, [`SendError::Corrupt`] if the
    /// peer corrupted this generation (the link then reconnects).
    #[inline]
    pub fn write_chunk(
        &mut self,
        max_slots: usize,
    ) -> Result<WriteChunk<'_, RegionRing>, SendError> {
        let ring = self.ep.ring().ok_or(SendError::LinkDown)?;
        Ok(ring.write_chunk(max_slots)?)
    }

    /// Copies one frame into the link.
    ///
    /// # Errors
    /// As [`Producer::send`], plus [`SendError::LinkDown`].
    pub fn send(&mut self, frame: &[u8]) -> Result<(), SendError> {
        let r = self.ep.ring().ok_or(SendError::LinkDown)?.send(frame);
        if r.is_ok() {
            self.publish();
        }
        r
    }

    /// Copies as many frames as fit, with one index update; returns how
    /// many were sent.
    ///
    /// # Errors
    /// As [`Producer::send_batch`], plus [`SendError::LinkDown`].
    pub fn send_batch<'f, I>(&mut self, frames: I) -> Result<usize, SendError>
    where
        I: IntoIterator<Item = &'f [u8]>,
    {
        let r = self
            .ep
            .ring()
            .ok_or(SendError::LinkDown)?
            .send_batch(frames);
        // Only when the totals moved: a sender finding the ring full calls
        // again at once.
        if matches!(r, Ok(n) if n > 0) {
            self.publish();
        }
        r
    }

    /// Frames sent in the current generation that the peer has not read
    /// yet (0 when the link is down).
    pub fn unread(&mut self) -> u64 {
        self.ep.ring().map_or(0, |p| p.unread_frames())
    }

    /// Updates the link's shared TX counters from this endpoint's totals
    /// (done by `send`/`send_batch`; call after committing chunks).
    pub fn flush_counters(&mut self) {
        self.publish();
    }
}

/// The receive side of a [`Link`]. Use it from one thread at a time.
pub struct Receiver {
    ep: Endpoint<Consumer<RegionRing>>,
    /// See [`Receiver::set_hold_back`].
    hold: Option<HoldBack>,
    /// The session whose consumer has `hold` applied.
    hold_epoch: u64,
}

impl Receiver {
    fn publish(&mut self) {
        let (frames, bytes) = self.ep.totals();
        // Relaxed: running totals from their only writer.
        self.ep.shared.rx.frames.store(frames, Ordering::Relaxed);
        self.ep.shared.rx.bytes.store(bytes, Ordering::Relaxed);
    }

    /// Whether the link is up, as this endpoint last saw it.
    pub fn is_up(&mut self) -> bool {
        self.ep.ring().is_some()
    }

    /// Sets (or turns off) the hold-back of the batch reads, for this and
    /// every later generation; see [`HoldBack`]. Off by default.
    pub fn set_hold_back(&mut self, hold: Option<HoldBack>) {
        self.hold = hold;
        // Applied by `consumer` on the next read.
        self.hold_epoch = u64::MAX;
    }

    /// The current generation's consumer, with the hold-back applied.
    #[inline]
    fn consumer(&mut self) -> Option<&mut Consumer<RegionRing>> {
        self.ep.ring()?;
        let epoch = self.ep.epoch;
        let ring = self.ep.ring.as_mut()?;
        if self.hold_epoch != epoch {
            ring.set_hold_back(self.hold);
            self.hold_epoch = epoch;
        }
        Some(ring)
    }

    /// The geometry of the rings, if the link is up.
    pub fn geometry(&mut self) -> Option<crate::Geometry> {
        Some(self.ep.ring()?.geometry())
    }

    /// The generation this endpoint receives from, if the link is up.
    pub fn generation(&mut self) -> Option<u64> {
        self.ep.ring()?;
        Some(self.ep.generation)
    }

    /// Ready frames, read in place and released when the chunk drops.
    ///
    /// # Errors
    /// [`RecvError::LinkDown`] without a peer, [`RecvError::Corrupt`] if the
    /// peer corrupted this generation (the link then reconnects).
    #[inline]
    pub fn read_chunk(
        &mut self,
        max_frames: usize,
    ) -> Result<ReadChunk<'_, RegionRing>, RecvError> {
        let ring = self.consumer().ok_or(RecvError::LinkDown)?;
        Ok(ring.read_chunk(max_frames)?)
    }

    /// Releases the slots of frames [kept](ReadChunk::keep) in the current
    /// generation up to slot `index`; see [`Consumer::release_to`]. Returns
    /// false if `index` is out of range or the generation changed.
    pub fn release_to(&mut self, index: u64) -> bool {
        self.ep.ring.as_mut().is_some_and(|c| c.release_to(index))
    }

    /// `(released, read)` positions of the ring this endpoint holds now,
    /// without following a generation change (so they belong to the same
    /// ring as the last chunk read); see [`Consumer::released_position`].
    pub fn positions(&self) -> Option<(u64, u64)> {
        self.ep
            .ring
            .as_ref()
            .map(|c| (c.released_position(), c.read_position()))
    }

    /// The region the current generation's frames live in, if up (to keep
    /// it mapped while frames kept in place are in use).
    pub fn region(&mut self) -> Option<Arc<Region>> {
        Some(Arc::clone(self.ep.ring()?.storage().region()))
    }

    /// Copies the next frame into `buf`.
    ///
    /// # Errors
    /// As [`Consumer::recv`], plus [`RecvError::LinkDown`].
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let r = self.ep.ring().ok_or(RecvError::LinkDown)?.recv(buf);
        if r.is_ok() {
            self.publish();
        }
        r
    }

    /// Copies up to `bufs.len()` frames; see [`Consumer::recv_batch`].
    ///
    /// # Errors
    /// As [`Consumer::recv_batch`], plus [`RecvError::LinkDown`].
    pub fn recv_batch<B: AsMut<[u8]>>(
        &mut self,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> Result<usize, RecvError> {
        let r = self
            .consumer()
            .ok_or(RecvError::LinkDown)?
            .recv_batch(bufs, lens);
        // Only when the totals moved: a receiver polling an empty ring
        // calls again at once.
        if matches!(r, Ok(n) if n > 0) {
            self.publish();
        }
        r
    }

    /// Updates the link's shared RX counters (done by `recv`/`recv_batch`;
    /// call after releasing chunks).
    pub fn flush_counters(&mut self) {
        self.publish();
    }
}
