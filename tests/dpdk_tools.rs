//! DPDK's own tools on an `eth_vecring` port of a running `dpdk-testpmd`
//! (the primary), whose peer is this Rust program sending known frames:
//!
//! - `dpdk-telemetry.py` lists the port and its xstats, vecring's own
//!   (`peer_corruptions`, `rejected_peers`, ...) included, with the values
//!   testpmd shows;
//! - `dpdk-proc-info` (a secondary process) prints the port's stats and
//!   xstats, equal to testpmd's own once traffic has stopped, also on
//!   ports of 4 and 16 queue pairs, whose answers cross in several pages,
//!   each queue's counters its own;
//! - `dpdk-dumpcap` (a secondary process) captures the frames testpmd
//!   receives into a pcapng file, which holds exactly the frames sent, byte
//!   for byte.
//!
//! testpmd runs with a shared configuration (hugepages, no `--in-memory`),
//! which secondary processes need; its runtime directory and hugepage files
//! are removed when a test ends. Without hugepages the tests say so and
//! pass without checking anything.
//!
//! Like the other DPDK tests they need root and are `#[ignore]`d here; run
//! them with `tests/dpdk/run.sh`, or:
//!
//! ```sh
//! VECRING_PMD_SO=/usr/local/lib/vecring/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_tools -- --ignored --test-threads=1
//! ```

use std::collections::HashMap;
use std::io::Read;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vecring_core::{Link, LinkSendError, PushError, Role, Sender};
use vecring_tests::secondary::{proc_info, RuntimeFiles, TOOL_WATCHDOG};
use vecring_tests::testpmd::{file_prefix, stat, Env, Testpmd, PMD_MAC, STALL};
use vecring_tests::Watchdog;

/// The source MAC of the frames this program sends.
const RUST_MAC: [u8; 6] = [0x02, 0xec, 0xf4, 0x00, 0x00, 0x09];

/// Frame `seq` of the known sequence: to testpmd's MAC, EtherType 0x88b5
/// (local experimental), the sequence number, then bytes derived from it;
/// 60 to 187 bytes long.
fn frame(seq: u32) -> Vec<u8> {
    let len = 60 + (seq as usize * 7) % 128;
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&PMD_MAC);
    f.extend_from_slice(&RUST_MAC);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend_from_slice(&seq.to_be_bytes());
    while f.len() < len {
        f.push((seq as usize).wrapping_mul(31).wrapping_add(f.len()) as u8);
    }
    f
}

/// Sends frames `from..to` of [`frame`], waiting while the ring is full.
fn send_frames(tx: &mut Sender, from: u32, to: u32) {
    let deadline = Instant::now() + STALL;
    for seq in from..to {
        let f = frame(seq);
        loop {
            match tx.send(&f) {
                Ok(()) => break,
                Err(LinkSendError::Push(PushError::Full)) => {
                    assert!(Instant::now() < deadline, "ring full for {STALL:?}");
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) => panic!("send frame {seq}: {e}"),
            }
        }
    }
}

/// A testpmd (`rxonly`, master of link `tools/<test>`) with a shared
/// configuration, and the link's Rust end, up. `None` without hugepages.
fn start(test: &str) -> Option<(Env, RuntimeFiles, Testpmd, Link)> {
    start_with(test, 1)
}

/// [`start`] with a link of `queues` queue pairs (`queues=`), testpmd
/// using them all (`--rxq`, `--txq`).
fn start_with(test: &str, queues: u16) -> Option<(Env, RuntimeFiles, Testpmd, Link)> {
    let mut env = Env::new(test);
    if env.mem_args.iter().any(|a| a == "--no-huge") {
        eprintln!("{test}: skipped: secondary processes need a primary in hugepages");
        return None;
    }
    // Shared configuration in hugepages: what secondary processes attach to.
    env.mem_args = vec!["-m".into(), "256".into()];
    let files = RuntimeFiles {
        prefix: file_prefix(test),
    };
    let link = env.open(test, Role::Slave);
    let (rxq, txq) = (format!("--rxq={queues}"), format!("--txq={queues}"));
    let mut pmd = Testpmd::start(
        &env,
        test,
        0,
        &format!("{},queues={queues}", env.vdev(test, true)),
        &["--forward-mode=rxonly", &rxq, &txq],
    );
    pmd.wait_link_up(&link);
    pmd.wait_prompt();
    pmd.cmd("start");
    Some((env, files, pmd, link))
}

