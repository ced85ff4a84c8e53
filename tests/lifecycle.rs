//! Peers in separate processes that exit, cleanly or by `kill -9`, again
//! and again: the survivor sees it promptly, keeps running, reconnects by
//! itself, leaks nothing, and never receives a frame of a dead generation.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use vecring_core::{
    test_support::pattern, HugepagePolicy, Link, LinkRecvError, RegionBudget, Role,
};
use vecring_tests::{assert_no_leak, built_binary, resources, run_dir, Watchdog};

/// How long the survivor may take to see its peer die: a hang-up on the
/// control socket, seen in milliseconds; bounded far above that so that a
/// loaded CI machine always meets it.
const PROMPT: Duration = Duration::from_secs(30);

/// Frames each peer's generation must deliver before it is killed.
const PER_ROUND: u64 = 1000;

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

/// Receives `frames` frames, checking that this generation's frames start
/// at sequence 0 and follow each other (the test's watchdog bounds the wait).
fn receive_generation(rx: &mut vecring_core::Receiver, generation: u64, frames: u64) {
    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    while expected < frames {
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
            Err(LinkRecvError::Empty) => std::thread::yield_now(),
            Err(LinkRecvError::NoPeer) => {
                panic!("generation {generation}: link down after {expected} frames")
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn master_survives_slaves_killed_and_restarted() {
    let _w = Watchdog::alone("slave kill -9", Duration::from_secs(240));
    let dir = run_dir("kill-slave");
    let master = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .hugepages(HugepagePolicy::Never)
        // 20 generations in a few seconds: past the default budget of
        // regions, which bounds a peer, not this test.
        .region_budget(RegionBudget::new(1000, Duration::from_secs(60)))
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
        receive_generation(&mut rx, generation, PER_ROUND);
        if round % 4 == 0 {
            // A clean exit now and then: closing stdin does not stop
            // `stress`, so use SIGTERM-like termination via kill -15.
            // SAFETY: signalling our own child.
            unsafe { libc::kill(slave.id() as i32, libc::SIGTERM) };
            slave.wait().unwrap();
        } else {
            kill9(&mut slave);
        }
        assert!(
            master.wait_down(PROMPT),
            "round {round}: link still up after the slave died"
        );
        // Anything still queued from the dead slave is not delivered now.
        assert!(matches!(
            rx.recv(&mut [0u8; 9216]),
            Err(LinkRecvError::NoPeer)
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
        receive_generation(&mut rx, generation, PER_ROUND);
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
    let mut slave = Command::new(built_binary("vecring"))
        .args(["rxonly", "--role=slave", "--domain=dom", "--link=l0"])
        .arg("--run-dir")
        .arg(dir_s)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start vecring");
    master.wait_up(Duration::from_secs(20)).unwrap();
    let mut tx = master.sender().unwrap();
    tx.send(b"hello").unwrap();
    // rxonly answers each line on its stdin with "rx FRAMES BYTES": ask
    // until the one 5-byte frame is counted.
    let mut stdin = slave.stdin.take().unwrap();
    let mut out = BufReader::new(slave.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        writeln!(stdin).unwrap();
        line.clear();
        out.read_line(&mut line).unwrap();
        match line.trim_end() {
            "rx 0 0" => std::thread::sleep(Duration::from_millis(10)),
            "rx 1 5" => break,
            other => panic!("rxonly reported '{other}', want 'rx 1 5' (the hello)"),
        }
    }
    // Closing its stdin ends rxonly: a clean exit.
    drop(stdin);
    let status = slave.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(master.wait_down(PROMPT));
    let _ = std::io::stdout().flush();
}
