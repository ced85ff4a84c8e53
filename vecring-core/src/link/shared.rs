//! State shared by a [`Link`](super::Link), its endpoints and its control
//! thread: the current session, the epoch the data path follows, the
//! counters, which queues' endpoints are taken, and the configuration fixed
//! at open.

use super::error::Failure;
use super::rate_log::RateLog;
use super::types::*;
use crate::abi::MAX_QUEUES;
use crate::doorbell::Doorbell;
use crate::event_set::EventSet;
use crate::geometry::Geometry;
use crate::memory::{HugepagePolicy, Region};
use crate::ring::Corruption;
use crossbeam_utils::CachePadded;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// One generation: a region shared with one peer.
pub(crate) struct Session {
    pub(crate) region: Arc<Region>,
    /// Our end of each ring's doorbell, in ring order.
    pub(crate) doorbells: Vec<Arc<Doorbell>>,
    pub(crate) generation: u64,
}

pub(crate) struct Inner {
    pub(crate) session: Option<Arc<Session>>,
    pub(crate) generation: u64,
    pub(crate) failure: Option<Failure>,
    /// Queue pairs of the current (or last) session; before the first, the
    /// configured count (the master's always; a slave's if it set one).
    pub(crate) queues: Option<u16>,
}

/// One queue's transmit totals, written by the one `Sender` of the queue.
#[derive(Default)]
pub(crate) struct TxCounters {
    pub(crate) frames: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) full: AtomicU64,
    /// (generation, frames): what the queue's Senders dropped during that
    /// generation had published on its ring, for the next Sender of the
    /// same generation to bound its unread count with
    /// (`Producer::inherit`). Touched only when a Sender attaches or is
    /// dropped.
    pub(crate) left_behind: Mutex<(u64, u64)>,
}

/// One queue's receive totals, written by the one `Receiver` of the queue.
#[derive(Default)]
pub(crate) struct RxCounters {
    pub(crate) frames: AtomicU64,
    pub(crate) bytes: AtomicU64,
}

#[derive(Default)]
pub(crate) struct ControlCounters {
    pub(crate) link_ups: AtomicU64,
    pub(crate) link_downs: AtomicU64,
    pub(crate) peer_corruptions: AtomicU64,
    pub(crate) rejected_peers: AtomicU64,
    pub(crate) pinned_regions: AtomicU64,
}

/// Which queues' endpoints of one direction are taken: bit `q` for queue
/// `q`, so that each queue has at most one `Sender` and one `Receiver` in
/// this process at a time (the ring's `attach` requires it).
#[derive(Default)]
pub(crate) struct Taken(AtomicU32);

const _: () = assert!(MAX_QUEUES as u32 <= u32::BITS);

impl Taken {
    /// Takes queue `queue`; false if it was already taken.
    pub(crate) fn claim(&self, queue: u16) -> bool {
        let bit = 1u32 << queue;
        // AcqRel: the Acquire half pairs with the Release in `release`, so
        // a new endpoint starts after the old one's last access to the ring.
        self.0.fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Gives queue `queue` back, once its endpoint let go of its ring.
    pub(crate) fn release(&self, queue: u16) {
        // Release: see `claim`.
        self.0.fetch_and(!(1u32 << queue), Ordering::Release);
    }
}

/// Per-queue counters, one entry per possible queue.
pub(crate) type PerQueue<T> = [CachePadded<T>; MAX_QUEUES as usize];

/// State shared by the [`Link`](crate::Link), its endpoints and the control thread.
pub(crate) struct LinkShared {
    pub(crate) label: String,
    pub(crate) role: Role,
    /// Bumped (Release) after every session change; read once per
    /// data-path call. On its own line: written rarely, read constantly.
    pub(crate) epoch: CachePadded<AtomicU64>,
    pub(crate) inner: Mutex<Inner>,
    pub(crate) changed: Condvar,
    /// Indexed by queue.
    pub(crate) tx: PerQueue<TxCounters>,
    /// Indexed by queue.
    pub(crate) rx: PerQueue<RxCounters>,
    pub(crate) counters: ControlCounters,
    /// "link up" and "link down" lines, each at most one a second (a peer
    /// that attaches and leaves in a loop provokes them).
    pub(crate) up_lines: RateLog,
    pub(crate) down_lines: RateLog,
    /// Generation a data-path endpoint found corrupt; 0 when none.
    pub(crate) corrupt_generation: AtomicU64,
    pub(crate) shutdown: AtomicBool,
    /// eventfd that wakes the control thread.
    pub(crate) wake: OwnedFd,
    pub(crate) on_change: Option<Box<dyn Fn(LinkState) + Send + Sync>>,
    pub(crate) senders: Taken,
    pub(crate) receivers: Taken,
    /// The pokes of the endpoints' wait sets, written after every session
    /// change and at close (see `link::wait_set`).
    pub(crate) pokes: Mutex<Vec<Weak<EventSet>>>,
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
            if let Some(s) = &session {
                inner.queues = Some(s.region.queues());
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
            LinkState::Up { generation } => self.up_lines.log(
                module_path!(),
                log::Level::Info,
                "more link up lines",
                || format!("vecring: {}: link up (generation {generation})", self.label),
            ),
            LinkState::Down => self.down_lines.log(
                module_path!(),
                log::Level::Info,
                "more link down lines",
                || format!("vecring: {}: link down", self.label),
            ),
        }
        if let Some(cb) = &self.on_change {
            cb(state);
        }
        // After the callback, so that a waiter woken here sees its effects.
        self.changed.notify_all();
        // After the epoch bump: a sleeper drains its poke and then loads
        // the epoch, so it sees the new epoch or finds the poke written.
        self.poke_all();
    }

