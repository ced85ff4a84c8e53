//! [`LinkBuilder`]: a link's options, checked and turned into an open
//! [`Link`] with its control thread.

use super::control;
use super::error::LinkError;
use super::shared::*;
use super::types::*;
use super::Link;
use super::RegionBudget;
use super::{DEFAULT_RUN_DIR, DEFAULT_SOCKET_MODE};
use crate::geometry::{self, Geometry};
use crate::memory::HugepagePolicy;
use crate::name;
use crate::netns;
use crate::numa;
use crate::pinned::PinWatch;
use crossbeam_utils::CachePadded;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Builds a [`Link`]; see [`Link::builder`].
pub struct LinkBuilder {
    domain: String,
    link: String,
    role: Role,
    numa_node: Option<u32>,
    geometry: Option<Geometry>,
    queues: Option<u16>,
    run_dir: PathBuf,
    hugepages: HugepagePolicy,
    owner: Option<(u32, u32)>,
    socket_mode: Option<u32>,
    netns: Option<NetnsChoice>,
    allowed_uids: Vec<u32>,
    master_uids: Vec<u32>,
    retry_interval: Duration,
    handshake_timeout: Duration,
    region_budget: RegionBudget,
    on_change: Option<Box<dyn Fn(LinkState) + Send + Sync>>,
}

impl LinkBuilder {
    /// The defaults; see [`Link::builder`].
    pub(super) fn new(domain: &str, link: &str) -> Self {
        LinkBuilder {
            domain: domain.to_string(),
            link: link.to_string(),
            role: Role::Slave,
            numa_node: None,
            geometry: None,
            queues: None,
            run_dir: PathBuf::from(DEFAULT_RUN_DIR),
            hugepages: HugepagePolicy::Prefer,
            owner: None,
            socket_mode: None,
            netns: None,
            allowed_uids: Vec::new(),
            master_uids: Vec::new(),
            retry_interval: Duration::from_millis(50),
            handshake_timeout: Duration::from_secs(2),
            region_budget: RegionBudget::DEFAULT,
            on_change: None,
        }
    }

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

