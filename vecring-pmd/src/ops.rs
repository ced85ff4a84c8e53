//! The ethdev control operations (`struct eth_dev_ops`) of a vecring port.
//!
//! One `static` table, [`OPS`]. Each operation wraps ethdev's pointer in a
//! `Dev` handle (the one `unsafe` step: ethdev vouches for the pointer),
//! then runs safe code on the [`Port`] under [`guarded`], so that a bug
//! reports an error instead of unwinding into C. Control operations of one
//! port are not concurrent (DPDK's threading rule for applications).

use crate::ffi::{self, rte_eth_dev, rte_mempool};
use crate::port::{self, guarded, port_of, Port};
use crate::rxtx::{self, QueueSetup, RxQueue, TxQueue};
use crate::stats::{self, Snapshot, XSTATS};
use crate::vlog;
use std::ffi::c_void;
use std::ptr::addr_of_mut;
use std::sync::Arc;

/// Largest frame the link carries (vecring's jumbo limit).
pub const MAX_FRAME_LEN: u32 = 9216;
/// Queues per direction.
const MAX_QUEUES: u16 = 1;
/// `RTE_ETH_QUEUE_STATE_STOPPED`.
const QUEUE_STOPPED: u8 = 0;
/// `RTE_ETH_QUEUE_STATE_STARTED`.
const QUEUE_STARTED: u8 = 1;

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
    mac_addr_add: Some(crate::addrs::mac_addr_add),
    mac_addr_remove: Some(crate::addrs::mac_addr_remove),
    set_mc_addr_list: Some(crate::addrs::set_mc_addr_list),
    uc_all_hash_table_set: Some(crate::addrs::uc_all_hash_table_set),
    mtu_set: Some(mtu_set),
    stats_get: Some(stats_get),
    stats_reset: Some(stats_reset),
    xstats_get: Some(xstats_get),
    xstats_get_names: Some(xstats_get_names),
    xstats_reset: Some(xstats_reset),
    rx_queue_setup: Some(rx_queue_setup),
    rx_queue_release: Some(rx_queue_release),
    tx_queue_setup: Some(tx_queue_setup),
    tx_queue_release: Some(tx_queue_release),
    rxq_info_get: Some(crate::qinfo::rxq_info_get),
    txq_info_get: Some(crate::qinfo::txq_info_get),
    rx_burst_mode_get: Some(crate::qinfo::rx_burst_mode_get),
    tx_burst_mode_get: Some(crate::qinfo::tx_burst_mode_get),
    // SAFETY: `eth_dev_ops` holds only optional function pointers, for which
    // all-zero is `None`: every other operation is "not supported".
    ..unsafe { std::mem::zeroed() }
};

/// An ethdev port of this driver, during one control operation.
///
/// Invariant (established by [`Dev::new`]): the pointer is a valid,
/// allocated port of this driver in the primary process, and no other
/// control operation runs on it meanwhile. Fields of `dev->data` are read
/// and written through raw pointers, never through a `&mut` to the whole
/// struct, because the data path updates `rx_mbuf_alloc_failed` in it.
#[derive(Clone, Copy)]
pub(crate) struct Dev(*mut rte_eth_dev);

impl Dev {
    /// # Safety
    /// `dev` must satisfy the invariant of [`Dev`] for as long as the
    /// handle is used (ethdev guarantees it for the operations of [`OPS`]).
    pub(crate) unsafe fn new(dev: *mut rte_eth_dev) -> Self {
        Dev(dev)
    }

    pub(crate) fn data(self) -> *mut ffi::rte_eth_dev_data {
        // SAFETY: a valid port (type invariant) has valid `data`.
        unsafe { (*self.0).data }
    }

    /// Runs `f` on the port, or returns `-ENODEV` if it is closed.
    pub(crate) fn with_port(self, what: &str, f: impl FnOnce(&mut Port) -> i32) -> i32 {
        guarded(what, -libc::EIO, || {
            // SAFETY: a valid port of ours (type invariant); operations are
            // not concurrent, so this is the only reference to the `Port`.
            match unsafe { port_of(self.0) } {
                Some(p) => f(p),
                None => -libc::ENODEV,
            }
        })
    }

