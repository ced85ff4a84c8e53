//! Joining consecutive TCP segments of one flow from the link into one
//! super-frame for the TAP (`--offload`), as a NIC's receive offload
//! (GRO) does: the receiving kernel then takes one packet of up to 64 KiB
//! through its stack, with one system call, instead of one per piece, and
//! its TCP acknowledges fewer, larger packets. The sending bridge cut its
//! kernel's super-frames into pieces that fit the link's frames
//! ([`super::tso`]); this puts them back together, or joins any run of
//! full-sized segments that follow one another.
//!
//! A frame joins the one held when it continues it exactly: the same
//! Ethernet, IP and TCP headers (addresses, ports, acknowledgement,
//! window, options), the next sequence number, and whole segments of the
//! held segment size; a shorter segment or PSH ends the joining, and SYN,
//! FIN, RST, URG, CWR, ECE, IP options or fragments, ECN in the header
//! or a frame that wraps around the ring's end are never joined. The
//! peer is not trusted: each frame is checked once as it comes (as every
//! frame from the link), its bytes are copied, and the joined frame's
//! headers are written here from the first frame's, with lengths, flags
//! and checksums set for the whole.

use super::tso::{add_words, fold};
use super::vnet::{VnetHdr, F_NEEDS_CSUM, GSO_NONE, GSO_TCPV4, GSO_TCPV6, VNET_HDR_LEN};

/// Bytes of an Ethernet header.
const ETH: usize = 14;
/// TCP flags: ACK and PSH may be set on a joined segment, PSH only on
/// the last.
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
/// The largest IP packet: a joined frame's IP length stays within it.
const MAX_IP: usize = 65535;
/// Segments in one joined frame at most (the kernel's GRO stops at 64).
const MAX_SEGS: usize = 64;

/// Where a frame's headers are and what it carries.
#[derive(Debug, Clone, Copy)]
struct Parsed {
    ipv6: bool,
    /// The TCP header's start, after the virtio-net header.
    l4: usize,
    /// The payload's start, after the virtio-net header.
    payload: usize,
    /// Payload bytes.
    len: usize,
    /// The segment size: the header's, or the payload's when it is one
    /// segment.
    mss: usize,
    /// One segment, without a segment size in its header.
    single: bool,
    seq: u32,
    flags: u8,
}

/// A frame this module may join: TCP over IPv4 (no options, not a
/// fragment) or IPv6 (no extension header), untagged, with a partial
/// checksum at the TCP header, one segment or a super-frame of whole
/// segments and a last one, only ACK and PSH set.
fn parse(frame: &[u8]) -> Option<Parsed> {
    let h = VnetHdr::read(frame)?;
    let f = frame.get(VNET_HDR_LEN..)?;
    let ethertype = u16::from_be_bytes([*f.get(12)?, *f.get(13)?]);
    let (ipv6, l4) = match ethertype {
        0x0800 => {
            // Version 4, no options; protocol TCP; neither MF nor an offset.
            if *f.get(ETH)? != 0x45 || *f.get(ETH + 9)? != 6 || f.get(ETH + 6)? & 0x3f != 0 {
                return None;
            }
            if *f.get(ETH + 7)? != 0 {
                return None;
            }
            (false, ETH + 20)
        }
        0x86dd => {
            if f.get(ETH)? >> 4 != 6 || *f.get(ETH + 6)? != 6 {
                return None;
            }
            (true, ETH + 40)
        }
        _ => return None,
    };
    let gso_ok = match h.gso_type {
        GSO_NONE => true,
        GSO_TCPV4 => !ipv6,
        GSO_TCPV6 => ipv6,
        // ECN, UDP and anything else: never joined.
        _ => false,
    };
    let thl = usize::from(f.get(l4 + 12)? >> 4) * 4;
    let payload = l4 + thl;
    if !gso_ok
        || h.flags & F_NEEDS_CSUM == 0
        || usize::from(h.csum_start) != l4
        || usize::from(h.csum_offset) != 16
        || thl < 20
        || payload >= f.len()
    {
        return None;
    }
    // The IP header's own length must say what the frame holds.
    let ip_len = if ipv6 {
        usize::from(u16::from_be_bytes([f[ETH + 4], f[ETH + 5]])) + 40
    } else {
        usize::from(u16::from_be_bytes([f[ETH + 2], f[ETH + 3]]))
    };
    if ip_len != f.len() - ETH {
        return None;
    }
    let flags = f[l4 + 13];
    if flags & !(ACK | PSH) != 0 || flags & ACK == 0 {
        return None;
    }
    let len = f.len() - payload;
    let mss = if h.gso_type == GSO_NONE {
        len
    } else {
        usize::from(h.gso_size)
    };
    if mss == 0 {
        return None;
    }
    let seq = u32::from_be_bytes([f[l4 + 4], f[l4 + 5], f[l4 + 6], f[l4 + 7]]);
    Some(Parsed {
        ipv6,
        l4,
        payload,
        len,
        mss,
        single: h.gso_type == GSO_NONE,
        seq,
        flags,
    })
}

