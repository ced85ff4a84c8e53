//! Cutting a TCP super-frame that does not fit a frame on the link into
//! pieces that do (`--offload`). The kernel hands the TAP super-frames of
//! up to 64 KiB (TSO) and the link carries at most 9216 bytes: each piece
//! is a super-frame of its own (or a plain frame, when it holds one
//! segment), with the original's headers, its lengths, IPv4 ID, sequence
//! number, flags and pseudo-header checksum set for its part of the
//! payload, as a NIC's TSO would set them for its segments. The receiving
//! kernel takes each piece whole: its stack sees a few large packets, not
//! one per MTU.
//!
//! Letting the kernel build super-frames no larger than a frame on the
//! link (a smaller GSO size on the interface) would need no cutting, but
//! then TCP sends every segment through its whole transmit path on its
//! own, which costs the sender more than this does.

use super::vnet::{VnetHdr, F_NEEDS_CSUM, GSO_ECN, GSO_NONE, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN};

/// Bytes of an Ethernet header.
const ETH: usize = 14;
/// The TCP flags a piece other than the last drops (FIN, PSH), and the
/// one a piece other than the first drops (CWR).
const FIN_PSH: u8 = 0x01 | 0x08;
const CWR: u8 = 0x80;

/// Where the headers of a TCP super-frame are (offsets after the
/// virtio-net header).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// The TCP header's start (the IP header's end).
    l4: usize,
    /// The payload's start (the TCP header's end).
    payload: usize,
    ipv6: bool,
    mss: usize,
    /// Payload bytes per piece: whole segments.
    per_piece: usize,
}

/// What the super-frame `frame` (virtio-net header first) is, if it is
/// one this module cuts into pieces of at most `max` bytes (virtio-net
/// header included): TCP over IPv4 or IPv6 without extension headers,
/// untagged, with a partial checksum at the TCP header.
pub fn layout(frame: &[u8], max: usize) -> Option<Layout> {
    let h = VnetHdr::read(frame)?;
    let ipv6 = match h.gso_type & !GSO_ECN {
        GSO_TCPV4 => false,
        GSO_TCPV6 => true,
        _ => return None,
    };
    let f = &frame[VNET_HDR_LEN..];
    let ethertype = u16::from_be_bytes([*f.get(12)?, *f.get(13)?]);
    let l4 = if ipv6 {
        if ethertype != 0x86dd || *f.get(ETH + 6)? != 6 {
            return None;
        }
        ETH + 40
    } else {
        let ihl = usize::from(*f.get(ETH)? & 0x0f) * 4;
        if ethertype != 0x0800 || ihl < 20 || *f.get(ETH + 9)? != 6 {
            return None;
        }
        ETH + ihl
    };
    let thl = usize::from(*f.get(l4 + 12)? >> 4) * 4;
    let payload = l4 + thl;
    let mss = usize::from(h.gso_size);
    if h.flags & F_NEEDS_CSUM == 0
        || usize::from(h.csum_start) != l4
        || usize::from(h.csum_offset) != 16
        || thl < 20
        || payload > f.len()
        || mss == 0
    {
        return None;
    }
    let room = max.checked_sub(VNET_HDR_LEN + payload)?;
    let per_piece = room / mss * mss;
    (per_piece > 0).then_some(Layout {
        l4,
        payload,
        ipv6,
        mss,
        per_piece,
    })
}

impl Layout {
    /// The length of each piece of a super-frame of `len` bytes
    /// (virtio-net header included), in order.
    pub fn piece_lens(&self, len: usize) -> impl Iterator<Item = usize> {
        let head = VNET_HDR_LEN + self.payload;
        let total = len.saturating_sub(head);
        let per = self.per_piece;
        (0..total.div_ceil(per)).map(move |i| head + per.min(total - i * per))
    }
}

