//! The table behind `vecring_link_t *`: the pointer C holds is a token
//! naming a slot of this table and the slot's generation, never an address,
//! so a call with a closed (or never valid) handle is detected and refused
//! instead of reading freed memory.
//!
//! # Reference counts
//!
//! Each call holds a reference ([`Ref`]) to the handle for its duration,
//! counted in one of three lanes ([`Lane`]: TX calls, RX calls, link-level
//! calls), each lane on its own cache line so that the producer and the
//! consumer thread do not contend for one counter. A lane word packs the
//! slot's generation, a `CLOSED` bit and the lane's count of references:
//!
//! ```text
//!   63            32  31       30             0
//!  +----------------+--------+----------------+
//!  |   generation   | CLOSED | references     |
//!  +----------------+--------+----------------+
//! ```
//!
//! A reference is taken by a compare-exchange that fails once `CLOSED` is
//! set or the generation moved on; so after `vecring_close` has set `CLOSED`
//! in every lane no new reference is taken, and each lane's count only goes
//! down. A lane is *drained* exactly once: by the close that sets `CLOSED`
//! while its count is zero, or by the reference that brings a closed lane's
//! count to zero. `pending` counts the lanes not yet drained plus one for
//! the closer itself; whoever brings it to zero frees the handle (the last
//! user frees). The closer waits briefly for the calls in flight
//! ([`DRAIN_WAIT`]) so that the link is normally torn down before
//! `vecring_close` returns.
//!
//! Slots live in segments that are allocated on demand and never freed, so
//! a stale token always reaches readable memory; a freed slot gets the next
//! generation and is reused. Generations are 32 bits: a token stale by
//! exactly 2^32 reuses of its slot would be taken for a live one.

use crate::error::{cstr, Error, VECRING_E_CLOSED, VECRING_E_INVAL, VECRING_E_NOMEM};
use crate::handle::vecring_link;
use crossbeam_utils::CachePadded;
use std::ffi::CStr;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Which kind of call a reference is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// `vecring_send*`, `vecring_tx_*`: the producer thread.
    Tx = 0,
    /// `vecring_recv*`, `vecring_rx_*`: the consumer thread.
    Rx = 1,
    /// The link-level calls, from any thread.
    Link = 2,
}

const LANES: usize = 3;
const ALL_LANES: [Lane; LANES] = [Lane::Link, Lane::Tx, Lane::Rx];

/// Lane word: references held in this lane.
const COUNT: u64 = (1 << 31) - 1;
/// Lane word: the handle is being closed (or the slot is vacant).
const CLOSED: u64 = 1 << 31;
const GEN_SHIFT: u32 = 32;

/// Token bits 0..16: marks a value as a vecring token.
const TAG: u64 = 0x7672; // "vr"
const TAG_MASK: u64 = 0xffff;
/// Token bits 16..32: the slot index.
const INDEX_SHIFT: u32 = 16;
const SLOTS_PER_SEGMENT: usize = 64;
const SEGMENTS: usize = 1024;
/// Most handles open at once (the index has 16 bits).
pub(crate) const MAX_HANDLES: usize = SLOTS_PER_SEGMENT * SEGMENTS;
const _: () = assert!(MAX_HANDLES == 1 << 16);
// Tokens are pointer-sized and hold a 32-bit generation.
const _: () = assert!(usize::BITS == 64, "vecring-ffi needs 64-bit pointers");

/// How long `vecring_close` waits for calls in flight on other threads to
/// return (they notice the close within [`POLL`]) before leaving the free
/// to the last of them.
pub(crate) const DRAIN_WAIT: Duration = Duration::from_millis(500);
/// How often a waiting call (`vecring_wait_up`, `vecring_wait_down`) checks
/// whether its handle is being closed.
pub(crate) const POLL: Duration = Duration::from_millis(10);

const INVALID: &CStr = cstr!("invalid link handle (not one vecring_open returned)");
const CLOSED_MSG: &CStr = cstr!("the link handle is closed (by vecring_close)");
const NULL: &CStr = cstr!("link handle is NULL");

