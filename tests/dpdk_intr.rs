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
//! slave.
//!
//! Then the program's lcore against a hostile slave (`vecring-attack plant
//! where=doorbell then=frames`, a separate process running as `nobody`):
//! it rings every doorbell for nothing until a sleeping receiver mutes it,
//! plants a socket whose last close sleeps for an hour on each, publishes
//! frames and stays. The program (mode `watch`: asleep in
//! `rte_epoll_wait`; mode `poll`: polling, no Rx interrupts) must count
//! the frames, keep making rounds (none longer than a second) and stop and
//! close its port within a second; each with the kernel refusing the
//! descriptors (`SO_PASSRIGHTS`, Linux 6.16+) and with
//! `VECRING_NO_PASSRIGHTS=1` in its environment, the path of older kernels
//! where the descriptors arrive. They need root, a C compiler, DPDK's `pkg-config` file and the
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
use vecring_core::{Link, LinkSendError, PushError, Role};
use vecring_tests::hostile::{as_nobody, attacker, num, set_mode, wait_for_path, Proc, NOBODY};
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

    /// The last line of its stdout starting with `prefix`, if any.
    fn last_line(&self, prefix: &str) -> Option<String> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .rev()
            .find(|l| l.starts_with(prefix))
            .map(str::to_string)
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
            // SIGTERM, which `timeout` passes on to the program (a SIGKILL
            // would end `timeout` alone); it SIGKILLs the program 5 s later.
            // SAFETY: signalling our own child by pid, not yet reaped.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
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
            Err(LinkSendError::Push(PushError::Full) | LinkSendError::NoPeer) => {}
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
        // Under the storm, the wait set's mute is a debug line.
        .args((idle == Idle::Storm).then_some("--log-level=pmd.net.vecring:debug"))
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
    if idle == Idle::Storm {
        // The storm reached the port: its rings woke the sleeping thread
        // for nothing until the wait set stopped listening to the doorbell
        // (its timer naps keep waking it either way: `wakeups` alone
        // cannot tell).
        assert!(
            text.contains("the peer rings for nothing"),
            "the storm never reached the port's wait set\n{text}"
        );
    }
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

/// What stopping and closing the port may take, whatever the peer holds.
const CLOSE_BUDGET_MS: u64 = 1000;
/// The longest round the watching lcore may make: a sleep is 50 ms at
/// most, and a round blocked in a planted descriptor's close lasts an hour.
const ROUND_BUDGET_MS: u64 = 1000;
/// How long the frames of a hostile peer may take to be counted: a muted
/// doorbell's receiver checks its ring by timer at least every 64 ms.
const FRAMES_BOUND: Duration = Duration::from_secs(5);

