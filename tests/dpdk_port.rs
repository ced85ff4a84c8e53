//! The DPDK port behaves as a DPDK application expects, driven through
//! `dpdk-testpmd`'s interactive commands with a Rust program on the other
//! end of the link that watches the link state:
//!
//! - `set link-down`/`set link-up` and `port stop`/`port start`: the peer
//!   sees the link go down (and can no longer fill the ring) and come back,
//!   with testpmd as slave and as master (a master that stops and starts
//!   claims its link again at once), and frames flow after it came back;
//! - a port of 4 queue pairs (testpmd slave, `--rxq=4`): what the Rust
//!   master sends on queue `q` arrives on testpmd's queue `q`, before and
//!   after `port stop`/`port start` (which hands every queue an end of the
//!   reopened link);
//! - `show rxq info`/`show txq info` (queue and burst-mode information);
//! - extra unicast MACs (`mac_addr add`) and multicast groups (`mcast_addr
//!   add`) pass the receive filter with promiscuous mode off, and stop
//!   passing once removed; the unicast hash table fails with `-ENOTSUP` and a
//!   log line naming it;
//! - a fixed link speed is refused at start, autonegotiation is accepted,
//!   and `show port info` reports autonegotiation;
//! - the master's log says "ours" for its own figure when the slave refuses
//!   its region.
//!
//! Root, `dpdk-testpmd` and the built PMD are needed, so the tests are
//! `#[ignore]`d here and run by `tests/dpdk/run.sh`:
//!
//! ```sh
//! VECRING_PMD_SO=$PWD/target/release/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_port -- --ignored --test-threads=1
//! ```

use std::time::{Duration, Instant};
use vecring_core::{Geometry, Link, LinkError, LinkSendError, PushError, Role};
use vecring_tests::testpmd::{mac_str, stat, Env, Testpmd, PMD_MAC, STALL};
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(120);

/// Sends one command and waits until its reply contains `want` (counted
/// from before the command).
fn ask(t: &mut Testpmd, line: &str, want: &str) {
    let before = t.count(|l| l.contains(want));
    t.cmd(line);
    t.wait_for(want, before + 1, |l| l.contains(want));
}

