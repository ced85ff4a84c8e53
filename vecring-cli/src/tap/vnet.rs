//! The virtio-net header (`struct virtio_net_hdr`, 10 bytes) that prefixes
//! every frame when the TAP has `IFF_VNET_HDR` (`vecring tap --offload`):
//! whether the frame's checksum is left to complete (and where), and
//! whether it is a TCP or UDP super-frame to be cut into segments of
//! `gso_size` bytes. With it on both ends of a link, neither kernel
//! computes checksums nor cuts segments for traffic between them.
//!
//! A header from the link comes from the peer, whose memory it lies in:
//! the bridge copies it out of the ring once ([`VnetHdr::copy_from`]),
//! checks the copy here, and hands the TAP the copy, never the ring's
//! bytes, so that what the kernel reads is what was checked. The checks
//! refuse what no kernel sends and what would make the host's kernel do
//! far more work than the frame is worth: GSO without a checksum to
//! complete (a path of the kernel that warns), and super-frames cut into
//! more than [`MAX_GSO_SEGS`] segments.

/// Bytes of the header on the link and on the TAP (`TUNSETVNETHDRSZ`).
pub const VNET_HDR_LEN: usize = 10;

/// Bytes of an Ethernet header (addresses and type) before the payload
/// the MTU counts.
pub const ETH_HLEN: usize = 14;

/// `flags`: the checksum from `csum_start` on is to be completed, stored
/// at `csum_start + csum_offset`.
pub const F_NEEDS_CSUM: u8 = 1;
/// `flags`: the checksum was checked.
pub const F_DATA_VALID: u8 = 2;

/// `gso_type` values (without [`GSO_ECN`]).
pub const GSO_NONE: u8 = 0;
/// TCP over IPv4.
pub const GSO_TCPV4: u8 = 1;
/// TCP over IPv6.
pub const GSO_TCPV6: u8 = 4;
/// UDP segments (USO), IPv4 or IPv6.
pub const GSO_UDP_L4: u8 = 5;
/// `gso_type` bit: the TCP segments carry ECN's CWR.
pub const GSO_ECN: u8 = 0x80;

/// The most segments a super-frame from the link may be cut into,
/// counted as its bytes after the virtio-net header over `gso_size` (an
/// upper bound that trusts no header length the peer states). A kernel
/// cuts a frame of the link (at most 9216 bytes) into 7 segments at an
/// MSS of 1448 and into 18 at 536, the smallest MSS every TCP must
/// accept; a bound of 64 keeps those and every MSS down to 144, and
/// limits what one frame can make a host's kernel send when it forwards
/// to an interface without TSO (a segment size of 1 would make 9000).
pub const MAX_GSO_SEGS: usize = 64;

/// The offloads a TAP with the header takes from its kernel
/// (`TUNSETOFFLOAD`): frames with partial checksums, and TCP super-frames
/// (TSO, IPv4 and IPv6, with ECN), which the bridge cuts into pieces that
/// fit the link's frames (`tso`).
pub const TUN_OFFLOADS: libc::c_uint =
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_TSO_ECN;