/// Whether `a` and `b` (each after its virtio-net header, both parsed as
/// `p`'s layout) belong to one flow and may follow one another: every
/// header byte equal but the IP lengths, IDs and checksums, the sequence
/// number, the PSH flag and the TCP checksum.
fn same_flow(a: &[u8], b: &[u8], p: &Parsed) -> bool {
    let (l4, end) = (p.l4, p.payload);
    if a[..ETH] != b[..ETH] {
        return false;
    }
    let ip_same = if p.ipv6 {
        // Version, class and flow label; next header, hop limit, addresses.
        a[ETH..ETH + 4] == b[ETH..ETH + 4] && a[ETH + 6..l4] == b[ETH + 6..l4]
    } else {
        // Version, length of header and TOS; flags and offset, TTL,
        // protocol; addresses.
        a[ETH..ETH + 2] == b[ETH..ETH + 2]
            && a[ETH + 6..ETH + 10] == b[ETH + 6..ETH + 10]
            && a[ETH + 12..l4] == b[ETH + 12..l4]
    };
    // Ports; acknowledgement, data offset; window; urgent pointer and
    // options.
    ip_same
        && a[l4..l4 + 4] == b[l4..l4 + 4]
        && a[l4 + 8..l4 + 13] == b[l4 + 8..l4 + 13]
        && a[l4 + 14..l4 + 16] == b[l4 + 14..l4 + 16]
        && a[l4 + 18..end] == b[l4 + 18..end]
}

/// The frame being joined: its bytes (virtio-net header, headers, the
/// payloads so far) and where it stands.
pub struct Gro {
    buf: Vec<u8>,
    held: Option<Held>,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    first: Parsed,
    /// Payload bytes joined so far.
    len: usize,
    /// Frames joined.
    frames: usize,
    /// Segments joined.
    segs: usize,
    next_seq: u32,
    /// A shorter segment or PSH came: nothing more joins.
    closed: bool,
}

/// What [`Gro::offer`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// Held (alone or joined): it reaches the TAP with the next
    /// [`Gro::take`].
    Held,
    /// Not for joining: the held frame (if any) must be written first,
    /// then this one as it is.
    Refused,
    /// It does not continue the held frame: write the held one
    /// ([`Gro::take`]), then offer it again.
    Full,
}

impl Default for Gro {
    fn default() -> Self {
        Gro {
            buf: Vec::with_capacity(VNET_HDR_LEN + ETH + MAX_IP),
            held: None,
        }
    }
}

