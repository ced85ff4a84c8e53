//! The handle behind `vecring_link_t *`: the [`Link`], its [`Sender`] and
//! [`Receiver`], each endpoint behind its own try-lock, the state of an
//! open zero-copy chunk between calls, and what the waits of other threads
//! sleep on (the endpoints' wait-set descriptors and the close bell).
//!
//! # Chunks across calls
//!
//! `Sender::write_chunk` and `Receiver::read_chunk` return chunks that
//! borrow their endpoint, while C holds a chunk open across calls
//! (`vecring_tx_reserve` ... `vecring_tx_commit`). The endpoint therefore
//! lives in its own heap allocation, owned by a raw pointer, and the open
//! chunk is stored beside it with its borrow extended to `'static`. Three
//! rules keep that sound, all enforced in this module:
//!
//! 1. the endpoint is never moved or freed while a chunk exists (it is only
//!    freed in `Drop`, after the chunk);
//! 2. while a chunk exists the endpoint is reached only through the chunk
//!    ([`TxState::sender`] and [`RxState::receiver`] refuse otherwise);
//! 3. a chunk never leaves its state struct, which the try-lock gives to
//!    one thread at a time.

use crate::closing::CloseBell;
use crate::error::{cstr, Error, VECRING_E_BUSY, VECRING_E_INVAL, VECRING_E_IO};
use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use vecring_core::memory::RegionRing;
use vecring_core::{Link, ReadChunk, Receiver, Sender, WriteChunk};

/// A link opened through the C API (`vecring_link_t`).
///
/// C never sees its address: `vecring_link_t *` is a token of the handle
/// table (`table`), through which every call reaches the handle.
pub struct vecring_link {
    // Endpoints before the link: fields drop in this order.
    tx: TryLock<TxState>,
    rx: TryLock<RxState>,
    link: Link,
    /// The receiver's wait set (`Receiver::as_fd`), read once at open: it
    /// is the same for the receiver's life, which is the handle's, so any
    /// thread may ask for it without the RX lock.
    rx_fd: RawFd,
    /// The sender's wait set, likewise.
    tx_fd: RawFd,
    /// Rung by `vecring_close`: wakes the blocking waits.
    close_bell: CloseBell,
}

const TX_BUSY: &CStr =
    cstr!("the link's sender is in use by another thread (one producer thread per link)");
const RX_BUSY: &CStr =
    cstr!("the link's receiver is in use by another thread (one consumer thread per link)");

impl vecring_link {
    /// A handle owning `link`, with both endpoints taken; the handle table
    /// (`table::insert`) gives C its token.
    pub(crate) fn new(link: Link) -> Result<vecring_link, Error> {
        let sender = link.sender().map_err(crate::error::link_error)?;
        let receiver = link.receiver().map_err(crate::error::link_error)?;
        let close_bell = CloseBell::new().map_err(|e| {
            Error::new(
                VECRING_E_IO,
                format!("cannot make the link's close eventfd: {e}"),
            )
        })?;
        Ok(vecring_link {
            rx_fd: receiver.as_raw_fd(),
            tx_fd: sender.as_raw_fd(),
            tx: TryLock::new(TxState::new(sender)),
            rx: TryLock::new(RxState::new(receiver)),
            link,
            close_bell,
        })
    }

    /// The receiver's wait-set descriptor (`vecring_rx_fd`).
    pub(crate) fn rx_fd(&self) -> RawFd {
        self.rx_fd
    }

    /// The sender's wait-set descriptor (`vecring_tx_fd`).
    pub(crate) fn tx_fd(&self) -> RawFd {
        self.tx_fd
    }

