//! The ethdev control operations (`struct eth_dev_ops`) of a vecring port.
//!
//! One `static` table, [`OPS`]. Each operation wraps ethdev's pointer in a
//! `Dev` handle (the one `unsafe` step: ethdev vouches for the pointer),
//! then runs safe code on the [`Port`](crate::port::state::Port) under
//! [`guarded`], so that a bug reports an error instead of unwinding into C.
//! Control operations of one port are not concurrent (DPDK's threading rule
//! for applications). The statistics operations are in
//! [`stats`], the others named in the table in the modules of
//! [`crate::ethdev`].

use super::dev::{Dev, QUEUE_STARTED, QUEUE_STOPPED};
use super::{addrs, close, intr, monitor, qinfo, queues, stats};
use crate::datapath::filter_config::MAX_MACS;
use crate::devargs::format_mac;
use crate::sys::ffi::{self, rte_eth_dev};
use crate::sys::guard::guarded;
use crate::sys::log::vlog;

/// Largest frame the link carries (vecring-core's jumbo limit).
const MAX_FRAME_LEN: u32 = vecring_core::MAX_FRAME_LEN as u32;

/// The driver's operations table.
pub static OPS: ffi::eth_dev_ops = ffi::eth_dev_ops {
    dev_configure: Some(dev_configure),
    dev_start: Some(dev_start),
    dev_stop: Some(dev_stop),
    dev_close: Some(dev_close),
    dev_set_link_up: Some(dev_set_link_up),
    dev_set_link_down: Some(dev_set_link_down),
    dev_infos_get: Some(dev_infos_get),
    link_update: Some(link_update),
    promiscuous_enable: Some(promiscuous_enable),
    promiscuous_disable: Some(promiscuous_disable),
    allmulticast_enable: Some(allmulticast_enable),
    allmulticast_disable: Some(allmulticast_disable),
    mac_addr_set: Some(mac_addr_set),
    mac_addr_add: Some(addrs::mac_addr_add),
    mac_addr_remove: Some(addrs::mac_addr_remove),
    set_mc_addr_list: Some(addrs::set_mc_addr_list),
    uc_all_hash_table_set: Some(addrs::uc_all_hash_table_set),
    mtu_set: Some(mtu_set),
    stats_get: Some(stats::stats_get),
    stats_reset: Some(stats::stats_reset),
    xstats_get: Some(stats::xstats_get),
    xstats_get_names: Some(stats::xstats_get_names),
    xstats_reset: Some(stats::xstats_reset),
    rx_queue_setup: Some(queues::rx_queue_setup),
    rx_queue_release: Some(queues::rx_queue_release),
    tx_queue_setup: Some(queues::tx_queue_setup),
    tx_queue_release: Some(queues::tx_queue_release),
    rxq_info_get: Some(qinfo::rxq_info_get),
    txq_info_get: Some(qinfo::txq_info_get),
    rx_burst_mode_get: Some(qinfo::rx_burst_mode_get),
    rx_queue_intr_enable: Some(intr::rx_queue_intr_enable),
    rx_queue_intr_disable: Some(intr::rx_queue_intr_disable),
    tx_burst_mode_get: Some(qinfo::tx_burst_mode_get),
    get_monitor_addr: Some(monitor::get_monitor_addr),
    // SAFETY: `eth_dev_ops` holds only optional function pointers, for which
    // all-zero is `None`: every other operation is "not supported".
    ..unsafe { std::mem::zeroed() }
};

