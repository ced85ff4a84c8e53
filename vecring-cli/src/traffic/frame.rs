//! The Ethernet frames `txonly` and `vecring-bench host-container` send:
//! a real header, so that a learning switch (OVS's `NORMAL`) or a DPDK
//! port with promiscuous mode off takes them, and a filler payload.
//!
//! - bytes 0..6: destination MAC; by default the address the DPDK driver
//!   gives the other end of the link (`--dst-mac`);
//! - bytes 6..12: source MAC; by default the address the driver gives this
//!   end (`--src-mac`); both unicast and locally administered;
//! - bytes 12..14: ethertype `0x88b5` (IEEE 802 Local Experimental
//!   Ethertype 1: no protocol stack takes such frames for its own);
//! - the rest: bytes `0x5a`.
//!
//! Every frame of a run is the same buffer: the sending loops measure the
//! link, not the making of frames.

pub use vecring_core::internal::mac::default_mac;
use vecring_core::Role;

/// The ethertype of the tool's frames: IEEE 802 Local Experimental
/// Ethertype 1.
pub const ETHERTYPE: u16 = 0x88b5;

/// The payload's filler byte.
pub const FILLER: u8 = 0x5a;

/// A frame's source and destination MACs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    pub src: [u8; 6],
    pub dst: [u8; 6],
}

impl Addresses {
    /// The addresses `vecring-bench host-container` sends with (it makes
    /// its own link).
    pub const BENCH: Addresses = Addresses {
        src: [0x02, 0, 0, 0, 0, 0x01],
        dst: [0x02, 0, 0, 0, 0, 0x02],
    };

    /// From this end (`role`) of link `domain/link` to the other, with the
    /// addresses the DPDK driver gives each end by default.
    pub fn of_link(domain: &str, link: &str, role: Role) -> Addresses {
        let master = role == Role::Master;
        Addresses {
            src: default_mac(domain, link, master),
            dst: default_mac(domain, link, !master),
        }
    }
}

/// Parses `xx:xx:xx:xx:xx:xx`, a unicast address (a sender's source must
/// be one; a destination may be any).
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut mac = [0u8; 6];
    if parts.len() != 6 {
        return Err(format!("'{s}' is not a MAC address like 02:00:00:00:00:01"));
    }
    for (b, p) in mac.iter_mut().zip(parts) {
        *b = u8::from_str_radix(p, 16)
            .ok()
            .filter(|_| p.len() == 2)
            .ok_or_else(|| format!("'{s}' is not a MAC address like 02:00:00:00:00:01"))?;
    }
    Ok(mac)
}

/// Formats a MAC address as `xx:xx:xx:xx:xx:xx`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    let [a, b, c, d, e, f] = *mac;
    format!("{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}")
}

/// The length of the Ethernet header.
pub const HEADER_LEN: usize = 14;

/// A frame of `size` bytes with `addrs` (a frame shorter than the header
/// holds the header's first bytes).
pub fn ethernet(size: usize, addrs: &Addresses) -> Vec<u8> {
    let mut frame = vec![FILLER; size.max(HEADER_LEN)];
    frame[0..6].copy_from_slice(&addrs.dst);
    frame[6..12].copy_from_slice(&addrs.src);
    frame[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    frame.truncate(size);
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ends_of_a_link_address_each_other_with_unicast_local_macs() {
        let m = Addresses::of_link("web", "eth0", Role::Master);
        let s = Addresses::of_link("web", "eth0", Role::Slave);
        assert_eq!((m.src, m.dst), (s.dst, s.src));
        assert_ne!(m.src, m.dst);
        for mac in [m.src, m.dst] {
            assert_eq!(mac[0] & 0x01, 0, "unicast");
            assert_eq!(mac[0] & 0x02, 0x02, "locally administered");
        }
    }

    #[test]
    fn a_frame_is_header_then_filler() {
        let a = Addresses::BENCH;
        let f = ethernet(64, &a);
        assert_eq!(f.len(), 64);
        assert_eq!(&f[0..6], &a.dst);
        assert_eq!(&f[6..12], &a.src);
        assert_eq!(&f[12..14], &[0x88, 0xb5]);
        assert!(f[14..].iter().all(|&b| b == FILLER));
    }

    #[test]
    fn macs_parse_and_print() {
        let mac = parse_mac("02:ab:00:00:00:01").unwrap();
        assert_eq!(format_mac(&mac), "02:ab:00:00:00:01");
        for bad in ["02:ab:00:00:00", "02:ab:00:00:00:1", "zz:00:00:00:00:00"] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
    }
}
