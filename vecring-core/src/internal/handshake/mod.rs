//! The master/slave handshake over a Unix `SOCK_SEQPACKET` socket at
//! `<run-dir>/<domain>/<link>.sock`.
//!
//! ```text
//!  slave                                   master
//!    | connect ----------------------------> | accept, SO_PEERCRED check
//!    | REQUEST ----------------------------> | (REJECT if not allowed)
//!    | SO_PEERCRED check of the master       | one-slave check, bound on
//!    | (nothing it sends is read before)     | regions, back-off; new region
//!    | <------------- HELLO + memfd (SCM_RIGHTS), or REJECT / BUSY(reason)
//!    | check message, seals, size, header    |
//!    | ACK(generation) or NACK(reason) ----> |
//!    |                                       | seal F_SEAL_FUTURE_WRITE,
//!    | <-------------------- READY(generation) populate its mapping
//!    | check the seal, populate its mapping  |
//!    |          ... link up ...              |
//!    | EOF either way = link down            |
//! ```
//!
//! The slave speaks first, so that a process that merely connects gets
//! nothing, and no memory exists for it, until its credentials passed and
//! it asked. The master seals the region only after the slave has mapped
//! it (a sealed memfd can no longer be mapped writable), and the link is
//! up only once both have checked the seal.
//!
//! Every message is one [`MSG_LEN`]-byte datagram whose fields are drawn
//! in [`wire`]; a message of another size, magic or kind, with a reserved
//! byte set or a feature this build does not know, is a protocol error
//! ([`DecodeError`]). The socket stays open while the link is up: the
//! kernel closes it when a peer dies, however it dies, and the survivor
//! sees EOF.
//!
//! - [`wire`]: the message layout, [`Msg::encode`] and [`Msg::decode`];
//! - [`error`]: what a malformed message is ([`DecodeError`]);
//! - [`socket`]: the socket calls (listen, connect, accept, credentials,
//!   one message with its descriptors each way).

pub mod error;
pub mod socket;
pub mod wire;

#[cfg(test)]
mod tests;

pub use error::DecodeError;
pub use socket::{
    accept, check_received, connect, connect_abstract, listen, listen_abstract, passed_fds,
    peer_credentials, recv, recv_bytes, send, send_bytes, wait_readable, TooManyFds, MAX_FDS,
};
pub use wire::{Kind, Msg, MSG_LEN, TEXT_LEN};
