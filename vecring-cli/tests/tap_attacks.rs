//! `vecring tap` on the host (the link's master) against a hostile
//! container (the slave: this test, with vecring-core, and a second
//! process of its own), each attack performed as the container would:
//!
//! - a toggling second process rewrites the virtio-net header of every
//!   slot while valid super-frames flow (`--offload`): the host's kernel
//!   must see only headers the bridge checked, read by a packet socket on
//!   the interface with `PACKET_VNET_HDR` (no plain frame longer than the
//!   MTU, no super-frame without a checksum to complete);
//! - super-frames with a segment size of 1, forwarded by the host to an
//!   interface without TSO or GSO: refused and counted, where each would
//!   have become some 9000 packets;
//! - a trickle of frames the bridge drops: the bridge's CPU stays within
//!   [`TRICKLE_FACTOR`] of the sender's, instead of polling after each.
//!
//! Needs root (namespaces, interfaces) and `ethtool` and `ping`
//! (`scripts/setup.sh`); as another user the tests say so and pass. Every
//! namespace is the test's own and is removed at the end.

mod common;
mod tap_env;

use common::{Proc, Watchdog};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tap_env::*;
use vecring_core::internal::abi::{self, Dir};
use vecring_core::{Link, Role, Sender};

/// The bridge's CPU under a dropped trickle may be at most this many
/// times the sending thread's (and [`TRICKLE_SLACK`]): each frame costs
/// the sender a write and its doorbell, and the bridge a wakeup, a read
/// and a sleep.
const TRICKLE_FACTOR: u64 = 4;
/// Scheduling noise allowed on top of the factor.
const TRICKLE_SLACK: Duration = Duration::from_millis(100);

/// `virtio_net_hdr` flags and types (`linux/virtio_net.h`).
const NEEDS_CSUM: u8 = 1;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;

/// A host tap (`--role master`) in its own namespace, with `extra`, and
/// this process as the container's slave, attached.
struct Host {
    ns: Netns,
    _run: Scratch,
    tap: Option<Proc>,
    link: Link,
}

impl Host {
    fn new(name: &str, extra: &[&str]) -> Host {
        let (ns, run) = (Netns::new(), Scratch::new(name));
        let tap = tap(&ns, "master", run.path(), extra);
        let link = Link::builder("d", "l")
            .role(Role::Slave)
            .run_dir(run.path())
            .open()
            .unwrap();
        link.wait_up(Duration::from_secs(30)).unwrap();
        ns.carrier_becomes(true);
        Host {
            ns,
            _run: run,
            tap: Some(tap),
            link,
        }
    }

    /// The host interface's MAC.
    fn mac(&self) -> [u8; 6] {
        let text = self.ns.sh(&format!("cat /sys/class/net/{IF}/address"));
        let mut mac = [0u8; 6];
        for (b, p) in mac.iter_mut().zip(text.trim().split(':')) {
            *b = u8::from_str_radix(p, 16).unwrap();
        }
        mac
    }

    /// Stops the tap; its stderr with the summary.
    fn stop(&mut self) -> String {
        stop(self.tap.take().unwrap())
    }
}

/// The IPv4 header checksum of `h`.
fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A TCP/IPv4 super-frame of `len` bytes (virtio-net header included) to
/// `dst`, from 10.78.0.2 to `to`, cut in segments of `gso_size`.
fn super_frame(dst: [u8; 6], to: [u8; 4], len: usize, gso_size: u16) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0] = NEEDS_CSUM;
    f[1] = GSO_TCPV4;
    f[2..4].copy_from_slice(&54u16.to_ne_bytes());
    f[4..6].copy_from_slice(&gso_size.to_ne_bytes());
    f[6..8].copy_from_slice(&34u16.to_ne_bytes());
    f[8..10].copy_from_slice(&16u16.to_ne_bytes());
    let e = &mut f[10..];
    e[..6].copy_from_slice(&dst);
    e[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x78]);
    e[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (len - 10 - 14) as u16;
    let ip = &mut e[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&[10, 78, 0, 2]);
    ip[16..20].copy_from_slice(&to);
    let c = ip_checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let tcp = &mut e[34..54];
    tcp[0..2].copy_from_slice(&40000u16.to_be_bytes());
    tcp[2..4].copy_from_slice(&5001u16.to_be_bytes());
    tcp[12] = 0x50;
    tcp[13] = 0x10;
    tcp[14..16].copy_from_slice(&1024u16.to_be_bytes());
    f
}

/// Sends `frame` `n` times, waiting for room.
fn send_n(tx: &mut Sender, frame: &[u8], n: usize) {
    for _ in 0..n {
        tx.send_timeout(frame, Duration::from_secs(10)).unwrap();
    }
}

/// What a packet socket with `PACKET_VNET_HDR` saw arrive on the host's
/// interface.
#[derive(Default)]
struct Seen {
    frames: AtomicU64,
    /// Plain frames longer than the MTU allows.
    plain_too_long: AtomicU64,
    /// Super-frames without a checksum to complete.
    gso_without_csum: AtomicU64,
}

