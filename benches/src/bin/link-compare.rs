//! Cross-process link benchmark: a master (this process, CPU 0) sends to a
//! slave (a child process, CPU 1) over a real `Link` (socket handshake,
//! memfd region), in turn with `rtrb` between two threads of one process
//! on the same CPUs (see `docs/benchmarks/method.md`), twice: with fixed
//! `[u8; N]` elements (frames of one length only, rtrb's best case) and
//! with length-prefixed byte messages (how rtrb carries frames of any
//! length). Also the one-way
//! latency (ping-pong / 2) over the link beside a plain cache-line
//! ping-pong between the same two CPUs, and beside the floor of any
//! protocol that publishes an index after the data
//! ([`signal_then_data_latency`]).
//!
//! The latency is timed after a lap of the ring in untimed ping-pongs, so
//! that every descriptor already holds the 64-byte frame's word: the
//! steady state of a stream of one size. Just after frames of another size
//! (the 1514-byte run before it), the producer must rewrite some
//! descriptors, and each rewrite costs one more line transfer.
//!
//! Built with the cargo feature `iceoryx2`, iceoryx2 publish-subscribe
//! between the same two processes is a fourth candidate in the rotation,
//! and its ping-pong is timed beside the link's (see
//! `vecring_benches::iceoryx2_peer`).
//!
//! ```text
//! cargo run --release -p vecring-benches [--features iceoryx2] --bin link-compare \
//!     [-- PAIRS] [--latency-only] [--each] [--hold] [--csv FILE] [--quick]
//! ```
//!
//! `--each` also prints every pair's rates (on stderr). `--hold`
//! turns on the slave receiver's hold-back
//! ([`HoldBack::STREAMING`](vecring_core::HoldBack::STREAMING); off by
//! default, and never used by the ping-pong's `recv`). `--csv FILE` also
//! writes every pair's rates and latencies, with the core-to-core latency
//! around the pair, in the columns of [`vecring_benches::results`].
//! `--quick` moves a sixteenth of the frames and a tenth of the round
//! trips: a check that the tool runs, not a measurement.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
#[cfg(feature = "iceoryx2")]
use vecring_benches::iceoryx2_peer::{IceMaster, IceSlave};
use vecring_benches::results::{csv_arg, Results, Row};
use vecring_benches::{
    build, core_to_core_latency, frames_in_flight, hugepage_policy, pin_current_thread,
    signal_then_data_latency, Candidate, Placement, Source, CONSUMER_CPU, PRODUCER_CPU,
};
use vecring_core::{
    HoldBack, Link, LinkRecvError, LinkSendError, PushError, Receiver, Role, Sender,
};

const BATCH: usize = 32;
const ROUND_TRIPS: u32 = 20_000;

/// Frames per timed run: about 50 ms near (a tenth of a second or more
/// between far vCPUs), long against a wake-up or a page fault.
fn frames_for(len: usize) -> u64 {
    if len <= 64 {
        16_000_000
    } else {
        1_000_000
    }
}

/// Frames per timed run of iceoryx2, which moves a few million frames a
/// second: a few hundred milliseconds.
#[cfg(feature = "iceoryx2")]
fn ice_frames_for(len: usize) -> u64 {
    if len <= 64 {
        1_000_000
    } else {
        500_000
    }
}

/// The candidates of the throughput rotation, in their CSV names.
const CANDIDATES: &[&str] = &[
    "vecring-link",
    "rtrb-copy",
    "rtrb-bytes-copy",
    #[cfg(feature = "iceoryx2")]
    "iceoryx2",
];

fn open(role: Role, run_dir: &str) -> Link {
    let link = Link::builder("bench", "xproc")
        .role(role)
        .run_dir(run_dir)
        .hugepages(hugepage_policy())
        .open()
        .expect("open link");
    link.wait_up(Duration::from_secs(20)).expect("link up");
    link
}

