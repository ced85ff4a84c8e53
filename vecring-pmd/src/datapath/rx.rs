//! Receiving: a port's RX queues ([`RxQueue`], up to 16, one per queue pair
//! of the link, each with its own counters) and their burst function.
//!
//! A burst allocates mbufs in bulk, copies frames in (scattering into a
//! chain when scatter is enabled, [`super::scatter`]; attaching long
//! frames to their ring slots in zero-copy mode, [`super::zerocopy`]), and
//! releases the ring slots once per burst.
//!
//! The burst function is chosen once, at `dev_start` ([`rx_burst_fn`]): the
//! scatter and zero-copy decisions are const generics, never a per-packet
//! branch. The filter (mode and addresses, [`Filter`]) is read once per
//! burst, and so is the flag saying that a reopened link's end waits for
//! the queue ([`super::shared`]).
//!
//! The peer can write a frame's bytes while they are read, so the MAC filter
//! decides on one read of them: a copied frame on its copy in the mbuf, a
//! zero-copy frame on one read of its destination MAC (see
//! [`Filter::accept_shared`]).
//!
//! Drops are counted where they happen (see [`super::shared`]). An RX
//! queue the link lacks receives nothing.
//!
//! In Rx interrupt mode ([`crate::ethdev::intr`]) the lcore polling the
//! queue also enables and disables its interrupt between bursts
//! ([`RxQueue::intr_enable`], [`RxQueue::intr_disable`]).

use super::filter::Filter;
use super::mbuf::{free_bulk, seg_room};
use super::scatter::{scatter_into, Scatter};
use super::setup::QueueSetup;
use super::shared::add_raw;
use super::shared::Shared;
use super::zerocopy::{self, ZcSlots, ZC_MIN_LEN};
use crate::sys::compat::mbuf;
use crate::sys::ffi::{self, rte_mbuf, rte_mempool};
use crate::sys::log::vlog;
use std::ffi::c_void;
use std::os::fd::AsRawFd;
use std::slice;
use std::sync::Arc;
use vecring_core::MAX_QUEUES;
use vecring_core::{LinkRecvError, ReadyWord, Receiver, Totals};

/// The receive queue behind `rte_eth_dev_data::rx_queues[qid]`.
pub struct RxQueue {
    /// The link's receiving end of queue `qid`, owned by the queue while it
    /// exists; `None` while the port's link lacks the queue (or is closed
    /// and the queue was set up meanwhile).
    receiver: Option<Receiver>,
    /// The queue's index: its link queue pair and its counters.
    qid: usize,
    /// Where receive mbufs come from (set up by the application).
    pool: *mut rte_mempool,
    /// Bytes an mbuf of `pool` holds after its headroom.
    buf_space: usize,
    /// Written into `mbuf.port` of every received mbuf.
    port_id: u16,
    /// Counters and filter.
    shared: Arc<Shared>,
    /// `rte_eth_dev_data::rx_mbuf_alloc_failed` of the port.
    nombuf: *mut u64,
    /// Zero-copy state of the current generation (zero-copy mode only).
    zc: Option<Arc<ZcSlots>>,
    /// The descriptor count and offloads the queue was set up with
    /// (reported by `rxq_info_get`; the ring's size is a devarg).
    pub setup: QueueSetup,
    /// Whether `receiver`'s wait set is in the queue's Rx interrupt
    /// descriptor (see [`crate::ethdev::intr`]).
    intr_watched: bool,
    /// `receiver`'s count of held-back reads already added to the queue's
    /// `held_back` counter.
    held_seen: u64,
    /// `receiver`'s totals already accounted in the queue's counters: the
    /// ring counts each frame it hands out, and a burst adds the growth,
    /// less what it dropped (see [`super::shared`], "Counters").
    seen: Totals,
}

impl RxQueue {
    /// Receive queue `qid` (below [`MAX_QUEUES`]), filling mbufs of
    /// `buf_space` data bytes from `pool`.
    ///
    /// # Safety
    /// `pool` must be a packet mbuf pool whose mbufs hold `buf_space > 0`
    /// bytes after the headroom (see
    /// [`pool_buf_space`](super::mbuf::pool_buf_space)), and `nombuf` must
    /// point to the port's `rx_mbuf_alloc_failed`; both must outlive the
    /// queue.
    pub unsafe fn new(
        receiver: Option<Receiver>,
        qid: u16,
        pool: *mut rte_mempool,
        buf_space: usize,
        port_id: u16,
        shared: Arc<Shared>,
        nombuf: *mut u64,
    ) -> Self {
        debug_assert!(buf_space > 0);
        let qid = usize::from(qid);
        assert!(qid < usize::from(MAX_QUEUES), "rx queue {qid} out of range");
        let mut q = RxQueue {
            receiver: None,
            qid,
            pool,
            buf_space,
            port_id,
            shared,
            nombuf,
            zc: None,
            setup: QueueSetup::default(),
            intr_watched: false,
            held_seen: 0,
            seen: Totals::default(),
        };
        q.set_receiver(receiver);
        q
    }

