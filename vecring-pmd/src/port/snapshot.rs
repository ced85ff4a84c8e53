//! The counters `stats_get` and `xstats_get` report, read at one moment
//! ([`Snapshot`]): every queue's data-path counters
//! ([`crate::datapath::shared`]) and the link's, with the port's totals
//! as their sums and resets as baselines.

use crate::datapath::shared::Shared;
use crate::datapath::shared::{RxCounters, TxCounters};
use crate::sys::eth_stats::EthStats;
use crate::sys::ffi::QUEUE_STAT_CNTRS;
use vecring_core::MAX_QUEUES;

/// One RX queue's counters ([`RxCounters`]) as read at one moment, or
/// their sum over the queues.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RxSnap {
    /// [`RxCounters::packets`].
    pub packets: u64,
    /// [`RxCounters::bytes`].
    pub bytes: u64,
    /// [`RxCounters::too_large`].
    pub too_large: u64,
    /// [`RxCounters::filtered`].
    pub filtered: u64,
    /// [`RxCounters::scatter_nombuf`].
    pub scatter_nombuf: u64,
    /// [`RxCounters::zero_copy`].
    pub zero_copy: u64,
    /// [`RxCounters::held_back`].
    pub held_back: u64,
}

impl RxSnap {
    fn read(c: &RxCounters) -> Self {
        RxSnap {
            packets: c.packets.get(),
            bytes: c.bytes.get(),
            too_large: c.too_large.get(),
            filtered: c.filtered.get(),
            scatter_nombuf: c.scatter_nombuf.get(),
            zero_copy: c.zero_copy.get(),
            held_back: c.held_back.get(),
        }
    }

    /// Counter by counter, `f` of `self`'s and `o`'s.
    fn zip(&self, o: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        RxSnap {
            packets: f(self.packets, o.packets),
            bytes: f(self.bytes, o.bytes),
            too_large: f(self.too_large, o.too_large),
            filtered: f(self.filtered, o.filtered),
            scatter_nombuf: f(self.scatter_nombuf, o.scatter_nombuf),
            zero_copy: f(self.zero_copy, o.zero_copy),
            held_back: f(self.held_back, o.held_back),
        }
    }

    /// Receive errors as ethdev's `ierrors` (and `q_errors`) count them:
    /// frames the driver took off the ring and dropped for a fault
    /// (filtered frames are not errors, as on a NIC).
    pub fn errors(&self) -> u64 {
        self.too_large + self.scatter_nombuf
    }
}

/// One TX queue's counters ([`TxCounters`]) as read at one moment, or
/// their sum over the queues.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TxSnap {
    /// [`TxCounters::packets`].
    pub packets: u64,
    /// [`TxCounters::bytes`].
    pub bytes: u64,
    /// [`TxCounters::too_large`].
    pub too_large: u64,
    /// [`TxCounters::ring_full`].
    pub ring_full: u64,
    /// [`TxCounters::link_down`].
    pub link_down: u64,
    /// [`TxCounters::peer_queue_absent`].
    pub peer_queue_absent: u64,
}

impl TxSnap {
    fn read(c: &TxCounters) -> Self {
        TxSnap {
            packets: c.packets.get(),
            bytes: c.bytes.get(),
            too_large: c.too_large.get(),
            ring_full: c.ring_full.get(),
            link_down: c.link_down.get(),
            peer_queue_absent: c.peer_queue_absent.get(),
        }
    }

    /// Counter by counter, `f` of `self`'s and `o`'s.
    fn zip(&self, o: &Self, f: impl Fn(u64, u64) -> u64) -> Self {
        TxSnap {
            packets: f(self.packets, o.packets),
            bytes: f(self.bytes, o.bytes),
            too_large: f(self.too_large, o.too_large),
            ring_full: f(self.ring_full, o.ring_full),
            link_down: f(self.link_down, o.link_down),
            peer_queue_absent: f(self.peer_queue_absent, o.peer_queue_absent),
        }
    }

    /// Transmit errors as ethdev's `oerrors` counts them: frames the driver
    /// accepted from the application and dropped because the link can
    /// never carry them. Frames dropped for a queue the peer does not read
    /// ([`TxSnap::peer_queue_absent`]) are not errors of this side, as a
    /// NIC does not count the frames its peer finds no room for: they have
    /// xstats of their own.
    pub fn errors(&self) -> u64 {
        self.too_large
    }
}

/// The counters `stats_get`/`xstats_get` report, read at one moment: every
/// queue's data-path counters and the link's.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Per RX queue.
    pub rxq: [RxSnap; MAX_QUEUES as usize],
    /// Per TX queue.
    pub txq: [TxSnap; MAX_QUEUES as usize],
    /// Link generation (a state, never reset).
    pub link_generation: u64,
    /// Times the link came up.
    pub link_ups: u64,
    /// Times the link went down.
    pub link_downs: u64,
    /// Corruptions of the shared memory by the peer detected.
    pub peer_corruptions: u64,
    /// Peers the master refused (credentials, second slave, handshake).
    pub rejected_peers: u64,
    /// Regions of the link that departed peers still hold (a state, never
    /// reset).
    pub pinned_regions: u64,
    /// Frames sent but still unread when their generation ended (the peer
    /// left): counted in `opackets` and lost.
    pub tx_lost_on_link_down: u64,
}

