//! DPDK's Rx interrupt API on a vecring port: `tests/c/rx_intr.c`, a small
//! DPDK application built against the installed DPDK, configures
//! `intr_conf.rxq = 1` and two queues, adds each queue's event to its
//! thread's epoll set (`rte_eth_dev_rx_intr_ctl_q`) and sleeps in
//! `rte_epoll_wait`, as `l3fwd-power` does. This test process is the peer,
//! through vecring-core:
//!
//! 1. it waits for the program's "ready", stays idle while the program
//!    idles [`IDLE_S`] seconds, asleep: the program's thread must use less
//!    than 1 % of that time in CPU. In the storm case it instead rings
//!    every doorbell it holds as fast as it can meanwhile, for nothing: the
//!    program must not spin (under 10 % CPU; the wait set stops listening
//!    to a doorbell that rings for nothing and checks by timer);
//! 2. it sends [`FRAMES`] frames spread over both queues with pauses of
//!    20 to 50 ms; the program must be woken by an event for each (no 5 s
//!    timeout) and receive every frame, in order per queue. Once the first
//!    half has arrived (so that the peer has acknowledged the sleep
//!    protocol on every queue and no nap timer runs), one frame comes
//!    while the program has its interrupts disabled, and no other until
//!    the program has received it: enabling with a frame waiting must wake
//!    the program at once (else its 5 s sleep times out), as `l3fwd-power`
//!    sleeps right after enabling;
//! 3. in the `down` cases it then leaves while the program sleeps; the
//!    program must wake (no timeout) and see the link down;
//! 4. in the `relink` cases a second thread of the program sets the port's
//!    link down and up again while the queues sleep (the port closes its
//!    link and opens a new one, whose receivers replace the queues'): the
//!    program must wake (no timeout) until the link is up again, and then
//!    be woken by [`FRAMES`]` / 4` more frames on the new link.
//!
//! Each case runs with the program's port in role master and in role
//! slave. They need root, a C compiler, DPDK's `pkg-config` file and the
//! built PMD, so they are `#[ignore]`d and run by `tests/dpdk/run.sh`
//! (group `rust`, case `rust_intr`), or by hand:
//!
//! ```sh
//! install -D -m0644 target/release/librte_net_vecring.so /usr/local/lib/vecring-test/librte_net_vecring.so
//! VECRING_PMD_SO=/usr/local/lib/vecring-test/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_intr -- --ignored --test-threads=1
//! ```

use std::fs::File;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::{Link, PushError, Role, SendError};
use vecring_tests::testpmd::{build_dpdk_program, Env, PMD_MAC, STALL};
use vecring_tests::Watchdog;

/// Queues of the program's port.
const QUEUES: u16 = 2;
/// Frames sent after the idle period.
const FRAMES: u32 = 40;
/// Seconds the program idles, asleep, before frames come.
const IDLE_S: u32 = 3;

/// Frame `seq` of queue `q`: to the program's MAC, the queue at bytes
/// 14..16 and the sequence at 16..20 (see `rx_intr.c`).
fn frame(q: u16, seq: u32) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..6].copy_from_slice(&PMD_MAC);
    f[6..12].copy_from_slice(&[0x02, 0xec, 0xf4, 0x00, 0x00, 0x09]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..16].copy_from_slice(&q.to_le_bytes());
    f[16..20].copy_from_slice(&seq.to_le_bytes());
    f
}

/// The program under its `timeout` watchdog, its output in a file.
struct Program {
    child: Child,
    out: std::path::PathBuf,
    err: std::path::PathBuf,
}

impl Program {
    fn output(&self) -> String {
        format!(
            "--- stdout:\n{}--- stderr:\n{}",
            std::fs::read_to_string(&self.out).unwrap_or_default(),
            std::fs::read_to_string(&self.err).unwrap_or_default()
        )
    }