    pub(crate) fn nb_rx_queues(self) -> u16 {
        // SAFETY: `data` is valid (type invariant).
        unsafe { (*self.data()).nb_rx_queues }
    }

    pub(crate) fn nb_tx_queues(self) -> u16 {
        // SAFETY: `data` is valid (type invariant).
        unsafe { (*self.data()).nb_tx_queues }
    }

    /// Slot `q` of `rx_queues` (`q < nb_rx_queues`).
    pub(crate) fn rx_slot(self, q: u16) -> *mut *mut c_void {
        assert!(q < self.nb_rx_queues());
        // SAFETY: ethdev allocates `nb_rx_queues` entries.
        unsafe { (*self.data()).rx_queues.add(usize::from(q)) }
    }

    /// Slot `q` of `tx_queues` (`q < nb_tx_queues`).
    pub(crate) fn tx_slot(self, q: u16) -> *mut *mut c_void {
        assert!(q < self.nb_tx_queues());
        // SAFETY: ethdev allocates `nb_tx_queues` entries.
        unsafe { (*self.data()).tx_queues.add(usize::from(q)) }
    }

    /// The mbuf data room of RX queue `q`, if it is set up.
    fn rx_queue_buf_space(self, q: u16) -> Option<usize> {
        // SAFETY: the slot holds null or a `Box<RxQueue>` from
        // `rx_queue_setup`, alive until `rx_queue_release`, which cannot run
        // during this operation.
        unsafe { (*self.rx_slot(q)).cast::<RxQueue>().as_ref() }.map(RxQueue::buf_space)
    }

    /// Whether TX queue `q` frees sent mbufs the fast way, if it is set up.
    fn tx_queue_fast_free(self, q: u16) -> Option<bool> {
        // SAFETY: the slot holds null or a `Box<TxQueue>` from
        // `tx_queue_setup`, alive until `tx_queue_release`, which cannot run
        // during this operation.
        unsafe { (*self.tx_slot(q)).cast::<TxQueue>().as_ref() }.map(TxQueue::fast_free)
    }

    fn tx_offloads(self) -> u64 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.txmode.offloads }
    }

    fn set_queue_states(self, state: u8) {
        let d = self.data();
        // SAFETY: `data` is valid; the state arrays have
        // RTE_MAX_QUEUES_PER_PORT entries, more than our one queue each.
        unsafe {
            for q in 0..usize::from((*d).nb_rx_queues.min(MAX_QUEUES)) {
                (*d).rx_queue_state[q] = state;
            }
            for q in 0..usize::from((*d).nb_tx_queues.min(MAX_QUEUES)) {
                (*d).tx_queue_state[q] = state;
            }
        }
    }

    fn rx_offloads(self) -> u64 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.rxmode.offloads }
    }

    fn link_speeds(self) -> u32 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.link_speeds }
    }

    fn lsc_requested(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.intr_conf.lsc() != 0 }
    }

    fn promiscuous(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).promiscuous() != 0 }
    }

    fn all_multicast(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).all_multicast() != 0 }
    }

    fn port_id(self) -> u16 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).port_id }
    }

    /// `&data->rx_mbuf_alloc_failed`, for the data path.
    fn nombuf_counter(self) -> *mut u64 {
        // SAFETY: `data` is valid; no reference is made.
        unsafe { addr_of_mut!((*self.data()).rx_mbuf_alloc_failed) }
    }

    /// Installs the burst functions; ethdev copies them into its fast-path
    /// table when `dev_start` returns.
    fn set_burst_fns(self, scatter: bool, zero_copy: bool, fast_free: bool) {
        // SAFETY: a valid port; the fast path does not read these fields.
        unsafe {
            (*self.data()).set_scattered_rx(u8::from(scatter));
            (*self.0).rx_pkt_burst = rxtx::rx_burst_fn(scatter, zero_copy);
            (*self.0).tx_pkt_burst = rxtx::tx_burst_fn(fast_free);
        }
    }

    /// Stores the link status; returns whether up/down changed.
    pub(crate) fn set_link_status(self, up: bool) -> bool {
        // SAFETY: a valid, allocated port.
        unsafe { port::set_link_status(self.0, up) }
    }
}

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
        0
    })
}

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
        if let Err(e) = p.reopen_link() {
            return e;
        }
        dev.set_burst_fns(scatter, p.args.zero_copy, fast_free);
        dev.set_queue_states(QUEUE_STARTED);
        p.learn_geometry();
        dev.set_link_status(p.link_up());
        0
    })
}

