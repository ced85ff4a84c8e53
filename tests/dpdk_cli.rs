//! The `vecring` tool against a DPDK port: `vecring txonly`'s frames are
//! addressed, by default, to the MAC the driver gives the other end of the
//! link, so a testpmd port with promiscuous mode off takes every one of
//! them; frames the tool is told to send elsewhere (`--dst-mac`) are all
//! filtered (`rx_filtered_drops`). `vecring stats` of a port's link counts
//! every frame the port sent, its last burst too.
//!
//! Needs root, `dpdk-testpmd` and the built PMD, so it is `#[ignore]`d here
//! and run by `tests/dpdk/run.sh`:
//!
//! ```sh
//! VECRING_PMD_SO=$PWD/target/release/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_cli -- --ignored --test-threads=1
//! ```

use std::process::Command;
use std::time::Duration;
use vecring_tests::testpmd::{stat, Env, Testpmd};
use vecring_tests::{built_binary, Watchdog};

/// Runs `vecring txonly` as the slave of link interop/`link` for a moment;
/// returns the frames the peer took.
fn txonly(env: &Env, link: &str, extra: &[&str], t: &Testpmd) -> u64 {
    let out = Command::new(built_binary("vecring"))
        .args(["txonly", "--domain", "interop", "--link", link, "--run-dir"])
        .arg(&env.run)
        .args([
            "--seconds",
            "0.3",
            "--up-timeout",
            "20",
            "--hugepages",
            "never",
        ])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "vecring txonly {extra:?}: {}\n{text}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        t.tail()
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("txonly: sent "))
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    let at = line.find("taken by the peer ").unwrap() + "taken by the peer ".len();
    line[at..]
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{line}"))
}

#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn txonly_frames_pass_a_filtering_port_unless_sent_elsewhere() {
    let _w = Watchdog::new("tool frames", Duration::from_secs(120));
    let env = Env::new("toolmac");
    // No mac= devarg: the port has the driver's default address.
    let vdev = format!(
        "domain=interop,link=tm,run_dir={},master=true",
        env.run.display()
    );
    let mut t = Testpmd::start(&env, "toolmac", 0, &vdev, &["--forward-mode=rxonly"]);
    t.wait_prompt();
    t.cmd("set promisc 0 off");
    t.cmd("start");
    let taken = txonly(&env, "tm", &[], &t);
    // The next slave may come once the port has seen this one leave.
    t.wait_for("link down", 1, |l| l.contains("eth_vecring0: link down"));
    let elsewhere = txonly(&env, "tm", &["--dst-mac", "02:00:00:00:00:08"], &t);
    t.stop();
    let x = t.xstats();
    assert!(taken > 0 && elsewhere > 0, "{taken}, {elsewhere}");
    assert_eq!(stat(&x, "rx_good_packets"), taken, "{x:?}\n{}", t.tail());
    assert_eq!(stat(&x, "rx_filtered_drops"), elsewhere, "{x:?}");
    assert!(t.quit().success());
}

/// `vecring stats` of the link under a testpmd port (master, txonly, to a
/// `vecring rxonly` slave), read once testpmd has stopped: its frames sent
/// are exactly the port's `tx_good_packets`. The driver stores the ring's
/// totals after each burst, so the last burst before a stop is there too.
#[test]
#[ignore = "needs root and dpdk-testpmd: run tests/dpdk/run.sh"]
fn vecring_stats_of_a_port_count_its_last_burst() {
    let _w = Watchdog::new("stats of a port", Duration::from_secs(120));
    let env = Env::new("toolstats");
    let vdev = format!(
        "domain=interop,link=ts,run_dir={},master=true",
        env.run.display()
    );
    let mut t = Testpmd::start(&env, "toolstats", 0, &vdev, &["--forward-mode=txonly"]);
    t.wait_prompt();
    let mut rx = Command::new(built_binary("vecring"))
        .args(["rxonly", "--domain", "interop", "--link", "ts", "--run-dir"])
        .arg(&env.run)
        .args(["--hugepages", "never", "--up-timeout", "20"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    t.wait_for("link up", 1, |l| l.contains("eth_vecring0: link up"));
    t.cmd("start");
    std::thread::sleep(Duration::from_millis(300));
    t.stop();
    let sent = stat(&t.xstats(), "tx_good_packets");
    let out = Command::new(built_binary("vecring"))
        .args(["stats", "--json", "--run-dir"])
        .arg(&env.run)
        .args(["interop", "ts"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "vecring stats: {out:?}");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("stats JSON");
    let frames = doc["links"][0]["tx"]["frames"].as_u64();
    drop(rx.stdin.take());
    assert!(rx.wait().unwrap().success());
    assert!(sent > 0, "{}", t.tail());
    assert_eq!(frames, Some(sent), "{text}\n{}", t.tail());
    assert!(t.quit().success());
}