/// The slave: answers `rx N LEN` (receive N frames of LEN bytes with
/// `recv_batch`), `echo N` (N ping-pongs), `ice N LEN` and `ice-echo N`
/// (the same over iceoryx2) and `sync` on stdin with `done`.
fn child(run_dir: &str, hold: bool, ice: Option<&str>) {
    pin_current_thread(CONSUMER_CPU).expect("pin");
    #[cfg(feature = "iceoryx2")]
    let ice = ice.map(|prefix| IceSlave::new(prefix).expect("iceoryx2 subscriber"));
    #[cfg(not(feature = "iceoryx2"))]
    assert!(ice.is_none(), "built without the iceoryx2 feature");
    let link = open(Role::Slave, run_dir);
    let (mut tx, mut rx) = (link.sender().unwrap(), link.receiver().unwrap());
    if hold {
        rx.set_hold_back(Some(HoldBack::STREAMING));
    }
    let mut buf = vec![0u8; 9216];
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let mut it = line.split_whitespace();
        let (cmd, n): (&str, u64) = (
            it.next().unwrap_or(""),
            it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
        );
        match cmd {
            "rx" => {
                // Into `BATCH` buffers of the frame length, of the rtrb
                // peer consumer's type (`[u8; N]`).
                match it.next().and_then(|v| v.parse().ok()) {
                    Some(64) => receive::<64>(&mut rx, n),
                    Some(1514) => receive::<1514>(&mut rx, n),
                    other => panic!("rx: frame length {other:?} is not 64 or 1514"),
                }
            }
            "echo" => {
                for _ in 0..n {
                    let len = loop {
                        match rx.recv(&mut buf) {
                            Ok(len) => break len,
                            Err(LinkRecvError::Empty) => std::hint::spin_loop(),
                            Err(e) => panic!("{e}"),
                        }
                    };
                    while let Err(LinkSendError::Push(PushError::Full)) = tx.send(&buf[..len]) {}
                }
            }
            #[cfg(feature = "iceoryx2")]
            "ice" => {
                let ice = ice.as_ref().expect("started with --ice");
                match it.next().and_then(|v| v.parse().ok()) {
                    Some(64) => ice.receive::<64>(n, BATCH),
                    Some(1514) => ice.receive::<1514>(n, BATCH),
                    other => panic!("ice: frame length {other:?} is not 64 or 1514"),
                }
            }
            #[cfg(feature = "iceoryx2")]
            "ice-echo" => ice.as_ref().expect("started with --ice").echo(n as u32),
            "sync" => {}
            _ => return,
        }
        println!("done");
    }
}

/// Receives `n` frames into `BATCH` buffers of `N` bytes. Out of line, as
/// the ring benchmark's consumer is: inlined into `child`'s command loop,
/// the batch loop's state spilled to the stack on every frame.
#[inline(never)]
fn receive<const N: usize>(rx: &mut Receiver, n: u64) {
    // On the heap, as the rtrb peer's buffers are.
    let mut bufs: Vec<[u8; N]> = (0..BATCH).map(|_| [0u8; N]).collect();
    let bufs = &mut bufs[..];
    let mut lens = [0usize; BATCH];
    let mut got = 0;
    while got < n {
        got += rx.recv_batch(bufs, &mut lens).expect("recv_batch") as u64;
    }
}

/// Sends `n` frames in batches of [`BATCH`], each batch from the start of
/// `frames` (the rtrb peer's producer sends from the same kind of source
/// frames, `[u8; N]`). Out of line, as the ring benchmark's producer is.
#[inline(never)]
fn send<const N: usize>(tx: &mut Sender, frames: &[[u8; N]], n: u64) {
    let mut sent = 0;
    while sent < n {
        let want = ((n - sent) as usize).min(frames.len());
        sent += tx
            .send_batch(frames[..want].iter().map(|f| f.as_slice()))
            .expect("send_batch") as u64;
    }
}

/// [`BATCH`] distinct source frames of `N` bytes, as the rtrb peer's.
fn source_frames<const N: usize>() -> Vec<[u8; N]> {
    let source = Source::new(N);
    (0..BATCH)
        .map(|i| source.frame(i).try_into().expect("N-byte frame"))
        .collect()
}

