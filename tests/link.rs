//! Link lifecycle within one process: two `Link`s (master and slave) meet
//! through the socket exactly as two processes would.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use vecring_core::memory::AttachError;
use vecring_core::{
    Geometry, HoldBack, HugepagePolicy, Link, LinkError, LinkRecvError, LinkSendError, LinkState,
    RegionBudget, Role,
};
use vecring_tests::{assert_no_leak, region_mappings, resources, run_dir, threads, Watchdog};

const UP: Duration = Duration::from_secs(10);

fn master(dir: &PathBuf) -> Link {
    Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(dir)
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap()
}

fn slave(dir: &PathBuf) -> Link {
    Link::builder("dom", "l0")
        .role(Role::Slave)
        .run_dir(dir)
        .open()
        .unwrap()
}

fn recv_one(rx: &mut vecring_core::Receiver) -> Vec<u8> {
    let mut buf = vec![0u8; 9216];
    for _ in 0..10_000 {
        match rx.recv(&mut buf) {
            Ok(n) => return buf[..n].to_vec(),
            Err(LinkRecvError::Empty) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("recv: {e}"),
        }
    }
    panic!("no frame within 10 s");
}

#[test]
fn frames_flow_both_ways() {
    let _w = Watchdog::new("frames_flow_both_ways", Duration::from_secs(60));
    let dir = run_dir("both");
    let m = master(&dir);
    let s = slave(&dir);
    let generation = m.wait_up(UP).unwrap();
    assert!(generation > 1, "generations start from the clock");
    assert_eq!(s.wait_up(UP).unwrap(), generation);
    let (mut mtx, mut mrx) = (m.sender().unwrap(), m.receiver().unwrap());
    let (mut stx, mut srx) = (s.sender().unwrap(), s.receiver().unwrap());
    assert!(matches!(
        m.sender(),
        Err(LinkError::AlreadyTaken {
            what: "sender",
            queue: 0
        })
    ));
    mtx.send(b"to slave").unwrap();
    stx.send(&[7u8; 9000]).unwrap();
    assert_eq!(recv_one(&mut srx), b"to slave");
    assert_eq!(recv_one(&mut mrx), vec![7u8; 9000]);
    let c = m.counters();
    assert_eq!(
        (c.tx_frames, c.rx_frames, c.rx_bytes, c.link_ups),
        (1, 1, 9000, 1)
    );
    assert!(m.socket_path().unwrap().exists());
    let sock = m.socket_path().unwrap().to_path_buf();
    drop(s);
    assert!(m.wait_down(UP));
    assert_eq!(mtx.send(b"x"), Err(LinkSendError::NoPeer));
    drop(m);
    assert!(!sock.exists(), "clean shutdown removes the socket");
    assert!(
        dir.join("dom").exists(),
        "the domain directory stays: a container may have it bind-mounted"
    );
}

#[test]
fn slave_first_waits_for_master() {
    let _w = Watchdog::new("slave_first", Duration::from_secs(60));
    let dir = run_dir("slavefirst");
    let s = slave(&dir);
    assert!(matches!(
        s.wait_up(Duration::from_millis(200)),
        Err(LinkError::Timeout(_))
    ));
    assert_eq!(s.state(), LinkState::Down);
    let m = master(&dir);
    assert_eq!(s.wait_up(UP).unwrap(), m.wait_up(UP).unwrap());
}

/// Durations at their largest neither panic nor hold the link: a slave
/// retrying "never" still closes at once, and waits that long return.
#[test]
fn huge_intervals_and_timeouts_neither_overflow_nor_hang() {
    let _w = Watchdog::new("huge_intervals", Duration::from_secs(60));
    let dir = run_dir("huge");
    let others = threads::named("vecring-slave");
    let s = Link::builder("huge", "l0")
        .run_dir(&dir)
        .retry_interval(Duration::MAX)
        .open()
        .unwrap();
    // The first attempt finds no master, then the slave's control thread
    // waits "for ever" (new slave threads of tests running beside this
    // one are waited for too: this one is among them).
    let new = || -> Vec<i32> {
        threads::named("vecring-slave")
            .into_iter()
            .filter(|t| !others.contains(t))
            .collect()
    };
    // A thread takes its name once it runs.
    let mut ours = new();
    for _ in 0..500 {
        if !ours.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
        ours = new();
    }
    assert!(!ours.is_empty(), "no control thread of the slave");
    for t in ours {
        assert!(
            threads::wait_until_blocked(t, Duration::from_secs(10))
                || threads::named("vecring-slave").iter().all(|x| *x != t),
            "the slave's control thread never went to wait"
        );
    }
    let m = Link::builder("huge", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .open()
        .unwrap();
    assert!(m.wait_down(Duration::MAX), "a master with no slave is down");
    let started = std::time::Instant::now();
    drop(s);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closing a slave waiting Duration::MAX took {:?}",
        started.elapsed()
    );
    drop(m);
}

