//! Endpoints that sleep instead of polling: an idle waiting receiver costs
//! (almost) no CPU and wakes for a frame, in both roles across processes;
//! the descriptor an event loop registers stays the same across a peer
//! killed and a new one; closing the link wakes a sleeper; a sender waits
//! for room; and a hostile peer that never rings, rings constantly or
//! scribbles over the wait lines costs a bounded delay or a bounded number
//! of wakeups, never a hang or a spin.

use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_core::{HugepagePolicy, Link, LinkRecvError, LinkSendError, PushError, Role};
use vecring_tests::hostile::{attacker, Proc};
use vecring_tests::{run_dir, threads, Watchdog};

const UP: Duration = Duration::from_secs(10);
/// How long the idle receivers wait before their frame comes.
const IDLE: Duration = Duration::from_secs(5);
/// The bound on an idle waiter: 1 % of a CPU.
const IDLE_CPU_SHARE: f64 = 0.01;
/// Where the child process finds its run dir.
const PEER_DIR: &str = "VECRING_WAIT_PEER_DIR";

fn open(dir: &Path, role: Role) -> Link {
    Link::builder("dom", "w0")
        .role(role)
        .run_dir(dir)
        .hugepages(HugepagePolicy::Never)
        .retry_interval(Duration::from_millis(10))
        .open()
        .unwrap()
}

/// CPU time (user + system) of the calling thread.
fn thread_cpu() -> Duration {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { core::mem::zeroed() };
    // SAFETY: a valid rusage to fill.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) }, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Both sides of the idle test: a thread sends `mine` after [`IDLE`],
/// while this thread waits for the peer's frame; returns what arrived,
/// the wait's CPU time and its length.
fn idle_side(link: &Link, mine: &'static [u8]) -> (Vec<u8>, Duration, Duration) {
    let mut rx = link.receiver().unwrap();
    let mut tx = link.sender().unwrap();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(IDLE);
        tx.send(mine).unwrap();
        tx
    });
    let (cpu0, t0) = (thread_cpu(), Instant::now());
    let woke = rx.wait(Some(IDLE * 4));
    let (cpu, took) = (thread_cpu() - cpu0, t0.elapsed());
    assert_eq!(
        woke,
        Ok(()),
        "the wait ended after {took:?} without the frame"
    );
    let mut buf = [0u8; 64];
    let n = rx.recv(&mut buf).unwrap();
    let _tx = sender.join().unwrap();
    (buf[..n].to_vec(), cpu, took)
}

fn check_idle(who: &str, got: &[u8], want: &[u8], cpu: Duration, took: Duration) {
    assert_eq!(got, want, "{who}: the frame that woke the wait");
    assert!(
        took >= IDLE - Duration::from_millis(500),
        "{who}: the wait returned after {took:?}, before the frame was sent"
    );
    let share = cpu.as_secs_f64() / took.as_secs_f64();
    assert!(
        share < IDLE_CPU_SHARE,
        "{who}: the idle wait used {cpu:?} of CPU in {took:?} ({:.2} %)",
        share * 100.0
    );
}

/// The child process of the idle test: the slave side. Ignored, so that it
/// counts as no test of its own; does nothing unless started by that test.
#[test]
#[ignore = "the peer process of an_idle_wait_costs_under_one_percent_of_a_cpu_and_a_frame_wakes_it_in_both_roles, which runs it"]
fn idle_peer_process() {
    let Some(dir) = std::env::var_os(PEER_DIR) else {
        return;
    };
    let _w = Watchdog::new("idle_peer_process", Duration::from_secs(60));
    let link = open(Path::new(&dir), Role::Slave);
    link.wait_up(UP).unwrap();
    let (got, cpu, took) = idle_side(&link, b"from the slave");
    check_idle("slave", &got, b"from the master", cpu, took);
    println!("slave waited {took:?} using {cpu:?} of CPU");
}

#[test]
fn an_idle_wait_costs_under_one_percent_of_a_cpu_and_a_frame_wakes_it_in_both_roles() {
    let _w = Watchdog::new("idle_wait", Duration::from_secs(90));
    let dir = run_dir("wait-idle");
    let m = open(&dir, Role::Master);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "idle_peer_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PEER_DIR, &dir)
        .spawn()
        .unwrap();
    m.wait_up(UP).unwrap();
    let (got, cpu, took) = idle_side(&m, b"from the master");
    let status = child.wait().unwrap();
    check_idle("master", &got, b"from the slave", cpu, took);
    assert!(status.success(), "the slave side failed: {status}");
}

