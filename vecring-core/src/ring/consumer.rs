//! The reading end of a ring: attaching, the view of the producer's index,
//! publishing `tail`, and the copying calls [`Consumer::recv`] and
//! [`Consumer::recv_batch`].

use super::bytes::copy_bytes;
use super::copy::RUN;
use super::descriptor::{SeenDesc, Shape};
use super::error::{Corruption, IndexKind, RecvError};
use super::stats::EndpointStats;
use super::storage::{model_read, Bell, RingStorage};
use super::wait_line::WaitProtocol;
use crate::geometry::Geometry;
use crate::sync::Ordering;
use std::time::{Duration, Instant};

/// The reading end of a ring.
pub struct Consumer<S: RingStorage> {
    pub(super) storage: S,
    pub(super) shape: Shape,
    /// Private read position: the next slot to read.
    pub(super) tail: u64,
    /// Private copy of the index we last published: slots before it belong
    /// to the producer again. Equal to `tail` unless frames were
    /// [kept](super::ReadChunk::keep); `released <= tail <= cached_head`.
    released: u64,
    /// Last validated value of the producer's `head`; `cached_head -
    /// released` is in `0..=slot_count`.
    pub(super) cached_head: u64,
    pub(super) poisoned: Option<Corruption>,
    pub(super) stats: EndpointStats,
    /// The descriptor validated last (see [`Shape::frame_of`]).
    pub(super) seen: SeenDesc,
    /// See [`Consumer::set_hold_back`]: fewer ready slots than this (0:
    /// never) may be held back...
    pub(super) hold_below: u64,
    /// ...for at most this long.
    pub(super) hold_wait: Duration,
    /// When the frames held back now were first held back.
    pub(super) held_since: Option<Instant>,
    /// Our side of the sleep/wake protocol (`ring::wait_line`).
    pub(super) wait: WaitProtocol,
}

impl<S: RingStorage> Drop for Consumer<S> {
    fn drop(&mut self) {
        self.wait.detach(&self.storage.control().consumer_wait);
    }
}

// SAFETY: as for `Producer`: the raw pointers in `Shape` point into
// `storage`, which is `Send` and `Sync` and lives as long as the endpoint;
// an endpoint is used by one thread at a time (`&mut self`).
unsafe impl<S: RingStorage> Send for Consumer<S> {}

impl<S: RingStorage> Consumer<S> {
    /// The consumer of the ring in `storage`, starting at the shared tail.
    ///
    /// # Safety
    /// At most one `Consumer` may exist for a ring in this process at a time.
    pub unsafe fn attach(storage: S) -> Result<Self, Corruption> {
        let shape = Shape::of(&storage);
        let ctl = storage.control();
        let tail = ctl.tail.index.load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release store of `head` in
        // `Producer::publish`, as in `refresh_head`.
        let head = ctl.head.index.load(Ordering::Acquire);
        if head.wrapping_sub(tail) > u64::from(shape.slot_count) {
            return Err(Corruption::Index {
                kind: IndexKind::Head,
                old: tail,
                new: head,
                slot_count: shape.slot_count,
            });
        }
        let wait = WaitProtocol::attach(&ctl.consumer_wait);
        Ok(Consumer {
            storage,
            shape,
            tail,
            released: tail,
            cached_head: head,
            poisoned: None,
            seen: SeenDesc::NONE,
            stats: EndpointStats::default(),
            hold_below: 0,
            hold_wait: Duration::ZERO,
            held_since: None,
            wait,
        })
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> Geometry {
        self.storage.geometry()
    }

    /// Counters of this endpoint.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// The corruption that poisoned this endpoint, if any.
    pub fn corruption(&self) -> Option<Corruption> {
        self.poisoned
    }

    pub(super) fn poison(&mut self, c: Corruption) -> Corruption {
        if self.poisoned.is_none() {
            log::error!("vecring: consumer stops: {c}");
            self.stats.corruptions += 1;
            self.poisoned = Some(c);
        }
        c
    }

    /// Reads the producer's index once and checks it moved forward, to at
    /// most a full ring ahead of us.
    pub(super) fn refresh_head(&mut self) -> Result<(), Corruption> {
        // Nothing is prefetched here: the next frame's lines are the ones
        // the producer is writing while we poll, and fetching them on every
        // poll pulls them away from it mid-write. (It did hide one miss of
        // a ping-pong's latency, but cost the link a fifth of its 64-byte
        // throughput whenever the consumer kept up with the producer.)
        // Acquire: pairs with the producer's Release store of `head` in
        // `Producer::publish`, making the slots and descriptors visible.
        let head = self.storage.control().head.index.load(Ordering::Acquire);
        let ready = head.wrapping_sub(self.released);
        let known = self.cached_head.wrapping_sub(self.released);
        if ready > u64::from(self.shape.slot_count) || ready < known {
            return Err(self.head_corrupt(head));
        }
        self.cached_head = head;
        Ok(())
    }

    /// Poisons the consumer for the invalid producer index `head`: out of
    /// line, so that the refresh stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn head_corrupt(&mut self, head: u64) -> Corruption {
        self.poison(Corruption::Index {
            kind: IndexKind::Head,
            old: self.cached_head,
            new: head,
            slot_count: self.shape.slot_count,
        })
    }

