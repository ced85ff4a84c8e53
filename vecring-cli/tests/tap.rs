//! `vecring tap` end to end: two network namespaces made by the test, a
//! tap at each end of a link (the master in one, the slave in the other),
//! and the kernel's own tools through them: `ping` (of 9000 bytes with
//! `-M do` too), a bounded `iperf3` whose bytes are checked against both
//! interfaces' counters and `vecring stats`; the carrier following the
//! peer through a kill and a restart; bad options refused before anything
//! is made; the slave's tap run by an unprivileged container's root.
//! Offloads are `tap_offload.rs`'s, a hostile peer's frames
//! `tap_hostile.rs`'s.
//!
//! Needs root (namespaces, interfaces) and `iperf3` and `ping`
//! (`scripts/setup.sh`); as another user the tests that need root say so
//! and pass. Every namespace is the test's own and is removed at the end.

mod common;
mod tap_env;

use common::{Proc, Watchdog, TOOL};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tap_env::*;

#[test]
fn ping_and_iperf3_cross_the_bridge_and_every_counter_agrees() {
    if !root_or_skip("ping_and_iperf3_cross_the_bridge") {
        return;
    }
    require("iperf3");
    require("ping");
    let _w = Watchdog::new("tap ping and iperf3", Duration::from_secs(180));
    // Two queue pairs: the TAP spreads flows over both.
    let p = Pair::new("iperf", &["--queues", "2"]);
    let out = p.a.sh("ping -c 3 -i 0.2 -W 2 10.77.0.2");
    assert!(out.contains("3 received"), "{out}");
    // 9000-byte IP packets, not fragmented: the MTU is the link's.
    assert_eq!(
        p.a.sh(&format!("cat /sys/class/net/{IF}/mtu")).trim(),
        "9202"
    );
    let out = p.b.sh("ping -c 2 -i 0.2 -W 2 -s 8972 -M do 10.77.0.1");
    assert!(out.contains("2 received"), "{out}");
    // TCP, eight streams, then UDP; a server for each run. The TAP picks
    // a queue for each flow by its hash: with two streams and the control
    // connections all flows fell on one queue now and then (1 in 128 for
    // seven flows); with eight streams, 1 in 8192.
    let server = Proc(
        p.b.cmd(&["iperf3", "-s", "-B", "10.77.0.2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let client = |args: &str| {
        let mut last = String::new();
        // The server may not listen yet: try a few times.
        for _ in 0..20 {
            let out = run_bounded(
                p.a.cmd(&["sh", "-c", &format!("iperf3 -J -c 10.77.0.2 {args}")]),
                Duration::from_secs(60),
            );
            if out.status.success() {
                return String::from_utf8_lossy(&out.stdout).into_owned();
            }
            last = show("iperf3", &out);
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{last}");
    };
    let before = (p.a.counter("tx_bytes"), p.b.counter("rx_bytes"));
    let (sent, received) = iperf_bytes(&client("-t 2 -P 8"));
    let after = (p.a.counter("tx_bytes"), p.b.counter("rx_bytes"));
    assert!(
        received > 0 && received <= sent,
        "iperf3 sent {sent}, received {received}"
    );
    // Every byte iperf3 moved crossed both interfaces, with its headers
    // (at most 1 % more at this MTU) and a little else (control
    // connection, ARP).
    for (what, moved) in [
        ("master's tx", after.0 - before.0),
        ("slave's rx", after.1 - before.1),
    ] {
        assert!(
            moved >= received && moved <= sent + sent / 100 + 1_000_000,
            "{what}: {moved} bytes for iperf3's {sent} sent, {received} received"
        );
    }
    let udp = client("-u -b 200M -l 1400 -t 1");
    let (udp_sent, _) = iperf_bytes(&udp);
    assert!(udp_sent > 0, "{udp}");
    drop(server);
    counters_agree(&p);
    // Both queues carried traffic.
    let err = stop(p.master_take());
    for q in 0..2 {
        let line = err
            .lines()
            .find(|l| l.contains(&format!("queue {q}:")))
            .unwrap_or_else(|| panic!("no line of queue {q}:\n{err}"));
        assert!(
            !line.contains("to the link 0 frames"),
            "queue {q} idle: {line}"
        );
    }
    for label in [
        "too long for the link",
        "bad length",
        "bad header",
        "refused by the interface",
    ] {
        assert_eq!(summary_count(&err, label), 0, "{label}:\n{err}");
    }
}

#[test]
fn the_carrier_follows_the_peer_and_traffic_resumes_after_restarts() {
    if !root_or_skip("the_carrier_follows_the_peer") {
        return;
    }
    require("ping");
    let _w = Watchdog::new("tap carrier", Duration::from_secs(120));
    let mut p = Pair::new("carrier", &[]);
    assert!(p.a.sh("ping -c 1 -W 2 10.77.0.2").contains("1 received"));
    // The slave killed: the master's carrier goes off; the slave's
    // interface went with its process.
    let mut slave = p.slave.take().unwrap();
    slave.0.kill().unwrap();
    slave.0.wait().unwrap();
    p.a.carrier_becomes(false);
    assert_eq!(
        p.b.carrier(),
        None,
        "the slave's interface outlived its process"
    );
    // A new slave: carrier on at both ends, traffic again.
    p.slave = Some(tap(&p.b, "slave", p.run.path(), &[]));
    p.a.carrier_becomes(true);
    p.b.carrier_becomes(true);
    p.b.sh(&format!("ip addr add 10.77.0.2/24 dev {IF}"));
    assert!(p
        .a
        .sh("ping -c 2 -i 0.2 -W 2 10.77.0.2")
        .contains("2 received"));
    // The master stopped: the slave's carrier goes off and comes back with
    // the next master (the slave's interface, address and all, stays).
    let err = stop(p.master.take().unwrap());
    assert!(err.contains("carrier on"), "{err}");
    p.b.carrier_becomes(false);
    p.master = Some(tap(&p.a, "master", p.run.path(), &[]));
    p.a.carrier_becomes(true);
    p.b.carrier_becomes(true);
    p.a.sh(&format!("ip addr add 10.77.0.1/24 dev {IF}"));
    assert!(p
        .b
        .sh("ping -c 2 -i 0.2 -W 2 10.77.0.1")
        .contains("2 received"));
    let err = stop(p.slave.take().unwrap());
    assert!(
        err.contains("carrier off (peer away)") && err.contains("carrier on"),
        "{err}"
    );
}

#[test]
fn bad_options_are_refused_before_anything_is_made() {
    let _w = Watchdog::new("tap bad options", Duration::from_secs(120));
    let run = Scratch::new("options");
    let cases: &[(&[&str], &str)] = &[
        (&["--ifname", "a/b"], "--ifname"),
        (&["--ifname", "a-very-long-name0"], "1 to 15 bytes"),
        (&["--ifname", "lo"], "exists already"),
        (&["--mtu", "20"], "--mtu 20"),
        (&["--mtu", "9203"], "--mtu 9203"),
        (&["--mtu", "9193", "--offload"], "--mtu 9193"),
        (&["--mac", "01:00:5e:00:00:01"], "multicast"),
        (&["--mac", "02:00:00:00:00"], "not a MAC address"),
        (&["--queues", "0"], "--queues"),
        (&["--queues", "17"], "--queues"),
        (&["--up-timeout", "5"], "--up-timeout"),
        (&["--hold-back"], "--hold-back"),
        (&["--slots", "1024"], "master option"),
        (&["--role", "other"], "master or slave"),
    ];
    for (extra, says) in cases {
        let mut c = Command::new(TOOL);
        c.args([
            "tap",
            "--domain",
            "d",
            "--link",
            "l",
            "--run-dir",
            run.path(),
        ])
        .args(*extra);
        let out = run_bounded(c, Duration::from_secs(30));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} accepted");
        assert!(
            matches!(out.status.code(), Some(1) | Some(2)),
            "{extra:?}: {}",
            out.status
        );
        assert!(err.contains(says), "{extra:?}: no '{says}' in:\n{err}");
        assert!(!err.contains("panicked"), "{extra:?}:\n{err}");
        assert!(!run.0.exists(), "{extra:?}: the run directory was made");
    }
    let mut c = Command::new(TOOL);
    c.args([
        "tap",
        "--domain",
        "d",
        "--link",
        "l",
        "--run-dir",
        "relative",
    ]);
    let out = run_bounded(c, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("absolute"),
        "{}",
        show("tap", &out)
    );
    // A link name that is no interface name needs --ifname.
    let mut c = Command::new(TOOL);
    c.args([
        "tap",
        "--domain",
        "d",
        "--link",
        "a-link-name-of-20-b",
        "--run-dir",
        run.path(),
    ]);
    let out = run_bounded(c, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give --ifname"),
        "{}",
        show("tap", &out)
    );
}
/// Where an unprivileged container's root lands on the host.
const MAPPED_ROOT: u32 = 100_000;

#[test]
fn an_unprivileged_containers_root_runs_the_slave_tap() {
    use std::os::unix::fs::PermissionsExt;
    if !root_or_skip("an_unprivileged_containers_root_runs_the_slave_tap") {
        return;
    }
    require("lxc-execute");
    require("ping");
    let _w = Watchdog::new("tap in an LXC container", Duration::from_secs(120));
    // A directory every uid reaches: the tool, the run directory, the
    // container's configuration.
    let scratch = Scratch::new("lxc");
    let dir = &scratch.0;
    std::fs::create_dir_all(dir.join("run/web")).unwrap();
    for (d, mode) in [
        (dir.clone(), 0o755),
        (dir.join("run"), 0o755),
        (dir.join("run/web"), 0o711),
    ] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    // Copied by `cp`: no write descriptor of this process for a child
    // forked meanwhile to inherit (ETXTBSY).
    let tool = dir.join("vecring");
    let copied = Command::new("cp").arg(TOOL).arg(&tool).status().unwrap();
    assert!(copied.success(), "cp of the vecring tool failed: {copied}");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = dir.join("run");
    let config = dir.join("config");
    // The host's root file system shared, the domain directory bound,
    // /dev (and /dev/net/tun) the host's; an id-mapped root.
    std::fs::write(
        &config,
        format!(
            "lxc.uts.name = vrtap\n\
             lxc.rootfs.path =\n\
             lxc.net.0.type = empty\n\
             lxc.console.path = none\n\
             lxc.mount.auto = proc:rw sys:rw\n\
             lxc.autodev = 0\n\
             lxc.mount.entry = {web} {inside} none bind,create=dir 0 0\n\
             lxc.idmap = u 0 {MAPPED_ROOT} 65536\n\
             lxc.idmap = g 0 {MAPPED_ROOT} 65536\n",
            web = run.join("web").display(),
            inside = run.join("web").strip_prefix("/").unwrap().display(),
        ),
    )
    .unwrap();
    let host = Netns::new();
    let master = Proc(
        host.cmd(&[
            tool.to_str().unwrap(),
            "tap",
            "--role",
            "master",
            "--domain",
            "web",
            "--link",
            "eth0",
            "--run-dir",
            run.to_str().unwrap(),
            "--ifname",
            "web0",
            "--owner",
            &format!("{MAPPED_ROOT}:{MAPPED_ROOT}"),
            "--hugepages",
            "never",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    wait_until(Duration::from_secs(10), "the host's interface", || {
        host.sh("cat /sys/class/net/web0/carrier 2>/dev/null || echo none")
            .trim()
            == "0"
    });
    host.sh("ip addr add 10.0.3.1/24 dev web0");
    // In the container (its own network namespace, root mapped to
    // 100000): the slave tap, then the kernel's tools through it.
    let script = format!(
        "set -e\n\
         {tool} tap --domain web --link eth0 --run-dir {run} &\n\
         for i in $(seq 100); do [ \"$(cat /sys/class/net/eth0/carrier 2>/dev/null)\" = 1 ] && break; sleep 0.1; done\n\
         echo uid_map $(cat /proc/self/uid_map)\n\
         ip addr add 10.0.3.2/24 dev eth0\n\
         ping -c 3 -i 0.2 -W 2 10.0.3.1\n\
         ping -c 2 -i 0.2 -W 2 -s 8972 -M do 10.0.3.1\n\
         kill $!\n\
         wait\n",
        tool = tool.display(),
        run = run.display(),
    );
    let out = run_bounded(
        {
            let mut c = Command::new("lxc-execute");
            c.args(["-n", "vrtap", "-P"])
                .arg(dir)
                .arg("-f")
                .arg(&config)
                .args(["--", "sh", "-c", &script])
                .current_dir("/tmp");
            c
        },
        Duration::from_secs(90),
    );
    let text = show("lxc-execute", &out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("uid_map 0 {MAPPED_ROOT} 65536")),
        "not id-mapped: {text}"
    );
    assert!(
        text.contains("3 received") && text.contains("2 received"),
        "{text}"
    );
    drop(master);
    drop(host);
}

#[test]
fn deleting_the_interface_ends_the_tap_with_a_message() {
    if !root_or_skip("deleting_the_interface_ends_the_tap_with_a_message") {
        return;
    }
    let _w = Watchdog::new("tap interface deleted", Duration::from_secs(60));
    let (a, run) = (Netns::new(), Scratch::new("deleted"));
    let mut master = tap(&a, "master", run.path(), &["--queues", "2"]);
    wait_until(Duration::from_secs(10), "the interface", || {
        a.carrier().is_some()
    });
    a.sh(&format!("ip link del {IF}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = master.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "tap still running 10 s after its interface went"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    master
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("was it deleted?") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn a_slave_whose_queue_count_differs_stays_down_and_says_why() {
    if !root_or_skip("a_slave_whose_queue_count_differs_stays_down_and_says_why") {
        return;
    }
    let _w = Watchdog::new("tap queue count", Duration::from_secs(60));
    let (a, b, run) = (Netns::new(), Netns::new(), Scratch::new("queues"));
    let master = tap(&a, "master", run.path(), &["--queues", "2"]);
    wait_until(Duration::from_secs(10), "the master's interface", || {
        a.carrier().is_some()
    });
    // The slave's interface has its one queue; the master's two are refused.
    let slave = tap(&b, "slave", run.path(), &[]);
    wait_until(Duration::from_secs(10), "the slave's interface", || {
        b.carrier().is_some()
    });
    // The master counts the slave's refusal. The slave logs why on the
    // thread that sent it, which its link waits for when it closes.
    wait_until(
        Duration::from_secs(20),
        "the slave refusing the master",
        || link_stats(run.path())["rejected_peers"].as_u64() >= Some(1),
    );
    assert_eq!(a.carrier(), Some(false));
    assert_eq!(b.carrier(), Some(false));
    let err = stop(slave);
    assert!(
        err.contains("queue count mismatch: ours 1, theirs 2"),
        "{err}"
    );
    drop(master);
}

#[test]
fn any_vecring_peer_reaches_the_interface_with_the_default_addresses() {
    if !root_or_skip("any_vecring_peer_reaches_the_interface") {
        return;
    }
    let _w = Watchdog::new("tap and txonly", Duration::from_secs(120));
    let (a, run) = (Netns::new(), Scratch::new("txonly"));
    let master = tap(&a, "master", run.path(), &[]);
    wait_until(Duration::from_secs(10), "the interface", || {
        a.carrier().is_some()
    });
    let before = a.counter("rx_packets");
    // txonly's slave sends from the slave's default MAC to the master's,
    // which is the interface's: the kernel takes every frame (and drops
    // them for their ethertype, after counting).
    let out = run_bounded(
        {
            let mut c = Command::new(TOOL);
            c.args([
                "txonly",
                "--domain",
                "d",
                "--link",
                "l",
                "--run-dir",
                run.path(),
                "--seconds",
                "1",
            ]);
            c
        },
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert!(out.status.success(), "{text}");
    let taken = text
        .split("taken by the peer ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no count taken:\n{text}"));
    assert!(taken > 0, "{text}");
    wait_until(
        Duration::from_secs(10),
        "every frame on the interface",
        || a.counter("rx_packets") - before == taken,
    );
    let err = stop(master);
    assert_eq!(summary_count(&err, "to the interface"), taken, "{err}");
}