struct Slot {
    /// Indexed by `Lane as usize`; see the module docs for the layout.
    lanes: [CachePadded<AtomicU64>; LANES],
    /// Lanes not drained yet plus one for the closer; the handle is freed
    /// by whoever brings it to zero.
    pending: AtomicU32,
    /// The handle (from `Box::into_raw`), null while the slot is vacant.
    handle: AtomicPtr<vecring_link>,
    /// This slot's index in the table.
    index: u32,
}

impl Slot {
    fn new(index: usize) -> Self {
        Slot {
            index: index as u32,
            lanes: std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            pending: AtomicU32::new(LANES as u32 + 1),
            handle: AtomicPtr::new(null_mut()),
        }
    }

    fn lane(&self, lane: Lane) -> &AtomicU64 {
        &self.lanes[lane as usize]
    }

    /// One share of `pending` is done; the last frees the handle.
    fn drain_one(&self) {
        // AcqRel: the last decrement sees every user's accesses to the
        // handle (their Release decrements here and in `Ref::drop`).
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.free();
        }
    }

    /// Frees the handle and makes the slot vacant under the next
    /// generation. Runs once per handle (see `drain_one`).
    fn free(&self) {
        // Acquire: pairs with the Release store in `insert`.
        let h = self.handle.swap(null_mut(), Ordering::Acquire);
        let gen = self.lane(Lane::Link).load(Ordering::Relaxed) >> GEN_SHIFT;
        let next = next_gen(gen);
        self.pending.store(LANES as u32 + 1, Ordering::Relaxed);
        for lane in ALL_LANES {
            // Release: a stale token now sees the new generation (and
            // `insert`, through the free list's mutex, sees the reset).
            self.lane(lane)
                .store((next << GEN_SHIFT) | CLOSED, Ordering::Release);
        }
        TABLE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .free
            .push(self.index);
        if !h.is_null() {
            // SAFETY: `h` came from `Box::into_raw` in `insert`; the swap
            // above took it out of the slot once, and no reference remains
            // (every lane drained).
            dispose(unsafe { Box::from_raw(h) });
        }
    }
}

struct Segment {
    slots: [Slot; SLOTS_PER_SEGMENT],
}

/// Published segments, in index order; each leaked (never freed) once set.
static SEGMENT_TABLE: [AtomicPtr<Segment>; SEGMENTS] =
    [const { AtomicPtr::new(null_mut()) }; SEGMENTS];

/// Slot allocation, used by open and by the free of a handle only.
struct Table {
    /// Vacant slots of published segments.
    free: Vec<u32>,
    /// Slots `next..` have never been used.
    next: u32,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    free: Vec::new(),
    next: 0,
});

fn next_gen(gen: u64) -> u64 {
    // Generation 0 is never issued: a slot never used has lane words 0.
    if gen >= u64::from(u32::MAX) {
        1
    } else {
        gen + 1
    }
}

/// The slot of `index`, if its segment is published.
fn slot(index: usize) -> Option<&'static Slot> {
    let seg = SEGMENT_TABLE.get(index / SLOTS_PER_SEGMENT)?;
    // Acquire: pairs with the Release store in `insert`.
    let p = seg.load(Ordering::Acquire);
    // SAFETY: published segments are leaked, never freed.
    (!p.is_null()).then(|| unsafe { &(*p).slots[index % SLOTS_PER_SEGMENT] })
}

/// The slot and generation a token names, if it is a token.
fn decode(p: *const vecring_link) -> Result<(&'static Slot, u64), Error> {
    let t = p as usize as u64;
    if t == 0 {
        return Err(Error::fixed(VECRING_E_INVAL, NULL));
    }
    if t & TAG_MASK != TAG {
        return Err(Error::fixed(VECRING_E_INVAL, INVALID));
    }
    let index = ((t >> INDEX_SHIFT) & 0xffff) as usize;
    let slot = slot(index).ok_or(Error::fixed(VECRING_E_INVAL, INVALID))?;
    // Generation 0 is never issued (`insert` starts at 1), and a slot not
    // used yet has lane words of generation 0 without `CLOSED`: such a
    // token would match it and reach its NULL handle.
    let gen = t >> GEN_SHIFT;
    if gen == 0 {
        return Err(Error::fixed(VECRING_E_INVAL, INVALID));
    }
    Ok((slot, gen))
}

