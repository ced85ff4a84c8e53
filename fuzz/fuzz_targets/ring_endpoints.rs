//! A ring endpoint over memory a hostile peer wrote: the ring's control
//! block, descriptors and slot data are filled from the input, and between
//! calls the "peer" keeps rewriting its index, descriptors and bytes.
//!
//! - Consumer (first byte even): `recv`, `recv_batch`, `read_chunk` with
//!   `next_frame` and `next_run`, `ready_slots`, `release_to`. Every frame
//!   handed out is 1 ..= `max_frame_len` bytes, its segments lie inside
//!   the data area and add up to its length, and a corruption, once
//!   reported, is reported by every later call.
//! - Producer (first byte odd): `send`, `send_batch`, `write_chunk` with
//!   `push`, `push_with` and `push_run`, `unread_frames`, against an
//!   arbitrary consumer-written `tail`. Lengths are refused as documented.
//!
//! Input: side (1 byte), geometry (1 + 2), the endpoint's own index (8),
//! the peer's index (1: `2 * distance` ahead, `2 * distance + 1` behind,
//! 240 and up: 8 more bytes of any value), one descriptor per slot, data
//! length (2) and bytes, then operations until the input ends
//! (`fuzz/examples/make_corpus.rs` writes valid ones).
//!
//! A descriptor is its length and flags (3 bytes) and a stamp selector (1):
//! below 192 the stamp of the slot's lap seen from the endpoint's index (a
//! published frame, for a consumer), below 224 the lap before's (not yet
//! published), below 240 the lap after's, and 240 and up 8 more bytes, the
//! whole word. The consumer's peer also rewrites descriptors so between
//! calls, from its read position.
//!
//! The ring lives on the heap (`HeapRing`: the same ring code as a shared
//! region), with its data area exactly `slot_count * slot_size` bytes, so
//! AddressSanitizer catches any access outside it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::atomic::Ordering;
use vecring_core::internal::abi::{SlotDesc, DESC_STAMP_ONE};
use vecring_core::{
    Consumer, Corruption, Frame, Geometry, HeapRing, Producer, PushError, RecvError, RingStorage,
    SendError,
};

/// The input, read front to back; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n.min(self.0.len()));
        self.0 = b;
        a
    }
}

/// A small geometry: 2 to 64 slots of 64 to 256 bytes, and a largest
/// frame the geometry admits.
fn geometry(inp: &mut Input) -> Geometry {
    let b = inp.u8();
    let slot_count = 2u32 << (b % 6);
    let slot_size = 64u32 << ((b >> 3) % 3);
    let wanted = u32::from(inp.u16()) % 9216 + 1;
    // The largest frame must fit half the ring.
    let fits = (slot_count / 2 * slot_size).min(9216);
    Geometry::with_max_frame_len(slot_count, slot_size, wanted.min(fits))
        .expect("in range by construction")
}

/// A peer index: usually near `base` (valid or just off), sometimes any.
fn index_near(inp: &mut Input, base: u64, slot_count: u32) -> u64 {
    let mode = inp.u8();
    if mode >= 240 {
        return inp.u64();
    }
    let span = 2 * u64::from(slot_count) + 2;
    let delta = u64::from(mode >> 1) % span;
    if mode & 1 == 0 {
        base.wrapping_add(delta)
    } else {
        base.wrapping_sub(delta)
    }
}

/// The peer's hand in the ring's memory.
struct Peer {
    ring: HeapRing,
    g: Geometry,
}

impl Peer {
    fn data_len(&self) -> usize {
        self.g.slot_count() as usize * self.g.slot_size() as usize
    }

    /// Writes the descriptor of `slot` (as [`Peer::desc_word`] reads it
    /// from the input), the lap taken from free-running `base`.
    fn write_desc(&self, inp: &mut Input, slot: usize, base: u64) {
        let descs = self.ring.descs();
        let slot = slot % descs.len();
        let word = self.desc_word(inp, slot, base);
        descs[slot].0.store(word, Ordering::Release);
    }

