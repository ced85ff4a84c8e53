//! One vecring port: probe, remove, and the per-port state behind
//! `rte_eth_dev_data::dev_private`.
//!
//! Ownership: `dev_private` (allocated by ethdev, freed by
//! `rte_eth_dev_release_port`) holds a [`PrivData`]: the MAC that
//! `data->mac_addrs` points to, and a pointer to the Rust-owned [`Port`]. The
//! port owns the [`Link`]; each queue owns the link's sending or receiving
//! end while it exists and gives it back when released.
//!
//! Stopping the port or setting its link down closes the link, so the peer
//! sees this end leave (EOF) and stops sending; starting the port or setting
//! the link up opens a new one (a master claims the link again: closing
//! removed its socket and lock). The new link's ends reach the queues
//! through [`crate::handoff`], since an lcore may be polling them. `dev_close` (also
//! reached from `remove`, i.e. `rte_vdev_uninit`) releases the queues, stops
//! link-state events, drops the link and frees the port; it may be called
//! from the application's link-state callback (see [`crate::lsc`]), and it
//! waits for nothing the peer controls.
//!
//! Control operations of one port are never concurrent (a DPDK rule for
//! applications), so they may take `&mut Port`. The data path touches only
//! its queue and the [`Shared`] counters; vecring's control thread touches
//! only the [`Lsc`] notifier, whose event thread touches only the link status
//! and the application's callbacks.

use crate::devargs::{format_mac, Devargs, Hugepages};
use crate::ffi::{self, rte_eth_dev, rte_vdev_device};
use crate::lsc::Lsc;
use crate::stats::{Shared, Snapshot, MAX_MACS};
use crate::vlog;
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use vecring_core::{
    Geometry, HugepagePolicy, Link, LinkCounters, LinkState, Receiver, Role, Sender,
};

/// What `rte_eth_dev_data::dev_private` holds.
#[repr(C)]
pub struct PrivData {
    /// The port's MACs (primary first, then `mac_addr_add`'s);
    /// `data->mac_addrs` points here until close.
    pub macs: [ffi::rte_ether_addr; MAX_MACS],
    /// The Rust state, or null once closed.
    pub port: *mut Port,
}

/// The Rust state of one port.
pub struct Port {
    /// vdev name (`eth_vecring0`), the prefix of every log line.
    pub name: String,
    /// The validated devargs.
    pub args: Devargs,
    /// The link while open (closed while the port is stopped or set
    /// down); its sender/receiver live in the queues or below.
    pub link: Option<Link>,
    /// Counters of the links this port closed, added to the open one's.
    pub closed_links: LinkCounters,
    /// A sending end while no TX queue holds one (of a closed link, while
    /// the link is closed).
    pub sender: Option<Sender>,
    /// A receiving end while no RX queue holds one.
    pub receiver: Option<Receiver>,
    /// Counters and filter shared with the data path.
    pub shared: Arc<Shared>,
    /// Link-state-change events (with their own thread).
    pub lsc: Lsc,
    /// The geometry this end asked for, or the default.
    pub geometry: Geometry,
    /// Baseline of `stats_reset`.
    pub stats_base: Snapshot,
    /// Baseline of `xstats_reset`.
    pub xstats_base: Snapshot,
}

impl Port {
    /// Tells the data path the ring's slot size: the current generation's
    /// if the link is up, else the one this end asked for (or the default).
    pub fn learn_geometry(&self) {
        let g = self
            .link
            .as_ref()
            .and_then(Link::region)
            .map(|r| r.geometry())
            .unwrap_or(self.geometry);
        self.shared.learn_slot_size(g.slot_size());
    }