/// Why a lane word refuses a reference for generation `gen`.
fn refusal(word: u64, gen: u64) -> Error {
    // Generations only grow: an older one was closed.
    if gen != 0 && gen <= word >> GEN_SHIFT {
        Error::fixed(VECRING_E_CLOSED, CLOSED_MSG)
    } else {
        Error::fixed(VECRING_E_INVAL, INVALID)
    }
}

/// Stores `handle` in a vacant slot and returns its token.
///
/// # Errors
/// `VECRING_E_NOMEM` when [`MAX_HANDLES`] handles are open.
pub(crate) fn insert(handle: Box<vecring_link>) -> Result<*mut vecring_link, Error> {
    let mut t = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    let index = match t.free.pop() {
        Some(i) => i as usize,
        None => {
            let i = t.next as usize;
            if i >= MAX_HANDLES {
                return Err(Error::new(
                    VECRING_E_NOMEM,
                    format!("{MAX_HANDLES} links are open in this process, the most there can be"),
                ));
            }
            let seg = &SEGMENT_TABLE[i / SLOTS_PER_SEGMENT];
            if seg.load(Ordering::Relaxed).is_null() {
                let s = Box::new(Segment {
                    slots: std::array::from_fn(|k| Slot::new(i - i % SLOTS_PER_SEGMENT + k)),
                });
                // Release: pairs with the Acquire loads in `slot`, which
                // then see the initialized slots. Leaked: never freed.
                seg.store(Box::into_raw(s), Ordering::Release);
            }
            t.next += 1;
            i
        }
    };
    let slot = slot(index).expect("the segment was published above");
    // A vacant slot holds the generation to issue next (0 if never used).
    let gen = match slot.lane(Lane::Link).load(Ordering::Relaxed) >> GEN_SHIFT {
        0 => 1,
        g => g,
    };
    slot.handle.store(Box::into_raw(handle), Ordering::Relaxed);
    for lane in ALL_LANES {
        // Release: pairs with the Acquire of the compare-exchange in
        // `Ref::new`, which then sees the handle pointer stored above.
        slot.lane(lane).store(gen << GEN_SHIFT, Ordering::Release);
    }
    let token = (gen << GEN_SHIFT) | ((index as u64) << INDEX_SHIFT) | TAG;
    Ok(token as usize as *mut vecring_link)
}

/// Marks the handle closed and frees it once no call is using it: here if
/// the calls in flight return within [`DRAIN_WAIT`], else by the last of
/// them.
///
/// # Errors
/// `VECRING_E_CLOSED` if it is closed already, `VECRING_E_INVAL` if `p` is
/// no handle.
pub(crate) fn close(p: *const vecring_link) -> Result<(), Error> {
    let (slot, gen) = decode(p)?;
    // The link lane's CLOSED bit is the claim: one close wins it.
    let link = slot.lane(Lane::Link);
    let mut w = link.load(Ordering::Relaxed);
    loop {
        if w >> GEN_SHIFT != gen || w & CLOSED != 0 {
            return Err(refusal(w, gen));
        }
        // AcqRel: Acquire pairs with `insert`'s Release (the handle is
        // there); Release orders the claim before the lanes below.
        match link.compare_exchange_weak(w, w | CLOSED, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => break,
            Err(now) => w = now,
        }
    }
    if w & COUNT == 0 {
        slot.drain_one();
    }
    for lane in [Lane::Tx, Lane::Rx] {
        // AcqRel: as above; from here no reference is taken in this lane.
        if slot.lane(lane).fetch_or(CLOSED, Ordering::AcqRel) & COUNT == 0 {
            slot.drain_one();
        }
    }
    // Calls in flight notice the close (`Ref::closing`) and return; the
    // blocking RX and TX waits sleep on the close bell, rung here.
    // Relaxed: ordered after `insert`'s store by the AcqRel claim above.
    let h = slot.handle.load(Ordering::Relaxed);
    if !h.is_null() {
        // SAFETY: the closer's own share of `pending` (released by the
        // last `drain_one` below) keeps the handle from being freed; the
        // claim above made this thread the handle's one closer.
        unsafe { &*h }.wake_waiters();
    }
    let deadline = Instant::now() + DRAIN_WAIT;
    // Acquire: pairs with the AcqRel decrements in `drain_one`.
    while slot.pending.load(Ordering::Acquire) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    slot.drain_one();
    Ok(())
}

