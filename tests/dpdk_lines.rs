//! A host and a container on different DPDK lines: a link between two
//! `dpdk-testpmd`s of two DPDK releases, each with the eth_vecring built
//! for its own line, carries every frame intact both ways. The wire format
//! (ring and handshake) is vecring-core's and does not depend on DPDK.
//!
//! The frames are checked by this Rust program, at the end of a chain:
//!
//! ```text
//! Rust (master) ── link "rust" ── testpmd A port 0   (io: port 0 <-> port 1)
//!                                 testpmd A port 1 ── link "cross" ── testpmd B port 0 (io: back out of port 0)
//! ```
//!
//! A frame goes Rust → A → B → A → Rust: it crosses the link between the two
//! lines once in each direction (A is that link's master, B its slave), and
//! the Rust end checks that every frame comes back complete, intact and in
//! order, mixed sizes up to 9216 bytes with every eighth one 9000 bytes
//! (multi-segment mbufs on both sides); both testpmds' counters agree.
//!
//! Env: `VECRING_DPDK_A` and `VECRING_DPDK_B`, the two DPDK install
//! prefixes (`scripts/dpdk.sh VERSION` prints one; `/usr` is the
//! distribution's), each with its driver installed by
//! `scripts/build-pmd.sh`. `tests/dpdk/lines.sh` runs it for each pair of
//! lines and both roles. Needs root and hugepages, so it is `#[ignore]`d.

use std::path::PathBuf;
use std::time::Duration;
use vecring_core::Role;
use vecring_tests::testpmd::{echo, stat, Env, Testpmd};
use vecring_tests::Watchdog;

/// The install prefix named by the variable `var`.
fn prefix(var: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} must name a DPDK install prefix (scripts/dpdk.sh)"))
}

/// The io-forwarding options both testpmds use: small mbufs (scatter RX
/// into chains, multi-segment TX), every frame up to 9216 bytes, nothing
/// flushed at `start`.
const IO: &[&str] = &[
    "--forward-mode=io",
    "--no-flush-rx",
    "--enable-scatter",
    "--max-pkt-len=9216",
    "--mbuf-size=1152",
];

#[test]
#[ignore = "needs root, two DPDK lines and their drivers: run by tests/dpdk/lines.sh"]
fn frames_cross_two_dpdk_lines_intact_both_ways() {
    let _w = Watchdog::new("dpdk lines", Duration::from_secs(150));
    let test = "lines";
    let base = Env::new(test);
    let (a, b) = (
        base.with_dpdk(&prefix("VECRING_DPDK_A")),
        base.with_dpdk(&prefix("VECRING_DPDK_B")),
    );
    println!(
        "lines: A {} ({}), B {} ({})",
        a.testpmd,
        a.so.display(),
        b.testpmd,
        b.so.display()
    );
    let link = base.open("rust", Role::Master);
    // B first: the slave of "cross" waits for its master.
    let mut pmd_b = Testpmd::start(&b, "line_b", 1, &b.vdev("cross", false), IO);
    let rust_port = a.vdev("rust", false);
    let cross_port = a.vdev("cross", true);
    let mut pmd_a = Testpmd::start_ports(&a, "line_a", 0, &[&rust_port, &cross_port], IO);
    pmd_a.wait_link_up(&link);
    let both_up = |l: &str| l.contains("VECRING: ") && l.contains(": link up (");
    pmd_a.wait_for("link up on both ports", 2, both_up);
    pmd_b.wait_for("link up", 1, both_up);
    pmd_a.wait_prompt();
    pmd_b.wait_prompt();
    pmd_b.cmd("start");
    pmd_a.cmd("start");

    let frames = 20_000;
    let bytes = echo(&link, frames, &|| {
        format!("{}\n{}", pmd_a.tail(), pmd_b.tail())
    });
    println!(
        "lines: {frames} frames ({bytes} bytes) crossed both lines both ways intact and in order"
    );

    let (drop_a, _) = pmd_a.stop();
    let (drop_b, _) = pmd_b.stop();
    assert_eq!((drop_a, drop_b), (0, 0), "forward drops");
    // B's only port saw every frame once each way.
    let xb = pmd_b.xstats();
    for (k, want) in [
        ("rx_good_packets", frames),
        ("tx_good_packets", frames),
        ("rx_good_bytes", bytes),
        ("tx_good_bytes", bytes),
        ("rx_errors", 0),
        ("tx_errors", 0),
        ("tx_ring_full", 0),
    ] {
        assert_eq!(stat(&xb, k), want, "line B xstat {k}\n{}", pmd_b.tail());
    }
    // A's port 0 (the Rust side) counted the same.
    let xa = pmd_a.xstats();
    for (k, want) in [
        ("rx_good_packets", frames),
        ("tx_good_packets", frames),
        ("rx_good_bytes", bytes),
        ("tx_good_bytes", bytes),
        ("rx_errors", 0),
        ("tx_errors", 0),
    ] {
        assert_eq!(stat(&xa, k), want, "line A xstat {k}\n{}", pmd_a.tail());
    }
    assert!(pmd_a.quit().success(), "testpmd A exit");
    assert!(pmd_b.quit().success(), "testpmd B exit");
    let _ = std::fs::remove_dir_all(&base.work);
}