    /// Data-path counters plus the link's counters, now.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::read(&self.shared);
        let c = self.link.as_ref().map(Link::counters).unwrap_or_default();
        let old = &self.closed_links;
        s.link_generation = if c.generation != 0 {
            c.generation
        } else {
            old.generation
        };
        s.link_ups = old.link_ups + c.link_ups;
        s.link_downs = old.link_downs + c.link_downs;
        s.peer_corruptions = old.peer_corruptions + c.peer_corruptions;
        s.rejected_peers = old.rejected_peers + c.rejected_peers;
        s.pinned_regions = c.pinned_regions;
        s.tx_lost_on_link_down = old.tx_lost_on_link_down + c.tx_lost_on_link_down;
        s
    }

    /// Whether the link is open and a peer attached.
    pub fn link_up(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.state().is_up())
    }

    /// Closes the link (if open): the peer sees this end leave, and the
    /// queues' ends report the link down from their next burst on. `why`
    /// goes into the log line.
    ///
    /// Frames the queue's sender left unread are counted in
    /// `tx_lost_on_link_down` only if the sender noticed the end of the
    /// generation before the link closed.
    pub fn close_link(&mut self, why: &str) {
        let Some(link) = self.link.take() else {
            return;
        };
        let c = link.counters();
        let old = &mut self.closed_links;
        old.generation = c.generation.max(old.generation);
        old.link_ups += c.link_ups;
        // Closing ends the generation in progress, if any.
        old.link_downs += c.link_ups;
        old.peer_corruptions += c.peer_corruptions;
        old.rejected_peers += c.rejected_peers;
        old.tx_lost_on_link_down += c.tx_lost_on_link_down;
        // An end of the new link not taken yet belongs to a link that no
        // longer exists either.
        drop(self.shared.tx_next.take());
        drop(self.shared.rx_next.take());
        drop(link);
        vlog!(INFO, "{}: link closed ({why})", self.name);
    }

    /// Opens the link again (if closed) and hands its ends to the queues,
    /// or keeps them for queues set up later.
    ///
    /// # Errors
    /// The link cannot be opened (logged): `-EIO`.
    pub fn reopen_link(&mut self) -> Result<(), i32> {
        if self.link.is_some() {
            return Ok(());
        }
        let geometry = requested_geometry(&self.args).map_err(|msg| {
            vlog!(ERR, "{}: {msg}", self.name);
            -libc::EINVAL
        })?;
        let link = open_link(&self.args, geometry, self.lsc.notifier()).map_err(|msg| {
            vlog!(ERR, "{}: {msg}", self.name);
            -libc::EIO
        })?;
        let (sender, receiver) = take_ends(&link, &self.args, &self.name)?;
        // `Some` here means no queue holds that end (see the fields).
        if self.sender.is_some() {
            self.sender = Some(sender);
        } else {
            self.shared.tx_next.put(sender);
        }
        if self.receiver.is_some() {
            self.receiver = Some(receiver);
        } else {
            self.shared.rx_next.put(receiver);
        }
        self.link = Some(link);
        vlog!(INFO, "{}: link reopened", self.name);
        Ok(())
    }
}

/// The link's two ends, the receiver with the hold-back of the devargs.
fn take_ends(link: &Link, args: &Devargs, name: &str) -> Result<(Sender, Receiver), i32> {
    let (sender, mut receiver) = match (link.sender(), link.receiver()) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(e), _) | (_, Err(e)) => {
            vlog!(ERR, "{name}: cannot take the link's ends: {e}");
            return Err(-libc::EIO);
        }
    };
    if args.hold_back {
        receiver.set_hold_back(Some(vecring_core::HoldBack::STREAMING));
    }
    Ok((sender, receiver))
}