    /// A descriptor word for `slot`: see the module documentation. The
    /// slot's free-running index is the first at or after `base`.
    fn desc_word(&self, inp: &mut Input, slot: usize, base: u64) -> u64 {
        let low = u64::from(inp.u16()) | u64::from(inp.u8()) << 16;
        let sel = inp.u8();
        let count = u64::from(self.g.slot_count());
        let shift = self.g.slot_count().trailing_zeros();
        let index = base.wrapping_add((slot as u64).wrapping_sub(base) & (count - 1));
        let stamp = SlotDesc::stamp(index, shift);
        match sel {
            0..=191 => low | stamp,
            192..=223 => low | stamp.wrapping_sub(DESC_STAMP_ONE),
            224..=239 => low | stamp.wrapping_add(DESC_STAMP_ONE),
            _ => inp.u64(),
        }
    }

    fn write_data(&self, at: usize, bytes: &[u8]) {
        let len = self.data_len();
        let at = at % len;
        let n = bytes.len().min(len - at);
        // SAFETY: `at + n <= len`, the data area's size (`RingStorage`
        // contract); single-threaded, and the endpoint holds no reference
        // into the data between calls (its frames borrow a chunk that is
        // dropped before the peer writes).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ring.data().add(at), n) };
    }

    /// Fills descriptors (laps seen from free-running `base`) and data from
    /// the input.
    fn fill(&self, inp: &mut Input, base: u64) {
        for slot in 0..self.g.slot_count() as usize {
            self.write_desc(inp, slot, base);
        }
        let n = inp.u16() as usize;
        let bytes = inp.bytes(n).to_vec();
        self.write_data(0, &bytes);
    }

    /// Whether `seg` lies inside the data area.
    fn inside(&self, seg: &[u8]) -> bool {
        let start = self.ring.data() as usize;
        let at = seg.as_ptr() as usize;
        at >= start && at + seg.len() <= start + self.data_len()
    }

    /// The checks every frame handed out must pass.
    fn check_frame(&self, f: &Frame<'_>) {
        let len = f.len();
        assert!(
            (1..=self.g.max_frame_len() as usize).contains(&len),
            "frame of {len} bytes, max {}",
            self.g.max_frame_len()
        );
        let mut total = 0;
        for seg in f.segments() {
            assert!(self.inside(seg), "segment outside the data area");
            total += seg.len();
        }
        assert_eq!(total, len, "segments do not add up to the length");
        if let Some(c) = f.contiguous() {
            assert_eq!(c.len(), len);
            assert!(self.inside(c));
        }
        let mut copy = vec![0u8; len];
        assert_eq!(f.copy_to(&mut copy), len);
        assert_eq!(f.to_vec(), copy);
        assert!(u64::from(self.g.slots_for(len)) == f.slots());
    }
}