/// `eth_dev_ops::dev_configure`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_configure(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("dev_configure", |p| {
        // RTE_ETH_LINK_SPEED_AUTONEG is 0: any bit is a fixed speed or a
        // limited set of speeds to negotiate, and shared memory has no line
        // rate to fix or limit.
        let speeds = dev.link_speeds();
        if speeds != 0 {
            let kind = if speeds & ffi::LINK_SPEED_FIXED != 0 {
                "a fixed link speed"
            } else {
                "a limited set of link speeds"
            };
            vlog!(
                ERR,
                "{}: configure: {kind} was requested (link_speeds 0x{speeds:x}), which a shared-memory link cannot honour: it has no line rate; use autonegotiation (link_speeds 0, testpmd: port config N speed auto duplex full)",
                p.name
            );
            return -libc::EINVAL;
        }
        p.lsc.set_enabled(dev.lsc_requested());
        let (nb_rx, nb_tx) = (dev.nb_rx_queues(), dev.nb_tx_queues());
        if let (queues, false) = p.link_queues() {
            if nb_rx.max(nb_tx) > 1 {
                vlog!(
                    NOTICE,
                    "{}: configure: {nb_rx} rx and {nb_tx} tx queues before the master's queue count is known (up to {queues}): queues past it carry nothing, and frames sent on them are dropped and counted in tx_qN_peer_queue_absent_drops",
                    p.name
                );
            }
        }
        0
    })
}

/// `eth_dev_ops::dev_start`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_start(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("dev_start", |p| {
        let scatter = dev.rx_offloads() & ffi::RX_OFFLOAD_SCATTER != 0;
        for q in 0..dev.nb_rx_queues() {
            let Some(space) = dev.rx_queue_buf_space(q) else {
                vlog!(ERR, "{}: start: rx queue {q} is not set up", p.name);
                return -libc::EINVAL;
            };
            if !scatter && space < MAX_FRAME_LEN as usize {
                vlog!(
                    INFO,
                    "{}: scatter is off: received frames over {space} bytes will be dropped",
                    p.name
                );
            }
        }
        let mut fast_free = true;
        for q in 0..dev.nb_tx_queues() {
            let Some(fast) = dev.tx_queue_fast_free(q) else {
                vlog!(ERR, "{}: start: tx queue {q} is not set up", p.name);
                return -libc::EINVAL;
            };
            fast_free &= fast;
        }
        if dev.rxq_intr_requested() {
            let rc = intr::install(dev, p);
            if rc != 0 {
                return rc;
            }
        }
        if let Err(e) = p.reopen_link() {
            return e;
        }
        // Receivers on a link that is up already count as present for
        // the peer before the application's first burst.
        for q in 0..dev.nb_rx_queues() {
            dev.prepare_rx_queue(q);
        }
        dev.set_burst_fns(scatter, p.args.zero_copy, fast_free);
        dev.set_queue_states(QUEUE_STARTED);
        dev.set_link_status(p.link_up());
        0
    })
}

/// Stopping closes the link: the peer sees this end leave and stops
/// filling the ring, and the port reports link down until started again.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_stop(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("dev_stop", |p| {
        dev.set_queue_states(QUEUE_STOPPED);
        p.close_link("port stopped");
        dev.set_link_status(false);
        0
    })
}

/// `set link-down`: closes the link (the peer sees this end leave); the
/// queues keep running and report the link down.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_set_link_down(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("dev_set_link_down", |p| {
        p.close_link("set link down");
        dev.set_link_status(false);
        0
    })
}

/// `set link-up`: opens the link again; it comes up when the peer is there.
///
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_set_link_up(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("dev_set_link_up", |p| {
        if let Err(e) = p.reopen_link() {
            return e;
        }
        dev.set_link_status(p.link_up());
        0
    })
}

/// `eth_dev_ops::dev_close`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_close(dev: *mut rte_eth_dev) -> i32 {
    guarded("dev_close", -libc::EIO, || {
        // SAFETY: ethdev passes a valid port of ours; a secondary process's
        // ports have `secondary::OPS`, so this is the primary.
        unsafe { close::close(dev) };
        0
    })
}

