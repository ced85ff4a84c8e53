//! The C API's waits from C programs (a module of `tests/ffi.rs`, whose
//! helpers build and run them):
//!
//! - `tests/c/wait_api.c` checks the contract call by call in one process:
//!   bad arguments, timeouts, prepare / cancel around `poll`, a receive
//!   waiting through link down and up, `VECRING_E_BUSY` beside a sleeping
//!   thread, and `vecring_close` ending the waits of other threads;
//! - `tests/c/wait.c` is a C master that sleeps in its own `epoll` set,
//!   driven by a Rust slave here: its idle CPU stays under 1 %, frames sent
//!   with pauses wake it, its descriptor stays the same across a slave that
//!   leaves and a new one, the blocking forms time out and return frames,
//!   and a sender sleeps until the slave reads.

use super::{c_source, compile, run, scratch, show};
use std::ops::Range;
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_core::{
    test_support::pattern, HugepagePolicy, Link, LinkRecvError, LinkSendError, PushError, Role,
};
use vecring_tests::hostile::{num, Proc};
use vecring_tests::Watchdog;

#[test]
fn c_wait_api_contract() {
    let _w = Watchdog::new("c_wait_api_contract", Duration::from_secs(180));
    let dir = scratch("wait_api");
    let exe = compile(&dir, "wait_api", &[c_source("wait_api.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    let out = run(Command::new(&exe).arg(&run_at), Duration::from_secs(150));
    assert!(out.status.success(), "tests/c/wait_api.c: {}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("wait_api: all "),
        "{}",
        show(&out)
    );
}

/// Frames per receiving round of `wait.c`.
const ROUND: u64 = 40;
/// Frames `wait.c` sends in its last step.
const TX_FRAMES: u64 = 2000;
/// How long the slave idles before its first frame: `wait.c` measures its
/// CPU time over this period.
const IDLE: Duration = Duration::from_secs(2);
const UP: Duration = Duration::from_secs(10);
/// Longest wait for a line of `wait.c`.
const STEP: Duration = Duration::from_secs(30);

fn slave(run_at: &std::path::Path) -> Link {
    let l = Link::builder("ffi", "wait")
        .role(Role::Slave)
        .run_dir(run_at)
        .hugepages(HugepagePolicy::Never)
        .retry_interval(Duration::from_millis(10))
        .open()
        .unwrap();
    l.wait_up(UP).unwrap();
    l
}

/// Sends pattern frames `seqs` in bursts of one to three with pauses
/// between them, so that the receiver sleeps and wakes many times.
fn send_paced(tx: &mut vecring_core::Sender, seqs: Range<u64>) {
    let mut buf = vec![0u8; 9216];
    for seq in seqs {
        let len = pattern::mixed_len(seq);
        pattern::fill(&mut buf[..len], seq);
        let t0 = Instant::now();
        loop {
            match tx.send(&buf[..len]) {
                Ok(()) => break,
                Err(LinkSendError::Push(PushError::Full)) if t0.elapsed() < STEP => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("send of frame {seq}: {e}"),
            }
        }
        if seq % 3 != 1 {
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

fn send_one(tx: &mut vecring_core::Sender, seq: u64) {
    send_paced(tx, seq..seq + 1);
}

/// Reads pattern frames `seqs`, in order, pausing after every 32 so that
/// the C sender finds its ring full and sleeps.
fn receive_paced(rx: &mut vecring_core::Receiver, seqs: Range<u64>) {
    let mut buf = vec![0u8; 9216];
    for seq in seqs {
        let n = rx
            .recv_timeout(&mut buf, STEP)
            .unwrap_or_else(|e| panic!("waiting for frame {seq} of wait.c: {e}"));
        assert_eq!(pattern::check(&buf[..n]), Ok(seq), "frame {seq} of wait.c");
        if seq % 32 == 31 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn c_receiver_sleeps_in_its_own_epoll_and_wakes_for_frames() {
    let _w = Watchdog::new("c_epoll_receiver", Duration::from_secs(240));
    let dir = scratch("wait");
    let exe = compile(&dir, "wait", &[c_source("wait.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    let mut c = Proc::spawn(
        "wait.c",
        Command::new(&exe)
            .arg(&run_at)
            .arg(ROUND.to_string())
            .arg(TX_FRAMES.to_string()),
    );
    let step = |c: &mut Proc, prefix: &str| c.line(prefix, STEP).unwrap_or_else(|e| panic!("{e}"));
    step(&mut c, "wait: ready");

    // 1. Attach, idle, then frames with pauses.
    let first = slave(&run_at);
    let mut tx = first.sender().unwrap();
    std::thread::sleep(IDLE);
    send_paced(&mut tx, 0..ROUND);
    let idle = step(&mut c, "wait: round 1 ok");
    println!("{idle}");
    assert!(num(&idle, "wakeups") > 0, "{idle}");

    // 2. This slave leaves; a new one sends the next frames.
    drop(tx);
    drop(first);
    std::thread::sleep(Duration::from_millis(300));
    let second = slave(&run_at);
    let mut tx = second.sender().unwrap();
    let mut rx = second.receiver().unwrap();
    // Attached to the generation from here on: `wait.c` asks whether it is.
    assert_eq!(rx.recv(&mut [0u8; 64]), Err(LinkRecvError::Empty));
    std::thread::sleep(Duration::from_millis(300));
    send_paced(&mut tx, ROUND..2 * ROUND);
    step(&mut c, "wait: round 2 ok");

    // 3. The blocking forms: a frame half a second after each line.
    step(&mut c, "wait: blocking");
    std::thread::sleep(Duration::from_millis(500));
    send_one(&mut tx, 2 * ROUND);
    step(&mut c, "wait: blocking, the first frame read");
    std::thread::sleep(Duration::from_millis(500));
    send_one(&mut tx, 2 * ROUND + 1);
    step(&mut c, "wait: blocking ok");

    // 4. The C sender fills the ring and waits for us to read.
    let full = step(&mut c, "wait: tx full");
    assert!(num(&full, "frames") > 0, "{full}");
    std::thread::sleep(Duration::from_millis(500));
    receive_paced(&mut rx, 0..TX_FRAMES);
    let sent = step(&mut c, "wait: tx ok");
    println!("{sent}");
    step(&mut c, "wait: ok");
    let status = c.wait(STEP);
    assert!(
        status.is_some_and(|s| s.success()),
        "wait.c: {}",
        c.output()
    );
    let counters = second.counters();
    assert_eq!(counters.rx_frames, TX_FRAMES);
}
