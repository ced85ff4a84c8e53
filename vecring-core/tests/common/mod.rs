//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Aborts the whole test process if the returned guard is not dropped
/// within `limit`: a hung test fails instead of blocking CI.
pub struct Watchdog(Arc<AtomicBool>);

impl Watchdog {
    pub fn new(name: &'static str, limit: Duration) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            eprintln!("watchdog: test '{name}' still running after {limit:?}; aborting");
            std::process::abort();
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// FNV-1a over `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x1000_0000_01b3)
    })
}

/// Fills `buf` (at least 16 bytes) with frame `seq`: the sequence number,
/// a payload derived from it, and an FNV-1a checksum of both at the end.
pub fn fill_frame(buf: &mut [u8], seq: u64) {
    let n = buf.len();
    assert!(n >= 16);
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for chunk in buf[8..n - 8].chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    let sum = fnv1a(&buf[..n - 8]);
    buf[n - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// Checks a frame made by [`fill_frame`]: returns its sequence number, or
/// a description of what is wrong.
pub fn check_frame(buf: &[u8]) -> Result<u64, String> {
    let n = buf.len();
    if n < 16 {
        return Err(format!("frame of {n} bytes is too short"));
    }
    let seq = u64::from_le_bytes(buf[..8].try_into().unwrap());
    let sum = u64::from_le_bytes(buf[n - 8..].try_into().unwrap());
    if fnv1a(&buf[..n - 8]) != sum {
        return Err(format!("frame {seq} ({n} bytes): checksum mismatch"));
    }
    let mut expect = vec![0u8; n];
    fill_frame(&mut expect, seq);
    if expect != buf {
        return Err(format!("frame {seq} ({n} bytes): payload altered"));
    }
    Ok(seq)
}

/// Length of frame `seq` in the stress mix: mostly 16..=1514 bytes, one in
/// 64 a jumbo frame up to 9216 bytes.
pub fn frame_len(seq: u64) -> usize {
    let r = seq.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
    if r % 64 == 0 {
        1515 + (r as usize >> 6) % (9216 - 1515 + 1)
    } else {
        16 + (r as usize >> 6) % (1514 - 16 + 1)
    }
}