/// Reads the interface's frames in namespace `ns` on a thread of its own
/// (entered into the namespace) until `stop`.
fn watch_interface(
    ns: &str,
    max_plain: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<Seen>,
) -> std::thread::JoinHandle<()> {
    let ns_file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        // SAFETY: setns on this thread alone, with a namespace descriptor.
        let entered = unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(entered, 0, "setns: {}", std::io::Error::last_os_error());
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket calls on values built here.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
        assert!(
            fd >= 0,
            "packet socket: {}",
            std::io::Error::last_os_error()
        );
        let one: libc::c_int = 1;
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 100_000,
        };
        let name = std::ffi::CString::new(IF).unwrap();
        // SAFETY: as above; the options point to live values of their size.
        unsafe {
            assert_eq!(
                libc::setsockopt(
                    fd,
                    libc::SOL_PACKET,
                    libc::PACKET_VNET_HDR,
                    (&one as *const libc::c_int).cast(),
                    4
                ),
                0
            );
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            );
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
            assert!(sll.sll_ifindex > 0);
            assert_eq!(
                libc::bind(
                    fd,
                    (&sll as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32
                ),
                0
            );
        }
        ready_tx.send(()).unwrap();
        let mut buf = vec![0u8; 70_000];
        while !stop.load(Ordering::Relaxed) {
            // SAFETY: reads into a live buffer of its length.
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 10 {
                continue;
            }
            let n = n as usize;
            seen.frames.fetch_add(1, Ordering::Relaxed);
            let (flags, gso_type) = (buf[0], buf[1] & 0x7f);
            if gso_type == GSO_NONE && n - 10 > max_plain {
                seen.plain_too_long.fetch_add(1, Ordering::Relaxed);
            }
            if gso_type != GSO_NONE && flags & NEEDS_CSUM == 0 {
                seen.gso_without_csum.fetch_add(1, Ordering::Relaxed);
            }
        }
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(fd) };
    });
    ready_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    h
}

/// A second process of the container: forked, it flips the first two
/// bytes (flags and type of a virtio-net header) at every slot of the
/// slave's sending ring for `secs` seconds, then exits.
fn fork_toggler(link: &Link, secs: i64) -> libc::pid_t {
    let region = link.region().expect("up");
    let g = region.geometry();
    let ring = abi::ring_index(0, Dir::SlaveToMaster);
    let data =
        abi::ring_offset(ring, g.slot_count(), g.slot_size()) + abi::data_offset(g.slot_count());
    // SAFETY: the data area lies inside the mapped region.
    let base = unsafe { region.as_ptr().add(data as usize) } as *mut u8;
    let (slots, size) = (g.slot_count() as usize, g.slot_size() as usize);
    // SAFETY: the child only writes to the shared mapping with volatile
    // stores and calls async-signal-safe functions (time, _exit).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: see above; every pointer stays inside the data area.
        unsafe {
            let end = libc::time(std::ptr::null_mut()) + secs;
            while libc::time(std::ptr::null_mut()) < end {
                for s in 0..slots {
                    let p = base.add(s * size);
                    p.write_volatile(p.read_volatile() ^ NEEDS_CSUM);
                    let t = p.add(1);
                    t.write_volatile(t.read_volatile() ^ GSO_TCPV4);
                }
            }
            libc::_exit(0);
        }
    }
    pid
}

#[test]
fn a_header_rewritten_after_the_check_never_reaches_the_kernel() {
    if !root_or_skip("a_header_rewritten_after_the_check_never_reaches_the_kernel") {
        return;
    }
    let _w = Watchdog::new("tap header toggling", Duration::from_secs(120));
    let mut host = Host::new("toggle", &["--offload", "--mtu", "1500"]);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let watcher = watch_interface(&host.ns.0, 1514, Arc::clone(&stop), Arc::clone(&seen));
    let frame = super_frame(host.mac(), [10, 78, 0, 1], 9000, 1448);
    let mut tx = host.link.sender().unwrap();
    let toggler = fork_toggler(&host.link, 3);
    let start = Instant::now();
    let mut sent = 0;
    while start.elapsed() < Duration::from_secs(3) {
        send_n(&mut tx, &frame, 64);
        sent += 64;
    }
    let mut status = 0;
    // SAFETY: our own child; it exits by itself after its seconds.
    unsafe { libc::waitpid(toggler, &mut status, 0) };
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let err = host.stop();
    let (frames, long, nocsum) = (
        seen.frames.load(Ordering::Relaxed),
        seen.plain_too_long.load(Ordering::Relaxed),
        seen.gso_without_csum.load(Ordering::Relaxed),
    );
    eprintln!("toggling: sent {sent}; the kernel got {frames}: {long} plain frames over the MTU, {nocsum} GSO without NEEDS_CSUM");
    eprintln!("{err}");
    assert!(frames > 0, "no frame reached the interface");
    assert_eq!(
        (long, nocsum),
        (0, 0),
        "the kernel got headers the bridge refuses"
    );
    assert!(
        summary_count(&err, "to the interface")
            + summary_count(&err, "bad length")
            + summary_count(&err, "gso without checksum")
            > 0
    );
}

