//! Rx interrupts: DPDK's Rx interrupt API on a vecring port, as
//! `l3fwd-power` uses it. The application sets `intr_conf.rxq = 1`, adds
//! each Rx queue's event to an epoll set with `rte_eth_dev_rx_intr_ctl_q`,
//! and, when a queue is idle, calls `rte_eth_dev_rx_intr_enable` and sleeps
//! in `rte_epoll_wait` until the peer sends (or the link changes).
//!
//! What the application's epoll set holds for RX queue `q` is the port's
//! [`QueueIntr`] of that queue: an epoll instance made at the first start
//! with `intr_conf.rxq` and kept until the port closes, published as
//! `efds[q]` of the port's interrupt handle ([`IntrHandle`], type
//! `RTE_INTR_HANDLE_VDEV` as `net_vhost`'s). It contains:
//! - the wait set of the queue's current `Receiver` (its `AsRawFd`),
//!   added when the queue first enables its interrupt with that receiver
//!   and removed when a reopened link's receiver replaces it
//!   ([`crate::handoff`]): a receiver's wait set is readable after a
//!   doorbell, a link change or a nap timer (see `vecring_core`'s
//!   `Receiver::prepare_wait`);
//! - a private eventfd, the kick, written when frames are already waiting
//!   as the interrupt is enabled (applications sleep right after enabling,
//!   without another burst), when a reopened link's receiver waits for the
//!   queue, and when the port stops or closes, so that a sleeper wakes and
//!   its next burst sees the change.
//!
//! So the descriptor the application registered stays valid across link
//! down and up, port stop and start, and new receivers: nothing is
//! re-registered. The nesting is application epoll → queue epoll → wait
//! set → doorbell, within the kernel's limit of nested epoll sets.
//!
//! EAL adds the descriptor edge-triggered (`EPOLLIN | EPOLLET`) and, with
//! an `efd_counter_size` of 0, never reads it. Each enable drains the kick
//! and (through `prepare_wait`) the wait set first, so every later
//! doorbell, poke or kick is a new edge.
//!
//! A peer that never rings costs a nap-timer wakeup now and then; a peer
//! that rings constantly is muted by the wait set after a few wakeups for
//! nothing (timer checks until frames come): neither hangs nor spins the
//! application. While the queue sleeps in this mode the peer's sender pays
//! one full fence per publish.
//!
//! `rx_queue_intr_enable`/`disable` run on the lcore that polls the queue
//! (as `l3fwd-power` calls them), never concurrently with that queue's
//! burst. A secondary process has no interrupt handle and no such
//! operations: ethdev answers `-ENOTSUP`.

use crate::dev::{Dev, MAX_QUEUES};
use crate::ffi::{self, rte_eth_dev, rte_intr_handle};
use crate::guard::guarded;
use crate::port::Port;
use crate::rxtx::RxQueue;
use crate::stats::Shared;
use crate::vlog;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::Arc;
use vecring_core::LinkRecvError;

/// The descriptor the application sleeps on for one RX queue (see the
/// module documentation), kept from the first start with Rx interrupts
/// until the port closes: the core's epoll set with a kick, holding the
/// current receiver's wait set.
pub type QueueIntr = vecring_core::internal::event_set::EventSet;

/// The port's `rte_intr_handle` (`dev->intr_handle`): `RTE_INTR_HANDLE_VDEV`,
/// one vector per RX queue index (`RTE_INTR_VEC_RXTX_OFFSET + q`), `efds[q]`
/// the queue's [`QueueIntr`]. Allocated at the first start with
/// `intr_conf.rxq`, freed at close.
#[derive(Debug)]
pub struct IntrHandle(NonNull<rte_intr_handle>);

impl IntrHandle {
    /// A handle with every vector set and no event descriptor yet.
    fn new() -> Result<Self, String> {
        // SAFETY: plain EAL calls on the handle they return (checked for
        // null); every index is below the handle's RTE_MAX_RXTX_INTR_VEC_ID
        // entries, which exceed MAX_QUEUES + 1 (checked in glue.c).
        unsafe {
            let h = NonNull::new(ffi::rte_intr_instance_alloc(ffi::INTR_INSTANCE_F_PRIVATE))
                .ok_or("cannot allocate an interrupt handle")?;
            let handle = IntrHandle(h);
            let h = h.as_ptr();
            let queues = i32::from(MAX_QUEUES);
            check(
                "rte_intr_vec_list_alloc",
                ffi::rte_intr_vec_list_alloc(h, core::ptr::null(), queues),
            )?;
            for q in 0..queues {
                check(
                    "rte_intr_vec_list_index_set",
                    ffi::rte_intr_vec_list_index_set(
                        h,
                        q,
                        ffi::RTE_INTR_VEC_RXTX_OFFSET as i32 + q,
                    ),
                )?;
            }
            // EAL reads this many bytes from a VDEV descriptor after each
            // event, retrying while it would block: 0, since an epoll set
            // cannot be read and each enable drains the set itself.
            check(
                "rte_intr_efd_counter_size_set",
                ffi::rte_intr_efd_counter_size_set(h, 0),
            )?;
            check(
                "rte_intr_type_set",
                ffi::rte_intr_type_set(h, ffi::rte_intr_handle_type::RTE_INTR_HANDLE_VDEV),
            )?;
            Ok(handle)
        }
    }