    /// The first line of its stdout starting with `prefix`, waiting up to
    /// `limit`; panics if it exits or the time passes first.
    fn wait_line(&mut self, prefix: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = std::fs::read_to_string(&self.out).unwrap_or_default();
            if let Some(l) = text.lines().find(|l| l.starts_with(prefix)) {
                return l.to_string();
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("rx_intr exited ({st}) before '{prefix}'\n{}", self.output());
            }
            assert!(
                Instant::now() < deadline,
                "rx_intr: no '{prefix}' after {limit:?}\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if Instant::now() >= deadline {
                // `timeout` passes SIGTERM on, then SIGKILLs 5 s later.
                // SAFETY: signalling our own child by pid.
                unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
                let _ = self.child.wait();
                panic!("rx_intr still running after {limit:?}\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The number after `key=` in `line` (`cpu_us=12`), or before the word
/// `key` (`40 frames`).
fn field(line: &str, key: &str) -> u64 {
    let words: Vec<&str> = line.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let found = words.iter().enumerate().find_map(|(i, w)| {
        if let Some(v) = w.strip_prefix(&format!("{key}=")) {
            return v.parse().ok();
        }
        if *w == key && i > 0 {
            return words[i - 1].parse().ok();
        }
        None
    });
    found.unwrap_or_else(|| panic!("no {key} in '{line}'"))
}

/// Sends `f` on `tx`, retrying while the ring is full (or the link not up
/// yet on this side).
fn send(tx: &mut vecring_core::Sender, f: &[u8], p: &Program) {
    let deadline = Instant::now() + STALL;
    loop {
        match tx.send(f) {
            Ok(()) => return,
            Err(SendError::Push(PushError::Full) | SendError::LinkDown) => {}
            Err(e) => panic!("send: {e}\n{}", p.output()),
        }
        assert!(Instant::now() < deadline, "ring stays full\n{}", p.output());
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What the peer does while the program idles.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Idle {
    /// Nothing.
    Quiet,
    /// Rings every doorbell it holds as fast as it can.
    Storm,
}

/// What happens after the frames.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    /// The program stops its port.
    Stop,
    /// The peer leaves while the program sleeps.
    PeerLeaves,
    /// The program sets its link down and up while it sleeps.
    Relink,
}

/// `rx_intr` holds the port in role `program_role` with [`QUEUES`]
/// queues; this process is the peer (see the module documentation).
fn sleeps_and_wakes_on_frames(test: &str, program_role: Role, idle: Idle, then: Then) {
    let leave = then == Then::PeerLeaves;
    let _w = Watchdog::new("dpdk rx interrupts", Duration::from_secs(150));
    let env = Env::new(test);
    let exe = build_dpdk_program(&env, "rx_intr");
    let program_master = program_role == Role::Master;
    let link = if program_master {
        env.open(test, Role::Slave)
    } else {
        Link::builder("interop", test)
            .role(Role::Master)
            .run_dir(&env.run)
            .queues(QUEUES)
            .open()
            .unwrap_or_else(|e| panic!("open interop/{test}: {e}"))
    };
    let mut vdev = format!("--vdev=eth_vecring0,{}", env.vdev(test, program_master));
    if program_master {
        vdev.push_str(&format!(",queues={QUEUES}"));
    }
    let (out, err) = (env.work.join("rx_intr.out"), env.work.join("rx_intr.err"));
    let child = Command::new("timeout")
        .args(["--kill-after=5", "100"])
        .arg(&exe)
        .arg("-d")
        .arg(&env.so)
        .arg("--no-pci")
        .arg(format!(
            "--file-prefix=vrintr_{test}_{}",
            std::process::id()
        ))
        .arg("--lcores=0@0")
        .args(&env.mem_args)
        .arg(vdev)
        .arg("--")
        .args([QUEUES.to_string(), FRAMES.to_string(), IDLE_S.to_string()])
        .args(match then {
            Then::Stop => None,
            Then::PeerLeaves => Some("down"),
            Then::Relink => Some("relink"),
        })
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("start rx_intr");
    let mut p = Program { child, out, err };

    // The program's queues are in its epoll set; it idles now.
    p.wait_line("rx_intr: ready", STALL);
    let mut senders: Vec<_> = (0..QUEUES)
        .map(|q| {
            link.sender_on(q)
                .unwrap_or_else(|e| panic!("sender of queue {q}: {e}"))
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let storm = (idle == Idle::Storm).then(|| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let bells = vecring_tests::datagram_sockets();
            let mut rung = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for &fd in &bells {
                    // SAFETY: a one-byte buffer; a full queue just fails.
                    unsafe { libc::send(fd, b"x".as_ptr().cast(), 1, libc::MSG_DONTWAIT) };
                    rung += 1;
                }
            }
            (bells.len(), rung)
        })
    });
    let idle_line = p.wait_line(
        "rx_intr: idle",
        Duration::from_secs(u64::from(IDLE_S)) + STALL,
    );
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = storm {
        let (bells, rung) = t.join().expect("storm thread");
        println!("{test}: rang {bells} doorbells {rung} times while the program idled");
        assert!(bells > 0 && rung > 0, "no doorbell rung");
    }
    let (cpu_us, wall_us) = (field(&idle_line, "cpu_us"), field(&idle_line, "wall_us"));

    // Frames, one or a few at a time, with pauses in which it sleeps
    // again.
    let mut seq = [0u32; QUEUES as usize];
    let mut sent = 0u32;
    let mut round = 0u64;
    while sent < FRAMES {
        let burst = if round % 5 == 4 { 3 } else { 1 };
        for _ in 0..burst.min(FRAMES - sent) {
            // The program pauses with its interrupts disabled once it has
            // the first half: this frame waits for its next enable.
            let pending = sent == FRAMES / 2;
            if pending {
                p.wait_line("rx_intr: pausing", STALL);
            }
            let q = (sent % u32::from(QUEUES)) as u16;
            let i = usize::from(q);
            send(&mut senders[i], &frame(q, seq[i]), &p);
            seq[i] += 1;
            sent += 1;
            if pending {
                p.wait_line("rx_intr: woke for a waiting frame", STALL);
            }
        }
        round += 1;
        std::thread::sleep(Duration::from_millis(20 + round * 7 % 31));
    }
    let received = p.wait_line("rx_intr: received", STALL);
    if then == Then::Relink {
        p.wait_line("rx_intr: relink: link up", STALL);
        for n in 0..FRAMES / 4 {
            let q = (n % u32::from(QUEUES)) as u16;
            let i = usize::from(q);
            send(&mut senders[i], &frame(q, seq[i]), &p);
            seq[i] += 1;
            std::thread::sleep(Duration::from_millis(20 + u64::from(n) * 7 % 31));
        }
    }
    if leave {
        // It sleeps again (its next wakeup would be the 5 s timeout).
        std::thread::sleep(Duration::from_millis(500));
        drop(senders);
        drop(link);
        p.wait_line("rx_intr: link down", STALL);
    } else {
        // Leave only after it stopped its port.
        p.wait_exit(STALL);
        drop(senders);
        drop(link);
    }
    let status = p.wait_exit(STALL);
    let text = p.output();
    println!(
        "{test}: {}",
        text.lines()
            .filter(|l| l.starts_with("rx_intr:"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert!(status.success(), "rx_intr exit {status}\n{text}");
    assert!(text.contains("rx_intr: ok"), "{text}");
    assert_eq!(
        field(&received, "frames"),
        u64::from(FRAMES),
        "frames received\n{text}"
    );
    assert_eq!(
        field(&received, "timeouts"),
        0,
        "5 s sleeps without an event\n{text}"
    );
    assert!(field(&received, "events") > 0, "{text}");
    let (limit, what) = match idle {
        Idle::Quiet => (100, "1 %"),
        Idle::Storm => (10, "10 % under a doorbell storm"),
    };
    assert!(
        cpu_us * limit < wall_us,
        "idle, the program's thread used {cpu_us} us of CPU in {wall_us} us ({what} at most)\n{text}"
    );
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}'\n{text}"))
    };
    if leave {
        let down = line("rx_intr: link down");
        assert_eq!(
            field(down, "timeouts"),
            0,
            "the peer's leaving woke nobody\n{text}"
        );
    }
    if then == Then::Relink {
        let up = line("rx_intr: relink: link up");
        assert_eq!(
            field(up, "timeouts"),
            0,
            "setting the link down and up woke nobody\n{text}"
        );
        let more = line("rx_intr: relink: received");
        assert_eq!(field(more, "frames"), u64::from(FRAMES / 4), "{text}");
        assert_eq!(field(more, "timeouts"), 0, "{text}");
    }
    let _ = std::fs::remove_dir_all(&env.work);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_sleeps_in_rte_epoll_wait_and_wakes_on_frames() {
    sleeps_and_wakes_on_frames("intr-m", Role::Master, Idle::Quiet, Then::Stop);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn slave_port_sleeps_in_rte_epoll_wait_and_wakes_on_frames() {
    sleeps_and_wakes_on_frames("intr-s", Role::Slave, Idle::Quiet, Then::Stop);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_sleeping_wakes_when_the_slave_leaves() {
    sleeps_and_wakes_on_frames("intr-down-m", Role::Master, Idle::Quiet, Then::PeerLeaves);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn slave_port_sleeping_wakes_when_the_master_leaves() {
    sleeps_and_wakes_on_frames("intr-down-s", Role::Slave, Idle::Quiet, Then::PeerLeaves);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_sleeping_wakes_when_its_link_is_set_down_and_up() {
    sleeps_and_wakes_on_frames("intr-relink-m", Role::Master, Idle::Quiet, Then::Relink);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn slave_port_sleeping_wakes_when_its_link_is_set_down_and_up() {
    sleeps_and_wakes_on_frames("intr-relink-s", Role::Slave, Idle::Quiet, Then::Relink);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_sleeping_does_not_spin_when_the_slave_rings_for_nothing() {
    sleeps_and_wakes_on_frames("intr-storm-m", Role::Master, Idle::Storm, Then::Stop);
}