    /// Registers an endpoint's poke.
    pub(crate) fn add_poke(&self, poke: &Arc<EventSet>) {
        let mut pokes = self.pokes.lock().unwrap_or_else(|p| p.into_inner());
        pokes.retain(|p| p.strong_count() > 0);
        pokes.push(Arc::downgrade(poke));
    }

    /// Wakes every sleeping endpoint, to look at the link again.
    pub(crate) fn poke_all(&self) {
        let pokes = self.pokes.lock().unwrap_or_else(|p| p.into_inner());
        for p in pokes.iter().filter_map(Weak::upgrade) {
            p.kick();
        }
    }

    /// A snapshot of queue `queue`'s counters.
    pub(crate) fn queue_counters(&self, queue: usize) -> QueueCounters {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (tx, rx) = (&self.tx[queue], &self.rx[queue]);
        QueueCounters {
            tx_frames: r(&tx.frames),
            tx_bytes: r(&tx.bytes),
            tx_lost_on_link_down: r(&tx.lost),
            tx_ring_full: r(&tx.full),
            rx_frames: r(&rx.frames),
            rx_bytes: r(&rx.bytes),
        }
    }

    /// Whether a doorbell of the current session received descriptors.
    pub(crate) fn session_tainted(&self) -> bool {
        self.lock()
            .session
            .as_ref()
            .is_some_and(|s| s.doorbells.iter().any(|d| d.tainted()))
    }

    /// A snapshot of the link's counters: the queues' summed.
    pub(crate) fn counters(&self) -> LinkCounters {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let q = (0..MAX_QUEUES as usize)
            .map(|q| self.queue_counters(q))
            .fold(QueueCounters::default(), |a, b| a.sum(&b));
        LinkCounters {
            generation: self.lock().generation,
            link_ups: r(&self.counters.link_ups),
            link_downs: r(&self.counters.link_downs),
            peer_corruptions: r(&self.counters.peer_corruptions),
            rejected_peers: r(&self.counters.rejected_peers),
            pinned_regions: r(&self.counters.pinned_regions),
            tx_frames: q.tx_frames,
            tx_bytes: q.tx_bytes,
            tx_lost_on_link_down: q.tx_lost_on_link_down,
            tx_ring_full: q.tx_ring_full,
            rx_frames: q.rx_frames,
            rx_bytes: q.rx_bytes,
        }
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

    pub(crate) fn report_corruption(&self, generation: u64, c: &Corruption) {
        log::error!(
            "vecring: {}: peer corrupted generation {generation}: {c}; dropping the connection",
            self.label
        );
        self.corrupt_generation.store(generation, Ordering::Relaxed);
        self.wake();
    }
}

/// Everything the control thread needs to know, fixed at open.
pub(crate) struct Config {
    pub(crate) run_dir: PathBuf,
    pub(crate) domain: String,
    pub(crate) link: String,
    pub(crate) geometry: Option<Geometry>,
    /// Master: the queue count it offers (1 when unset). Slave: the count
    /// it requires, if any.
    pub(crate) queues: Option<u16>,
    pub(crate) numa_node: Option<u32>,
    pub(crate) hugepages: HugepagePolicy,
    pub(crate) allowed_uids: Vec<u32>,
    pub(crate) master_uids: Vec<u32>,
    pub(crate) retry_interval: Duration,
    pub(crate) handshake_timeout: Duration,
    /// Master: regions it may create for this link over time.
    pub(crate) region_budget: super::RegionBudget,
    /// Where the peers meet: `None` for the run directory's socket, or a
    /// network namespace's abstract name.
    pub(crate) netns: Option<Meeting>,
}

/// A link that meets in a network namespace (`LinkBuilder::netns`).
pub(crate) struct Meeting {
    /// The namespace, held open: its identity cannot change under us.
    pub(crate) ns: crate::netns::NetNs,
    /// Whether the master's threads are elsewhere and one must enter it to
    /// listen (a path was given), or are in it already (`netns_self`).
    pub(crate) enter: bool,
    /// The abstract name, without its leading NUL.
    pub(crate) name: String,
}

impl Meeting {
    /// `@vecring/1/<domain>/<link>`, as `ss -xl` shows it.
    pub(crate) fn display(&self) -> String {
        format!("@{}", self.name)
    }

    /// Runs `f` inside the namespace: on a thread of its own when this
    /// process is elsewhere, else here.
    pub(crate) fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
        if self.enter {
            self.ns.run(f)
        } else {
            Ok(f())
        }
    }
}
