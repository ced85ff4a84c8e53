//! The benchmark's frames: UDP/IPv4 over Ethernet, carrying a trial id, a
//! sequence number and a send timestamp, so the side that receives them
//! counts loss, reordering and duplicates and measures latency.
//!
//! The layout is part of the agent protocol, shared with the DPDK agent
//! (`benches/dpdk-agent/`):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 14 | Ethernet: destination, source, type 0x0800 |
//! | 14 | 20 | IPv4, no options, TTL 64, UDP, header checksum set |
//! | 34 | 8 | UDP, checksum 0 |
//! | 42 | 4 | magic 0x47465256, little-endian |
//! | 46 | 2 | trial id, little-endian |
//! | 48 | 8 | sequence number within the trial, little-endian |
//! | 56 | 8 | send time, CLOCK_MONOTONIC ns, little-endian |
//! | 64 | .. | byte at offset `i` is `(seq + i) as u8` |
//!
//! A 64-byte frame ends with the timestamp.

use std::net::Ipv4Addr;

/// The smallest frame: headers and the 22 bytes of the benchmark's fields.
pub const MIN_SIZE: usize = 64;
/// The magic at offset 42.
pub const MAGIC: u32 = 0x4746_5256;
/// Where the benchmark's fields start (after the UDP header).
const FIELDS: usize = 42;
const SEQ: usize = 48;
const STAMP: usize = 56;

/// An Ethernet address.
pub type Mac = [u8; 6];

/// An inclusive range walked one step per new flow, wrapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range<T> {
    pub min: T,
    pub max: T,
}

impl Range<u32> {
    fn span(&self) -> u64 {
        u64::from(self.max - self.min) + 1
    }
}