impl Gro {
    /// Offers one frame from the link, checked already, in one piece.
    pub fn offer(&mut self, frame: &[u8]) -> Offer {
        let Some(p) = parse(frame) else {
            return Offer::Refused;
        };
        let segs = p.len.div_ceil(p.mss);
        let Some(h) = self.held.as_mut() else {
            let whole = p.len % p.mss == 0;
            self.buf.clear();
            self.buf.extend_from_slice(frame);
            self.held = Some(Held {
                first: p,
                len: p.len,
                frames: 1,
                segs,
                next_seq: p.seq.wrapping_add(p.len as u32),
                closed: !whole || p.flags & PSH != 0,
            });
            return Offer::Held;
        };
        let f = &h.first;
        let ip_len = f.payload - ETH + h.len + p.len;
        // A segment of its own may be the flow's last, shorter one.
        let fits = if p.single {
            p.len <= f.mss
        } else {
            p.mss == f.mss
        };
        let whole = p.len % f.mss == 0;
        if h.closed
            || p.ipv6 != f.ipv6
            || p.payload != f.payload
            || !fits
            || p.seq != h.next_seq
            || ip_len > MAX_IP
            || h.segs + segs > MAX_SEGS
            || !same_flow(&self.buf[VNET_HDR_LEN..], &frame[VNET_HDR_LEN..], f)
        {
            return Offer::Full;
        }
        self.buf
            .extend_from_slice(&frame[VNET_HDR_LEN + p.payload..]);
        h.len += p.len;
        h.frames += 1;
        h.segs += segs;
        h.next_seq = h.next_seq.wrapping_add(p.len as u32);
        if p.flags & PSH != 0 {
            // The joined frame ends with this segment's PSH.
            self.buf[VNET_HDR_LEN + f.l4 + 13] |= PSH;
            h.closed = true;
        }
        if !whole {
            h.closed = true;
        }
        Offer::Held
    }

    /// Whether a frame is held.
    #[cfg(test)]
    fn holding(&self) -> bool {
        self.held.is_some()
    }

    /// The held frame, ready for the TAP (its headers set for the whole
    /// when frames were joined), and how many frames it joined; nothing
    /// is held after.
    pub fn take(&mut self) -> Option<(&[u8], usize)> {
        let h = self.held.take()?;
        if h.frames > 1 {
            let p = h.first;
            let f = &mut self.buf[VNET_HDR_LEN..];
            let tcp_len = p.payload - p.l4 + h.len;
            if p.ipv6 {
                f[ETH + 4..ETH + 6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
            } else {
                let tot = p.l4 - ETH + tcp_len;
                f[ETH + 2..ETH + 4].copy_from_slice(&(tot as u16).to_be_bytes());
                f[ETH + 10..ETH + 12].fill(0);
                let check = !fold(add_words(0, &f[ETH..p.l4]));
                f[ETH + 10..ETH + 12].copy_from_slice(&check.to_be_bytes());
            }
            // A partial checksum holds the pseudo-header's sum, which the
            // receiving kernel completes over the segment.
            let addrs = if p.ipv6 {
                &f[ETH + 8..ETH + 40]
            } else {
                &f[ETH + 12..ETH + 20]
            };
            let pseudo = fold(add_words(6 + tcp_len as u32, addrs));
            f[p.l4 + 16..p.l4 + 18].copy_from_slice(&pseudo.to_be_bytes());
            VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: if p.ipv6 { GSO_TCPV6 } else { GSO_TCPV4 },
                hdr_len: p.payload as u16,
                gso_size: p.mss as u16,
                csum_start: p.l4 as u16,
                csum_offset: 16,
            }
            .write(&mut self.buf);
        }
        Some((&self.buf, h.frames))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tso;
    use super::*;

    /// A TCP super-frame over IPv4 or IPv6 as a TAP hands it over: `len`
    /// payload bytes in segments of `mss`, ACK and `flags` set.
    fn super_frame(ipv6: bool, seq: u32, len: usize, mss: u16, flags: u8) -> Vec<u8> {
        let l4 = ETH + if ipv6 { 40 } else { 20 };
        let mut f = vec![0u8; l4 + 32];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(if ipv6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        let tcp_len = 32 + len;
        if ipv6 {
            f[ETH] = 0x60;
            f[ETH + 4..ETH + 6].copy_from_slice(&(tcp_len as u16).to_be_bytes());
            f[ETH + 6] = 6;
            f[ETH + 7] = 64;
            f[ETH + 8..ETH + 40]
                .iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = i as u8);
        } else {
            f[ETH] = 0x45;
            f[ETH + 2..ETH + 4].copy_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
            f[ETH + 4..ETH + 6].copy_from_slice(&0x1234u16.to_be_bytes());
            f[ETH + 6] = 0x40;
            f[ETH + 8] = 64;
            f[ETH + 9] = 6;
            f[ETH + 12..ETH + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        }
        f[l4..l4 + 4].copy_from_slice(&[0x13, 0x88, 0xc3, 0x50]);
        f[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
        f[l4 + 8..l4 + 12].copy_from_slice(&77u32.to_be_bytes());
        f[l4 + 12] = 8 << 4;
        f[l4 + 13] = ACK | flags;
        f[l4 + 14..l4 + 16].copy_from_slice(&500u16.to_be_bytes());
        // Timestamps, as Linux sends them.
        f[l4 + 20..l4 + 32].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7]);
        f.extend((0..len).map(|i| (seq as usize + i) as u8));
        let mut out = vec![0u8; VNET_HDR_LEN];
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if ipv6 { GSO_TCPV6 } else { GSO_TCPV4 },
            hdr_len: (l4 + 32) as u16,
            gso_size: mss,
            csum_start: l4 as u16,
            csum_offset: 16,
        }
        .write(&mut out);
        out.extend(f);
        out
    }