/// A receiver driven as an event loop drives it: its descriptor polled,
/// `prepare_wait` before each sleep. The peer is killed by SIGKILL after
/// its first frame and a new peer process sends the second; the same
/// descriptor, registered once, wakes for both, and the loop sleeps
/// rather than spins meanwhile.
#[test]
fn the_wait_descriptor_survives_a_killed_peer_and_a_new_one() {
    let _w = Watchdog::new("wait_fd_reconnect", Duration::from_secs(90));
    let dir = run_dir("wait-fd");
    let m = open(&dir, Role::Master);
    let mut rx = m.receiver().unwrap();
    let fd = rx.as_raw_fd();
    let peer = |mode: &str| {
        let mut c = attacker("wait-attack");
        c.args([
            format!("run-dir={}", dir.display()),
            "domain=dom".into(),
            "link=w0".into(),
            format!("mode={mode}"),
            "after-ms=300".into(),
            "secs=0".into(),
        ]);
        Proc::spawn(mode, &mut c)
    };
    let mut got = Vec::new();
    let mut wakeups = 0;
    for round in 0..2 {
        let mut p = peer("ring-storm");
        p.line("up", UP)
            .unwrap_or_else(|e| panic!("{e}\n{}", p.output()));
        let t0 = Instant::now();
        loop {
            let mut buf = [0u8; 64];
            match rx.recv(&mut buf) {
                Ok(n) => {
                    got.push(buf[..n].to_vec());
                    break;
                }
                Err(LinkRecvError::Empty | LinkRecvError::NoPeer) => {}
                Err(e) => panic!("round {round}: {e}"),
            }
            assert!(t0.elapsed() < UP, "round {round}: no frame within {UP:?}");
            if rx.prepare_wait().unwrap() {
                let mut pfd = libc::pollfd {
                    fd: rx.as_fd().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, 2000) };
                wakeups += 1;
                rx.cancel_wait();
            }
        }
        assert_eq!(rx.as_raw_fd(), fd, "round {round}: the descriptor changed");
        drop(p); // SIGKILL
        assert!(m.wait_down(UP), "round {round}: the link did not go down");
    }
    assert_eq!(got, vec![b"wait-attack frame".to_vec(); 2]);
    assert!(
        wakeups < 200,
        "the loop woke {wakeups} times for two frames"
    );
}

#[test]
fn closing_the_link_wakes_a_sleeping_receiver() {
    let _w = Watchdog::new("close_wakes", Duration::from_secs(30));
    let dir = run_dir("wait-close");
    let m = open(&dir, Role::Master);
    let mut rx = m.receiver().unwrap();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        tid_tx.send(threads::tid()).unwrap();
        let t0 = Instant::now();
        (rx.wait(None), t0.elapsed())
    });
    // Closed once the receiver sleeps, not while it may still be on its
    // way to the sleep.
    let sleeper = tid_rx.recv().unwrap();
    assert!(
        threads::wait_until_blocked(sleeper, UP),
        "the receiver never went to sleep"
    );
    let closed = Instant::now();
    drop(m);
    let (r, _) = waiter.join().unwrap();
    assert_eq!(r, Err(LinkRecvError::Closed));
    assert!(
        closed.elapsed() < Duration::from_secs(2),
        "woke {:?} after close",
        closed.elapsed()
    );
}