/// Parses `A` or `A-B` with `parse`, checking `A <= B`.
fn parse_range<T: Copy + PartialOrd>(
    s: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Range<T>, String> {
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let bad = || format!("'{s}' is not a value or a range MIN-MAX");
    let (min, max) = (
        parse(a.trim()).ok_or_else(bad)?,
        parse(b.trim()).ok_or_else(bad)?,
    );
    if min > max {
        return Err(format!("'{s}': the range's start is above its end"));
    }
    Ok(Range { min, max })
}

/// `A.B.C.D` or `A.B.C.D-E.F.G.H` (as numbers).
pub fn parse_ip_range(s: &str) -> Result<Range<u32>, String> {
    parse_range(s, |t| t.parse::<Ipv4Addr>().ok().map(u32::from))
}

/// `N` or `N-M`, UDP ports.
pub fn parse_port_range(s: &str) -> Result<Range<u32>, String> {
    parse_range(s, |t| t.parse::<u16>().ok().map(u32::from))
}

/// `xx:xx:xx:xx:xx:xx`.
pub fn parse_mac(s: &str) -> Result<Mac, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || format!("'{s}' is not a MAC address xx:xx:xx:xx:xx:xx");
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut mac = [0u8; 6];
    for (m, p) in mac.iter_mut().zip(parts) {
        if p.len() != 2 {
            return Err(bad());
        }
        *m = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(mac)
}

/// The flows a generator spreads its frames over, as kernel pktgen's
/// `src_min`/`src_max`, `dst_min`/`dst_max`, `udp_src_min`/... describe
/// them: the source address moves fastest, then the destination, the
/// source port and the destination port.
#[derive(Clone, Copy, Debug)]
pub struct Flows {
    pub src_mac: Mac,
    pub dst_mac: Mac,
    pub src_ip: Range<u32>,
    pub dst_ip: Range<u32>,
    pub src_port: Range<u32>,
    pub dst_port: Range<u32>,
}

impl Default for Flows {
    fn default() -> Self {
        Self {
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src_ip: Range {
                min: 0x0a00_0001,
                max: 0x0a00_0001,
            },
            dst_ip: Range {
                min: 0x0a00_0002,
                max: 0x0a00_0002,
            },
            src_port: Range {
                min: 1024,
                max: 1024,
            },
            dst_port: Range {
                min: 1024,
                max: 1024,
            },
        }
    }
}

impl Flows {
    /// How many distinct flows the ranges give (saturating).
    pub fn count(&self) -> u64 {
        [self.src_ip, self.dst_ip, self.src_port, self.dst_port]
            .iter()
            .fold(1u64, |n, r| n.saturating_mul(r.span()))
    }

    /// The `n`-th flow's (src ip, dst ip, src port, dst port).
    fn tuple(&self, n: u64) -> (u32, u32, u16, u16) {
        let mut k = n;
        let mut step = |r: &Range<u32>| {
            let v = r.min + (k % r.span()) as u32;
            k /= r.span();
            v
        };
        let s = step(&self.src_ip);
        let d = step(&self.dst_ip);
        let sp = step(&self.src_port);
        let dp = step(&self.dst_port);
        (s, d, sp as u16, dp as u16)
    }

    /// Writes the headers of the `n`-th flow for a frame of `frame.len()`
    /// bytes (at least [`MIN_SIZE`]).
    pub fn write_headers(&self, frame: &mut [u8], n: u64) {
        let (src, dst, sport, dport) = self.tuple(n);
        let len = frame.len();
        frame[0..6].copy_from_slice(&self.dst_mac);
        frame[6..12].copy_from_slice(&self.src_mac);
        frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut frame[14..34];
        ip[0] = 0x45;
        ip[1] = 0;
        ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        ip[4..8].copy_from_slice(&[0, 0, 0x40, 0]); // id 0, don't fragment
        ip[8] = 64;
        ip[9] = 17;
        ip[10..12].copy_from_slice(&[0, 0]);
        ip[12..16].copy_from_slice(&src.to_be_bytes());
        ip[16..20].copy_from_slice(&dst.to_be_bytes());
        let sum = checksum(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let udp = &mut frame[34..42];
        udp[0..2].copy_from_slice(&sport.to_be_bytes());
        udp[2..4].copy_from_slice(&dport.to_be_bytes());
        udp[4..6].copy_from_slice(&((len - 34) as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
    }
}

/// The Internet checksum of an IPv4 header.
fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes the benchmark's fields; with `payload`, the pattern after them
/// too (it depends on `seq`).
pub fn write_fields(frame: &mut [u8], trial: u16, seq: u64, stamp: u64, payload: bool) {
    frame[FIELDS..FIELDS + 4].copy_from_slice(&MAGIC.to_le_bytes());
    frame[FIELDS + 4..SEQ].copy_from_slice(&trial.to_le_bytes());
    frame[SEQ..STAMP].copy_from_slice(&seq.to_le_bytes());
    frame[STAMP..MIN_SIZE].copy_from_slice(&stamp.to_le_bytes());
    if payload {
        let len = frame.len();
        frame[MIN_SIZE..].copy_from_slice(pattern(seq, len));
    }
}

/// Bytes `j as u8` for every `j` up to 256 past the longest frame: the
/// payload of any frame is one slice of it.
static PATTERN: [u8; 256 + vecring_core::MAX_FRAME_LEN] = {
    let mut p = [0u8; 256 + vecring_core::MAX_FRAME_LEN];
    let mut j = 0;
    while j < p.len() {
        p[j] = j as u8;
        j += 1;
    }
    p
};

/// The payload (offsets `MIN_SIZE..len`) of frame `seq`: byte `i` is
/// `(seq + i) as u8`, one copy or comparison of a slice of [`PATTERN`].
fn pattern(seq: u64, len: usize) -> &'static [u8] {
    let start = (seq as usize).wrapping_add(MIN_SIZE) % 256;
    &PATTERN[start..start + len.saturating_sub(MIN_SIZE)]
}

/// A received frame's fields, when it is one of ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    pub trial: u16,
    pub seq: u64,
    pub stamp: u64,
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Reads the fields of `frame` (None: too short or no magic).
pub fn read_fields(frame: &[u8]) -> Option<Fields> {
    if frame.len() < MIN_SIZE || frame[FIELDS..FIELDS + 4] != MAGIC.to_le_bytes() {
        return None;
    }
    Some(Fields {
        trial: u16::from_le_bytes([frame[FIELDS + 4], frame[FIELDS + 5]]),
        seq: le64(&frame[SEQ..]),
        stamp: le64(&frame[STAMP..]),
    })
}

/// Whether the IPv4 header's total length is the frame's length less the
/// Ethernet header (a truncated or padded frame's is not).
pub fn lengths_agree(frame: &[u8]) -> bool {
    frame.len() >= MIN_SIZE
        && usize::from(u16::from_be_bytes([frame[16], frame[17]])) + 14 == frame.len()
}

/// Whether the pattern after the fields is the one `seq` gives.
pub fn payload_intact(frame: &[u8], seq: u64) -> bool {
    frame.len() <= vecring_core::MAX_FRAME_LEN
        && frame
            .get(MIN_SIZE..)
            .is_none_or(|p| p == pattern(seq, frame.len()))
}

/// Swaps the Ethernet source and destination (what a forwarder in
/// testpmd's macswap mode does).
pub fn swap_macs(frame: &mut [u8]) {
    if frame.len() >= 12 {
        let (d, s) = frame.split_at_mut(6);
        d.swap_with_slice(&mut s[..6]);
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the stamp's clock, the same in every
/// process and container of the host.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own; CLOCK_MONOTONIC
    // always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_and_its_headers_are_valid() {
        let flows = Flows {
            src_ip: parse_ip_range("10.0.0.1-10.0.0.4").unwrap(),
            dst_port: parse_port_range("5000-5001").unwrap(),
            ..Flows::default()
        };
        let mut f = vec![0u8; 128];
        flows.write_headers(&mut f, 5);
        write_fields(&mut f, 7, 123_456, 99, true);
        assert_eq!(
            read_fields(&f),
            Some(Fields {
                trial: 7,
                seq: 123_456,
                stamp: 99
            })
        );
        assert!(payload_intact(&f, 123_456));
        assert!(!payload_intact(&f, 123_457));
        // The pattern, byte by byte.
        assert!(f
            .iter()
            .enumerate()
            .skip(64)
            .all(|(i, &b)| b == (123_456 + i) as u8));
        // Flow 5: source 10.0.0.2 (5 mod 4 = 1), destination port 5001.
        assert_eq!(&f[26..30], &[10, 0, 0, 2]);
        assert_eq!(&f[36..38], &5001u16.to_be_bytes());
        // A valid header sums to 0xffff, i.e. its checksum is 0.
        assert_eq!(checksum(&f[14..34]), 0);
        assert_eq!(u16::from_be_bytes([f[16], f[17]]), 114);
        swap_macs(&mut f);
        assert_eq!(&f[0..6], &flows.src_mac);
        assert_eq!(&f[6..12], &flows.dst_mac);
        assert_eq!(read_fields(&f[..63]), None);
        f[42] ^= 1;
        assert_eq!(read_fields(&f), None);
    }

    #[test]
    fn ranges_and_macs_parse_or_are_refused() {
        assert_eq!(parse_port_range("80").unwrap(), Range { min: 80, max: 80 });
        assert!(parse_port_range("80-70").is_err());
        assert!(parse_port_range("70000").is_err());
        assert!(parse_ip_range("10.0.0.9-10.0.0.1").is_err());
        assert!(parse_ip_range("10.0.0").is_err());
        assert_eq!(parse_mac("02:00:00:00:00:0a").unwrap(), [2, 0, 0, 0, 0, 10]);
        for bad in ["02:00:00:00:00", "02:00:00:00:00:0g", "2:0:0:0:0:1:1"] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
    }
}
