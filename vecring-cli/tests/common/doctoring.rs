//! What the container doctor tests share: `prepare`'s output, a master
//! waiting for a container's slave, and doctor's findings for a
//! container.

use super::containers::{bounded, show};
use super::{Proc, TOOL};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `vecring doctor --json --domain web --container NAME` with `envs`: its
/// findings for the container (the `container` and `dpdk-container`
/// checks).
pub fn doctor(run: &Path, name: &str, envs: &[(&str, &str)]) -> Vec<Value> {
    let out = bounded(
        Command::new(TOOL)
            .args(["doctor", "--json", "--domain", "web", "--container", name])
            .arg("--run-dir")
            .arg(run)
            .envs(envs.iter().copied()),
        Duration::from_secs(60),
    );
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "container" || f["check"] == "dpdk-container")
        .cloned()
        .collect()
}

/// `vecring prepare --domain web --runtime RUNTIME ARGS`: (the run
/// options, the master's --owner).
pub fn prepare(run: &Path, runtime: &str, args: &[&str]) -> (String, String) {
    let out = bounded(
        Command::new(TOOL)
            .args([
                "prepare",
                "--domain",
                "web",
                "--runtime",
                runtime,
                "--run-dir",
            ])
            .arg(run)
            .args(args),
        Duration::from_secs(20),
    );
    assert!(out.status.success(), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let owner = lines[2]
        .split("--owner ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no --owner: {text}"));
    (lines[1].to_string(), owner.to_string())
}

/// A master of `web/<link>` waiting for its slave, with `--owner owner`.
pub fn master(run: &Path, link: &str, owner: &str) -> Proc {
    let child = Command::new(TOOL)
        .args([
            "rxonly", "--role", "master", "--domain", "web", "--link", link,
        ])
        .args([
            "--owner",
            owner,
            "--up-timeout",
            "600",
            "--interval",
            "0",
            "-q",
        ])
        .arg("--run-dir")
        .arg(run)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sock = run.join("web").join(format!("{link}.sock"));
    let start = Instant::now();
    while !sock.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no {}",
            sock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Proc(child)
}

/// The frames the master received (its `rx FRAMES BYTES` answer), then
/// ends it.
pub fn received(mut m: Proc) -> u64 {
    let mut stdin = m.0.stdin.take().unwrap();
    stdin.write_all(b"\n").unwrap();
    drop(stdin);
    let child: &mut Child = &mut m.0;
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "master still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    out.lines()
        .find_map(|l| {
            l.strip_prefix("rx ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no rx line: {out}"))
}

pub fn fails(f: &[Value]) -> Vec<&Value> {
    f.iter().filter(|f| f["level"] == "fail").collect()
}

/// The one failure whose finding contains `what`.
pub fn the_failure<'a>(f: &'a [Value], what: &str) -> &'a Value {
    let bad = fails(f);
    assert_eq!(bad.len(), 1, "one failure expected ({what}): {f:#?}");
    assert!(
        bad[0]["finding"].as_str().unwrap().contains(what),
        "{what}: {f:#?}"
    );
    bad[0]
}

/// The options a "recreate it ... adding: OPTIONS" fix names.
pub fn added(fix: &Value) -> String {
    let fix = fix["fix"].as_str().unwrap();
    fix.split_once("adding: ")
        .unwrap_or_else(|| panic!("not a recreate fix: {fix}"))
        .1
        .to_string()
}

pub fn has(f: &[Value], level: &str, what: &str) -> bool {
    f.iter()
        .any(|x| x["level"] == level && x["finding"].as_str().unwrap().contains(what))
}