    /// Publishes `efds` (queue `q`'s descriptor at `q`) as the handle's
    /// event descriptors.
    fn publish(&self, efds: &[RawFd]) -> Result<(), String> {
        let h = self.0.as_ptr();
        let n = efds.len() as i32;
        // SAFETY: a valid handle (type invariant); `efds` has at most
        // MAX_QUEUES entries, below the handle's limit.
        unsafe {
            for (q, &fd) in efds.iter().enumerate() {
                check(
                    "rte_intr_efds_index_set",
                    ffi::rte_intr_efds_index_set(h, q as i32, fd),
                )?;
            }
            check("rte_intr_nb_efd_set", ffi::rte_intr_nb_efd_set(h, n))?;
            check(
                "rte_intr_max_intr_set",
                ffi::rte_intr_max_intr_set(h, n + 1),
            )?;
        }
        Ok(())
    }
}

impl Drop for IntrHandle {
    fn drop(&mut self) {
        let h = self.0.as_ptr();
        // SAFETY: a handle of `rte_intr_instance_alloc`, freed once here;
        // its events leave the epoll sets they were added to first.
        unsafe {
            ffi::rte_intr_free_epoll_fd(h);
            ffi::rte_intr_vec_list_free(h);
            ffi::rte_intr_instance_free(h);
        }
    }
}

/// An EAL status (0 or a negative errno) as a result.
fn check(what: &str, rc: i32) -> Result<(), String> {
    if rc < 0 {
        Err(format!("{what}: {}", io::Error::from_raw_os_error(-rc)))
    } else {
        Ok(())
    }
}

/// At `dev_start` with `intr_conf.rxq`: makes the descriptors of RX queues
/// `0..nb_rx_queues` that do not have one yet and installs the port's
/// interrupt handle with them.
///
/// # Errors
/// A descriptor or the handle cannot be made (logged): `-ENOMEM`/`-EIO`.
pub(crate) fn install(dev: Dev, p: &mut Port) -> i32 {
    let want = usize::from(dev.nb_rx_queues().min(MAX_QUEUES));
    for q in 0..want {
        if p.shared.rx_intr[q].get().is_some() {
            continue;
        }
        match QueueIntr::new() {
            // Control operations are not concurrent: nobody set it since.
            Ok(i) => drop(p.shared.rx_intr[q].set(i)),
            Err(e) => {
                vlog!(
                    ERR,
                    "{}: rx queue {q}: cannot make its interrupt descriptor: {e}",
                    p.name
                );
                return -libc::ENOMEM;
            }
        }
    }
    if p.intr.is_none() {
        match IntrHandle::new() {
            Ok(h) => p.intr = Some(h),
            Err(e) => {
                vlog!(ERR, "{}: rx interrupts: {e}", p.name);
                return -libc::ENOMEM;
            }
        }
    }
    // Descriptors are made from queue 0 on and kept: they are a prefix.
    let efds: Vec<RawFd> = p
        .shared
        .rx_intr
        .iter()
        .map_while(|i| i.get().map(AsRawFd::as_raw_fd))
        .collect();
    let Some(h) = &p.intr else {
        return -libc::EIO;
    };
    if let Err(e) = h.publish(&efds) {
        vlog!(ERR, "{}: rx interrupts: {e}", p.name);
        return -libc::EIO;
    }
    dev.set_intr_handle(h.0.as_ptr());
    0
}

/// At close: detaches the interrupt handle from the port and frees it
/// (ethdev's release clears `dev->intr_handle` without freeing it).
pub(crate) fn uninstall(dev: Dev, p: &mut Port) {
    if let Some(h) = p.intr.take() {
        dev.set_intr_handle(core::ptr::null_mut());
        drop(h);
    }
}

/// Wakes whoever sleeps on RX queue `q`'s descriptor (its next enable
/// looks again).
pub fn wake(shared: &Shared, q: usize) {
    if let Some(i) = shared.rx_intr.get(q).and_then(|i| i.get()) {
        i.kick();
    }
}