    /// The pieces `tso` cuts `frame` into for frames of `max` bytes.
    fn pieces(frame: &[u8], max: usize) -> Vec<Vec<u8>> {
        let lay = tso::layout(frame, max).expect("a TCP super-frame");
        let mut out = Vec::new();
        tso::pieces(frame, &lay, |v, h, p| {
            out.push([v, h, p].concat());
            true
        });
        out
    }

    fn join_all(g: &mut Gro, frames: &[Vec<u8>]) -> Vec<(Vec<u8>, usize)> {
        let mut out = Vec::new();
        for f in frames {
            loop {
                match g.offer(f) {
                    Offer::Held => break,
                    Offer::Full => {
                        let (b, n) = g.take().unwrap();
                        out.push((b.to_vec(), n));
                    }
                    Offer::Refused => {
                        if let Some((b, n)) = g.take() {
                            out.push((b.to_vec(), n));
                        }
                        out.push((f.clone(), 1));
                        break;
                    }
                }
            }
        }
        if let Some((b, n)) = g.take() {
            out.push((b.to_vec(), n));
        }
        out
    }

    #[test]
    fn pieces_of_a_super_frame_join_back_into_it() {
        for ipv6 in [false, true] {
            for (mss, max) in [(9100u16, 9216), (1448, 9216), (1448, 4000)] {
                let whole = super_frame(ipv6, 1000, 64_000, mss, PSH);
                let cut = pieces(&whole, max);
                assert!(cut.len() > 1);
                let mut g = Gro::default();
                let joined = join_all(&mut g, &cut);
                assert_eq!(joined.len(), 1, "ipv6 {ipv6} mss {mss}");
                let (f, n) = &joined[0];
                assert_eq!(*n, cut.len());
                // Byte for byte the kernel's super-frame, but the IPv4
                // checksum and the TCP check field's partial sum, which
                // the original left to the NIC.
                let l4 = ETH + if ipv6 { 40 } else { 20 };
                let mut want = whole.clone();
                let mut got = f.clone();
                for b in [&mut want, &mut got] {
                    b[VNET_HDR_LEN + l4 + 16..VNET_HDR_LEN + l4 + 18].fill(0);
                    if !ipv6 {
                        b[VNET_HDR_LEN + ETH + 10..VNET_HDR_LEN + ETH + 12].fill(0);
                    }
                }
                assert_eq!(got, want, "ipv6 {ipv6} mss {mss}");
                let g = VnetHdr::read(f).unwrap();
                assert_eq!(g.gso_size, mss);
                if !ipv6 {
                    let ip = &f[VNET_HDR_LEN + ETH..VNET_HDR_LEN + l4];
                    assert_eq!(fold(add_words(0, ip)), 0xffff, "IPv4 header checksum");
                }
            }
        }
    }

