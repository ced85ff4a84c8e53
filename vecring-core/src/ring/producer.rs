//! The writing end of a ring, all of its methods but opening a chunk
//! (`write_chunk`): attaching, the view of
//! the consumer's index, publishing frames (each by its descriptor's
//! stamp, then `head` once per batch as a hint), the copying calls
//! [`Producer::send`] and [`Producer::send_batch`], and a wait for room
//! ([`Producer::prepare_wait`]).

use super::bytes::{copy_bytes, prefetch_for_write, COPY_32_TO_64, COPY_ANY, COPY_MEMCPY};
use super::copy::{stream_like, StreamEnd};
use super::error::{Corruption, IndexKind, SendError};
use super::shape::{put_desc, LenPlan, Run, Shape};
use super::stats::EndpointStats;
use super::storage::{model_write, Bell, RingStorage};
use super::wait::{present, WaitDecision, WaitProtocol};
use crate::abi::SlotDesc;
use crate::geometry::Geometry;
use crate::sync::Ordering;

/// The most slots [`Producer::prefetch_next`] takes ahead: a burst of
/// 64-byte frames, the most a DPDK application usually sends at once.
const PREFETCH_NEXT_MAX: usize = 64;

/// The writing end of a ring.
pub struct Producer<S: RingStorage> {
    pub(super) storage: S,
    pub(super) shape: Shape,
    /// Private copy of our index: the next slot to fill. Never re-read from
    /// shared memory, so a peer scribbling on it cannot mislead us.
    pub(super) head: u64,
    /// Last validated value of the consumer's `tail`; `head - cached_tail`
    /// is in `0..=slot_count`.
    cached_tail: u64,
    pub(super) poisoned: Option<Corruption>,
    stats: EndpointStats,
    /// Frames earlier producers of this ring published before we
    /// attached ([`Producer::inherit`]): with `stats.frames`, the most
    /// frames of ours the ring can hold unread.
    inherited: u64,
    /// Our side of the sleep/wake protocol (`ring::wait`).
    pub(super) wait: WaitProtocol,
}

// SAFETY: the raw pointers in `Shape` point into `storage`, which is `Send`
// and `Sync` and lives as long as the endpoint; an endpoint is used by one
// thread at a time (`&mut self`).
unsafe impl<S: RingStorage> Send for Producer<S> {}

impl<S: RingStorage> Drop for Producer<S> {
    fn drop(&mut self) {
        self.wait.detach(&self.storage.control().producer_wait);
    }
}

impl<S: RingStorage> Producer<S> {
    /// The producer of the ring in `storage`, starting at the shared head.
    ///
    /// # Safety
    /// At most one `Producer` may exist for a ring in this process at a
    /// time (a second one in the *peer* process is tolerated: it can only
    /// garble frame contents).
    pub unsafe fn attach(storage: S) -> Result<Self, Corruption> {
        let shape = Shape::of(&storage);
        let ctl = storage.control();
        // Relaxed: our own index, written by earlier producers of this
        // ring and validated below against `tail`; it publishes nothing
        // (the descriptors' stamps do), so no store of the consumer's
        // pairs with this load.
        let head = ctl.head.index.load(Ordering::Relaxed);
        // Acquire: pairs with the consumer's Release store of `tail` in
        // `Consumer::publish_release`, as in `refresh_tail`.
        let tail = ctl.tail.index.load(Ordering::Acquire);
        let used = head.wrapping_sub(tail);
        if used > u64::from(shape.slot_count) {
            return Err(Corruption::Index {
                kind: IndexKind::Tail,
                old: head,
                new: tail,
                slot_count: shape.slot_count,
            });
        }
        let wait = WaitProtocol::attach(&ctl.producer_wait);
        Ok(Producer {
            storage,
            shape,
            head,
            cached_tail: tail,
            poisoned: None,
            stats: EndpointStats::default(),
            inherited: 0,
            wait,
        })
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> Geometry {
        self.storage.geometry()
    }

    /// Slots a frame of `len` bytes takes in this ring
    /// ([`Geometry::slots_for`], from the shape the endpoint keeps).
    #[inline]
    pub fn slots_for(&self, len: usize) -> u64 {
        self.shape.slots_for(len)
    }

    /// Counters of this endpoint.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// The corruption that poisoned this endpoint, if any.
    pub fn corruption(&self) -> Option<Corruption> {
        self.poisoned
    }

    fn poison(&mut self, c: Corruption) -> Corruption {
        if self.poisoned.is_none() {
            log::error!("vecring: producer stops: {c}");
            self.stats.corruptions += 1;
            self.poisoned = Some(c);
        }
        c
    }

    /// Reads the consumer's index once and checks it moved forward, by no
    /// more than the slots we have published.
    pub(super) fn refresh_tail(&mut self) -> Result<(), Corruption> {
        // Acquire: pairs with the consumer's Release store of `tail` in
        // `Consumer::publish_release`, so the consumer's reads of those
        // slots happen before we overwrite them.
        let tail = self.storage.control().tail.index.load(Ordering::Acquire);
        let advanced = tail.wrapping_sub(self.cached_tail);
        let outstanding = self.head.wrapping_sub(self.cached_tail);
        if advanced > outstanding {
            return Err(self.poison(Corruption::Index {
                kind: IndexKind::Tail,
                old: self.cached_tail,
                new: tail,
                slot_count: self.shape.slot_count,
            }));
        }
        self.cached_tail = tail;
        Ok(())
    }

    /// Slots free for writing, refreshing the consumer's index if fewer than
    /// `wanted` are known to be free.
    #[inline]
    pub(super) fn free_slots(&mut self, wanted: u64) -> Result<u64, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        let cap = u64::from(self.shape.slot_count);
        let mut free = cap - self.head.wrapping_sub(self.cached_tail);
        if free < wanted {
            self.refresh_tail()?;
            free = cap - self.head.wrapping_sub(self.cached_tail);
        }
        Ok(free)
    }