/// `eth_dev_ops::dev_infos_get`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn dev_infos_get(dev: *mut rte_eth_dev, info: *mut ffi::rte_eth_dev_info) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid info struct, zeroed and given its
    // defaults, that nothing else references during the call.
    let i = unsafe { &mut *info };
    dev.with_port("dev_infos_get", |p| {
        let (queues, known) = p.link_queues();
        if !known && !p.told_guess {
            p.told_guess = true;
            vlog!(
                INFO,
                "{}: link down; the master decides the queue count: up to {queues} queues offered, and those past the master's count carry nothing",
                p.name
            );
        }
        i.max_mac_addrs = MAX_MACS as u32;
        i.max_rx_pktlen = MAX_FRAME_LEN;
        i.max_rx_queues = queues;
        i.max_tx_queues = queues;
        i.min_mtu = ffi::ETHER_MIN_MTU;
        i.max_mtu = (MAX_FRAME_LEN - ffi::ETHER_OVERHEAD) as u16;
        i.min_rx_bufsize = 0;
        i.rx_offload_capa = ffi::RX_OFFLOAD_SCATTER;
        i.tx_offload_capa = ffi::TX_OFFLOAD_MULTI_SEGS | ffi::TX_OFFLOAD_MBUF_FAST_FREE;
        // The ring size is a devarg: descriptor counts are accepted and
        // ignored, and chains of any length are sent.
        for lim in [&mut i.rx_desc_lim, &mut i.tx_desc_lim] {
            lim.nb_max = u16::MAX;
            lim.nb_min = 1;
            lim.nb_align = 1;
            lim.nb_seg_max = u16::MAX;
            lim.nb_mtu_seg_max = u16::MAX;
        }
        // No line rate to advertise: `speed_capa` stays 0 and only
        // autonegotiation is accepted (see `dev_configure`).
        0
    })
}

/// `eth_dev_ops::link_update`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn link_update(dev: *mut rte_eth_dev, _wait_to_complete: i32) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("link_update", |p| {
        if dev.set_link_status(p.link_up()) {
            0
        } else {
            -1
        }
    })
}

/// Re-derives the receive filter from the flags ethdev is about to set
/// (ethdev updates `data->promiscuous`/`all_multicast` after we succeed).
fn update_filter(dev: Dev, what: &str, promisc: Option<bool>, allmulti: Option<bool>) -> i32 {
    dev.with_port(what, |p| {
        p.shared.set_filter(
            promisc.unwrap_or_else(|| dev.promiscuous()),
            allmulti.unwrap_or_else(|| dev.all_multicast()),
        );
        0
    })
}

/// `eth_dev_ops::promiscuous_enable`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn promiscuous_enable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "promiscuous_enable",
        Some(true),
        None,
    )
}

/// `eth_dev_ops::promiscuous_disable`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn promiscuous_disable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "promiscuous_disable",
        Some(false),
        None,
    )
}

/// `eth_dev_ops::allmulticast_enable`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn allmulticast_enable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "allmulticast_enable",
        None,
        Some(true),
    )
}

/// `eth_dev_ops::allmulticast_disable`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn allmulticast_disable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "allmulticast_disable",
        None,
        Some(false),
    )
}

/// `eth_dev_ops::mac_addr_set`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn mac_addr_set(dev: *mut rte_eth_dev, addr: *mut ffi::rte_ether_addr) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid address (and copies it into
    // `mac_addrs[0]` after we succeed).
    let mac = unsafe { (*addr).addr_bytes };
    dev.with_port("mac_addr_set", |p| {
        p.shared.macs.set(0, Some(&mac));
        vlog!(INFO, "{}: mac {}", p.name, format_mac(&mac));
        0
    })
}

/// `eth_dev_ops::mtu_set`.
/// # Safety
/// ethdev calls it with a valid port of this driver and, where it passes
/// them, pointers valid for the call; control operations of one port are
/// never concurrent (DPDK's rule for applications).
unsafe extern "C" fn mtu_set(dev: *mut rte_eth_dev, mtu: u16) -> i32 {
    // SAFETY: ethdev passes a valid port of ours; it checked `mtu` against
    // `min_mtu..=max_mtu` and stores it after we succeed. Frames are not
    // filtered by MTU: the ring carries up to MAX_FRAME_LEN either way.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("mtu_set", |p| {
        vlog!(INFO, "{}: mtu {mtu}", p.name);
        0
    })
}
