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
//!   and removed when a reopened link's receiver replaces it (a hand-off,
//!   `datapath::shared`, its hand-offs): a receiver's wait set is readable after a
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
//! burst: they are the queue's own methods ([`RxQueue::intr_enable`],
//! [`RxQueue::intr_disable`]), beside its burst function. A secondary
//! process has no interrupt handle and no such operations: ethdev answers
//! `-ENOTSUP`.

use super::dev::Dev;
use crate::datapath::rx::RxQueue;
use crate::datapath::shared::QueueIntr;
use crate::port::intr_handle::IntrHandle;
use crate::port::state::Port;
use crate::sys::ffi::rte_eth_dev;
use crate::sys::guard::guarded;
use crate::sys::log::vlog;
use std::os::fd::{AsRawFd, RawFd};
use vecring_core::MAX_QUEUES;

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
    dev.set_intr_handle(h.as_ptr());
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