/// `show port info 0` until it reports link status `status`.
fn wait_port_link(t: &mut Testpmd, status: &str) {
    let want = format!("Link status: {status}");
    let deadline = Instant::now() + STALL;
    loop {
        let before = t.count(|l| l.contains("Link status:"));
        t.cmd("show port info 0");
        t.wait_for("Link status", before + 1, |l| l.contains("Link status:"));
        let out = t.output();
        let last = out.lines().rfind(|l| l.contains("Link status:"));
        if last.is_some_and(|l| l.contains(&want)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "testpmd never reported '{want}'\n{}",
            t.tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asserts that the Rust end sees the link down within [`STALL`] and that
/// its sender cannot fill the ring meanwhile.
fn assert_peer_down(link: &Link, tx: &mut vecring_core::Sender, t: &Testpmd, what: &str) {
    assert!(link.wait_down(STALL), "{what}: peer still up\n{}", t.tail());
    assert!(
        matches!(tx.send(&[0u8; 64]), Err(LinkSendError::NoPeer)),
        "{what}: the peer can still fill the ring"
    );
}

/// Sends `n` frames of 64 bytes to `dst`, waiting for room; returns once the
/// testpmd side took them all from the ring.
fn send_to(tx: &mut vecring_core::Sender, dst: [u8; 6], n: usize, t: &Testpmd) {
    let mut f = [0u8; 64];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    let deadline = Instant::now() + STALL;
    let mut sent = 0;
    while sent < n {
        match tx.send(&f) {
            Ok(()) => sent += 1,
            Err(LinkSendError::Push(PushError::Full)) => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => panic!("send: {e}\n{}", t.tail()),
        }
        assert!(Instant::now() < deadline, "ring stayed full\n{}", t.tail());
    }
    tx.flush_counters();
    while tx.unread() > 0 {
        assert!(
            Instant::now() < deadline,
            "testpmd stopped reading\n{}",
            t.tail()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// testpmd on port `vdev` (rxonly), the Rust end in `role` on `link`.
fn pair(env: &Env, name: &str, link: &str, rust_role: Role) -> (Testpmd, Link) {
    let vdev = env.vdev(link, rust_role == Role::Slave);
    let mut t = Testpmd::start(env, name, 1, &vdev, &["--forward-mode=rxonly"]);
    let l = env.open(link, rust_role);
    t.wait_prompt();
    t.wait_link_up(&l);
    (t, l)
}

fn link_down_up_stop_start(rust_role: Role, tag: &str) {
    let env = Env::new(tag);
    let (mut t, link) = pair(&env, tag, "ld", rust_role);
    let mut tx = link.sender().unwrap();
    wait_port_link(&mut t, "up");

    t.cmd("set link-down port 0");
    assert_peer_down(&link, &mut tx, &t, "set link-down");
    wait_port_link(&mut t, "down");
    t.cmd("set link-up port 0");
    t.wait_link_up(&link);
    wait_port_link(&mut t, "up");

    t.cmd("port stop 0");
    assert_peer_down(&link, &mut tx, &t, "port stop");
    wait_port_link(&mut t, "down");
    t.cmd("port start 0");
    t.wait_link_up(&link);
    wait_port_link(&mut t, "up");

    // Frames flow again, into the queues of the reopened link.
    t.cmd("start");
    send_to(&mut tx, PMD_MAC, 100, &t);
    t.stop();
    let x = t.xstats();
    assert_eq!(stat(&x, "rx_good_packets"), 100, "{}", t.tail());
    assert!(stat(&x, "link_up_count") >= 3, "{x:?}");
    assert!(t.quit().success());
}

/// testpmd as slave: link-down/up and stop/start reach the Rust master.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn link_down_up_and_stop_start_slave() {
    let _w = Watchdog::new("link_down_up_and_stop_start_slave", LIMIT);
    link_down_up_stop_start(Role::Master, "lsslave");
}

/// testpmd as master: its port closes its link (socket and lock removed)
/// and claims it again at once on link-up and start.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn link_down_up_and_stop_start_master() {
    let _w = Watchdog::new("link_down_up_and_stop_start_master", LIMIT);
    link_down_up_stop_start(Role::Slave, "lsmaster");
}

/// testpmd (slave) with 4 RX queues on a Rust master's link of 4 queue
/// pairs: each queue's frames arrive on the same queue of the port, also
/// once `port stop`/`port start` reopened the link.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn four_queues_across_stop_start() {
    let _w = Watchdog::new("four_queues_across_stop_start", LIMIT);
    const QUEUES: u16 = 4;
    let env = Env::new("fourq");
    let link = Link::builder("interop", "fourq")
        .role(Role::Master)
        .run_dir(&env.run)
        .queues(QUEUES)
        .open()
        .unwrap();
    let mut t = Testpmd::start(
        &env,
        "fourq",
        1,
        &env.vdev("fourq", false),
        &["--forward-mode=rxonly", "--rxq=4", "--txq=4"],
    );
    t.wait_prompt();
    t.wait_link_up(&link);
    let mut txs: Vec<_> = (0..QUEUES).map(|q| link.sender_on(q).unwrap()).collect();
    // Queue q gets 10 * (q + 1) frames, then 5 more after the restart.
    let first = |q: usize| 10 * (q + 1);
    for round in 0..2 {
        if round == 1 {
            t.cmd("port stop 0");
            assert_peer_down(&link, &mut txs[0], &t, "port stop");
            t.cmd("port start 0");
            t.wait_link_up(&link);
        }
        t.cmd("start");
        for (q, tx) in txs.iter_mut().enumerate() {
            send_to(tx, PMD_MAC, if round == 0 { first(q) } else { 5 }, &t);
        }
        t.stop();
        let want = |q: usize| first(q) + 5 * round;
        let x = t.xstats();
        for q in 0..usize::from(QUEUES) {
            assert_eq!(
                stat(&x, &format!("rx_q{q}_packets")),
                want(q) as u64,
                "queue {q}, round {round}\n{x:?}"
            );
        }
        let total: usize = (0..usize::from(QUEUES)).map(want).sum();
        assert_eq!(stat(&x, "rx_good_packets"), total as u64);
    }
    drop(txs);
    assert!(t.quit().success());
}

/// `show rxq info`/`show txq info` answer with the queue's set-up and burst
/// mode.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn queue_info() {
    let _w = Watchdog::new("queue_info", LIMIT);
    let env = Env::new("qinfo");
    let (mut t, _link) = pair(&env, "qinfo", "qi", Role::Master);
    ask(&mut t, "show rxq info 0 0", "Burst mode: Scalar copy");
    ask(&mut t, "show txq info 0 0", "Number of TXDs: ");
    assert_eq!(
        t.count(|l| l.starts_with("Burst mode: Scalar copy")),
        2,
        "{}",
        t.tail()
    );
    let out = t.output();
    assert!(out.contains("Number of RXDs: "), "{}", t.tail());
    assert!(out.contains("Number of TXDs: "), "{}", t.tail());
    assert!(!out.contains("Operation not supported"), "{}", t.tail());
    assert!(t.quit().success());
}

/// Extra unicast MACs and multicast groups pass the filter with promiscuous
/// mode off; removed, they no longer do.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn extra_macs_and_multicast() {
    let _w = Watchdog::new("extra_macs_and_multicast", LIMIT);
    let env = Env::new("macs");
    let (mut t, link) = pair(&env, "macs", "mc", Role::Master);
    let mut tx = link.sender().unwrap();
    let extra = [0x02, 0, 0, 0, 0, 0x07];
    let group = [0x01, 0x00, 0x5e, 0, 0, 0x01];
    let other_group = [0x01, 0x00, 0x5e, 0, 0, 0x02];
    let stranger = [0x02, 0, 0, 0, 0, 0x08];
    t.cmd("set promisc 0 off");
    t.cmd(&format!("mac_addr add 0 {}", mac_str(&extra)));
    t.cmd(&format!("mcast_addr add 0 {}", mac_str(&group)));
    t.cmd("start");
    for dst in [PMD_MAC, extra, group, other_group, stranger] {
        send_to(&mut tx, dst, 10, &t);
    }
    t.stop();
    let x = t.xstats();
    assert_eq!(stat(&x, "rx_good_packets"), 30, "{x:?}\n{}", t.tail());
    assert_eq!(stat(&x, "rx_filtered_drops"), 20, "{x:?}");

    t.cmd(&format!("mac_addr remove 0 {}", mac_str(&extra)));
    t.cmd(&format!("mcast_addr remove 0 {}", mac_str(&group)));
    t.cmd("start");
    for dst in [PMD_MAC, extra, group] {
        send_to(&mut tx, dst, 10, &t);
    }
    t.stop();
    let x = t.xstats();
    assert_eq!(stat(&x, "rx_good_packets"), 40, "{x:?}\n{}", t.tail());
    assert_eq!(stat(&x, "rx_filtered_drops"), 40, "{x:?}");

    ask(
        &mut t,
        "set port 0 uta all on",
        "uc_all_hash_table_set is not supported",
    );
    assert!(t.quit().success());
}

/// A fixed speed is refused when the port starts; autonegotiation is
/// accepted and reported.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn fixed_speed_refused() {
    let _w = Watchdog::new("fixed_speed_refused", LIMIT);
    let env = Env::new("speed");
    let (mut t, link) = pair(&env, "speed", "sp", Role::Master);
    ask(&mut t, "show port info 0", "Autoneg status: On");
    t.cmd("port stop 0");
    assert!(link.wait_down(STALL), "{}", t.tail());
    t.cmd("port config 0 speed 10000 duplex full");
    ask(&mut t, "port start 0", "a fixed link speed was requested");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!link.state().is_up(), "a refused start brought the link up");
    t.cmd("port config 0 speed auto duplex full");
    t.cmd("port start 0");
    t.wait_link_up(&link);
    ask(&mut t, "show port info 0", "Autoneg status: On");
    assert!(t.quit().success());
}

/// The master's log line about a refused region names its own figure
/// "ours" (the slave's reason speaks from the slave's side).
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn master_log_ours_theirs() {
    let _w = Watchdog::new("master_log_ours_theirs", LIMIT);
    let env = Env::new("ours");
    let vdev = format!("{},slots=512", env.vdev("ot", true));
    let t = Testpmd::start(&env, "ours", 1, &vdev, &["--forward-mode=rxonly"]);
    t.wait_prompt();
    let slave = Link::builder("interop", "ot")
        .role(Role::Slave)
        .run_dir(&env.run)
        .geometry(Geometry::new(1024, Geometry::DEFAULT.slot_size()).unwrap())
        .open()
        .unwrap();
    match slave.wait_up(STALL) {
        Err(LinkError::Timeout(_)) | Ok(_) => panic!("slave did not refuse\n{}", t.tail()),
        Err(e) => assert!(e.to_string().contains("ours 1024, theirs 512"), "{e}"),
    }
    t.wait_for("master's refusal", 1, |l| {
        l.contains("slave refused our region") && l.contains("slave's 1024, ours 512")
    });
    drop(slave);
    assert!(t.quit().success());
}
