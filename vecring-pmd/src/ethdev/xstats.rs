//! The driver's extended statistics: the port's drop totals, each
//! configured queue's drop counters, and the link's counters.
//!
//! The list depends on the configured queue counts (`nb_rx_queues`,
//! `nb_tx_queues`, in the port's shared `rte_eth_dev_data`), so
//! `xstats_get_names` and `xstats_get` both build it with [`list`] from the
//! same two numbers and agree on every name and its index, in the primary
//! and in a secondary process alike. Order:
//!
//! 1. port totals of the drops (`rx_too_large_drops`, ...,
//!    `tx_peer_queue_absent_drops`), summed over every queue;
//! 2. port totals of the data path's ways: `rx_zero_copy_frames` (frames
//!    delivered attached to their slots), `rx_held_back_bursts` (bursts
//!    that returned nothing because the hold-back held ready frames back);
//! 3. per RX queue `q`: `rx_q{q}_too_large_drops`, `rx_q{q}_filtered_drops`,
//!    `rx_q{q}_scatter_nombuf_drops`, `rx_q{q}_zero_copy_frames`,
//!    `rx_q{q}_held_back_bursts`;
//! 4. per TX queue `q`: `tx_q{q}_too_large_drops`, `tx_q{q}_ring_full`,
//!    `tx_q{q}_link_down`, `tx_q{q}_peer_queue_absent_drops`;
//! 5. the link's counters, `link_generation` to `pinned_regions`.
//!
//! ethdev adds the per-queue packet and byte counts itself (`rx_q0_packets`,
//! ...: the port sets `RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS`), from
//! `stats_get`'s `q_*` arrays.

use crate::port::snapshot::{RxSnap, Snapshot, TxSnap};
use crate::sys::ffi;
use vecring_core::MAX_QUEUES;

/// How an extended statistic is read from a [`Snapshot`].
#[derive(Clone, Copy)]
enum Source {
    /// A port-wide value.
    Port(fn(&Snapshot) -> u64),
    /// A counter of RX queue `.0`.
    Rx(usize, fn(&RxSnap) -> u64),
    /// A counter of TX queue `.0`.
    Tx(usize, fn(&TxSnap) -> u64),
}

/// One extended statistic: its name and where its value comes from.
#[derive(Clone)]
pub struct Xstat {
    /// The name applications see (shorter than `RTE_ETH_XSTATS_NAME_SIZE`).
    pub name: String,
    source: Source,
}

impl Xstat {
    /// Its value in `s`.
    pub fn value(&self, s: &Snapshot) -> u64 {
        match self.source {
            Source::Port(f) => f(s),
            Source::Rx(q, f) => f(&s.rxq[q]),
            Source::Tx(q, f) => f(&s.txq[q]),
        }
    }
}

