//! Interoperation of the DPDK driver and `vecring-core`: a real
//! `dpdk-testpmd` (with `librte_net_vecring.so`) on one end of a link, this
//! Rust program on the other, in both roles, with every frame's bytes
//! checked on the Rust side.
//!
//! - testpmd `txonly` → Rust: testpmd's Ethernet/IPv4/UDP frame (headers
//!   as DPDK 22.11's `app/test-pmd/txonly.c` writes them, every payload byte
//!   accounted for) arrives intact, exactly as many times as testpmd
//!   counted, including 9000-byte frames sent as mbuf chains of 5 and 6
//!   segments. testpmd as master with `hugepages=require`: the region sits
//!   in 2 MiB pages in both processes (their `smaps`), and the frames pass
//!   through it, counted exactly.
//! - Rust → testpmd `io` → Rust: self-checking frames (`pattern`) of mixed
//!   sizes up to 9216 bytes, every eighth one 9000 bytes, go through testpmd
//!   with small mbufs (scatter RX into chains, multi-segment TX back) and come
//!   back complete, intact and in order; testpmd's counters agree. Again
//!   with testpmd's port in zero-copy receive mode (`zero_copy=true`).
//!
//! These tests need root, `dpdk-testpmd`, the built PMD and hugepages (or
//! `VECRING_TEST_NO_HUGE=1`), so they are `#[ignore]`d here and run by
//! `tests/dpdk/run.sh`:
//!
//! ```sh
//! VECRING_PMD_SO=$PWD/target/release/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_interop -- --ignored --test-threads=1
//! ```
//!
//! Env: see [`vecring_tests::testpmd`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::{LinkRecvError, Role};
use vecring_tests::testpmd::{echo, mac_str, stat, Env, Testpmd, PMD_MAC, STALL};
use vecring_tests::{no_huge_allowed, region_pages, skip_without_hugepages, Watchdog};

/// The destination testpmd's txonly frames are given (`--eth-peer`).
const PEER_MAC: [u8; 6] = [0x02, 0xec, 0xf4, 0x00, 0x00, 0x02];

/// The frame DPDK 22.11's testpmd `txonly` sends: Ethernet (peer MAC, port
/// MAC, IPv4), IPv4 (no options, id 0, TTL 64, UDP, 198.18.0.1 →
/// 198.18.0.2, header checksum), UDP (port 9 → 9, no checksum). Returns
/// the 42 header bytes testpmd writes; the payload is whatever its mbufs
/// hold (testpmd never writes it), so only its consistency is checked.
fn txonly_headers(len: usize) -> Vec<u8> {
    let mut h = Vec::with_capacity(42);
    h.extend_from_slice(&PEER_MAC);
    h.extend_from_slice(&PMD_MAC);
    h.extend_from_slice(&[0x08, 0x00]);
    let ip_len = (len - 14) as u16;
    let mut ip = vec![0x45, 0x00];
    ip.extend_from_slice(&ip_len.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2]);
    let sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    let cksum = !(sum as u16);
    ip[10..12].copy_from_slice(&cksum.to_be_bytes());
    h.extend_from_slice(&ip);
    h.extend_from_slice(&[0, 9, 0, 9]);
    h.extend_from_slice(&((len - 34) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h
}

/// Checks one frame of testpmd's txonly made of mbuf segments of `segs`
/// bytes: exactly the expected headers, then the payload testpmd left in
/// its mbufs. testpmd never writes the payload, and its mbufs (fresh,
/// zeroed memory) are only ever written with these headers at the start of
/// a packet's first segment; since an mbuf that once was a first segment
/// may later be a packet's second or later segment, each later segment
/// holds zeros, or the headers (cut to its length) and then zeros. Returns
/// whether the whole payload was zero.
fn check_txonly_frame(f: &[u8], segs: &[usize], headers: &[u8]) -> Result<bool, String> {
    let len: usize = segs.iter().sum();
    if f.len() != len {
        return Err(format!("{} bytes, want {len}", f.len()));
    }
    if f[..42] != *headers {
        let i = headers.iter().zip(f).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!(
            "headers differ from testpmd's txonly headers at byte {i}:\n got  {:02x?}\n want {:02x?}",
            &f[..42],
            headers
        ));
    }
    let mut zero = true;
    let mut at = 0;
    for (k, &l) in segs.iter().enumerate() {
        let seg = &f[at..at + l];
        // The part of the segment that must be zero.
        let rest = if k == 0 {
            42
        } else if seg.iter().all(|&b| b == 0) {
            l
        } else {
            let h = l.min(42);
            if seg[..h] != headers[..h] {
                return Err(format!(
                    "segment {k} (bytes {at}..{}) is neither zeros nor headers: starts {:02x?}",
                    at + l,
                    &seg[..h]
                ));
            }
            zero = false;
            h
        };
        if let Some(i) = seg[rest..].iter().position(|&b| b != 0) {
            return Err(format!(
                "byte {} (segment {k}) is {:#04x}: testpmd's payload altered",
                at + rest + i,
                seg[rest + i]
            ));
        }
        at += l;
    }
    Ok(zero)
}

