//! A vecring port seen from a DPDK secondary process (`dpdk-proc-info`,
//! `dpdk-dumpcap`, or any application started with `--proc-type
//! secondary`).
//!
//! The port's state lives in the primary's heap; its `rte_eth_dev_data`
//! (name, MAC, link status, queue counts, flags) is in DPDK's shared memory
//! and readable here, but the [`PrivData::port`](crate::port::state::PrivData::port)
//! pointer in it is the primary's and is never followed in a secondary. The
//! secondary's probe attaches to the primary's port
//! (`rte_eth_dev_attach_secondary`) and installs [`OPS`], a table of its own:
//!
//! - statistics, extended statistics and device information are asked of the
//!   primary over EAL's IPC ([`super::primary`]), page by page, so a secondary
//!   reports exactly what the primary's application sees; the xstats names
//!   come from the queue counts in the shared data, as in the primary;
//! - the link status is the one the primary keeps in the shared data;
//! - closing releases only this process's view of the port;
//! - everything else (configure, start, stop, queues, promiscuous mode,
//!   MAC, MTU, resets) is not supported: the port belongs to the primary;
//! - the burst functions receive and send nothing. Packet capture
//!   (`dpdk-dumpcap`, `dpdk-pdump`) does not need them: it asks the primary
//!   to install its callbacks on the port, and they run in the primary's
//!   `rte_eth_rx_burst`/`rte_eth_tx_burst`.

use super::msg::{decode_reply, Op, Pages, Reply, Request};
use super::values::{values_to_info, values_to_stats};
use crate::ethdev::xstats;
use crate::sys::compat::stats_get_op;
use crate::sys::eth_stats::EthStats;
use crate::sys::ffi::{self, rte_eth_dev, rte_mbuf, rte_vdev_device};
use crate::sys::guard::guarded;
use crate::sys::log::vlog;
use std::ffi::{c_void, CStr, CString};
use std::ptr::addr_of_mut;

/// How long a secondary waits for the primary's answer.
const ANSWER_TIMEOUT_SECS: i64 = 2;

/// The operations of a port in a secondary process.
pub static OPS: ffi::eth_dev_ops = ffi::eth_dev_ops {
    dev_close: Some(dev_close),
    dev_infos_get: Some(dev_infos_get),
    link_update: Some(link_update),
    stats_get: Some(stats_get),
    xstats_get: Some(xstats_get),
    xstats_get_names: Some(xstats_get_names),
    // SAFETY: `eth_dev_ops` holds only optional function pointers, for which
    // all-zero is `None`: every other operation is "not supported".
    ..unsafe { std::mem::zeroed() }
};

/// Whether this is a secondary process.
pub fn is_secondary() -> bool {
    // SAFETY: plain query.
    unsafe { ffi::rte_eal_process_type() == ffi::rte_proc_type_t::RTE_PROC_SECONDARY }
}

/// The probe of a secondary process: attaches to the primary's port `name`.
///
/// # Safety
/// `dev` must be the valid vdev the bus is probing.
pub unsafe fn probe(dev: *mut rte_vdev_device, name: &str) -> i32 {
    let Ok(c_name) = CString::new(name) else {
        return -libc::EINVAL;
    };
    // SAFETY: a NUL-terminated name.
    let eth = unsafe { ffi::rte_eth_dev_attach_secondary(c_name.as_ptr()) };
    if eth.is_null() {
        vlog!(ERR, "{name}: the primary process has no such port");
        return -libc::ENODEV;
    }
    // SAFETY: `eth` is this process's entry of the port, not yet visible to
    // the application; `dev` outlives it (the bus keeps the device until
    // remove).
    unsafe {
        (*eth).device = addr_of_mut!((*dev).device);
        (*eth).dev_ops = &OPS;
        (*eth).rx_pkt_burst = Some(rx_nothing);
        (*eth).tx_pkt_burst = Some(tx_nothing);
        ffi::rte_eth_dev_probing_finish(eth);
    }
    // SAFETY: `data` is the shared data of an allocated port.
    let port_id = unsafe { (*(*eth).data).port_id };
    vlog!(
        INFO,
        "{name}: port {port_id} attached in a secondary process (statistics from the primary, no traffic)"
    );
    0
}

