//! How a consumer should learn that a slot is ready: minimal rings of three
//! readiness protocols between two processes over one shared mapping,
//! against the floor of one cache line flipped between them.
//!
//! - `index`: the producer writes the frame, its length in a descriptor
//!   array, then publishes its index on a line of its own; the consumer
//!   polls that index, then reads descriptor and frame (two dependent line
//!   transfers per hop), and stores its own index after every read, as
//!   the ring of ABI 1-4 does.
//! - `desc-seq`: the descriptor (8 bytes, one per slot) holds the frame's
//!   length and the lap of its slot; the producer stores it after the
//!   frame, and the consumer polls the descriptor of the slot it expects
//!   (a per-slot sequence, as in virtio's packed ring).
//! - `desc-each`: `desc-seq` with each descriptor stored right after its
//!   frame instead of after the batch.
//! - `line-seq`: the same word at the head of the frame's first slot,
//!   the frame's bytes after it: a frame of up to 56 bytes arrives with
//!   its readiness in one line.
//!
//! The two slot protocols release through the consumer's index, stored
//! only every [`CREDIT`] slots or when the ring looks empty, so that the
//! producer's lines and the consumer's do not bounce on every frame.
//!
//! Measured per protocol: one-way latency (half the median round trip of
//! one 64-byte frame echoed back over the reverse ring, timed 100 round
//! trips at a time), and throughput (frames of 64 and 1514 bytes sent in
//! batches of 32 and read into the consumer's buffers in batches of 32).
//! Every ring is 32768 slots of 64 bytes (the link's default). Rounds
//! alternate the protocols, rotating their order; each round is tagged
//! with the core-to-core latency of the vCPU placement it drew.
//!
//! ```text
//! cargo run --release -p vecring-benches --bin readiness-study -- [--rounds N] [--one-cpu] [--quick]
//! ```
//!
//! `--one-cpu` pins both processes to CPU 0 (waiting loops yield): the
//! cost of each protocol without any line transfer.
//!
//! The rings and their protocols are in `rings.rs`; this file measures
//! them.

mod rings;

use rings::*;
use std::sync::atomic::Ordering;
use vecring_benches::{
    core_to_core_latency, half_median_of_samples, pin_current_thread, CONSUMER_CPU, PRODUCER_CPU,
};

fn wait(one_cpu: bool) {
    if one_cpu {
        // SAFETY: no arguments; gives the CPU to the other process.
        unsafe { libc::sched_yield() };
    } else {
        std::hint::spin_loop();
    }
}

/// Runs `child` in a forked process pinned to `cpu`, `parent` here; waits
/// for the child and returns the parent's result.
fn forked<T>(cpu: usize, child: impl FnOnce(), parent: impl FnOnce() -> T) -> T {
    // SAFETY: the process has one thread here (the probes join theirs);
    // the child runs only our code and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork");
    if pid == 0 {
        pin_current_thread(cpu).expect("pin the child");
        child();
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    let out = parent();
    let mut status = 0;
    // SAFETY: our child's pid.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed"
    );
    out
}

struct Opts {
    trips: usize,
    frames_64: u64,
    frames_1514: u64,
    one_cpu: bool,
}

/// One way through one shared line between the two processes.
fn floor(o: &Opts) -> f64 {
    let sh = Shared::new();
    let cpu = if o.one_cpu {
        PRODUCER_CPU
    } else {
        CONSUMER_CPU
    };
    let total = (o.trips + o.trips / 10) as u64;
    forked(
        cpu,
        || {
            let line = sh.ctl(0);
            let mut v = 1;
            while v < 2 * total {
                // Acquire/Release: pair with the parent's Release store and
                // Acquire load.
                while line.load(Ordering::Acquire) != v {
                    wait(o.one_cpu);
                }
                line.store(v + 1, Ordering::Release);
                v += 2;
            }
        },
        || {
            let line = sh.ctl(0);
            let mut v = 0u64;
            let trip = || {
                // Release/Acquire: pair with the child's Acquire load and
                // Release store.
                line.store(v + 1, Ordering::Release);
                while line.load(Ordering::Acquire) != v + 2 {
                    wait(o.one_cpu);
                }
                v += 2;
            };
            half_median_of_samples(o.trips / 10, o.trips, trip)
        },
    )
}

