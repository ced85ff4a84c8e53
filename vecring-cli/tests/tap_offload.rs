//! `vecring tap` with offloads: TCP super-frames from the kernel cut into
//! pieces that fit the link, their bytes arriving intact at the link's MTU
//! and at 1500, and a ring too small for a super-frame's pieces (a master
//! may choose one), whose frames are dropped and counted while the
//! interface goes on.
//!
//! Needs root (namespaces, interfaces) and `iperf3` and `ping`
//! (`scripts/setup.sh`); as another user the tests say so and pass.

mod common;
mod tap_env;

use common::Watchdog;
use std::io::Read;
use std::time::{Duration, Instant};
use tap_env::*;

/// Runs `f` in a thread that has entered namespace `ns`'s network
/// namespace (setns affects the calling thread only).
fn in_netns<T: Send + 'static>(
    ns: &Netns,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(format!("/run/netns/{}", ns.0)).unwrap();
    std::thread::spawn(move || {
        // SAFETY: a namespace file of our own; the thread enters it.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Sends `data` over TCP from the master's side to the slave's, and
/// returns what arrived.
fn tcp_transfer(p: &Pair, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    use std::net::{Shutdown, TcpListener, TcpStream};
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let server = in_netns(&p.b, move || {
        let l = TcpListener::bind("10.77.0.2:5001").unwrap();
        ready_tx.send(()).unwrap();
        let (mut c, _) = l.accept().unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        got
    });
    ready.recv_timeout(Duration::from_secs(10)).unwrap();
    let data = data.to_vec();
    let client = in_netns(&p.a, move || {
        let mut c = TcpStream::connect("10.77.0.2:5001").unwrap();
        c.write_all(&data).unwrap();
        c.shutdown(Shutdown::Write).unwrap();
    });
    client.join().unwrap();
    server.join().unwrap()
}

#[test]
fn with_offloads_tcp_super_frames_cross_in_pieces_and_the_bytes_arrive_intact() {
    if !root_or_skip("with_offloads_tcp_super_frames_cross_in_pieces") {
        return;
    }
    require("iperf3");
    require("ping");
    let _w = Watchdog::new("tap offloads", Duration::from_secs(150));
    // 8 MiB of bytes no two runs of which are alike over a segment.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..8 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    // At the link's MTU (a piece is one segment) and at 1500 (a piece is
    // several).
    for mtu in ["9192", "1500"] {
        let p = Pair::new(&format!("offload-{mtu}"), &["--offload", "--mtu", mtu]);
        let big = if mtu == "1500" { "1472" } else { "8972" };
        assert!(p
            .b
            .sh(&format!("ping -c 2 -i 0.2 -W 2 -s {big} -M do 10.77.0.1"))
            .contains("2 received"));
        let back = tcp_transfer(&p, &data);
        assert!(
            back == data,
            "MTU {mtu}: {} bytes arrived of {}, or other bytes",
            back.len(),
            data.len()
        );
        // The connection's last segments (the ACK of the server's FIN)
        // may still be on their way: the count once it stays still.
        let mut a_tx = p.a.counter("tx_bytes");
        let mut still = Instant::now();
        let settled = Instant::now() + Duration::from_secs(10);
        while still.elapsed() < Duration::from_millis(300) && Instant::now() < settled {
            std::thread::sleep(Duration::from_millis(20));
            let now = p.a.counter("tx_bytes");
            if now != a_tx {
                (a_tx, still) = (now, Instant::now());
            }
        }
        let err = stop(p.master_take());
        let (frames, bytes) = (
            summary_count(&err, "to the link"),
            summary_count(&err, "frames"),
        );
        // Super-frames: more than an MTU's worth each on average.
        assert!(
            frames > 0 && bytes / frames > 1514,
            "MTU {mtu}: no super-frames:\n{err}"
        );
        assert_eq!(
            bytes, a_tx,
            "the interface's bytes against the bridge's:\n{err}"
        );
        for label in [
            "too long for the link",
            "bad length",
            "bad header",
            "refused by the interface",
        ] {
            assert_eq!(summary_count(&err, label), 0, "MTU {mtu}: {label}:\n{err}");
        }
    }
}

/// A master may make its ring small: 128 slots of 256 bytes hold two
/// 9 KiB frames, but not a TCP super-frame of four segments or more, whose
/// 9 KiB pieces need 37 slots each. Such a frame is dropped and counted, never waited
/// for (the wait would find the ring as empty as it gets and spin, and the
/// queue would never read its interface again).
#[test]
fn a_super_frame_the_ring_can_never_hold_is_dropped_and_the_interface_goes_on() {
    if !root_or_skip("a_super_frame_the_ring_can_never_hold") {
        return;
    }
    require("ping");
    let _w = Watchdog::new("tap tiny ring", Duration::from_secs(120));
    let p = Pair::with_master(
        "tiny-ring",
        &["--offload", "--mtu", "9192"],
        &["--slots", "128", "--slot-size", "256"],
    );
    // Super-frames from the master's side: a transfer that may or may not
    // get through (its big frames are dropped), bounded in time.
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let server = in_netns(&p.b, move || {
        let l = std::net::TcpListener::bind("10.77.0.2:5002").unwrap();
        ready_tx.send(()).unwrap();
        l.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_secs(8);
        let mut got = 0usize;
        while Instant::now() < end {
            if let Ok((mut c, _)) = l.accept() {
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(6))).unwrap();
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    got += n;
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        got
    });
    ready.recv_timeout(Duration::from_secs(10)).unwrap();
    let client = in_netns(&p.a, || {
        use std::io::Write;
        let mut c = std::net::TcpStream::connect("10.77.0.2:5002").unwrap();
        c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let block = vec![0x5au8; 1 << 20];
        for _ in 0..8 {
            if c.write_all(&block).is_err() {
                break;
            }
        }
    });
    client.join().unwrap();
    let _ = server.join().unwrap();
    // The queue still reads its interface: small frames cross both ways.
    assert!(
        p.a.sh("ping -c 3 -i 0.2 -W 2 10.77.0.2")
            .contains("3 received"),
        "the master's side stopped sending"
    );
    let err = stop(p.master_take());
    assert!(
        summary_count(&err, "too long for the link") > 0,
        "no super-frame was counted as too long:\n{err}"
    );
}
