//! A link: the queue pairs of a region (two rings each, 1 to
//! [`MAX_QUEUES`] pairs, as many as the master decides), opened by name by
//! a master and a slave in different processes, with a control thread that
//! runs the handshake and follows the peer's comings and goings.
//!
//! State lives in `LinkShared`; the control thread (module
//! `control`) installs a new *session* (one region, one generation)
//! when a peer attaches and removes it when the peer goes away, bumping an
//! epoch counter each time. The data-path endpoints ([`Sender`],
//! [`Receiver`]) load that epoch once per call and re-attach only when it
//! changed, so the hot path takes no lock. A master makes a fresh region for
//! every generation: nothing of a dead generation can reach the next one.

mod blocking;
mod budget;
mod builder;
mod control;
mod endpoint;
mod error;
mod frame_error;
mod rate_log;
mod receiver;
mod sender;
mod shared;
mod types;
mod wait_set;

pub use crate::dirs::Unsafe;
pub use budget::RegionBudget;
pub use builder::LinkBuilder;
pub use control::{MAX_PENDING, MAX_REGIONS};
pub use endpoint::Totals;
pub use error::LinkError;
pub use frame_error::{LinkRecvError, LinkSendError};
pub use receiver::Receiver;
pub use sender::Sender;
pub use types::{
    LinkCounters, LinkState, QueueCounters, Role, DEFAULT_RUN_DIR, DEFAULT_SOCKET_MODE,
};

use shared::LinkShared;

use crate::abi::MAX_QUEUES;
use crate::memory::Region;
use endpoint::{Attach, Endpoint};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wait_set::WaitSet;

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
    thread: Option<control::ControlThread>,
    /// The socket path: the master listens there (its control thread owns
    /// the files and removes them when it ends), the slave connects there.
    socket: Option<PathBuf>,
}

impl Link {
    /// A link whose control thread runs (made by [`LinkBuilder::open`]).
    fn started(
        shared: Arc<LinkShared>,
        thread: control::ControlThread,
        socket: Option<PathBuf>,
    ) -> Self {
        Link {
            shared,
            thread: Some(thread),
            socket,
        }
    }
}

impl Link {
    /// A builder for the link `link` of domain `domain`.
    pub fn builder(domain: &str, link: &str) -> LinkBuilder {
        LinkBuilder::new(domain, link)
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

    /// Waits until the link is up; returns its generation. A link that came
    /// up and went down again before this call looked still counts (its
    /// generation is returned; the next data-path call sees it down).
    ///
    /// # Errors
    /// [`LinkError::Timeout`], or (slave) why the master or its region was
    /// refused, as soon as that happens.
    pub fn wait_up(&self, timeout: Duration) -> Result<u64, LinkError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut inner = self.shared.lock();
        // A session that comes and goes between two looks still counts:
        // the generation it left behind tells.
        let before = inner.generation;
        loop {
            if let Some(s) = &inner.session {
                return Ok(s.generation);
            }
            if inner.generation != before {
                return Ok(inner.generation);
            }
            if let Some(f) = &inner.failure {
                return Err(f.clone().into());
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
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
        let deadline = Instant::now().checked_add(timeout);
        let mut inner = self.shared.lock();
        // The session seen now; if another replaced it meanwhile, this one
        // went down all the same.
        let seen = inner.session.as_ref().map(|s| s.generation);
        loop {
            let now = inner.session.as_ref().map(|s| s.generation);
            if now.is_none() || now != seen {
                return true;
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
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
    }

    /// Queue pairs of the current (or last) generation; before the first,
    /// the configured count (a master's, 1 unless
    /// [`LinkBuilder::queues`] said otherwise; a slave's if it set one).
    /// `None` for a slave that set none and has not been up yet: the
    /// master decides.
    pub fn queues(&self) -> Option<u16> {
        self.shared.lock().queues
    }

    /// Claims queue `queue` for an endpoint of kind `E`.
    fn endpoint<E: Attach>(
        &self,
        queue: u16,
        what: &'static str,
    ) -> Result<Endpoint<E>, LinkError> {
        // A queue past the known count (or, not knowing it yet, past the
        // most a link carries) is refused; a slave that took a queue a
        // later master does not offer finds it silent (see `Endpoint`).
        let limit = self.queues().unwrap_or(MAX_QUEUES);
        if queue >= limit {
            return Err(LinkError::NoSuchQueue {
                queue,
                queues: limit,
            });
        }
        let wait = WaitSet::new().map_err(|source| LinkError::Io {
            what: "cannot create the wait set (epoll, eventfd, timerfd) of an endpoint at",
            path: self.socket.clone().unwrap_or_default(),
            source,
        })?;
        if !E::taken(&self.shared).claim(queue) {
            return Err(LinkError::AlreadyTaken { what, queue });
        }
        Ok(Endpoint::new(Arc::clone(&self.shared), queue, wait))
    }

    /// The transmit side of queue 0; see [`sender_on`](Self::sender_on).
    ///
    /// # Errors
    /// As [`sender_on`](Self::sender_on).
    pub fn sender(&self) -> Result<Sender, LinkError> {
        self.sender_on(0)
    }

    /// The receive side of queue 0; see [`receiver_on`](Self::receiver_on).
    ///
    /// # Errors
    /// As [`receiver_on`](Self::receiver_on).
    pub fn receiver(&self) -> Result<Receiver, LinkError> {
        self.receiver_on(0)
    }

    /// The transmit side of queue `queue`. Each queue has at most one
    /// [`Sender`] in this process at a time; dropping it gives the queue
    /// back.
    ///
    /// # Errors
    /// [`LinkError::NoSuchQueue`] for a queue past [`queues`](Self::queues)
    /// (or past [`MAX_QUEUES`] when that is not known yet),
    /// [`LinkError::AlreadyTaken`] while another `Sender` of the queue
    /// lives.
    pub fn sender_on(&self, queue: u16) -> Result<Sender, LinkError> {
        Ok(Sender::new(self.endpoint(queue, "sender")?))
    }

    /// The receive side of queue `queue`, one at a time as for
    /// [`sender_on`](Self::sender_on).
    ///
    /// # Errors
    /// As [`sender_on`](Self::sender_on).
    pub fn receiver_on(&self, queue: u16) -> Result<Receiver, LinkError> {
        Ok(Receiver::new(self.endpoint(queue, "receiver")?))
    }

    /// The link's counters (data-path counters summed over its queues).
    pub fn counters(&self) -> LinkCounters {
        self.shared.counters()
    }

    /// Queue `queue`'s data-path counters, over all generations; `None`
    /// past [`MAX_QUEUES`].
    pub fn queue_counters(&self, queue: u16) -> Option<QueueCounters> {
        (queue < MAX_QUEUES).then(|| self.shared.queue_counters(queue.into()))
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
        // Release: pairs with the Acquire load in `control::stopping`,
        // which the control thread makes after each wake-up.
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.wake();
        if let Some(t) = self.thread.take() {
            if !t.join_within(control::JOIN_BOUND) {
                log::error!(
                    "vecring: {}: the control thread did not stop within {:?}; left behind",
                    self.shared.label,
                    control::JOIN_BOUND
                );
            }
        }
        // Endpoints asleep find the link closed.
        self.shared.poke_all();
        log::info!("vecring: {}: closed", self.shared.label);
    }
}