    /// After publishing a single frame, starts taking the line of the next
    /// slot for writing, if that slot is known to be free.
    ///
    /// A producer publishing one frame at a time is paced by something
    /// else (a reply, a timer): the next frame comes after a pause, and its
    /// first store would wait for a line last held by the consumer a lap
    /// ago. Taking it now moves that wait off the next frame's latency
    /// (`docs/benchmarks/design-notes.md`, "Prefetch", has the measurement).
    /// Batches are left to their sender ([`Producer::prefetch_next`]):
    /// in a tight loop the next batch's stores follow at once.
    #[inline(always)]
    fn prime_next_slot(&self, frames: usize) {
        if frames == 1 {
            self.prefetch_next(1);
        }
    }

    /// Starts taking the lines of the next `slots` free slots (at most
    /// 64) for writing; nothing is written, and slots not known to be free
    /// are left alone.
    ///
    /// For a producer whose next batch comes after other work of its own,
    /// as a DPDK application builds its next burst of packets before it
    /// sends it: each store of the batch into a slot would otherwise wait
    /// for the slot's line, last read by the consumer a lap ago. Taken
    /// now, the lines come while the producer does that other work.
    /// (eth_vecring's transmit path calls it after each burst:
    /// `docs/benchmarks/design-notes.md`, "Where the sending core's time
    /// goes at 64 bytes", has the measurement.) A producer sending batch
    /// after batch in a tight loop gains nothing from it.
    #[inline(always)]
    pub fn prefetch_next(&self, slots: usize) {
        let cap = u64::from(self.shape.slot_count);
        let ahead = self.head.wrapping_sub(self.cached_tail);
        let n = (slots as u64)
            .min(PREFETCH_NEXT_MAX as u64)
            .min(cap.saturating_sub(ahead));
        for i in 0..n {
            prefetch_for_write(self.shape.slot_ptr(self.head.wrapping_add(i)));
        }
    }

    /// Records that earlier producers published `frames` on this ring
    /// before this one attached (an earlier endpoint of the same
    /// generation, since dropped): they may still be unread, and
    /// [`Producer::unread_frames`] counts them.
    pub fn inherit(&mut self, frames: u64) {
        self.inherited = frames;
    }

    /// Frames published on this ring by this producer and those it
    /// [inherited](Producer::inherit) from.
    pub fn published_frames(&self) -> u64 {
        self.inherited.saturating_add(self.stats.frames)
    }

    /// Frames published and not yet released by the consumer, counted from
    /// our own descriptors with a walk bounded by the ring size (used to
    /// account for frames lost when a link generation ends).
    ///
    /// The descriptors lie in shared memory, where the consumer may have
    /// rewritten them (a length of 0 counts every slot as a frame): the
    /// count never exceeds [`Producer::published_frames`], what this side
    /// knows it sent, so a peer can claim to have read fewer of our frames
    /// but never make us report more lost than we sent.
    pub fn unread_frames(&self) -> u64 {
        self.walk_unread().min(self.published_frames())
    }

