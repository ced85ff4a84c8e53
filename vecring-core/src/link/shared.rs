//! State shared by a [`Link`](super::Link), its endpoints and its control
//! thread: the current session, the epoch the data path follows, the
//! counters, and the configuration fixed at open.

use super::error::Failure;
use super::types::*;
use crate::geometry::Geometry;
use crate::memory::{HugepagePolicy, Region};
use crate::ring::Corruption;
use crossbeam_utils::CachePadded;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

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
pub(crate) struct TxCounters {
    pub(crate) frames: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) lost: AtomicU64,
    pub(crate) full: AtomicU64,
}

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

/// State shared by the [`Link`], its endpoints and the control thread.
pub(crate) struct LinkShared {
    pub(crate) label: String,
    pub(crate) role: Role,
    /// Bumped (Release) after every session change; read once per
    /// data-path call. On its own line: written rarely, read constantly.
    pub(crate) epoch: CachePadded<AtomicU64>,
    pub(crate) inner: Mutex<Inner>,
    pub(crate) changed: Condvar,
    pub(crate) tx: CachePadded<TxCounters>,
    pub(crate) rx: CachePadded<RxCounters>,
    pub(crate) counters: ControlCounters,
    /// Generation a data-path endpoint found corrupt; 0 when none.
    pub(crate) corrupt_generation: AtomicU64,
    pub(crate) shutdown: AtomicBool,
    /// eventfd that wakes the control thread.
    pub(crate) wake: OwnedFd,
    pub(crate) on_change: Option<Box<dyn Fn(LinkState) + Send + Sync>>,
    pub(crate) sender_taken: AtomicBool,
    pub(crate) receiver_taken: AtomicBool,
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

    /// A snapshot of the link's counters.
    pub(crate) fn counters(&self) -> LinkCounters {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LinkCounters {
            generation: self.lock().generation,
            link_ups: r(&self.counters.link_ups),
            link_downs: r(&self.counters.link_downs),
            peer_corruptions: r(&self.counters.peer_corruptions),
            rejected_peers: r(&self.counters.rejected_peers),
            pinned_regions: r(&self.counters.pinned_regions),
            tx_frames: r(&self.tx.frames),
            tx_bytes: r(&self.tx.bytes),
            tx_lost_on_link_down: r(&self.tx.lost),
            tx_ring_full: r(&self.tx.full),
            rx_frames: r(&self.rx.frames),
            rx_bytes: r(&self.rx.bytes),
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
    pub(crate) numa_node: Option<u32>,
    pub(crate) hugepages: HugepagePolicy,
    pub(crate) allowed_uids: Vec<u32>,
    pub(crate) master_uids: Vec<u32>,
    pub(crate) retry_interval: Duration,
    pub(crate) handshake_timeout: Duration,
}
