//! Atomics used by the ring, swapped for loom's under `--cfg loom` so that
//! the same index code is model-checked and shipped.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