/// Stores the link status in `dev->data->dev_link` the way
/// `rte_eth_linkstatus_set` does (one atomic 64-bit exchange). Returns
/// whether the up/down status changed.
///
/// # Safety
/// `dev` must be a valid, allocated port.
pub unsafe fn set_link_status(dev: *mut rte_eth_dev, up: bool) -> bool {
    let mut link = ffi::rte_eth_link {
        // Shared memory has no line rate: "unknown" when up, none when down.
        link_speed: if up { ffi::SPEED_NUM_UNKNOWN } else { 0 },
        ..Default::default()
    };
    link.set_link_duplex(1); // RTE_ETH_LINK_FULL_DUPLEX
                             // RTE_ETH_LINK_AUTONEG: the speed is whatever the two ends manage, the
                             // only setting `dev_configure` accepts (`link_speeds` 0, autoneg).
    link.set_link_autoneg(1);
    link.set_link_status(u16::from(up));
    const _: () = assert!(std::mem::size_of::<ffi::rte_eth_link>() == 8);
    const _: () = assert!(std::mem::align_of::<ffi::rte_eth_link>() == 8);
    // SAFETY: `rte_eth_link` is 8 bytes, 8-aligned (asserted above) and
    // plain data, so it can be read as a `u64`.
    let new: u64 = unsafe { std::mem::transmute(link) };
    // SAFETY: `dev->data` is valid for an allocated port; `dev_link` is
    // 8-aligned and every access to it is atomic (ethdev uses __atomic too).
    let old = unsafe {
        let p = std::ptr::addr_of_mut!((*(*dev).data).dev_link).cast::<u64>();
        AtomicU64::from_ptr(p).swap(new, Ordering::SeqCst)
    };
    // SAFETY: the reverse of the transmute above.
    let old: ffi::rte_eth_link = unsafe { std::mem::transmute(old) };
    old.link_status() != u16::from(up)
}

/// The port of an ethdev, if it is one of ours and not closed.
///
/// # Safety
/// `dev` must be a valid port whose `dev_private` is null or a [`PrivData`];
/// no other reference to the port may be live (control operations are not
/// concurrent).
pub unsafe fn port_of<'a>(dev: *mut rte_eth_dev) -> Option<&'a mut Port> {
    // SAFETY: per the caller's guarantees.
    unsafe {
        let priv_ = (*(*dev).data).dev_private.cast::<PrivData>();
        if priv_.is_null() {
            return None;
        }
        (*priv_).port.as_mut()
    }
}

/// Runs a control operation, turning a panic (a bug) into `err` and a log
/// line instead of unwinding into C.
pub fn guarded<T>(what: &str, err: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            vlog!(ERR, "{what}: internal error (panic), operation failed");
            err
        }
    }
}

