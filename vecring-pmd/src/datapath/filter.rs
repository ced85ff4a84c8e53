//! The receive filter as one RX burst sees it ([`Filter`]): the mode and
//! the addresses of the port's shared state, read once at the start of the
//! burst, and the decision for each frame of the burst on that copy. Which
//! frames pass when promiscuous mode is off: those to one of the port's
//! MACs, broadcast, and (all-multicast mode, or a subscribed group)
//! multicast.

use super::filter_config::{mac_to_u64, mode, MAX_MACS, MAX_MC_ADDRS, NO_ADDR};
use super::shared::Shared;
use std::sync::atomic::Ordering;

/// The receive filter as one RX burst sees it: the mode and every address
/// the port answers to, read once at the start of the burst.
#[derive(Clone, Copy)]
pub struct Filter {
    mode: u8,
    /// `addrs[..len]`: unicast MACs, then multicast groups, packed.
    len: usize,
    addrs: [u64; MAX_MACS + MAX_MC_ADDRS],
}

impl Filter {
    /// The filter of `shared` now (only the mode in promiscuous mode).
    #[inline]
    pub fn load(shared: &Shared) -> Filter {
        let mut f = Filter {
            mode: shared.filter.load(Ordering::Relaxed),
            len: 0,
            addrs: [NO_ADDR; MAX_MACS + MAX_MC_ADDRS],
        };
        if f.mode != mode::PROMISCUOUS {
            shared.macs.load_into(&mut f.addrs, &mut f.len);
            shared.mc_addrs.load_into(&mut f.addrs, &mut f.len);
        }
        f
    }

    /// A filter in `mode` answering to the packed addresses `addrs`.
    #[cfg(test)]
    fn new(mode: u8, addrs: &[u64]) -> Filter {
        let mut f = Filter {
            mode,
            len: addrs.len(),
            addrs: [NO_ADDR; MAX_MACS + MAX_MC_ADDRS],
        };
        f.addrs[..addrs.len()].copy_from_slice(addrs);
        f
    }

    /// Whether every frame passes (no header needs reading).
    #[inline]
    pub fn promiscuous(&self) -> bool {
        self.mode == mode::PROMISCUOUS
    }

    /// Whether a frame whose first bytes are `head` passes. Frames too short
    /// for a header are refused.
    ///
    /// `head` must be memory the peer cannot write (the frame's copy in an
    /// mbuf): the filter may read it more than once. For bytes in the ring,
    /// use [`Filter::accept_shared`].
    #[inline]
    pub fn accept(&self, head: &[u8]) -> bool {
        if self.promiscuous() {
            return true;
        }
        let Some(dst) = head.get(..6) else {
            return false;
        };
        let mut b = [0u8; 6];
        b.copy_from_slice(dst);
        self.accept_dst(b)
    }

    /// [`Filter::accept`] for a frame still in shared memory, whose bytes
    /// the peer may change at any time: the destination MAC is read exactly
    /// once, into a local, and every comparison is made on that copy, so
    /// one decision never sees two different addresses.
    #[inline]
    pub fn accept_shared(&self, head: &[u8]) -> bool {
        if self.promiscuous() {
            return true;
        }
        if head.len() < 6 {
            return false;
        }
        // Volatile: the compiler may neither re-read the bytes for a later
        // comparison nor merge this read with another one.
        // SAFETY: `head` has at least 6 readable bytes (checked above), and
        // `[u8; 6]` needs no alignment.
        let dst = unsafe { std::ptr::read_volatile(head.as_ptr().cast::<[u8; 6]>()) };
        self.accept_dst(dst)
    }

    /// The filter decision for destination MAC `dst` (a local copy).
    #[inline]
    fn accept_dst(&self, dst: [u8; 6]) -> bool {
        let dst = mac_to_u64(&dst);
        if dst == 0xffff_ffff_ffff || self.addrs[..self.len].contains(&dst) {
            return true;
        }
        // Group bit: least significant bit of the first byte.
        self.mode == mode::ALL_MULTICAST && dst & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];

    fn frame(dst: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&[0u8; 58]);
        f
    }

    #[test]
    fn filter_modes() {
        let mac = mac_to_u64(&MAC);
        let ours = frame(MAC);
        let other = frame([0x02, 0, 0, 0, 0, 9]);
        let bcast = frame([0xff; 6]);
        let mcast = frame([0x01, 0x00, 0x5e, 0, 0, 1]);
        use mode::*;
        for (mode, want) in [
            (PROMISCUOUS, [true, true, true, true]),
            (ALL_MULTICAST, [true, false, true, true]),
            (UNICAST, [true, false, true, false]),
        ] {
            let f = Filter::new(mode, &[mac]);
            let got = [&ours, &other, &bcast, &mcast].map(|x| f.accept(x));
            assert_eq!(got, want, "mode {mode}");
            let shared = [&ours, &other, &bcast, &mcast].map(|x| f.accept_shared(x));
            assert_eq!(shared, want, "mode {mode}, shared");
        }
        let f = Filter::new(UNICAST, &[mac]);
        assert!(!f.accept(&[0x02, 0x11]));
        assert!(!f.accept_shared(&MAC[..5]));
        let f = Filter::new(PROMISCUOUS, &[]);
        assert!(f.accept(&[0x02]));
        assert!(f.accept_shared(&[]));
    }

    #[test]
    fn extra_unicast_and_multicast_addresses() {
        let s = Shared::default();
        s.set_filter(false, false);
        s.macs.set(0, Some(&MAC));
        let extra = [0x02, 0, 0, 0, 0, 7];
        let group = [0x01, 0x00, 0x5e, 0, 0, 1];
        let other_group = [0x01, 0x00, 0x5e, 0, 0, 2];
        let zero = frame([0; 6]);
        let f = Filter::load(&s);
        assert!(!f.accept(&frame(extra)));
        assert!(!f.accept(&frame(group)));
        assert!(!f.accept(&zero), "empty entries match nothing");
        s.macs.set(3, Some(&extra));
        s.mc_addrs.replace(&[group]);
        let f = Filter::load(&s);
        assert!(f.accept(&frame(MAC)));
        assert!(f.accept(&frame(extra)));
        assert!(f.accept_shared(&frame(extra)));
        assert!(f.accept(&frame(group)));
        assert!(!f.accept(&frame(other_group)));
        assert!(!f.accept(&zero));
        s.macs.set(3, None);
        s.mc_addrs.replace(&[]);
        let f = Filter::load(&s);
        assert!(!f.accept(&frame(extra)));
        assert!(!f.accept(&frame(group)));
    }
}
