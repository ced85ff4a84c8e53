//! The DPDK driver against a hostile or departing peer, each case a real
//! `dpdk-testpmd` (or a small C DPDK program) with the built
//! `librte_net_vecring.so` on one end of a link and this test process on
//! the other:
//!
//! - MAC flips: this process, master of the link, sends frames to testpmd's
//!   MAC while a thread keeps flipping the destination MAC of every slot of
//!   the ring between testpmd's MAC and a foreign one. testpmd receives with
//!   promiscuous mode off and forwards (`io`) every frame it is given back
//!   unchanged: no returned frame may carry the foreign address, and some
//!   frames must have been filtered (the flips did land). In copy mode, with
//!   scattered frames, and in zero-copy mode for frames it copies.
//! - A forged loss count: testpmd, master of the link, sends 1514-byte
//!   frames (`txonly`) to a slave (`vecring-attack forge-lost`, a separate
//!   process) that reads none, and, once the ring is full, rewrites every
//!   descriptor of it to one byte and leaves. The port's
//!   `tx_lost_on_link_down`, in testpmd's xstats and in `dpdk-proc-info`'s
//!   (a secondary process), is the frames testpmd sent, not one per slot.
//! - A corrupt descriptor where the driver reads next: this process, the
//!   master, publishes a descriptor of impossible length at the read
//!   position of testpmd's receive ring. The port reports it
//!   (`peer_corruptions`), the link goes down and up as a new generation,
//!   and frames flow again: the queue does not stall unreported.
//! - Close from the link-state callback: `tests/c/lsc_close.c` registers an
//!   LSC callback that stops and closes the port when the link goes down;
//!   this process (the peer) then leaves. The program must finish.
//!
//! These tests need root, `dpdk-testpmd`, a C compiler with DPDK's
//! `pkg-config` file, the built PMD and hugepages (or
//! `VECRING_TEST_NO_HUGE=1`), so they are `#[ignore]`d here and run by
//! `tests/dpdk/run.sh` (or by hand, with the PMD outside world-writable
//! directories):
//!
//! ```sh
//! install -D -m0644 target/release/librte_net_vecring.so /usr/local/lib/vecring-test/librte_net_vecring.so
//! VECRING_PMD_SO=/usr/local/lib/vecring-test/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_hostile -- --ignored --test-threads=1
//! ```
//!
//! Env: see [`vecring_tests::testpmd`].

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::internal::abi::{SlotDesc, RING_MASTER_TO_SLAVE};
use vecring_core::{Geometry, Link, LinkRecvError, LinkSendError, PushError, RingStorage, Role};
use vecring_tests::hostile::{attacker, Proc};
use vecring_tests::secondary::{proc_info, RuntimeFiles};
use vecring_tests::testpmd::{
    build_dpdk_program, file_prefix, mac_str, stat, Env, Testpmd, PMD_MAC, STALL,
};
use vecring_tests::Watchdog;

/// The address the flipper swaps in: testpmd's MAC with another last byte
/// (unicast, not testpmd's, so the filter must refuse it).
const FOREIGN_MAC: [u8; 6] = [0x02, 0xec, 0xf4, 0x00, 0x00, 0x03];
/// Source MAC of the frames this process sends.
const SRC_MAC: [u8; 6] = [0x02, 0xec, 0xf4, 0x00, 0x00, 0x09];
/// Slots of the ring the flipper sweeps: few, so that every slot is
/// flipped often.
const FLIP_SLOTS: u32 = 512;
/// Bytes per slot.
const FLIP_SLOT_SIZE: u32 = 64;
/// Frames sent per MAC-flip test.
const FLIP_FRAMES: u64 = 1_000_000;

/// A frame of `len` bytes to testpmd's MAC carrying `seq`.
fn frame(len: usize, seq: u64) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&PMD_MAC);
    f[6..12].copy_from_slice(&SRC_MAC);
    f[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental EtherType
    f[14..22].copy_from_slice(&seq.to_le_bytes());
    f
}

