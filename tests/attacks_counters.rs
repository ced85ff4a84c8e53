//! A slave that forges what the root master reports: it reads nothing
//! while the master (the `vecring` tool) fills the ring towards it, then
//! rewrites every descriptor of that ring to a length of one byte and
//! leaves. The master counts the frames the slave never read from its
//! descriptors in shared memory; the count it reports (`vecring stats`)
//! must stay what it knows it sent: every frame of the generation, since
//! none was read, and never more. Before the bound, a ring of 32,768
//! slots full of 1365 frames of 1514 bytes (24 slots each) read as 32,760
//! frames lost. The same attack against eth_vecring, read through
//! testpmd's xstats and `dpdk-proc-info`, is in `tests/dpdk_tools.rs`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_tests::hostile::{
    as_nobody, attacker, mkdir, scratch, tool, wait_for_path, Proc, NOBODY,
};
use vecring_tests::{require_root, Watchdog};

/// The link's entry of `vecring stats --json` under `run`.
fn stats(run: &Path) -> Value {
    let out = Command::new(vecring_tests::built_binary("vecring"))
        .args(["stats", "--json", "--run-dir"])
        .arg(run)
        .args(["dom", "l0"])
        .output()
        .expect("vecring stats");
    assert!(out.status.success(), "vecring stats: {out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
    doc["links"][0].clone()
}

fn num(v: &Value, path: &[&str]) -> u64 {
    let mut v = v;
    for k in path {
        v = &v[*k];
    }
    v.as_u64().unwrap_or_else(|| panic!("no {path:?} in {v}"))
}

#[test]
fn a_slave_rewriting_descriptors_cannot_inflate_the_lost_count() {
    require_root!();
    let _w = Watchdog::new("forged lost count", Duration::from_secs(120));
    let root: PathBuf = scratch("forge-lost");
    let run = root.join("run");
    mkdir(&run, 0o755);
    let owner = format!("{NOBODY}:{NOBODY}");
    let mut cmd = tool();
    cmd.args([
        "txonly", "--role", "master", "--domain", "dom", "--link", "l0",
    ])
    .args(["--size", "1514", "--seconds", "60", "--drain", "0"])
    .args([
        "--hugepages",
        "never",
        "--owner",
        &owner,
        "--up-timeout",
        "60",
    ])
    .arg("--run-dir")
    .arg(&run);
    let mut master = Proc::spawn("master", &mut cmd);
    assert!(
        wait_for_path(&run.join("dom/l0.sock"), Duration::from_secs(10)),
        "the master does not listen: {}",
        master.output()
    );
    let mut slave = Proc::spawn(
        "forging slave",
        as_nobody(&mut attacker("forge-lost")).args([
            &format!("run-dir={}", run.display()),
            "domain=dom",
            "link=l0",
        ]),
    );
    slave.line("up", Duration::from_secs(30)).unwrap();
    // The ring fills (the slave reads nothing) and the count stops.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = u64::MAX;
    let sent = loop {
        let s = stats(&run);
        let frames = num(&s, &["tx", "frames"]);
        if num(&s, &["tx", "ring_full"]) > 0 && frames == last && frames > 0 {
            break frames;
        }
        last = frames;
        assert!(Instant::now() < deadline, "the ring never filled: {s}");
        std::thread::sleep(Duration::from_millis(200));
    };
    slave.say("forge");
    let forged = slave.line("forged", Duration::from_secs(10)).unwrap();
    assert!(
        slave.wait(Duration::from_secs(10)).is_some(),
        "the slave did not leave"
    );
    // The link goes down on the master's control thread; the frames left
    // in the ring are counted lost by its sender thread when it next
    // sends and finds the generation gone, a moment later.
    let deadline = Instant::now() + Duration::from_secs(30);
    let s = loop {
        let s = stats(&run);
        if num(&s, &["link_downs"]) >= 1 && num(&s, &["tx", "lost_on_link_down"]) > 0 {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the link never went down, or its lost frames were never counted: {s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let lost = num(&s, &["tx", "lost_on_link_down"]);
    eprintln!("sent {sent}, reported lost {lost} ({forged})");
    assert_eq!(
        num(&s, &["tx", "frames"]),
        sent,
        "nothing was sent after the ring filled"
    );
    // Honest: every frame sent was left unread, so all were lost; forged
    // (`forged`), the descriptors claim one frame per slot.
    assert_eq!(
        lost, sent,
        "the master reports {lost} frames lost of {sent} sent after the slave's {forged}"
    );
    master.signal(libc::SIGTERM);
    let _ = master.wait(Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&root);
}
