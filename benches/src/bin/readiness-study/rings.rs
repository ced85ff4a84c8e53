//! The study's rings: one mapping shared by the two forked processes
//! ([`Shared`]: control lines and two rings), and a minimal producer
//! ([`Tx`]) and consumer ([`Rx`]) of each readiness protocol ([`Proto`]).

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const SLOTS: u64 = 32768;
pub(crate) const SLOT_SHIFT: u32 = 15;
pub(crate) const SLOT: usize = 64;
pub(crate) const BATCH: usize = 32;
/// Slots a slot-protocol consumer reads before it stores its index.
pub(crate) const CREDIT: u64 = SLOTS / 16;
/// Bytes of the line-seq header.
pub(crate) const HDR: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Proto {
    Index,
    DescSeq,
    /// `DescSeq` with each descriptor stored right after its frame, as
    /// the ring's `send_batch` does.
    DescEach,
    LineSeq,
}

pub(crate) const PROTOS: [Proto; 4] = [
    Proto::Index,
    Proto::DescSeq,
    Proto::DescEach,
    Proto::LineSeq,
];

impl Proto {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Proto::Index => "index",
            Proto::DescSeq => "desc-seq",
            Proto::DescEach => "desc-each",
            Proto::LineSeq => "line-seq",
        }
    }
}

/// One ring in the shared mapping: head line, tail line, descriptors, data.
#[repr(C, align(64))]
pub(crate) struct Line(AtomicU64);

pub(crate) struct RingMem {
    head: *const Line,
    tail: *const Line,
    descs: *const AtomicU64,
    data: *mut u8,
}

pub(crate) const RING_BYTES: usize = 128 + SLOTS as usize * 8 + SLOTS as usize * SLOT;
/// Control lines of the run: stop flag, consumer's frame count and times.
pub(crate) const CTL_BYTES: usize = 4096;