/// The remove of a secondary process: releases this process's view of port
/// `name`; the primary's port is untouched.
///
/// # Safety
/// `name` must be NUL-terminated.
pub unsafe fn remove(name: *const std::ffi::c_char) -> i32 {
    // SAFETY: per the caller.
    let eth = unsafe { ffi::rte_eth_dev_allocated(name) };
    if !eth.is_null() {
        // SAFETY: an attached port; in a secondary, ethdev frees nothing
        // shared.
        unsafe { ffi::rte_eth_dev_release_port(eth) };
    }
    0
}

/// The port's name, from the shared data.
///
/// # Safety
/// `dev` must be a valid, attached port.
unsafe fn name_of(dev: *mut rte_eth_dev) -> String {
    // SAFETY: per the caller; the name is NUL-terminated.
    unsafe { CStr::from_ptr((*(*dev).data).name.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The port's configured (RX, TX) queue counts, from the shared data.
///
/// # Safety
/// `dev` must be a valid, attached port.
unsafe fn queue_counts(dev: *mut rte_eth_dev) -> (u16, u16) {
    // SAFETY: per the caller.
    unsafe { ((*(*dev).data).nb_rx_queues, (*(*dev).data).nb_tx_queues) }
}

/// Asks the primary `op` about port `dev`: every value of the answer,
/// one page per request.
///
/// # Safety
/// `dev` must be a valid, attached port.
unsafe fn ask(dev: *mut rte_eth_dev, op: Op) -> Result<Vec<u64>, i32> {
    // SAFETY: per the caller.
    let name = unsafe { name_of(dev) };
    let mut pages = Pages::default();
    // `Pages::add` refuses a page that makes no progress, and the total is
    // bounded (`mp::msg::MAX_TOTAL`): the loop ends.
    loop {
        let page = ask_page(&name, op, pages.next_first());
        let done = page.and_then(|p| pages.add(p));
        match done {
            Ok(true) => return Ok(pages.into_values()),
            Ok(false) => {}
            Err(e) => {
                vlog!(
                    ERR,
                    "{name}: the primary process did not answer {op:?} ({})",
                    std::io::Error::from_raw_os_error(-e)
                );
                return Err(e);
            }
        }
    }
}

/// Asks the primary for one page of `op` about port `name`, from value
/// `first`.
fn ask_page(name: &str, op: Op, first: u32) -> Result<Reply, i32> {
    let mut req = Request {
        op,
        first,
        name: name.to_owned(),
    }
    .encode()?;
    let mut reply = ffi::rte_mp_reply::default();
    let ts = ffi::timespec {
        tv_sec: ANSWER_TIMEOUT_SECS,
        tv_nsec: 0,
    };
    // SAFETY: valid message, reply and timeout; EAL allocates `msgs` with
    // malloc when it returns, and it is freed below.
    let rc = unsafe { ffi::rte_mp_request_sync(&mut req, &mut reply, &ts) };
    let answer = if rc == 0 && reply.nb_received == 1 && !reply.msgs.is_null() {
        // SAFETY: EAL returned one received message.
        decode_reply(unsafe { &*reply.msgs })
    } else {
        Err(-libc::EIO)
    };
    // SAFETY: `msgs` is null or EAL's malloc'd array, freed once.
    unsafe { libc::free(reply.msgs.cast::<c_void>()) };
    answer
}

/// `eth_dev_ops::dev_close`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_close(_dev: *mut rte_eth_dev) -> i32 {
    // Nothing of this process to free: ethdev then releases its view of the
    // port, and the primary's port is untouched.
    0
}

/// `eth_dev_ops::dev_infos_get`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_infos_get(dev: *mut rte_eth_dev, info: *mut ffi::rte_eth_dev_info) -> i32 {
    guarded("dev_infos_get", -libc::EIO, || {
        // SAFETY: ethdev passes a valid port and info struct.
        let (v, i) = unsafe { (ask(dev, Op::Info), &mut *info) };
        match v.and_then(|v| values_to_info(&v, i)) {
            Ok(()) => 0,
            Err(e) => e,
        }
    })
}

/// `eth_dev_ops::link_update`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn link_update(_dev: *mut rte_eth_dev, _wait_to_complete: i32) -> i32 {
    // The primary keeps `dev_link` in the shared data current.
    0
}