/// A header's fields (native byte order: both ends of a link run on the
/// same host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The header at the start of a frame given as its segments (one, or
    /// two when it wraps around the ring's end), copied out in one pass,
    /// or `None` when the frame is shorter than a header. The copy is
    /// what the bridge checks and what it writes to the TAP: the peer may
    /// rewrite the ring's bytes at any time.
    pub fn copy_from<'a>(
        segments: impl IntoIterator<Item = &'a [u8]>,
    ) -> Option<[u8; VNET_HDR_LEN]> {
        let mut out = [0u8; VNET_HDR_LEN];
        let mut have = 0;
        for s in segments {
            let n = s.len().min(VNET_HDR_LEN - have);
            out[have..have + n].copy_from_slice(&s[..n]);
            have += n;
            if have == VNET_HDR_LEN {
                return Some(out);
            }
        }
        None
    }

    /// The header at the start of `frame`, if it is long enough.
    pub fn read(frame: &[u8]) -> Option<VnetHdr> {
        let h = frame.get(..VNET_HDR_LEN)?;
        let u16_at = |i: usize| u16::from_ne_bytes([h[i], h[i + 1]]);
        Some(VnetHdr {
            flags: h[0],
            gso_type: h[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// Writes the header at the start of `out` (at least
    /// [`VNET_HDR_LEN`] bytes).
    pub fn write(&self, out: &mut [u8]) {
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
    }
}

/// Why a frame from the link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Shorter than the header and an Ethernet header.
    Short,
    /// Longer than the MTU allows (and not a super-frame).
    Long,
    /// A header no kernel would send: unknown flags or type, a checksum
    /// place outside the frame, a segment size of 0.
    Header,
    /// A super-frame (GSO) without a checksum to complete
    /// ([`F_NEEDS_CSUM`]): a kernel's super-frames always leave it to the
    /// device, and the host's kernel warns on the other kind.
    GsoNoCsum,
    /// A super-frame that would be cut into more than [`MAX_GSO_SEGS`]
    /// segments.
    GsoSegments,
}

/// Checks a frame from the link of `len` bytes, whose header (with
/// `--offload`) is `hdr`: a plain frame may be at most `max_plain` bytes
/// (header included), a super-frame anything the link carries.
pub fn check_from_link(hdr: Option<VnetHdr>, len: usize, max_plain: usize) -> Result<(), Bad> {
    let prefix = if hdr.is_some() { VNET_HDR_LEN } else { 0 };
    if len < prefix + ETH_HLEN {
        return Err(Bad::Short);
    }
    let Some(h) = hdr else {
        return if len > max_plain {
            Err(Bad::Long)
        } else {
            Ok(())
        };
    };
    if h.flags & !(F_NEEDS_CSUM | F_DATA_VALID) != 0 {
        return Err(Bad::Header);
    }
    let payload = len - prefix;
    if h.flags & F_NEEDS_CSUM != 0
        && usize::from(h.csum_start) + usize::from(h.csum_offset) + 2 > payload
    {
        return Err(Bad::Header);
    }
    match h.gso_type & !GSO_ECN {
        GSO_NONE => {
            if len > max_plain {
                return Err(Bad::Long);
            }
        }
        GSO_TCPV4 | GSO_TCPV6 | GSO_UDP_L4 => {
            if h.gso_size == 0 || usize::from(h.hdr_len) > payload {
                return Err(Bad::Header);
            }
            if h.flags & F_NEEDS_CSUM == 0 {
                return Err(Bad::GsoNoCsum);
            }
            if payload.div_ceil(usize::from(h.gso_size)) > MAX_GSO_SEGS {
                return Err(Bad::GsoSegments);
            }
        }
        _ => return Err(Bad::Header),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(h: VnetHdr, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        h.write(&mut f);
        f
    }

    #[test]
    fn headers_round_trip() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        assert_eq!(VnetHdr::read(&framed(h, 100)), Some(h));
        assert_eq!(VnetHdr::read(&[0; 9]), None);
    }

    #[test]
    fn frames_from_the_link_are_checked() {
        let plain = VnetHdr::default();
        assert_eq!(check_from_link(None, 13, 1514), Err(Bad::Short));
        assert_eq!(check_from_link(None, 1514, 1514), Ok(()));
        assert_eq!(check_from_link(None, 1515, 1514), Err(Bad::Long));
        assert_eq!(check_from_link(Some(plain), 23, 1524), Err(Bad::Short));
        assert_eq!(check_from_link(Some(plain), 1524, 1524), Ok(()));
        assert_eq!(check_from_link(Some(plain), 1525, 1524), Err(Bad::Long));
        let gso = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        assert_eq!(check_from_link(Some(gso), 9000, 1524), Ok(()));
        for bad in [
            VnetHdr { flags: 4, ..gso },
            VnetHdr { gso_type: 3, ..gso },
            VnetHdr { gso_size: 0, ..gso },
            VnetHdr {
                csum_start: 8990,
                ..gso
            },
            VnetHdr {
                hdr_len: 9000,
                ..gso
            },
        ] {
            assert_eq!(
                check_from_link(Some(bad), 9000, 1524),
                Err(Bad::Header),
                "{bad:?}"
            );
        }
        assert_eq!(
            check_from_link(Some(VnetHdr { flags: 0, ..gso }), 9000, 1524),
            Err(Bad::GsoNoCsum)
        );
        assert_eq!(
            check_from_link(
                Some(VnetHdr {
                    flags: F_DATA_VALID,
                    ..gso
                }),
                9000,
                1524
            ),
            Err(Bad::GsoNoCsum)
        );
        // The segment count is the bytes after the header over the
        // segment size, whatever `hdr_len` claims.
        for (gso_size, hdr_len, ok) in [
            (1, 66, false),
            (1, 8989, false),
            (140, 66, false),
            (140, 8989, false),
            (141, 66, true),
            (536, 66, true),
            (1448, 66, true),
        ] {
            let h = VnetHdr {
                gso_size,
                hdr_len,
                ..gso
            };
            let want = if ok { Ok(()) } else { Err(Bad::GsoSegments) };
            assert_eq!(check_from_link(Some(h), 9000, 1524), want, "{h:?}");
        }
    }

    #[test]
    fn the_header_is_copied_across_a_wrap() {
        let bytes: Vec<u8> = (1..=20).collect();
        let want: [u8; VNET_HDR_LEN] = core::array::from_fn(|i| i as u8 + 1);
        assert_eq!(VnetHdr::copy_from([&bytes[..]]), Some(want));
        for cut in 0..=10 {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(VnetHdr::copy_from([a, b]), Some(want), "cut at {cut}");
        }
        assert_eq!(VnetHdr::copy_from([&bytes[..4], &bytes[4..9]]), None);
        assert_eq!(VnetHdr::copy_from(std::iter::empty::<&[u8]>()), None);
    }
}
