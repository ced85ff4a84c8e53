//! Sending: a port's TX queues ([`TxQueue`], up to 16, one per queue pair
//! of the link, each with its own counters) and their burst function.
//!
//! A burst copies each mbuf (chains too) into the ring with one chunk
//! reservation and one commit, then frees the sent mbufs in bulk (straight
//! into their pool when the application enabled fast free). Its leading
//! single-segment mbufs of one slot each, every mbuf of a burst of small
//! frames, go in one loop (`WriteChunk::push_small`), the rest one by
//! one. After the commit it starts taking the lines of as many slots as
//! it used for writing, for the next burst (see "Ahead of the next
//! burst"). The burst function is chosen once, at `dev_start`
//! ([`tx_burst_fn`]): fast free is a const generic. The flag saying that
//! a reopened link's end waits for the queue ([`super::shared`], "Hand-offs") is read
//! once per burst.
//!
//! Drops are counted where they happen (see [`super::shared`], "Counters"); mbufs
//! the burst does not take are left to the application, as DPDK expects,
//! and counted as `tx_ring_full` or `tx_link_down`. Frames for a queue the
//! peer does not read are taken, freed and counted in `peer_queue_absent`
//! (retrying cannot help, and nothing is dropped uncounted): all of a
//! burst when the link is up with fewer queue pairs than the queue's index
//! or the queue has no end of the link at all; and, when the ring is full,
//! the rest of a burst if the peer has no receiver on the queue (the
//! consumer's wait line in shared memory says so; read only then).
//!
//! # Ahead of the next burst
//!
//! A small frame's slot was read by the receiver a lap ago, and a store
//! into it waits for its line. Written when the burst comes, the burst's
//! stores wait for a line each, about 300 ns a burst of 32 between far
//! CPUs, which is the whole difference between this driver and
//! `net_null` at 64 bytes (`docs/benchmarks/design-notes.md`, "Where the
//! sending core's time goes at 64 bytes"). So after each burst the queue
//! takes the next burst's lines for writing (`Sender::prefetch_next`, as
//! many slots as the burst used): they arrive while the application
//! builds its next packets. Writing small frames with non-temporal stores
//! instead, as this driver did before, avoids the wait only to pay it at
//! the fence before the descriptors: that build ran 0.77 of this one at
//! 64 bytes (4 alternated pairs, the same notes).

use super::mbuf::{free_bulk, free_sent, seg_bytes};
use super::setup::QueueSetup;
use super::shared::{Shared, TxCounters};
use crate::sys::compat::mbuf;
use crate::sys::ffi::{self, rte_mbuf};
use std::ffi::c_void;
use std::slice;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vecring_core::{PushError, Sender, Totals, MAX_QUEUES};

/// The transmit queue behind `rte_eth_dev_data::tx_queues[qid]`.
pub struct TxQueue {
    /// The link's sending end of queue `qid`, as an RX queue's receiver
    /// ([`super::rx::RxQueue`]).
    sender: Option<Sender>,
    /// The queue's index: its link queue pair and its counters.
    qid: usize,
    /// Counters, and the slot size that sizes the reservation.
    shared: Arc<Shared>,
    /// The application enabled `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`.
    fast_free: bool,
    /// The descriptor count and offloads the queue was set up with.
    pub setup: QueueSetup,
    /// `sender`'s totals already added to the queue's counters: the ring
    /// counts each frame it publishes, and a burst adds the growth (see
    /// [`super::shared`], "Counters").
    seen: Totals,
}

impl TxQueue {
    /// Transmit queue `qid` (below [`MAX_QUEUES`]) over `sender`;
    /// `fast_free` when the application enabled
    /// `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE` for it.
    pub fn new(sender: Option<Sender>, qid: u16, shared: Arc<Shared>, fast_free: bool) -> Self {
        let qid = usize::from(qid);
        assert!(qid < usize::from(MAX_QUEUES), "tx queue {qid} out of range");
        let mut q = TxQueue {
            sender: None,
            qid,
            shared,
            fast_free,
            setup: QueueSetup::default(),
            seen: Totals::default(),
        };
        q.set_sender(sender);
        q
    }