#[test]
fn second_slave_is_refused_and_first_undisturbed() {
    let _w = Watchdog::new("second_slave", Duration::from_secs(60));
    let dir = run_dir("second");
    let m = master(&dir);
    let s1 = slave(&dir);
    let generation = s1.wait_up(UP).unwrap();
    let (mut mtx, mut s1rx) = (m.sender().unwrap(), s1.receiver().unwrap());
    let s2 = slave(&dir);
    match s2.wait_up(UP) {
        Err(LinkError::Refused { reason }) => {
            assert!(reason.contains("already has a slave"), "{reason}")
        }
        other => panic!("expected refusal, got {other:?}"),
    }
    assert_eq!(s1.state(), LinkState::Up { generation });
    mtx.send(b"still here").unwrap();
    assert_eq!(recv_one(&mut s1rx), b"still here");
    assert!(m.counters().rejected_peers >= 1);
}

#[test]
fn second_master_is_refused_and_stale_socket_is_replaced() {
    let _w = Watchdog::new("second_master", Duration::from_secs(60));
    let dir = run_dir("master2");
    let m = master(&dir);
    let err = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .open()
        .unwrap_err();
    assert!(matches!(err, LinkError::MasterExists { .. }), "{err}");
    assert!(err.to_string().contains("already has a live master"));
    drop(m);
    // A socket file left behind (as by a killed master) with nobody
    // listening on it.
    std::fs::create_dir_all(dir.join("dom")).unwrap();
    let stale = std::os::unix::net::UnixListener::bind(dir.join("dom/l0.sock")).unwrap();
    drop(stale);
    assert!(dir.join("dom/l0.sock").exists());
    let m = master(&dir);
    let s = slave(&dir);
    s.wait_up(UP).unwrap();
    drop(m);
}

#[test]
fn bad_names_are_clear_errors() {
    for (domain, link, needle) in [
        ("", "l", "domain name is empty"),
        ("a/b", "l", "domain name 'a/b' is not allowed"),
        ("d", "..", "link name '..' is not allowed"),
        ("d", &"x".repeat(65), "link name is 65 bytes long"),
    ] {
        let err = Link::builder(domain, link)
            .role(Role::Master)
            .run_dir(run_dir("names"))
            .open()
            .unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
    let err = Link::builder("d", "l").numa_node(4000).open().unwrap_err();
    assert!(
        err.to_string().contains("NUMA node 4000 does not exist"),
        "{err}"
    );
}

#[test]
fn geometry_mismatch_names_both_values() {
    let _w = Watchdog::new("geometry", Duration::from_secs(60));
    let dir = run_dir("geom");
    let _m = master(&dir);
    let s = Link::builder("dom", "l0")
        .run_dir(&dir)
        .geometry(Geometry::new(512, 256).unwrap())
        .open()
        .unwrap();
    match s.wait_up(UP) {
        Err(LinkError::Attach(AttachError::Mismatch {
            field: "slot count",
            ours: 512,
            theirs: 32768,
        })) => {}
        other => panic!("expected a slot count mismatch, got {other:?}"),
    }
    let msg = s.wait_up(UP).unwrap_err().to_string();
    assert!(msg.contains("ours 512, theirs 32768"), "{msg}");
}

#[test]
fn reconnects_many_times_with_fresh_generations() {
    let _w = Watchdog::alone("reconnects", Duration::from_secs(120));
    let dir = run_dir("reconnect");
    let changes = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&changes);
    let m = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .hugepages(HugepagePolicy::Never)
        // 50 generations in a few seconds: far past the default budget of
        // regions, which bounds a peer, not this test.
        .region_budget(RegionBudget::new(1000, Duration::from_secs(60)))
        .on_state_change(move |_| {
            seen.fetch_add(1, Ordering::Relaxed);
        })
        .open()
        .unwrap();
    let mut mtx = m.sender().unwrap();
    let before = resources();
    let mut last_generation = None;
    for round in 1..=50u64 {
        let s = slave(&dir);
        let generation = s.wait_up(UP).unwrap();
        assert_eq!(m.wait_up(UP).unwrap(), generation);
        if let Some(previous) = last_generation.replace(generation) {
            assert_eq!(generation, previous + 1, "one generation per connection");
        }
        assert!(
            region_mappings() > 0,
            "the leak check sees a live link's region"
        );
        let mut srx = s.receiver().unwrap();
        // Frames of this generation arrive; frames queued in the previous
        // generation (sent after its slave left) never do.
        let mut sent = 0;
        while sent < 3 {
            match mtx.send(&round.to_le_bytes()) {
                Ok(()) => sent += 1,
                Err(LinkSendError::NoPeer) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => panic!("{e}"),
            }
        }
        for _ in 0..3 {
            assert_eq!(recv_one(&mut srx), round.to_le_bytes());
        }
        // Leave frames unread, then go away.
        mtx.send(b"unread").unwrap();
        drop(srx);
        drop(s);
        assert!(m.wait_down(UP));
    }
    let c = m.counters();
    assert_eq!(
        (c.link_ups, c.link_downs, Some(c.generation)),
        (50, 50, last_generation)
    );
    // The callback runs on the control thread; give the last one a moment.
    let deadline = std::time::Instant::now() + UP;
    while changes.load(Ordering::Relaxed) < 100 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(changes.load(Ordering::Relaxed), 100);
    // Leftover "unread" frames of each generation are accounted for once
    // the sender notices the generation change.
    let _ = mtx.send(b"x");
    assert!(
        m.counters().tx_lost_on_link_down >= 49,
        "{:?}",
        m.counters()
    );
    assert_no_leak(before, 0);
}