/// A call's reference to a live handle; see the module docs.
pub(crate) struct Ref {
    slot: &'static Slot,
    lane: Lane,
    handle: &'static vecring_link,
}

impl Ref {
    /// A reference to the handle `p` names, counted in `lane`.
    ///
    /// # Errors
    /// `VECRING_E_INVAL` for NULL or a value that is no handle,
    /// `VECRING_E_CLOSED` for a handle being or already closed.
    pub(crate) fn new(p: *const vecring_link, lane: Lane) -> Result<Ref, Error> {
        let (slot, gen) = decode(p)?;
        let word = slot.lane(lane);
        let mut w = word.load(Ordering::Relaxed);
        loop {
            if w >> GEN_SHIFT != gen || w & CLOSED != 0 {
                return Err(refusal(w, gen));
            }
            debug_assert!(w & COUNT < COUNT, "reference count overflow");
            // Acquire: pairs with the Release stores in `insert`.
            match word.compare_exchange_weak(w, w + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => w = now,
            }
        }
        // Relaxed: ordered after `insert`'s store by the Acquire above.
        let h = slot.handle.load(Ordering::Relaxed);
        // SAFETY: the reference counted above keeps the handle from being
        // freed (`free` runs only once every lane drained) until this
        // `Ref` drops; `insert` stored a live `Box` pointer before making
        // the generation takeable.
        let handle = unsafe { &*h };
        Ok(Ref { slot, lane, handle })
    }

    /// Whether `vecring_close` was called on this handle: a waiting call
    /// returns then.
    pub(crate) fn closing(&self) -> bool {
        self.slot.lane(self.lane).load(Ordering::Relaxed) & CLOSED != 0
    }
}

impl std::ops::Deref for Ref {
    type Target = vecring_link;
    fn deref(&self) -> &vecring_link {
        self.handle
    }
}

impl Drop for Ref {
    fn drop(&mut self) {
        // AcqRel: Release publishes this call's use of the handle to the
        // one that frees it; Acquire, if this is the one.
        let prev = self.slot.lane(self.lane).fetch_sub(1, Ordering::AcqRel);
        if prev & (CLOSED | COUNT) == CLOSED | 1 {
            self.slot.drain_one();
        }
    }
}

/// How long the freeing thread waits for the link's teardown (joining its
/// control thread) before leaving it to finish in the background, so that
/// `vecring_close` returns within a second whatever the peer does.
const TEARDOWN_WAIT: Duration = Duration::from_millis(400);

/// Drops a handle: stops its link, on a helper thread waited for up to
/// [`TEARDOWN_WAIT`]. The helper also makes a close from the link's own
/// state callback (its control thread) return instead of joining itself.
fn dispose(h: Box<vecring_link>) {
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("vecring-close".into())
        .spawn(move || {
            drop(h);
            let _ = done.send(());
        });
    // If the thread cannot be made, the closure (and with it the handle)
    // was dropped by `spawn` itself, on this thread.
    if spawned.is_ok() {
        let _ = finished.recv_timeout(TEARDOWN_WAIT);
    }
}

/// Whether the handle `p` named has been freed (its slot moved on).
#[cfg(test)]
pub(crate) fn is_freed(p: *const vecring_link) -> bool {
    let (slot, gen) = decode(p).expect("a token");
    slot.lane(Lane::Link).load(Ordering::Acquire) >> GEN_SHIFT != gen
}