    /// Receives through `receiver` from now on: the one way a queue gets
    /// its end, at setup and from a reopened link ([`Self::take_next`]).
    /// The end attaches now if the link is up, so that the peer sees a
    /// receiver on the queue from then on, not only from the first burst;
    /// the queue counts from its totals (an end of a queue set up again
    /// continues its queue's).
    fn set_receiver(&mut self, mut receiver: Option<Receiver>) {
        self.seen = receiver
            .as_mut()
            .map(|r| {
                r.is_up();
                r.totals()
            })
            .unwrap_or_default();
        self.held_seen = receiver.as_ref().map_or(0, Receiver::held_back);
        self.receiver = receiver;
    }

    /// Takes the receiving end of a reopened link, if one waits: the old
    /// end (of a closed link) leaves the Rx interrupt descriptor and is
    /// dropped, and zero-copy state starts afresh (mbufs still attached
    /// keep the old region mapped).
    #[cold]
    fn take_next(&mut self) {
        if let Some(r) = self.shared.rx_next[self.qid].take() {
            self.unwatch();
            self.set_receiver(r);
            self.zc = None;
        }
    }

    /// Before the port starts (no lcore polls the queue): takes a reopened
    /// link's end if one waits, and attaches it to its ring if the link is
    /// up, so that the peer sees a receiver on the queue from now on, not
    /// only from the first burst.
    pub fn prepare(&mut self) {
        self.take_next();
        if let Some(r) = self.receiver.as_mut() {
            r.is_up();
        }
    }

    /// The mempool receive mbufs come from.
    pub fn pool(&self) -> *mut rte_mempool {
        self.pool
    }

    /// Data bytes one mbuf of the queue's pool holds.
    pub fn buf_space(&self) -> usize {
        self.buf_space
    }

    /// The queue's receiver is about to be replaced: takes its wait set out
    /// of the queue's Rx interrupt descriptor. Called from the queue's own
    /// lcore (or with no lcore polling it).
    fn unwatch(&mut self) {
        if !std::mem::take(&mut self.intr_watched) {
            return;
        }
        if let (Some(i), Some(r)) = (self.shared.rx_intr[self.qid].get(), self.receiver.as_ref()) {
            // An error only means the descriptor was not in the set.
            let _ = i.remove(r.as_raw_fd());
        }
    }

    /// `get_monitor_addr`: the word a monitoring wait (DPDK's power
    /// management) watches for the queue's next frame, or while the link
    /// is down for its coming up (see [`Receiver::ready_word`]). `None`
    /// when the lcore must not sleep: a reopened link's end waits for the
    /// queue's next burst, or the queue has no link end at all. Called
    /// from the lcore that polls the queue, never during its burst.
    pub fn ready_word(&mut self) -> Option<ReadyWord> {
        // A reopened link's end waits (the next burst takes it).
        if self.shared.rx_next[self.qid].pending() {
            return None;
        }
        self.receiver.as_mut().map(Receiver::ready_word)
    }

    /// Whether the queue holds an end of a link (it lacks one while the
    /// port's link lacks the queue).
    pub fn has_link_end(&self) -> bool {
        self.receiver.is_some()
    }

    /// `rx_queue_intr_enable`: sets the queue up to wake its descriptor
    /// (see [`crate::ethdev::intr`]). 0, or `-ENOTSUP` if the port did not
    /// start with `intr_conf.rxq`, `-EIO` if the receiver's wait set cannot
    /// join the descriptor. Called from the lcore that polls the queue,
    /// never during its burst.
    pub fn intr_enable(&mut self) -> i32 {
        // A handle of its own: taking a hand-off below needs `&mut self`.
        let shared = Arc::clone(&self.shared);
        let Some(intr) = shared.rx_intr[self.qid].get() else {
            return -libc::ENOTSUP;
        };
        // Drain first, then look for a hand-off: a receiver handed off
        // after this look kicks again, so the sleeper wakes for it.
        intr.drain_kick();
        if self.shared.rx_next[self.qid].pending() {
            self.take_next();
        }
        let Some(r) = self.receiver.as_mut() else {
            // No end of a link: the next link's hand-off kicks.
            return 0;
        };
        if !self.intr_watched {
            if let Err(e) = intr.add(r.as_raw_fd()) {
                vlog!(
                    ERR,
                    "rx queue {}: cannot watch the link's receiver: {e}",
                    self.qid
                );
                return -libc::EIO;
            }
            self.intr_watched = true;
        }
        match r.prepare_wait() {
            // Sleep: the wait set wakes the descriptor.
            Ok(true) => {}
            // Frames are waiting: wake at once.
            Ok(false) => intr.kick(),
            // A closed link (the reopened one's hand-off kicks), or a
            // corrupt ring (the link ends the session and pokes): sleep.
            Err(LinkRecvError::Closed | LinkRecvError::Corrupt(_)) => {}
            // Not returned by `prepare_wait`; sleeping is safe anyway.
            Err(_) => {}
        }
        0
    }

