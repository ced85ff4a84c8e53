//! Every byte across languages: a C master exchanging self-checking frames
//! both ways with a Rust slave, and a C slave with a `dpdk-testpmd` master
//! (vecring PMD, io forwarding).

use super::{c_source, compile, finish, lib_dir, run, scratch, show};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vecring_core::{test_support::pattern, Link, LinkRecvError, LinkSendError, PushError, Role};
use vecring_tests::Watchdog;

const FRAMES: u64 = 100_000;
const STALL: Duration = Duration::from_secs(60);

/// Sends frames `0..n` of the mixed-size pattern.
fn rust_send(mut tx: vecring_core::Sender, n: u64) -> Result<(), String> {
    let mut buf = vec![0u8; 9216];
    for seq in 0..n {
        let len = pattern::mixed_len(seq);
        pattern::fill(&mut buf[..len], seq);
        let mut last = Instant::now();
        loop {
            match tx.send(&buf[..len]) {
                Ok(()) => break,
                Err(LinkSendError::Push(PushError::Full)) if last.elapsed() < STALL => {
                    std::thread::yield_now()
                }
                Err(LinkSendError::Push(PushError::Full)) => {
                    return Err(format!("the C peer stopped reading at frame {seq}"))
                }
                Err(e) => return Err(format!("send of frame {seq}: {e}")),
            }
            if last.elapsed() > STALL {
                last = Instant::now();
            }
        }
    }
    Ok(())
}

/// Receives and checks frames `0..n` of the mixed-size pattern.
fn rust_receive(rx: &mut vecring_core::Receiver, n: u64) -> Result<(), String> {
    let mut buf = vec![0u8; 9216];
    let mut expected = 0;
    let mut last = Instant::now();
    while expected < n {
        match rx.recv(&mut buf) {
            Ok(len) => {
                let seq = pattern::check(&buf[..len])?;
                if seq != expected || len != pattern::mixed_len(seq) {
                    return Err(format!(
                        "expected frame {expected}, got frame {seq} of {len} bytes"
                    ));
                }
                expected += 1;
                last = Instant::now();
            }
            Err(LinkRecvError::Empty) if last.elapsed() < STALL => std::thread::yield_now(),
            Err(e) => return Err(format!("receive of frame {expected}: {e:?}")),
        }
    }
    Ok(())
}

#[test]
fn c_master_talks_to_a_rust_slave() {
    let _w = Watchdog::new("c_master_talks_to_a_rust_slave", Duration::from_secs(300));
    let dir = scratch("master");
    let exe = compile(&dir, "peer", &[c_source("peer.c")]);
    let run_at = dir.join("run");
    let frames = FRAMES.to_string();
    // A small ring of small slots: most frames span several slots, and many
    // wrap around the end of the ring (the zero-copy paths' copies).
    let child = Command::new(&exe)
        .args([
            "--role", "master", "--domain", "ffi", "--link", "m0", "--frames", &frames,
        ])
        .args([
            "--slot-count",
            "256",
            "--slot-size",
            "512",
            "--hugepages",
            "never",
        ])
        .arg("--run-dir")
        .arg(&run_at)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the C master");
    let slave = Link::builder("ffi", "m0")
        .role(Role::Slave)
        .run_dir(&run_at)
        .retry_interval(Duration::from_millis(10))
        .open()
        .unwrap();
    let up = slave.wait_up(Duration::from_secs(60));
    let traffic = up.map_err(|e| e.to_string()).and_then(|_| {
        let tx = slave.sender().unwrap();
        let mut rx = slave.receiver().unwrap();
        let sender = std::thread::spawn(move || rust_send(tx, FRAMES));
        let received = rust_receive(&mut rx, FRAMES);
        let sent = sender.join().unwrap();
        received.and(sent)
    });
    // The C master exits once it has received everything and we have read
    // everything it sent; only then may the slave go.
    let out = finish(child, Duration::from_secs(200), "C master");
    assert!(
        traffic.is_ok(),
        "Rust slave: {}\nC master: {}",
        traffic.unwrap_err(),
        show(&out)
    );
    assert!(out.status.success(), "C master: {}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("peer: ok: sent {FRAMES}, received {FRAMES}")),
        "{}",
        show(&out)
    );
    assert!(stdout.contains("256 slots of 512 bytes"), "{}", show(&out));
    let c = slave.counters();
    assert_eq!((c.rx_frames, c.link_ups), (FRAMES, 1));
}

// ---- a C slave and a dpdk-testpmd master ----------------------------------

/// The vecring PMD: `$VECRING_PMD_SO`, or `target/<profile>`'s.
fn pmd_so() -> PathBuf {
    if let Some(p) = std::env::var_os("VECRING_PMD_SO") {
        return PathBuf::from(p);
    }
    let deps = lib_dir();
    let built = deps
        .parent()
        .expect("target/<profile>")
        .join("librte_net_vecring.so");
    if built.exists() {
        built
    } else {
        deps.join("librte_net_vecring.so")
    }
}