/// Keeps flipping the last destination-MAC byte of every slot of `ring`
/// between testpmd's and the foreign address until `stop`; returns the
/// number of sweeps over the ring.
fn flip_macs(ring: vecring_core::memory::RegionRing, stop: &AtomicBool) -> u64 {
    let g = ring.geometry();
    let (slots, size) = (g.slot_count() as usize, g.slot_size() as usize);
    let data = ring.data();
    let mut sweeps = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let b = if sweeps % 2 == 0 {
            FOREIGN_MAC[5]
        } else {
            PMD_MAC[5]
        };
        for i in 0..slots {
            // SAFETY: byte 5 of slot `i < slot_count` lies in the ring's data
            // area, mapped writable while `ring` keeps the region; a plain
            // byte store races only with the peer's reads of frame bytes,
            // which is the point.
            unsafe { data.add(i * size + 5).write_volatile(b) };
        }
        sweeps += 1;
    }
    sweeps
}

/// Sends [`FLIP_FRAMES`] frames of `len` bytes to testpmd (`io` forward,
/// promiscuous off, extra devargs `devargs`, extra application arguments
/// `app_args`) while the destination MACs in the ring are being flipped;
/// checks every frame testpmd gives back.
fn mac_flips_never_reach_the_application(test: &str, len: usize, devargs: &str, app_args: &[&str]) {
    let _w = Watchdog::new("dpdk hostile mac flips", Duration::from_secs(240));
    let env = Env::new(test);
    let geometry = Geometry::new(FLIP_SLOTS, FLIP_SLOT_SIZE).unwrap();
    let link = Link::builder("interop", test)
        .role(Role::Master)
        .run_dir(&env.run)
        .geometry(geometry)
        .open()
        .unwrap_or_else(|e| panic!("open interop/{test}: {e}"));
    let mut args = vec!["--forward-mode=io", "--no-flush-rx"];
    args.extend_from_slice(app_args);
    let mut pmd = Testpmd::start(
        &env,
        "io",
        0,
        &format!("{},{devargs}", env.vdev(test, false)),
        &args,
    );
    pmd.wait_link_up(&link);
    pmd.wait_prompt();
    pmd.cmd("set promisc 0 off");
    pmd.cmd("start");
    // The port's filter is set before frames flow: wait for `start` to
    // print its forwarding configuration.
    pmd.wait_for("forwarding started", 1, |l| {
        l.contains("io packet forwarding")
    });

    let region = link.region().expect("link is up");
    let ring = region.ring(RING_MASTER_TO_SLAVE);
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    let flipper = std::thread::spawn(move || flip_macs(ring, &s));

    let mut tx = link.sender().unwrap();
    let mut rx = link.receiver().unwrap();
    let mut rbuf = vec![0u8; 9216];
    let (mut sent, mut returned, mut foreign) = (0u64, 0u64, 0u64);
    let mut first_foreign: Option<Vec<u8>> = None;
    let mut check = |f: &[u8], returned: &mut u64| {
        *returned += 1;
        if f[..6] != PMD_MAC {
            foreign += 1;
            first_foreign.get_or_insert_with(|| f[..22.min(f.len())].to_vec());
        }
    };
    let mut progress = Instant::now();
    while sent < FLIP_FRAMES {
        match tx.send(&frame(len, sent)) {
            Ok(()) => {
                sent += 1;
                progress = Instant::now();
            }
            Err(LinkSendError::Push(PushError::Full)) => {}
            Err(e) => panic!("send frame {sent}: {e}\n{}", pmd.tail()),
        }
        while let Ok(n) = rx.recv(&mut rbuf) {
            check(&rbuf[..n], &mut returned);
        }
        assert!(
            progress.elapsed() < STALL,
            "testpmd took no frame for {STALL:?} after {sent}\n{}",
            pmd.tail()
        );
    }
    stop.store(true, Ordering::Relaxed);
    let sweeps = flipper.join().expect("flipper thread");

    // An end marker, sent after the flipper stopped: frames keep their
    // order through testpmd, so once it is back every earlier frame that
    // testpmd forwarded is back too.
    let end = frame(len, u64::MAX);
    let deadline = Instant::now() + STALL;
    loop {
        match tx.send(&end) {
            Ok(()) => break,
            Err(LinkSendError::Push(PushError::Full)) => {}
            Err(e) => panic!("send the end marker: {e}\n{}", pmd.tail()),
        }
        while let Ok(n) = rx.recv(&mut rbuf) {
            check(&rbuf[..n], &mut returned);
        }
        assert!(Instant::now() < deadline, "ring stays full\n{}", pmd.tail());
    }
    loop {
        match rx.recv(&mut rbuf) {
            Ok(n) if rbuf[..n] == end[..] => break,
            Ok(n) => check(&rbuf[..n], &mut returned),
            Err(LinkRecvError::Empty) => {
                assert!(
                    Instant::now() < deadline,
                    "the end marker did not come back\n{}",
                    pmd.tail()
                );
                std::thread::sleep(Duration::from_micros(50));
            }
            Err(e) => panic!("receive: {e}\n{}", pmd.tail()),
        }
    }
    let (_, tx_dropped) = pmd.stop();
    let x = pmd.xstats();
    let (delivered, filtered) = (stat(&x, "rx_good_packets"), stat(&x, "rx_filtered_drops"));
    let other_drops = stat(&x, "rx_too_large_drops") + stat(&x, "rx_scatter_nombuf_drops");
    println!(
        "{test}: {sent} frames of {len} bytes sent while the flipper swept the ring {sweeps} times; \
         testpmd delivered {delivered} (the marker too), filtered {filtered}, gave back {returned} \
         (+ the marker, {tx_dropped} not sent back), {foreign} with the foreign MAC"
    );
    assert_eq!(
        foreign,
        0,
        "testpmd was given {foreign} frames to {} with promiscuous mode off; first: {:02x?}\n{}",
        mac_str(&FOREIGN_MAC),
        first_foreign.unwrap_or_default(),
        pmd.tail()
    );
    assert!(filtered > 0, "no flip landed before the filter");
    assert!(returned > 0, "no frame passed the filter");
    assert_eq!(
        returned + 1 + tx_dropped,
        delivered,
        "every delivered frame came back (or was counted as not sent)\n{}",
        pmd.tail()
    );
    assert_eq!(
        delivered + filtered + other_drops,
        sent + 1,
        "frames unaccounted for\n{}",
        pmd.tail()
    );
    let st = pmd.quit();
    assert!(st.success(), "testpmd exit {st}");
    let _ = std::fs::remove_dir_all(&env.work);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn mac_flips_never_reach_the_application_copy_mode() {
    mac_flips_never_reach_the_application("flip-copy", 64, "zero_copy=false", &[]);
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn mac_flips_never_reach_the_application_scattered_frames() {
    // 1024-byte mbufs hold 896 bytes after the headroom: 1000-byte frames
    // are scattered into two segments.
    mac_flips_never_reach_the_application(
        "flip-scatter",
        1000,
        "zero_copy=false",
        &["--enable-scatter", "--max-pkt-len=9216", "--mbuf-size=1024"],
    );
}

#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn mac_flips_never_reach_the_application_zero_copy_mode_copied_frames() {
    // Frames under 512 bytes are copied in zero-copy mode too (frames the
    // port attaches to the ring stay writable by the peer, as documented).
    mac_flips_never_reach_the_application("flip-zc", 64, "zero_copy=true", &[]);
}

// ---- a corrupt descriptor where the driver reads next ---------------------

/// Waits until testpmd's port has delivered `frames` frames.
fn delivered(pmd: &mut Testpmd, frames: u64) {
    let deadline = Instant::now() + STALL;
    loop {
        let got = stat(&pmd.xstats(), "rx_good_packets");
        if got >= frames {
            assert_eq!(got, frames, "more frames than were sent");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "testpmd delivered {got} of {frames} frames\n{}",
            pmd.tail()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `count` 64-byte frames to testpmd, waiting for room.
fn send_frames(tx: &mut vecring_core::Sender, count: u64, pmd: &Testpmd) {
    let deadline = Instant::now() + STALL;
    let mut sent = 0;
    while sent < count {
        match tx.send(&frame(64, sent)) {
            Ok(()) => sent += 1,
            Err(LinkSendError::Push(PushError::Full)) => {
                assert!(Instant::now() < deadline, "ring stays full\n{}", pmd.tail());
            }
            Err(e) => panic!("send frame {sent}: {e}\n{}", pmd.tail()),
        }
    }
}

/// This process, master of the link, writes at the read position of
/// testpmd's receive ring a descriptor with the stamp its lap expects (so
/// published) and an impossible length. The driver sizes each burst by
/// the frames it finds there: it must report the corruption (the port's
/// `peer_corruptions`), leave the generation and attach to the next one,
/// where frames flow again. Before, it found no frame, asked for none, and
/// the queue stalled with nothing counted.
#[test]
#[ignore = "needs root, dpdk-testpmd and the PMD: run by tests/dpdk/run.sh"]
fn a_corrupt_descriptor_where_the_driver_reads_next_is_reported_not_a_stall() {
    let _w = Watchdog::new("dpdk hostile corrupt next", Duration::from_secs(240));
    let test = "corrupt-next";
    let env = Env::new(test);
    let link = Link::builder("interop", test)
        .role(Role::Master)
        .run_dir(&env.run)
        .open()
        .unwrap_or_else(|e| panic!("open interop/{test}: {e}"));
    let mut pmd = Testpmd::start(
        &env,
        "rxonly",
        0,
        &env.vdev(test, false),
        &["--forward-mode=rxonly"],
    );
    pmd.wait_link_up(&link);
    pmd.wait_prompt();
    pmd.cmd("start");
    pmd.wait_for("forwarding started", 1, |l| {
        l.contains("rxonly packet forwarding")
    });
    let first = link.wait_up(STALL).unwrap();
    let mut tx = link.sender().unwrap();
    send_frames(&mut tx, 100, &pmd);
    delivered(&mut pmd, 100);

    // 64-byte frames take a slot each: the driver reads slot 100 next.
    let region = link.region().expect("link is up");
    let ring = region.ring(RING_MASTER_TO_SLAVE);
    let slots = region.geometry().slot_count();
    let next = 100u64;
    let word = SlotDesc::pack(0xffff, 0) | SlotDesc::stamp(next, slots.trailing_zeros());
    ring.descs()[(next % u64::from(slots)) as usize]
        .0
        .store(word, Ordering::Release);
    drop(ring);
    drop(region);
    assert!(
        link.wait_down(STALL),
        "the link stayed up: the driver stalled on the corrupt descriptor without reporting it\n{}",
        pmd.tail()
    );
    let second = link
        .wait_up(STALL)
        .unwrap_or_else(|e| panic!("no next generation: {e}\n{}", pmd.tail()));
    assert!(second > first, "generation {second} after {first}");
    let x = pmd.xstats();
    assert_eq!(stat(&x, "peer_corruptions"), 1, "{x:?}");
    // Frames flow in the next generation.
    send_frames(&mut tx, 10, &pmd);
    delivered(&mut pmd, 110);
    let st = pmd.quit();
    assert!(st.success(), "testpmd exit {st}");
    let _ = std::fs::remove_dir_all(&env.work);
}

// ---- close from the link-state callback ---------------------------------

/// `lsc_close` holds the port in role `program_role`; this process is the
/// other end and leaves once the program's link is up. The program's
/// callback closes the port on the link-down event; the program must then
/// finish, successfully.
fn callback_closes_port_when_peer_leaves(test: &str, program_role: Role) {
    let _w = Watchdog::new("dpdk lsc close", Duration::from_secs(120));
    let env = Env::new(test);
    let exe = build_dpdk_program(&env, "lsc_close");
    let log = env.work.join("lsc_close.log");
    let peer_role = match program_role {
        Role::Master => Role::Slave,
        Role::Slave => Role::Master,
    };
    let link = env.open(test, peer_role);
    let mut child = Command::new("timeout")
        .args(["--kill-after=5", "60"])
        .arg(&exe)
        .arg("-d")
        .arg(&env.so)
        .arg("--no-pci")
        .arg(format!("--file-prefix=vrlsc_{test}_{}", std::process::id()))
        .arg("--lcores=0@0")
        .args(&env.mem_args)
        .arg(format!(
            "--vdev=eth_vecring0,{}",
            env.vdev(test, program_role == Role::Master)
        ))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lsc_close");
    let output = |child_err: &mut Option<std::process::ChildStderr>| {
        let mut e = String::new();
        if let Some(s) = child_err.as_mut() {
            let _ = s.read_to_string(&mut e);
        }
        format!(
            "--- stdout:\n{}--- stderr:\n{e}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
    };
    let mut stderr = child.stderr.take();
    let up_line = |l: &str| l == "lsc_close: link up";
    let deadline = Instant::now() + STALL;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .any(up_line)
    {
        if let Ok(Some(st)) = child.try_wait() {
            panic!(
                "lsc_close exited ({st}) before its link was up\n{}",
                output(&mut stderr)
            );
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "lsc_close: no link after {STALL:?}\n{}",
                output(&mut stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The peer leaves.
    drop(link);
    let deadline = Instant::now() + STALL;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() >= deadline {
            // `timeout` passes SIGTERM on, then SIGKILLs 5 s later.
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = child.wait();
            panic!(
                "lsc_close did not finish within {STALL:?} after the peer left \
                 (close from the link-state callback hangs)\n{}",
                output(&mut stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = output(&mut stderr);
    println!(
        "{test}: {}",
        out.lines()
            .filter(|l| l.starts_with("lsc_close:"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    assert!(status.success(), "lsc_close exit {status}\n{out}");
    assert!(
        out.contains("lsc_close: callback closed the port (stop 0, close 0)"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&env.work);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn slave_port_closed_from_its_link_state_callback_when_the_master_leaves() {
    callback_closes_port_when_peer_leaves("lsc-s", Role::Slave);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_closed_from_its_link_state_callback_when_the_slave_leaves() {
    callback_closes_port_when_peer_leaves("lsc-m", Role::Master);
}

/// The forged loss count (see the module's documentation).
#[test]
#[ignore = "needs root, dpdk-testpmd and the built PMD (tests/dpdk/run.sh)"]
fn a_slave_rewriting_descriptors_cannot_inflate_the_ports_lost_count() {
    let test = "forgelost";
    let _w = Watchdog::new("dpdk forged lost count", Duration::from_secs(120));
    let mut env = Env::new(test);
    // A shared configuration in hugepages, for dpdk-proc-info; without
    // hugepages testpmd's own xstats only.
    let secondary = !env.mem_args.iter().any(|a| a == "--no-huge");
    if secondary {
        env.mem_args = vec!["-m".into(), "256".into()];
    }
    let files = RuntimeFiles {
        prefix: file_prefix(test),
    };
    let mut pmd = Testpmd::start(
        &env,
        test,
        0,
        &env.vdev(test, true),
        &["--forward-mode=txonly", "--txpkts=1514"],
    );
    let mut slave = Proc::spawn(
        "forging slave",
        attacker("forge-lost").args([
            &format!("run-dir={}", env.run.display()),
            "domain=interop",
            &format!("link={test}"),
        ]),
    );
    if let Err(e) = slave.line("up", Duration::from_secs(30)) {
        panic!("{e}\n{}\n{}", slave.output(), pmd.tail());
    }
    pmd.wait_prompt();
    pmd.cmd("start");
    // The ring fills (the slave reads nothing) and the count stops.
    let deadline = Instant::now() + STALL;
    let (mut last, mut still) = (u64::MAX, 0);
    let sent = loop {
        let sent = stat(&pmd.xstats(), "tx_good_packets");
        still = if sent == last { still + 1 } else { 0 };
        if still == 3 && sent > 0 {
            break sent;
        }
        last = sent;
        assert!(
            Instant::now() < deadline,
            "the ring never filled\n{}",
            pmd.tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    slave.say("forge");
    let forged = slave.line("forged", Duration::from_secs(10)).unwrap();
    assert!(
        slave.wait(Duration::from_secs(10)).is_some(),
        "the slave did not leave"
    );
    let deadline = Instant::now() + STALL;
    let x = loop {
        let x = pmd.xstats();
        if stat(&x, "tx_lost_on_link_down") > 0 {
            break x;
        }
        assert!(Instant::now() < deadline, "no loss counted\n{}", pmd.tail());
        std::thread::sleep(Duration::from_millis(100));
    };
    pmd.stop();
    let x_after = pmd.xstats();
    for key in ["tx_good_packets", "tx_lost_on_link_down"] {
        assert_eq!(
            stat(&x, key),
            stat(&x_after, key),
            "{key} moved after the generation ended"
        );
    }
    eprintln!(
        "forgelost: sent {sent}, lost {} ({forged})",
        stat(&x, "tx_lost_on_link_down")
    );
    // Every frame sent was left unread: all lost, and no more.
    assert_eq!(stat(&x, "tx_good_packets"), sent);
    assert_eq!(
        stat(&x, "tx_lost_on_link_down"),
        sent,
        "after the slave's {forged}"
    );
    if secondary {
        let out = proc_info(&env, &files.prefix, "--xstats");
        let lost = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("tx_lost_on_link_down: "))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no tx_lost_on_link_down in dpdk-proc-info:\n{out}"));
        assert_eq!(lost, sent, "dpdk-proc-info's tx_lost_on_link_down");
    } else {
        eprintln!(
            "{test}: dpdk-proc-info skipped: secondary processes need a primary in hugepages"
        );
    }
    assert!(pmd.quit().success());
}
