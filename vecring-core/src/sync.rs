//! Atomics and fences used by the ring, swapped for loom's under `--cfg loom` so that
//! the same index code is model-checked and shipped; under loom also the
//! cell that stands for a slot's bytes (see `RingStorage::slot_access`)
//! and the `AtomicU32` of the ABI's stand-ins (`internal::abi`).

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU64, Ordering};
