//! The forwarding benchmark end to end: `vecring-bench agent` processes
//! driven over their stdin and stdout (the agent protocol, bad commands
//! included), and `vecring-bench host-container --forward` with the far
//! side in a real
//! unprivileged LXC container, every frame checked back intact (each
//! payload byte), in order and exactly once, each way and both ways.
//!
//! The container test needs root and Debian's `lxc` with root's uid range
//! in /etc/subuid and /etc/subgid (`scripts/setup.sh`).

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;
use vecring_tests::hostile::Proc;
use vecring_tests::Watchdog;

/// The harness under test.
const HARNESS: &str = env!("CARGO_BIN_EXE_vecring-bench");

/// The longest an agent takes to answer a command (a trial lasts at most
/// a second here).
const REPLY: Duration = Duration::from_secs(30);

/// Rings of 16 MiB per direction (1860 frames of 9000 bytes): at the
/// tests' 20 000 frames/s they ride out a stall of 90 ms of either side
/// (a VM's vCPU can be held up for tens of milliseconds), so every frame
/// arrives.
const SLOTS: &[&str] = &["--slots=262144"];

/// One busy pair of processes at a time on this two-CPU machine.
static ONE_PAIR: Mutex<()> = Mutex::new(());

/// An agent process, asked over its stdin, answering on its stdout (killed
/// when dropped).
struct Agent(Proc);

impl Agent {
    fn start(run_dir: &std::path::Path, role: &str, mode: &str, cpu: usize) -> Self {
        let mut cmd = Command::new(HARNESS);
        cmd.args([
            "agent",
            "--domain=fwdtest",
            "--link=l0",
            "--up-timeout=20",
            "--verify",
            "-q",
        ])
        .args(if role == "master" { SLOTS } else { &[] })
        .arg(format!("--role={role}"))
        .arg(format!("--mode={mode}"))
        .arg(format!("--cpu={cpu}"))
        .arg("--run-dir")
        .arg(run_dir);
        Self(Proc::spawn(&format!("agent {mode}"), &mut cmd))
    }

    /// Its next line.
    fn line(&mut self) -> String {
        let l = self.0.line("", REPLY).unwrap_or_else(|e| panic!("{e}"));
        l.trim().to_string()
    }

    /// Its lines left once it has exited (within [`REPLY`]).
    fn rest(&mut self) -> Vec<String> {
        if self.0.wait(REPLY).is_none() {
            panic!("still running: {}", self.0.output());
        }
        std::iter::from_fn(|| self.0.line("", Duration::from_millis(200)).ok())
            .map(|l| l.trim().to_string())
            .collect()
    }

    fn ask(&mut self, cmd: &str) -> String {
        self.0.say(cmd);
        self.line()
    }

