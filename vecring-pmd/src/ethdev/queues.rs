//! Queue setup and release: RX queue `q` takes the link's receiving end of
//! queue pair `q` (TX queue `q` its sending end) at setup, and drops it
//! when released, so that a queue pair has an end on this side exactly
//! while the application has the queue (see [`crate::port`]).

use super::dev::Dev;
use crate::datapath::mbuf::pool_buf_space;
use crate::datapath::rx::RxQueue;
use crate::datapath::setup::QueueSetup;
use crate::datapath::tx::TxQueue;
use crate::sys::ffi::{self, rte_eth_dev, rte_mempool};
use crate::sys::log::vlog;
use std::ffi::c_void;
use std::sync::Arc;
use vecring_core::MAX_QUEUES;

/// `eth_dev_ops::rx_queue_setup`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn rx_queue_setup(
    dev: *mut rte_eth_dev,
    qid: u16,
    nb_desc: u16,
    _socket_id: u32,
    conf: *const ffi::rte_eth_rxconf,
    pool: *mut rte_mempool,
) -> i32 {
    // SAFETY: ethdev passes a valid configuration (or null: none).
    let offloads = unsafe { conf.as_ref() }.map_or(0, |c| c.offloads);
    // SAFETY: ethdev passes a valid port of ours, a queue id below
    // `nb_rx_queues` whose previous queue it released.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("rx_queue_setup", |p| {
        if qid >= MAX_QUEUES.min(dev.nb_rx_queues()) || pool.is_null() {
            return -libc::EINVAL;
        }
        let receiver = match p.take_receiver(qid) {
            Ok(r) => r,
            Err(e) => return e,
        };
        // SAFETY: ethdev passes a packet mbuf pool.
        let buf_space = unsafe { pool_buf_space(pool) };
        if buf_space == 0 {
            vlog!(
                ERR,
                "{}: rx queue {qid}: mbuf pool has no data room",
                p.name
            );
            return -libc::EINVAL;
        }
        // An end of a reopened link left for a released queue is older.
        drop(p.shared.rx_next[usize::from(qid)].take());
        p.rx_queues.insert(qid);
        let shared = Arc::clone(&p.shared);
        // SAFETY: `pool` is a packet pool with `buf_space` bytes of room that
        // the application keeps while the queue exists, and the counter
        // lives in the port's data until the port is released, after the
        // queue.
        let mut q = unsafe {
            RxQueue::new(
                receiver,
                qid,
                pool,
                buf_space,
                dev.port_id(),
                shared,
                dev.nombuf_counter(),
            )
        };
        q.setup = QueueSetup { nb_desc, offloads };
        // SAFETY: a valid, empty slot (ethdev released the previous queue).
        unsafe { *dev.rx_slot(qid) = Box::into_raw(Box::new(q)).cast::<c_void>() };
        0
    })
}

/// `eth_dev_ops::tx_queue_setup`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn tx_queue_setup(
    dev: *mut rte_eth_dev,
    qid: u16,
    nb_desc: u16,
    _socket_id: u32,
    conf: *const ffi::rte_eth_txconf,
) -> i32 {
    // SAFETY: as for `rx_queue_setup`.
    let dev = unsafe { Dev::new(dev) };
    // ethdev passes only the queue's own offloads; the port's come from
    // `dev_conf`.
    // SAFETY: ethdev passes a valid configuration (or null: none).
    let queue_offloads = unsafe { conf.as_ref() }.map_or(0, |c| c.offloads);
    dev.with_port("tx_queue_setup", |p| {
        if qid >= MAX_QUEUES.min(dev.nb_tx_queues()) {
            return -libc::EINVAL;
        }
        let sender = match p.take_sender(qid) {
            Ok(s) => s,
            Err(e) => return e,
        };
        drop(p.shared.tx_next[usize::from(qid)].take());
        p.tx_queues.insert(qid);
        let fast_free = (queue_offloads | dev.tx_offloads()) & ffi::TX_OFFLOAD_MBUF_FAST_FREE != 0;
        let mut q = TxQueue::new(sender, qid, Arc::clone(&p.shared), fast_free);
        q.setup = QueueSetup {
            nb_desc,
            offloads: queue_offloads,
        };
        // SAFETY: a valid, empty slot (ethdev released the previous queue).
        unsafe { *dev.tx_slot(qid) = Box::into_raw(Box::new(q)).cast::<c_void>() };
        0
    })
}

/// Frees RX queue `qid` and its end of the link.
///
/// # Safety
/// `dev` must be a valid port of ours, `qid < nb_rx_queues`, and no lcore
/// may be polling the queue.
pub unsafe extern "C" fn rx_queue_release(dev: *mut rte_eth_dev, qid: u16) {
    // SAFETY: per the caller.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("rx_queue_release", |p| {
        // SAFETY: a valid slot; taking its pointer and clearing it means the
        // `Box` from `rx_queue_setup` is freed exactly once.
        let q = unsafe { std::mem::replace(&mut *dev.rx_slot(qid), std::ptr::null_mut()) };
        if !q.is_null() {
            // SAFETY: `q` is the `Box<RxQueue>` of `rx_queue_setup`, polled
            // by nobody (caller's guarantee).
            drop(unsafe { Box::from_raw(q.cast::<RxQueue>()) });
            // With an end of a reopened link the queue did not take.
            drop(p.shared.rx_next[usize::from(qid)].take());
            p.rx_queues.remove(qid);
        }
        0
    });
}

/// Frees TX queue `qid` and its end of the link.
///
/// # Safety
/// As for [`rx_queue_release`].
pub unsafe extern "C" fn tx_queue_release(dev: *mut rte_eth_dev, qid: u16) {
    // SAFETY: per the caller.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("tx_queue_release", |p| {
        // SAFETY: as in `rx_queue_release`.
        let q = unsafe { std::mem::replace(&mut *dev.tx_slot(qid), std::ptr::null_mut()) };
        if !q.is_null() {
            // SAFETY: `q` is the `Box<TxQueue>` of `tx_queue_setup`, polled
            // by nobody (caller's guarantee).
            drop(unsafe { Box::from_raw(q.cast::<TxQueue>()) });
            drop(p.shared.tx_next[usize::from(qid)].take());
            p.tx_queues.remove(qid);
        }
        0
    });
}
