//! What the `vecring tap` test files share: network namespaces of the
//! test's own, a tap at each end of a link in two of them ([`Pair`]),
//! bounded commands, and reading the taps' summaries and the
//! interfaces' counters.
// Each test file uses what it needs of this module.
#![allow(dead_code)]

use crate::common::{Proc, TOOL};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
/// The interface name the taps create in their namespaces.
pub const IF: &str = "vr0";

/// Whether this test runs as root; otherwise says what is skipped.
pub fn root_or_skip(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    eprintln!("skipped: {what} needs root (scripts/test.sh runs it as root)");
    false
}

/// Panics unless `tool` is installed.
pub fn require(tool: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "{tool} missing: run scripts/setup.sh");
}

/// A network namespace of this test, deleted when dropped (after the
/// processes in it, which the caller drops first).
pub struct Netns(pub String);

static NEXT_NS: AtomicU32 = AtomicU32::new(0);

impl Netns {
    pub fn new() -> Netns {
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
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).args(args);
        c
    }

    /// Runs a shell command in the namespace; it must succeed.
    pub fn sh(&self, script: &str) -> String {
        let out = run_bounded(self.cmd(&["sh", "-c", script]), Duration::from_secs(60));
        assert!(out.status.success(), "{}", show(script, &out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The interface's carrier: `Some(true)` up, `Some(false)` down, `None`
    /// when the interface does not exist.
    pub fn carrier(&self) -> Option<bool> {
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
    pub fn counter(&self, name: &str) -> u64 {
        self.sh(&format!("cat /sys/class/net/{IF}/statistics/{name}"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits (at most 10 s) for the carrier to be `on`.
    pub fn carrier_becomes(&self, on: bool) {
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

pub fn sh(script: &str) {
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

pub fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `cmd` to its end, killing it if it outlives `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
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

pub fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A run directory of this test's own, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("vecring-tap-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Scratch(d)
    }
    pub fn path(&self) -> &str {
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
pub fn tap(ns: &Netns, role: &str, run: &str, extra: &[&str]) -> Proc {
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
pub fn stop(mut p: Proc) -> String {
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
pub fn alive(p: &mut Proc) {
    if let Some(status) = p.0.try_wait().unwrap() {
        let mut err = String::new();
        p.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        panic!("tap ended ({status}):\n{err}");
    }
}

/// The number after `label` in the summary line of `err`.
pub fn summary_count(err: &str, label: &str) -> u64 {
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
pub struct Pair {
    pub master: Option<Proc>,
    pub slave: Option<Proc>,
    pub a: Netns,
    pub b: Netns,
    pub run: Scratch,
}

impl Pair {
    pub fn new(name: &str, extra: &[&str]) -> Pair {
        Pair::with_master(name, extra, &[])
    }

    /// As [`Pair::new`], the master also given `master_only` (options a
    /// slave refuses: the ring's geometry).
    pub fn with_master(name: &str, extra: &[&str], master_only: &[&str]) -> Pair {
        let (a, b, run) = (Netns::new(), Netns::new(), Scratch::new(name));
        let master_args: Vec<&str> = extra.iter().chain(master_only).copied().collect();
        let master = tap(&a, "master", run.path(), &master_args);
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
    pub fn stats(&self) -> Value {
        link_stats(self.run.path())
    }
}

/// The status of the one link under run directory `run`, as `vecring
/// stats --json` gives it.
pub fn link_stats(run: &str) -> Value {
    let out = run_bounded(
        {
            let mut c = Command::new(TOOL);
            c.args(["stats", "--json", "--run-dir", run]);
            c
        },
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{}", show("vecring stats", &out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["links"][0].clone()
}

impl Drop for Pair {
    fn drop(&mut self) {
        // The processes before their namespaces.
        self.slave.take();
        self.master.take();
    }
}

/// The `iperf3 -J` document's bytes: (sent, received).
pub fn iperf_bytes(json: &str) -> (u64, u64) {
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
pub fn counters_agree(p: &Pair) {
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

impl Pair {
    pub fn master_take(mut self) -> Proc {
        self.master.take().unwrap()
    }
}