/// A named counter of `T` (a whole snapshot or one queue's).
type Named<T> = (&'static str, fn(&T) -> u64);

/// The port's drop totals (each the sum over its queues).
const PORT_DROPS: &[Named<Snapshot>] = &[
    ("rx_too_large_drops", |s| s.rx().too_large),
    ("rx_filtered_drops", |s| s.rx().filtered),
    ("rx_scatter_nombuf_drops", |s| s.rx().scatter_nombuf),
    ("tx_too_large_drops", |s| s.tx().too_large),
    ("tx_ring_full", |s| s.tx().ring_full),
    ("tx_link_down", |s| s.tx().link_down),
    ("tx_lost_on_link_down", |s| s.tx_lost_on_link_down),
    ("tx_peer_queue_absent_drops", |s| s.tx().peer_queue_absent),
];

/// The data path's ways, port totals.
const PORT_PATHS: &[Named<Snapshot>] = &[
    ("rx_zero_copy_frames", |s| s.rx().zero_copy),
    ("rx_held_back_bursts", |s| s.rx().held_back),
];

/// Per RX queue `q`: `rx_q{q}_` and these.
const RX_QUEUE: &[Named<RxSnap>] = &[
    ("too_large_drops", |q| q.too_large),
    ("filtered_drops", |q| q.filtered),
    ("scatter_nombuf_drops", |q| q.scatter_nombuf),
    ("zero_copy_frames", |q| q.zero_copy),
    ("held_back_bursts", |q| q.held_back),
];

/// Per TX queue `q`: `tx_q{q}_` and these.
const TX_QUEUE: &[Named<TxSnap>] = &[
    ("too_large_drops", |q| q.too_large),
    ("ring_full", |q| q.ring_full),
    ("link_down", |q| q.link_down),
    ("peer_queue_absent_drops", |q| q.peer_queue_absent),
];

/// The link's counters, last.
const PORT_LINK: &[Named<Snapshot>] = &[
    ("link_generation", |s| s.link_generation),
    ("link_up_count", |s| s.link_ups),
    ("link_down_count", |s| s.link_downs),
    ("peer_corruptions", |s| s.peer_corruptions),
    ("rejected_peers", |s| s.rejected_peers),
    ("pinned_regions", |s| s.pinned_regions),
];

/// Queues of one direction that have per-queue xstats: the configured
/// ones, at most [`MAX_QUEUES`] (a port offers no more).
fn queues(nb: u16) -> usize {
    usize::from(nb.min(MAX_QUEUES))
}

/// How many extended statistics a port with `nb_rx` RX and `nb_tx` TX
/// queues has (the length of [`list`]).
pub fn count(nb_rx: u16, nb_tx: u16) -> usize {
    PORT_DROPS.len()
        + PORT_PATHS.len()
        + RX_QUEUE.len() * queues(nb_rx)
        + TX_QUEUE.len() * queues(nb_tx)
        + PORT_LINK.len()
}

/// The extended statistics of a port with `nb_rx` RX and `nb_tx` TX
/// queues, in the order `xstats_get` reports them (see the module doc).
pub fn list(nb_rx: u16, nb_tx: u16) -> Vec<Xstat> {
    let mut v = Vec::with_capacity(count(nb_rx, nb_tx));
    let port = |&(name, f): &Named<Snapshot>| Xstat {
        name: name.to_owned(),
        source: Source::Port(f),
    };
    v.extend(PORT_DROPS.iter().map(port));
    v.extend(PORT_PATHS.iter().map(port));
    for q in 0..queues(nb_rx) {
        v.extend(RX_QUEUE.iter().map(|&(what, f)| Xstat {
            name: format!("rx_q{q}_{what}"),
            source: Source::Rx(q, f),
        }));
    }
    for q in 0..queues(nb_tx) {
        v.extend(TX_QUEUE.iter().map(|&(what, f)| Xstat {
            name: format!("tx_q{q}_{what}"),
            source: Source::Tx(q, f),
        }));
    }
    v.extend(PORT_LINK.iter().map(port));
    v
}

/// Copies `name` into a DPDK xstat name buffer, truncated and NUL-terminated.
pub fn write_name(dst: &mut ffi::rte_eth_xstat_name, name: &str) {
    let n = name.len().min(ffi::XSTATS_NAME_SIZE - 1);
    for (d, s) in dst.name.iter_mut().zip(name.as_bytes()[..n].iter()) {
        *d = *s as std::ffi::c_char;
    }
    dst.name[n] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_fit_are_unique_and_counted() {
        for (rx, tx) in [(0, 0), (1, 1), (4, 2), (16, 16), (40, 17)] {
            let l = list(rx, tx);
            assert_eq!(l.len(), count(rx, tx), "{rx}/{tx}");
            let mut seen = HashSet::new();
            for x in &l {
                assert!(x.name.len() < ffi::XSTATS_NAME_SIZE, "{}", x.name);
                assert!(seen.insert(x.name.clone()), "{} twice", x.name);
            }
        }
        assert_eq!(count(1, 1), 8 + 2 + 5 + 4 + 6);
        assert_eq!(count(16, 16), 8 + 2 + 16 * 9 + 6, "16 queues at most");
        assert_eq!(count(40, 17), count(16, 16));
    }

    /// Every per-queue name reads its own queue's counter; totals read the
    /// sums; the link's counters come last, `rejected_peers` and
    /// `pinned_regions` at the end (tests/dpdk/lib.sh waits for the former).
    #[test]
    fn values_come_from_the_named_queue() {
        let mut s = Snapshot::default();
        for q in 0..usize::from(MAX_QUEUES) {
            let k = q as u64;
            s.rxq[q].filtered = 100 + k;
            s.txq[q].peer_queue_absent = 200 + k;
            s.txq[q].ring_full = 300 + k;
        }
        s.rejected_peers = 7;
        let l = list(4, 3);
        let v = |name: &str| {
            l.iter()
                .find(|x| x.name == name)
                .unwrap_or_else(|| panic!("no {name}"))
                .value(&s)
        };
        assert_eq!(v("rx_q3_filtered_drops"), 103);
        assert_eq!(v("tx_q2_peer_queue_absent_drops"), 202);
        assert_eq!(v("tx_q0_ring_full"), 300);
        assert_eq!(v("rejected_peers"), 7);
        let n = u64::from(MAX_QUEUES);
        assert_eq!(
            v("tx_peer_queue_absent_drops"),
            200 * n + n * (n - 1) / 2,
            "a total counts every queue, configured or not"
        );
        assert!(l.iter().all(|x| x.name != "rx_q4_filtered_drops"));
        assert!(l.iter().all(|x| x.name != "tx_q3_ring_full"));
        let names: Vec<&str> = l.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names[names.len() - 2..],
            ["rejected_peers", "pinned_regions"]
        );
        assert_eq!(names[0], "rx_too_large_drops");
        assert_eq!(names[PORT_DROPS.len()], "rx_zero_copy_frames");
        assert_eq!(
            names[PORT_DROPS.len() + PORT_PATHS.len()],
            "rx_q0_too_large_drops"
        );
    }

    #[test]
    fn write_name_truncates() {
        let mut n = ffi::rte_eth_xstat_name { name: [1; 64] };
        write_name(&mut n, "abc");
        assert_eq!(&n.name[..4], &[b'a' as _, b'b' as _, b'c' as _, 0]);
        write_name(&mut n, &"x".repeat(100));
        assert_eq!(n.name[63], 0);
    }
}