/// Stopping closes the link: the peer sees this end leave and stops
/// filling the ring, and the port reports link down until started again.
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
unsafe extern "C" fn dev_set_link_up(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("dev_set_link_up", |p| {
        if let Err(e) = p.reopen_link() {
            return e;
        }
        p.learn_geometry();
        dev.set_link_status(p.link_up());
        0
    })
}

unsafe extern "C" fn dev_close(dev: *mut rte_eth_dev) -> i32 {
    guarded("dev_close", -libc::EIO, || {
        // SAFETY: ethdev passes a valid port of ours; a secondary process's
        // ports have `secondary::OPS`, so this is the primary.
        unsafe { port::close(dev) };
        0
    })
}

unsafe extern "C" fn dev_infos_get(dev: *mut rte_eth_dev, info: *mut ffi::rte_eth_dev_info) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid info struct, zeroed and given its
    // defaults, that nothing else references during the call.
    let i = unsafe { &mut *info };
    dev.with_port("dev_infos_get", |_| {
        i.max_mac_addrs = stats::MAX_MACS as u32;
        i.max_rx_pktlen = MAX_FRAME_LEN;
        i.max_rx_queues = MAX_QUEUES;
        i.max_tx_queues = MAX_QUEUES;
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

unsafe extern "C" fn link_update(dev: *mut rte_eth_dev, _wait_to_complete: i32) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("link_update", |p| {
        p.learn_geometry();
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

unsafe extern "C" fn promiscuous_enable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "promiscuous_enable",
        Some(true),
        None,
    )
}

unsafe extern "C" fn promiscuous_disable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "promiscuous_disable",
        Some(false),
        None,
    )
}

unsafe extern "C" fn allmulticast_enable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "allmulticast_enable",
        None,
        Some(true),
    )
}

unsafe extern "C" fn allmulticast_disable(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    update_filter(
        unsafe { Dev::new(dev) },
        "allmulticast_disable",
        None,
        Some(false),
    )
}

unsafe extern "C" fn mac_addr_set(dev: *mut rte_eth_dev, addr: *mut ffi::rte_ether_addr) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid address (and copies it into
    // `mac_addrs[0]` after we succeed).
    let mac = unsafe { (*addr).addr_bytes };
    dev.with_port("mac_addr_set", |p| {
        p.shared.macs.set(0, Some(&mac));
        vlog!(INFO, "{}: mac {}", p.name, crate::devargs::format_mac(&mac));
        0
    })
}

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

unsafe extern "C" fn stats_get(dev: *mut rte_eth_dev, out: *mut ffi::rte_eth_stats) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    // SAFETY: ethdev passes a valid, zeroed stats struct (it fills
    // `rx_nombuf` itself) that nothing else references during the call.
    let o = unsafe { &mut *out };
    dev.with_port("stats_get", |p| {
        let s = p.snapshot().since(&p.stats_base);
        o.ipackets = s.rx_packets;
        o.ibytes = s.rx_bytes;
        o.ierrors = s.ierrors();
        o.opackets = s.tx_packets;
        o.obytes = s.tx_bytes;
        o.oerrors = s.oerrors();
        // Nothing is lost before the driver sees it: frames wait in the
        // ring, and the peer counts its own ring-full refusals.
        o.imissed = 0;
        o.q_ipackets[0] = s.rx_packets;
        o.q_ibytes[0] = s.rx_bytes;
        o.q_errors[0] = s.ierrors();
        o.q_opackets[0] = s.tx_packets;
        o.q_obytes[0] = s.tx_bytes;
        0
    })
}

