//! The link measured as a user of the public API measures it, with nothing
//! of the project's harness: default link geometry, the program's own
//! buffers, two processes pinned to CPU 0 and CPU 1.
//!
//! - **Throughput at 1514 bytes.** A master process sends with
//!   `Sender::send_batch` (batches of 32) to a slave process that takes the
//!   frames with `Receiver::recv_batch` into its own buffers; alternating
//!   with it, rtrb between two threads of one process on the same CPUs,
//!   carrying `[u8; 1514]` elements copied in by the producer and out by
//!   the consumer, with a ring of the link ring's byte capacity (`--slots`
//!   slots of `--slot-size` bytes; by default the link's default
//!   geometry). Rounds of a second each; the order swaps every round.
//! - **Latency at 64 bytes.** The master `send`s one frame and `recv`s the
//!   slave's echo of it (the slave `recv`s and `send`s it back); the floor
//!   is two processes flipping a counter in one shared cache line on the
//!   same CPUs. Each is measured twice in the same round
//!   ([`vecring_benches::one_way`]): a million round trips timed as a
//!   whole (the untimed mean, which no timer inflates), then a million
//!   timed one by one with the time-stamp counter, less its read's cost
//!   (mean, median, 99th and 99.9th percentile). One way is half a round
//!   trip. The link and the floor alternate which goes first. Then the
//!   link once more with both ends receiving through `Receiver::wait`
//!   (sleeping on the doorbell whenever the frame is not there yet: the
//!   interrupt mode's latency), fewer trips.
//!
//! Each round is tagged with the core-to-core latency of the vCPU
//! placement it drew (the VM's vCPUs move; see `docs/benchmarks/method.md`), and the
//! summary gives the ratios per placement: the two vCPUs on one physical
//! core, near, far. Compare ratios within one placement.
//!
//! ```text
//! cargo run --release -p vecring-benches --bin user-view -- [throughput|latency] [--rounds N] [--slots N] [--slot-size BYTES]
//! ```

mod floor;
mod rounds;

use floor::{flipper, floor_round};
use rounds::{alternate, summary, Placement};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_benches::one_way::{one_way, OneWay};
use vecring_benches::{core_to_core_latency, pin_current_thread, CONSUMER_CPU, PRODUCER_CPU};
use vecring_core::{Geometry, Link, LinkRecvError, Receiver, Role, Sender};

const FRAME: usize = 1514;
const BATCH: usize = 32;
const ROUND: Duration = Duration::from_secs(1);
/// Round trips of a latency round: a tenth as many to warm up, then this
/// many timed as a whole and as many timed one by one.
const TRIPS: usize = 1_000_000;
const WARM_TRIPS: usize = TRIPS / 10;
/// The same for the link received through `Receiver::wait`, whose every
/// trip is a doorbell's wake-up (microseconds).
const WAIT_TRIPS: usize = 50_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--slave") => return slave(&args[1]),
        Some("--flipper") => {
            return flipper(
                args[1].parse().expect("fd"),
                args[2].parse().expect("lines"),
            )
        }
        _ => {}
    }
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--rounds N"))
        .unwrap_or(7);
    // The link's ring in slots, and the ring floor's in 64-byte lines.
    let slots: u32 = args
        .iter()
        .position(|a| a == "--slots")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--slots N"))
        .unwrap_or(Geometry::DEFAULT.slot_count());
    // The link's slot size (throughput's rtrb gets the same bytes).
    let slot_size: u32 = args
        .iter()
        .position(|a| a == "--slot-size")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--slot-size N"))
        .unwrap_or(64);
    let what = args.first().map(String::as_str).unwrap_or("both");
    pin_current_thread(PRODUCER_CPU).expect("pin");
    let dir = std::env::temp_dir().join(format!("vecring-user-view-{}", std::process::id()));
    let mut peer = Peer::start(&dir);
    let link = open(
        Role::Master,
        dir.to_str().expect("path"),
        Some(
            Geometry::new(slots, slot_size)
                .expect("--slots, --slot-size: powers of two the link takes"),
        ),
    );
    peer.ask("up");
    if what != "latency" {
        throughput(
            &link,
            &mut peer,
            rounds,
            slots as usize * slot_size as usize,
        );
    }
    if what != "throughput" {
        latency(&link, &mut peer, rounds, slots);
    }
    peer.send("quit");
    let _ = peer.child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