/// One testpmd at a time: each busy-polls a CPU.
static TESTPMD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A `dpdk-testpmd` master (vecring PMD, io forwarding: every frame goes
/// back unchanged) and a C slave that sends `frames` frames of up to
/// `max_len` bytes, at most `window` in flight, and checks each one when it
/// comes back. The window keeps testpmd from finding the slave's ring full:
/// io forwarding drops what it cannot send.
fn testpmd_echo(test: &str, testpmd_args: &[&str], frames: &str, max_len: &str, window: &str) {
    let _one = TESTPMD.lock().unwrap_or_else(|p| p.into_inner());
    let so = pmd_so();
    assert!(
        so.exists(),
        "{} is missing: build the PMD (cargo build --release -p vecring-pmd) or set VECRING_PMD_SO",
        so.display()
    );
    let testpmd = std::env::var("TESTPMD").unwrap_or_else(|_| "dpdk-testpmd".to_string());
    let dir = scratch(test);
    let exe = compile(&dir, "peer", &[c_source("peer.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    let log = dir.join("testpmd.log");
    let prefix = format!("vrffi_{}_{test}", std::process::id());
    let log_file = std::fs::File::create(&log).unwrap();
    // Non-interactive testpmd forwards from the moment it starts until its
    // stdin closes. stdbuf: its stdout is a file here; line-buffer it so
    // that the wait below sees each line when it is printed.
    let mut pmd = Command::new("stdbuf")
        .args(["-oL", "-eL"])
        .arg(&testpmd)
        .arg("-d")
        .arg(&so)
        // No hugepages (CI may have none; --in-memory would refuse
        // --no-huge), no shared config files.
        .args([
            "--no-pci",
            "--no-huge",
            "--no-shconf",
            "-m",
            "512",
            "-l",
            "0,1",
        ])
        .arg(format!("--file-prefix={prefix}"))
        .arg(format!(
            "--vdev=eth_vecring0,domain=ffi,link={test},master=true,hugepages=never,run_dir={}",
            run_at.display()
        ))
        // --no-flush-rx: testpmd would otherwise drop what is queued when
        // forwarding starts.
        .args([
            "--",
            "--forward-mode=io",
            "--no-flush-rx",
            "--total-num-mbufs=8192",
        ])
        .args(testpmd_args)
        .stdin(Stdio::piped())
        // One open file for both, so that neither overwrites the other.
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {testpmd}: {e} (run scripts/setup.sh)"));
    let testpmd_log = || std::fs::read_to_string(&log).unwrap_or_default();
    // Forwarding runs once testpmd waits for its input.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !testpmd_log().contains("Press enter to exit") {
        if pmd.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let _ = pmd.kill();
            let _ = pmd.wait();
            panic!("testpmd did not start forwarding:\n{}", testpmd_log());
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = run(
        Command::new(&exe)
            .args(["--role", "slave", "--domain", "ffi", "--link", test])
            .args(["--frames", frames, "--max-len", max_len, "--window", window])
            .args(["--timeout", "200", "--run-dir"])
            .arg(&run_at),
        Duration::from_secs(220),
    );
    // End of input stops testpmd.
    drop(pmd.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = pmd.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = pmd.kill();
            let _ = pmd.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // EAL leaves an empty runtime directory behind even without shared
    // config.
    let _ = std::fs::remove_dir(Path::new("/var/run/dpdk").join(&prefix));
    let log = testpmd_log();
    assert!(
        out.status.success(),
        "C slave: {}\n--- testpmd log\n{log}",
        show(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("peer: ok: sent {frames}, received {frames}")),
        "{}",
        show(&out)
    );
    assert!(
        log.contains("VECRING: eth_vecring0: link up"),
        "testpmd log:\n{log}"
    );
    assert!(
        status.is_some(),
        "testpmd did not exit when its input closed:\n{log}"
    );
    assert!(
        log.contains(&format!("RX-packets: {frames} "))
            && log.contains(&format!("TX-packets: {frames} ")),
        "testpmd forwarded every frame once:\n{log}"
    );
}

#[test]
fn c_slave_talks_to_a_testpmd_master() {
    let _w = Watchdog::new(
        "c_slave_talks_to_a_testpmd_master",
        Duration::from_secs(600),
    );
    // Frames of 16..1514 bytes: each fits one of testpmd's 2 KiB mbufs.
    testpmd_echo("pmd-std", &[], "20000", "1514", "256");
}

#[test]
fn c_slave_sends_jumbo_frames_through_testpmd() {
    let _w = Watchdog::new(
        "c_slave_sends_jumbo_frames_through_testpmd",
        Duration::from_secs(600),
    );
    // Frames up to 9216 bytes: testpmd scatters them into mbuf chains on RX
    // and the PMD gathers the chains on TX. Up to 5 slots a frame: a
    // smaller window keeps the in-flight frames within the ring. Enough
    // frames (some 14 slots each on average) to wrap the 32768-slot ring
    // some 40 times: the copied-peek check needs a wrap to land in a peek
    // round (one in three; the rounds turn with every poll), and 10,000
    // frames, some 4 wraps, once saw none.
    testpmd_echo(
        "pmd-jumbo",
        &[
            "--max-pkt-len=9216",
            "--enable-scatter",
            "--tx-offloads=0x8000",
        ],
        "100000",
        "9216",
        "64",
    );
}