/// One way through `proto`: the parent sends one frame of `len` (at most
/// 64) bytes on ring 0, the child echoes it on ring 1.
fn latency(proto: Proto, len: usize, o: &Opts) -> f64 {
    let sh = Shared::new();
    let cpu = if o.one_cpu {
        PRODUCER_CPU
    } else {
        CONSUMER_CPU
    };
    let total = o.trips + o.trips / 10;
    forked(
        cpu,
        || {
            let (mut rx, mut tx) = (Rx::new(sh.ring(0), proto), Tx::new(sh.ring(1), proto));
            let mut buf = [0u8; 64];
            for _ in 0..total {
                let len = loop {
                    match rx.recv(&mut buf) {
                        Some(len) => break len,
                        None => wait(o.one_cpu),
                    }
                };
                while !tx.send(&buf[..len]) {
                    wait(o.one_cpu);
                }
            }
        },
        || {
            let (mut tx, mut rx) = (Tx::new(sh.ring(0), proto), Rx::new(sh.ring(1), proto));
            let frame = [7u8; 64];
            let mut buf = [0u8; 64];
            let trip = || {
                while !tx.send(&frame[..len]) {
                    wait(o.one_cpu);
                }
                while rx.recv(&mut buf).is_none() {
                    wait(o.one_cpu);
                }
                assert_eq!(buf[..len], frame[..len]);
            };
            half_median_of_samples(o.trips / 10, o.trips, trip)
        },
    )
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes `ts` only.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Millions of frames of `len` bytes a second through `proto`, parent to
/// child, timed by the child from its first frame to its last.
fn throughput(proto: Proto, len: usize, o: &Opts) -> f64 {
    let frames = if len <= 64 {
        o.frames_64
    } else {
        o.frames_1514
    };
    let sh = Shared::new();
    let cpu = if o.one_cpu {
        PRODUCER_CPU
    } else {
        CONSUMER_CPU
    };
    forked(
        cpu,
        || {
            let mut rx = Rx::new(sh.ring(0), proto);
            let mut bufs = vec![[0u8; 1536]; BATCH];
            let mut got = 0u64;
            let mut start = 0;
            let mut sum = 0u64;
            while got < frames {
                let n = rx.recv_batch(&mut bufs);
                if n == 0 {
                    wait(o.one_cpu);
                    continue;
                }
                if got == 0 {
                    start = now_ns();
                }
                got += n as u64;
                sum = sum.wrapping_add(u64::from(bufs[n - 1][len - 1]));
            }
            let end = now_ns();
            std::hint::black_box(sum);
            sh.ctl(1).store(end - start, Ordering::Release);
        },
        || {
            let mut tx = Tx::new(sh.ring(0), proto);
            let frame = vec![9u8; len];
            let mut sent = 0u64;
            while sent < frames {
                let want = (frames - sent).min(BATCH as u64) as usize;
                let n = tx.send_batch(&frame, want);
                if n == 0 {
                    wait(o.one_cpu);
                }
                sent += n as u64;
            }
        },
    );
    let ns = sh.ctl(1).load(Ordering::Acquire).max(1);
    frames as f64 * 1e3 / ns as f64
}

/// One protocol's results in one round: protocol, placement, one-way ns,
/// one-way / floor, Mfps at 64 B, Mfps at 1514 B.
type Row = (Proto, &'static str, f64, f64, f64, f64);

fn stats(v: &[f64]) -> String {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    format!("{:.3} ({:.3}-{:.3})", s[s.len() / 2], s[0], s[s.len() - 1])
}

fn placement(c2c: u128) -> &'static str {
    match c2c {
        0..45 => "same-core",
        45..100 => "near",
        _ => "far",
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--rounds N"))
        .unwrap_or(5);
    let quick = args.iter().any(|a| a == "--quick");
    let one_cpu = args.iter().any(|a| a == "--one-cpu");
    let o = Opts {
        trips: if quick || one_cpu { 2_000 } else { 100_000 },
        frames_64: if quick { 2_000_000 } else { 40_000_000 },
        frames_1514: if quick { 200_000 } else { 4_000_000 },
        one_cpu,
    };
    pin_current_thread(PRODUCER_CPU).expect("pin");
    println!(
        "readiness study: {} slots of {SLOT} B per ring, batches of {BATCH}, {} ({} rounds)",
        SLOTS,
        if one_cpu {
            "both processes on CPU 0"
        } else {
            "processes on CPU 0 and CPU 1"
        },
        rounds
    );
    println!("round | c2c ns | placement | proto | one-way ns | / floor | Mfps 64 B | Mfps 1514 B");
    // Per protocol: (placement, latency ratio, 64 B rate, 1514 B rate).
    let mut rows: Vec<Row> = Vec::new();
    let mut floors = Vec::new();
    let mut short = Vec::new();
    for round in 0..rounds {
        let c2c = if one_cpu {
            0
        } else {
            core_to_core_latency().as_nanos()
        };
        let place = if one_cpu { "one-cpu" } else { placement(c2c) };
        let fl = floor(&o);
        floors.push((place, fl));
        println!("{round:5} | {c2c:6} | {place:9} | floor    | {fl:10.1} |");
        for k in 0..PROTOS.len() {
            let proto = PROTOS[(round + k) % PROTOS.len()];
            let lat = latency(proto, 64, &o);
            let t64 = throughput(proto, 64, &o);
            let t1514 = throughput(proto, 1514, &o);
            println!(
                "{round:5} | {c2c:6} | {place:9} | {:8} | {lat:10.1} | {:7.3} | {t64:9.2} | {t1514:11.2}",
                proto.name(),
                lat / fl
            );
            rows.push((proto, place, lat, lat / fl, t64, t1514));
        }
        // The line protocol with a frame that fits its first line beside
        // the header: what one line transfer per hop gives.
        let lat56 = latency(Proto::LineSeq, 56, &o);
        println!(
            "{round:5} | {c2c:6} | {place:9} | line-56B | {lat56:10.1} | {:7.3} |",
            lat56 / fl
        );
        short.push((place, lat56 / fl));
        let c2c_after = if one_cpu {
            0
        } else {
            core_to_core_latency().as_nanos()
        };
        if placement(c2c_after) != placement(c2c) && !one_cpu {
            println!("      | {c2c_after:6} | moved during the round");
        }
    }
    println!("summary: median (min-max) per placement");
    for place in ["one-cpu", "same-core", "near", "far"] {
        let fl: Vec<f64> = floors
            .iter()
            .filter(|f| f.0 == place)
            .map(|f| f.1)
            .collect();
        if fl.is_empty() {
            continue;
        }
        println!(
            "{place}: floor one-way ns {} ({} rounds)",
            stats(&fl),
            fl.len()
        );
        let s56: Vec<f64> = short.iter().filter(|f| f.0 == place).map(|f| f.1).collect();
        println!(
            "  line-seq with 56-byte frames: one-way / floor {}",
            stats(&s56)
        );
        for proto in PROTOS {
            let pick = |f: fn(&Row) -> f64| -> Vec<f64> {
                rows.iter()
                    .filter(|r| r.0 == proto && r.1 == place)
                    .map(f)
                    .collect()
            };
            // Per-round ratios of the throughputs to the index protocol's.
            let ratio = |f: fn(&Row) -> f64| -> Vec<f64> {
                let mine = pick(f);
                let base: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.0 == Proto::Index && r.1 == place)
                    .map(f)
                    .collect();
                mine.iter().zip(&base).map(|(a, b)| a / b).collect()
            };
            println!(
                "  {:8}: one-way ns {} | / floor {} | 64 B Mfps {} (x index {}) | 1514 B Mfps {} (x index {})",
                proto.name(),
                stats(&pick(|r| r.2)),
                stats(&pick(|r| r.3)),
                stats(&pick(|r| r.4)),
                stats(&ratio(|r| r.4)),
                stats(&pick(|r| r.5)),
                stats(&ratio(|r| r.5)),
            );
        }
    }
}