pub(crate) struct Shared {
    base: *mut u8,
    len: usize,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        let len = CTL_BYTES + 2 * RING_BYTES;
        // SAFETY: an anonymous shared mapping, zeroed by the kernel, kept
        // until `Drop` and inherited by the forked child.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap");
        Shared {
            base: p.cast(),
            len,
        }
    }

    pub(crate) fn ctl(&self, i: usize) -> &AtomicU64 {
        // SAFETY: control line `i` (< 64) lies in the first 4096 bytes of
        // the mapping, 64-byte aligned, used only as an atomic.
        unsafe { &*self.base.add(i * 64).cast::<AtomicU64>() }
    }

    pub(crate) fn ring(&self, r: usize) -> RingMem {
        // SAFETY: ring `r` (0 or 1) lies inside the mapping; its parts are
        // 64-byte aligned (CTL_BYTES and RING_BYTES are multiples of 64).
        unsafe {
            let at = self.base.add(CTL_BYTES + r * RING_BYTES);
            RingMem {
                head: at.cast(),
                tail: at.add(64).cast(),
                descs: at.add(128).cast(),
                data: at.add(128 + SLOTS as usize * 8),
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: our mapping, no longer used.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

pub(crate) fn lap_word(index: u64, len: usize) -> u64 {
    (((index >> SLOT_SHIFT) + 1) << 16) | len as u64
}

pub(crate) fn expected_stamp(index: u64) -> u64 {
    (index >> SLOT_SHIFT) + 1
}

impl RingMem {
    pub(crate) fn head(&self) -> &AtomicU64 {
        // SAFETY: the ring's head line.
        unsafe { &(*self.head).0 }
    }
    pub(crate) fn tail(&self) -> &AtomicU64 {
        // SAFETY: the ring's tail line.
        unsafe { &(*self.tail).0 }
    }
    pub(crate) fn desc(&self, index: u64) -> &AtomicU64 {
        // SAFETY: the masked slot is below SLOTS.
        unsafe { &*self.descs.add((index & (SLOTS - 1)) as usize) }
    }
    pub(crate) fn slot(&self, index: u64) -> *mut u8 {
        // SAFETY: the masked slot is below SLOTS.
        unsafe { self.data.add(((index & (SLOTS - 1)) as usize) * SLOT) }
    }
    /// The first 8 bytes of a slot, as the line-seq header.
    pub(crate) fn header(&self, index: u64) -> &AtomicU64 {
        // SAFETY: a slot's first 8 bytes, 64-byte aligned.
        unsafe { &*self.slot(index).cast::<AtomicU64>() }
    }
    /// Copies `src` into the data area from slot `index` at byte `off`,
    /// wrapping at its end.
    pub(crate) fn put(&self, index: u64, off: usize, src: &[u8]) {
        let start = ((index & (SLOTS - 1)) as usize) * SLOT + off;
        let total = SLOTS as usize * SLOT;
        let first = src.len().min(total - start);
        // SAFETY: both parts lie inside the data area; `src` is local.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.data.add(start), first);
            std::ptr::copy_nonoverlapping(src.as_ptr().add(first), self.data, src.len() - first);
        }
    }
    pub(crate) fn get(&self, index: u64, off: usize, dst: &mut [u8]) {
        let start = ((index & (SLOTS - 1)) as usize) * SLOT + off;
        let total = SLOTS as usize * SLOT;
        let first = dst.len().min(total - start);
        // SAFETY: as in `put`.
        unsafe {
            std::ptr::copy_nonoverlapping(self.data.add(start), dst.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(
                self.data,
                dst.as_mut_ptr().add(first),
                dst.len() - first,
            );
        }
    }
}

pub(crate) fn slots_for(proto: Proto, len: usize) -> u64 {
    let bytes = if proto == Proto::LineSeq {
        len + HDR
    } else {
        len
    };
    bytes.div_ceil(SLOT) as u64
}

pub(crate) struct Tx {
    mem: RingMem,
    proto: Proto,
    head: u64,
    cached_tail: u64,
}

impl Tx {
    pub(crate) fn new(mem: RingMem, proto: Proto) -> Tx {
        Tx {
            mem,
            proto,
            head: 0,
            cached_tail: 0,
        }
    }

    pub(crate) fn room(&mut self, slots: u64) -> bool {
        if self.head + slots - self.cached_tail <= SLOTS {
            return true;
        }
        // Acquire: pairs with the consumer's Release store of its index.
        self.cached_tail = self.mem.tail().load(Ordering::Acquire);
        self.head + slots - self.cached_tail <= SLOTS
    }

    /// Writes one frame; the slot protocols' word (descriptor or header)
    /// is stored only if `stamp`, since it publishes the frame.
    pub(crate) fn write(&mut self, frame: &[u8], stamp: bool) {
        let len = frame.len();
        let slots = slots_for(self.proto, len);
        match self.proto {
            Proto::Index => {
                self.mem.put(self.head, 0, frame);
                self.mem
                    .desc(self.head)
                    .store(len as u64, Ordering::Relaxed);
            }
            Proto::DescSeq | Proto::DescEach => self.mem.put(self.head, 0, frame),
            Proto::LineSeq => self.mem.put(self.head, HDR, frame),
        }
        if stamp {
            self.stamp(self.head, len);
        }
        self.head += slots;
    }

    /// Publishes the frame of `len` bytes at `index` (slot protocols).
    pub(crate) fn stamp(&self, index: u64, len: usize) {
        let word = match self.proto {
            Proto::Index => return,
            Proto::DescSeq | Proto::DescEach => self.mem.desc(index),
            Proto::LineSeq => self.mem.header(index),
        };
        // Release: pairs with the consumer's Acquire load of the word.
        word.store(lap_word(index, len), Ordering::Release);
    }

    pub(crate) fn publish(&self) {
        if self.proto == Proto::Index {
            // Release: pairs with the consumer's Acquire load of `head`.
            self.mem.head().store(self.head, Ordering::Release);
        }
    }

    pub(crate) fn send(&mut self, frame: &[u8]) -> bool {
        if !self.room(slots_for(self.proto, frame.len())) {
            return false;
        }
        self.write(frame, true);
        self.publish();
        true
    }

    /// Writes up to `n` copies of `frame`, then publishes them: the index
    /// once, or the slot words in reverse order, so that a consumer waiting
    /// for the first finds all of them written when it sees it.
    pub(crate) fn send_batch(&mut self, frame: &[u8], n: usize) -> usize {
        let slots = slots_for(self.proto, frame.len());
        let start = self.head;
        let mut sent = 0;
        let each = self.proto == Proto::DescEach;
        while sent < n && self.room(slots) {
            self.write(frame, each);
            sent += 1;
        }
        if !each {
            for i in (0..sent as u64).rev() {
                self.stamp(start + i * slots, frame.len());
            }
        }
        if sent > 0 {
            self.publish();
        }
        sent
    }
}

pub(crate) struct Rx {
    mem: RingMem,
    proto: Proto,
    tail: u64,
    released: u64,
    cached_head: u64,
}

impl Rx {
    pub(crate) fn new(mem: RingMem, proto: Proto) -> Rx {
        Rx {
            mem,
            proto,
            tail: 0,
            released: 0,
            cached_head: 0,
        }
    }

    /// The next frame's length if it is ready.
    pub(crate) fn ready(&mut self) -> Option<usize> {
        match self.proto {
            Proto::Index => {
                if self.cached_head == self.tail {
                    // Acquire: pairs with the producer's Release store of
                    // `head`.
                    self.cached_head = self.mem.head().load(Ordering::Acquire);
                    if self.cached_head == self.tail {
                        return None;
                    }
                }
                Some(self.mem.desc(self.tail).load(Ordering::Relaxed) as usize & 0xffff)
            }
            Proto::DescSeq | Proto::DescEach | Proto::LineSeq => {
                let word = if self.proto != Proto::LineSeq {
                    self.mem.desc(self.tail)
                } else {
                    self.mem.header(self.tail)
                }
                // Acquire: pairs with the producer's Release store of the
                // word.
                .load(Ordering::Acquire);
                (word >> 16 == expected_stamp(self.tail)).then_some(word as usize & 0xffff)
            }
        }
    }

    pub(crate) fn take(&mut self, len: usize, buf: &mut [u8]) {
        let off = if self.proto == Proto::LineSeq { HDR } else { 0 };
        self.mem.get(self.tail, off, &mut buf[..len]);
        self.tail += slots_for(self.proto, len);
    }

    pub(crate) fn release(&mut self, force: bool) {
        let due = match self.proto {
            Proto::Index => self.tail != self.released,
            _ => self.tail - self.released >= CREDIT || (force && self.tail != self.released),
        };
        if due {
            self.released = self.tail;
            // Release: pairs with the producer's Acquire load of the index.
            self.mem.tail().store(self.tail, Ordering::Release);
        }
    }

    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> Option<usize> {
        match self.ready() {
            Some(len) => {
                self.take(len, buf);
                self.release(false);
                Some(len)
            }
            None => {
                self.release(true);
                None
            }
        }
    }

    pub(crate) fn recv_batch(&mut self, bufs: &mut [[u8; 1536]]) -> usize {
        let mut n = 0;
        while n < bufs.len() {
            match self.ready() {
                Some(len) => {
                    self.take(len, &mut bufs[n]);
                    n += 1;
                }
                None => break,
            }
        }
        self.release(n == 0);
        n
    }
}
