//! The statistics operations of a vecring port: `stats_get`,
//! `stats_reset`, `xstats_get`, `xstats_get_names`, `xstats_reset`. Each
//! reads the port's [`Snapshot`] and reports it since the operation's own
//! reset baseline (a reset never writes a counter, see
//! [`crate::datapath::shared`]).

use super::dev::Dev;
use super::xstats;
use crate::port::snapshot::Snapshot;
use crate::sys::compat::stats_get_op;
use crate::sys::eth_stats::EthStats;
use crate::sys::ffi::{self, rte_eth_dev};

stats_get_op!(pub(crate) stats_get, eth_stats);

/// The port's counters since the last `stats_reset`, as `stats_get`
/// reports them (also the answer to a secondary process, [`crate::mp`]).
///
/// # Safety
/// `dev` must be a valid port of this driver, with no other control
/// operation of it running (DPDK's rule for applications).
pub(crate) unsafe fn eth_stats(dev: *mut rte_eth_dev) -> Result<EthStats, i32> {
    // SAFETY: the caller passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    let mut out = Err(-libc::ENODEV);
    let rc = dev.with_port("stats_get", |p| {
        let s = p.snapshot().since(&p.stats_base);
        out = Ok(s.eth_stats(dev.nb_rx_queues(), dev.nb_tx_queues()));
        0
    });
    if rc != 0 {
        return Err(rc);
    }
    out
}

/// `eth_dev_ops::stats_reset`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn stats_reset(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("stats_reset", |p| {
        p.stats_base = p.snapshot();
        0
    })
}

/// `eth_dev_ops::xstats_get`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn xstats_get(
    dev: *mut rte_eth_dev,
    out: *mut ffi::rte_eth_xstat,
    n: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    let list = xstats::list(dev.nb_rx_queues(), dev.nb_tx_queues());
    let count = list.len();
    if out.is_null() || (n as usize) < count {
        return count as i32;
    }
    // SAFETY: ethdev passes room for `n >= count` entries.
    let out = unsafe { std::slice::from_raw_parts_mut(out, count) };
    dev.with_port("xstats_get", |p| {
        let s: Snapshot = p.snapshot().since(&p.xstats_base);
        for (i, (o, x)) in out.iter_mut().zip(&list).enumerate() {
            o.id = i as u64;
            o.value = x.value(&s);
        }
        count as i32
    })
}

/// `eth_dev_ops::xstats_get_names`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn xstats_get_names(
    dev: *mut rte_eth_dev,
    names: *mut ffi::rte_eth_xstat_name,
    size: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    let list = xstats::list(dev.nb_rx_queues(), dev.nb_tx_queues());
    let count = list.len();
    if names.is_null() || (size as usize) < count {
        return count as i32;
    }
    // SAFETY: ethdev passes room for `size >= count` names.
    let names = unsafe { std::slice::from_raw_parts_mut(names, count) };
    dev.with_port("xstats_get_names", |_| {
        for (dst, x) in names.iter_mut().zip(&list) {
            xstats::write_name(dst, &x.name);
        }
        count as i32
    })
}

/// `eth_dev_ops::xstats_reset`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn xstats_reset(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("xstats_reset", |p| {
        p.xstats_base = p.snapshot();
        0
    })
}
