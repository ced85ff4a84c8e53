//! `vecring tap` end to end: two network namespaces made by the test, a
//! tap at each end of a link (the master in one, the slave in the other),
//! and the kernel's own tools through them: `ping` (of 9000 bytes with
//! `-M do` too), a bounded `iperf3` whose bytes are checked against both
//! interfaces' counters and `vecring stats`; the carrier following the
//! peer through a kill and a restart; bad options refused before anything
//! is made; and a hostile peer (this test, with vecring-core) whose
//! frames, too long, too short, garbage or with headers no kernel sends,
//! never stop the bridge.
//!
//! Needs root (namespaces, interfaces) and `iperf3` and `ping`
//! (`scripts/setup.sh`); as another user the tests that need root say so
//! and pass. Every namespace is the test's own and is removed at the end.

mod common;

use common::{Proc, Watchdog, TOOL};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use vecring_core::{HugepagePolicy, Link, Role};

/// The interface name the taps create in their namespaces.
const IF: &str = "vr0";

/// Whether this test runs as root; otherwise says what is skipped.
fn root_or_skip(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    eprintln!("skipped: {what} needs root (scripts/test.sh runs it as root)");
    false
}

/// Panics unless `tool` is installed.
fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "{tool} missing: run scripts/setup.sh");
}

/// A network namespace of this test, deleted when dropped (after the
/// processes in it, which the caller drops first).
struct Netns(String);

static NEXT_NS: AtomicU32 = AtomicU32::new(0);

impl Netns {
    fn new() -> Netns {
        let name = format!(
            "vrtap-{}-{}",
            std::process::id(),
            NEXT_NS.fetch_add(1, Ordering::Relaxed)
        );
        sh(&format!("ip netns add {name}"));
        let ns = Netns(name);
        // No IPv6 chatter (router solicitations, DAD): the counters
        // compared below are the test's traffic and ARP only.
        ns.sh("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && ip link set lo up");
        ns
    }