#[test]
fn a_sender_waits_for_room_and_a_receiver_waits_through_link_up() {
    let _w = Watchdog::new("send_timeout", Duration::from_secs(60));
    let dir = run_dir("wait-space");
    let m = open(&dir, Role::Master);
    let mut rx = m.receiver().unwrap();
    // The receiver waits from before the peer exists.
    let receiver = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let n = rx.recv_timeout(&mut buf, UP).unwrap();
        buf[..n].to_vec()
    });
    let s = open(&dir, Role::Slave);
    s.wait_up(UP).unwrap();
    let mut tx = s.sender().unwrap();
    tx.send(b"first").unwrap();
    assert_eq!(receiver.join().unwrap(), b"first");
    // Fill the slave's ring, then let the master drain it slowly.
    let mut filled = 0u64;
    loop {
        match tx.send(&[7u8; 1500]) {
            Ok(()) => filled += 1,
            Err(LinkSendError::Push(PushError::Full)) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(
        tx.send_timeout(&[7u8; 1500], Duration::from_millis(200)),
        Err(LinkSendError::Timeout),
        "no room comes while nobody reads"
    );
    let mut rx = m.receiver().unwrap();
    let sender = threads::tid();
    let drainer = std::thread::spawn(move || {
        // Reads only once the sender sleeps for room.
        assert!(
            threads::wait_until_blocked(sender, UP),
            "the sender never went to sleep"
        );
        let drained_from = Instant::now();
        let mut buf = vec![0u8; 2048];
        let mut n = 0;
        while n < filled + 1 {
            rx.recv_timeout(&mut buf, UP).unwrap();
            n += 1;
        }
        (n, drained_from)
    });
    tx.send_timeout(&[8u8; 1500], UP).unwrap();
    let sent_at = Instant::now();
    let (n, drained_from) = drainer.join().unwrap();
    assert!(sent_at >= drained_from, "room before anyone read");
    assert_eq!(n, filled + 1);
}

/// An idle receiver whose peer has acknowledged the wait protocol sleeps
/// on the doorbell: over a second of waiting its timer never fires. Before
/// the acknowledgement the same receiver naps on its 1 ms to 64 ms timer,
/// about twenty wakeups a second; a receiver that always napped would
/// fail here though it still got every frame.
#[test]
fn an_acknowledged_idle_receiver_sleeps_without_timer_wakeups() {
    let _w = Watchdog::new("acked_sleep", Duration::from_secs(60));
    let dir = run_dir("wait-acked");
    let m = open(&dir, Role::Master);
    let s = open(&dir, Role::Slave);
    m.wait_up(UP).unwrap();
    s.wait_up(UP).unwrap();
    let mut rx = m.receiver().unwrap();
    let mut tx = s.sender().unwrap();
    let mut buf = [0u8; 64];
    // Nothing sent yet: the receiver arms its wait line and naps.
    let before = rx.timer_wakeups();
    assert_eq!(
        rx.recv_timeout(&mut buf, Duration::from_millis(500)),
        Err(LinkRecvError::Timeout)
    );
    let naps = rx.timer_wakeups() - before;
    assert!(
        naps >= 5,
        "an unacknowledged receiver woke by its timer {naps} times in 500 ms"
    );
    // The sender's first frame since then sees the receiver armed, takes
    // the fenced path and acknowledges.
    tx.send(b"ack").unwrap();
    assert_eq!(rx.recv_timeout(&mut buf, UP), Ok(3));
    let before = rx.timer_wakeups();
    let t0 = Instant::now();
    assert_eq!(
        rx.recv_timeout(&mut buf, Duration::from_secs(1)),
        Err(LinkRecvError::Timeout)
    );
    let woke = rx.timer_wakeups() - before;
    assert!(
        woke <= 1,
        "an acknowledged idle receiver woke by its timer {woke} times in {:?}: it napped",
        t0.elapsed()
    );
    // The doorbell still wakes it, once it sleeps.
    let receiver = threads::tid();
    let sender = std::thread::spawn(move || {
        assert!(
            threads::wait_until_blocked(receiver, UP),
            "the receiver never went to sleep"
        );
        tx.send(b"late").unwrap();
        tx
    });
    assert_eq!(rx.recv_timeout(&mut buf, UP), Ok(4));
    assert_eq!(rx.timer_wakeups(), before + woke, "woken by the doorbell");
    drop(sender.join().unwrap());
}

/// A hostile slave (`vecring-attack wait-attack mode=...`) against the
/// master's sleeping receiver of queue 0.
fn hostile(mode: &str, extra: &[&str]) -> (Proc, Link, vecring_core::Receiver) {
    let dir = run_dir(&format!("wait-{mode}"));
    let m = open(&dir, Role::Master);
    let rx = m.receiver().unwrap();
    let mut c = attacker("wait-attack");
    c.args([
        format!("run-dir={}", dir.display()),
        "domain=dom".into(),
        "link=w0".into(),
        format!("mode={mode}"),
    ]);
    c.args(extra);
    let mut p = Proc::spawn(mode, &mut c);
    p.line("up", UP)
        .unwrap_or_else(|e| panic!("{e}\n{}", p.output()));
    (p, m, rx)
}

/// A peer that claims to ring and never does delays a frame by at most
/// the wait's slice (one second), or by the application's own timeout.
#[test]
fn a_peer_that_never_rings_delays_a_frame_by_a_bounded_time() {
    let _w = Watchdog::new("never_ring", Duration::from_secs(60));
    let (mut p, _m, mut rx) = hostile("never-ring", &["after-ms=1500"]);
    let mut buf = [0u8; 64];
    let t0 = Instant::now();
    assert_eq!(
        rx.recv_timeout(&mut buf, Duration::from_millis(300)),
        Err(LinkRecvError::Timeout)
    );
    let short = t0.elapsed();
    assert!(
        short < Duration::from_secs(1),
        "a 300 ms timeout took {short:?}"
    );
    assert_eq!(rx.wait(None), Ok(()), "wait(None) returned without a frame");
    let took = t0.elapsed();
    p.line("sent", UP).unwrap();
    assert!(
        took < Duration::from_millis(1500) + Duration::from_secs(2),
        "the unrung frame was found after {took:?}"
    );
    let n = rx.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"wait-attack frame");
}