    /// Queue pairs, 1 to [`MAX_QUEUES`](crate::MAX_QUEUES). The master
    /// decides: it offers `queues` pairs (1 when unset). A slave that sets
    /// it refuses a master with another count ("queue count mismatch:
    /// ours 4, theirs 2"); one that does not takes the master's.
    ///
    /// ```no_run
    /// use vecring_core::{Link, Role};
    ///
    /// let link = Link::builder("host", "fast0").role(Role::Master).queues(4).open()?;
    /// // One sender and one receiver per queue, each for one thread.
    /// let senders: Vec<_> = (0..4).map(|q| link.sender_on(q)).collect::<Result<_, _>>()?;
    /// # drop(senders);
    /// # Ok::<(), vecring_core::LinkError>(())
    /// ```
    ///
    /// A count outside `1..=16`, or one whose rings would not fit the
    /// region a slave accepts, makes [`open`](Self::open) fail.
    pub fn queues(mut self, queues: u16) -> Self {
        self.queues = Some(queues);
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

    /// Opens the socket to `uid:gid` (master), e.g. an unprivileged
    /// container's mapped root, and lets that uid (only it, unless
    /// [`allow_uid`](Self::allow_uid) says otherwise) attach. The socket
    /// and the domain directory stay the master's: the socket's group
    /// becomes `gid`, with read and write, so a process of that group
    /// reaches it and none can change its mode; others get search
    /// permission on the directory.
    pub fn owner(mut self, uid: u32, gid: u32) -> Self {
        self.owner = Some((uid, gid));
        self
    }

    /// Mode of the socket (default `0o660`). The domain directory is the
    /// master's alone (`0o700`) plus search permission for the classes the
    /// socket mode lets connect.
    pub fn socket_mode(mut self, mode: u32) -> Self {
        self.socket_mode = Some(mode & 0o777);
        self
    }

    /// Meets the peer in the network namespace whose file is `path`
    /// (`/proc/PID/ns/net`, `/run/netns/NAME`), with no directory shared:
    /// the master listens on the abstract socket name
    /// `@vecring/1/<domain>/<link>` inside that namespace, and admits only
    /// processes of that namespace. Entering another namespace needs
    /// `CAP_SYS_ADMIN` over it (root on the host has it for every
    /// container); only a short-lived thread of vecring's own enters it,
    /// never the caller's. A slave runs inside the namespace and uses
    /// [`netns_self`](Self::netns_self): given a path, [`open`](Self::open)
    /// refuses it, since the master judges the connecting process, not the
    /// thread.
    ///
    /// The master still takes the link's lock in the run directory, as
    /// `<link>@ns<inode>` (so `vecring list` and `stats` see it, and two
    /// masters of one namespace and link cannot both run); its socket
    /// there answers status queries from root and the master's uid only.
    /// [`owner`](Self::owner) and [`socket_mode`](Self::socket_mode) have
    /// no meaning in this mode and are refused with it. Domain and link
    /// names together may be 96 bytes at most (an abstract name is 107).
    ///
    /// ```no_run
    /// use vecring_core::{Link, Role};
    ///
    /// // The host: a master inside a container's network namespace.
    /// let host = Link::builder("k8s", "net1")
    ///     .role(Role::Master)
    ///     .netns("/run/netns/pod1")
    ///     .open()?;
    /// // The container: no mount, its own namespace.
    /// let pod = Link::builder("k8s", "net1").netns_self().open()?;
    /// # drop((host, pod));
    /// # Ok::<(), vecring_core::LinkError>(())
    /// ```
    pub fn netns(mut self, path: impl Into<PathBuf>) -> Self {
        self.netns = Some(NetnsChoice::Path(path.into()));
        self
    }

    /// Meets the peer in this process's own network namespace, as
    /// [`netns`](Self::netns) does in a named one: what an application
    /// inside a container uses, with nothing mounted.
    pub fn netns_self(mut self) -> Self {
        self.netns = Some(NetnsChoice::Own);
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

    /// Master: how many regions it may create for this link over time
    /// (default [`RegionBudget::DEFAULT`]: 16 at once, then one a minute).
    /// Every offer costs one, whatever the peer does with it; once spent,
    /// requests wait for the next.
    pub fn region_budget(mut self, budget: RegionBudget) -> Self {
        self.region_budget = budget;
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
    /// [`LinkError`] for a bad name, node, geometry or queue count (a
    /// [`GeometryError`](crate::GeometryError): out of 1..=16, or
    /// `geometry × queues` past the region a slave accepts), a live master
    /// (master), or a file-system failure.
    pub fn open(self) -> Result<Link, LinkError> {
        name::validate("domain", &self.domain)?;
        name::validate("link", &self.link)?;
        if let Some(queues) = self.queues {
            geometry::check_queues(queues.into())?;
        }
        // The master's offer must fit a region a slave accepts; so must a
        // slave's requirement, or no master could satisfy it.
        let offered = match self.role {
            Role::Master => Some(self.queues.unwrap_or(1)),
            Role::Slave => self.queues,
        };
        let shape = match self.role {
            Role::Master => Some(self.geometry.unwrap_or_default()),
            Role::Slave => self.geometry,
        };
        if let (Some(queues), Some(g)) = (offered, shape) {
            g.region_size_for(queues)?;
        }
        if let Some(node) = self.numa_node {
            numa::check_node(node)?;
        }
        let meeting = self.meeting()?;
        // In a namespace the master's files are named by its inode: one
        // claim per namespace and link.
        let file_link = match &meeting {
            Some(m) => format!("{}@ns{}", self.link, m.ns.id().ino),
            None => self.link.clone(),
        };
        let socket = self
            .run_dir
            .join(&self.domain)
            .join(format!("{file_link}.sock"));
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
            queues: self.queues,
            numa_node: self.numa_node,
            hugepages: self.hugepages,
            allowed_uids,
            master_uids: self.master_uids,
            retry_interval: self.retry_interval,
            handshake_timeout: self.handshake_timeout,
            region_budget: self.region_budget,
            netns: meeting,
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
                queues: offered,
            }),
            changed: Condvar::new(),
            tx: std::array::from_fn(|_| CachePadded::default()),
            rx: std::array::from_fn(|_| CachePadded::default()),
            counters: ControlCounters::default(),
            up_lines: Default::default(),
            down_lines: Default::default(),
            corrupt_generation: AtomicU64::new(0),
            shutdown: AtomicBool::new(false),
            // SAFETY: `wake` is a fresh descriptor we own.
            wake: unsafe { OwnedFd::from_raw_fd(wake) },
            on_change: self.on_change,
            senders: Taken::default(),
            receivers: Taken::default(),
            pokes: std::sync::Mutex::new(Vec::new()),
        });
        let (thread, socket) = match self.role {
            Role::Master => {
                let pins = PinWatch::new().map_err(|source| LinkError::Io {
                    what: "inotify (watching link memory)",
                    path: PathBuf::new(),
                    source,
                })?;
                let socket_mode = match config.netns {
                    // Status queries only, from root and our own uid.
                    Some(_) => 0o600,
                    None => self.socket_mode.unwrap_or(DEFAULT_SOCKET_MODE),
                };
                let claim = control::claim_master(&config, self.owner, socket_mode)?;
                (
                    control::spawn_master(Arc::clone(&shared), config, claim, pins),
                    Some(socket),
                )
            }
            // A slave in a namespace connects to no path.
            Role::Slave if config.netns.is_some() => {
                (control::spawn_slave(Arc::clone(&shared), config), None)
            }
            Role::Slave => (
                control::spawn_slave(Arc::clone(&shared), config),
                Some(socket),
            ),
        };
        let thread = thread.map_err(|source| LinkError::Io {
            what: "spawning the control thread",
            path: PathBuf::new(),
            source,
        })?;
        log::info!("vecring: {}: opened", shared.label);
        Ok(Link::started(shared, thread, socket))
    }

    /// The namespace the link meets in, opened and checked, if one was
    /// chosen.
    fn meeting(&self) -> Result<Option<Meeting>, LinkError> {
        let Some(choice) = &self.netns else {
            return Ok(None);
        };
        if self.owner.is_some() || self.socket_mode.is_some() {
            return Err(LinkError::Options(
                "owner and socket_mode set who may reach the run directory's socket; \
                 a link in a network namespace has none for peers (its peers are the \
                 namespace's processes): leave them out"
                    .into(),
            ));
        }
        let name = netns::abstract_name(&self.domain, &self.link);
        if name.len() > netns::MAX_ABSTRACT_LEN {
            return Err(LinkError::Options(format!(
                "domain and link names are {} bytes together; in a network namespace \
                 they may be {} at most (the abstract socket name @{name} must fit 107 bytes)",
                self.domain.len() + self.link.len(),
                netns::MAX_ABSTRACT_LEN - netns::abstract_name("", "").len()
            )));
        }
        if let (Role::Slave, NetnsChoice::Path(path)) = (self.role, choice) {
            // The master admits processes of the namespace, judged by the
            // process (its leader thread), not by the thread that connects.
            return Err(LinkError::Options(format!(
                "a slave meets its master from inside the network namespace: run it there \
                 (nsenter --net={0}, ip netns exec) with netns_self (--netns self, netns=self); \
                 a process outside it is refused by the master, whichever thread connects",
                path.display()
            )));
        }
        let (ns, enter) = match choice {
            NetnsChoice::Own => (netns::NetNs::current(), false),
            NetnsChoice::Path(path) => (netns::NetNs::open(path), true),
        };
        let path = match choice {
            NetnsChoice::Own => PathBuf::from("/proc/thread-self/ns/net"),
            NetnsChoice::Path(path) => path.clone(),
        };
        let ns = ns.map_err(|source| LinkError::Io {
            what: "opening the network namespace",
            path: path.clone(),
            source,
        })?;
        let meeting = Meeting { ns, enter, name };
        // Entering needs CAP_SYS_ADMIN over the namespace: tell now, not
        // from the control thread later.
        meeting.run(|| ()).map_err(|source| LinkError::Io {
            what: "entering (setns needs CAP_SYS_ADMIN over it) the network namespace",
            path,
            source,
        })?;
        Ok(Some(meeting))
    }
}

/// The namespace [`LinkBuilder::netns`] or [`LinkBuilder::netns_self`]
/// chose.
enum NetnsChoice {
    Path(PathBuf),
    Own,
}

#[cfg(test)]
mod tests {
    use crate::{Link, LinkError, Role};

    #[test]
    fn netns_options_that_cannot_work_are_refused_before_anything_opens() {
        let refused = |b: super::LinkBuilder, says: &str| match b.open() {
            Err(LinkError::Options(m)) => assert!(m.contains(says), "{m}"),
            other => panic!("not refused: {:?}", other.map(|_| ())),
        };
        // A slave is judged by its process's namespace: it must run there.
        refused(
            Link::builder("d", "l").netns("/proc/self/ns/net"),
            "meets its master from inside",
        );
        refused(
            Link::builder("d", "l")
                .role(Role::Master)
                .netns_self()
                .socket_mode(0o666),
            "owner and socket_mode",
        );
        let long = "x".repeat(60);
        refused(
            Link::builder(&long, &long).role(Role::Master).netns_self(),
            "96 at most",
        );
    }
}
