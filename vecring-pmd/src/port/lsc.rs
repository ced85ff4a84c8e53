//! Link-state-change events: vecring's control thread reports every change
//! of the link to the port's [`Lsc`]; the driver's own event thread
//! (`vecring-lsc`, one per port) stores the new link status in
//! `dev->data->dev_link` and runs the application's
//! `RTE_ETH_EVENT_INTR_LSC` callbacks.
//!
//! Why a thread of its own: an application may stop and close the port from
//! its callback. Closing drops the link, which joins vecring's control
//! thread, so the callbacks cannot run on that thread. And no lock is held
//! while a callback runs, so closing takes nothing its caller already holds.
//!
//! Changes are coalesced: a peer that attaches and leaves in a loop must
//! not flood the application with events. Only the newest state waits, and
//! the event thread delivers at most one per `MIN_INTERVAL`; a down and
//! up folded into one delivery still raises the event (the generation
//! changed), so the application never misses a new peer.
//!
//! Protocol, under `Inner`'s mutex (never held across a callback):
//! - the control thread replaces `pending` with the new state, counts it,
//!   and signals;
//! - the event thread, once `MIN_INTERVAL` has passed since its last
//!   delivery, takes the pending state and, with the lock released,
//!   updates the port and runs the callbacks, then takes the lock again and
//!   looks at `stopped` before anything else;
//! - [`Lsc::stop`] (port close) sets `stopped` and forgets the port. Called
//!   from any other thread it joins the event thread, which waits for a
//!   callback in progress (the application's own code; the peer cannot make
//!   it wait). Called from a callback, on the event thread itself, it
//!   returns at once: the thread ends when the callback returns, without
//!   touching the port again.

use crate::sys::compat;
use crate::sys::ffi::{self, rte_eth_dev};
use crate::sys::log::vlog;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use vecring_core::LinkState;

/// At most one delivery (log line, link status update, callbacks) per
/// this interval; changes in between fold into the newest.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// `*mut rte_eth_dev` that may move to the event thread.
struct DevPtr(*mut rte_eth_dev);
// SAFETY: an `rte_eth_dev` lives in ethdev's static `rte_eth_devices` array;
// the event thread dereferences the pointer only while the port is open:
// `Lsc::stop`, which `dev_close` calls before the port is released, joins
// the thread or runs inside its delivery (see the module doc).
unsafe impl Send for DevPtr {}

/// What the control thread, the event thread and close share.
struct Inner {
    /// The port, once probed and until closed.
    dev: Option<DevPtr>,
    /// The newest change not yet delivered.
    pending: Option<LinkState>,
    /// Changes since the last delivery (folded into `pending`).
    changes: u64,
    /// Set by [`Lsc::stop`]: the event thread ends.
    stopped: bool,
}

/// The state behind an [`Lsc`], shared with its event thread and with the
/// link's state-change callback.
struct Shared {
    name: String,
    /// `dev_conf.intr_conf.lsc` as of the last `dev_configure`.
    enabled: AtomicBool,
    inner: Mutex<Inner>,
    /// Signalled when `pending` grows or `stopped` is set.
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing panics while holding the lock; should it, the state is
        // still consistent (plain assignments).
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Called by vecring's control thread on every link-state change.
    fn on_state(&self, state: LinkState) {
        let mut g = self.lock();
        if g.stopped {
            return;
        }
        g.pending = Some(state);
        g.changes += 1;
        self.wake.notify_all();
    }

    /// The line of one delivery, naming the changes folded into it.
    fn log(&self, state: LinkState, changes: u64) {
        let folded = match changes {
            0 | 1 => String::new(),
            n => format!(" ({n} changes since the last event, coalesced)"),
        };
        match state {
            LinkState::Up { generation } => vlog!(
                NOTICE,
                "{}: link up (generation {generation}){folded}",
                self.name
            ),
            LinkState::Down => vlog!(NOTICE, "{}: link down{folded}", self.name),
        }
    }