    /// A sink's `counts` once its `unique` and `bad` frames add up to
    /// `n` (the generator's trial has ended, but the sink may still be
    /// reading its ring), or after 20 s.
    fn counts_reaching(&mut self, n: u64) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let c = self.ask("counts");
            if field(&c, "unique") + field(&c, "bad") >= n || std::time::Instant::now() > deadline {
                return c;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A fresh run directory of this test process, removed when dropped.
struct RunDir(std::path::PathBuf);

impl RunDir {
    fn new(name: &str) -> Self {
        let d =
            std::env::temp_dir().join(format!("vecring-bench-fwd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The value of `key=` in a reply.
fn field(reply: &str, key: &str) -> u64 {
    reply
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in '{reply}'"))
        .parse()
        .unwrap_or_else(|_| panic!("{key}= is not a number in '{reply}'"))
}

#[test]
fn agents_answer_the_protocol_and_a_forwarded_trial_comes_back_whole() {
    let _alone = ONE_PAIR.lock().unwrap_or_else(|p| p.into_inner());
    let _w = Watchdog::new("agent protocol", Duration::from_secs(120));
    let dir = RunDir::new("proto");
    let mut gen = Agent::start(dir.path(), "master", "gen", 0);
    let mut fwd = Agent::start(dir.path(), "slave", "fwd", 1);
    assert!(gen
        .line()
        .starts_with("ready mac=02:00:00:00:00:01 max_frame="));
    assert!(fwd.line().starts_with("ready "));
    // Bad commands are answered, and the agent goes on.
    for (cmd, says) in [
        ("bogus", "err unknown command: bogus"),
        (
            "gen size=10 rate=1000 secs=1",
            "err size=10: frames are 64..=",
        ),
        (
            "gen size=64 rate=-5 secs=1",
            "err rate=-5: not a non-negative number",
        ),
        ("gen size=64 rate=1000", "err secs= missing"),
        (
            "gen size=64 rate=1000 secs=0",
            "err a trial needs secs= or count=",
        ),
        (
            "gen size=64 burst=999 rate=1 secs=1",
            "err burst=999: 1..=256",
        ),
        ("gen size=64 rate", "err 'rate' is not key=value"),
        (
            "gen size=64 rate=1 secs=1e30",
            "err a trial lasts at most 3600 s",
        ),
        ("gen size=1e30 rate=1 secs=1", "err size="),
        (
            "gen size=64 rate=0.5 secs=1",
            "err rate=0.5: 0 (unthrottled) or 1..=",
        ),
        ("gen size=64 rate=0 secs=0 count=1e30", "err count="),
        (
            "reset trial=70000",
            "err trial=70000: a trial id is 1..=65535",
        ),
    ] {
        let r = gen.ask(cmd);
        assert!(r.starts_with(says), "'{cmd}' -> '{r}'");
    }
    assert!(fwd
        .ask("gen size=64 rate=1 secs=1")
        .starts_with("err unknown command"));
    // 20 000 frames of each size at 20 000 frames/s, every byte checked
    // when they come back with their MACs swapped. Limited by count, not
    // by time, a trial offers all of them however slowly this machine
    // runs the processes (a generator that fell behind catches up), and
    // the deep rings take the catching up.
    let mut forwarded = 0;
    for size in [64, 1514, 9000] {
        let r = gen.ask(&format!("gen size={size} rate=20000 secs=0 count=20000"));
        assert!(r.starts_with("ok "), "{r}");
        assert_eq!(field(&r, "offered"), 20_000, "{r}");
        assert_eq!(field(&r, "tx"), 20_000, "{r}");
        assert_eq!(field(&r, "rx"), 20_000, "{r}");
        for zero in ["lost", "reordered", "dup", "bad"] {
            assert_eq!(field(&r, zero), 0, "{zero}: {r}");
        }
        assert_eq!(field(&r, "kept_rate"), 1, "{r}");
        assert!(
            field(&r, "min") > 0 && field(&r, "max") >= field(&r, "min"),
            "{r}"
        );
        forwarded += 20_000;
    }
    // A paced trial never runs ahead of its rate (one burst of 32 at
    // most), stops at its count, and accounts for every frame it offered:
    // what the ring took came back, what it refused is lost.
    let r = gen.ask("gen size=64 rate=20000 secs=0.5");
    assert!(r.starts_with("ok "), "{r}");
    let (offered, tx, rx) = (field(&r, "offered"), field(&r, "tx"), field(&r, "rx"));
    assert!(offered > 0 && offered <= 10_000, "{r}");
    let tx_secs: f64 = r
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("tx_secs="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("tx_secs in {r}"));
    assert!(
        offered as f64 <= tx_secs * 20_000.0 + 32.0,
        "ran ahead: {r}"
    );
    assert!(tx <= offered && rx == tx, "{r}");
    assert_eq!(field(&r, "lost"), offered - rx, "{r}");
    forwarded += tx;
    // A count-limited, unthrottled trial sends exactly the count.
    let r = gen.ask("gen size=64 rate=0 secs=0 count=5000");
    assert_eq!(field(&r, "offered"), 5000, "{r}");
    forwarded += field(&r, "tx");
    let s = fwd.ask("stats");
    assert_eq!(
        field(&s, "ipackets"),
        field(&s, "opackets") + field(&s, "oerrors"),
        "{s}"
    );
    assert!(field(&s, "ipackets") >= forwarded, "{s}");
    // quit ends the generator; its leaving takes the link down, which
    // ends the forwarder too, whether or not it read its own quit first.
    gen.0.say("quit");
    assert_eq!(gen.rest(), ["ok"], "gen exits on quit");
    fwd.0.say("quit");
    let rest = fwd.rest();
    assert!(rest.is_empty() || rest == ["ok"], "fwd exits: {rest:?}");
}

#[test]
fn a_sink_counts_one_way_and_a_reset_starts_over() {
    let _alone = ONE_PAIR.lock().unwrap_or_else(|p| p.into_inner());
    let _w = Watchdog::new("agent sink", Duration::from_secs(120));
    let dir = RunDir::new("sink");
    let mut gen = Agent::start(dir.path(), "master", "gen", 0);
    let mut sink = Agent::start(dir.path(), "slave", "sink", 1);
    gen.line();
    sink.line();
    let r = gen.ask("gen size=128 rate=0 secs=0 count=30000");
    assert_eq!(field(&r, "rx"), 0, "nothing comes back: {r}");
    assert_eq!(field(&r, "lost"), 30_000, "{r}");
    let c = sink.counts_reaching(30_000);
    assert_eq!(field(&c, "unique"), 30_000, "{c}");
    assert_eq!(field(&c, "rx"), 30_000, "{c}");
    for zero in ["reordered", "dup", "bad"] {
        assert_eq!(field(&c, zero), 0, "{zero}: {c}");
    }
    assert_eq!(sink.ask("reset"), "ok");
    let c = sink.ask("counts");
    assert_eq!(field(&c, "rx"), 0, "{c}");
    let r = gen.ask("gen size=64 rate=0 secs=0 count=10000");
    assert_eq!(field(&sink.counts_reaching(10_000), "unique"), 10_000);
    // Told the next trial's id, a sink counts that trial's frames only: a
    // reset to a later id leaves the next trial's frames bad.
    let next = field(&r, "trial") + 1;
    assert_eq!(sink.ask(&format!("reset trial={next}")), "ok");
    let r = gen.ask("gen size=64 rate=0 secs=0 count=10000");
    let c = sink.counts_reaching(10_000);
    assert_eq!(field(&r, "trial"), next, "{r}");
    assert_eq!((field(&c, "unique"), field(&c, "bad")), (10_000, 0), "{c}");
    assert_eq!(sink.ask(&format!("reset trial={}", next + 5)), "ok");
    gen.ask("gen size=64 rate=0 secs=0 count=10000");
    let c = sink.counts_reaching(10_000);
    assert_eq!((field(&c, "unique"), field(&c, "bad")), (0, 10_000), "{c}");
}

/// Runs `vecring-bench host-container --forward --rate=20000 --seconds=1 --verify
/// --json` with deep rings and `args`; returns the JSON document and the
/// output it was read from (for messages).
fn forward_json(args: &[&str]) -> (serde_json::Value, String) {
    let out = Command::new(HARNESS)
        .args([
            "host-container",
            "--forward",
            "--rate=20000",
            "--seconds=1",
            "--verify",
            "--json",
        ])
        .args(SLOTS)
        .args(args)
        .output()
        .expect("run vecring-bench host-container --forward");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json = serde_json::from_str(&stdout).expect("one JSON document");
    (json, stdout)
}

/// The rows of a `--json` report.
fn rows(json: &serde_json::Value) -> &Vec<serde_json::Value> {
    json["rows"].as_array().expect("rows")
}

/// A JSON row's count `key`.
fn count(r: &serde_json::Value, key: &str) -> u64 {
    r[key].as_u64().unwrap_or_else(|| panic!("{key} in {r}"))
}

/// Checks that a row's first trial offered frames (at most its 1 s of
/// 20 000 frames/s: a loaded machine can leave the generator behind) and
/// every one reached its final receiver once, in order and intact, and
/// was timed there; returns how many it offered.
fn assert_every_frame(r: &serde_json::Value) -> u64 {
    assert!(r["error"].is_null(), "{r}");
    let offered = count(r, "offered");
    assert!(offered > 0 && offered <= 20_000, "{r}");
    for zero in ["lost", "reordered", "duplicated", "bad"] {
        assert_eq!(count(r, zero), 0, "{zero}: {r}");
    }
    assert_eq!(r["first_trial_latency"]["samples"], offered, "{r}");
    offered
}

#[test]
fn forward_bench_in_an_unprivileged_container_returns_every_frame_intact_and_in_order() {
    if !is_root() {
        eprintln!("skipped: needs root (scripts/test.sh runs it as root)");
        return;
    }
    let _alone = ONE_PAIR.lock().unwrap_or_else(|p| p.into_inner());
    let _w = Watchdog::new("forward bench in LXC", Duration::from_secs(300));
    let (json, stdout) = forward_json(&[
        "--container=unprivileged",
        "--directions=both,to-container,from-container",
        "--sizes=64,1514,9000",
        "--trial-seconds=0",
    ]);
    assert_eq!(json["schema"], "vecring-bench-forward");
    assert!(
        json["link_container"]
            .as_str()
            .unwrap()
            .contains("unprivileged LXC"),
        "{}",
        json["link_container"]
    );
    let rows = rows(&json);
    assert_eq!(rows.len(), 9, "3 directions x 3 sizes: {stdout}");
    for r in rows {
        let offered = assert_every_frame(r);
        let n = |k: &str| count(r, k);
        match r["direction"].as_str().unwrap() {
            "both" => {
                assert_eq!(n("gen_rx"), offered, "{r}");
                assert_eq!(n("container_rx"), offered, "{r}");
                assert_eq!(n("container_tx"), offered, "{r}");
            }
            "to-ctr" => assert_eq!(n("container_rx"), offered, "{r}"),
            "from-ctr" => assert_eq!(n("gen_tx"), offered, "{r}"),
            d => panic!("direction {d}"),
        }
    }
}

/// The same harness on DPDK ports: `vecring-dpdk-agent` on the host, testpmd
/// (macswap) or a second `vecring-dpdk-agent` (sink) in a privileged container,
/// on eth_vecring and on net_memif: every frame back, every byte checked.
/// Needs DPDK, hugepages, the installed driver and `vecring-dpdk-agent` beside
/// the tool (`scripts/test.sh` builds and installs both).
#[test]
fn forward_bench_over_dpdk_ports_returns_every_frame_intact_and_in_order() {
    if !is_root() {
        eprintln!("skipped: needs root (scripts/test.sh runs it as root)");
        return;
    }
    let _alone = ONE_PAIR.lock().unwrap_or_else(|p| p.into_inner());
    let _w = Watchdog::new("forward bench over DPDK", Duration::from_secs(600));
    let pmd = std::env::var("VECRING_PMD_SO")
        .unwrap_or_else(|_| "/usr/local/lib/vecring/librte_net_vecring.so".into());
    let pmd = format!("--pmd={pmd}");
    // With the searches: at this rate and depth every trial passes, so
    // each search ends at its ceiling, re-verified, and the latency levels
    // follow.
    let (json, stdout) = forward_json(&[
        // Both ways at once: each port's receive and transmit paths, and
        // the container's forwarding, under one search (one way only
        // is the unprivileged container test's).
        "--ports=vecring,memif",
        "--directions=both",
        "--sizes=64,1514",
        "--trial-seconds=2",
        "--verify-seconds=2",
        &pmd,
    ]);
    let rows = rows(&json);
    assert_eq!(rows.len(), 4, "2 ports x 2 sizes: {stdout}");
    for r in rows {
        let offered = assert_every_frame(r);
        assert_eq!(count(r, "container_rx"), offered, "{r}");
        // Each search ends with a rate it re-verified, at most its
        // ceiling (on a quiet machine the ceiling itself: every trial
        // passes at this rate and depth).
        for key in ["zero_loss_pps", "low_loss_pps"] {
            let pps = r[key].as_f64().unwrap_or_else(|| panic!("{key} in {r}"));
            assert!(pps > 0.0 && pps <= 20_000.0, "{key}: {r}");
        }
        let levels: Vec<u64> = r["latency"]
            .as_array()
            .expect("latency levels")
            .iter()
            .map(|l| l["level_percent"].as_u64().unwrap())
            .collect();
        assert_eq!(levels, [50, 90, 100], "{r}");
    }
    let ports: Vec<&str> = rows.iter().map(|r| r["port"].as_str().unwrap()).collect();
    assert!(
        ports.contains(&"eth_vecring") && ports.contains(&"net_memif"),
        "{ports:?}"
    );
}

#[test]
fn forward_bench_refuses_short_trials_and_bad_sizes() {
    for (args, says) in [
        (
            &["--trial-seconds=1"][..],
            "the forwarding searches need trials of at least 2 s",
        ),
        (
            &["--sizes=63"][..],
            "frame size 63: the forwarding frames are 64..=9216 bytes",
        ),
        (
            &["--rate=-1"][..],
            "--rate -1: must be a non-negative number",
        ),
        (
            &["--ports=memif", "--dpdk-agent=/nonexistent/dpdk-agent"][..],
            "/nonexistent/dpdk-agent missing",
        ),
        (&["--slots=1000"][..], "--slots 1000:"),
        (&["--seconds=1e30"][..], "a trial lasts at most 3600 s"),
        (
            &["--seconds=nan"][..],
            "--rounds and --seconds must be positive",
        ),
        (&["--trial-seconds=nan"][..], "--trial-seconds NaN"),
        (
            &["--master-cpu=1", "--slave-cpu=1"][..],
            "CPU 1 for both sides",
        ),
        (
            &[
                "--container=docker",
                "--ports=memif",
                "--dpdk-agent=/bin/true",
            ][..],
            "--ports memif with --container docker: the far side's image holds eth_vecring only",
        ),
        (
            &["--forward-mode=io"][..],
            "--forward-mode io: on link ports the container's side is vecring-bench's agent",
        ),
        (
            &["--docker-image=vecring-testpmd"][..],
            "--docker-image is for --container docker",
        ),
    ] {
        let out = Command::new(HARNESS)
            .args(["host-container", "--forward"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{args:?}: {err}"
        );
    }
}
