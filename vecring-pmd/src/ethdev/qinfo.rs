//! Queue information for applications (`rxq_info_get`, `txq_info_get`;
//! testpmd `show rxq info`/`show txq info`) and the burst mode of each
//! queue (`rx_burst_mode_get`, `tx_burst_mode_get`; testpmd prints it in
//! the same commands).

use super::dev::Dev;
use crate::datapath::rx::RxQueue;
use crate::datapath::tx::TxQueue;
use crate::datapath::zerocopy::ZC_MIN_LEN;
use crate::sys::ffi::{self, rte_eth_dev};
use std::ffi::c_void;

/// The queue behind `slot`, if set up.
///
/// # Safety
/// `slot` must hold null or a `Box<T>` stored by the queue's setup, alive
/// during the control operation (a release cannot run meanwhile).
unsafe fn queue<'a, T>(slot: *mut *mut c_void) -> Option<&'a T> {
    // SAFETY: per the caller.
    unsafe { (*slot).cast::<T>().as_ref() }
}

/// Copies `text` into a burst-mode info string, NUL-terminated.
fn write_info(mode: &mut ffi::rte_eth_burst_mode, text: &str) {
    let n = text.len().min(mode.info.len() - 1);
    for (d, s) in mode.info.iter_mut().zip(&text.as_bytes()[..n]) {
        *d = *s as std::ffi::c_char;
    }
    mode.info[n] = 0;
}

/// `eth_dev_ops::rxq_info_get`; ethdev checked `qid` and that the queue is
/// set up, and zeroed `info`.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn rxq_info_get(
    dev: *mut rte_eth_dev,
    qid: u16,
    info: *mut ffi::rte_eth_rxq_info,
) {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid info struct nothing else references.
    let info = unsafe { &mut *info };
    dev.with_port("rxq_info_get", |_| {
        if qid >= dev.nb_rx_queues() {
            return -libc::EINVAL;
        }
        // SAFETY: an RX slot holds null or a `Box<RxQueue>`.
        let Some(q) = (unsafe { queue::<RxQueue>(dev.rx_slot(qid)) }) else {
            return -libc::EINVAL;
        };
        let d = dev.data();
        info.mp = q.pool();
        info.conf.offloads = q.setup.offloads;
        info.nb_desc = q.setup.nb_desc;
        info.rx_buf_size = u16::try_from(q.buf_space()).unwrap_or(u16::MAX);
        // SAFETY: `data` is valid; `qid` is below `nb_rx_queues`.
        unsafe {
            info.scattered_rx = (*d).scattered_rx();
            info.queue_state = (*d).rx_queue_state[usize::from(qid)];
        }
        0
    });
}

/// `eth_dev_ops::txq_info_get`; as [`rxq_info_get`].
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn txq_info_get(
    dev: *mut rte_eth_dev,
    qid: u16,
    info: *mut ffi::rte_eth_txq_info,
) {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid info struct nothing else references.
    let info = unsafe { &mut *info };
    dev.with_port("txq_info_get", |_| {
        if qid >= dev.nb_tx_queues() {
            return -libc::EINVAL;
        }
        // SAFETY: a TX slot holds null or a `Box<TxQueue>`.
        let Some(q) = (unsafe { queue::<TxQueue>(dev.tx_slot(qid)) }) else {
            return -libc::EINVAL;
        };
        info.conf.offloads = q.setup.offloads;
        info.nb_desc = q.setup.nb_desc;
        // SAFETY: `data` is valid; `qid` is below `nb_tx_queues`.
        info.queue_state = unsafe { (*dev.data()).tx_queue_state[usize::from(qid)] };
        0
    });
}

/// `eth_dev_ops::rx_burst_mode_get`: how the RX burst function chosen at
/// start moves frames.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn rx_burst_mode_get(
    dev: *mut rte_eth_dev,
    qid: u16,
    mode: *mut ffi::rte_eth_burst_mode,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid, zeroed struct nothing else references.
    let mode = unsafe { &mut *mode };
    dev.with_port("rx_burst_mode_get", |p| {
        if qid >= dev.nb_rx_queues() {
            return -libc::EINVAL;
        }
        // SAFETY: `data` is valid.
        let scattered = unsafe { (*dev.data()).scattered_rx() } != 0;
        let text = match (p.args.zero_copy, scattered) {
            (false, false) => "Scalar copy".to_string(),
            (false, true) => "Scalar copy, scattered".to_string(),
            (true, s) => format!(
                "Zero-copy from {} bytes (external mbufs), scalar copy below{}",
                ZC_MIN_LEN,
                if s { ", scattered" } else { "" }
            ),
        };
        write_info(mode, &text);
        0
    })
}

/// `eth_dev_ops::tx_burst_mode_get`.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn tx_burst_mode_get(
    dev: *mut rte_eth_dev,
    qid: u16,
    mode: *mut ffi::rte_eth_burst_mode,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid, zeroed struct nothing else references.
    let mode = unsafe { &mut *mode };
    dev.with_port("tx_burst_mode_get", |_| {
        if qid >= dev.nb_tx_queues() {
            return -libc::EINVAL;
        }
        // SAFETY: a TX slot holds null or a `Box<TxQueue>`.
        let fast = unsafe { queue::<TxQueue>(dev.tx_slot(qid)) }.is_some_and(TxQueue::fast_free);
        write_info(
            mode,
            if fast {
                "Scalar copy, fast free"
            } else {
                "Scalar copy"
            },
        );
        0
    })
}
