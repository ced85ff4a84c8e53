//! Receive addresses beyond the primary MAC: extra unicast MACs
//! (`mac_addr_add`/`mac_addr_remove`, testpmd `mac_addr add`) and
//! multicast groups (`set_mc_addr_list`, testpmd `mcast_addr add`). The
//! receive filter answers to all of them when promiscuous mode is off (see
//! [`crate::datapath::filter::Filter`]). The unicast hash table is not supported:
//! `uc_all_hash_table_set` fails with `-ENOTSUP` and a log line naming it
//! (ethdev refuses `uc_hash_table_set` itself: `max_hash_mac_addrs` is 0).

use super::dev::Dev;
use crate::datapath::filter_config::{MAX_MACS, MAX_MC_ADDRS};
use crate::devargs::format_mac;
use crate::sys::ffi::{self, rte_eth_dev};
use crate::sys::log::vlog;

/// `eth_dev_ops::mac_addr_add`: ethdev chose the free entry `index` of
/// `mac_addrs` (below `max_mac_addrs`, [`MAX_MACS`]) and stores the address
/// there after we succeed.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn mac_addr_add(
    dev: *mut rte_eth_dev,
    addr: *mut ffi::rte_ether_addr,
    index: u32,
    vmdq: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid address.
    let mac = unsafe { (*addr).addr_bytes };
    dev.with_port("mac_addr_add", |p| {
        if vmdq != 0 {
            vlog!(
                ERR,
                "{}: mac_addr_add: VMDq pool {vmdq} is not supported (one pool: 0)",
                p.name
            );
            return -libc::ENOTSUP;
        }
        let i = index as usize;
        if i == 0 || i >= MAX_MACS {
            return -libc::EINVAL;
        }
        p.shared.macs.set(i, Some(&mac));
        vlog!(INFO, "{}: receives mac {} too", p.name, format_mac(&mac));
        0
    })
}

/// `eth_dev_ops::mac_addr_remove`: ethdev clears `mac_addrs[index]` after.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn mac_addr_remove(dev: *mut rte_eth_dev, index: u32) {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("mac_addr_remove", |p| {
        let i = index as usize;
        if i != 0 && i < MAX_MACS {
            p.shared.macs.set(i, None);
            vlog!(INFO, "{}: mac entry {i} removed", p.name);
        }
        0
    });
}

/// `eth_dev_ops::set_mc_addr_list`: replaces the multicast groups (an empty
/// list removes them all).
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn set_mc_addr_list(
    dev: *mut rte_eth_dev,
    set: *mut ffi::rte_ether_addr,
    nb: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("set_mc_addr_list", |p| {
        let n = nb as usize;
        if n > MAX_MC_ADDRS {
            vlog!(
                ERR,
                "{}: set_mc_addr_list: {n} multicast addresses, at most {MAX_MC_ADDRS} are supported",
                p.name
            );
            return -libc::ENOSPC;
        }
        let list: Vec<[u8; 6]> = if n == 0 || set.is_null() {
            Vec::new()
        } else {
            // SAFETY: ethdev passes `nb` addresses at `set`.
            unsafe { std::slice::from_raw_parts(set, n) }
                .iter()
                .map(|a| a.addr_bytes)
                .collect()
        };
        if let Some(a) = list.iter().find(|a| a[0] & 1 == 0) {
            vlog!(
                ERR,
                "{}: set_mc_addr_list: {} is not a multicast address",
                p.name,
                format_mac(a)
            );
            return -libc::EINVAL;
        }
        p.shared.mc_addrs.replace(&list);
        let shown: Vec<String> = list.iter().map(format_mac).collect();
        vlog!(
            INFO,
            "{}: multicast groups: [{}]",
            p.name,
            shown.join(", ")
        );
        0
    })
}

/// Logs an unsupported operation and fails with `-ENOTSUP`.
fn unsupported(dev: Dev, what: &str, why: &str) -> i32 {
    dev.with_port(what, |p| {
        vlog!(ERR, "{}: {what} is not supported: {why}", p.name);
        -libc::ENOTSUP
    })
}

/// `eth_dev_ops::uc_all_hash_table_set` (testpmd `set port N uta all on`).
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
pub(crate) unsafe extern "C" fn uc_all_hash_table_set(dev: *mut rte_eth_dev, _on: u8) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    unsupported(
        dev,
        "uc_all_hash_table_set",
        "no unicast hash table; use promiscuous mode",
    )
}