/// A peer ringing constantly makes a sleeper check a bounded number of
/// times, not spin; its later honest frame still wakes the sleeper.
#[test]
fn a_peer_ringing_constantly_cannot_make_a_sleeper_spin() {
    let _w = Watchdog::new("ring_storm", Duration::from_secs(60));
    let (mut p, _m, mut rx) = hostile("ring-storm", &["secs=4"]);
    let (cpu0, t0) = (thread_cpu(), Instant::now());
    // No frame comes during the storm: every wait ends by its timeout.
    while t0.elapsed() < Duration::from_secs(3) {
        let left = Duration::from_secs(3).saturating_sub(t0.elapsed());
        assert_eq!(
            rx.wait(Some(left)),
            Err(LinkRecvError::Timeout),
            "a frame during the storm"
        );
    }
    let (cpu, took) = (thread_cpu() - cpu0, t0.elapsed());
    assert!(
        cpu.as_secs_f64() < 0.10 * took.as_secs_f64(),
        "the storm cost the sleeper {cpu:?} of CPU in {took:?}"
    );
    assert!(rx.spurious_wakeups() >= 8, "the storm was not seen");
    p.line("sent", UP).unwrap();
    let mut buf = [0u8; 64];
    let n = rx.recv_timeout(&mut buf, Duration::from_secs(3)).unwrap();
    assert_eq!(&buf[..n], b"wait-attack frame");
}

/// A peer writing random values over every wait line of the queue (its
/// own and ours) cannot hang our sender or receiver: sends complete,
/// waits end within their timeouts, and its later frame arrives.
#[test]
fn a_peer_scribbling_over_the_wait_lines_cannot_hang_either_side() {
    let _w = Watchdog::new("scribble", Duration::from_secs(60));
    let (mut p, m, mut rx) = hostile("scribble", &["secs=3"]);
    let mut tx = m.sender().unwrap();
    let t0 = Instant::now();
    let mut sent = 0u64;
    while t0.elapsed() < Duration::from_secs(2) {
        match tx.send_timeout(&[1u8; 200], Duration::from_millis(50)) {
            Ok(()) => sent += 1,
            Err(LinkSendError::Timeout) => {}
            Err(e) => panic!("{e}"),
        }
        let w0 = Instant::now();
        match rx.wait(Some(Duration::from_millis(20))) {
            Ok(()) | Err(LinkRecvError::Timeout) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(
            w0.elapsed() < Duration::from_secs(1),
            "a 20 ms wait took {:?}",
            w0.elapsed()
        );
    }
    assert!(sent > 0);
    p.line("sent", UP).unwrap();
    let mut buf = [0u8; 64];
    let n = rx.recv_timeout(&mut buf, Duration::from_secs(5)).unwrap();
    assert_eq!(&buf[..n], b"wait-attack frame");
}