/// `trips` ping-pongs of `frame` with the slave's `echo`.
fn ping_pong(tx: &mut Sender, rx: &mut Receiver, frame: &[u8], trips: u32) {
    let mut buf = vec![0u8; frame.len()];
    for _ in 0..trips {
        while tx.send(frame).is_err() {}
        loop {
            match rx.recv(&mut buf) {
                Ok(_) => break,
                Err(LinkRecvError::Empty) => std::hint::spin_loop(),
                Err(e) => panic!("{e}"),
            }
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median, minimum and maximum of the per-pair ratios `a[i] / b[i]`.
fn ratios(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let mut q: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    let (lo, hi) = q
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    (median(&mut q), lo, hi)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hold = args.iter().any(|a| a == "--hold");
    if args.get(1).map(String::as_str) == Some("--child") {
        let ice = args
            .iter()
            .position(|a| a == "--ice")
            .and_then(|i| args.get(i + 1));
        return child(&args[2], hold, ice.map(String::as_str));
    }
    let pairs: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(5);
    let latency_only = args.iter().any(|a| a == "--latency-only");
    let each = args.iter().any(|a| a == "--each");
    let quick = args.iter().any(|a| a == "--quick");
    let (frames_div, round_trips) = if quick {
        (16, ROUND_TRIPS / 10)
    } else {
        (1, ROUND_TRIPS)
    };
    let mut results = Results::create(csv_arg(&args)).expect("create the --csv file");
    let run_dir = format!("/run/vecring-link-compare-{}", std::process::id());
    #[cfg(feature = "iceoryx2")]
    let ice_prefix = format!("vecring-link-compare-{}", std::process::id());
    #[cfg(feature = "iceoryx2")]
    let ice = IceMaster::new(&ice_prefix).expect("iceoryx2 publisher");
    let mut slave = Command::new(std::env::current_exe().unwrap());
    slave.args(["--child", &run_dir]);
    slave.args(hold.then_some("--hold"));
    #[cfg(feature = "iceoryx2")]
    slave.args(["--ice", &ice_prefix]);
    let mut slave = slave
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the slave process");
    pin_current_thread(PRODUCER_CPU).expect("pin");
    let link = open(Role::Master, &run_dir);
    let mut tx = link.sender().unwrap();
    let mut rx = link.receiver().unwrap();
    let mut to_slave = slave.stdin.take().unwrap();
    let mut from_slave = BufReader::new(slave.stdout.take().unwrap());
    let mut ask = |cmd: String| -> Instant {
        writeln!(to_slave, "{cmd}").unwrap();
        Instant::now()
    };
    let mut wait_done = || {
        let mut l = String::new();
        from_slave.read_line(&mut l).unwrap();
        assert_eq!(l.trim(), "done", "slave answered '{l}'");
    };
    // The slave's ports exist once it answers (an iceoryx2 sample sent
    // before its subscriber exists would be lost).
    ask("sync".into());
    wait_done();

    let sizes = [64usize, 1514];
    let (frames_64, frames_1514) = (source_frames::<64>(), source_frames::<1514>());
    // Per size, per candidate (in `CANDIDATES` order), every pair's rate.
    let mut results_fps: Vec<Vec<Vec<f64>>> = sizes
        .iter()
        .map(|_| vec![Vec::new(); CANDIDATES.len()])
        .collect();
    let (mut link_lat, mut line_lat, mut lat_ratio) = (vec![], vec![], vec![]);
    let (mut floor_lat, mut floor_ratio) = (vec![], vec![]);
    #[cfg(feature = "iceoryx2")]
    let (mut ice_lat, mut ice_ratio) = (vec![], vec![]);
    let source = vec![0x5au8; 9216];
    let mut before = core_to_core_latency().as_secs_f64() * 1e9;
    for pair in 0..pairs {
        let mut pair_fps: Vec<(usize, usize, f64)> = Vec::new();
        for (i, &len) in sizes.iter().enumerate().filter(|_| !latency_only) {
            let n = frames_for(len) / frames_div;
            // The same `BATCH` distinct source frames as the rtrb peer's,
            // and both timed after an untimed lap of their ring: warm
            // caches and touched pages on both sides.
            let lap = frames_in_flight(len) as u64;
            let measure_rtrb = |candidate| {
                let mut l = build(candidate, len, BATCH, Placement::Pinned);
                l.run(lap);
                n as f64 / l.run(n).as_secs_f64()
            };
            // The candidates in turn, starting one further each pair.
            let mut rates = vec![0.0; CANDIDATES.len()];
            for k in 0..CANDIDATES.len() {
                let which = (pair + k) % CANDIDATES.len();
                rates[which] = match CANDIDATES[which] {
                    "vecring-link" => {
                        let mut run = |count: u64| {
                            let start = ask(format!("rx {count} {len}"));
                            match len {
                                64 => send(&mut tx, &frames_64, count),
                                1514 => send(&mut tx, &frames_1514, count),
                                _ => unreachable!("the sizes are 64 and 1514"),
                            }
                            wait_done();
                            start.elapsed()
                        };
                        run(lap);
                        n as f64 / run(n).as_secs_f64()
                    }
                    "rtrb-copy" => measure_rtrb(Candidate::RtrbCopy),
                    "rtrb-bytes-copy" => measure_rtrb(Candidate::RtrbBytesCopy),
                    #[cfg(feature = "iceoryx2")]
                    "iceoryx2" => {
                        let ice_n = ice_frames_for(len) / frames_div;
                        let mut run = |count: u64| {
                            let start = ask(format!("ice {count} {len}"));
                            match len {
                                64 => ice.send(&frames_64, count),
                                1514 => ice.send(&frames_1514, count),
                                _ => unreachable!("the sizes are 64 and 1514"),
                            }
                            wait_done();
                            start.elapsed()
                        };
                        run(lap);
                        ice_n as f64 / run(ice_n).as_secs_f64()
                    }
                    other => unreachable!("no candidate {other}"),
                };
            }
            if each {
                let line: Vec<String> = CANDIDATES
                    .iter()
                    .zip(&rates)
                    .map(|(c, r)| format!("{c} {:.2}", r / 1e6))
                    .collect();
                eprintln!("pair {pair}, {len} B (Mfps): {}", line.join(", "));
            }
            for (k, rate) in rates.into_iter().enumerate() {
                results_fps[i][k].push(rate);
                pair_fps.push((len, k, rate));
            }
        }
        // Latency: ping-pong of one 64-byte frame, half the round trip,
        // timed after a lap of untimed ones (see the module doc).
        let lap = tx.geometry().expect("the link is up").slot_count();
        let mut one_way = 0.0;
        for (trips, timed) in [(lap, false), (round_trips, true)] {
            let start = ask(format!("echo {trips}"));
            ping_pong(&mut tx, &mut rx, &source[..64], trips);
            let elapsed = start.elapsed().as_secs_f64();
            wait_done();
            if timed {
                one_way = elapsed / f64::from(trips) / 2.0;
            }
        }
        #[cfg(feature = "iceoryx2")]
        let ice_one_way = {
            let mut one_way = 0.0;
            for (trips, timed) in [(lap.min(4096), false), (round_trips, true)] {
                let start = ask(format!("ice-echo {trips}"));
                ice.ping_pong(&source[..64], trips);
                let elapsed = start.elapsed().as_secs_f64();
                wait_done();
                if timed {
                    one_way = elapsed / f64::from(trips) / 2.0;
                }
            }
            one_way
        };
        let line = core_to_core_latency().as_secs_f64();
        floor_lat.push(signal_then_data_latency(lap as usize).as_secs_f64() * 1e9);
        link_lat.push(one_way * 1e9);
        line_lat.push(line * 1e9);
        lat_ratio.push(one_way / line);
        floor_ratio.push(floor_lat[pair] / (line * 1e9));
        #[cfg(feature = "iceoryx2")]
        {
            ice_lat.push(ice_one_way * 1e9);
            ice_ratio.push(ice_one_way / line);
        }
        // The placement of the pair: the larger of the readings before it
        // and at its end.
        let c2c_ns = before.max(line * 1e9);
        before = line * 1e9;
        let mut row = |bench, candidate, frame, metric, value| {
            results
                .push(Row {
                    bench,
                    group: bench,
                    candidate,
                    frame,
                    pair,
                    metric,
                    value,
                    c2c_ns,
                })
                .expect("write the --csv file");
        };
        for (len, k, rate) in pair_fps {
            row("link", CANDIDATES[k], len, "fps", rate);
        }
        row("latency", "vecring-link", 64, "one_way_ns", link_lat[pair]);
        #[cfg(feature = "iceoryx2")]
        row("latency", "iceoryx2", 64, "one_way_ns", ice_lat[pair]);
        row("latency", "cache-line", 64, "one_way_ns", line_lat[pair]);
        row(
            "latency",
            "signal-then-data",
            64,
            "one_way_ns",
            floor_lat[pair],
        );
    }
    results.flush().expect("write the --csv file");
    drop(to_slave);
    let _ = slave.wait();
    drop(link);

    println!(
        "link-compare: {pairs} rounds of {} in turn; master CPU {PRODUCER_CPU} -> slave process CPU {CONSUMER_CPU}; batch {BATCH}; copy on both sides; receiver hold-back {}{}",
        CANDIDATES.join(", "),
        if hold { "on" } else { "off" },
        if quick { "; --quick: not a measurement" } else { "" },
    );
    if !latency_only {
        println!();
        println!("| frame | vecring link Mfps | Gbit/s | rtrb (threads) Mfps | Gbit/s | link/rtrb median | min..max | target | rtrb byte messages Mfps | link/rtrb-bytes median | min..max |{}", if cfg!(feature = "iceoryx2") { " iceoryx2 Mfps | link/iceoryx2 median | min..max |" } else { "" });
        println!(
            "|---|---|---|---|---|---|---|---|---|---|---|{}",
            if cfg!(feature = "iceoryx2") {
                "---|---|---|"
            } else {
                ""
            }
        );
    }
    for (i, &len) in sizes.iter().enumerate().filter(|_| !latency_only) {
        let all = &results_fps[i];
        let v = &all[0];
        let ((mq, lo, hi), (mqb, lob, hib)) = (ratios(v, &all[1]), ratios(v, &all[2]));
        let (mv, mr, mb) = (
            median(&mut v.clone()),
            median(&mut all[1].clone()),
            median(&mut all[2].clone()),
        );
        #[cfg(feature = "iceoryx2")]
        let ice_cells = {
            let (mqi, loi, hii) = ratios(v, &all[3]);
            format!(
                " {:.2} | {mqi:.2} | {loi:.2}..{hii:.2} |",
                median(&mut all[3].clone()) / 1e6
            )
        };
        #[cfg(not(feature = "iceoryx2"))]
        let ice_cells = "";
        println!(
            "| {len} | {:.2} | {:.2} | {:.2} | {:.2} | {mq:.2} | {lo:.2}..{hi:.2} | >= 1.0 | {:.2} | {mqb:.2} | {lob:.2}..{hib:.2} |{ice_cells}",
            mv / 1e6,
            mv * len as f64 * 8.0 / 1e9,
            mr / 1e6,
            mr * len as f64 * 8.0 / 1e9,
            mb / 1e6,
        );
    }
    println!();
    println!(
        "one-way latency: link {:.0} ns (ping-pong / 2, 64 B), cache-line ping-pong {:.0} ns; ratio median {:.2} (target <= 2.0)",
        median(&mut link_lat),
        median(&mut line_lat),
        median(&mut lat_ratio)
    );
    println!(
        "signal then data (index after data, no ring code): {:.0} ns, {:.2} x the cache-line ping-pong",
        median(&mut floor_lat),
        median(&mut floor_ratio)
    );
    #[cfg(feature = "iceoryx2")]
    println!(
        "iceoryx2 publish-subscribe: {:.0} ns (ping-pong / 2, 64 B), {:.2} x the cache-line ping-pong",
        median(&mut ice_lat),
        median(&mut ice_ratio)
    );
    let _ = std::fs::remove_dir_all(&run_dir);
}