fn open(role: Role, dir: &str, geometry: Option<Geometry>) -> Link {
    let mut b = Link::builder("userview", "l").role(role).run_dir(dir);
    if let Some(g) = geometry {
        b = b.geometry(g);
    }
    let link = b.open().expect("open the link");
    link.wait_up(Duration::from_secs(20)).expect("link up");
    link
}

/// The slave process, driven by one command a line on stdin.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(dir: &std::path::Path) -> Peer {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .arg("--slave")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the slave");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Peer {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, cmd: &str) {
        writeln!(self.stdin, "{cmd}").expect("to the slave");
    }

    fn reply(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("from the slave");
        assert!(!line.is_empty(), "the slave exited");
        line.trim().to_string()
    }

    fn ask(&mut self, cmd: &str) -> String {
        self.send(cmd);
        self.reply()
    }
}

fn slave(dir: &str) {
    pin_current_thread(CONSUMER_CPU).expect("pin");
    let link = open(Role::Slave, dir, None);
    let (mut tx, mut rx) = (link.sender().unwrap(), link.receiver().unwrap());
    let mut bufs = vec![[0u8; FRAME]; BATCH];
    let mut lens = [0usize; BATCH];
    for line in std::io::stdin().lock().lines() {
        match line.expect("stdin").as_str() {
            "up" => println!("ok"),
            "rx" => {
                // Until the one-byte frame that ends the round.
                println!("ready");
                let (mut got, mut sum) = (0u64, 0u64);
                'round: loop {
                    let n = rx.recv_batch(&mut bufs, &mut lens).expect("recv_batch");
                    for (buf, &len) in bufs.iter().zip(&lens).take(n) {
                        if len == 1 {
                            break 'round;
                        }
                        sum = sum.wrapping_add(u64::from(buf[len - 1]));
                        got += 1;
                    }
                }
                println!("got {got} {sum}");
            }
            cmd if cmd.starts_with("echo ") || cmd.starts_with("echo-wait ") => {
                // `echo N`: N frames back, polling; `echo-wait N`: the
                // same, receiving through `Receiver::wait`.
                let (kind, n) = cmd.split_once(' ').expect("echo N");
                let n: usize = n.parse().expect("echo N");
                let wait = kind == "echo-wait";
                println!("ready");
                std::io::stdout().flush().expect("stdout");
                let mut buf = [0u8; 64];
                for _ in 0..n {
                    let len = receive(&mut rx, &mut buf, wait);
                    while tx.send(&buf[..len]).is_err() {}
                }
                println!("done");
            }
            _ => return,
        }
        std::io::stdout().flush().expect("stdout");
    }
}

/// Frames a second through the link: one round.
fn link_round(link: &Link, peer: &mut Peer) -> f64 {
    let mut tx = link.sender().expect("sender");
    let frames: Vec<[u8; FRAME]> = (0..BATCH).map(|i| [i as u8; FRAME]).collect();
    assert_eq!(peer.ask("rx"), "ready");
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < ROUND {
        for _ in 0..64 {
            sent += tx
                .send_batch(frames.iter().map(|f| &f[..]))
                .expect("send_batch") as u64;
        }
    }
    while tx.send(&[0]).is_err() {}
    let reply = peer.reply();
    let elapsed = start.elapsed();
    let got: u64 = reply.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(got, sent, "the slave received what was sent");
    sent as f64 / elapsed.as_secs_f64()
}