/// Sends `n` frames and waits until testpmd has received them all.
fn deliver(pmd: &mut Testpmd, tx: &mut Sender, n: u32) {
    send_frames(tx, 0, n);
    let deadline = Instant::now() + STALL;
    while stat(&pmd.xstats(), "rx_good_packets") < u64::from(n) {
        assert!(
            Instant::now() < deadline,
            "testpmd did not receive {n} frames\n{}",
            pmd.tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `"name": 123` pairs of a flat JSON object's text.
fn json_numbers(obj: &str) -> HashMap<String, u64> {
    obj.trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once(':')?;
            Some((
                k.trim().trim_matches('"').to_string(),
                v.trim().parse().ok()?,
            ))
        })
        .collect()
}

#[test]
#[ignore = "needs root, dpdk-testpmd and hugepages (tests/dpdk/run.sh)"]
fn telemetry_lists_port_and_vecring_xstats() {
    let _w = Watchdog::new("dpdk tools telemetry", Duration::from_secs(120));
    let Some((_env, files, mut pmd, link)) = start("telemetry") else {
        return;
    };
    let mut tx = link.sender().unwrap();
    deliver(&mut pmd, &mut tx, 100);
    let testpmd_xstats = pmd.xstats();

    let sock = files.dir().join("dpdk_telemetry.v2");
    assert!(sock.exists(), "no telemetry socket {}", sock.display());
    let mut child = Command::new("timeout")
        .args([TOOL_WATCHDOG, "dpdk-telemetry.py", "-f", &files.prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dpdk-telemetry.py");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"/ethdev/list\n/ethdev/xstats,0\n")
            .unwrap();
    }
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let st = child.wait().unwrap();
    assert!(st.success(), "dpdk-telemetry.py: {st}\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    let list = lines
        .iter()
        .find(|l| l.starts_with("{\"/ethdev/list\""))
        .unwrap_or_else(|| panic!("no /ethdev/list answer in:\n{out}"));
    assert_eq!(*list, "{\"/ethdev/list\": [0]}", "port 0 listed");
    let xstats = lines
        .iter()
        .find(|l| l.starts_with("{\"/ethdev/xstats\""))
        .unwrap_or_else(|| panic!("no /ethdev/xstats answer in:\n{out}"));
    let obj = xstats
        .strip_prefix("{\"/ethdev/xstats\": ")
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or_else(|| panic!("unexpected answer {xstats}"));
    let x = json_numbers(obj);
    for key in [
        "peer_corruptions",
        "rejected_peers",
        "pinned_regions",
        "link_up_count",
        "tx_ring_full",
        "rx_filtered_drops",
    ] {
        assert!(x.contains_key(key), "telemetry xstats lack {key}: {x:?}");
    }
    assert_eq!(stat(&x, "rx_good_packets"), 100);
    assert_eq!(stat(&x, "peer_corruptions"), 0);
    assert_eq!(stat(&x, "rejected_peers"), 0);
    assert_eq!(stat(&x, "link_up_count"), 1);
    assert_eq!(
        x, testpmd_xstats,
        "telemetry and testpmd show the same xstats (no traffic in between)"
    );
    drop(tx);
    pmd.quit();
}

/// The value after `key` in `text` (`RX-packets: 12`).
fn field(text: &str, key: &str) -> u64 {
    text.split(key)
        .nth(1)
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no '{key}' in:\n{text}"))
}

#[test]
#[ignore = "needs root, dpdk-testpmd and hugepages (tests/dpdk/run.sh)"]
fn proc_info_stats_match_testpmd() {
    let _w = Watchdog::new("dpdk tools proc-info", Duration::from_secs(120));
    let Some((env, files, mut pmd, link)) = start("procinfo") else {
        return;
    };
    let mut tx = link.sender().unwrap();
    deliver(&mut pmd, &mut tx, 1000);
    pmd.stop();

    // testpmd's own view, then the secondary's: nothing moves in between.
    let mark = |l: &str| l.contains("Tx-pps:");
    let before = pmd.count(mark);
    pmd.cmd("show port stats 0");
    pmd.wait_for("port stats", before + 1, mark);
    let out = pmd.output();
    let ours = out
        .rsplit("NIC statistics for port 0")
        .next()
        .unwrap_or_default()
        .to_string();
    let testpmd_xstats = pmd.xstats();

    let stats = proc_info(&env, &files.prefix, "--stats");
    let theirs = stats
        .split("NIC statistics for port 0")
        .nth(1)
        .unwrap_or_else(|| panic!("no port 0 in dpdk-proc-info --stats:\n{stats}"));
    for key in [
        "RX-packets:",
        "RX-errors:",
        "RX-bytes:",
        "RX-nombuf:",
        "TX-packets:",
        "TX-errors:",
        "TX-bytes:",
    ] {
        assert_eq!(
            field(theirs, key),
            field(&ours, key),
            "{key} of dpdk-proc-info and testpmd"
        );
    }
    assert_eq!(field(theirs, "RX-packets:"), 1000);
    let bytes: u64 = (0..1000).map(|s| frame(s).len() as u64).sum();
    assert_eq!(field(theirs, "RX-bytes:"), bytes);

    let xout = proc_info(&env, &files.prefix, "--xstats");
    let xstats: HashMap<String, u64> = xout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ")?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect();
    assert!(
        xstats.contains_key("peer_corruptions") && xstats.contains_key("tx_lost_on_link_down"),
        "vecring's xstats in dpdk-proc-info --xstats:\n{xout}"
    );
    assert_eq!(
        xstats, testpmd_xstats,
        "dpdk-proc-info and testpmd show the same xstats"
    );
    // The secondaries came and went; the primary's port still works.
    pmd.cmd("start");
    send_frames(&mut tx, 1000, 1010);
    let deadline = Instant::now() + STALL;
    while stat(&pmd.xstats(), "rx_good_packets") < 1010 {
        assert!(
            Instant::now() < deadline,
            "port stopped working\n{}",
            pmd.tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(tx);
    assert!(pmd.quit().success());
}

/// `dpdk-proc-info --stats` and `--xstats` on a port of `queues` queue
/// pairs, the Rust peer having sent `100 + q` frames on queue `q`: the
/// secondary's answers need several pages (87 statistics; 8 xstats, 7 per
/// queue and 6 more: over one message's 30 values from 4 queues on) and
/// equal testpmd's, queue by queue.
fn proc_info_on_queues(queues: u16) {
    let test = format!("procinfo{queues}");
    let _w = Watchdog::new("dpdk tools proc-info queues", Duration::from_secs(120));
    let Some((env, files, mut pmd, link)) = start_with(&test, queues) else {
        return;
    };
    let mut total = 0;
    for q in 0..queues {
        let mut tx = link.sender_on(q).unwrap();
        let n = 100 + u32::from(q);
        send_frames(&mut tx, 0, n);
        total += u64::from(n);
    }
    let deadline = Instant::now() + STALL;
    while stat(&pmd.xstats(), "rx_good_packets") < total {
        assert!(
            Instant::now() < deadline,
            "testpmd did not receive {total} frames\n{}",
            pmd.tail()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    pmd.stop();
    let ours = pmd.xstats();
    for q in 0..queues {
        assert_eq!(
            stat(&ours, &format!("rx_q{q}_packets")),
            100 + u64::from(q),
            "testpmd's queue {q}"
        );
    }

    let stats = proc_info(&env, &files.prefix, "--stats");
    let theirs = stats
        .split("NIC statistics for port 0")
        .nth(1)
        .unwrap_or_else(|| panic!("no port 0 in dpdk-proc-info --stats:\n{stats}"));
    assert_eq!(field(theirs, "RX-packets:"), total, "{stats}");
    assert_eq!(field(theirs, "RX-errors:"), 0, "{stats}");

    let xout = proc_info(&env, &files.prefix, "--xstats");
    let xstats: HashMap<String, u64> = xout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ")?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect();
    let last = queues - 1;
    for name in [
        format!("rx_q{last}_packets"),
        format!("rx_q{last}_filtered_drops"),
        format!("tx_q{last}_peer_queue_absent_drops"),
        "pinned_regions".to_string(),
    ] {
        assert!(xstats.contains_key(&name), "{name} in:\n{xout}");
    }
    assert!(
        xstats.len() > vecring_pmd_values_per_message(),
        "{} xstats fit in one message: paging untested",
        xstats.len()
    );
    assert_eq!(
        xstats, ours,
        "dpdk-proc-info and testpmd show the same xstats"
    );
    drop(link);
    assert!(pmd.quit().success());
}

/// Values one IPC reply of the driver carries (its `mp::MAX_VALUES`: 256
/// bytes of parameters less a 16-byte header, in `u64`s).
fn vecring_pmd_values_per_message() -> usize {
    (256 - 16) / 8
}

#[test]
#[ignore = "needs root, dpdk-testpmd and hugepages (tests/dpdk/run.sh)"]
fn proc_info_four_queues() {
    proc_info_on_queues(4);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and hugepages (tests/dpdk/run.sh)"]
fn proc_info_sixteen_queues() {
    proc_info_on_queues(16);
}

/// What `dpdk-dumpcap` needs preloaded: the PMD (it has no `-d` option),
/// and the mempool drivers testpmd links directly, which register their
/// mempool ops before the plugins'. A secondary must register mempool ops
/// in the primary's order: the capture pool dumpcap creates is used by
/// index in the primary (otherwise every copy fails, as `nombuf`).
fn dumpcap_preload(env: &Env) -> String {
    let testpmd = String::from_utf8(
        Command::new("sh")
            .arg("-c")
            .arg(format!("ldd \"$(command -v {})\"", env.testpmd))
            .output()
            .expect("ldd testpmd")
            .stdout,
    )
    .unwrap();
    let mut libs: Vec<String> = testpmd
        .lines()
        .filter_map(|l| l.split("=>").nth(1)?.split_whitespace().next())
        .filter(|p| p.contains("/librte_mempool_"))
        .map(str::to_string)
        .collect();
    libs.push(env.so.display().to_string());
    libs.join(":")
}

/// The Enhanced Packet Blocks' packet data of a pcapng file (little-endian
/// sections, as DPDK writes them).
fn pcapng_packets(data: &[u8]) -> Vec<Vec<u8>> {
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
    assert!(data.len() >= 12, "pcapng file of {} bytes", data.len());
    assert_eq!(u32_at(0), 0x0a0d_0d0a, "section header block first");
    assert_eq!(u32_at(8), 0x1a2b_3c4d, "little-endian byte-order magic");
    let mut packets = Vec::new();
    let mut at = 0;
    while at + 12 <= data.len() {
        let (kind, len) = (u32_at(at), u32_at(at + 4) as usize);
        assert!(
            len >= 12 && len % 4 == 0 && at + len <= data.len(),
            "block at {at}: length {len}"
        );
        assert_eq!(u32_at(at + len - 4) as usize, len, "block at {at}: trailer");
        if kind == 6 {
            let caplen = u32_at(at + 20) as usize;
            assert!(28 + caplen <= len, "packet at {at}: {caplen} bytes");
            packets.push(data[at + 28..at + 28 + caplen].to_vec());
        }
        at += len;
    }
    assert_eq!(at, data.len(), "no trailing bytes");
    packets
}

#[test]
#[ignore = "needs root, dpdk-testpmd and hugepages (tests/dpdk/run.sh)"]
fn dumpcap_captures_frames_sent() {
    const N: u32 = 200;
    let _w = Watchdog::new("dpdk tools dumpcap", Duration::from_secs(120));
    let Some((env, files, mut pmd, link)) = start("dumpcap") else {
        return;
    };
    let mut tx = link.sender().unwrap();
    let pcap = env.work.join("capture.pcapng");
    let err_log = env.work.join("dumpcap.err");
    let mut dumpcap = Command::new("timeout")
        .args([
            TOOL_WATCHDOG,
            "dpdk-dumpcap",
            "--file-prefix",
            &files.prefix,
        ])
        .args(["-i", "eth_vecring0", "-c", &N.to_string(), "-w"])
        .arg(&pcap)
        .env("LD_PRELOAD", dumpcap_preload(&env))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_log).unwrap())
        .spawn()
        .expect("run dpdk-dumpcap");
    // "Packets captured:" (stderr, unbuffered) comes once the primary has
    // installed the capture callbacks.
    let deadline = Instant::now() + STALL;
    loop {
        let err = std::fs::read_to_string(&err_log).unwrap_or_default();
        if err.contains("Packets captured:") {
            break;
        }
        if let Ok(Some(st)) = dumpcap.try_wait() {
            panic!("dpdk-dumpcap exited ({st}):\n{err}");
        }
        assert!(
            Instant::now() < deadline,
            "dpdk-dumpcap did not start:\n{err}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    send_frames(&mut tx, 0, N);
    let st = dumpcap.wait().unwrap();
    let err = std::fs::read_to_string(&err_log).unwrap_or_default();
    assert!(st.success(), "dpdk-dumpcap: {st}\n{err}");
    assert!(
        err.contains(&format!("'eth_vecring0': {N}/0 ")),
        "dumpcap received {N} and dropped none:\n{err}"
    );

    let packets = pcapng_packets(&std::fs::read(&pcap).unwrap());
    assert_eq!(packets.len(), N as usize, "frames in {}", pcap.display());
    for (seq, p) in packets.iter().enumerate() {
        assert_eq!(*p, frame(seq as u32), "captured frame {seq}");
    }
    assert_eq!(stat(&pmd.xstats(), "rx_good_packets"), u64::from(N));
    // dumpcap's promiscuous change at exit was refused in the secondary.
    let mark = |l: &str| l.starts_with("Promiscuous mode:");
    let before = pmd.count(mark);
    pmd.cmd("show port info 0");
    pmd.wait_for("port info", before + 1, mark);
    let out = pmd.output();
    let promisc = out.lines().rfind(|l| mark(l)).unwrap_or_default();
    assert_eq!(
        promisc.trim_end(),
        "Promiscuous mode: enabled",
        "testpmd's setting kept"
    );
    drop(tx);
    assert!(pmd.quit().success());
}
