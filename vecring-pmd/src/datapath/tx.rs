//! Sending: a port's TX queues ([`TxQueue`], up to 16, one per queue pair
//! of the link, each with its own counters) and their burst function.
//!
//! A burst copies each mbuf (chains too) into the ring with one chunk
//! reservation and one commit, then frees the sent mbufs in bulk (straight
//! into their pool when the application enabled fast free). Its leading
//! single-segment mbufs of one slot each, every mbuf of a burst of small
//! frames, go in one loop (`WriteChunk::push_small`), the rest one by
//! one. A burst of a sender fast enough writes its frames of up to 128
//! bytes with non-temporal stores (`WriteChunk::set_streaming`; when:
//! [`StreamGate`]). The burst function is chosen once, at `dev_start`
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
//! # When a burst streams
//!
//! When a transmit burst is written with non-temporal stores
//! (`WriteChunk::set_streaming`): a burst of [`STREAM_MIN_BURST`] frames
//! or more from a sender that runs at [`STREAM_MIN_RATE`] frames a second
//! or faster.
//!
//! With ordinary stores, each of a small frame's lines waits for the line
//! to come back from the receiver's cache when the receiver keeps up (and
//! prefetches the lines ahead of the ones it was given): in a third of
//! testpmd txonly -> rxonly runs at 64 bytes the sender fell to 11-15 M
//! pps, against 32-50 M in every run with streaming (the benchmark report,
//! "The small-frame slow mode of the driver"). A streamed frame reaches the
//! receiver from memory instead: forwarding 64-byte frames at 5 M pps, the
//! median round trip rose from 351 to 399 ns with every burst of 32
//! streamed. So only a sender fast enough for the slow mode to matter
//! streams: a frame or two at a time, or bursts at a moderate rate, are a
//! receiver waiting for them.

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
    /// Whether a burst is streamed.
    stream: StreamGate,
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
            stream: StreamGate::new(),
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
    let (mut chunk, streamed) = match sender.write_chunk_for(lens) {
        Ok(mut c) => {
            let streamed = q.stream.admit(n);
            c.set_streaming(streamed);
            (c, streamed)
        }
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
    chunk.commit();
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
    if streamed && sent.frames > 0 {
        t.streamed.add(1);
    }
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

/// The fewest frames of a burst that is streamed (testpmd sends 32).
pub const STREAM_MIN_BURST: usize = 8;

/// The slowest sender, in frames a second, whose bursts are streamed:
/// under the slow mode's rates (7-15 M pps), above a moderately loaded
/// forwarder's.
pub const STREAM_MIN_RATE: u64 = 6_000_000;

/// A transmit queue's record of its sender's pace.
#[derive(Debug, Default)]
pub struct StreamGate {
    /// TSC ticks a frame takes at [`STREAM_MIN_RATE`] (0: never stream).
    ticks_per_frame: u64,
    /// The TSC at the previous burst of [`STREAM_MIN_BURST`] frames or
    /// more.
    last: u64,
}

impl StreamGate {
    /// The gate of a queue in this process (EAL's TSC frequency).
    pub fn new() -> Self {
        // SAFETY: a plain query of EAL, initialised before any queue.
        let hz = unsafe { ffi::rte_get_tsc_hz() };
        StreamGate {
            ticks_per_frame: hz / STREAM_MIN_RATE,
            last: 0,
        }
    }

    /// Whether a burst of `frames` frames, given now, is streamed: enough
    /// frames, and they came at [`STREAM_MIN_RATE`] or faster since the
    /// previous burst of enough frames. A smaller burst costs one
    /// comparison (no clock read: a clock read on every burst added about
    /// 30 ns to a forwarded frame's round trip).
    #[inline]
    pub fn admit(&mut self, frames: usize) -> bool {
        if frames < STREAM_MIN_BURST {
            return false;
        }
        let now = tsc();
        let since = now.wrapping_sub(self.last);
        self.last = now;
        since <= frames as u64 * self.ticks_per_frame
    }
}

/// The time stamp counter (0 on other architectures, where nothing is
/// streamed).
#[inline(always)]
fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC reads a counter; it has no memory effects.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bursts_at_the_rate_are_streamed() {
        // A gate whose frame may take a 1024th of the counter's range:
        // every burst after the first counts as fast enough.
        let mut g = StreamGate {
            ticks_per_frame: u64::MAX / 1024,
            last: 0,
        };
        g.admit(STREAM_MIN_BURST);
        assert!(!g.admit(STREAM_MIN_BURST - 1), "too few frames");
        assert!(g.admit(STREAM_MIN_BURST));
        assert!(g.admit(32));
        // One that never streams.
        let mut never = StreamGate::default();
        never.admit(32);
        assert!(!never.admit(32));
    }
}