/// Frames a second through rtrb between two threads: one round.
fn rtrb_round(ring_bytes: usize) -> f64 {
    let (mut p, mut c) = rtrb::RingBuffer::<[u8; FRAME]>::new(ring_bytes / FRAME);
    let done = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let (done2, received2) = (Arc::clone(&done), Arc::clone(&received));
    let consumer = std::thread::spawn(move || {
        pin_current_thread(CONSUMER_CPU).expect("pin");
        let mut bufs = vec![[0u8; FRAME]; BATCH];
        let (mut got, mut sum) = (0u64, 0u64);
        loop {
            let n = c.slots().min(BATCH);
            if n == 0 {
                // Acquire: pairs with the producer's Release store below.
                if done2.load(Ordering::Acquire) && c.is_empty() {
                    break;
                }
                std::hint::spin_loop();
                continue;
            }
            let chunk = c.read_chunk(n).expect("n slots");
            let (a, b) = chunk.as_slices();
            for (buf, f) in bufs.iter_mut().zip(a.iter().chain(b)) {
                buf.copy_from_slice(f);
            }
            chunk.commit_all();
            for buf in &bufs[..n] {
                sum = sum.wrapping_add(u64::from(buf[FRAME - 1]));
            }
            got += n as u64;
        }
        std::hint::black_box(sum);
        // Relaxed: read after `join`.
        received2.store(got, Ordering::Relaxed);
    });
    let frames: Vec<[u8; FRAME]> = (0..BATCH).map(|i| [i as u8; FRAME]).collect();
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < ROUND {
        for _ in 0..64 {
            let n = p.slots().min(BATCH);
            if n == 0 {
                continue;
            }
            let chunk = p.write_chunk_uninit(n).expect("n slots");
            sent += chunk.fill_from_iter(frames.iter().copied()) as u64;
        }
    }
    // Release: pairs with the consumer's Acquire load.
    done.store(true, Ordering::Release);
    consumer.join().expect("consumer");
    let elapsed = start.elapsed();
    assert_eq!(received.load(Ordering::Relaxed), sent);
    sent as f64 / elapsed.as_secs_f64()
}

fn throughput(link: &Link, peer: &mut Peer, rounds: usize, ring_bytes: usize) {
    println!("throughput, {FRAME}-byte frames, batches of {BATCH}: link (two processes) / rtrb [u8; {FRAME}] (two threads), rounds of {ROUND:?}");
    println!("round | c2c ns before/between/after | link Mfps | rtrb Mfps | link / rtrb");
    let results = alternate(
        rounds,
        || link_round(link, peer),
        || rtrb_round(ring_bytes),
        |round, c2c, l, r| {
            println!(
                "{round:5} | {c2c} | {:9.2} | {:9.2} | {:.3}",
                l / 1e6,
                r / 1e6,
                l / r
            )
        },
    );
    let ratios: Vec<(Placement, f64)> = results.into_iter().map(|(p, l, r)| (p, l / r)).collect();
    summary("link / rtrb", &ratios);
}

/// The next frame into `buf`: polling `recv`, or (`wait`) sleeping in
/// `Receiver::wait` whenever there is none.
fn receive(rx: &mut Receiver, buf: &mut [u8], wait: bool) -> usize {
    loop {
        match rx.recv(buf) {
            Ok(len) => return len,
            Err(LinkRecvError::Empty) if wait => rx.wait(None).expect("wait"),
            Err(LinkRecvError::Empty) => std::hint::spin_loop(),
            Err(e) => panic!("{e}"),
        }
    }
}

/// One way through the link: `send` and the echo's `recv` (through
/// `Receiver::wait` on both ends with `wait`), `trips` of each kind.
fn link_latency_round(link: &Link, peer: &mut Peer, wait: bool, trips: usize) -> OneWay {
    let (mut tx, mut rx): (Sender, Receiver) = (link.sender().unwrap(), link.receiver().unwrap());
    let warm = trips / 10;
    let kind = if wait { "echo-wait" } else { "echo" };
    assert_eq!(peer.ask(&format!("{kind} {}", warm + 2 * trips)), "ready");
    let frame = [7u8; 64];
    let mut buf = [0u8; 64];
    let mut done = 0;
    let w = one_way(warm, trips, || {
        while tx.send(&frame).is_err() {}
        receive(&mut rx, &mut buf, wait);
        done += 1;
    });
    // The slave echoes exactly as many frames.
    assert_eq!(done, warm + 2 * trips);
    assert_eq!(peer.reply(), "done");
    w
}

