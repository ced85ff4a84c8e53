//! Self-checking test frames: a sequence number, a payload derived from it
//! and a checksum, so a receiver can prove that nothing was lost,
//! duplicated, reordered or altered. Used by the tests, the `vecring` tool
//! and anyone validating a link.

/// Smallest frame [`fill`] can make: sequence number and checksum.
pub const MIN_LEN: usize = 16;

/// FNV-1a over `bytes` (the checksum of the self-checking pattern, the
/// hostile-peer test and the benchmarks' consumers).
#[inline]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn payload(buf: &mut [u8], seq: u64) {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// Fills `buf` with frame `seq`: the sequence number (little-endian), a
/// payload derived from it, and an FNV-1a checksum of both in the last 8
/// bytes. Buffers shorter than [`MIN_LEN`] get a truncated sequence number.
pub fn fill(buf: &mut [u8], seq: u64) {
    let n = buf.len();
    if n < MIN_LEN {
        let bytes = seq.to_le_bytes();
        buf.copy_from_slice(&bytes[..n]);
        return;
    }
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    payload(&mut buf[8..n - 8], seq);
    let sum = fnv1a(&buf[..n - 8]);
    buf[n - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// Checks a frame made by [`fill`] (at least [`MIN_LEN`] bytes) and returns
/// its sequence number, or says what is wrong.
///
/// # Errors
/// A description of the damage.
pub fn check(buf: &[u8]) -> Result<u64, String> {
    let n = buf.len();
    if n < MIN_LEN {
        return Err(format!("frame of {n} bytes is too short to check"));
    }
    let seq = u64::from_le_bytes(buf[..8].try_into().unwrap_or_default());
    let sum = u64::from_le_bytes(buf[n - 8..].try_into().unwrap_or_default());
    if fnv1a(&buf[..n - 8]) != sum {
        return Err(format!("frame {seq} ({n} bytes): checksum mismatch"));
    }
    let mut expect = vec![0u8; n - 16];
    payload(&mut expect, seq);
    if expect != buf[8..n - 8] {
        return Err(format!("frame {seq} ({n} bytes): payload altered"));
    }
    Ok(seq)
}

/// Length of frame `seq` in the mixed-size workload: mostly 16..=1514
/// bytes, one in 64 a jumbo frame of 1515..=9216 bytes.
pub fn mixed_len(seq: u64) -> usize {
    let r = seq.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
    if r % 64 == 0 {
        1515 + (r as usize >> 6) % (9216 - 1515 + 1)
    } else {
        16 + (r as usize >> 6) % (1514 - 16 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn round_trip_and_damage_detection() {
        for len in [16, 17, 64, 1514, 9216] {
            let mut f = vec![0u8; len];
            fill(&mut f, 12345);
            assert_eq!(check(&f), Ok(12345));
            f[len / 2] ^= 1;
            assert!(check(&f).is_err());
        }
        assert!(check(&[0u8; 15]).is_err());
        assert!((0..10_000).map(mixed_len).all(|l| (16..=9216).contains(&l)));
        assert!((0..10_000).map(mixed_len).any(|l| l > 1514));
    }
}