/// Wakes every sleeper of the port (port stop, link closed, close).
pub fn wake_all(shared: &Shared) {
    for q in 0..usize::from(MAX_QUEUES) {
        wake(shared, q);
    }
}

/// The queue's receiver is about to be replaced: takes its wait set out
/// of the queue's descriptor. Called from the queue's own lcore (or with
/// no lcore polling it).
pub(crate) fn unwatch(q: &mut RxQueue) {
    if !std::mem::take(&mut q.intr_watched) {
        return;
    }
    if let (Some(i), Some(r)) = (q.shared.rx_intr[q.qid].get(), q.receiver.as_ref()) {
        // An error only means the descriptor was not in the set.
        let _ = i.remove(r.as_raw_fd());
    }
}

impl RxQueue {
    /// `rx_queue_intr_enable`: sets the queue up to wake its descriptor
    /// (see the module documentation). 0, or `-ENOTSUP` if the port did
    /// not start with `intr_conf.rxq`, `-EIO` if the receiver's wait set
    /// cannot join the descriptor.
    fn intr_enable(&mut self) -> i32 {
        // A handle of its own: taking a hand-off below needs `&mut self`.
        let shared = Arc::clone(&self.shared);
        let Some(intr) = shared.rx_intr[self.qid].get() else {
            return -libc::ENOTSUP;
        };
        // Drain first, then look for a hand-off: a receiver handed off
        // after this look kicks again, so the sleeper wakes for it.
        intr.drain_kick();
        if self.shared.rx_next[self.qid].pending() {
            self.take_next();
        }
        let Some(r) = self.receiver.as_mut() else {
            // No end of a link: the next link's hand-off kicks.
            return 0;
        };
        if !self.intr_watched {
            if let Err(e) = intr.add(r.as_raw_fd()) {
                vlog!(
                    ERR,
                    "rx queue {}: cannot watch the link's receiver: {e}",
                    self.qid
                );
                return -libc::EIO;
            }
            self.intr_watched = true;
        }
        match r.prepare_wait() {
            // Sleep: the wait set wakes the descriptor.
            Ok(true) => {}
            // Frames are waiting: wake at once.
            Ok(false) => intr.kick(),
            // A closed link (the reopened one's hand-off kicks), or a
            // corrupt ring (the link ends the session and pokes): sleep.
            Err(LinkRecvError::Closed | LinkRecvError::Corrupt(_)) => {}
            // Not returned by `prepare_wait`; sleeping is safe anyway.
            Err(_) => {}
        }
        0
    }

    /// `rx_queue_intr_disable`: the queue is polled again.
    fn intr_disable(&mut self) -> i32 {
        if self.shared.rx_intr[self.qid].get().is_none() {
            return -libc::ENOTSUP;
        }
        if let Some(r) = self.receiver.as_mut() {
            r.cancel_wait();
        }
        0
    }
}

/// RX queue `qid` of `dev`, for the lcore that polls it.
///
/// # Safety
/// ethdev checked that `qid < nb_rx_queues` and that the queue is set up
/// (`eth_dev_validate_rx_queue`); the caller is the lcore that polls the
/// queue, so no other reference to it is live.
unsafe fn rx_queue<'a>(dev: *mut rte_eth_dev, qid: u16) -> Option<&'a mut RxQueue> {
    // SAFETY: per the caller, `rx_queues[qid]` holds the `Box<RxQueue>` of
    // `rx_queue_setup` (or null), used by nobody else meanwhile.
    unsafe {
        (*(*(*dev).data).rx_queues.add(usize::from(qid)))
            .cast::<RxQueue>()
            .as_mut()
    }
}

/// `eth_dev_ops::rx_queue_intr_enable`.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and a set-up RX queue
/// `qid`; the application calls it from the lcore that polls the queue,
/// never during that queue's burst.
pub(crate) unsafe extern "C" fn rx_queue_intr_enable(dev: *mut rte_eth_dev, qid: u16) -> i32 {
    guarded("rx_queue_intr_enable", -libc::EIO, || {
        // SAFETY: per this function's contract.
        unsafe { rx_queue(dev, qid) }.map_or(-libc::EINVAL, RxQueue::intr_enable)
    })
}

/// `eth_dev_ops::rx_queue_intr_disable`.
///
/// # Safety
/// As for [`rx_queue_intr_enable`].
pub(crate) unsafe extern "C" fn rx_queue_intr_disable(dev: *mut rte_eth_dev, qid: u16) -> i32 {
    guarded("rx_queue_intr_disable", -libc::EIO, || {
        // SAFETY: per this function's contract.
        unsafe { rx_queue(dev, qid) }.map_or(-libc::EINVAL, RxQueue::intr_disable)
    })
}