    /// `rx_queue_intr_disable`: the queue is polled again.
    pub fn intr_disable(&mut self) -> i32 {
        if self.shared.rx_intr[self.qid].get().is_none() {
            return -libc::ENOTSUP;
        }
        if let Some(r) = self.receiver.as_mut() {
            r.cancel_wait();
        }
        0
    }
}

/// The RX burst function for a port with scatter and zero-copy on or off.
pub fn rx_burst_fn(scatter: bool, zero_copy: bool) -> ffi::eth_rx_burst_t {
    match (scatter, zero_copy) {
        (false, false) => Some(rx_burst::<false, false>),
        (true, false) => Some(rx_burst::<true, false>),
        (false, true) => Some(rx_burst::<false, true>),
        (true, true) => Some(rx_burst::<true, true>),
    }
}

/// Receive burst: copies up to `nb_pkts` frames from the ring into mbufs.
///
/// # Safety
/// Called by ethdev with the queue pointer stored by `rx_queue_setup` and an
/// array with room for `nb_pkts` mbuf pointers, from one lcore at a time.
unsafe extern "C" fn rx_burst<const SCATTER: bool, const ZC: bool>(
    rxq: *mut c_void,
    pkts: *mut *mut rte_mbuf,
    nb_pkts: u16,
) -> u16 {
    // SAFETY: `rxq` is the `Box<RxQueue>` stored by `rx_queue_setup`; ethdev
    // calls a queue's burst function from one lcore at a time.
    let q = unsafe { &mut *rxq.cast::<RxQueue>() };
    if q.shared.rx_next[q.qid].pending() {
        q.take_next();
    }
    let Some(receiver) = q.receiver.as_mut() else {
        // The link has no such queue: nothing arrives on it.
        return 0;
    };
    let filter = Filter::load(&q.shared);
    let (pool, buf_space, port_id, nombuf) = (q.pool, q.buf_space, q.port_id, q.nombuf);
    let counters = &q.shared.rx[q.qid];

    if ZC {
        // Slots whose mbufs the application freed go back to the producer,
        // every burst: a ring full of held frames must drain.
        zerocopy::reclaim(receiver, q.zc.as_ref());
    }
    // Zero-copy: when every slot read before is back with the producer
    // (no attached frame is held), the frames this burst copies or drops
    // before its first attached one need no done flag: they go back at the
    // burst's end, as in copy mode, and a burst of small frames costs what
    // it costs there. With no ring attached yet, the burst attaches one
    // afresh, where nothing is held either.
    let clean = ZC
        && receiver
            .positions()
            .is_none_or(|(released, read)| released == read);
    let Ok(mut chunk) = receiver.read_chunk(usize::from(nb_pkts)) else {
        // Link down, or the ring is corrupt (the link counts and logs it).
        return 0;
    };
    let zc = if ZC {
        Some(zerocopy::slots_for(&mut q.zc, chunk.storage()))
    } else {
        None
    };
    // A frame takes at least one slot: never allocate more mbufs than that.
    // A corrupt descriptor at the read position has poisoned the ring (the
    // link counts and logs it at the next burst).
    let want = chunk.ready().unwrap_or(0).min(usize::from(nb_pkts));
    if want == 0 {
        drop(chunk);
        if receiver.hold_back().is_some() {
            // Empty, or held back: the receiver counts the reads it held
            // back; the queue's counter gets what is new.
            let held = receiver.held_back();
            counters.held_back.add(held.wrapping_sub(q.held_seen));
            q.held_seen = held;
        }
        return 0;
    }
    // Allocate straight into the application's array, `port` already set.
    // SAFETY: `pkts` has room for `nb_pkts >= want` pointers; `pool` is the
    // queue's packet pool.
    if unsafe { ffi::vecring_rx_mbufs_alloc(pool, pkts, want as u32, port_id) } != 0 {
        // SAFETY: `nombuf` points to the port's counter; this lcore is its
        // only writer.
        unsafe { add_raw(nombuf, want as u64) };
        // The frames stay in the ring (none was taken from the chunk).
        return 0;
    }
    // SAFETY: the first `want` entries now hold mbufs we own.
    let mbufs = unsafe { slice::from_raw_parts_mut(pkts, want) };

    let mut filled = 0usize;
    let (mut too_large, mut filtered, mut scatter_nombuf) = (0u64, 0u64, 0u64);
    // The bytes of the frames dropped (too large, filtered, no mbufs).
    let mut dropped_bytes = 0u64;
    let mut attached = 0u64;
    // The ring index of the burst's first attached frame.
    let mut first_attached = None;
    while filled < want {
        let frame = match chunk.next_frame() {
            Ok(Some(f)) => f,
            // No more frames, or a corrupt descriptor (the endpoint is now
            // poisoned; frames taken before stay valid).
            Ok(None) | Err(_) => break,
        };
        let len = frame.len();
        let (index, slots) = (frame.index(), frame.slots());
        // In zero-copy mode every frame not attached to an mbuf is done with
        // once this iteration ends (copied or dropped); its flag is needed
        // only behind a frame still held (see `clean`).
        let marks = if clean && first_attached.is_none() {
            None
        } else {
            zc
        };
        let done = || {
            if let Some(z) = marks {
                z.mark_done(index, slots);
            }
        };
        // Every filter decision is made on one read of the frame's bytes:
        // a copied frame is filtered on its copy (the bytes the application
        // gets), an attached one on one read of its destination MAC. A peer
        // changing the bytes meanwhile cannot get a frame past the filter
        // with an address the filter did not see.
        let m = mbufs[filled];
        if let (true, Some(z)) = (len >= ZC_MIN_LEN && frame.contiguous().is_some(), zc) {
            if !filter.accept_shared(frame.first_segment()) {
                filtered += 1;
                dropped_bytes += len as u64;
                done();
                continue;
            }
            // SAFETY: `m` is a fresh mbuf of ours; the frame is contiguous,
            // in the ring `z` was made for.
            unsafe { z.attach(m, &frame) };
            attached += 1;
            first_attached.get_or_insert(index);
        } else if len <= buf_space {
            // SAFETY: `m` is ours, freshly reset, with `buf_space >= len`
            // bytes of room.
            let room = unsafe { seg_room(m, len) };
            // One copy (two when the frame wraps around the ring's end).
            frame.copy_to(room);
            done();
            if !filter.accept(room) {
                // `m` stays unfilled, for the next frame.
                filtered += 1;
                dropped_bytes += len as u64;
                continue;
            }
            // SAFETY: `m` is ours.
            unsafe {
                mbuf::set_data_len(m, len as u16);
                mbuf::set_pkt_len(m, len as u32);
            }
        } else if SCATTER {
            // SAFETY: `m` is ours and freshly reset; `pool` is the queue's.
            let got = unsafe { scatter_into(m, pool, buf_space, frame.segments(), len, &filter) };
            done();
            match got {
                Scatter::Filled => {}
                Scatter::NoMbufs => {
                    scatter_nombuf += 1;
                    dropped_bytes += len as u64;
                    continue;
                }
                Scatter::Filtered => {
                    filtered += 1;
                    dropped_bytes += len as u64;
                    continue;
                }
            }
        } else {
            too_large += 1;
            dropped_bytes += len as u64;
            done();
            continue;
        }
        filled += 1;
    }
    if !ZC || (clean && first_attached.is_none()) {
        // Copy mode, or nothing held before the burst and nothing attached
        // in it: every frame read goes back now.
        chunk.release();
    } else {
        // The slots stay ours until their done flags are set, ...
        chunk.keep();
        if let (true, Some(at)) = (clean, first_attached) {
            // ... but with nothing held before the burst, the frames before
            // its first attached one go back now.
            receiver.release_to(at);
        }
    }
    // Return the mbufs the burst did not fill (fewer frames than slots).
    // SAFETY: entries `filled..want` are unused mbufs we own.
    unsafe { free_bulk(pkts.add(filled), want - filled) };

    // What the ring counted this burst (every frame it handed out), less
    // the frames dropped: what the application got.
    receiver.flush_counters();
    let totals = receiver.totals();
    let read = totals.since(q.seen);
    q.seen = totals;
    let dropped = too_large + filtered + scatter_nombuf;
    debug_assert_eq!(read.frames, filled as u64 + dropped);
    let r = counters;
    r.packets.add(read.frames.wrapping_sub(dropped));
    r.bytes.add(read.bytes.wrapping_sub(dropped_bytes));
    if dropped > 0 {
        r.too_large.add(too_large);
        r.filtered.add(filtered);
        r.scatter_nombuf.add(scatter_nombuf);
    }
    if ZC && attached > 0 {
        r.zero_copy.add(attached);
    }
    filled as u16
}