fn consumer(inp: &mut Input, peer: &Peer) {
    let g = peer.g;
    let max = g.max_frame_len() as usize;
    let ctl = peer.ring.control();
    let tail = inp.u64();
    ctl.tail.index.store(tail, Ordering::Relaxed);
    ctl.head
        .index
        .store(index_near(inp, tail, g.slot_count()), Ordering::Release);
    peer.fill(inp, tail);
    // SAFETY: the only consumer of this ring.
    let Ok(mut rx) = (unsafe { Consumer::attach(peer.ring.clone()) }) else {
        return;
    };
    let mut corrupt: Option<Corruption> = None;
    let note = |r: Result<(), Corruption>, corrupt: &mut Option<Corruption>| match r {
        Ok(()) => assert!(corrupt.is_none(), "a call succeeded after a corruption"),
        Err(c) => *corrupt = Some(c),
    };
    let mut buf = vec![0u8; 10_000];
    while !inp.is_empty() {
        match inp.u8() % 9 {
            0 => {
                let cap = inp.u16() as usize % (max + 64);
                match rx.recv(&mut buf[..cap]) {
                    Ok(n) => {
                        assert!(
                            (1..=max).contains(&n) && n <= cap,
                            "recv gave {n} (cap {cap})"
                        );
                        note(Ok(()), &mut corrupt);
                    }
                    Err(RecvError::BufferTooSmall { needed }) => {
                        assert!(needed > cap && needed <= max, "needed {needed} (cap {cap})");
                        note(Ok(()), &mut corrupt);
                    }
                    Err(RecvError::Corrupt(c)) => note(Err(c), &mut corrupt),
                    Err(RecvError::Empty) => note(Ok(()), &mut corrupt),
                }
            }
            1 => {
                let k = inp.u8() as usize % 9;
                let cap = inp.u16() as usize % (max + 64);
                let mut bufs = vec![vec![0u8; cap]; k];
                let mut lens = vec![usize::MAX; k];
                match rx.recv_batch(&mut bufs, &mut lens) {
                    Ok(n) => {
                        assert!(n <= k);
                        for &len in &lens[..n] {
                            assert!((1..=max.min(cap)).contains(&len), "frame of {len}");
                        }
                        note(Ok(()), &mut corrupt);
                    }
                    Err(RecvError::BufferTooSmall { needed }) => {
                        assert!(needed > cap && needed <= max);
                        note(Ok(()), &mut corrupt);
                    }
                    Err(RecvError::Corrupt(c)) => note(Err(c), &mut corrupt),
                    Err(RecvError::Empty) => note(Ok(()), &mut corrupt),
                }
            }
            2 => {
                let want = inp.u8() as usize;
                let keep = inp.u8() & 1 == 1;
                let r = rx.read_chunk(want).and_then(|mut chunk| {
                    let mut n = 0;
                    while let Some(f) = chunk.next_frame()? {
                        peer.check_frame(&f);
                        n += 1;
                        assert!(n <= want, "more frames than asked for");
                    }
                    if keep {
                        chunk.keep();
                    }
                    Ok(())
                });
                note(r, &mut corrupt);
            }
            3 => {
                let want = inp.u8() as usize;
                let r = rx.read_chunk(want).and_then(|mut chunk| {
                    while let Some(run) = chunk.next_run()? {
                        let len = run.frame_len();
                        let count = run.len();
                        let mut seen = 0;
                        for f in run {
                            assert_eq!(f.len(), len, "a run of mixed lengths");
                            peer.check_frame(&f);
                            seen += 1;
                        }
                        assert_eq!(seen, count, "a run's length is not its frames");
                    }
                    Ok(())
                });
                note(r, &mut corrupt);
            }
            4 => note(rx.ready_slots().map(|_| ()), &mut corrupt),
            5 => {
                let to = index_near(inp, rx.released_position(), g.slot_count());
                rx.release_to(to);
            }
            6 => {
                let head = ctl.head.index.load(Ordering::Relaxed);
                let next = index_near(inp, head, g.slot_count());
                ctl.head.index.store(next, Ordering::Release);
            }
            7 => {
                let slot = inp.u8() as usize;
                peer.write_desc(inp, slot, rx.read_position());
            }
            _ => {
                let at = inp.u16() as usize;
                let n = inp.u8() as usize;
                let bytes = inp.bytes(n).to_vec();
                peer.write_data(at, &bytes);
            }
        }
        if corrupt.is_some() {
            assert!(rx.corruption().is_some(), "a corruption not remembered");
        }
    }
}