/// The program (`rx_intr ... watch|poll`) is the master with [`QUEUES`]
/// queues, `vecring-attack plant where=doorbell then=frames` the slave
/// (see the module documentation). `sleep`: the lcore sleeps in
/// `rte_epoll_wait` (else it polls); `fallback`: the program runs with
/// `VECRING_NO_PASSRIGHTS=1`.
fn lcore_survives_a_planted_doorbell(test: &str, sleep: bool, fallback: bool) {
    let _w = Watchdog::new(
        "dpdk lcore under a planted doorbell",
        Duration::from_secs(120),
    );
    let env = Env::new(test);
    let exe = build_dpdk_program(&env, "rx_intr");
    // The attacker runs as nobody: the port admits it and its socket is
    // open to it.
    let vdev = format!(
        "--vdev=eth_vecring0,{},queues={QUEUES},socket_mode=0666,allow_uid={NOBODY}",
        env.vdev(test, true)
    );
    let (out, err) = (env.work.join("rx_intr.out"), env.work.join("rx_intr.err"));
    let mut cmd = Command::new("timeout");
    cmd.args(["--kill-after=5", "100"])
        .arg(&exe)
        .arg("-d")
        .arg(&env.so)
        .arg("--no-pci")
        .arg(format!(
            "--file-prefix=vrintr_{test}_{}",
            std::process::id()
        ))
        .arg("--lcores=0@0")
        // The receiver's mute and the drained descriptors are debug and
        // warning lines of the driver's log.
        .arg("--log-level=pmd.net.vecring:debug")
        .args(&env.mem_args)
        .arg(vdev)
        .arg("--")
        .args([QUEUES.to_string(), "0".into(), "0".into()])
        .arg(if sleep { "watch" } else { "poll" })
        .stdin(Stdio::piped())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap());
    if fallback {
        cmd.env("VECRING_NO_PASSRIGHTS", "1");
    }
    let child = cmd.spawn().expect("start rx_intr");
    let mut p = Program { child, out, err };
    let socket = env.run.join("interop").join(format!("{test}.sock"));
    assert!(
        wait_for_path(&socket, STALL),
        "the port does not listen\n{}",
        p.output()
    );
    set_mode(&env.run, 0o755);
    set_mode(&env.run.join("interop"), 0o711);

    let mut plant = Proc::spawn(
        "attacker",
        as_nobody(&mut attacker("plant")).args([
            "where=doorbell".to_string(),
            "then=frames".into(),
            format!("run-dir={}", env.run.display()),
            "domain=interop".into(),
            format!("link={test}"),
        ]),
    );
    let mut failures = Vec::new();
    let (sent, planted) = vecring_tests::hostile::muted_plant_steps(
        &mut plant,
        fallback,
        "port",
        &|| p.output(),
        &mut failures,
    );
    p.wait_line("rx_intr: ready", STALL);

    // The frames arrive although the doorbell is muted, with a descriptor
    // queued on it.
    let watch = |p: &Program| p.last_line("rx_intr: watch");
    let t0 = Instant::now();
    let mut got = 0;
    while t0.elapsed() < FRAMES_BOUND {
        got = watch(&p).map_or(0, |l| num(&l, "frames"));
        if got >= sent {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if got < sent {
        failures.push(format!(
            "{got} of the {sent} frames counted within {FRAMES_BOUND:?}"
        ));
    }
    let muted = p.output().contains("the peer rings for nothing");
    if sleep && !muted {
        failures.push("the sleeping lcore never muted the doorbell".into());
    }
    // A sleeping receiver takes the doorbell back and drains what was
    // planted there; on the fallback path the driver then says so.
    let drains = sleep && fallback;
    let t1 = Instant::now();
    let drained = loop {
        let d = p.output().contains("passed file descriptors on a doorbell");
        if d || !drains || t1.elapsed() > FRAMES_BOUND {
            break d;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if drains && !drained {
        failures.push("the lcore never drained the planted descriptor".into());
    }
    // The lcore goes on making rounds, none of them long.
    let before = watch(&p).map_or(0, |l| num(&l, "rounds"));
    std::thread::sleep(Duration::from_secs(1));
    let last = watch(&p).unwrap_or_default();
    let after = if last.is_empty() {
        0
    } else {
        num(&last, "rounds")
    };
    if after <= before {
        failures.push(format!(
            "the lcore made no round in a second ({before} before, {after} after)"
        ));
    }
    if !last.is_empty() && num(&last, "max_gap_ms") >= ROUND_BUDGET_MS {
        failures.push(format!("a round of the lcore took too long: {last}"));
    }
    println!("{test}: {planted}; {sent} sent; muted {muted}; drained {drained}; {last}");

    // Stdin closed, the program stops and closes its port while the
    // attacker still holds everything.
    drop(p.child.stdin.take());
    let t2 = Instant::now();
    let closed = loop {
        let l = p.last_line("rx_intr: closed");
        if l.is_some() || t2.elapsed() > Duration::from_secs(10) {
            break l;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    match closed {
        Some(l) => {
            let ms = num(&l, "ms");
            println!("{test}: closing the port took {ms} ms");
            if ms >= CLOSE_BUDGET_MS {
                failures.push(format!("stopping and closing the port took {ms} ms"));
            }
            let status = p.wait_exit(Duration::from_secs(10));
            if !status.success() {
                failures.push(format!("rx_intr exit {status}"));
            }
        }
        None => failures.push("the lcore did not close its port within 10 s".into()),
    }
    plant.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nattacker: {}\n{}",
        failures.join("\n"),
        plant.output(),
        p.output()
    );
    let _ = std::fs::remove_dir_all(&env.work);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn a_planted_doorbell_cannot_block_a_sleeping_lcore() {
    lcore_survives_a_planted_doorbell("intr-plant-w", true, false);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn a_planted_doorbell_cannot_block_a_sleeping_lcore_without_so_passrights() {
    lcore_survives_a_planted_doorbell("intr-plant-w-fb", true, true);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn a_planted_doorbell_cannot_block_a_polling_lcore() {
    lcore_survives_a_planted_doorbell("intr-plant-p", false, false);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn a_planted_doorbell_cannot_block_a_polling_lcore_without_so_passrights() {
    lcore_survives_a_planted_doorbell("intr-plant-p-fb", false, true);
}
