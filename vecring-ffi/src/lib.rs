//! The C API of vecring: `libvecring.so` / `libvecring.a` and
//! `include/vecring.h`, for C programs that are not DPDK applications to
//! open a vecring link and exchange frames with a DPDK port or a Rust
//! program on the other end.
//!
//! The header is the reference for C users (every type, function, error and
//! rule is documented there); this crate is its implementation on top of
//! [`vecring_core::Link`]:
//!
//! - [`error`]: the `VECRING_E_*` codes, the thread-local detail message,
//!   and the guard that turns a panic into `VECRING_E_PANIC` in every
//!   exported function;
//! - [`options`]: `vecring_options_t`, everything the Rust `LinkBuilder`
//!   can set; [`env`](mod@env): its names from the environment a CDI device sets;
//! - `handle`: the `vecring_link_t` behind the pointer: the link, its
//!   sender and receiver each behind a try-lock (`VECRING_E_BUSY` instead of
//!   a data race), and the zero-copy chunk C holds open between calls;
//! - `table`: the handle table that `vecring_link_t *` values index, with
//!   the reference counts that let `vecring_close` race calls on other
//!   threads safely;
//! - `closing`: the eventfd that `vecring_close` rings to wake the
//!   blocking waits of other threads;
//! - [`link`], [`tx`], [`rx`]: the exported functions;
//! - [`blocking`]: sleeping instead of polling: the descriptors for the
//!   application's own `epoll`, prepare / cancel around each sleep, and
//!   the blocking waits.
//!
//! `tests/ffi.rs` checks the header against this crate (struct sizes and
//! offsets, constants, the set of exported symbols) and runs C programs
//! against the built library.
#![deny(missing_docs)]
#![allow(non_camel_case_types)]

pub mod blocking;
mod closing;
pub mod env;
pub mod error;
mod handle;
pub mod link;
pub mod options;
pub mod rx;
mod table;
pub mod tx;

pub use blocking::*;
pub use env::*;
pub use error::*;
pub use handle::vecring_link;
pub use link::*;
pub use options::*;
pub use rx::*;
pub use tx::*;

/// `vecring_frame_t.flags`: the frame's slots wrap around the end of the
/// ring, so `data` points to a copy rather than into the ring.
pub const VECRING_FRAME_COPIED: u32 = 1;

/// One frame: the input of `vecring_send_batch`, the output of
/// `vecring_rx_peek`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vecring_frame_t {
    /// The frame's bytes.
    pub data: *const u8,
    /// Its length.
    pub len: u32,
    /// `VECRING_FRAME_*` bits (output only; ignored on input).
    pub flags: u32,
}

/// One receive buffer of `vecring_recv_batch`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct vecring_buf_t {
    /// Where the frame goes.
    pub data: *mut u8,
    /// Bytes available at `data`.
    pub cap: u32,
    /// Set to the received frame's length.
    pub len: u32,
}

/// Every function the library exports, in the order `include/vecring.h`
/// declares them (checked against the built library by the tests).
pub const EXPORTED_FUNCTIONS: &[&str] = &[
    "vecring_options_init_size",
    "vecring_options_init",
    "vecring_options_from_env",
    "vecring_open",
    "vecring_close",
    "vecring_state",
    "vecring_wait_up",
    "vecring_wait_down",
    "vecring_geometry",
    "vecring_counters",
    "vecring_send",
    "vecring_send_timeout",
    "vecring_send_batch",
    "vecring_tx_reserve",
    "vecring_tx_alloc",
    "vecring_tx_push",
    "vecring_tx_commit",
    "vecring_tx_abort",
    "vecring_tx_unread",
    "vecring_tx_peer_present",
    "vecring_recv",
    "vecring_recv_timeout",
    "vecring_recv_batch",
    "vecring_recv_batch_timeout",
    "vecring_rx_peek",
    "vecring_rx_release",
    "vecring_rx_fd",
    "vecring_rx_prepare_wait",
    "vecring_rx_cancel_wait",
    "vecring_rx_wait",
    "vecring_tx_fd",
    "vecring_tx_prepare_wait",
    "vecring_tx_cancel_wait",
    "vecring_tx_wait",
    "vecring_strerror",
    "vecring_last_error_message",
    "vecring_version",
];

#[cfg(test)]
mod tests;
