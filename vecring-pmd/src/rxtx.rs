//! The data path: a port's RX and TX queues (up to 16 each, one per queue
//! pair of the link, each with its own counters) and their burst
//! functions.
//!
//! TX copies each mbuf (chains too) into the ring with one chunk reservation
//! and one commit per burst, then frees the sent mbufs in bulk (straight
//! into their pool when the application enabled fast free). A burst of a
//! sender fast enough writes its frames of up to 128 bytes with
//! non-temporal stores (`WriteChunk::set_streaming`; when: [`StreamGate`]).
//! RX allocates
//! mbufs in bulk, copies frames in (scattering into a chain when scatter is
//! enabled), and releases the ring slots once per burst.
//!
//! Burst functions are chosen once, at `dev_start` ([`rx_burst_fn`]): the
//! scatter decision is a const generic, never a per-packet branch. The filter
//! (mode and addresses, [`stats::Filter`]) is read once per burst, and so
//! is the flag saying that a reopened link's end waits for the queue
//! ([`crate::handoff`]).
//!
//! The peer can write a frame's bytes while they are read, so the MAC filter
//! decides on one read of them: a copied frame on its copy in the mbuf, a
//! zero-copy frame on one read of its destination MAC (see
//! [`stats::Filter::accept_shared`]).
//!
//! Drops are counted where they happen (see [`crate::stats`]); mbufs the TX
//! burst does not take are left to the application, as DPDK expects, and
//! counted as `tx_ring_full` or `tx_link_down`. Frames for a queue the
//! peer does not read are taken, freed and counted in `peer_queue_absent`
//! (retrying cannot help, and nothing is dropped uncounted): all of a
//! burst when the link is up with fewer queue pairs than the queue's index
//! or the queue has no end of the link at all; and, when the ring is full,
//! the rest of a burst if the peer has no receiver on the queue (the
//! consumer's wait line in shared memory says so; read only then). An RX
//! queue the link lacks receives nothing.

use crate::compat::mbuf;
use crate::ffi::{self, rte_mbuf, rte_mempool};
use crate::scatter::{scatter_into, Scatter};
use crate::stats::{self, Filter, Shared, TxCounters, MAX_QUEUES};
use crate::stream::StreamGate;
use crate::zerocopy::{self, ZcSlots, ZC_MIN_LEN};
use std::ffi::c_void;
use std::slice;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vecring_core::{PushError, Receiver, Sender};

/// The receive queue behind `rte_eth_dev_data::rx_queues[qid]`.
pub struct RxQueue {
    /// The link's receiving end of queue `qid`, owned by the queue while it
    /// exists; `None` while the port's link lacks the queue (or is closed
    /// and the queue was set up meanwhile).
    pub(crate) receiver: Option<Receiver>,
    /// The queue's index: its link queue pair and its counters.
    pub(crate) qid: usize,
    /// Where receive mbufs come from (set up by the application).
    pool: *mut rte_mempool,
    /// Bytes an mbuf of `pool` holds after its headroom.
    buf_space: usize,
    /// Written into `mbuf.port` of every received mbuf.
    port_id: u16,
    /// Counters and filter.
    pub(crate) shared: Arc<Shared>,
    /// `rte_eth_dev_data::rx_mbuf_alloc_failed` of the port.
    nombuf: *mut u64,
    /// Zero-copy state of the current generation (zero-copy mode only).
    zc: Option<Arc<ZcSlots>>,
    /// The descriptor count and offloads the queue was set up with
    /// (reported by `rxq_info_get`; the ring's size is a devarg).
    pub(crate) setup: QueueSetup,
    /// Whether `receiver`'s wait set is in the queue's Rx interrupt
    /// descriptor (see [`crate::intr`]).
    pub(crate) intr_watched: bool,
}

/// What the application asked for when it set a queue up, for queue info.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueSetup {
    /// `nb_desc` of the setup call.
    pub nb_desc: u16,
    /// The queue's own offloads.
    pub offloads: u64,
}

/// The transmit queue behind `rte_eth_dev_data::tx_queues[qid]`.
pub struct TxQueue {
    /// The link's sending end of queue `qid`, as [`RxQueue::receiver`].
    pub(crate) sender: Option<Sender>,
    /// The queue's index: its link queue pair and its counters.
    qid: usize,
    /// Counters, and the slot size that sizes the reservation.
    shared: Arc<Shared>,
    /// The application enabled `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`.
    fast_free: bool,
    /// The descriptor count and offloads the queue was set up with.
    pub(crate) setup: QueueSetup,
    /// Whether a burst is streamed.
    stream: StreamGate,
}

/// Data bytes one mbuf of `pool` holds after its headroom (0 if none).
///
/// # Safety
/// `pool` must be a packet mbuf pool.
pub unsafe fn pool_buf_space(pool: *mut rte_mempool) -> usize {
    // SAFETY: the caller guarantees `pool` is a packet mbuf pool.
    usize::from(unsafe { ffi::vecring_pktmbuf_buf_space(pool) })
}