    /// `ip netns exec NS` and `args`.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(args);
        c
    }

    /// Runs a shell command in the namespace; it must succeed.
    fn sh(&self, script: &str) -> String {
        let out = run_bounded(self.cmd(&["sh", "-c", script]), Duration::from_secs(60));
        assert!(out.status.success(), "{}", show(script, &out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The interface's carrier: `Some(true)` up, `Some(false)` down, `None`
    /// when the interface does not exist.
    fn carrier(&self) -> Option<bool> {
        let out = run_bounded(
            self.cmd(&["cat", &format!("/sys/class/net/{IF}/carrier")]),
            Duration::from_secs(10),
        );
        match String::from_utf8_lossy(&out.stdout).trim() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        }
    }

    /// One of the interface's counters (`rx_bytes`, `tx_packets`, ...).
    fn counter(&self, name: &str) -> u64 {
        self.sh(&format!("cat /sys/class/net/{IF}/statistics/{name}"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits (at most 10 s) for the carrier to be `on`.
    fn carrier_becomes(&self, on: bool) {
        wait_until(
            Duration::from_secs(10),
            &format!("carrier {on} in {}", self.0),
            || self.carrier() == Some(on),
        );
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn sh(script: &str) {
    let out = run_bounded(
        {
            let mut c = Command::new("sh");
            c.args(["-c", script]);
            c
        },
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{}", show(script, &out));
}

fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `cmd` to its end, killing it if it outlives `limit`.
fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{cmd:?} still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A run directory of this test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("vecring-tap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Scratch(d)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `vecring tap --role ROLE --domain d --link l --run-dir RUN --ifname vr0
/// EXTRA` in namespace `ns`, stderr piped.
fn tap(ns: &Netns, role: &str, run: &str, extra: &[&str]) -> Proc {
    let mut args = vec![
        TOOL,
        "tap",
        "--role",
        role,
        "--domain",
        "d",
        "--link",
        "l",
        "--run-dir",
        run,
        "--ifname",
        IF,
        "--hugepages",
        "never",
    ];
    args.extend_from_slice(extra);
    Proc(
        ns.cmd(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Ends a tap with SIGTERM; returns its stderr, after checking that it
/// exited with status 0 and printed its summary.
fn stop(mut p: Proc) -> String {
    let child: &mut Child = &mut p.0;
    // SAFETY: a signal to our own child, which has not been waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "tap still running 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "tap exited with {status}:\n{err}");
    assert!(err.contains("summary (SIGTERM)"), "no summary:\n{err}");
    err
}

/// Asserts that `p` still runs, with its stderr if not.
fn alive(p: &mut Proc) {
    if let Some(status) = p.0.try_wait().unwrap() {
        let mut err = String::new();
        p.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        panic!("tap ended ({status}):\n{err}");
    }
}

/// The number after `label` in the summary line of `err`.
fn summary_count(err: &str, label: &str) -> u64 {
    let line = err
        .lines()
        .find(|l| l.contains("summary ("))
        .unwrap_or_else(|| panic!("no summary in:\n{err}"));
    let rest = &line[line
        .find(label)
        .unwrap_or_else(|| panic!("no '{label}' in {line}"))
        + label.len()..];
    rest.trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("'{label}' in {line}: {e}"))
}

/// Two namespaces joined by a tap at each end, with addresses 10.77.0.1
/// (master side, `a`) and 10.77.0.2 (slave side, `b`).
struct Pair {
    master: Option<Proc>,
    slave: Option<Proc>,
    a: Netns,
    b: Netns,
    run: Scratch,
}

impl Pair {
    fn new(name: &str, extra: &[&str]) -> Pair {
        let (a, b, run) = (Netns::new(), Netns::new(), Scratch::new(name));
        let master = tap(&a, "master", run.path(), extra);
        // The master's interface exists, carrier off, before any peer.
        wait_until(Duration::from_secs(10), "the master's interface", || {
            a.carrier().is_some()
        });
        assert_eq!(a.carrier(), Some(false), "carrier on without a peer");
        let slave = tap(&b, "slave", run.path(), extra);
        a.carrier_becomes(true);
        b.carrier_becomes(true);
        a.sh(&format!("ip addr add 10.77.0.1/24 dev {IF}"));
        b.sh(&format!("ip addr add 10.77.0.2/24 dev {IF}"));
        Pair {
            master: Some(master),
            slave: Some(slave),
            a,
            b,
            run,
        }
    }

    /// The master's status as `vecring stats --json` gives it.
    fn stats(&self) -> Value {
        let out = run_bounded(
            {
                let mut c = Command::new(TOOL);
                c.args(["stats", "--json", "--run-dir", self.run.path()]);
                c
            },
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "{}", show("vecring stats", &out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["links"][0].clone()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // The processes before their namespaces.
        self.slave.take();
        self.master.take();
    }
}

/// The `iperf3 -J` document's bytes: (sent, received).
fn iperf_bytes(json: &str) -> (u64, u64) {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let end = &v["end"];
    let (sent, received) = if end["sum_sent"].is_object() {
        (&end["sum_sent"]["bytes"], &end["sum_received"]["bytes"])
    } else {
        (&end["sum"]["bytes"], &end["sum"]["bytes"])
    };
    (sent.as_u64().unwrap(), received.as_u64().unwrap())
}

/// Waits until the master's interface and the link agree (the bridge has
/// read everything the kernel queued), then checks every counter: what
/// one interface sent, the link carried and the other received.
fn counters_agree(p: &Pair) {
    let read = || {
        let s = p.stats();
        (
            [
                p.a.counter("tx_packets"),
                p.a.counter("tx_bytes"),
                p.a.counter("rx_packets"),
                p.a.counter("rx_bytes"),
            ],
            [
                p.b.counter("rx_packets"),
                p.b.counter("rx_bytes"),
                p.b.counter("tx_packets"),
                p.b.counter("tx_bytes"),
            ],
            [
                s["tx"]["frames"].as_u64().unwrap(),
                s["tx"]["bytes"].as_u64().unwrap(),
                s["rx"]["frames"].as_u64().unwrap(),
                s["rx"]["bytes"].as_u64().unwrap(),
            ],
        )
    };
    let start = Instant::now();
    loop {
        let (a, b, link) = read();
        if a == link && b == link {
            eprintln!(
                "counters agree: master tx {} frames {} bytes, rx {} frames {} bytes",
                a[0], a[1], a[2], a[3]
            );
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "counters disagree: master's interface (tx frames, tx bytes, rx frames, rx bytes) {a:?}, slave's (rx, rx, tx, tx) {b:?}, the link's (vecring stats) {link:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

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

impl Pair {
    fn master_take(mut self) -> Proc {
        self.master.take().unwrap()
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

/// An Ethernet frame of `len` bytes to `dst` from a made-up address, with
/// `fill` as type and payload.
fn ether(dst: [u8; 6], len: usize, fill: u8) -> Vec<u8> {
    let mut f = vec![fill; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    f
}

/// The slave's MAC, from its namespace.
fn mac_of(ns: &Netns) -> [u8; 6] {
    let text = ns.sh(&format!("cat /sys/class/net/{IF}/address"));
    let mut mac = [0u8; 6];
    for (b, p) in mac.iter_mut().zip(text.trim().split(':')) {
        *b = u8::from_str_radix(p, 16).unwrap();
    }
    mac
}

/// Sends `frames` on the master's link (waiting for room), in order.
fn send_all(link: &Link, frames: &[Vec<u8>]) {
    let mut tx = link.sender().unwrap();
    for f in frames {
        tx.send_timeout(f, Duration::from_secs(10)).unwrap();
    }
}

/// Waits (at most 10 s) for an ARP frame on the master's link (its
/// Ethernet header after `prefix` bytes); true if one came.
fn arp_arrives(link: &Link, prefix: usize) -> bool {
    let mut rx = link.receiver().unwrap();
    let mut buf = vec![0u8; 9216];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match rx.recv_timeout(&mut buf, Duration::from_millis(200)) {
            Ok(n) if n >= prefix + 14 && buf[prefix + 12..prefix + 14] == [0x08, 0x06] => {
                return true
            }
            _ => {}
        }
    }
    false
}

/// A slave tap in its own namespace and this process as its hostile
/// master: frames of every bad shape, then good ones; the bridge drops
/// and counts the bad, delivers the rest, and still carries frames both
/// ways. `offload`: with `--offload`, and bad virtio-net headers too.
fn hostile_master(offload: bool) {
    let _w = Watchdog::new("tap hostile peer", Duration::from_secs(120));
    let (b, run) = (
        Netns::new(),
        Scratch::new(if offload { "hostile-vnet" } else { "hostile" }),
    );
    let link = Link::builder("d", "l")
        .role(Role::Master)
        .run_dir(run.path())
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap();
    let mut extra = vec!["--mtu", "1500"];
    if offload {
        extra.push("--offload");
    }
    let slave = tap(&b, "slave", run.path(), &extra);
    link.wait_up(Duration::from_secs(30)).unwrap();
    b.carrier_becomes(true);
    b.sh(&format!("ip addr add 10.77.0.2/24 dev {IF}"));
    let dst = mac_of(&b);
    let prefix = if offload { 10 } else { 0 };
    let with_hdr = |hdr: [u8; 10], f: Vec<u8>| {
        if offload {
            let mut v = hdr.to_vec();
            v.extend(f);
            v
        } else {
            f
        }
    };
    let plain = [0u8; 10];
    let mut frames = Vec::new();
    let (mut bad_len, mut bad_hdr, mut good) = (0u64, 0u64, 0u64);
    // Longer than the MTU allows, at the link's largest and just past the
    // limit (MTU, Ethernet header, a VLAN tag).
    for len in [9216 - prefix, 1500 + 14 + 4 + 1] {
        frames.push(with_hdr(plain, ether(dst, len, 0xee)));
        bad_len += 1;
    }
    // Shorter than an Ethernet header.
    for len in [1, 13] {
        frames.push(with_hdr(plain, vec![0xff; len]));
        bad_len += 1;
    }
    if offload {
        // Shorter than the header itself.
        frames.push(vec![0u8; 9]);
        bad_len += 1;
        // Headers no kernel sends: unknown flags, UFO, a checksum place
        // past the end, GSO without a segment size or a checksum.
        let csum_far = {
            let mut h = [1u8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            h[6..8].copy_from_slice(&2000u16.to_ne_bytes());
            h
        };
        for hdr in [
            [0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            [1, 3, 54, 0, 100, 0, 34, 0, 6, 0],
            csum_far,
            [1, 1, 54, 0, 0, 0, 34, 0, 16, 0],
            [0, 1, 54, 0, 100, 0, 34, 0, 16, 0],
        ] {
            frames.push(with_hdr(hdr, ether(dst, 1000, 0x45)));
            bad_hdr += 1;
        }
    }
    // Garbage of every valid length, to the slave and broadcast: the
    // bridge hands it over and the kernel discards it.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..400usize {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = 14 + (seed as usize % (1500 + 4 + 1));
        let to = if i % 2 == 0 { dst } else { [0xff; 6] };
        let mut f = ether(to, len, 0);
        for (j, byte) in f.iter_mut().enumerate().skip(12) {
            *byte = (seed >> (j % 8 * 8)) as u8 ^ j as u8;
        }
        frames.push(with_hdr(plain, f));
        good += 1;
    }
    let mut slave = slave;
    alive(&mut slave);
    let rx_before = b.counter("rx_packets");
    send_all(&link, &frames);
    alive(&mut slave);
    // Everything of a valid shape reached the interface, nothing else.
    wait_until(
        Duration::from_secs(10),
        "the good frames on the slave's interface",
        || b.counter("rx_packets") >= rx_before + good,
    );
    // The bridge still carries frames the other way: the slave's kernel
    // asks for 10.77.0.1's address, on the link.
    let pinger = Proc(
        b.cmd(&["ping", "-c", "3", "-i", "0.5", "10.77.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        arp_arrives(&link, prefix),
        "no ARP request from the slave after the hostile frames"
    );
    drop(pinger);
    let err = stop(slave);
    assert_eq!(summary_count(&err, "bad length"), bad_len, "{err}");
    assert_eq!(summary_count(&err, "bad header"), bad_hdr, "{err}");
    assert_eq!(summary_count(&err, "refused by the interface"), 0, "{err}");
    assert_eq!(summary_count(&err, "to the interface"), good, "{err}");
    drop(link);
    drop(b);
}

#[test]
fn a_hostile_peers_frames_never_stop_the_bridge() {
    if !root_or_skip("a_hostile_peers_frames_never_stop_the_bridge") {
        return;
    }
    require("ping");
    hostile_master(false);
}

#[test]
fn a_hostile_peers_virtio_net_headers_never_stop_the_bridge() {
    if !root_or_skip("a_hostile_peers_virtio_net_headers_never_stop_the_bridge") {
        return;
    }
    require("ping");
    hostile_master(true);
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

/// Runs `f` in a thread that has entered namespace `ns`'s network
/// namespace (setns affects the calling thread only).
fn in_netns<T: Send + 'static>(
    ns: &Netns,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(format!("/run/netns/{}", ns.0)).unwrap();
    std::thread::spawn(move || {
        // SAFETY: a namespace file of our own; the thread enters it.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Sends `data` over TCP from the master's side to the slave's, and
/// returns what arrived.
fn tcp_transfer(p: &Pair, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    use std::net::{Shutdown, TcpListener, TcpStream};
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let server = in_netns(&p.b, move || {
        let l = TcpListener::bind("10.77.0.2:5001").unwrap();
        ready_tx.send(()).unwrap();
        let (mut c, _) = l.accept().unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        got
    });
    ready.recv_timeout(Duration::from_secs(10)).unwrap();
    let data = data.to_vec();
    let client = in_netns(&p.a, move || {
        let mut c = TcpStream::connect("10.77.0.2:5001").unwrap();
        c.write_all(&data).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
    });
    client.join().unwrap();
    server.join().unwrap()
}

#[test]
fn with_offloads_tcp_super_frames_cross_in_pieces_and_the_bytes_arrive_intact() {
    if !root_or_skip("with_offloads_tcp_super_frames_cross_in_pieces") {
        return;
    }
    require("iperf3");
    require("ping");
    let _w = Watchdog::new("tap offloads", Duration::from_secs(150));
    // 8 MiB of bytes no two runs of which are alike over a segment.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..8 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    // At the link's MTU (a piece is one segment) and at 1500 (a piece is
    // several).
    for mtu in ["9192", "1500"] {
        let p = Pair::new(&format!("offload-{mtu}"), &["--offload", "--mtu", mtu]);
        let big = if mtu == "1500" { "1472" } else { "8972" };
        assert!(p
            .b
            .sh(&format!("ping -c 2 -i 0.2 -W 2 -s {big} -M do 10.77.0.1"))
            .contains("2 received"));
        let back = tcp_transfer(&p, &data);
        assert!(
            back == data,
            "MTU {mtu}: {} bytes arrived of {}, or other bytes",
            back.len(),
            data.len()
        );
        // The connection's last segments (the ACK of the server's FIN)
        // may still be on their way: the count once it stays still.
        let mut a_tx = p.a.counter("tx_bytes");
        let mut still = Instant::now();
        let settled = Instant::now() + Duration::from_secs(10);
        while still.elapsed() < Duration::from_millis(300) && Instant::now() < settled {
            std::thread::sleep(Duration::from_millis(20));
            let now = p.a.counter("tx_bytes");
            if now != a_tx {
                (a_tx, still) = (now, Instant::now());
            }
        }
        let err = stop(p.master_take());
        let (frames, bytes) = (
            summary_count(&err, "to the link"),
            summary_count(&err, "frames"),
        );
        // Super-frames: more than an MTU's worth each on average.
        assert!(
            frames > 0 && bytes / frames > 1514,
            "MTU {mtu}: no super-frames:\n{err}"
        );
        assert_eq!(
            bytes, a_tx,
            "the interface's bytes against the bridge's:\n{err}"
        );
        for label in [
            "too long for the link",
            "bad length",
            "bad header",
            "refused by the interface",
        ] {
            assert_eq!(summary_count(&err, label), 0, "MTU {mtu}: {label}:\n{err}");
        }
    }
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
    std::thread::sleep(Duration::from_millis(500));
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