stats_get_op!(stats_get, primary_stats);

/// The port's counters, asked of the primary process.
///
/// # Safety
/// `dev` must be a valid port of this driver.
unsafe fn primary_stats(dev: *mut rte_eth_dev) -> Result<EthStats, i32> {
    guarded("stats_get", Err(-libc::EIO), || {
        // SAFETY: the caller passes a valid port.
        let v = unsafe { ask(dev, Op::Stats) }?;
        let mut s = EthStats::default();
        values_to_stats(&v, &mut s)?;
        Ok(s)
    })
}

/// `eth_dev_ops::xstats_get`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn xstats_get(
    dev: *mut rte_eth_dev,
    out: *mut ffi::rte_eth_xstat,
    n: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid, attached port.
    let (nb_rx, nb_tx) = unsafe { queue_counts(dev) };
    let count = xstats::count(nb_rx, nb_tx);
    if out.is_null() || (n as usize) < count {
        return count as i32;
    }
    guarded("xstats_get", -libc::EIO, || {
        // SAFETY: ethdev passes a valid port.
        let values = match unsafe { ask(dev, Op::Xstats) } {
            Ok(v) if v.len() == count => v,
            Ok(v) => {
                vlog!(
                    ERR,
                    "xstats: the primary reports {} values for {count} names (queues reconfigured meanwhile, or another driver build)",
                    v.len()
                );
                return -libc::EPROTO;
            }
            Err(e) => return e,
        };
        // SAFETY: ethdev passes room for `n >= count` entries.
        let out = unsafe { std::slice::from_raw_parts_mut(out, count) };
        for (i, (o, v)) in out.iter_mut().zip(values).enumerate() {
            o.id = i as u64;
            o.value = v;
        }
        count as i32
    })
}

/// `eth_dev_ops::xstats_get_names`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn xstats_get_names(
    dev: *mut rte_eth_dev,
    names: *mut ffi::rte_eth_xstat_name,
    size: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid, attached port.
    let (nb_rx, nb_tx) = unsafe { queue_counts(dev) };
    let list = xstats::list(nb_rx, nb_tx);
    let count = list.len();
    if names.is_null() || (size as usize) < count {
        return count as i32;
    }
    // SAFETY: ethdev passes room for `size >= count` names.
    let names = unsafe { std::slice::from_raw_parts_mut(names, count) };
    for (dst, x) in names.iter_mut().zip(&list) {
        xstats::write_name(dst, &x.name);
    }
    count as i32
}

/// RX burst of a secondary process: the primary owns the ring's receiving
/// end, so nothing is received here.
///
/// # Safety
/// Safe for any arguments: it touches none of them.
unsafe extern "C" fn rx_nothing(_q: *mut c_void, _mbufs: *mut *mut rte_mbuf, _n: u16) -> u16 {
    0
}

/// TX burst of a secondary process: nothing is sent, every mbuf is left to
/// the caller.
///
/// # Safety
/// Safe for any arguments: it touches none of them.
unsafe extern "C" fn tx_nothing(_q: *mut c_void, _mbufs: *mut *mut rte_mbuf, _n: u16) -> u16 {
    0
}