    /// Slots published and not yet read, refreshing the producer's index if
    /// none are known.
    #[inline]
    pub fn ready_slots(&mut self) -> Result<usize, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        if self.cached_head == self.tail {
            self.refresh_head()?;
        }
        Ok(self.cached_head.wrapping_sub(self.tail) as usize)
    }

    /// Publishes `index` as our tail: slots before it go back to the
    /// producer.
    pub(super) fn publish_release(&mut self, index: u64) {
        self.released = index;
        // Release: pairs with the producer's Acquire load of `tail` in
        // `Producer::refresh_tail` (and `Producer::attach`,
        // `Producer::unread_frames`); our reads of the slots happen before
        // the producer may reuse them.
        self.storage
            .control()
            .tail
            .index
            .store(index, Ordering::Release);
        let ctl = self.storage.control();
        self.wait.after_store(
            &self.storage,
            &ctl.consumer_wait,
            &ctl.producer_wait,
            &ctl.head.index,
            Bell::Space,
        );
    }

    /// Releases the slots of kept frames up to (not including) slot
    /// `index`, which must lie between the last release and the read
    /// position; returns false (and does nothing) otherwise.
    pub fn release_to(&mut self, index: u64) -> bool {
        let ahead = index.wrapping_sub(self.released);
        if ahead == 0 || ahead > self.tail.wrapping_sub(self.released) {
            return false;
        }
        self.publish_release(index);
        true
    }

    /// The index of the next slot to read.
    pub fn read_position(&self) -> u64 {
        self.tail
    }

    /// The index up to which slots have been released to the producer.
    pub fn released_position(&self) -> u64 {
        self.released
    }

    /// The ring's storage (e.g. to keep a shared region mapped).
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// Copies the next frame into `buf` and returns its length. Never held
    /// back ([`set_hold_back`](Self::set_hold_back) delays batch reads only).
    ///
    /// # Errors
    /// [`RecvError::Empty`] when no frame waits,
    /// [`RecvError::BufferTooSmall`] when it does not fit (it stays queued),
    /// [`RecvError::Corrupt`] if the peer corrupted the ring.
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        // The common case without a chunk (whose set-up and spills doubled
        // a ping-pong's instructions): the next frame's descriptor holds
        // the word validated last, and the frame lies in published slots
        // before the end of the data area and fits `buf`. Otherwise the
        // chunk path reads the descriptor again and checks it in full.
        if self.poisoned.is_none() {
            if self.cached_head == self.tail {
                self.refresh_head()?;
                if self.cached_head == self.tail {
                    return Err(RecvError::Empty);
                }
            }
            let shape = self.shape;
            let ready = self.cached_head.wrapping_sub(self.tail);
            // Relaxed: the Acquire load of `head` that covered this slot
            // (`Consumer::refresh_head` or `Consumer::attach`) made the
            // descriptor visible.
            let word = shape.desc(self.tail).0.load(Ordering::Relaxed);
            let seen = self.seen;
            if word == seen.word
                && seen.slots <= ready
                && seen.len <= buf.len()
                && shape.slot(self.tail) as u64 + seen.slots <= u64::from(shape.slot_count)
            {
                model_read(&self.storage, self.tail, seen.slots);
                // SAFETY: the frame's `seen.len` bytes lie in published
                // slots from `tail` on, before the end of the data area, and
                // `buf` has room for them.
                unsafe { copy_bytes(buf.as_mut_ptr(), shape.slot_ptr(self.tail), seen.len) };
                self.tail = self.tail.wrapping_add(seen.slots);
                self.stats.frames += 1;
                self.stats.bytes += seen.len as u64;
                self.publish_release(self.tail);
                return Ok(seen.len);
            }
        }
        self.recv_slow(buf)
    }

    /// [`recv`](Self::recv) through a chunk: a new descriptor (checked in
    /// full), a wrapping frame, a small buffer or a poisoned ring. Not held
    /// back, as the fast path is not.
    #[inline(never)]
    fn recv_slow(&mut self, buf: &mut [u8]) -> Result<usize, RecvError> {
        let mut chunk = self.chunk(1, false)?;
        let (frame, next) = match chunk.peek()? {
            Some(found) => found,
            None => return Err(RecvError::Empty),
        };
        if frame.len() > buf.len() {
            return Err(RecvError::BufferTooSmall {
                needed: frame.len(),
            });
        }
        let n = frame.copy_to(buf);
        chunk.advance(next);
        Ok(n)
    }

    /// Copies up to `bufs.len()` frames, frame `i` into `bufs[i]` with its
    /// length in `lens[i]`, releasing them with one index store. Stops early
    /// at a frame that does not fit its buffer (it stays queued).
    ///
    /// # Errors
    /// [`RecvError::BufferTooSmall`] if the first frame does not fit,
    /// [`RecvError::Corrupt`] if the ring is corrupt before the first frame.
    /// Returns `Ok(0)` when no frame waits or frames are held back
    /// ([`set_hold_back`](Self::set_hold_back)).
    pub fn recv_batch<B: AsMut<[u8]>>(
        &mut self,
        bufs: &mut [B],
        lens: &mut [usize],
    ) -> Result<usize, RecvError> {
        // The loop of `read_chunk` + `next_frame` + `copy_to`, flattened:
        // offsets, totals and the last descriptor seen stay in registers,
        // and frames before the end of the data area (all but at most one
        // per lap) are copied from a fixed base.
        let max = bufs.len().min(lens.len());
        self.ready_slots()?;
        if self.holding() {
            return Ok(0);
        }
        let shape = self.shape;
        let start = self.tail;
        let avail = self.cached_head.wrapping_sub(start);
        let run = shape.run_from(start);
        let mut seen = self.seen;
        let (mut off, mut n, mut bytes) = (0u64, 0usize, 0u64);
        // Up to here from `start`, a group of four single-slot frames needs
        // no wrap or published-slots check of its own.
        let group_end = avail.min(run.to_end).saturating_sub(RUN as u64 - 1);
        while n < max && off < avail {
            if seen.slots == 1 && (32..=64).contains(&seen.len) && off < group_end {
                // As many groups as fit before `group_end` and in `bufs`.
                let groups = (group_end - off)
                    .div_ceil(RUN as u64)
                    .min(((max - n) / RUN) as u64) as usize;
                let end = n + groups * RUN;
                // SAFETY: `seen` is a one-slot frame of 32 to 64 bytes
                // (tested above); the groups end before `group_end + RUN -
                // 1`, i.e. before both the published head and the end of
                // the data area.
                let copied = unsafe {
                    shape.copy_groups(&run, off, &seen, &mut bufs[n..end], &mut lens[n..end])
                };
                model_read(&self.storage, start.wrapping_add(off), copied as u64);
                n += copied;
                off += copied as u64;
                bytes += (copied * seen.len) as u64;
                if n == max || off == avail {
                    break;
                }
                // Otherwise the paths below take the next frame: not like
                // `seen`, or a buffer too small for it.
            }
            // SAFETY: `off < avail`, and `avail` slots from `start` are
            // published.
            let copied = unsafe {
                shape.copy_like_seen(
                    &run,
                    off,
                    avail.min(run.to_end),
                    &seen,
                    &mut bufs[n..max],
                    &mut lens[n..max],
                )
            };
            if copied > 0 {
                model_read(
                    &self.storage,
                    start.wrapping_add(off),
                    copied as u64 * seen.slots,
                );
                n += copied;
                off += copied as u64 * seen.slots;
                bytes += (copied * seen.len) as u64;
                if n == max || off == avail {
                    break;
                }
            }
            let pos = start.wrapping_add(off);
            let ready = avail - off;
            // Relaxed: ordered after the Acquire load of `head` that
            // produced `avail` (`Consumer::refresh_head` or
            // `Consumer::attach`); read once, checked, then used.
            let word = shape.desc(pos).0.load(Ordering::Relaxed);
            let checked = match shape.frame_of(word, ready, &mut seen) {
                Some(frame) => Ok(frame),
                None => shape.diagnose(pos, word, ready),
            };
            let (len, slots) = match checked {
                Ok(frame) => frame,
                Err(c) => {
                    let c = self.poison(c);
                    if n == 0 {
                        return Err(c.into());
                    }
                    break;
                }
            };
            let buf = bufs[n].as_mut();
            if len > buf.len() {
                if n == 0 {
                    return Err(RecvError::BufferTooSmall { needed: len });
                }
                break;
            }
            model_read(&self.storage, start.wrapping_add(off), slots);
            // SAFETY: a validated frame of `len` bytes in `slots` slots;
            // `buf` has room for them (checked above).
            unsafe { shape.read_in_run(&run, off, slots, len, buf) };
            lens[n] = len;
            n += 1;
            bytes += len as u64;
            off += slots;
        }
        self.seen = seen;
        if n > 0 {
            let pos = start.wrapping_add(off);
            self.tail = pos;
            self.stats.frames += n as u64;
            self.stats.bytes += bytes;
            self.publish_release(pos);
        }
        Ok(n)
    }
}