impl RxQueue {
    /// Receive queue `qid` (below [`MAX_QUEUES`]), filling mbufs of
    /// `buf_space` data bytes from `pool`.
    ///
    /// # Safety
    /// `pool` must be a packet mbuf pool whose mbufs hold `buf_space > 0`
    /// bytes after the headroom (see [`pool_buf_space`]), and `nombuf` must
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
        assert!(qid < MAX_QUEUES, "rx queue {qid} out of range");
        RxQueue {
            receiver,
            qid,
            pool,
            buf_space,
            port_id,
            shared,
            nombuf,
            zc: None,
            setup: QueueSetup::default(),
            intr_watched: false,
        }
    }

    /// Takes the receiving end of a reopened link, if one waits: the old
    /// end (of a closed link) leaves the Rx interrupt descriptor and is
    /// dropped, and zero-copy state starts afresh (mbufs still attached
    /// keep the old region mapped).
    #[cold]
    pub(crate) fn take_next(&mut self) {
        if let Some(r) = self.shared.rx_next[self.qid].take() {
            crate::intr::unwatch(self);
            self.receiver = r;
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
}

impl TxQueue {
    /// Transmit queue `qid` (below [`MAX_QUEUES`]) over `sender`;
    /// `fast_free` when the application enabled
    /// `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE` for it.
    pub fn new(sender: Option<Sender>, qid: u16, shared: Arc<Shared>, fast_free: bool) -> Self {
        let qid = usize::from(qid);
        assert!(qid < MAX_QUEUES, "tx queue {qid} out of range");
        TxQueue {
            sender,
            qid,
            shared,
            fast_free,
            setup: QueueSetup::default(),
            stream: StreamGate::new(),
        }
    }

    /// Takes the sending end of a reopened link, if one waits (the old end,
    /// of a closed link, is dropped).
    #[cold]
    fn take_next(&mut self) {
        if let Some(s) = self.shared.tx_next[self.qid].take() {
            self.sender = s;
        }
    }

    /// Whether sent mbufs go back to their pool the fast way.
    pub fn fast_free(&self) -> bool {
        self.fast_free
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

/// The TX burst function, with or without the fast release of sent mbufs
/// (`RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`).
pub fn tx_burst_fn(fast_free: bool) -> ffi::eth_tx_burst_t {
    if fast_free {
        Some(tx_burst::<true>)
    } else {
        Some(tx_burst::<false>)
    }
}

/// Frees `n` mbufs (and their chains) starting at `mbufs`.
///
/// # Safety
/// The mbufs must be valid and owned by the caller.
#[inline]
pub(crate) unsafe fn free_bulk(mbufs: *mut *mut rte_mbuf, n: usize) {
    if n > 0 {
        // SAFETY: the caller owns the `n` mbufs; `n <= u16::MAX` in every caller.
        unsafe { ffi::rte_pktmbuf_free_bulk(mbufs, n as u32) }
    }
}

/// Gives back the `n` mbufs a TX burst took. With fast free the application
/// has promised one pool and a reference count of 1 for every mbuf of the
/// queue; a burst the TX loop found `plain` (single-segment, direct mbufs
/// only) then goes straight back to that pool without the per-mbuf checks
/// of [`free_bulk`], which also read each mbuf's second cache line.
///
/// # Safety
/// The mbufs must be valid and owned by the caller; with `fast`, they must
/// keep the application's fast-free promise and be plain.
#[inline]
unsafe fn free_sent(mbufs: *mut *mut rte_mbuf, n: usize, fast: bool) {
    if fast && n > 0 {
        // SAFETY: per the caller, `n` raw-state mbufs of one pool (that of
        // the first); `n <= u16::MAX`.
        unsafe { ffi::vecring_mempool_put_bulk((**mbufs).pool, mbufs.cast(), n as u32) }
    } else {
        // SAFETY: per the caller.
        unsafe { free_bulk(mbufs, n) }
    }
}

/// The data bytes of one mbuf segment.
///
/// # Safety
/// `m` must be a valid mbuf whose `data_off + data_len` lies in its buffer.
#[inline]
unsafe fn seg_bytes<'a>(m: *const rte_mbuf) -> &'a [u8] {
    // SAFETY: the caller guarantees the segment's data lies inside its
    // buffer; the application does not modify an mbuf it passed to TX.
    unsafe {
        slice::from_raw_parts(
            (*m).buf_addr
                .cast::<u8>()
                .add(usize::from(mbuf::data_off(m))),
            usize::from(mbuf::data_len(m)),
        )
    }
}

/// The writable data room of one freshly reset mbuf (`buf_space` bytes).
///
/// # Safety
/// `m` must be a freshly allocated mbuf owned by the caller, with at least
/// `len` bytes after `data_off`.
#[inline]
pub(crate) unsafe fn seg_room<'a>(m: *mut rte_mbuf, len: usize) -> &'a mut [u8] {
    // SAFETY: the caller owns the mbuf and guarantees the room.
    unsafe {
        slice::from_raw_parts_mut(
            (*m).buf_addr
                .cast::<u8>()
                .add(usize::from(mbuf::data_off(m))),
            len,
        )
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
        Ok(mut c) => {
            c.set_streaming(q.stream.admit(n));
            c
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

    let (mut taken, mut sent, mut bytes, mut dropped) = (0usize, 0u64, 0u64, 0u64);
    // Whether every mbuf taken so far is single-segment and direct.
    let mut plain = true;
    for &m in mbufs {
        // SAFETY: a valid mbuf from the application.
        let (mut len, segs) = unsafe { (mbuf::pkt_len(m) as usize, mbuf::nb_segs(m)) };
        let res = if segs == 1 {
            if FAST_FREE {
                // SAFETY: a valid mbuf; `ol_flags` shares its first line.
                plain &= unsafe { (*m).ol_flags } & ffi::MBUF_F_ATTACHED == 0;
            }
            // SAFETY: a valid single-segment mbuf.
            let data = unsafe { seg_bytes(m) };
            len = data.len();
            chunk.push(data)
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
            Ok(()) => {
                sent += 1;
                bytes += len as u64;
            }
            Err(PushError::Full) => break,
            // Too large for the link, or empty: the frame can never be sent;
            // take it and drop it so that the application does not retry it.
            Err(_) => dropped += 1,
        }
        taken += 1;
    }
    chunk.commit();
    // SAFETY: the first `taken` mbufs were copied or dropped and are ours;
    // with `FAST_FREE` the application keeps its promise and `plain` says
    // the rest.
    unsafe { free_sent(pkts, taken, FAST_FREE && plain) };

    t.packets.add(sent);
    t.bytes.add(bytes);
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
    let want = chunk.ready_slots().min(usize::from(nb_pkts));
    if want == 0 {
        return 0;
    }
    // Allocate straight into the application's array, `port` already set.
    // SAFETY: `pkts` has room for `nb_pkts >= want` pointers; `pool` is the
    // queue's packet pool.
    if unsafe { ffi::vecring_rx_mbufs_alloc(pool, pkts, want as u32, port_id) } != 0 {
        // SAFETY: `nombuf` points to the port's counter; this lcore is its
        // only writer.
        unsafe { stats::add_raw(nombuf, want as u64) };
        // The frames stay in the ring (none was taken from the chunk).
        return 0;
    }
    // SAFETY: the first `want` entries now hold mbufs we own.
    let mbufs = unsafe { slice::from_raw_parts_mut(pkts, want) };

    let (mut filled, mut bytes) = (0usize, 0u64);
    let (mut too_large, mut filtered, mut scatter_nombuf) = (0u64, 0u64, 0u64);
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
        // once this iteration ends (copied or dropped).
        let done = |zc: Option<&Arc<ZcSlots>>| {
            if let Some(z) = zc {
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
                done(zc);
                continue;
            }
            // SAFETY: `m` is a fresh mbuf of ours; the frame is contiguous,
            // in the ring `z` was made for.
            unsafe { z.attach(m, &frame) };
        } else if len <= buf_space {
            // SAFETY: `m` is ours, freshly reset, with `buf_space >= len`
            // bytes of room.
            let room = unsafe { seg_room(m, len) };
            // One copy (two when the frame wraps around the ring's end).
            frame.copy_to(room);
            done(zc);
            if !filter.accept(room) {
                // `m` stays unfilled, for the next frame.
                filtered += 1;
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
            done(zc);
            match got {
                Scatter::Filled => {}
                Scatter::NoMbufs => {
                    scatter_nombuf += 1;
                    continue;
                }
                Scatter::Filtered => {
                    filtered += 1;
                    continue;
                }
            }
        } else {
            too_large += 1;
            done(zc);
            continue;
        }
        bytes += len as u64;
        filled += 1;
    }
    if ZC {
        // The slots stay ours until their done flags are set.
        chunk.keep();
    } else {
        chunk.release();
    }
    // Return the mbufs the burst did not fill (fewer frames than slots).
    // SAFETY: entries `filled..want` are unused mbufs we own.
    unsafe { free_bulk(pkts.add(filled), want - filled) };

    let r = counters;
    r.packets.add(filled as u64);
    r.bytes.add(bytes);
    if too_large + filtered + scatter_nombuf > 0 {
        r.too_large.add(too_large);
        r.filtered.add(filtered);
        r.scatter_nombuf.add(scatter_nombuf);
    }
    filled as u16
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