/// What the Rust receiver saw.
#[derive(Debug, Default)]
struct Seen {
    frames: u64,
    error: Option<String>,
    /// Frames whose payload was all zero (no stale headers in it).
    zero_payload: u64,
}

/// Receives testpmd txonly frames until `stop`, checking every byte of each
/// (see [`check_txonly_frame`]).
fn check_txonly_frames(
    mut rx: vecring_core::Receiver,
    segs: &[usize],
    count: &AtomicU64,
    stop: &AtomicBool,
) -> Seen {
    let len: usize = segs.iter().sum();
    let headers = txonly_headers(len);
    let mut buf = vec![0u8; 9216];
    let mut seen = Seen::default();
    loop {
        match rx.recv(&mut buf) {
            Ok(n) => {
                match check_txonly_frame(&buf[..n], segs, &headers) {
                    Ok(zero) => seen.zero_payload += u64::from(zero),
                    Err(e) => {
                        seen.error = Some(format!("frame {}: {e}", seen.frames));
                        return seen;
                    }
                }
                seen.frames += 1;
                count.store(seen.frames, Ordering::Relaxed);
            }
            Err(LinkRecvError::Empty) | Err(LinkRecvError::NoPeer) => {
                if stop.load(Ordering::Relaxed) {
                    return seen;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            Err(e) => {
                seen.error = Some(format!("receive failed: {e}"));
                return seen;
            }
        }
    }
}

/// testpmd (the other role) sends txonly frames of `segs` (mbuf segment
/// lengths) for 2 s; the Rust end receives them all, each byte checked, and
/// exactly as many as testpmd sent. With `hugepages`, testpmd (the master)
/// creates the region with `hugepages=require`, and the region's mappings
/// in testpmd and in this process must sit in 2 MiB pages.
fn txonly_into_rust(test: &str, rust_role: Role, segs: &[usize], hugepages: bool) {
    let _w = Watchdog::new("dpdk interop txonly", Duration::from_secs(120));
    let env = Env::new(test);
    let len: usize = segs.iter().sum();
    let link = env.open(test, rust_role);
    let txpkts = segs
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut vdev = env.vdev(test, rust_role == Role::Slave);
    // Without hugepages (on purpose) the master would fail to start.
    let huge = hugepages && !no_huge_allowed();
    if hugepages && !huge {
        skip_without_hugepages(test, "the region in hugepages is not checked");
    }
    if huge {
        assert_eq!(rust_role, Role::Slave, "only a master creates the region");
        vdev.push_str(",hugepages=require");
    }
    let mut pmd = Testpmd::start(
        &env,
        "txonly",
        0,
        &vdev,
        &[
            "--forward-mode=txonly",
            &format!("--txpkts={txpkts}"),
            "--max-pkt-len=9216",
            &format!("--eth-peer=0,{}", mac_str(&PEER_MAC)),
        ],
    );
    pmd.wait_link_up(&link);
    pmd.wait_prompt();
    let rx = link.receiver().unwrap();
    // What backs the region, as the kernel says: testpmd created it, this
    // process mapped it at the handshake.
    let pages = if huge {
        let theirs = region_pages(&pmd.pid().to_string());
        // Ours of the same memfds (other tests may have regions here too).
        let ours: Vec<_> = region_pages("self")
            .into_iter()
            .filter(|(i, _)| theirs.iter().any(|(t, _)| t == i))
            .collect();
        assert!(
            !theirs.is_empty() && theirs.iter().all(|&(_, k)| k == 2048),
            "testpmd's mappings of its region (hugepages=require), (inode, KiB pages): {theirs:?}\n{}",
            pmd.tail()
        );
        assert!(
            !ours.is_empty() && ours.iter().all(|&(_, k)| k == 2048),
            "this process's mappings of testpmd's region, (inode, KiB pages): {ours:?}"
        );
        format!(
            "; the region in 2 MiB pages ({} mapping(s) in testpmd, {} here)",
            theirs.len(),
            ours.len()
        )
    } else {
        String::new()
    };
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (c, s) = (Arc::clone(&count), Arc::clone(&stop));
    let segs_owned = segs.to_vec();
    let receiver = std::thread::spawn(move || check_txonly_frames(rx, &segs_owned, &c, &s));

    pmd.cmd("start");
    std::thread::sleep(Duration::from_secs(2));
    let (_, tx_dropped) = pmd.stop();
    let x = pmd.xstats();
    let sent = stat(&x, "tx_good_packets");
    // Let the receiver drain what testpmd sent.
    let deadline = Instant::now() + STALL;
    while count.load(Ordering::Relaxed) < sent
        && Instant::now() < deadline
        && !receiver.is_finished()
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let seen = receiver.join().expect("receiver thread");
    println!(
        "{test}: testpmd sent {sent} frames of {len} bytes in {} segment(s) ({tx_dropped} not taken by the full ring, \
         tx_ring_full {}); Rust received {} intact ({} with an all-zero payload){pages}",
        segs.len(),
        stat(&x, "tx_ring_full"),
        seen.frames,
        seen.zero_payload
    );
    assert!(
        seen.error.is_none(),
        "{}\n{}",
        seen.error.unwrap(),
        pmd.tail()
    );
    assert!(sent > 0, "testpmd sent nothing\n{}", pmd.tail());
    assert_eq!(
        seen.frames,
        sent,
        "Rust received {} of {sent} frames\n{}",
        seen.frames,
        pmd.tail()
    );
    assert_eq!(stat(&x, "tx_good_bytes"), sent * len as u64);
    assert_eq!(stat(&x, "tx_errors"), 0);
    assert_eq!(stat(&x, "tx_too_large_drops"), 0);
    // txonly does not retry: what the full ring did not take was freed and
    // counted on both sides.
    assert_eq!(stat(&x, "tx_ring_full"), tx_dropped);
    let st = pmd.quit();
    assert!(st.success(), "testpmd exit {st}");
    let _ = std::fs::remove_dir_all(&env.work);
}

/// The Rust end sends `frames` self-checking frames; testpmd (the other
/// role) in `io` mode, with 1 KiB mbufs (scatter RX, multi-segment TX),
/// sends each back unchanged; the Rust end checks every returned frame's
/// bytes and order.
/// With `zero_copy`, testpmd's port receives in zero-copy mode: frames of
/// 512 bytes or more (unless they wrap around the ring's end) are attached
/// to the ring slots, not copied,
/// until testpmd frees them after sending them back. With `hold_back`,
/// testpmd's port holds back small bursts (`hold_back=true`).
fn echo_through_testpmd(
    test: &str,
    rust_role: Role,
    frames: u64,
    zero_copy: bool,
    hold_back: bool,
) {
    let _w = Watchdog::new("dpdk interop echo", Duration::from_secs(120));
    let env = Env::new(test);
    let link = env.open(test, rust_role);
    let mut pmd = Testpmd::start(
        &env,
        "io",
        0,
        &format!(
            "{},zero_copy={zero_copy},hold_back={hold_back}",
            env.vdev(test, rust_role == Role::Slave)
        ),
        &[
            "--forward-mode=io",
            // `start` would otherwise drain (and lose) frames that arrive
            // before forwarding begins.
            "--no-flush-rx",
            "--enable-scatter",
            "--max-pkt-len=9216",
            "--mbuf-size=1152",
        ],
    );
    pmd.wait_link_up(&link);
    pmd.wait_prompt();
    assert_eq!(
        pmd.count(|l| l.contains("eth_vecring0: zero-copy receive:")),
        usize::from(zero_copy),
        "zero-copy mode as asked\n{}",
        pmd.tail()
    );
    assert_eq!(
        pmd.count(|l| l.contains("eth_vecring0: rx hold-back:")),
        usize::from(hold_back),
        "hold-back as asked\n{}",
        pmd.tail()
    );
    pmd.cmd("start");
    let bytes = echo(&link, frames, &|| pmd.tail());
    let (rx_dropped, tx_dropped) = pmd.stop();
    let x = pmd.xstats();
    println!(
        "{test}: {frames} frames ({bytes} bytes, 16..=9216 bytes, every 8th 9000) went through testpmd io \
         (zero_copy={zero_copy}, hold_back={hold_back}) and came back intact and in order"
    );
    assert_eq!(
        (rx_dropped, tx_dropped),
        (0, 0),
        "testpmd forward drops\n{}",
        pmd.tail()
    );
    for (k, want) in [
        ("rx_good_packets", frames),
        ("tx_good_packets", frames),
        ("rx_good_bytes", bytes),
        ("tx_good_bytes", bytes),
        ("rx_errors", 0),
        ("tx_errors", 0),
        ("rx_mbuf_allocation_errors", 0),
        ("rx_scatter_nombuf_drops", 0),
        ("rx_filtered_drops", 0),
        ("tx_ring_full", 0),
    ] {
        assert_eq!(stat(&x, k), want, "testpmd xstat {k}\n{}", pmd.tail());
    }
    // Zero-copy receive ran: frames of 512 bytes or more arrived attached
    // to their slots (most of them; those wrapping around the ring's end
    // are copied), and none without `zero_copy`.
    let attached = stat(&x, "rx_zero_copy_frames");
    println!("{test}: {attached} of {frames} frames received attached to their slots");
    assert_eq!(stat(&x, "rx_q0_zero_copy_frames"), attached);
    if zero_copy {
        assert!(
            attached > frames / 2,
            "{attached} of {frames} frames attached\n{}",
            pmd.tail()
        );
    } else {
        assert_eq!(attached, 0, "frames attached without zero_copy");
    }
    let st = pmd.quit();
    assert!(st.success(), "testpmd exit {st}");
    let _ = std::fs::remove_dir_all(&env.work);
}

/// testpmd's master port requires hugepages for its region
/// (`hugepages=require`): the region sits in 2 MiB pages in both processes
/// and carries every frame.
#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn testpmd_master_on_required_hugepages_txonly_frames_arrive_intact_in_rust_slave() {
    txonly_into_rust("tx-m64", Role::Slave, &[64], true);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn testpmd_slave_txonly_frames_arrive_intact_in_rust_master() {
    txonly_into_rust("tx-s64", Role::Master, &[64], false);
}

/// Frames of two slots, the second partly filled, written into slots the
/// transmit path took ahead of each burst (testpmd sends bursts of 32).
#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn testpmd_master_100_byte_frames_arrive_intact_in_rust_slave() {
    txonly_into_rust("tx-m100", Role::Slave, &[100], false);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn testpmd_master_9000_byte_chains_arrive_intact_in_rust_slave() {
    txonly_into_rust(
        "tx-m9000",
        Role::Slave,
        &[2048, 2048, 2048, 2048, 808],
        false,
    );
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn testpmd_slave_9000_byte_chains_arrive_intact_in_rust_master() {
    txonly_into_rust(
        "tx-s9000",
        Role::Master,
        &[1000, 2048, 14, 2048, 2048, 1842],
        false,
    );
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn rust_master_frames_echoed_by_testpmd_slave_io_intact_and_in_order() {
    echo_through_testpmd("io-rm", Role::Master, 100_000, false, false);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn rust_slave_frames_echoed_by_testpmd_master_io_intact_and_in_order() {
    echo_through_testpmd("io-rs", Role::Slave, 100_000, false, false);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn rust_master_frames_echoed_by_testpmd_slave_zero_copy_io_intact_and_in_order() {
    echo_through_testpmd("iozc-rm", Role::Master, 100_000, true, false);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn rust_slave_frames_echoed_by_testpmd_master_zero_copy_io_intact_and_in_order() {
    echo_through_testpmd("iozc-rs", Role::Slave, 100_000, true, false);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn rust_master_frames_echoed_by_testpmd_slave_with_hold_back_intact_and_in_order() {
    echo_through_testpmd("iohb-rm", Role::Master, 100_000, false, true);
}
