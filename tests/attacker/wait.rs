//! A slave that abuses the sleep/wake protocol of queue 0 against a master
//! whose receiver (and sender) sleep (`wait-attack mode=M`):
//!
//! - `never-ring`: says in shared memory that it checks for sleepers after
//!   every publish (`ack`), then publishes one frame `after-ms` after the
//!   link is up through a producer without a doorbell: the master's
//!   sleeping receiver is never rung;
//! - `ring-storm`: rings every doorbell it holds as fast as it can for
//!   `secs` seconds, then sends one frame honestly;
//! - `scribble`: writes random values into all four wait lines of queue 0's
//!   two rings (its own and the master's) for `secs` seconds while
//!   receiving and echoing nothing, then sends one frame honestly.
//!
//! Reports `up`, then `sent` once its frame is published; holds the link
//! until its stdin closes.

use crate::{report, until_stdin_closes, Args};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use vecring_core::internal::abi::{self, Dir};
use vecring_core::{Producer, RingStorage};

/// The frame every mode sends.
pub const FRAME: &[u8] = b"wait-attack frame";

pub fn run(args: &Args) -> bool {
    let Some(link) = crate::peer::slave_up(args, Duration::from_secs(10)) else {
        return false;
    };
    let mut rx = link.receiver().expect("receiver");
    let Some(region) = rx.region() else {
        report("error link went down");
        return false;
    };
    let mode = args.get("mode").to_string();
    report("up");
    match mode.as_str() {
        "never-ring" => {
            let ring = region.ring(abi::ring_index(0, Dir::SlaveToMaster));
            // SAFETY: this process has no other producer of the ring (it
            // took no Sender).
            let mut tx = unsafe { Producer::attach(ring) }.expect("attach");
            region
                .ring(abi::ring_index(0, Dir::SlaveToMaster))
                .control()
                .producer_wait
                .ack
                .store(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(args.num("after-ms")));
            tx.send(FRAME).expect("send");
            report("sent");
        }
        "ring-storm" => {
            let bells = vecring_tests::datagram_sockets();
            report(&format!("ringing {}", bells.len()));
            let end = Instant::now() + Duration::from_secs(args.num("secs"));
            let mut rung = 0u64;
            while Instant::now() < end {
                for &fd in &bells {
                    // SAFETY: a one-byte buffer; a full queue just fails.
                    unsafe { libc::send(fd, b"x".as_ptr().cast(), 1, libc::MSG_DONTWAIT) };
                    rung += 1;
                }
            }
            report(&format!("rang {rung}"));
            link.sender().expect("sender").send(FRAME).expect("send");
            report("sent");
        }
        "scribble" => {
            let rings = [
                region.ring(abi::ring_index(0, Dir::MasterToSlave)),
                region.ring(abi::ring_index(0, Dir::SlaveToMaster)),
            ];
            let end = Instant::now() + Duration::from_secs(args.num("secs"));
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            while Instant::now() < end {
                for r in &rings {
                    let c = r.control();
                    for line in [&c.consumer_wait, &c.producer_wait] {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        line.state.store(x, Ordering::Relaxed);
                        line.ack.store((x >> 32) as u32 & 1, Ordering::Relaxed);
                    }
                }
            }
            link.sender().expect("sender").send(FRAME).expect("send");
            report("sent");
        }
        other => {
            report(&format!("error unknown mode {other}"));
            return false;
        }
    }
    until_stdin_closes();
    drop(rx);
    true
}