    /// The walk of [`Producer::unread_frames`], before its bound.
    fn walk_unread(&self) -> u64 {
        // Acquire: pairs with the consumer's Release store of `tail` in
        // `Consumer::publish_release`.
        let tail = self.storage.control().tail.index.load(Ordering::Acquire);
        let outstanding = self.head.wrapping_sub(tail);
        let since_cached = tail.wrapping_sub(self.cached_tail);
        let tail = if outstanding <= u64::from(self.shape.slot_count)
            && since_cached <= self.head.wrapping_sub(self.cached_tail)
        {
            tail
        } else {
            self.cached_tail
        };
        // The descriptors are ours, but lie in shared memory: a scribbled
        // length still advances by at least one slot, so the walk ends.
        let mut at = tail;
        let mut frames = 0;
        while at != self.head {
            // Relaxed: our own earlier stores; the value is only counted.
            let (len, _) = SlotDesc::unpack(self.shape.desc(at).0.load(Ordering::Relaxed));
            let slots = self.shape.slots_for(len as usize).max(1);
            at = at.wrapping_add(slots.min(self.head.wrapping_sub(at)));
            frames += 1;
        }
        frames
    }

    /// Copies one frame into the ring and publishes it.
    ///
    /// # Errors
    /// [`PushError::Full`] when there is no room (nothing is written),
    /// [`PushError::TooLarge`]/[`PushError::Empty`] for a bad length,
    /// [`SendError::Corrupt`] if the peer corrupted the ring.
    ///
    /// [`PushError::Full`]: super::PushError::Full
    /// [`PushError::TooLarge`]: super::PushError::TooLarge
    /// [`PushError::Empty`]: super::PushError::Empty
    pub fn send(&mut self, frame: &[u8]) -> Result<(), SendError> {
        // The common case without a chunk (whose set-up and spills doubled
        // a ping-pong's instructions): a valid length whose slots are known
        // to be free and end before the end of the data area.
        let (shape, len) = (self.shape, frame.len());
        let slots = shape.slots_for(len);
        let free = u64::from(shape.slot_count) - self.head.wrapping_sub(self.cached_tail);
        if self.poisoned.is_none()
            && len.wrapping_sub(1) < shape.max_frame
            && slots <= free
            && shape.slot(self.head) as u64 + slots <= u64::from(shape.slot_count)
        {
            model_write(&self.storage, self.head, slots);
            // SAFETY: `len` is valid, `frame` is the caller's memory, and the
            // `slots` slots at `head` are free and end before the end of the
            // data area.
            unsafe { copy_bytes(shape.slot_ptr(self.head), frame.as_ptr(), len) };
            shape.store_desc(shape.desc(self.head), len, shape.stamp(self.head));
            self.publish(self.head.wrapping_add(slots), 1, len as u64);
            return Ok(());
        }
        self.send_slow(frame)
    }

    /// [`send`](Self::send) through a chunk: full, wrapping, a bad length,
    /// a poisoned ring, or free slots not yet seen.
    #[inline(never)]
    fn send_slow(&mut self, frame: &[u8]) -> Result<(), SendError> {
        let slots = self.shape.slots_for(frame.len()) as usize;
        let mut chunk = self.write_chunk(slots.max(1))?;
        chunk.push(frame)?;
        chunk.commit();
        Ok(())
    }

    /// Ends a publication: the slots before `head` hold `frames` new
    /// frames of `bytes` bytes in all, each published already by its
    /// descriptor's stamp. Stores `head` once, then checks for a sleeping
    /// consumer.
    #[inline(always)]
    pub(super) fn publish(&mut self, head: u64, frames: usize, bytes: u64) {
        self.head = head;
        // Relaxed: the descriptors' Release stores publish the frames; the
        // shared `head` is a hint, loaded (Relaxed) only by the consumer's
        // wakeup throttle (`wait`) and by a producer attaching later
        // (`Producer::attach`). A line only we write, never loaded on the
        // consumer's data path.
        self.storage
            .control()
            .head
            .index
            .store(head, Ordering::Relaxed);
        let ctl = self.storage.control();
        self.wait.after_store(
            &self.storage,
            &ctl.producer_wait,
            &ctl.consumer_wait,
            &ctl.tail.index,
            Bell::Data,
        );
        self.stats.frames += frames as u64;
        self.stats.bytes += bytes;
        self.prime_next_slot(frames);
    }