fn latency(link: &Link, peer: &mut Peer, rounds: usize, slots: u32) {
    let ring = slots as usize;
    println!("latency at 64 bytes between two processes, one way = half a round trip, in ns:");
    println!("  link: send, and recv of the echo (the slave recvs and sends it back)");
    println!("  line: one shared counter line flipped (the floor of any hand-off)");
    println!("  ring: a 64-byte frame written into the next line of a ring of {ring} lines, then a counter line stored (the floor of any protocol that signals after the data, with no ring code)");
    println!("  untimed: the mean of {TRIPS} round trips timed as a whole; mean, p50, p99, p99.9: {TRIPS} more timed one by one (fenced rdtsc, less its read's cost, timer); the three go first in turn");
    println!("round | c2c ns before/between/after | link untimed mean p50 p99 p99.9 | line untimed mean p50 p99 | ring untimed mean p50 p99 | timer | link/line untimed, link p99/line untimed, link/ring untimed");
    let c2c = || core_to_core_latency().as_nanos();
    let mut results = Vec::new();
    for round in 0..rounds {
        let mut got: [Option<OneWay>; 3] = [None; 3];
        let mut c = vec![c2c()];
        for k in 0..3 {
            let which = (round + k) % 3;
            got[which] = Some(match which {
                0 => link_latency_round(link, peer, false, TRIPS),
                1 => floor_round(0),
                _ => floor_round(ring),
            });
            if k == 0 {
                c.push(c2c());
            }
        }
        c.push(c2c());
        let [l, f, r] = got.map(|x| x.expect("measured"));
        let placement = Placement([c[0], c[1], c[2]]);
        println!(
            "{round:5} | {placement} | {:6.1} {:6.1} {:6.1} {:6.1} {:7.1} | {:5.1} {:5.1} {:5.1} {:5.1} | {:6.1} {:6.1} {:6.1} {:6.1} | {:4.1} | {:.2}, {:.2}, {:.2}",
            l.untimed_mean, l.mean, l.p50, l.p99, l.p999,
            f.untimed_mean, f.mean, f.p50, f.p99,
            r.untimed_mean, r.mean, r.p50, r.p99,
            l.timer,
            l.untimed_mean / f.untimed_mean,
            l.p99 / f.untimed_mean,
            l.untimed_mean / r.untimed_mean,
        );
        results.push((placement, l, f, r));
    }
    let ratio = |g: fn(&OneWay, &OneWay, &OneWay) -> f64| -> Vec<(Placement, f64)> {
        results
            .iter()
            .map(|(p, l, f, r)| (p.clone(), g(l, f, r)))
            .collect()
    };
    summary(
        "mean one way, link / untimed line (target <= 2.0 near)",
        &ratio(|l, f, _| l.untimed_mean / f.untimed_mean),
    );
    summary(
        "p99 one way, link / untimed line (target <= 3.0 near)",
        &ratio(|l, f, _| l.p99 / f.untimed_mean),
    );
    summary(
        "mean one way, link / untimed ring floor",
        &ratio(|l, _, r| l.untimed_mean / r.untimed_mean),
    );
    let mut w: Vec<OneWay> = (0..rounds.min(3))
        .map(|_| link_latency_round(link, peer, true, WAIT_TRIPS))
        .collect();
    w.sort_by(|a, b| a.p50.total_cmp(&b.p50));
    println!("the link, both ends receiving through Receiver::wait ({WAIT_TRIPS} trips a run; every trip a doorbell's wake-up: compare link-wakeup's eventfd ping-pong):");
    for x in &w {
        println!(
            "  untimed {:.0} ns, mean {:.0}, p50 {:.0}, p99 {:.0}, p99.9 {:.0}",
            x.untimed_mean, x.mean, x.p50, x.p99, x.p999
        );
    }
}
