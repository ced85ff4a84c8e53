//! A/B runner: vecring against its peers, alternately, in one run.
//!
//! For each comparison both candidates are built once (ring, threads), then
//! measured A B, B A, … for `--pairs` pairs of `--secs` seconds each. Prints
//! the median rate of each and the median (and range) of the per-pair
//! ratios A/B, as the method asks (`docs/benchmarks/method.md`). The producer is pinned
//! to CPU 0 and the consumer to CPU 1 for every candidate.
//!
//! ```text
//! cargo run --release -p vecring-benches --bin ring-compare -- [--pairs 7] [--secs 0.3] \
//!     [--sizes 64,1514] [--csv FILE]
//! ```
//!
//! `--sizes` takes frame lengths of 64, 256, 1514 and 9000 bytes. Every
//! size gets the same comparisons (see `comparisons`). The core-to-core
//! latency is taken between pairs
//! (the vCPU placement each pair drew). `--csv FILE` also writes every
//! pair's two rates, with that latency, in the columns of
//! [`vecring_benches::results`], for `benches/plot.py`.
//!
//! `--only NAME --len L --batch B --secs S` instead runs one candidate
//! alone for `S` seconds (for a profiler) and prints its rate and how
//! often each side waited for the other. `--same-thread` runs producer and
//! consumer alternately on one thread (the ring code's CPU cost alone; a
//! diagnostic, not a result). `--frames N` makes `--only` move exactly N
//! frames instead of timing itself (for `benches/ir-per-frame.sh`).

use std::time::{Duration, Instant};
use vecring_benches::pipeline::{Finished, Link};
use vecring_benches::results::{csv_arg, Results, Row};
use vecring_benches::{
    build, core_to_core_latency, geometry, hugepages_available, pin_current_thread, Candidate,
    Placement, FRAME_SIZES, PRODUCER_CPU,
};

/// One line of the report.
struct Comparison {
    a: Candidate,
    b: Candidate,
    len: usize,
    batch: usize,
    /// The ratio A/B the issue asks for.
    target: f64,
}

/// The comparisons for frames of `len` bytes, in report order: each API
/// against rtrb with fixed `[u8; N]` elements (frames of one length only,
/// rtrb's best case) and against rtrb carrying length-prefixed byte
/// messages (how rtrb carries a link's frames); the zero-copy consumer
/// with its hold-back on (not the default; only frames of one slot are
/// ever held back); and the zero-copy API, and rtrb's, against a
/// single-thread memcpy of the same bytes.
fn comparisons(len: usize) -> Vec<Comparison> {
    let row = |a, b, target| Comparison {
        a,
        b,
        len,
        batch: 32,
        target,
    };
    let mut rows = vec![
        row(Candidate::VecringCopy, Candidate::RtrbCopy, 1.0),
        row(Candidate::VecringZeroCopy, Candidate::RtrbZeroCopy, 1.0),
        row(Candidate::VecringCopy, Candidate::RtrbBytesCopy, 1.0),
        row(
            Candidate::VecringZeroCopy,
            Candidate::RtrbBytesZeroCopy,
            1.0,
        ),
    ];
    if geometry().slots_for(len) == 1 {
        rows.push(row(
            Candidate::VecringZeroCopyHold,
            Candidate::RtrbZeroCopy,
            1.0,
        ));
        rows.push(row(
            Candidate::VecringZeroCopyHold,
            Candidate::RtrbBytesZeroCopy,
            1.0,
        ));
    }
    rows.push(row(Candidate::VecringZeroCopy, Candidate::Memcpy, 0.8));
    // Not a target: whether any two-thread ring reaches the same bar here.
    rows.push(row(Candidate::RtrbZeroCopy, Candidate::Memcpy, 0.8));
    rows
}

/// Frames per second of `link` over about `secs`, in runs of `chunk`
/// frames.
fn measure(link: &mut dyn Link, chunk: u64, secs: f64) -> f64 {
    let budget = Duration::from_secs_f64(secs);
    let mut frames = 0;
    let mut busy = Duration::ZERO;
    while busy < budget {
        busy += link.run(chunk);
        frames += chunk;
    }
    frames as f64 / busy.as_secs_f64()
}

/// Frames per run so that one run takes about 20 ms (and the drain at its
/// end is negligible); also the warm-up.
fn calibrate(link: &mut dyn Link) -> u64 {
    let mut chunk = 1024u64;
    loop {
        let took = link.run(chunk);
        if took >= Duration::from_millis(20) || chunk >= 1 << 26 {
            return chunk;
        }
        let scale = (0.02 / took.as_secs_f64().max(1e-6)).clamp(2.0, 64.0);
        chunk = (chunk as f64 * scale) as u64;
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: cannot parse {v}"))
        })
        .unwrap_or(default)
}

/// Runs one candidate alone and prints its rate and wait counts.
fn only(
    name: &str,
    len: usize,
    batch: usize,
    secs: f64,
    exact_frames: Option<u64>,
    placement: Placement,
) {
    let candidate = Candidate::ALL
        .into_iter()
        .find(|c| c.name() == name)
        .unwrap_or_else(|| panic!("--only: unknown candidate {name}"));
    let mut link = build(candidate, len, batch, placement);
    let fps = if let Some(frames) = exact_frames {
        // A fixed count for instruction counting (`benches/ir-per-frame.sh`).
        frames as f64 / link.run(frames).as_secs_f64()
    } else {
        let chunk = calibrate(link.as_mut());
        measure(link.as_mut(), chunk, secs)
    };
    let done = link.finish();
    println!(
        "{name} len {len} batch {batch}: {:.2} Mfps, {:.2} GB/s; per 1000 frames: \
         producer found the ring full {:.1} times, consumer found it empty {:.1} times",
        fps / 1e6,
        fps * len as f64 / 1e9,
        done.full_polls as f64 * 1000.0 / done.frames as f64,
        done.empty_polls as f64 * 1000.0 / done.frames as f64,
    );
}