    /// Copies as many of `frames` as fit, in order, and publishes them with
    /// one index update. Returns how many were sent; stops at the first
    /// frame that does not fit.
    ///
    /// # Errors
    /// [`SendError::Push`] if the *first* frame has a bad length,
    /// [`SendError::Corrupt`] if the peer corrupted the ring.
    pub fn send_batch<'f, I>(&mut self, frames: I) -> Result<usize, SendError>
    where
        I: IntoIterator<Item = &'f [u8]>,
    {
        // Start from the cached view of the consumer's index and read the
        // shared one (a line the other core writes) only when a frame does
        // not fit, once per batch: not on every call, as
        // `write_chunk(usize::MAX)` would. The loop is `write_chunk` + `push`
        // flattened. Its common case, a frame that fits in free slots before
        // the end of the data area, advances two cursors (data and
        // descriptor) and one count of such slots left (`room`): few enough
        // values to stay in registers, with everything else on the rare path.
        let shape = self.shape;
        let mut free = self.free_slots(1)?;
        let start = self.head;
        let run = shape.run_from(start);
        let (mut n, mut bytes) = (0usize, 0u64);
        let mut refreshed = false;
        let mut clear = free.min(run.to_end);
        let mut room = clear;
        // Slots used so far are `desc - run.descs`; `dst` is as many slots
        // past `run.base`. Both stay inside the areas while `room > 0`; after
        // a frame that wraps they are not dereferenced again (`room` is 0).
        let (mut dst, mut desc) = (run.base, run.descs);
        // What follows from the last length seen: a stream of one frame
        // size works out its slots, descriptor and stride once.
        let mut plan = LenPlan::NONE;
        let mut frames = frames.into_iter();
        // A frame taken from `frames` by the stream loop below but not
        // written by it.
        let mut pending: Option<&[u8]> = None;
        // The first frame's descriptor and word, stored last: a consumer
        // waiting on it (at its read position) then finds the batch whole,
        // and reads no descriptor line while the batch's stores land on it.
        let mut first: Option<(*const SlotDesc, u64)> = None;
        loop {
            let frame = match pending.take() {
                Some(frame) => frame,
                None => match frames.next() {
                    Some(frame) => frame,
                    None => break,
                },
            };
            let len = frame.len();
            if len != plan.len {
                // Every frame of the batch before the end of the data area
                // is in the run's lap (one that wraps starts before the
                // end): its stamp goes in the plan's word.
                plan = shape.plan(len);
                plan.word |= run.stamp;
            }
            if plan.slots <= room {
                // Each frame's descriptor store below publishes it, so the
                // slots are declared written before the first: all `room`
                // of them, as many as the frames below may take (loom only;
                // nothing otherwise).
                let used = Run::slots_between(run.descs, desc);
                model_write(&self.storage, start.wrapping_add(used), room);
                // SAFETY: `len` is valid (an invalid one's plan fits no
                // room), `frame` is the caller's memory, and the
                // `plan.slots` slots at `dst`/`desc` are free and end
                // before the end of the data area (`room`); the advanced
                // cursors are at most one past it.
                unsafe {
                    copy_bytes(dst, frame.as_ptr(), len);
                    if n == 0 {
                        first = Some((desc, plan.word));
                    } else {
                        put_desc(&*desc, plan.word);
                    }
                    dst = dst.add(plan.stride);
                    desc = desc.add(plan.slots as usize);
                }
                room -= plan.slots;
                n += 1;
                bytes += len as u64;
                // The frames that follow with the same length: a loop of
                // its own, with one length comparison, one copy of a kind
                // chosen once, and few values live (the general loop's
                // length dispatch and spills cost 4 of the 35 instructions
                // a 64-byte frame took when lengths are known only at run
                // time).
                // SAFETY: `dst`/`desc` are the cursors of the `room` free
                // slots before the end of the data area, and `plan` is the
                // plan of a valid length, `len`.
                let (k, end) = unsafe {
                    if plan.slots == 1 && (32..=64).contains(&len) {
                        stream_like::<_, COPY_32_TO_64>(
                            &mut frames,
                            &mut dst,
                            &mut desc,
                            &plan,
                            room,
                        )
                    } else if len > 64 {
                        stream_like::<_, COPY_MEMCPY>(&mut frames, &mut dst, &mut desc, &plan, room)
                    } else {
                        stream_like::<_, COPY_ANY>(&mut frames, &mut dst, &mut desc, &plan, room)
                    }
                };
                room -= k * plan.slots;
                n += k as usize;
                bytes += k * len as u64;
                match end {
                    StreamEnd::Room => {}
                    StreamEnd::Other(next) => pending = Some(next),
                    StreamEnd::Done => break,
                }
                continue;
            }
            if len.wrapping_sub(1) >= shape.max_frame {
                if let (0, Some(e)) = (n, shape.bad_length(len)) {
                    return Err(e.into());
                }
                break;
            }
            // A valid length: `plan` is its plan.
            let slots = plan.slots;
            let used = Run::slots_between(run.descs, desc);
            if slots > free - used {
                if refreshed {
                    break;
                }
                refreshed = true;
                // The `used` slots written so far may be published
                // already (a first frame written here publishes at once),
                // so the consumer may have released them: the consumer's
                // index is checked against
                // the head after them, and the free slots are counted
                // from `start` again.
                self.head = start.wrapping_add(used);
                let after = self.free_slots(u64::MAX);
                self.head = start;
                free = after? + used;
                clear = free.min(run.to_end);
                if slots > free - used {
                    break;
                }
            }
            model_write(&self.storage, start.wrapping_add(used), slots);
            // SAFETY: `len` is valid (checked above), `frame` is the
            // caller's memory, and the slots are among the `free` ones.
            unsafe { shape.write_in_run(&run, used, slots, frame) };
            let used = used + slots;
            room = clear.saturating_sub(used);
            (dst, desc) = shape.cursors(&run, used);
            n += 1;
            bytes += len as u64;
        }
        if let Some((desc, word)) = first {
            // SAFETY: the first frame's descriptor, in the array.
            put_desc(unsafe { &*desc }, word);
        }
        let used = Run::slots_between(run.descs, desc);
        if n > 0 {
            self.publish(start.wrapping_add(used), n, bytes);
        }
        Ok(n)
    }
}

