//! The reading end of a ring, all of its methods but opening a chunk
//! (`read_chunk`) and the optional
//! hold-back's: attaching, finding published frames by their descriptors'
//! stamps, publishing `tail`, the copying calls [`Consumer::recv`] and
//! [`Consumer::recv_batch`], the word a monitoring wait watches
//! ([`Consumer::ready_word`]), and a wait for frames
//! ([`Consumer::prepare_wait`]).

use super::bytes::copy_bytes;
use super::copy::RUN;
use super::error::{Corruption, RecvError};
use super::shape::{SeenDesc, Shape};
use super::stats::EndpointStats;
use super::storage::{model_read, Bell, RingStorage};
use super::wait::{ReadyWord, WaitDecision, WaitProtocol};
use crate::abi::DESC_STAMP_MASK;
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
    /// The end of the frames found published from `tail` on, each
    /// descriptor checked (stamp, length, flags, within the ring) by
    /// [`Consumer::find_ready`], or `tail` when the readers went past
    /// them; `cached_head - released` is in `tail - released..=slot_count`.
    /// The readers do not need it: they check each descriptor's stamp as
    /// they read it. It answers [`Consumer::ready_slots`] and the
    /// hold-back, and tells a frame taken back from one never found.
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
    /// Our side of the sleep/wake protocol (`ring::wait`).
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
    /// Frames published there already are found by their descriptors, as
    /// any other.
    ///
    /// # Safety
    /// At most one `Consumer` may exist for a ring in this process at a time.
    ///
    /// # Errors
    /// None in this version: the producer's index is not read. The
    /// `Result` is kept for storage that checks more at attach.
    pub unsafe fn attach(storage: S) -> Result<Self, Corruption> {
        let shape = Shape::of(&storage);
        let ctl = storage.control();
        // Relaxed: our own index, written by earlier consumers of this
        // ring; any value is a position like another (the descriptors
        // there say whether frames are published).
        let tail = ctl.tail.index.load(Ordering::Relaxed);
        let wait = WaitProtocol::attach(&ctl.consumer_wait);
        Ok(Consumer {
            storage,
            shape,
            tail,
            released: tail,
            cached_head: tail,
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

    /// Looks for frames published after those found already, at most
    /// `frames` of them (see [`Shape::scan`]), and moves `cached_head`
    /// past them. A corrupt descriptor ends the search, and poisons the
    /// consumer when it is the first (at the read position); otherwise
    /// the reader that reaches it reports it, at its frame.
    pub(super) fn find_ready(&mut self, frames: u64) -> Result<(), Corruption> {
        let shape = self.shape;
        let limit = self.released.wrapping_add(u64::from(shape.slot_count));
        // `seen` stays the last frame *read* (the hold-back asks about it).
        let mut seen = self.seen;
        let (at, bad) = shape.scan(self.cached_head, limit, frames, &mut seen);
        if let (Some(c), true) = (bad, at == self.tail) {
            return Err(self.poison(c));
        }
        self.cached_head = at;
        Ok(())
    }

    /// The end of the ring's capacity from the last release: no frame
    /// lies at or past it.
    #[inline(always)]
    pub(super) fn capacity_end(&self) -> u64 {
        self.released.wrapping_add(u64::from(self.shape.slot_count))
    }

    /// Whether the frame at `pos` (at or after `tail`) was found published
    /// by [`find_ready`](Self::find_ready): a descriptor there without its
    /// stamp now was taken back by the peer, which is corruption, where
    /// before it was only not published yet.
    #[inline]
    pub(super) fn found_before(&self, pos: u64) -> bool {
        self.cached_head.wrapping_sub(self.released) > pos.wrapping_sub(self.released)
    }

    /// Moves the read position to `pos`, after frames read, and
    /// `cached_head` with it if it was passed.
    #[inline(always)]
    pub(super) fn read_to(&mut self, pos: u64) {
        // Both ends are at or after `tail` (within the capacity from
        // `released`): `cached_head` was passed if it was no further.
        if self.cached_head.wrapping_sub(self.tail) <= pos.wrapping_sub(self.tail) {
            self.cached_head = pos;
        }
        self.tail = pos;
    }

    /// Slots published and not yet read, looking for newly published
    /// frames if none are known. Reads the descriptors from the read
    /// position, not the producer's index.
    #[inline]
    pub fn ready_slots(&mut self) -> Result<usize, Corruption> {
        self.ready_for(u64::MAX)
    }

    /// [`ready_slots`](Self::ready_slots) for a reader of at most `frames`
    /// frames: looks for no more than that many.
    #[inline]
    pub(super) fn ready_for(&mut self, frames: u64) -> Result<usize, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        if self.cached_head == self.tail {
            self.find_ready(frames)?;
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
        // a ping-pong's instructions): the descriptor at the read position
        // holds the length and flags validated last with this lap's stamp,
        // and the frame lies within the ring's capacity, before the end of
        // the data area, and fits `buf`. One load of one line says the
        // frame is ready; the producer's index is not read. Otherwise the
        // chunk path looks for frames and checks the descriptor in full.
        if self.poisoned.is_none() {
            let shape = self.shape;
            let tail = self.tail;
            // Acquire: pairs with the producer's Release store of this
            // descriptor (`put_desc`): the frame's bytes are visible once
            // its stamp is. Read once.
            let word = shape.desc(tail).0.load(Ordering::Acquire);
            let stamp = shape.stamp(tail);
            let seen = self.seen;
            let room = u64::from(shape.slot_count) - tail.wrapping_sub(self.released);
            if word == seen.bits | stamp
                && seen.slots <= room
                && seen.len <= buf.len()
                && shape.slot(tail) as u64 + seen.slots <= u64::from(shape.slot_count)
            {
                model_read(&self.storage, tail, seen.slots);
                // SAFETY: the frame's `seen.len` bytes lie in published
                // slots from `tail` on, before the end of the data area, and
                // `buf` has room for them.
                unsafe { copy_bytes(buf.as_mut_ptr(), shape.slot_ptr(tail), seen.len) };
                self.read_to(tail.wrapping_add(seen.slots));
                self.stats.frames += 1;
                self.stats.bytes += seen.len as u64;
                self.publish_release(self.tail);
                return Ok(seen.len);
            }
            if word & DESC_STAMP_MASK != stamp && self.cached_head == tail {
                // Not published yet, and nothing found before: empty.
                return Err(RecvError::Empty);
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
        // per lap) are copied from a fixed base. No search ahead: each
        // descriptor is loaded once, as its frame is reached, and its
        // stamp checked with the rest of the word.
        let max = bufs.len().min(lens.len());
        if let Some(c) = self.poisoned {
            return Err(c.into());
        }
        // Frames lie before the end of the ring's capacity; which of them
        // are published, their descriptors' stamps say. Under a hold-back,
        // which counts the ready slots first (see `HoldBack`), the frames
        // found then.
        let end = if self.hold_below == 0 {
            self.capacity_end()
        } else {
            self.ready_for(max as u64)?;
            if self.holding() {
                return Ok(0);
            }
            self.cached_head
        };
        let shape = self.shape;
        let start = self.tail;
        let avail = end.wrapping_sub(start);
        let run = shape.run_from(start);
        let mut seen = self.seen;
        let (mut off, mut n, mut bytes) = (0u64, 0usize, 0u64);
        // Up to here from `start`, frames need no wrap check of their own.
        let clear = avail.min(run.to_end);
        // Up to here, a group of four single-slot frames.
        let group_end = clear.saturating_sub(RUN as u64 - 1);
        while n < max && off < avail {
            if seen.slots == 1 && (32..=64).contains(&seen.len) && off < group_end {
                // As many groups as fit before `group_end` and in `bufs`.
                let groups = (group_end - off)
                    .div_ceil(RUN as u64)
                    .min(((max - n) / RUN) as u64) as usize;
                let end = n + groups * RUN;
                // SAFETY: `seen` is a one-slot frame of 32 to 64 bytes
                // (tested above); the groups end before `group_end + RUN -
                // 1`, i.e. before both the end of the capacity and the end
                // of the data area.
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
                // `seen`, not published, or a buffer too small for it.
            }
            // SAFETY: `off < avail`, `clear` is before the end of the data
            // area and of the capacity, and `seen` is `NONE` or validated.
            let (copied, stop) = unsafe {
                shape.copy_like_seen(
                    &run,
                    off,
                    clear,
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
            // The descriptor at `pos`, read once (by `copy_like_seen`, or
            // here), checked, then used. Acquire, here as there: pairs
            // with the producer's Release store of this descriptor
            // (`put_desc`): the frame's bytes are visible once its stamp
            // is.
            let word = match stop {
                Some(word) => word,
                None => shape.desc(pos).0.load(Ordering::Acquire),
            };
            let stamp = shape.stamp(pos);
            let checked = match shape.frame_of(word, stamp, ready, &mut seen) {
                Some(frame) => Ok(frame),
                // Not published (yet): the end of the batch, unless it was
                // found published before and taken back.
                None if word & DESC_STAMP_MASK != stamp && !self.found_before(pos) => break,
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
            self.read_to(pos);
            self.stats.frames += n as u64;
            self.stats.bytes += bytes;
            self.publish_release(pos);
        }
        Ok(n)
    }
}

impl<S: RingStorage> Consumer<S> {
    /// Prepares to sleep until frames arrive.
    ///
    /// Returns [`WaitDecision::Ready`] when frames are ready after all (do not
    /// sleep; read them), [`WaitDecision::Sleep`] when the producer will ring the
    /// doorbell after its next publish, or [`WaitDecision::Nap`] when it may not
    /// yet (sleep on the doorbell with a short timeout). After a `Sleep` or
    /// `Nap`, call [`cancel_wait`](Self::cancel_wait) on waking, so that
    /// the producer stops checking for a sleeper (forgetting it costs
    /// nothing more: the producer rings once per sleep).
    ///
    /// Once a consumer of a ring has slept, the producer checks for
    /// sleepers behind a full fence after every publish, for the rest of
    /// the ring's life: the price of interrupt mode.
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring.
    pub fn prepare_wait(&mut self) -> Result<WaitDecision, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        if self.cached_head != self.tail {
            return Ok(WaitDecision::Ready);
        }
        let ctl = self.storage.control();
        let acked = self.wait.prepare(&ctl.consumer_wait, &ctl.producer_wait);
        // The re-check after the fence in `prepare` (see `wait`): the
        // descriptor at our read position.
        self.find_ready(1)?;
        if self.cached_head != self.tail {
            self.cancel_wait();
            return Ok(WaitDecision::Ready);
        }
        Ok(if acked {
            WaitDecision::Sleep
        } else {
            WaitDecision::Nap
        })
    }

    /// Says the consumer runs again: the producer stops ringing until the
    /// next [`prepare_wait`](Self::prepare_wait). Harmless when awake.
    pub fn cancel_wait(&mut self) {
        if self.wait.sleeping() {
            self.wait.wake(&self.storage.control().consumer_wait);
        }
    }
}

#[cfg(not(loom))]
impl<S: RingStorage> Consumer<S> {
    /// The word that changes when this consumer's next frame is ready:
    /// the descriptor of the slot it reads next, which publishes that
    /// frame with the stamp of the reader's lap. It moves on with every
    /// read.
    pub fn ready_word(&self) -> ReadyWord {
        let tail = self.read_position();
        ReadyWord {
            addr: self.shape.desc(tail).0.as_ptr().cast_const(),
            mask: DESC_STAMP_MASK,
            value: self.shape.stamp(tail),
            ready_if_equal: true,
        }
    }
}