    /// Sends through `sender` from now on: the one way a queue gets its
    /// end, at setup and from a reopened link ([`Self::take_next`]). The
    /// queue counts from the end's totals (an end of a queue set up again
    /// continues its queue's).
    fn set_sender(&mut self, sender: Option<Sender>) {
        self.seen = sender.as_ref().map(Sender::totals).unwrap_or_default();
        self.sender = sender;
    }

    /// Takes the sending end of a reopened link, if one waits (the old end,
    /// of a closed link, is dropped).
    #[cold]
    fn take_next(&mut self) {
        if let Some(s) = self.shared.tx_next[self.qid].take() {
            self.set_sender(s);
        }
    }

    /// Whether sent mbufs go back to their pool the fast way.
    pub fn fast_free(&self) -> bool {
        self.fast_free
    }
}

/// The TX burst function, with or without the fast release of sent mbufs
/// (`RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`).
pub fn tx_burst_fn(fast_free: bool) -> ffi::eth_tx_burst_t {
    if fast_free {
        Some(tx_burst::<true>)
    } else {
        Some(tx_burst::<false>)
    }
}

/// Transmit burst: copies the mbufs into the ring, frees those it took
/// (the fast way with `FAST_FREE` when the whole burst allows it).
///
/// # Safety
/// Called by ethdev with the queue pointer stored by `tx_queue_setup` and an
/// array of `nb_pkts` valid mbufs, from one lcore at a time; with
/// `FAST_FREE`, the mbufs keep the application's fast-free promise.
unsafe extern "C" fn tx_burst<const FAST_FREE: bool>(
    txq: *mut c_void,
    pkts: *mut *mut rte_mbuf,
    nb_pkts: u16,
) -> u16 {
    // SAFETY: `txq` is the `Box<TxQueue>` stored by `tx_queue_setup`; ethdev
    // calls a queue's burst function from one lcore at a time.
    let q = unsafe { &mut *txq.cast::<TxQueue>() };
    if q.shared.tx_next[q.qid].pending() {
        q.take_next();
    }
    let n = usize::from(nb_pkts);
    if n == 0 {
        return 0;
    }
    let t = &q.shared.tx[q.qid];
    let Some(sender) = q.sender.as_mut() else {
        // SAFETY: the application passed `n` mbufs it owns.
        return unsafe { drop_absent(t, pkts, n) };
    };
    // SAFETY: ethdev passes an array of `nb_pkts` mbuf pointers.
    let mbufs = unsafe { slice::from_raw_parts(pkts, n) };

    // Reserve the slots this burst needs, no more: the ring re-reads the
    // consumer's index only when its cached view has fewer free slots than
    // asked for, so asking for exactly what fits keeps that shared cache
    // line out of most bursts.
    // SAFETY: every pointer of the array is a valid mbuf.
    let lens = mbufs.iter().map(|&m| unsafe { mbuf::pkt_len(m) } as usize);
    let mut chunk = match sender.write_chunk_for(lens) {
        Ok(c) => c,
        Err(_) => {
            if q.shared.link_up.load(Ordering::Relaxed) && !sender.is_up() {
                // Up, but no ring for this queue: the session has fewer
                // queue pairs.
                // SAFETY: the application passed `n` mbufs it owns.
                return unsafe { drop_absent(t, pkts, n) };
            }
            // Link down, or the peer corrupted the ring (the link counts
            // and logs that): nothing is taken.
            t.link_down.add(n as u64);
            return 0;
        }
    };
    // Exactly the burst's slots (see above); fewer are used when the ring
    // refuses a frame.
    let reserved = chunk.free_slots();

    // Whether every mbuf taken so far is single-segment and direct.
    let mut plain = true;
    // The burst's small single-segment mbufs, while there are, copied in
    // one loop that keeps the chunk in registers: every mbuf of a burst of
    // small frames.
    let mut taken = chunk.push_small(mbufs.iter().map_while(|&m| {
        // SAFETY: a valid mbuf from the application; `ol_flags` shares
        // the first line with `nb_segs`.
        unsafe {
            (mbuf::nb_segs(m) == 1).then(|| {
                if FAST_FREE {
                    plain &= (*m).ol_flags & ffi::MBUF_F_ATTACHED == 0;
                }
                seg_bytes(m)
            })
        }
    }));
    // The rest, from the first that is not: a chain, a frame of several
    // slots, or one the ring cannot take.
    let mut dropped = 0u64;
    for &m in &mbufs[taken..] {
        // SAFETY: a valid mbuf from the application.
        let (len, segs) = unsafe { (mbuf::pkt_len(m) as usize, mbuf::nb_segs(m)) };
        let res = if segs == 1 {
            if FAST_FREE {
                // SAFETY: a valid mbuf; `ol_flags` shares its first line.
                plain &= unsafe { (*m).ol_flags } & ffi::MBUF_F_ATTACHED == 0;
            }
            // SAFETY: a valid single-segment mbuf.
            chunk.push(unsafe { seg_bytes(m) })
        } else {
            plain = false;
            chunk.push_with(len, |w| {
                let mut s = m.cast_const();
                while !s.is_null() {
                    // SAFETY: `s` walks the mbuf's own `next` chain.
                    unsafe {
                        w.append(seg_bytes(s));
                        s = (*s).next;
                    }
                }
            })
        };
        match res {
            Ok(()) => {}
            Err(PushError::Full) => break,
            // Too large for the link, or empty: the frame can never be sent;
            // take it and drop it so that the application does not retry it.
            Err(_) => dropped += 1,
        }
        taken += 1;
    }
    let used = reserved - chunk.free_slots();
    chunk.commit();
    // The next burst's slots, taken for writing while the application
    // builds it (see "Ahead of the next burst").
    sender.prefetch_next(used);
    // What the ring counted this burst (every frame it took, nothing else).
    sender.flush_counters();
    let totals = sender.totals();
    let sent = totals.since(q.seen);
    q.seen = totals;
    // SAFETY: the first `taken` mbufs were copied or dropped and are ours;
    // with `FAST_FREE` the application keeps its promise and `plain` says
    // the rest.
    unsafe { free_sent(pkts, taken, FAST_FREE && plain) };

    t.packets.add(sent.frames);
    t.bytes.add(sent.bytes);
    if dropped > 0 {
        t.too_large.add(dropped);
    }
    if taken < n {
        // The ring is full. If the peer has no receiver on this queue, it
        // never empties: drop the rest, counted (one load of the
        // consumer's wait line, only when full).
        if !sender.peer_present() {
            // SAFETY: the mbufs after the first `taken` are still the
            // application's, handed to this burst.
            unsafe { drop_absent(t, pkts.add(taken), n - taken) };
            return n as u16;
        }
        t.ring_full.add((n - taken) as u64);
    }
    taken as u16
}

/// Takes the `n` mbufs of a burst for a queue the peer does not have:
/// frees them and counts them in `peer_queue_absent` (dropped, never
/// silently). Returns `n`: the application must not retry them.
///
/// # Safety
/// `pkts` holds `n` valid mbufs owned by the caller.
#[cold]
unsafe fn drop_absent(t: &TxCounters, pkts: *mut *mut rte_mbuf, n: usize) -> u16 {
    // Not the fast-free path: a burst may hold chains, attached mbufs or
    // mbufs of several pools.
    // SAFETY: per the caller.
    unsafe { free_bulk(pkts, n) };
    t.peer_queue_absent.add(n as u64);
    n as u16
}