impl Snapshot {
    /// Reads the data-path counters of `shared`; the link fields are left 0
    /// for the caller to fill.
    pub fn read(shared: &Shared) -> Self {
        Snapshot {
            rxq: std::array::from_fn(|q| RxSnap::read(&shared.rx[q])),
            txq: std::array::from_fn(|q| TxSnap::read(&shared.tx[q])),
            ..Snapshot::default()
        }
    }

    /// The port's receive totals: the sum over every queue (a queue no
    /// longer configured still counts what it did).
    pub fn rx(&self) -> RxSnap {
        self.rxq
            .iter()
            .fold(RxSnap::default(), |a, q| a.zip(q, u64::wrapping_add))
    }

    /// The port's transmit totals, as [`Snapshot::rx`].
    pub fn tx(&self) -> TxSnap {
        self.txq
            .iter()
            .fold(TxSnap::default(), |a, q| a.zip(q, u64::wrapping_add))
    }

    /// `self - base` counter by counter, keeping the states
    /// (`link_generation`, `pinned_regions`) as they are.
    pub fn since(&self, base: &Snapshot) -> Snapshot {
        let d = |a: u64, b: u64| a.wrapping_sub(b);
        Snapshot {
            rxq: std::array::from_fn(|q| self.rxq[q].zip(&base.rxq[q], d)),
            txq: std::array::from_fn(|q| self.txq[q].zip(&base.txq[q], d)),
            link_generation: self.link_generation,
            link_ups: d(self.link_ups, base.link_ups),
            link_downs: d(self.link_downs, base.link_downs),
            peer_corruptions: d(self.peer_corruptions, base.peer_corruptions),
            rejected_peers: d(self.rejected_peers, base.rejected_peers),
            pinned_regions: self.pinned_regions,
            tx_lost_on_link_down: d(self.tx_lost_on_link_down, base.tx_lost_on_link_down),
        }
    }
}

impl Snapshot {
    /// These counters as `stats_get` reports them, for a port with `nb_rx`
    /// and `nb_tx` configured queues (the `q_*` entries of the others stay
    /// 0).
    pub fn eth_stats(&self, nb_rx: u16, nb_tx: u16) -> EthStats {
        let s = self;
        let (rx, tx) = (s.rx(), s.tx());
        let mut e = EthStats {
            ipackets: rx.packets,
            ibytes: rx.bytes,
            ierrors: rx.errors(),
            opackets: tx.packets,
            obytes: tx.bytes,
            oerrors: tx.errors(),
            // Nothing is lost before the driver sees it: frames wait in
            // the ring, and the peer counts its own ring-full refusals.
            imissed: 0,
            ..EthStats::default()
        };
        for (q, c) in s
            .rxq
            .iter()
            .enumerate()
            .take(usize::from(nb_rx).min(QUEUE_STAT_CNTRS))
        {
            e.q_ipackets[q] = c.packets;
            e.q_ibytes[q] = c.bytes;
            e.q_errors[q] = c.errors();
        }
        for (q, c) in s
            .txq
            .iter()
            .enumerate()
            .take(usize::from(nb_tx).min(QUEUE_STAT_CNTRS))
        {
            e.q_opackets[q] = c.packets;
            e.q_obytes[q] = c.bytes;
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_is_a_baseline() {
        let s = Shared::default();
        s.rx[0].packets.add(5);
        s.tx[0].too_large.add(2);
        let mut base = Snapshot::read(&s);
        base.link_generation = 3;
        s.rx[0].packets.add(1);
        let mut now = Snapshot::read(&s);
        now.link_generation = 4;
        let d = now.since(&base);
        assert_eq!(d.rx().packets, 1);
        assert_eq!(d.tx().too_large, 0);
        assert_eq!(d.link_generation, 4, "generation is a state, not reset");
        assert_eq!(now.tx().errors(), 2);
    }

    /// Each queue's counters are its own; the port's totals are their sums,
    /// and errors count the drops of the right kinds.
    #[test]
    fn per_queue_counters_and_totals() {
        let s = Shared::default();
        for q in 0..usize::from(MAX_QUEUES) {
            let k = q as u64 + 1;
            s.rx[q].packets.add(k);
            s.rx[q].bytes.add(100 * k);
            s.rx[q].too_large.add(k);
            s.rx[q].filtered.add(1);
            s.tx[q].packets.add(2 * k);
            s.tx[q].peer_queue_absent.add(k);
            s.tx[q].ring_full.add(7);
        }
        s.rx[3].scatter_nombuf.add(1000);
        let snap = Snapshot::read(&s);
        assert_eq!(snap.rxq[3].packets, 4);
        assert_eq!(snap.rxq[3].errors(), 4 + 1000);
        assert_eq!(snap.txq[15].packets, 32);
        let n = u64::from(MAX_QUEUES);
        let sum = n * (n + 1) / 2;
        assert_eq!(snap.rx().packets, sum);
        assert_eq!(snap.rx().bytes, 100 * sum);
        assert_eq!(
            snap.rx().errors(),
            sum + 1000,
            "filtered frames are no errors"
        );
        assert_eq!(snap.tx().packets, 2 * sum);
        assert_eq!(snap.tx().errors(), 0, "absent-queue drops are no errors");
        assert_eq!(snap.tx().ring_full, 7 * n);
        let base = snap;
        s.tx[5].peer_queue_absent.add(3);
        let d = Snapshot::read(&s).since(&base);
        assert_eq!(d.txq[5].peer_queue_absent, 3);
        assert_eq!(d.tx().peer_queue_absent, 3);
        assert_eq!(d.rx(), RxSnap::default());
    }
}
