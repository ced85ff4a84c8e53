//! The formats two vecring peers share, and nothing else: the
//! shared-memory region ([`region`]: its header and where each ring lies),
//! each ring inside it ([`ring`]: control block, descriptors, wait lines,
//! the limits of its shape) and the handshake message on the link's Unix
//! socket ([`wire`]). Constants, `#[repr(C)]` layouts and the
//! compile-time assertions that pin every size and offset; no logic, no
//! dependencies, no `std`.
//!
//! `vecring-core` builds the link on these definitions. A second
//! implementation of a peer, or a C program that reads a region, needs
//! them and the rules their documentation states: which side writes
//! which word, with which ordering, and what a reader must check.
//!
//! # What a version promises
//!
//! The formats have a version of their own, [`VERSION_MAJOR`].[`VERSION_MINOR`],
//! which every handshake message and the region header carry. It is not
//! this crate's version: the crate's semver version covers its Rust API
//! (names, types, signatures), the ABI version covers the bytes. A renamed
//! constant is a new crate version and the same ABI; a new ABI major is
//! always a new crate version too, since constants change.
//!
//! - **Same major, any minor: the peers link.** Every size, offset, field
//!   meaning, bit assignment, limit and ordering rule of this crate is then
//!   the same on both sides.
//! - **A major changes** with anything a peer of the previous major would
//!   misread or refuse: a field moved, resized or given another meaning, a
//!   constant's value (a limit such as [`ring::MAX_FRAME_LEN`] or
//!   [`region::MAX_REGION_SIZE`] included), a descriptor or wait-line bit,
//!   an ordering rule, a message kind's value or the order of the
//!   handshake. The majors so far and what each changed:
//!   [`VERSION_MAJOR`].
//! - **Peers of different majors never link**, and each tells the other
//!   why, naming both majors. For that, what follows stays where it is in
//!   every major, past and future: the handshake message is
//!   [`wire::MSG_LEN`] bytes, starting with [`wire::MSG_MAGIC`], the kind
//!   and both version numbers at [`wire::MAGIC`], [`wire::KIND`],
//!   [`wire::VERSION_MAJOR`] and [`wire::VERSION_MINOR`], with the
//!   generation at [`wire::GENERATION`] and a refusal's reason at
//!   [`wire::TEXT`]; the kinds `Request`, `Hello`, `Reject` and `Nack`
//!   keep their values; the region header starts with [`MAGIC`], the
//!   major, the minor and the header's size at offsets 0, 8, 10 and 12.
//! - **A minor changes** with an addition that a peer of the same major
//!   and an older minor never meets: a feature bit, and the fields or
//!   message kinds only that feature uses, placed in bytes that older
//!   minors keep zero (`reserved`). A reader refuses feature bits it does
//!   not know ([`FEATURES_KNOWN`]) and, in a message of its own major,
//!   reserved bytes that are not zero, so nothing is silently ignored; a
//!   writer therefore uses a feature only with a peer whose minor (in its
//!   `Request` or `Hello`) is at least the one that introduced it. The
//!   minor is otherwise informational. No feature exists yet.
//! - **An operator's message is not between peers**: `Status` and `Pause`
//!   ([`wire::Kind`]) go from a host tool to a master, which answers them
//!   or refuses what it does not know (an older minor reads a newer kind
//!   as malformed and says so). A new kind of that sort is a minor.
//!
//! What a reader of another language may rely on, within a major:
//!
//! - Every structure is `#[repr(C)]` of fixed-width integers, with no
//!   pointer, `usize` or `bool`; padding is explicit and zero. Each size,
//!   alignment and offset stated in the documentation is asserted at
//!   compile time here, and the region's layout is computed from the
//!   header's counts ([`region::ring_offset`]), never read from it.
//! - The region is shared by two processes on one host and holds that
//!   host's byte order; vecring runs on little-endian hosts, and the
//!   drawings number bits and bytes that way. The handshake message is
//!   little-endian on the wire.
//! - The words the two sides share while the link runs (the indices,
//!   descriptors and wait lines of [`ring`]) are accessed only with
//!   naturally aligned atomic loads and stores of their width (C11
//!   `_Atomic` or the `__atomic` builtins), with the orderings that
//!   [`ring`] states; the region header is written once by the master
//!   before the region is handed over and only read afterwards.
//! - Everything the peer writes is untrusted: each rule above says what
//!   a reader checks, and a value that fails is corruption, never a reason
//!   to touch memory outside the region.
#![no_std]
#![deny(missing_docs)]

pub mod region;
pub mod ring;
pub mod wire;

/// `b"VECRING\0"` read as a little-endian `u64`: the region header's first
/// word, in every major.
pub const MAGIC: u64 = u64::from_le_bytes(*b"VECRING\0");

/// The ABI's major version. Peers with different majors refuse each other
/// with a message naming both (see the crate documentation for what bumps
/// it). 3: the slave asks first (`Request`) and the link is up only once
/// the master has sealed the region against new writable mappings
/// (`Ready`). 4: a region holds `queue_count` queue pairs (the header's
/// `queue_count`, the Hello's queue count). 5: a descriptor is 8 bytes and
/// carries its lap's stamp, which alone publishes the frame (see [`ring`]).
pub const VERSION_MAJOR: u16 = 5;

/// The ABI's minor version: additions behind a feature bit that a peer of
/// the same major and an older minor never meets (see the crate
/// documentation). Informational otherwise. 1: the operator's `Pause`
/// ([`wire::Kind::Pause`]).
pub const VERSION_MINOR: u16 = 1;

/// Feature bits this version defines; a reader refuses any other. None
/// are defined yet.
pub const FEATURES_KNOWN: u64 = 0;

/// Alignment of every shared structure and of each slot: a cache line on
/// the hosts vecring runs on, so that lines written by different sides
/// never share one.
pub const CACHE_LINE: usize = 64;

/// Rounds `value` up to a multiple of `align` (a power of two).
pub const fn align_up(value: u64, align: u64) -> u64 {
    (value + align - 1) & !(align - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_spells_vecring() {
        assert_eq!(&MAGIC.to_le_bytes(), b"VECRING\0");
    }

    #[test]
    fn align_up_rounds_to_the_next_multiple() {
        assert_eq!(align_up(0, 4096), 0);
        assert_eq!(align_up(1, 4096), 4096);
        assert_eq!(align_up(4096, 4096), 4096);
        assert_eq!(align_up(4097, 64), 4160);
    }
}
