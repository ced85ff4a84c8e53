//! `vecring tap` against a hostile peer: this test, with vecring-core,
//! is the master of the link and sends the slave's tap frames too long,
//! too short, garbage, or with virtio-net headers no kernel sends; the
//! bridge drops and counts each, delivers the good frames after them, and
//! still carries the slave kernel's frames (an ARP request from `ping`)
//! the other way.
//!
//! Needs root (namespaces, interfaces) and `ping` (`scripts/setup.sh`); as
//! another user the tests say so and pass. Every namespace is the test's
//! own and is removed at the end.

mod common;
mod tap_env;

use common::{Proc, Watchdog};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tap_env::*;
use vecring_core::{HugepagePolicy, Link, Role};

/// An Ethernet frame of `len` bytes to `dst` from a made-up address, with
/// `fill` as type and payload.
fn ether(dst: [u8; 6], len: usize, fill: u8) -> Vec<u8> {
    let mut f = vec![fill; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    f
}

/// The slave's MAC, from its namespace.
fn mac_of(ns: &Netns) -> [u8; 6] {
    let text = ns.sh(&format!("cat /sys/class/net/{IF}/address"));
    let mut mac = [0u8; 6];
    for (b, p) in mac.iter_mut().zip(text.trim().split(':')) {
        *b = u8::from_str_radix(p, 16).unwrap();
    }
    mac
}

/// Sends `frames` on the master's link (waiting for room), in order.
fn send_all(link: &Link, frames: &[Vec<u8>]) {
    let mut tx = link.sender().unwrap();
    for f in frames {
        tx.send_timeout(f, Duration::from_secs(10)).unwrap();
    }
}

/// Waits (at most 10 s) for an ARP frame on the master's link (its
/// Ethernet header after `prefix` bytes); true if one came.
fn arp_arrives(link: &Link, prefix: usize) -> bool {
    let mut rx = link.receiver().unwrap();
    let mut buf = vec![0u8; 9216];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match rx.recv_timeout(&mut buf, Duration::from_millis(200)) {
            Ok(n) if n >= prefix + 14 && buf[prefix + 12..prefix + 14] == [0x08, 0x06] => {
                return true
            }
            _ => {}
        }
    }
    false
}

/// A slave tap in its own namespace and this process as its hostile
/// master: frames of every bad shape, then good ones; the bridge drops
/// and counts the bad, delivers the rest, and still carries frames both
/// ways. `offload`: with `--offload`, and bad virtio-net headers too.
fn hostile_master(offload: bool) {
    let _w = Watchdog::new("tap hostile peer", Duration::from_secs(120));
    let (b, run) = (
        Netns::new(),
        Scratch::new(if offload { "hostile-vnet" } else { "hostile" }),
    );
    let link = Link::builder("d", "l")
        .role(Role::Master)
        .run_dir(run.path())
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap();
    let mut extra = vec!["--mtu", "1500"];
    if offload {
        extra.push("--offload");
    }
    let slave = tap(&b, "slave", run.path(), &extra);
    link.wait_up(Duration::from_secs(30)).unwrap();
    b.carrier_becomes(true);
    b.sh(&format!("ip addr add 10.77.0.2/24 dev {IF}"));
    let dst = mac_of(&b);
    let prefix = if offload { 10 } else { 0 };
    let with_hdr = |hdr: [u8; 10], f: Vec<u8>| {
        if offload {
            let mut v = hdr.to_vec();
            v.extend(f);
            v
        } else {
            f
        }
    };
    let plain = [0u8; 10];
    let mut frames = Vec::new();
    let (mut bad_len, mut bad_hdr, mut gso_no_csum, mut good) = (0u64, 0u64, 0u64, 0u64);
    // Longer than the MTU allows, at the link's largest and just past the
    // limit (MTU, Ethernet header, a VLAN tag).
    for len in [9216 - prefix, 1500 + 14 + 4 + 1] {
        frames.push(with_hdr(plain, ether(dst, len, 0xee)));
        bad_len += 1;
    }
    // Shorter than an Ethernet header.
    for len in [1, 13] {
        frames.push(with_hdr(plain, vec![0xff; len]));
        bad_len += 1;
    }
    if offload {
        // Shorter than the header itself.
        frames.push(vec![0u8; 9]);
        bad_len += 1;
        // Headers no kernel sends: unknown flags, UFO, a checksum place
        // past the end, GSO without a segment size or a checksum.
        let csum_far = {
            let mut h = [1u8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            h[6..8].copy_from_slice(&2000u16.to_ne_bytes());
            h
        };
        for hdr in [
            [0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            [1, 3, 54, 0, 100, 0, 34, 0, 6, 0],
            csum_far,
            [1, 1, 54, 0, 0, 0, 34, 0, 16, 0],
        ] {
            frames.push(with_hdr(hdr, ether(dst, 1000, 0x45)));
            bad_hdr += 1;
        }
        frames.push(with_hdr(
            [0, 1, 54, 0, 100, 0, 34, 0, 16, 0],
            ether(dst, 1000, 0x45),
        ));
        gso_no_csum += 1;
    }
    // Garbage of every valid length, to the slave and broadcast: the
    // bridge hands it over and the kernel discards it.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..400usize {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = 14 + (seed as usize % (1500 + 4 + 1));
        let to = if i % 2 == 0 { dst } else { [0xff; 6] };
        let mut f = ether(to, len, 0);
        for (j, byte) in f.iter_mut().enumerate().skip(12) {
            *byte = (seed >> (j % 8 * 8)) as u8 ^ j as u8;
        }
        frames.push(with_hdr(plain, f));
        good += 1;
    }
    let mut slave = slave;
    alive(&mut slave);
    let rx_before = b.counter("rx_packets");
    send_all(&link, &frames);
    alive(&mut slave);
    // Everything of a valid shape reached the interface, nothing else.
    wait_until(
        Duration::from_secs(10),
        "the good frames on the slave's interface",
        || b.counter("rx_packets") >= rx_before + good,
    );
    // The bridge still carries frames the other way: the slave's kernel
    // asks for 10.77.0.1's address, on the link.
    let pinger = Proc(
        b.cmd(&["ping", "-c", "3", "-i", "0.5", "10.77.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        arp_arrives(&link, prefix),
        "no ARP request from the slave after the hostile frames"
    );
    drop(pinger);
    let err = stop(slave);
    assert_eq!(summary_count(&err, "bad length"), bad_len, "{err}");
    assert_eq!(summary_count(&err, "bad header"), bad_hdr, "{err}");
    assert_eq!(
        summary_count(&err, "gso without checksum"),
        gso_no_csum,
        "{err}"
    );
    assert_eq!(summary_count(&err, "refused by the interface"), 0, "{err}");
    assert_eq!(summary_count(&err, "to the interface"), good, "{err}");
    drop(link);
    drop(b);
}

#[test]
fn a_hostile_peers_frames_never_stop_the_bridge() {
    if !root_or_skip("a_hostile_peers_frames_never_stop_the_bridge") {
        return;
    }
    require("ping");
    hostile_master(false);
}

#[test]
fn a_hostile_peers_virtio_net_headers_never_stop_the_bridge() {
    if !root_or_skip("a_hostile_peers_virtio_net_headers_never_stop_the_bridge") {
        return;
    }
    require("ping");
    hostile_master(true);
}
