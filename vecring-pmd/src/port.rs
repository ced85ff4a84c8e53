//! One vecring port: the per-port state behind
//! `rte_eth_dev_data::dev_private`, created by [`crate::probe`] and freed by
//! [`crate::close`].
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

use crate::devargs::Devargs;
use crate::ffi::{self, rte_eth_dev};
use crate::lsc::Lsc;
use crate::stats::{Shared, Snapshot, MAX_MACS};
use crate::vlog;
use std::sync::Arc;
use vecring_core::{Geometry, Link, LinkCounters, LinkState, Receiver, Sender};

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
    /// Baseline of `stats_reset`.
    pub stats_base: Snapshot,
    /// Baseline of `xstats_reset`.
    pub xstats_base: Snapshot,
}

impl Port {
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
pub(crate) fn take_ends(
    link: &Link,
    args: &Devargs,
    name: &str,
) -> Result<(Sender, Receiver), i32> {
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

/// The geometry `slots`/`slot_size` ask for, if either is given.
pub(crate) fn requested_geometry(args: &Devargs) -> Result<Option<Geometry>, String> {
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

pub(crate) fn open_link(
    args: &Devargs,
    geometry: Option<Geometry>,
    on_state: impl Fn(LinkState) + Send + Sync + 'static,
) -> Result<Link, String> {
    let mut b = Link::builder(&args.domain, &args.link).master(args.master);
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
    b = b.hugepages(args.hugepages);
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