fn cstr(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: DPDK hands out NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The vdev probe callback (`rte_vdev_driver::probe`).
///
/// # Safety
/// Called by the vdev bus with a valid device.
#[no_mangle]
pub unsafe extern "C" fn vecring_rs_probe(dev: *mut rte_vdev_device) -> i32 {
    // SAFETY: the bus passes a valid device.
    let name = cstr(unsafe { ffi::vecring_vdev_name(dev) });
    guarded(&name.clone(), -libc::EINVAL, || {
        // SAFETY: as above.
        unsafe { probe(dev, name) }
    })
}

unsafe fn probe(dev: *mut rte_vdev_device, name: String) -> i32 {
    crate::log::install();
    // SAFETY: plain query.
    if crate::secondary::is_secondary() {
        // SAFETY: the bus passes a valid device.
        return unsafe { crate::secondary::probe(dev, &name) };
    }
    crate::mp::serve();
    // SAFETY: the bus passes a valid device.
    let raw = cstr(unsafe { ffi::vecring_vdev_args(dev) });
    let args = match Devargs::parse(&raw) {
        Ok(a) => a,
        Err(e) => {
            vlog!(ERR, "{name}: {e}");
            return -libc::EINVAL;
        }
    };
    if args.zero_copy {
        vlog!(
            NOTICE,
            "{name}: zero-copy receive: frames of {} bytes or more are attached to the ring's slots (external mbufs) instead of copied",
            crate::zerocopy::ZC_MIN_LEN
        );
    }

    let geometry = match requested_geometry(&args) {
        Ok(g) => g,
        Err(msg) => {
            vlog!(ERR, "{name}: {msg}");
            return -libc::EINVAL;
        }
    };
    let lsc = match Lsc::start(&name) {
        Ok(l) => l,
        Err(e) => {
            vlog!(ERR, "{name}: cannot start the link-state event thread: {e}");
            return -libc::ENOMEM;
        }
    };
    let link = match open_link(&args, geometry, lsc.notifier()) {
        Ok(l) => l,
        Err(msg) => {
            vlog!(ERR, "{name}: {msg}");
            return -libc::EIO;
        }
    };
    let (sender, receiver) = match take_ends(&link, &args, &name) {
        Ok(ends) => ends,
        Err(e) => return e,
    };

    if args.hold_back {
        let hold = vecring_core::HoldBack::STREAMING;
        vlog!(
            NOTICE,
            "{name}: rx hold-back: 2 to {} ready one-slot frames wait up to {} ns while the peer streams",
            hold.below_slots - 1,
            hold.wait.as_nanos()
        );
    }

    // SAFETY: a valid vdev; the size is that of `PrivData`, which ethdev
    // zero-fills.
    let eth = unsafe { ffi::vecring_eth_vdev_allocate(dev, std::mem::size_of::<PrivData>()) };
    if eth.is_null() {
        vlog!(
            ERR,
            "{name}: cannot allocate an ethdev port (name in use, or out of memory)"
        );
        return -libc::ENOMEM;
    }

    let mac = args.mac();
    let shared = Arc::new(Shared::default());
    shared.macs.set(0, Some(&mac));
    shared.set_filter(false, false);
    let socket = args.socket;
    let role = args.role_name();
    let port = Box::new(Port {
        name: name.clone(),
        args,
        link: Some(link),
        closed_links: LinkCounters::default(),
        sender: Some(sender),
        receiver: Some(receiver),
        shared,
        lsc,
        geometry: geometry.unwrap_or_default(),
        stats_base: Snapshot::default(),
        xstats_base: Snapshot::default(),
    });
    port.learn_geometry();
    let desc = format!("{role} of link {}/{}", port.args.domain, port.args.link);

    // SAFETY: `eth` was just allocated for us; its `data` and `dev_private`
    // (a zeroed `PrivData`) are valid and not yet visible to anyone else.
    unsafe {
        let data = (*eth).data;
        let priv_ = (*data).dev_private.cast::<PrivData>();
        (*priv_).macs[0].addr_bytes = mac;
        (*priv_).port = Box::into_raw(port);
        (*data).mac_addrs = std::ptr::addr_of_mut!((*priv_).macs).cast();
        (*data).dev_flags |= ffi::DEV_INTR_LSC | ffi::DEV_AUTOFILL_QUEUE_XSTATS;
        (*data).numa_node = match socket {
            Some(n) => n as i32,
            None => ffi::rte_socket_id() as i32,
        };
        (*eth).dev_ops = &crate::ops::OPS;
        (*eth).rx_pkt_burst = crate::rxtx::rx_burst_fn(false, false);
        (*eth).tx_pkt_burst = crate::rxtx::tx_burst_fn(false);
    }
    // SAFETY: `priv_->port` was set above and nothing else uses it until
    // probing finishes.
    let up = unsafe { port_of(eth) }.is_some_and(|p| {
        // Link-state changes reach the port from now on; read the state
        // after arming so that a change in between is not lost.
        // SAFETY: `eth` is allocated; `dev_close` stops the events before
        // the port is released.
        unsafe { p.lsc.attach(eth) };
        p.link_up()
    });
    // SAFETY: `eth` is allocated and set up.
    unsafe { set_link_status(eth, up) };
    // SAFETY: the port is fully set up.
    unsafe { ffi::rte_eth_dev_probing_finish(eth) };
    // SAFETY: `data` is valid.
    let port_id = unsafe { (*(*eth).data).port_id };
    vlog!(
        NOTICE,
        "{name}: port {port_id}, {desc}, mac {}, link {}",
        format_mac(&mac),
        if up { "up" } else { "down (waiting for peer)" }
    );
    0
}

/// The geometry `slots`/`slot_size` ask for, if either is given.
fn requested_geometry(args: &Devargs) -> Result<Option<Geometry>, String> {
    if args.slots.is_none() && args.slot_size.is_none() {
        return Ok(None);
    }
    let d = Geometry::default();
    Geometry::new(
        args.slots.unwrap_or(d.slot_count()),
        args.slot_size.unwrap_or(d.slot_size()),
    )
    .map(Some)
    .map_err(|e| format!("invalid ring geometry (keys 'slots', 'slot_size'): {e}"))
}

fn open_link(
    args: &Devargs,
    geometry: Option<Geometry>,
    on_state: impl Fn(LinkState) + Send + Sync + 'static,
) -> Result<Link, String> {
    let role = if args.master {
        Role::Master
    } else {
        Role::Slave
    };
    let mut b = Link::builder(&args.domain, &args.link).role(role);
    if let Some(node) = args.socket {
        b = b.numa_node(node);
    }
    if let Some(g) = geometry {
        b = b.geometry(g);
    }
    if let Some(dir) = &args.run_dir {
        b = b.run_dir(dir.clone());
    }
    if let Some((uid, gid)) = args.owner {
        b = b.owner(uid, gid);
    }
    for &uid in &args.allow_uids {
        b = b.allow_uid(uid);
    }
    for &uid in &args.master_uids {
        b = b.master_uid(uid);
    }
    if let Some(mode) = args.socket_mode {
        b = b.socket_mode(mode);
    }
    b = b.hugepages(match args.hugepages {
        Hugepages::Prefer => HugepagePolicy::Prefer,
        Hugepages::Require => HugepagePolicy::Require,
        Hugepages::Never => HugepagePolicy::Never,
    });
    b = b.on_state_change(on_state);
    b.open().map_err(|e| {
        format!(
            "cannot open link '{}/{}' as {}: {e}",
            args.domain,
            args.link,
            args.role_name()
        )
    })
}

/// Releases everything the port holds: queues, link-state events, the link
/// and the Rust state. Idempotent.
///
/// # Safety
/// `dev` must be a valid port of this driver, in the primary process.
pub unsafe fn close(dev: *mut rte_eth_dev) {
    // SAFETY: per the caller; control operations are not concurrent.
    let data = unsafe { (*dev).data };
    // SAFETY: as above.
    let priv_ = unsafe { (*data).dev_private.cast::<PrivData>() };
    // SAFETY: as above.
    if priv_.is_null() || unsafe { (*priv_).port.is_null() } {
        return;
    }
    // SAFETY: as above.
    unsafe {
        for q in 0..(*data).nb_rx_queues {
            crate::ops::rx_queue_release(dev, q);
        }
        for q in 0..(*data).nb_tx_queues {
            crate::ops::tx_queue_release(dev, q);
        }
    }
    // SAFETY: `port` came from `Box::into_raw` at probe and is cleared here,
    // so it is freed once.
    let mut port =
        unsafe { Box::from_raw(std::mem::replace(&mut (*priv_).port, std::ptr::null_mut())) };
    // No more link-state events into this port from now on (from a
    // link-state callback: once it returns).
    port.lsc.stop();
    let name = port.name.clone();
    drop(port);
    // SAFETY: `mac_addrs` points into `dev_private`; ethdev would `rte_free`
    // it at release, so it must not point there any more.
    unsafe { (*data).mac_addrs = std::ptr::null_mut() };
    vlog!(INFO, "{name}: closed");
}

/// The vdev remove callback (`rte_vdev_driver::remove`, `rte_vdev_uninit`).
///
/// # Safety
/// Called by the vdev bus with a valid device.
#[no_mangle]
pub unsafe extern "C" fn vecring_rs_remove(dev: *mut rte_vdev_device) -> i32 {
    if dev.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: the bus passes a valid device.
    let name_ptr = unsafe { ffi::vecring_vdev_name(dev) };
    let name = cstr(name_ptr);
    guarded(&name, -libc::EIO, || {
        if crate::secondary::is_secondary() {
            // SAFETY: a NUL-terminated name.
            return unsafe { crate::secondary::remove(name_ptr) };
        }
        // SAFETY: a NUL-terminated name.
        let eth = unsafe { ffi::rte_eth_dev_allocated(name_ptr) };
        if eth.is_null() {
            return 0; // already closed and released by the application
        }
        // SAFETY: an allocated port of this driver.
        unsafe {
            close(eth);
            ffi::rte_eth_dev_release_port(eth);
        }
        0
    })
}