impl<S: RingStorage> Producer<S> {
    /// Prepares to sleep until at least `slots` slots are free: as
    /// [`Consumer::prepare_wait`](super::Consumer::prepare_wait), with [`WaitDecision::Ready`] meaning the room
    /// is there after all. Call [`cancel_wait`](Self::cancel_wait)
    /// on waking.
    ///
    /// # Errors
    /// [`Corruption`] if the peer corrupted the ring.
    pub fn prepare_wait(&mut self, slots: u64) -> Result<WaitDecision, Corruption> {
        if let Some(c) = self.poisoned {
            return Err(c);
        }
        let slots = slots.clamp(1, u64::from(self.shape.slot_count));
        if self.free_slots(slots)? >= slots {
            return Ok(WaitDecision::Ready);
        }
        let ctl = self.storage.control();
        let acked = self.wait.prepare(&ctl.producer_wait, &ctl.consumer_wait);
        // The re-check after the fence in `prepare` (see `wait`).
        self.refresh_tail()?;
        if self.free_slots(slots)? >= slots {
            self.cancel_wait();
            return Ok(WaitDecision::Ready);
        }
        Ok(if acked {
            WaitDecision::Sleep
        } else {
            WaitDecision::Nap
        })
    }

    /// Whether `slots` slots are free now (refreshing the consumer's index
    /// at most once, without a fence): no need to sleep.
    pub fn has_room(&mut self, slots: u64) -> bool {
        let slots = slots.clamp(1, u64::from(self.shape.slot_count));
        self.free_slots(slots).is_ok_and(|free| free >= slots)
    }

    /// Says the producer runs again (see
    /// [`Consumer::cancel_wait`](super::Consumer::cancel_wait)).
    pub fn cancel_wait(&mut self) {
        if self.wait.sleeping() {
            self.wait.wake(&self.storage.control().producer_wait);
        }
    }

    /// Whether a consumer is attached to the ring now, as the peer says:
    /// frames sent while none is may never be read. A hint for counting,
    /// not a guarantee.
    pub fn peer_present(&self) -> bool {
        present(&self.storage.control().consumer_wait)
    }
}