/// A slave that closes its link and opens it again at once (a container
/// restarting its program) is attached, never refused because the master
/// has not yet seen the previous slave leave: closing a link hangs up its
/// connection before `drop` returns, so the master hears the hang-up
/// before the next request.
#[test]
fn a_slave_that_reopens_at_once_is_not_refused() {
    let _w = Watchdog::new("reopens_at_once", Duration::from_secs(120));
    let dir = run_dir("reopen");
    let m = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .hugepages(HugepagePolicy::Never)
        .retry_interval(Duration::from_millis(10))
        .region_budget(RegionBudget::new(1000, Duration::from_secs(60)))
        .open()
        .unwrap();
    let mut mrx = m.receiver().unwrap();
    let mut last = 0;
    for round in 0..30u32 {
        let s = slave(&dir);
        let generation = s
            .wait_up(UP)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(generation > last, "round {round}: a new generation");
        last = generation;
        let mut tx = s.sender().unwrap();
        tx.send(&round.to_le_bytes()).unwrap();
        let mut buf = [0u8; 64];
        let n = mrx.recv_timeout(&mut buf, UP).unwrap();
        assert_eq!(buf[..n], round.to_le_bytes());
        drop(tx);
        drop(s);
    }
    assert_eq!(m.counters().rejected_peers, 0, "{:?}", m.counters());
}

/// Frames a Sender sent and dropped unread stay counted when the
/// generation ends under a later Sender of the same queue: the count of
/// frames lost is bounded by what the queue's Senders published in the
/// generation, not by what the last one did.
#[test]
fn frames_of_a_dropped_sender_count_as_lost_when_the_generation_ends() {
    let _w = Watchdog::new("lost across senders", Duration::from_secs(60));
    let dir = run_dir("lost-senders");
    let m = master(&dir);
    let s = slave(&dir);
    m.wait_up(UP).unwrap();
    s.wait_up(UP).unwrap();
    {
        let mut tx = m.sender().unwrap();
        for i in 0..5u8 {
            tx.send(&[i; 200]).unwrap();
        }
    }
    let mut tx = m.sender().unwrap();
    for i in 0..3u8 {
        tx.send(&[i; 60]).unwrap();
    }
    assert_eq!(tx.unread(), 8);
    drop(s);
    assert!(m.wait_down(UP));
    // The sender notices the generation's end at its next call.
    let _ = tx.send(b"x");
    assert_eq!(m.counters().tx_lost_on_link_down, 8, "{:?}", m.counters());
}

#[test]
fn numa_node_binds_the_link_memory() {
    let _w = Watchdog::new("numa", Duration::from_secs(60));
    let dir = run_dir("numa");
    let m = Link::builder("dom", "l0")
        .role(Role::Master)
        .run_dir(&dir)
        .numa_node(0)
        .open()
        .unwrap();
    let s = slave(&dir);
    s.wait_up(UP).unwrap();
    m.wait_up(UP).unwrap();
    let region = m.region().unwrap();
    let nodes = region.page_nodes().unwrap();
    assert!(!nodes.is_empty());
    assert!(nodes.iter().all(|&n| n == 0), "pages on nodes {nodes:?}");
    // The slave's mapping of the same memory reports the same node for the
    // pages it has touched (the others are not in its page tables yet).
    let nodes = s.region().unwrap().page_nodes().unwrap();
    assert!(nodes.contains(&0), "pages on nodes {nodes:?}");
    assert!(
        nodes.iter().all(|&n| n == 0 || n == -libc::ENOENT),
        "pages on nodes {nodes:?}"
    );
}

