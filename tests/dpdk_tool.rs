//! The `vecring` tool against a DPDK port: `vecring txonly`'s frames are
//! addressed, by default, to the MAC the driver gives the other end of the
//! link, so a testpmd port with promiscuous mode off takes every one of
//! them; frames the tool is told to send elsewhere (`--dst-mac`) are all
//! filtered (`rx_filtered_drops`).
//!
//! Needs root, `dpdk-testpmd` and the built PMD, so it is `#[ignore]`d here
//! and run by `tests/dpdk/run.sh`:
//!
//! ```sh
//! VECRING_PMD_SO=$PWD/target/release/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_tool -- --ignored --test-threads=1
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