#[test]
fn super_frames_of_one_byte_segments_are_refused() {
    if !root_or_skip("super_frames_of_one_byte_segments_are_refused") {
        return;
    }
    require("ethtool");
    require("ping");
    let _w = Watchdog::new("tap gso segments", Duration::from_secs(120));
    let mut host = Host::new("gso-segs", &["--offload", "--mtu", "1500"]);
    // The host forwards the container's traffic to a namespace behind a
    // veth without TSO or GSO: its kernel cuts super-frames itself.
    let far = Netns::new();
    let ns = &host.ns;
    sh(&format!(
        "ip link add va netns {} type veth peer name vb netns {}",
        ns.0, far.0
    ));
    ns.sh(&format!(
        "ip addr add 10.78.0.1/24 dev {IF} && ip addr add 10.79.0.1/24 dev va && ip link set va up && \
         ethtool -K va tso off gso off >/dev/null && sysctl -qw net.ipv4.ip_forward=1"
    ));
    far.sh("ip addr add 10.79.0.2/24 dev vb && ip link set vb up");
    ns.sh("ping -c 1 -W 5 10.79.0.2 >/dev/null");
    let tx_packets = || -> u64 {
        ns.sh("cat /sys/class/net/va/statistics/tx_packets")
            .trim()
            .parse()
            .unwrap()
    };
    let dst = host.mac();
    let mut tx = host.link.sender().unwrap();
    let before = tx_packets();
    send_n(&mut tx, &super_frame(dst, [10, 79, 0, 2], 9000, 1), 10);
    std::thread::sleep(Duration::from_millis(500));
    let after_tiny = tx_packets();
    send_n(&mut tx, &super_frame(dst, [10, 79, 0, 2], 9000, 1448), 10);
    wait_until(
        Duration::from_secs(10),
        "the good super-frames forwarded",
        || tx_packets() >= after_tiny + 60,
    );
    std::thread::sleep(Duration::from_millis(300));
    let after_good = tx_packets();
    let err = host.stop();
    eprintln!(
        "segments: 10 frames of segment size 1 -> {} packets, 10 of 1448 -> {} packets\n{err}",
        after_tiny - before,
        after_good - after_tiny
    );
    assert_eq!(summary_count(&err, "gso too many segments"), 10, "{err}");
    assert!(
        after_tiny - before < 10,
        "segment size 1 was forwarded: {} packets",
        after_tiny - before
    );
    // 8946 bytes of TCP payload in segments of 1448: 7 each.
    assert!(
        (70..80).contains(&(after_good - after_tiny)),
        "{}",
        after_good - after_tiny
    );
    drop(far);
}

/// CPU time of a process (all its threads), from schedstat.
fn process_cpu(pid: u32) -> Duration {
    let mut ns = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += s
                .split_whitespace()
                .next()
                .unwrap_or("0")
                .parse::<u64>()
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the clock into a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[test]
fn a_trickle_of_dropped_frames_does_not_keep_the_bridge_polling() {
    if !root_or_skip("a_trickle_of_dropped_frames_does_not_keep_the_bridge_polling") {
        return;
    }
    let _w = Watchdog::new("tap dropped trickle", Duration::from_secs(120));
    let mut host = Host::new("trickle", &["--mtu", "1500"]);
    let pid = host.tap.as_ref().unwrap().0.id();
    // Longer than the MTU allows: every one is dropped.
    let frame = vec![0xeeu8; 2000];
    let mut tx = host.link.sender().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (bridge0, sender0, start) = (process_cpu(pid), thread_cpu(), Instant::now());
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        tx.send_timeout(&frame, Duration::from_secs(10)).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_micros(150));
    }
    let (bridge, sender) = (process_cpu(pid) - bridge0, thread_cpu() - sender0);
    let secs = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(300));
    let err = host.stop();
    eprintln!(
        "trickle: {sent} frames in {secs:.1} s ({:.0}/s), all dropped; bridge {:?} ({:.1} % of a CPU), sender {:?}: {:.2}x",
        sent as f64 / secs,
        bridge,
        bridge.as_secs_f64() / secs * 100.0,
        sender,
        bridge.as_secs_f64() / sender.as_secs_f64()
    );
    assert_eq!(summary_count(&err, "bad length"), sent, "{err}");
    assert!(
        bridge <= sender * TRICKLE_FACTOR as u32 + TRICKLE_SLACK,
        "the bridge used {bridge:?} of CPU for a trickle that cost the sender {sender:?}"
    );
}
