//! The state of one port that both the data path and the control path
//! see ([`Shared`]): the queues' counters, the receive filter's mode and
//! addresses, the link's up flag, the ends of a reopened link on their way
//! to the queues, and the descriptors RX queues sleep on in Rx interrupt
//! mode.

use super::counters::{PerQueue, RxCounters, TxCounters};
use super::filter_config::{mode, AddrTable, MAX_MACS, MAX_MC_ADDRS};
use super::handoff::Handoff;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;
use vecring_core::MAX_QUEUES;
use vecring_core::{Receiver, Sender};

/// The descriptor an application sleeps on for one RX queue in Rx
/// interrupt mode (see [`crate::ethdev::intr`]), kept from the first start
/// with Rx interrupts until the port closes: the core's epoll set with a
/// kick, holding the current receiver's wait set.
pub type QueueIntr = vecring_core::internal::event_set::EventSet;

/// State of one port that both the data path and the control path see.
#[derive(Debug)]
pub struct Shared {
    /// Receive counters, indexed by RX queue.
    pub rx: PerQueue<RxCounters>,
    /// Transmit counters, indexed by TX queue.
    pub tx: PerQueue<TxCounters>,
    /// Whether the link has a session (a peer): stored by vecring's
    /// control thread on every change of the link's state (see
    /// `port::link::open_link`) and cleared when the port closes its
    /// link; read by a TX burst whose sender finds no ring, to tell a link
    /// that is down from a queue the session lacks. Relaxed: a hint for
    /// counting, ordered with nothing.
    pub link_up: AtomicBool,
    /// One of the receive filter's [`mode`]s.
    pub filter: AtomicU8,
    /// The port's unicast MACs: the primary at 0, `mac_addr_add`'s after.
    pub macs: AddrTable<MAX_MACS>,
    /// The multicast groups of `set_mc_addr_list`.
    pub mc_addrs: AddrTable<MAX_MC_ADDRS>,
    /// Indexed by TX queue: the queue's sending end of a reopened link, for
    /// the queue to take; `None` inside when the new link has no such queue.
    pub tx_next: [Handoff<Option<Sender>>; MAX_QUEUES as usize],
    /// Indexed by RX queue: as `tx_next`, for receiving ends.
    pub rx_next: [Handoff<Option<Receiver>>; MAX_QUEUES as usize],
    /// Indexed by RX queue: the descriptor an application sleeps on in Rx
    /// interrupt mode, made at the first start with `intr_conf.rxq`.
    pub rx_intr: [OnceLock<QueueIntr>; MAX_QUEUES as usize],
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            rx: std::array::from_fn(|_| CachePadded::default()),
            tx: std::array::from_fn(|_| CachePadded::default()),
            link_up: AtomicBool::new(false),
            filter: AtomicU8::default(),
            macs: AddrTable::default(),
            mc_addrs: AddrTable::default(),
            tx_next: std::array::from_fn(|_| Handoff::default()),
            rx_next: std::array::from_fn(|_| Handoff::default()),
            rx_intr: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Shared {
    /// Sets the filter mode from ethdev's promiscuous/all-multicast flags.
    pub fn set_filter(&self, promiscuous: bool, all_multicast: bool) {
        let m = if promiscuous {
            mode::PROMISCUOUS
        } else if all_multicast {
            mode::ALL_MULTICAST
        } else {
            mode::UNICAST
        };
        self.filter.store(m, Ordering::Relaxed);
    }

    /// Wakes whoever sleeps on RX queue `q`'s descriptor (its next enable
    /// looks again).
    pub fn wake(&self, q: usize) {
        if let Some(i) = self.rx_intr.get(q).and_then(|i| i.get()) {
            i.kick();
        }
    }

    /// Wakes every sleeper of the port (port stop, link closed, close).
    pub fn wake_all(&self) {
        for q in 0..usize::from(MAX_QUEUES) {
            self.wake(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_filter_maps_flags() {
        let s = Shared::default();
        s.set_filter(true, false);
        assert_eq!(s.filter.load(Ordering::Relaxed), mode::PROMISCUOUS);
        s.set_filter(false, true);
        assert_eq!(s.filter.load(Ordering::Relaxed), mode::ALL_MULTICAST);
        s.set_filter(false, false);
        assert_eq!(s.filter.load(Ordering::Relaxed), mode::UNICAST);
    }

    /// Two queues' counters never share a cache line (each has its own
    /// writing lcore).
    #[test]
    fn queue_counters_on_lines_of_their_own() {
        let s = Shared::default();
        let a = std::ptr::addr_of!(s.tx[0]) as usize;
        let b = std::ptr::addr_of!(s.tx[1]) as usize;
        assert!(b - a >= 128 && a % 64 == 0);
        assert!(std::mem::size_of::<TxCounters>() <= b - a);
    }
}
