//! The port itself: [`Port`], the Rust state of one port, and
//! [`PrivData`], what `rte_eth_dev_data::dev_private` holds (see
//! [`crate::port`] for ownership and threads).

use super::intr_handle::IntrHandle;
use super::link::{open_link, requested_geometry};
use super::lsc::Lsc;
use super::queue_set::QueueSet;
use super::snapshot::Snapshot;
use crate::datapath::filter_config::MAX_MACS;
use crate::datapath::shared::Shared;
use crate::devargs::Devargs;
use crate::sys::ffi::{self, rte_eth_dev};
use crate::sys::log::vlog;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vecring_core::MAX_QUEUES;
use vecring_core::{Link, LinkCounters, LinkError, Receiver, Sender};

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
    /// The TX queues set up (bit `q` for queue `q`): each holds its end of
    /// the link, and a reopened link hands each of them a new one.
    pub tx_queues: QueueSet,
    /// The RX queues set up, as `tx_queues`.
    pub rx_queues: QueueSet,
    /// The queue pair count of the last session seen (slave), kept across
    /// the link's reopening.
    pub known_queues: Option<u16>,
    /// Whether the port said once that its queue limit is a guess.
    pub told_guess: bool,
    /// Counters and filter shared with the data path.
    pub shared: Arc<Shared>,
    /// Link-state-change events (with their own thread).
    pub lsc: Lsc,
    /// Baseline of `stats_reset`.
    pub stats_base: Snapshot,
    /// Baseline of `xstats_reset`.
    pub xstats_base: Snapshot,
    /// The Rx interrupt handle (`dev->intr_handle`), from the first start
    /// with `intr_conf.rxq` until close.
    pub intr: Option<IntrHandle>,
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

    /// The port's queue limit per direction (`max_rx_queues`,
    /// `max_tx_queues`), and whether it is the link's count (`false`: a
    /// slave that has not met its master yet, which allows the most a link
    /// carries).
    ///
    /// A master's count is `queues=` (1 by default). A slave's is
    /// `queues=` if given (the master must offer exactly that), else the
    /// count of the link's current or last session.
    pub fn link_queues(&mut self) -> (u16, bool) {
        if self.args.master {
            return (self.args.queues.unwrap_or(1), true);
        }
        if let Some(n) = self.args.queues {
            return (n, true);
        }
        if let Some(n) = self.link.as_ref().and_then(Link::queues) {
            self.known_queues = Some(n);
        }
        match self.known_queues {
            Some(n) => (n, true),
            None => (MAX_QUEUES, false),
        }
    }

    /// The link's receiving end of queue `q` for an RX queue, with the
    /// devargs' hold-back; `None` while the link is closed or lacks the
    /// queue (the RX queue then receives nothing).
    ///
    /// # Errors
    /// The end cannot be taken for another reason (logged): `-EIO`.
    pub fn take_receiver(&self, q: u16) -> Result<Option<Receiver>, i32> {
        let r = self.take_end(q, "receiver", Link::receiver_on)?;
        Ok(r.map(|mut r| {
            if self.args.hold_back {
                r.set_hold_back(Some(vecring_core::HoldBack::STREAMING));
            }
            r
        }))
    }

    /// The link's sending end of queue `q` for a TX queue, as
    /// [`Port::take_receiver`] (a TX queue without one drops and counts
    /// what it is given).
    ///
    /// # Errors
    /// As [`Port::take_receiver`].
    pub fn take_sender(&self, q: u16) -> Result<Option<Sender>, i32> {
        self.take_end(q, "sender", Link::sender_on)
    }

    fn take_end<T>(
        &self,
        q: u16,
        what: &str,
        take: impl FnOnce(&Link, u16) -> Result<T, LinkError>,
    ) -> Result<Option<T>, i32> {
        let Some(link) = &self.link else {
            return Ok(None);
        };
        match take(link, q) {
            Ok(end) => Ok(Some(end)),
            Err(LinkError::NoSuchQueue { queues, .. }) => {
                vlog!(
                    NOTICE,
                    "{}: queue {q}: the link has {queues} queue pairs; this queue carries nothing",
                    self.name
                );
                Ok(None)
            }
            Err(e) => {
                vlog!(
                    ERR,
                    "{}: queue {q}: cannot take the link's {what}: {e}",
                    self.name
                );
                Err(-libc::EIO)
            }
        }
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
        for q in 0..usize::from(MAX_QUEUES) {
            drop(self.shared.tx_next[q].take());
            drop(self.shared.rx_next[q].take());
        }
        drop(link);
        // After the drop: its control thread, the only other writer, has
        // ended.
        self.shared.link_up.store(false, Ordering::Relaxed);
        // Sleeping queues wake and see the link down (the closed link
        // also pokes its receivers).
        self.shared.wake_all();
        vlog!(INFO, "{}: link closed ({why})", self.name);
    }

    /// Opens the link again (if closed) and hands its ends to the queues
    /// set up (queues set up later take theirs at setup).
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
        let link = open_link(&self.args, geometry, &self.shared, &self.lsc).map_err(|msg| {
            vlog!(ERR, "{}: {msg}", self.name);
            -libc::EIO
        })?;
        self.link = Some(link);
        // Every end first, then the hand-offs: a failure leaves the queues
        // with the ends they had (of the closed link: link down).
        let ends = self
            .rx_queues
            .iter()
            .map(|q| Ok((q, self.take_receiver(q)?)));
        let rx: Result<Vec<_>, i32> = ends.collect();
        let ends = self.tx_queues.iter().map(|q| Ok((q, self.take_sender(q)?)));
        let tx: Result<Vec<_>, i32> = ends.collect();
        let (rx, tx) = match (rx, tx) {
            (Ok(rx), Ok(tx)) => (rx, tx),
            (Err(e), _) | (_, Err(e)) => {
                self.link = None;
                return Err(e);
            }
        };
        for (q, end) in rx {
            self.shared.rx_next[usize::from(q)].put(end);
            // A queue sleeping in interrupt mode takes it at its next
            // enable.
            self.shared.wake(usize::from(q));
        }
        for (q, end) in tx {
            self.shared.tx_next[usize::from(q)].put(end);
        }
        vlog!(INFO, "{}: link reopened", self.name);
        Ok(())
    }
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
