//! Peers in separate processes that exit, cleanly or by `kill -9`, again
//! and again: the survivor sees it promptly, keeps running, reconnects by
//! itself, leaks nothing, and never receives a frame of a dead generation.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vecring_core::{pattern, HugepagePolicy, Link, RecvError, Role};
use vecring_tests::{assert_no_leak, built_binary, resources, run_dir, Watchdog};

const PROMPT: Duration = Duration::from_secs(5);

fn peer(args: &[&str]) -> Child {
    Command::new(built_binary("vecring"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start vecring")
}

fn kill9(child: &mut Child) {
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
}

/// Receives for `dur`, checking that this generation's frames start at
/// sequence 0 and follow each other; returns how many arrived.
fn receive_generation(rx: &mut vecring_core::Receiver, generation: u64, dur: Duration) -> u64 {
    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    let end = Instant::now() + dur;
    while Instant::now() < end {
        match rx.recv(&mut buf) {
            Ok(n) => {
                assert_eq!(
                    rx.generation(),
                    Some(generation),
                    "frame from another generation"
                );
                let seq = pattern::check(&buf[..n]).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(seq, expected, "generation {generation}: frame {seq} out of sequence (dead generation leaking?)");
                expected += 1;
            }
            Err(RecvError::Empty) => std::thread::yield_now(),
            Err(RecvError::LinkDown) => break,
            Err(e) => panic!("{e}"),
        }
    }
    expected
}

#[test]
fn master_survives_slaves_killed_and_restarted() {
    let _w = Watchdog::alone("slave kill -9", Duration::from_secs(240));
    let dir = run_dir("kill-slave");
    let master = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap();
    let mut rx = master.receiver().unwrap();
    let before = resources();
    let dir_s = dir.to_str().unwrap();
    for round in 1..=20u64 {
        // The slave sends self-checking frames until killed.
        let mut slave = peer(&[
            "stress",
            "--role=slave",
            "--domain=dom",
            "--link=l0",
            "--run-dir",
            dir_s,
            "--frames=1000000000",
        ]);
        let generation = master.wait_up(Duration::from_secs(20)).unwrap();
        let got = receive_generation(&mut rx, generation, Duration::from_millis(150));
        assert!(got > 0, "round {round}: no frames");
        if round % 4 == 0 {
            // A clean exit now and then: closing stdin does not stop
            // `stress`, so use SIGTERM-like termination via kill -15.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(slave.id() as i32, libc::SIGTERM) };
            slave.wait().unwrap();
        } else {
            kill9(&mut slave);
        }
        let t = Instant::now();
        assert!(
            master.wait_down(PROMPT),
            "round {round}: link still up after the slave died"
        );
        assert!(t.elapsed() < PROMPT);
        // Anything still queued from the dead slave is not delivered now.
        assert!(matches!(
            rx.recv(&mut [0u8; 9216]),
            Err(RecvError::LinkDown)
        ));
    }
    let c = master.counters();
    assert_eq!((c.link_ups, c.link_downs), (20, 20));
    assert!(
        master.socket_path().unwrap().exists(),
        "master keeps listening"
    );
    assert_no_leak(before, 0);
}

#[test]
fn slave_survives_masters_killed_and_restarted() {
    let _w = Watchdog::alone("master kill -9", Duration::from_secs(240));
    let dir = run_dir("kill-master");
    let dir_s = dir.to_str().unwrap();
    let slave = Link::builder("dom", "l0")
        .role(Role::Slave)
        .run_dir(&dir)
        .retry_interval(Duration::from_millis(10))
        .open()
        .unwrap();
    let mut rx = slave.receiver().unwrap();
    let before = resources();
    let mut last_generation = 0;
    for round in 1..=15 {
        // A master that sends self-checking frames until killed; the
        // socket file it leaves behind must not stop the next one.
        let mut master = peer(&[
            "stress",
            "--role=master",
            "--domain=dom",
            "--link=l0",
            "--run-dir",
            dir_s,
            "--hugepages=never",
            "--frames=1000000000",
        ]);
        let generation = slave.wait_up(Duration::from_secs(20)).unwrap();
        assert!(
            generation > last_generation,
            "a restarted master continues the generations"
        );
        last_generation = generation;
        let got = receive_generation(&mut rx, generation, Duration::from_millis(150));
        assert!(got > 0, "round {round}: no frames");
        kill9(&mut master);
        assert!(
            slave.wait_down(PROMPT),
            "round {round}: link still up after the master died"
        );
        assert!(
            dir.join("dom/l0.sock").exists(),
            "the killed master leaves its socket behind"
        );
    }
    assert_eq!(slave.counters().link_ups, 15);
    // Endpoints drop dead regions when they next look.
    let _ = rx.recv(&mut [0u8; 16]);
    // The slave keeps trying to reach the dead master: one socket of a
    // connection attempt may be open right now.
    assert_no_leak(before, 1);
}

#[test]
fn rxonly_peer_exits_cleanly_when_told() {
    let _w = Watchdog::new("clean exit", Duration::from_secs(60));
    let dir = run_dir("clean");
    let dir_s = dir.to_str().unwrap();
    let master = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap();
    let mut slave = peer(&[
        "rxonly",
        "--role=slave",
        "--domain=dom",
        "--link=l0",
        "--run-dir",
        dir_s,
    ]);
    master.wait_up(Duration::from_secs(20)).unwrap();
    let mut tx = master.sender().unwrap();
    tx.send(b"hello").unwrap();
    // Closing its stdin ends rxonly: a clean exit.
    drop(slave.stdin.take());
    let status = slave.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(master.wait_down(PROMPT));
    let _ = std::io::stdout().flush();
}