    /// What the blocking waits poll besides their wait set: readable once
    /// the handle is being closed.
    pub(crate) fn close_fd(&self) -> BorrowedFd<'_> {
        self.close_bell.as_fd()
    }

    /// Wakes every blocking wait on the handle (called by the close,
    /// after it has marked every lane closed).
    pub(crate) fn wake_waiters(&self) {
        self.close_bell.ring();
    }

    /// The link.
    pub(crate) fn link(&self) -> &Link {
        &self.link
    }

    /// The transmit state, if no other thread holds it.
    pub(crate) fn tx(&self) -> Result<Guard<'_, TxState>, Error> {
        self.tx
            .try_lock()
            .ok_or(Error::fixed(VECRING_E_BUSY, TX_BUSY))
    }

    /// The receive state, if no other thread holds it.
    pub(crate) fn rx(&self) -> Result<Guard<'_, RxState>, Error> {
        self.rx
            .try_lock()
            .ok_or(Error::fixed(VECRING_E_BUSY, RX_BUSY))
    }
}

/// A value one thread at a time may use; a second thread is refused
/// instead of blocking (`VECRING_E_BUSY`).
pub(crate) struct TryLock<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached through a `Guard`, and `busy` admits
// one guard at a time; `T: Send` lets that guard be on any thread.
unsafe impl<T: Send> Sync for TryLock<T> {}

impl<T> TryLock<T> {
    fn new(value: T) -> Self {
        TryLock {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    fn try_lock(&self) -> Option<Guard<'_, T>> {
        // Acquire: pairs with the Release store in `Guard::drop`, so the
        // previous holder's writes to the value are visible.
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Guard { lock: self })
    }
}

/// Exclusive access to a [`TryLock`]'s value.
pub(crate) struct Guard<'a, T> {
    lock: &'a TryLock<T>,
}

impl<T> std::ops::Deref for Guard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `try_lock`).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard is the only one (see `try_lock`).
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire in `try_lock`. Runs during
        // unwinding too, so a caught panic does not leave the lock held.
        self.lock.busy.store(false, Ordering::Release);
    }
}

const CHUNK_OPEN_TX: &CStr =
    cstr!("a reserved TX chunk is open: vecring_tx_commit() or vecring_tx_abort() it first");
const CHUNK_OPEN_RX: &CStr = cstr!("peeked frames are held: vecring_rx_release() them first");

/// A frame of an open TX chunk that was handed to C as a staging buffer
/// because its slots wrap around the end of the ring; copied into the
/// slots at commit.
pub(crate) struct Staged {
    /// Where C writes the frame.
    pub(crate) buf: Vec<u8>,
    /// The frame's slot segments in the ring: (start, length).
    pub(crate) segments: Vec<(*mut u8, usize)>,
}

/// The transmit side of a handle.
pub(crate) struct TxState {
    /// Owned (from `Box::into_raw`), freed in `Drop` after `chunk`.
    sender: NonNull<Sender>,
    /// The chunk C reserved, borrowing `*sender` (see the module docs).
    pub(crate) chunk: Option<WriteChunk<'static, RegionRing>>,
    /// Staged frames of `chunk`, in push order.
    pub(crate) staged: Vec<Staged>,
    /// Staging entries kept for reuse.
    pub(crate) spare: Vec<Staged>,
}

// SAFETY: `TxState` owns its `Sender` (which is `Send`) and the chunk
// borrowing it; the raw pointers in `staged` point into that chunk's ring
// memory, which the chunk keeps mapped. Nothing is shared with another
// thread except through the `TryLock`.
unsafe impl Send for TxState {}