    /// The event thread: delivers the newest pending change, at most one
    /// per [`MIN_INTERVAL`], until stopped.
    fn run(&self) {
        let mut last: Option<Instant> = None;
        let mut delivered: Option<LinkState> = None;
        let mut g = self.lock();
        loop {
            if g.stopped {
                return;
            }
            if g.pending.is_none() {
                g = self.wake.wait(g).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            if let Some(wait) = last
                .map(|t| (t + MIN_INTERVAL).saturating_duration_since(Instant::now()))
                .filter(|w| !w.is_zero())
            {
                g = self
                    .wake
                    .wait_timeout(g, wait)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                continue;
            }
            let Some(state) = g.pending.take() else {
                continue;
            };
            let changes = std::mem::take(&mut g.changes);
            let Some(dev) = g.dev.as_ref().map(|d| d.0) else {
                // Not probed yet: probe reads the state itself once armed.
                continue;
            };
            drop(g);
            self.log(state, changes);
            // SAFETY: the port is open: `stopped` was not set when `dev` was
            // read, and `stop` waits for this delivery to end (joins this
            // thread) unless it runs inside it, from a callback below.
            let changed = unsafe { set_link_status(dev, state.is_up()) };
            // A down and up folded together: same status, new peer.
            let new_peer = state.is_up() && delivered.is_some_and(|d| d != state);
            last = Some(Instant::now());
            delivered = Some(state);
            if (changed || new_peer) && self.enabled.load(Ordering::Relaxed) {
                // SAFETY: as above; a NULL parameter is what LSC events
                // carry. The callbacks may close the port (see `stop`).
                unsafe {
                    ffi::rte_eth_dev_callback_process(
                        dev,
                        ffi::rte_eth_event_type::RTE_ETH_EVENT_INTR_LSC,
                        std::ptr::null_mut(),
                    );
                }
            }
            g = self.lock();
        }
    }
}

/// Turns vecring link-state changes into ethdev link status and
/// `RTE_ETH_EVENT_INTR_LSC` events, from an event thread of its own.
pub struct Lsc {
    shared: Arc<Shared>,
    /// The event thread, until stopped.
    thread: Option<JoinHandle<()>>,
}

impl Lsc {
    /// Starts the event thread of port `name`; it delivers nothing until
    /// [`Lsc::attach`].
    ///
    /// # Errors
    /// The thread could not be created.
    pub fn start(name: &str) -> std::io::Result<Lsc> {
        let shared = Arc::new(Shared {
            name: name.to_owned(),
            enabled: AtomicBool::new(false),
            inner: Mutex::new(Inner {
                dev: None,
                pending: None,
                changes: 0,
                stopped: false,
            }),
            wake: Condvar::new(),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("vecring-lsc".into())
            .spawn(move || s.run())?;
        Ok(Lsc {
            shared,
            thread: Some(thread),
        })
    }

    /// The link's state-change callback: queues the change for the event
    /// thread and returns at once.
    pub fn notifier(&self) -> impl Fn(LinkState) + Send + Sync + 'static {
        let s = Arc::clone(&self.shared);
        move |state| s.on_state(state)
    }

    /// Delivers changes into port `dev` from now on.
    ///
    /// # Safety
    /// `dev` must be an allocated port of this driver that stays valid
    /// until [`Lsc::stop`] (its `dev_close` calls it).
    pub unsafe fn attach(&self, dev: *mut rte_eth_dev) {
        self.shared.lock().dev = Some(DevPtr(dev));
    }

    /// Sets whether changes raise `RTE_ETH_EVENT_INTR_LSC`
    /// (`dev_conf.intr_conf.lsc`).
    pub fn set_enabled(&self, on: bool) {
        self.shared.enabled.store(on, Ordering::Relaxed);
    }

    /// Stops delivering: once this returns, the event thread no longer
    /// touches the port (from a callback: once the callback returns).
    /// Waits only for a callback in progress on the event thread, never
    /// for the peer. Idempotent.
    pub fn stop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        {
            let mut g = self.shared.lock();
            g.stopped = true;
            g.dev = None;
            g.pending = None;
            self.shared.wake.notify_all();
        }
        if thread.thread().id() == std::thread::current().id() {
            // Inside a callback: the thread cannot join itself. It finds
            // `stopped` when the callback returns and ends (detached).
            return;
        }
        if thread.join().is_err() {
            vlog!(
                ERR,
                "{}: link-state event thread panicked",
                self.shared.name
            );
        }
    }
}

impl Drop for Lsc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Stores the link status in `dev->data->dev_link` the way
/// `rte_eth_linkstatus_set` does (one atomic 64-bit exchange). Returns
/// whether the up/down status changed.
///
/// # Safety
/// `dev` must be a valid, allocated port.
pub unsafe fn set_link_status(dev: *mut rte_eth_dev, up: bool) -> bool {
    let new = compat::link_word(up);
    const _: () = assert!(std::mem::size_of::<ffi::rte_eth_link>() == 8);
    const _: () = assert!(std::mem::align_of::<ffi::rte_eth_link>() == 8);
    // SAFETY: `dev->data` is valid for an allocated port; `dev_link` is
    // 8 bytes, 8-aligned (asserted above) and every access to it is atomic
    // (ethdev uses __atomic too).
    let old = unsafe {
        let p = std::ptr::addr_of_mut!((*(*dev).data).dev_link).cast::<u64>();
        AtomicU64::from_ptr(p).swap(new, Ordering::SeqCst)
    };
    compat::link_word_up(old) != up
}
