//! What the receive filter is made of, as control operations set it: the
//! filter [`mode`]s, the tables of addresses a port answers to
//! ([`AddrTable`]) and their sizes. The port's shared state holds them
//! ([`super::shared::Shared`]); each RX burst reads them once into a
//! [`Filter`](super::filter::Filter).

use std::sync::atomic::{AtomicU64, Ordering};

/// Receive filter modes, chosen by promiscuous/all-multicast settings.
pub mod mode {
    /// Deliver every frame.
    pub const PROMISCUOUS: u8 = 0;
    /// Deliver frames to our MAC, broadcast and every multicast group.
    pub const ALL_MULTICAST: u8 = 1;
    /// Deliver frames to our MAC and broadcast.
    pub const UNICAST: u8 = 2;
}

/// Unicast addresses a port answers to: its primary MAC (index 0) and those
/// `mac_addr_add` gave it, at the indexes of ethdev's `mac_addrs` array.
pub const MAX_MACS: usize = 8;
/// Multicast groups `set_mc_addr_list` may subscribe to.
pub const MAX_MC_ADDRS: usize = 16;
/// An empty [`AddrTable`] entry: no packed 48-bit MAC equals it.
pub const NO_ADDR: u64 = u64::MAX;

/// A table of packed MACs (see [`mac_to_u64`]) written by control operations
/// and read by the RX lcore once per burst
/// ([`Filter::load`](super::filter::Filter::load)). Entries are single
/// atomics: a burst that races with an update sees every entry either before
/// or after it.
#[derive(Debug)]
pub struct AddrTable<const N: usize>([AtomicU64; N]);

impl<const N: usize> Default for AddrTable<N> {
    fn default() -> Self {
        AddrTable(std::array::from_fn(|_| AtomicU64::new(NO_ADDR)))
    }
}

impl<const N: usize> AddrTable<N> {
    /// Sets entry `i` (`i < N`) to `mac`, or empties it.
    pub fn set(&self, i: usize, mac: Option<&[u8; 6]>) {
        self.0[i].store(mac.map_or(NO_ADDR, mac_to_u64), Ordering::Relaxed);
    }

    /// Replaces the whole table with `macs` (at most `N`), emptying the rest.
    pub fn replace(&self, macs: &[[u8; 6]]) {
        debug_assert!(macs.len() <= N);
        for i in 0..N {
            self.set(i, macs.get(i));
        }
    }

    /// Appends the non-empty entries to `out` from `*len`, advancing `len`.
    #[inline]
    pub fn load_into(&self, out: &mut [u64], len: &mut usize) {
        for a in &self.0 {
            let v = a.load(Ordering::Relaxed);
            if v != NO_ADDR {
                out[*len] = v;
                *len += 1;
            }
        }
    }
}

/// Packs a MAC address into the low 48 bits of a `u64` (byte 0 lowest), the
/// layout [`Filter`](super::filter::Filter) compares against.
pub fn mac_to_u64(mac: &[u8; 6]) -> u64 {
    let mut b = [0u8; 8];
    b[..6].copy_from_slice(mac);
    u64::from_le_bytes(b)
}