unsafe extern "C" fn stats_reset(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("stats_reset", |p| {
        p.stats_base = p.snapshot();
        0
    })
}

unsafe extern "C" fn xstats_get(
    dev: *mut rte_eth_dev,
    out: *mut ffi::rte_eth_xstat,
    n: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    let count = XSTATS.len();
    if out.is_null() || (n as usize) < count {
        return count as i32;
    }
    // SAFETY: ethdev passes room for `n >= count` entries.
    let out = unsafe { std::slice::from_raw_parts_mut(out, count) };
    dev.with_port("xstats_get", |p| {
        let s: Snapshot = p.snapshot().since(&p.xstats_base);
        for (i, (o, (_, get))) in out.iter_mut().zip(XSTATS).enumerate() {
            o.id = i as u64;
            o.value = get(&s);
        }
        count as i32
    })
}

unsafe extern "C" fn xstats_get_names(
    dev: *mut rte_eth_dev,
    names: *mut ffi::rte_eth_xstat_name,
    size: u32,
) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    let count = XSTATS.len();
    if names.is_null() || (size as usize) < count {
        return count as i32;
    }
    // SAFETY: ethdev passes room for `size >= count` names.
    let names = unsafe { std::slice::from_raw_parts_mut(names, count) };
    dev.with_port("xstats_get_names", |_| {
        for (dst, (name, _)) in names.iter_mut().zip(XSTATS) {
            stats::write_name(dst, name);
        }
        count as i32
    })
}

unsafe extern "C" fn xstats_reset(dev: *mut rte_eth_dev) -> i32 {
    // SAFETY: ethdev passes a valid port of ours.
    let dev = unsafe { Dev::new(dev) };
    dev.with_port("xstats_reset", |p| {
        p.xstats_base = p.snapshot();
        0
    })
}

unsafe extern "C" fn rx_queue_setup(
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
        // SAFETY: ethdev passes a packet mbuf pool.
        let buf_space = unsafe { rxtx::pool_buf_space(pool) };
        if buf_space == 0 {
            vlog!(
                ERR,
                "{}: rx queue {qid}: mbuf pool has no data room",
                p.name
            );
            return -libc::EINVAL;
        }
        let Some(receiver) = p.receiver.take() else {
            vlog!(ERR, "{}: rx queue {qid}: link receiver in use", p.name);
            return -libc::EBUSY;
        };
        let shared = Arc::clone(&p.shared);
        // SAFETY: `pool` is a packet pool with `buf_space` bytes of room that
        // the application keeps while the queue exists, and the counter
        // lives in the port's data until the port is released, after the
        // queue.
        let mut q = unsafe {
            RxQueue::new(
                receiver,
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

unsafe extern "C" fn tx_queue_setup(
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
        let Some(sender) = p.sender.take() else {
            vlog!(ERR, "{}: tx queue {qid}: link sender in use", p.name);
            return -libc::EBUSY;
        };
        p.learn_geometry();
        let fast_free = (queue_offloads | dev.tx_offloads()) & ffi::TX_OFFLOAD_MBUF_FAST_FREE != 0;
        let mut q = TxQueue::new(sender, Arc::clone(&p.shared), fast_free);
        q.setup = QueueSetup {
            nb_desc,
            offloads: queue_offloads,
        };
        // SAFETY: a valid, empty slot (ethdev released the previous queue).
        unsafe { *dev.tx_slot(qid) = Box::into_raw(Box::new(q)).cast::<c_void>() };
        0
    })
}

/// Frees RX queue `qid` and gives the link's receiver back to the port.
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
            let old = unsafe { Box::from_raw(q.cast::<RxQueue>()) }.receiver;
            // An end of a reopened link the queue did not take is newer.
            p.receiver = Some(p.shared.rx_next.take().unwrap_or(old));
        }
        0
    });
}

/// Frees TX queue `qid` and gives the link's sender back to the port.
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
            let old = unsafe { Box::from_raw(q.cast::<TxQueue>()) }.sender;
            // An end of a reopened link the queue did not take is newer.
            p.sender = Some(p.shared.tx_next.take().unwrap_or(old));
        }
        0
    });
}