/// The core-to-core latency now, in nanoseconds, once the consumer
/// threads of the links just measured have parked (an idle consumer spins
/// for a few milliseconds on the probe's CPU first).
fn placement_probe() -> f64 {
    std::thread::sleep(Duration::from_millis(10));
    core_to_core_latency().as_secs_f64() * 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pairs: usize = arg(&args, "--pairs", 7);
    let secs: f64 = arg(&args, "--secs", 0.3);
    assert!(pairs >= 1 && secs > 0.0, "--pairs >= 1 and --secs > 0");
    let sizes: Vec<usize> = arg(&args, "--sizes", "64,1514".to_string())
        .split(',')
        .map(|s| {
            let len = s
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("--sizes: cannot parse {s}"));
            assert!(
                FRAME_SIZES.contains(&len),
                "--sizes: {len} is not one of {FRAME_SIZES:?}"
            );
            len
        })
        .collect();
    let mut results = Results::create(csv_arg(&args)).expect("create the --csv file");

    pin_current_thread(PRODUCER_CPU).expect("pin the producer to CPU 0");
    let placement = if args.iter().any(|a| a == "--same-thread") {
        Placement::SameThread
    } else {
        Placement::Pinned
    };
    let name: String = arg(&args, "--only", String::new());
    if !name.is_empty() {
        only(
            &name,
            arg(&args, "--len", 1514),
            arg(&args, "--batch", 32),
            secs,
            args.iter()
                .any(|a| a == "--frames")
                .then(|| arg(&args, "--frames", 0u64)),
            placement,
        );
        return;
    }
    println!(
        "ring-compare: {pairs} A/B pairs of {secs} s (B first in every other pair); \
         producer CPU 0, consumer CPU 1; \
         vecring geometry {} slots x {} B, hugepages: {}; \
         core-to-core latency now: {} ns one way",
        geometry().slot_count(),
        geometry().slot_size(),
        if hugepages_available() { "yes" } else { "no" },
        core_to_core_latency().as_nanos(),
    );
    println!();
    println!(
        "| A | B | frame B | batch | A Mfps | A GB/s | B Mfps | B GB/s | A/B median | A/B min..max | target | met | A full/empty | B full/empty |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let started = Instant::now();
    for c in sizes.iter().flat_map(|&len| comparisons(len)) {
        let mut a = build(c.a, c.len, c.batch, placement);
        let mut b = build(c.b, c.len, c.batch, placement);
        let chunk_a = calibrate(a.as_mut());
        let chunk_b = calibrate(b.as_mut());
        let (mut rates_a, mut rates_b, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let group = format!("{}:{}", c.a.name(), c.b.name());
        let mut before = placement_probe();
        for pair in 0..pairs {
            // A B, then B A: neither candidate always runs second, just
            // after the other's consumer went idle.
            let (ra, rb) = if pair % 2 == 0 {
                let ra = measure(a.as_mut(), chunk_a, secs);
                (ra, measure(b.as_mut(), chunk_b, secs))
            } else {
                let rb = measure(b.as_mut(), chunk_b, secs);
                (measure(a.as_mut(), chunk_a, secs), rb)
            };
            let after = placement_probe();
            for (candidate, value) in [(c.a, ra), (c.b, rb)] {
                results
                    .push(Row {
                        bench: "ring",
                        group: &group,
                        candidate: candidate.name(),
                        frame: c.len,
                        pair,
                        metric: "fps",
                        value,
                        c2c_ns: before.max(after),
                    })
                    .expect("write the --csv file");
            }
            before = after;
            rates_a.push(ra);
            rates_b.push(rb);
            ratios.push(ra / rb);
        }
        let (done_a, done_b) = (a.finish(), b.finish());
        // Per 1000 frames: producer found the ring full / consumer found it
        // empty. Many "full" = the consumer is the bottleneck, and so on.
        let waits = |d: Finished| {
            let per = |n: u64| n as f64 * 1000.0 / d.frames.max(1) as f64;
            format!("{:.0}/{:.0}", per(d.full_polls), per(d.empty_polls))
        };
        let (ma, mb) = (median(&mut rates_a), median(&mut rates_b));
        let mr = median(&mut ratios);
        let gb = |fps: f64| fps * c.len as f64 / 1e9;
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}..{:.2} | ≥ {:.1} | {} | {} | {} |",
            c.a.name(),
            c.b.name(),
            c.len,
            c.batch,
            ma / 1e6,
            gb(ma),
            mb / 1e6,
            gb(mb),
            mr,
            ratios[0],
            ratios[ratios.len() - 1],
            c.target,
            if mr >= c.target { "yes" } else { "no" },
            waits(done_a),
            waits(done_b),
        );
    }
    results.flush().expect("write the --csv file");
    println!();
    println!("total {:.1} s", started.elapsed().as_secs_f64());
}