    #[test]
    fn only_what_continues_the_flow_joins() {
        let mss = 1448u16;
        let a = super_frame(false, 0, 1448, mss, 0);
        // The next segment, another sequence number, another port, PSH
        // closing, a short segment closing, SYN never.
        let next = super_frame(false, 1448, 1448, mss, 0);
        let gap = super_frame(false, 2 * 1448 + 1, 1448, mss, 0);
        let mut port = super_frame(false, 1448, 1448, mss, 0);
        port[VNET_HDR_LEN + ETH + 20] ^= 1;
        let mut g = Gro::default();
        assert_eq!(g.offer(&a), Offer::Held);
        assert_eq!(g.offer(&next), Offer::Held);
        assert_eq!(g.offer(&gap), Offer::Full);
        assert_eq!(g.offer(&port), Offer::Full);
        assert_eq!(g.take().map(|(_, n)| n), Some(2));
        let short = super_frame(false, 0, 100, 100, 0);
        let after = super_frame(false, 100, 100, 100, 0);
        assert_eq!(g.offer(&super_frame(false, 0, 1448, mss, PSH)), Offer::Held);
        assert_eq!(g.offer(&next), Offer::Full, "PSH ends the joining");
        g.take();
        assert_eq!(g.offer(&super_frame(false, 0, 1000, mss, 0)), Offer::Held);
        assert_eq!(
            g.offer(&super_frame(false, 1000, 1000, mss, 0)),
            Offer::Full,
            "a short segment ends the joining"
        );
        g.take();
        // Segments of one size join at that size, whatever it is.
        assert_eq!(g.offer(&short), Offer::Held);
        assert_eq!(g.offer(&after), Offer::Held);
        assert_eq!(g.take().map(|(_, n)| n), Some(2));
        let syn = super_frame(false, 0, 1448, mss, 0x02);
        assert_eq!(g.offer(&syn), Offer::Refused);
        let mut ecn = a.clone();
        ecn[1] |= 0x80;
        assert_eq!(g.offer(&ecn), Offer::Refused);
        let mut frag = a.clone();
        frag[VNET_HDR_LEN + ETH + 6] |= 0x20;
        assert_eq!(g.offer(&frag), Offer::Refused);
        let mut lying = a.clone();
        lying[VNET_HDR_LEN + ETH + 3] ^= 1;
        assert_eq!(g.offer(&lying), Offer::Refused, "IP length not the frame's");
        assert!(!g.holding());
    }

    #[test]
    fn a_joined_frame_stays_within_an_ip_packet() {
        let mss = 9140u16;
        let mut g = Gro::default();
        let mut frames = 0;
        let mut seq = 0u32;
        loop {
            let f = super_frame(false, seq, 9140, mss, 0);
            if g.offer(&f) == Offer::Full {
                break;
            }
            frames += 1;
            seq += 9140;
        }
        let (f, n) = g.take().unwrap();
        assert_eq!(n, frames);
        assert_eq!(n, 7);
        assert!(f.len() - VNET_HDR_LEN - ETH <= MAX_IP);
    }

    #[test]
    fn garbage_is_refused_never_a_panic() {
        let mut g = Gro::default();
        let a = super_frame(true, 0, 1448, 1448, 0);
        for len in 0..a.len() {
            let mut f = a[..len].to_vec();
            let _ = g.offer(&f);
            for i in 0..f.len() {
                f[i] ^= 0xa5;
                let _ = g.offer(&f);
            }
            g.take();
        }
    }
}