/// Frames `recv_batch` returns (the test's watchdog bounds the wait), and
/// how long it held them back.
fn recv_batch_some(rx: &mut vecring_core::Receiver) -> (usize, Duration) {
    let started = std::time::Instant::now();
    let mut bufs = vec![[0u8; 64]; 32];
    let mut lens = [0usize; 32];
    loop {
        match rx.recv_batch(&mut bufs, &mut lens) {
            Ok(0) | Err(LinkRecvError::NoPeer) => std::hint::spin_loop(),
            Ok(n) => return (n, started.elapsed()),
            Err(e) => panic!("recv_batch: {e}"),
        }
    }
}

#[test]
fn receiver_hold_back_applies_to_every_generation() {
    let _w = Watchdog::new("receiver_hold_back", Duration::from_secs(60));
    let dir = run_dir("hold");
    let m = master(&dir);
    let mut mrx = m.receiver().unwrap();
    let hold = HoldBack {
        below_slots: 64,
        wait: Duration::from_millis(100),
    };
    mrx.set_hold_back(Some(hold));
    for _generation in 0..2 {
        let s = slave(&dir);
        s.wait_up(UP).unwrap();
        m.wait_up(UP).unwrap();
        let mut stx = s.sender().unwrap();
        // One frame: read as soon as it is there.
        stx.send(&[1u8; 64]).unwrap();
        let (n, _) = recv_batch_some(&mut mrx);
        assert_eq!(n, 1);
        // Five at once: held back for the wait (a lower bound, which no
        // load can break), then read together.
        let five = [[2u8; 64]; 5];
        assert_eq!(stx.send_batch(five.iter().map(|f| &f[..])), Ok(5));
        let (n, held) = recv_batch_some(&mut mrx);
        assert_eq!(n, 5);
        assert!(held >= hold.wait, "held back only {held:?}");
        drop(stx);
        drop(s);
        assert!(m.wait_down(UP));
    }
    // Turned off: five are read at once.
    mrx.set_hold_back(None);
    let s = slave(&dir);
    s.wait_up(UP).unwrap();
    m.wait_up(UP).unwrap();
    let mut stx = s.sender().unwrap();
    stx.send(&[1u8; 64]).unwrap();
    assert_eq!(recv_batch_some(&mut mrx).0, 1);
    let five = [[2u8; 64]; 5];
    assert_eq!(stx.send_batch(five.iter().map(|f| &f[..])), Ok(5));
    // The five were published when send_batch returned: the first call
    // takes them all, however long this thread was away meanwhile.
    let mut bufs = vec![[0u8; 64]; 32];
    let mut lens = [0usize; 32];
    assert_eq!(
        mrx.recv_batch(&mut bufs, &mut lens),
        Ok(5),
        "frames held back with the hold-back off"
    );
}

/// A slave of the previous ring format (ABI 4, readiness published by the
/// producer's index) asks for the link: the master refuses it, naming both
/// versions, and gives it no memory.
#[test]
fn a_slave_of_abi_4_is_refused_with_both_versions_named() {
    use vecring_core::internal::handshake::{self, Kind, Msg};
    let _w = Watchdog::new("abi_4_slave", Duration::from_secs(60));
    assert_eq!(vecring_core::internal::abi::VERSION_MAJOR, 5);
    let dir = run_dir("abi4_slave");
    let _m = master(&dir);
    let path = dir.join("dom").join("l0.sock");
    let conn = (0..1000)
        .find_map(|_| {
            handshake::connect(&path)
                .map_err(|_| std::thread::sleep(Duration::from_millis(10)))
                .ok()
        })
        .expect("the master listens");
    let mut request = Msg::new(Kind::Request, 0);
    request.version_major = 4;
    handshake::send(&conn, &request, &[]).unwrap();
    let (reply, fds) = handshake::recv(&conn, UP).unwrap();
    assert_eq!(reply.kind, Kind::Reject, "{reply:?}");
    assert!(fds.is_empty(), "no memory for a refused slave");
    assert!(
        reply
            .text
            .contains("ABI major version mismatch: ours 5, theirs 4"),
        "{}",
        reply.text
    );
    let _ = std::fs::remove_dir_all(&dir);
}