/// The ones' complement sum of `bytes` as 16-bit big-endian words, added
/// to `sum`, not folded.
fn add_words(mut sum: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for w in &mut chunks {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Each piece of the super-frame `frame` laid out by `lay`: `piece(vnet,
/// headers, payload)` with the piece's virtio-net header, Ethernet, IP
/// and TCP headers, and its part of the payload; the frame on the link is
/// the three one after the other. Stops early when `piece` returns false.
pub fn pieces(frame: &[u8], lay: &Layout, mut piece: impl FnMut(&[u8], &[u8], &[u8]) -> bool) {
    let Some(h) = VnetHdr::read(frame) else {
        return;
    };
    let f = &frame[VNET_HDR_LEN..];
    let (headers, payload) = f.split_at(lay.payload);
    let mut hdr = [0u8; 256 + ETH];
    let Some(hdr) = hdr.get_mut(..headers.len()) else {
        return;
    };
    let seq = u32::from_be_bytes([f[lay.l4 + 4], f[lay.l4 + 5], f[lay.l4 + 6], f[lay.l4 + 7]]);
    let id = u16::from_be_bytes([f[ETH + 4], f[ETH + 5]]);
    let thl = lay.payload - lay.l4;
    let mut off = 0;
    while off < payload.len() {
        let part = &payload[off..(off + lay.per_piece).min(payload.len())];
        let (first, last) = (off == 0, off + part.len() == payload.len());
        hdr.copy_from_slice(headers);
        let tcp_len = thl + part.len();
        if lay.ipv6 {
            hdr[ETH + 4..ETH + 6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
        } else {
            let tot = lay.l4 - ETH + tcp_len;
            hdr[ETH + 2..ETH + 4].copy_from_slice(&(tot as u16).to_be_bytes());
            let id = id.wrapping_add((off / lay.mss) as u16);
            hdr[ETH + 4..ETH + 6].copy_from_slice(&id.to_be_bytes());
            hdr[ETH + 10..ETH + 12].fill(0);
            let check = !fold(add_words(0, &hdr[ETH..lay.l4]));
            hdr[ETH + 10..ETH + 12].copy_from_slice(&check.to_be_bytes());
        }
        let t = lay.l4;
        hdr[t + 4..t + 8].copy_from_slice(&seq.wrapping_add(off as u32).to_be_bytes());
        if !last {
            hdr[t + 13] &= !FIN_PSH;
        }
        if !first {
            hdr[t + 13] &= !CWR;
        }
        // A partial checksum holds the pseudo-header's sum, which the
        // receiver (or a NIC) completes over the segment.
        let addrs = if lay.ipv6 {
            &hdr[ETH + 8..ETH + 40]
        } else {
            &hdr[ETH + 12..ETH + 20]
        };
        let pseudo = fold(add_words(6 + tcp_len as u32, addrs));
        hdr[t + 16..t + 18].copy_from_slice(&pseudo.to_be_bytes());
        let gso = part.len() > lay.mss;
        let mut vnet = [0u8; VNET_HDR_LEN];
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if gso { h.gso_type } else { GSO_NONE },
            hdr_len: lay.payload as u16,
            gso_size: if gso { lay.mss as u16 } else { 0 },
            csum_start: lay.l4 as u16,
            csum_offset: 16,
        }
        .write(&mut vnet);
        if !piece(&vnet, hdr, part) {
            return;
        }
        off += part.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP super-frame over IPv4 (or IPv6) as a TAP hands it over:
    /// `len` payload bytes in segments of `mss`, FIN, PSH and CWR set.
    fn super_frame(ipv6: bool, len: usize, mss: u16) -> Vec<u8> {
        let l3 = if ipv6 { 40 } else { 20 };
        let l4 = ETH + l3;
        let mut f = vec![0u8; l4 + 20];
        f[12..14].copy_from_slice(if ipv6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        if ipv6 {
            f[ETH] = 0x60;
            f[ETH + 6] = 6;
            f[ETH + 8..ETH + 40]
                .iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = i as u8);
        } else {
            f[ETH] = 0x45;
            f[ETH + 4..ETH + 6].copy_from_slice(&0xfff0u16.to_be_bytes());
            f[ETH + 6] = 0x40;
            f[ETH + 8] = 64;
            f[ETH + 9] = 6;
            f[ETH + 12..ETH + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        }
        f[l4..l4 + 4].copy_from_slice(&[0x13, 0x88, 0xc3, 0x50]);
        f[l4 + 4..l4 + 8].copy_from_slice(&0xffff_f000u32.to_be_bytes());
        f[l4 + 12] = 5 << 4;
        f[l4 + 13] = FIN_PSH | CWR | 0x10;
        f.extend((0..len).map(|i| (i * 7 % 251) as u8));
        let mut out = vec![0u8; VNET_HDR_LEN];
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if ipv6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: (l4 + 20) as u16,
            gso_size: mss,
            csum_start: l4 as u16,
            csum_offset: 16,
        }
        .write(&mut out);
        out.extend(f);
        out
    }

    /// The TCP checksum a receiver computes over a piece whose partial
    /// checksum it completes: the sum over the segment from `l4` on, which
    /// starts from the pseudo-header's sum in the check field; then the
    /// full check (pseudo-header and segment) must be 0xffff.
    fn completes(frame: &[u8], l4: usize, ipv6: bool) {
        let f = &frame[VNET_HDR_LEN..];
        let mut seg = f[l4..].to_vec();
        let c = !fold(add_words(0, &seg));
        seg[16..18].copy_from_slice(&c.to_be_bytes());
        let addrs = if ipv6 {
            &f[ETH + 8..ETH + 40]
        } else {
            &f[ETH + 12..ETH + 20]
        };
        let all = add_words(add_words(6 + seg.len() as u32, addrs), &seg);
        assert_eq!(fold(all), 0xffff, "TCP checksum");
        if !ipv6 {
            assert_eq!(
                fold(add_words(0, &f[ETH..l4])),
                0xffff,
                "IPv4 header checksum"
            );
        }
    }

    fn cut(ipv6: bool, len: usize, mss: u16, max: usize) -> Vec<Vec<u8>> {
        let frame = super_frame(ipv6, len, mss);
        let lay = layout(&frame, max).expect("a TCP super-frame");
        let mut out = Vec::new();
        pieces(&frame, &lay, |v, h, p| {
            out.push([v, h, p].concat());
            true
        });
        out
    }

    #[test]
    fn pieces_carry_the_payload_in_order_with_their_headers_set() {
        for (ipv6, mss, max) in [
            (false, 1448, 9216),
            (true, 1428, 9216),
            (false, 9140, 9216),
            (false, 1448, 3000),
        ] {
            let len = 60_000;
            let frame = super_frame(ipv6, len, mss);
            let lay = layout(&frame, max).unwrap();
            let l4 = lay.l4;
            let pieces = cut(ipv6, len, mss, max);
            let lens: Vec<usize> = lay.piece_lens(frame.len()).collect();
            assert_eq!(lens, pieces.iter().map(Vec::len).collect::<Vec<_>>());
            let mut payload = Vec::new();
            for (i, p) in pieces.iter().enumerate() {
                assert!(p.len() <= max, "piece {i}: {} bytes", p.len());
                let f = &p[VNET_HDR_LEN..];
                let h = VnetHdr::read(p).unwrap();
                let part = &f[l4 + 20..];
                // Whole segments, but for the last.
                assert!(part.len() % usize::from(mss) == 0 || i == pieces.len() - 1);
                assert_eq!(h.gso_type == GSO_NONE, part.len() <= usize::from(mss));
                let seq = u32::from_be_bytes(f[l4 + 4..l4 + 8].try_into().unwrap());
                assert_eq!(seq, 0xffff_f000u32.wrapping_add(payload.len() as u32));
                let flags = f[l4 + 13];
                assert_eq!(
                    flags & FIN_PSH != 0,
                    i == pieces.len() - 1,
                    "FIN/PSH on the last only"
                );
                assert_eq!(flags & CWR != 0, i == 0, "CWR on the first only");
                if ipv6 {
                    assert_eq!(
                        usize::from(u16::from_be_bytes([f[ETH + 4], f[ETH + 5]])),
                        20 + part.len()
                    );
                } else {
                    assert_eq!(
                        usize::from(u16::from_be_bytes([f[ETH + 2], f[ETH + 3]])),
                        40 + part.len()
                    );
                    let id = u16::from_be_bytes([f[ETH + 4], f[ETH + 5]]);
                    assert_eq!(
                        id,
                        0xfff0u16.wrapping_add((payload.len() / usize::from(mss)) as u16)
                    );
                }
                completes(p, l4, ipv6);
                payload.extend_from_slice(part);
            }
            assert_eq!(
                payload,
                super_frame(ipv6, len, mss)[VNET_HDR_LEN + l4 + 20..]
            );
        }
    }

    #[test]
    fn what_is_not_tcp_or_has_no_room_is_left_alone() {
        let mut udp = super_frame(false, 20_000, 1448);
        udp[1] = 5; // UDP_L4
        assert!(layout(&udp, 9216).is_none());
        let mut no_csum = super_frame(false, 20_000, 1448);
        no_csum[0] = 0;
        assert!(layout(&no_csum, 9216).is_none());
        // A segment larger than a frame on the link.
        assert!(layout(&super_frame(false, 20_000, 9500), 9216).is_none());
        // Headers past the end.
        let whole = super_frame(false, 0, 1448);
        assert!(layout(&whole[..VNET_HDR_LEN + 40], 9216).is_none());
    }
}
