//! The link measured as a user of the public API measures it, with nothing
//! of the project's harness: default link geometry, the program's own
//! buffers, two processes pinned to CPU 0 and CPU 1.
//!
//! - **Throughput at 1514 bytes.** A master process sends with
//!   `Sender::send_batch` (batches of 32) to a slave process that takes the
//!   frames with `Receiver::recv_batch` into its own buffers; alternating
//!   with it, rtrb between two threads of one process on the same CPUs,
//!   carrying `[u8; 1514]` elements copied in by the producer and out by
//!   the consumer, with a ring of the link ring's byte capacity. Rounds of
//!   a second each; the order swaps every round.
//! - **Latency at 64 bytes.** The master `send`s one frame and `recv`s the
//!   slave's echo of it; the floor is two processes flipping a counter in
//!   one shared cache line on the same CPUs. One way is half the median
//!   round trip (timed 100 round trips at a time), in alternating rounds.
//!
//! Each round is tagged with the core-to-core latency of the vCPU
//! placement it drew (the VM's vCPUs move; see `docs/benchmarks/method.md`), and the
//! summary gives the ratios per placement: the two vCPUs on one physical
//! core, near, far. Compare ratios within one placement.
//!
//! ```text
//! cargo run --release -p vecring-benches --bin user-view -- [throughput|latency] [--rounds N]
//! ```

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_benches::{
    core_to_core_latency, half_median_of_samples, pin_current_thread, CONSUMER_CPU, PRODUCER_CPU,
};
use vecring_core::{Link, LinkRecvError, Role};

const FRAME: usize = 1514;
const BATCH: usize = 32;
const ROUND: Duration = Duration::from_secs(1);
/// Timed round trips of a latency round, after a tenth as many untimed.
const TRIPS: usize = 100_000;
const WARM_TRIPS: usize = TRIPS / 10;
/// The link's default ring: 32768 slots of 64 bytes.
const RING_BYTES: usize = 32768 * 64;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--slave") => return slave(&args[1]),
        Some("--flipper") => return flipper(args[1].parse().expect("fd")),
        _ => {}
    }
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .map(|n| n.parse().expect("--rounds N"))
        .unwrap_or(7);
    let what = args.first().map(String::as_str).unwrap_or("both");
    pin_current_thread(PRODUCER_CPU).expect("pin");
    let dir = std::env::temp_dir().join(format!("vecring-user-view-{}", std::process::id()));
    let mut peer = Peer::start(&dir);
    let link = open(Role::Master, dir.to_str().expect("path"));
    peer.ask("up");
    if what != "latency" {
        throughput(&link, &mut peer, rounds);
    }
    if what != "throughput" {
        latency(&link, &mut peer, rounds);
    }
    peer.send("quit");
    let _ = peer.child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