fn producer(inp: &mut Input, peer: &Peer) {
    let g = peer.g;
    let max = g.max_frame_len() as usize;
    let ctl = peer.ring.control();
    let head = inp.u64();
    ctl.head.index.store(head, Ordering::Relaxed);
    ctl.tail
        .index
        .store(index_near(inp, head, g.slot_count()), Ordering::Release);
    peer.fill(inp, head);
    // SAFETY: the only producer of this ring.
    let Ok(mut tx) = (unsafe { Producer::attach(peer.ring.clone()) }) else {
        return;
    };
    let frame = vec![0x5au8; 10_000];
    let push_ok = |r: Result<(), PushError>, len: usize| match r {
        Ok(()) => assert!((1..=max).contains(&len)),
        Err(PushError::Empty) => assert_eq!(len, 0),
        Err(PushError::TooLarge { .. }) => assert!(len > max),
        Err(PushError::Full) => assert!((1..=max).contains(&len)),
    };
    while !inp.is_empty() {
        match inp.u8() % 6 {
            0 => {
                let len = inp.u16() as usize % (max + 64);
                match tx.send(&frame[..len]) {
                    Ok(()) => push_ok(Ok(()), len),
                    Err(SendError::Push(p)) => push_ok(Err(p), len),
                    Err(SendError::Corrupt(_)) => assert!(tx.corruption().is_some()),
                }
            }
            1 => {
                let k = inp.u8() as usize % 9;
                let lens: Vec<usize> = (0..k).map(|_| inp.u16() as usize % (max + 64)).collect();
                let frames: Vec<&[u8]> = lens.iter().map(|&n| &frame[..n]).collect();
                match tx.send_batch(frames.iter().copied()) {
                    Ok(n) => {
                        assert!(n <= k);
                        for &len in &lens[..n] {
                            push_ok(Ok(()), len);
                        }
                    }
                    Err(SendError::Push(PushError::Empty)) => assert!(lens.contains(&0)),
                    Err(SendError::Push(PushError::TooLarge { .. })) => {
                        assert!(lens.iter().any(|&l| l > max))
                    }
                    Err(SendError::Push(PushError::Full)) => {}
                    Err(SendError::Corrupt(_)) => assert!(tx.corruption().is_some()),
                }
            }
            2 => {
                let slots = inp.u8() as usize;
                let commit = inp.u8() & 1 == 1;
                let ops = inp.u8() % 8;
                let plan: Vec<(u8, usize, usize)> = (0..ops)
                    .map(|_| {
                        (
                            inp.u8(),
                            inp.u16() as usize % (max + 64),
                            inp.u8() as usize % 5,
                        )
                    })
                    .collect();
                if let Ok(mut chunk) = tx.write_chunk(slots) {
                    for (how, len, count) in plan {
                        match how % 3 {
                            0 => push_ok(chunk.push(&frame[..len]), len),
                            1 => {
                                let r = chunk.push_with(len, |w| {
                                    assert_eq!(w.len(), len);
                                    for seg in w.segments_mut() {
                                        assert!(peer.inside(seg), "segment outside the data area");
                                        seg.fill(0xa5);
                                    }
                                });
                                push_ok(r, len);
                            }
                            _ => {
                                let r = chunk.push_run(len, count, |_, w| {
                                    assert_eq!(w.len(), len);
                                    w.append(&frame[..len]);
                                });
                                match r {
                                    Ok(n) => {
                                        assert!(n <= count);
                                        if n > 0 {
                                            push_ok(Ok(()), len);
                                        }
                                    }
                                    Err(e) => push_ok(Err(e), len),
                                }
                            }
                        }
                    }
                    if commit {
                        chunk.commit();
                    }
                } else {
                    assert!(tx.corruption().is_some());
                }
            }
            3 => {
                let unread = tx.unread_frames();
                assert!(
                    unread <= u64::from(g.slot_count()),
                    "{unread} frames unread"
                );
            }
            4 => {
                let tail = ctl.tail.index.load(Ordering::Relaxed);
                let next = index_near(inp, tail, g.slot_count());
                ctl.tail.index.store(next, Ordering::Release);
            }
            _ => {
                // The peer scribbles on the producer's own index, which the
                // producer never reads back.
                let head = ctl.head.index.load(Ordering::Relaxed);
                ctl.head
                    .index
                    .store(index_near(inp, head, g.slot_count()), Ordering::Relaxed);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let side = inp.u8();
    let g = geometry(&mut inp);
    let peer = Peer {
        ring: HeapRing::new(g),
        g,
    };
    if side & 1 == 0 {
        consumer(&mut inp, &peer);
    } else {
        producer(&mut inp, &peer);
    }
});