impl TxState {
    fn new(sender: Sender) -> Self {
        TxState {
            sender: NonNull::from(Box::leak(Box::new(sender))),
            chunk: None,
            staged: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// The sender, for calls that do not use a chunk.
    pub(crate) fn sender(&mut self) -> Result<&mut Sender, Error> {
        if self.chunk.is_some() {
            return Err(Error::fixed(VECRING_E_INVAL, CHUNK_OPEN_TX));
        }
        // SAFETY: owned by `self`, alive until `Drop`; no chunk borrows it
        // (checked above), and `&mut self` makes this the only access.
        Ok(unsafe { self.sender.as_mut() })
    }

    /// Opens a chunk of up to `max_slots` slots; it stays in `self.chunk`
    /// until committed or aborted.
    pub(crate) fn open_chunk(
        &mut self,
        max_slots: usize,
    ) -> Result<&mut WriteChunk<'static, RegionRing>, Error> {
        if self.chunk.is_some() {
            return Err(Error::fixed(VECRING_E_INVAL, CHUNK_OPEN_TX));
        }
        // SAFETY: the sender is heap-allocated and freed only in `Drop`
        // after `self.chunk`; no chunk exists now (checked above), and until
        // this one is taken out of `self.chunk` the sender is reached only
        // through it (`sender()` refuses). Extending the borrow to 'static
        // is what the module docs' three rules make sound.
        let sender: &'static mut Sender = unsafe { &mut *self.sender.as_ptr() };
        let chunk = sender
            .write_chunk(max_slots)
            .map_err(crate::error::send_error)?;
        Ok(self.chunk.insert(chunk))
    }

    /// Ends the open chunk (committing or discarding it) and returns the
    /// staging buffers to the spares.
    pub(crate) fn recycle_staged(&mut self) {
        while let Some(mut s) = self.staged.pop() {
            s.segments.clear();
            self.spare.push(s);
        }
    }
}

impl Drop for TxState {
    fn drop(&mut self) {
        // The chunk (discarded) first: it borrows the sender.
        self.chunk = None;
        self.staged.clear();
        // SAFETY: `sender` came from `Box::leak` in `new` and nothing
        // borrows it any more.
        drop(unsafe { Box::from_raw(self.sender.as_ptr()) });
    }
}

/// The receive side of a handle.
pub(crate) struct RxState {
    /// Owned (from `Box::into_raw`), freed in `Drop` after `chunk`.
    receiver: NonNull<Receiver>,
    /// Frames peeked by C, borrowing `*receiver` (see the module docs).
    pub(crate) chunk: Option<ReadChunk<'static, RegionRing>>,
    /// Copies of peeked frames whose slots wrap around the end of the
    /// ring: `bounce[..bounce_used]` are in use.
    pub(crate) bounce: Vec<Vec<u8>>,
    pub(crate) bounce_used: usize,
    /// Scratch lengths for `vecring_recv_batch`.
    pub(crate) lens: Vec<usize>,
}

// SAFETY: as for `TxState`: it owns the `Receiver` (`Send`) and the chunk
// borrowing it, and is only reached through its `TryLock`.
unsafe impl Send for RxState {}

impl RxState {
    fn new(receiver: Receiver) -> Self {
        RxState {
            receiver: NonNull::from(Box::leak(Box::new(receiver))),
            chunk: None,
            bounce: Vec::new(),
            bounce_used: 0,
            lens: Vec::new(),
        }
    }

    /// The receiver, for calls that do not use a chunk.
    pub(crate) fn receiver(&mut self) -> Result<&mut Receiver, Error> {
        if self.chunk.is_some() {
            return Err(Error::fixed(VECRING_E_INVAL, CHUNK_OPEN_RX));
        }
        // SAFETY: owned by `self`, alive until `Drop`; no chunk borrows it
        // (checked above), and `&mut self` makes this the only access.
        Ok(unsafe { self.receiver.as_mut() })
    }

    /// Opens a read chunk of up to `max_frames` frames, kept in
    /// `self.chunk` until released.
    pub(crate) fn open_chunk(&mut self, max_frames: usize) -> Result<(), Error> {
        if self.chunk.is_some() {
            return Err(Error::fixed(VECRING_E_INVAL, CHUNK_OPEN_RX));
        }
        // SAFETY: as in `TxState::open_chunk`: heap-allocated, freed after
        // the chunk, and reached only through the chunk while it exists.
        let receiver: &'static mut Receiver = unsafe { &mut *self.receiver.as_ptr() };
        let chunk = receiver
            .read_chunk(max_frames)
            .map_err(crate::error::recv_error)?;
        self.chunk = Some(chunk);
        self.bounce_used = 0;
        Ok(())
    }
}

impl Drop for RxState {
    fn drop(&mut self) {
        // The chunk (released) first: it borrows the receiver.
        self.chunk = None;
        // SAFETY: `receiver` came from `Box::leak` in `new` and nothing
        // borrows it any more.
        drop(unsafe { Box::from_raw(self.receiver.as_ptr()) });
    }
}

/// The handle is shared between a TX thread, an RX thread and callers of
/// the link-level functions.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<vecring_link>();
};