fn open(role: Role, dir: &str) -> Link {
    let link = Link::builder("userview", "l")
        .role(role)
        .run_dir(dir)
        .open()
        .expect("open the link");
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
    let link = open(Role::Slave, dir);
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
            "echo" => {
                println!("ready");
                let mut buf = [0u8; 64];
                for _ in 0..WARM_TRIPS + TRIPS {
                    let len = loop {
                        match rx.recv(&mut buf) {
                            Ok(len) => break len,
                            Err(LinkRecvError::Empty) => std::hint::spin_loop(),
                            Err(e) => panic!("{e}"),
                        }
                    };
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
fn rtrb_round() -> f64 {
    let (mut p, mut c) = rtrb::RingBuffer::<[u8; FRAME]>::new(RING_BYTES / FRAME);
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

fn throughput(link: &Link, peer: &mut Peer, rounds: usize) {
    println!("throughput, {FRAME}-byte frames, batches of {BATCH}: link (two processes) / rtrb [u8; {FRAME}] (two threads), rounds of {ROUND:?}");
    println!("round | c2c ns before/between/after | link Mfps | rtrb Mfps | link / rtrb");
    let ratios = alternate(
        rounds,
        || link_round(link, peer),
        rtrb_round,
        |round, c2c, l, r| {
            println!(
                "{round:5} | {c2c} | {:9.2} | {:9.2} | {:.3}",
                l / 1e6,
                r / 1e6,
                l / r
            )
        },
    );
    summary("link / rtrb", &ratios);
}

/// The floor's other process: flips the counter in the shared line of the
/// memfd `fd` from odd to even until told to stop by a counter of
/// `u64::MAX`.
fn flipper(fd: i32) {
    pin_current_thread(CONSUMER_CPU).expect("pin");
    // SAFETY: the descriptor the parent left open for us.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let line = map_line(&fd);
    loop {
        // Acquire: pairs with the parent's Release store in `floor_round`.
        let v = line.load(Ordering::Acquire);
        if v == u64::MAX {
            return;
        }
        if v % 2 == 1 {
            // Release: pairs with the parent's Acquire load.
            line.store(v + 1, Ordering::Release);
        }
        std::hint::spin_loop();
    }
}

/// The first line of the memfd `fd`, shared.
fn map_line(fd: &OwnedFd) -> &'static AtomicU64 {
    // SAFETY: a shared mapping of the memfd's first page, never unmapped;
    // the page is zeroed by the kernel and only ever used as atomics.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap");
        &*p.cast::<AtomicU64>()
    }
}

/// Half the median round trip of `trip` ([`half_median_of_samples`]),
/// `TRIPS` timed after `WARM_TRIPS`.
fn half_median(trip: impl FnMut()) -> f64 {
    half_median_of_samples(WARM_TRIPS, TRIPS, trip)
}

/// One way through one shared line between two processes.
fn floor_round() -> f64 {
    // SAFETY: plain memfd_create; without MFD_CLOEXEC, so the child
    // inherits it.
    let raw = unsafe { libc::memfd_create(c"user-view-floor".as_ptr(), 0) };
    assert!(raw >= 0, "memfd_create");
    // SAFETY: a descriptor just made, ours alone.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sizing our own memfd.
    assert_eq!(unsafe { libc::ftruncate(raw, 4096) }, 0, "ftruncate");
    let line = map_line(&fd);
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg("--flipper")
        .arg(raw.to_string())
        .spawn()
        .expect("start the flipper");
    let mut v = 0u64;
    let one_way = half_median(|| {
        // Release/Acquire: pair with the flipper's Acquire load and Release
        // store.
        line.store(v + 1, Ordering::Release);
        while line.load(Ordering::Acquire) != v + 2 {
            std::hint::spin_loop();
        }
        v += 2;
    });
    // Release: pairs with the flipper's Acquire load.
    line.store(u64::MAX, Ordering::Release);
    child.wait().expect("flipper");
    one_way
}

/// One way through the link: `send` and the echo's `recv`.
fn link_latency_round(link: &Link, peer: &mut Peer) -> f64 {
    let (mut tx, mut rx) = (link.sender().unwrap(), link.receiver().unwrap());
    assert_eq!(peer.ask("echo"), "ready");
    let frame = [7u8; 64];
    let mut buf = [0u8; 64];
    let mut trips = 0;
    let one_way = half_median(|| {
        while tx.send(&frame).is_err() {}
        loop {
            match rx.recv(&mut buf) {
                Ok(_) => break,
                Err(LinkRecvError::Empty) => std::hint::spin_loop(),
                Err(e) => panic!("{e}"),
            }
        }
        trips += 1;
    });
    // The slave echoes exactly as many frames.
    assert_eq!(trips, WARM_TRIPS + TRIPS);
    one_way
}

fn latency(link: &Link, peer: &mut Peer, rounds: usize) {
    println!("latency, 64-byte send/recv ping-pong (two processes) / one shared counter line (two processes); one way = half the median round trip");
    println!("round | c2c ns before/between/after | link ns | floor ns | link / floor");
    let ratios = alternate(
        rounds,
        || {
            let l = link_latency_round(link, peer);
            assert_eq!(peer.reply(), "done");
            l
        },
        floor_round,
        |round, c2c, l, f| println!("{round:5} | {c2c} | {l:7.1} | {f:8.1} | {:.3}", l / f),
    );
    summary("link / floor", &ratios);
}

/// `rounds` rounds of `a` and `b`, which goes first swapping every round,
/// each printed by `show(round, placement, a, b)`; returns each round's
/// placement and `a / b`. The core-to-core latency is taken before, between
/// and after the two runs of a round, because the host moves the vCPUs
/// now and then: a round whose three figures fall in different placements
/// compared one placement with another.
fn alternate(
    rounds: usize,
    mut a: impl FnMut() -> f64,
    mut b: impl FnMut() -> f64,
    show: impl Fn(usize, &Placement, f64, f64),
) -> Vec<(Placement, f64)> {
    let c2c = || core_to_core_latency().as_nanos();
    (0..rounds)
        .map(|round| {
            let before = c2c();
            let (x, between, y) = if round % 2 == 0 {
                let x = a();
                let between = c2c();
                (x, between, b())
            } else {
                let y = b();
                let between = c2c();
                (a(), between, y)
            };
            let placement = Placement([before, between, c2c()]);
            show(round, &placement, x, y);
            (placement, x / y)
        })
        .collect()
}

/// A round's core-to-core latencies, in ns: before, between and after
/// its two runs.
struct Placement([u128; 3]);

impl Placement {
    /// The vCPUs on one physical core (under 45 ns: they share its
    /// caches), near (under 100 ns) or far; `None` if the round's three
    /// figures disagree (the host moved a vCPU during it).
    fn class(&self) -> Option<&'static str> {
        let class = |c: u128| match c {
            0..45 => "same-core",
            45..100 => "near",
            _ => "far",
        };
        let [a, b, c] = self.0.map(class);
        (a == b && b == c).then_some(a)
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c] = self.0;
        let moved = if self.class().is_none() { " moved" } else { "" };
        write!(f, "{:>17}", format!("{a}/{b}/{c}{moved}"))
    }
}

/// The median, min and max of `ratios`, over all rounds and per placement:
/// the two vCPUs on one physical core (core-to-core under 45 ns: they share
/// its caches), near (under 100 ns) or far, leaving out of these the
/// rounds that moved between them.
fn summary(what: &str, ratios: &[(Placement, f64)]) {
    for name in ["all", "same-core", "near", "far"] {
        let mut r: Vec<f64> = ratios
            .iter()
            .filter(|(p, _)| name == "all" || p.class() == Some(name))
            .map(|&(_, r)| r)
            .collect();
        if r.is_empty() {
            continue;
        }
        r.sort_by(f64::total_cmp);
        println!(
            "{what}, {name} rounds: median {:.3}, {:.3}-{:.3} ({} rounds)",
            r[r.len() / 2],
            r[0],
            r[r.len() - 1],
            r.len()
        );
    }
    let moved = ratios.iter().filter(|(p, _)| p.class().is_none()).count();
    if moved > 0 {
        println!("{what}: {moved} rounds moved between placements, in no placement's figures");
    }
}
