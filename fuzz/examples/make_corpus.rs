//! Writes the seed corpus (`fuzz/corpus/<target>/`) from valid messages and
//! rings made by the real encoder and producer:
//! `cargo run --manifest-path fuzz/Cargo.toml --example make_corpus`.

use std::path::Path;
use std::sync::atomic::Ordering;
use vecring_core::internal::abi::{SlotDesc, DESC_STAMP_MASK};
use vecring_core::internal::handshake::{Kind, Msg};
use vecring_core::{Geometry, HeapRing, Producer, Region, RegionOptions, RingStorage};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// A ring-endpoints input: `side`, the geometry byte and largest frame,
/// and the ring's state after a producer sent `frames`, then `ops`.
fn ring_input(side: u8, geo: u8, max: u16, frames: &[usize], ops: &[u8]) -> Vec<u8> {
    let slot_count = 2u32 << (geo % 6);
    let slot_size = 64u32 << ((geo >> 3) % 3);
    let g = Geometry::with_max_frame_len(slot_count, slot_size, u32::from(max)).unwrap();
    let ring = HeapRing::new(g);
    // SAFETY: the ring is new; this is its only producer.
    let mut tx = unsafe { Producer::attach(ring.clone()) }.unwrap();
    for (i, &len) in frames.iter().enumerate() {
        tx.send(&vec![i as u8; len]).unwrap();
    }
    let head = ring.control().head.index.load(Ordering::Acquire);
    let mut v = vec![side, geo];
    v.extend_from_slice(&(max - 1).to_le_bytes());
    if side == 0 {
        // Consumer: its tail at 0, the head `head` slots ahead.
        v.extend_from_slice(&0u64.to_le_bytes());
        v.push((head as u8) << 1);
    } else {
        // Producer: its head where it is, the consumer's tail at 0 (behind).
        v.extend_from_slice(&head.to_le_bytes());
        v.push(((head as u8) << 1) | 1);
    }
    // Each descriptor: length and flags, then selector 0 (the stamp of
    // its slot's lap from the endpoint's index) when it holds that stamp,
    // otherwise 240 and the whole word.
    let base = if side == 0 { 0 } else { head };
    let shift = slot_count.trailing_zeros();
    for (slot, d) in ring.descs().iter().enumerate() {
        let word = d.0.load(Ordering::Relaxed);
        let index = base + ((slot as u64).wrapping_sub(base) & (u64::from(slot_count) - 1));
        v.extend_from_slice(&word.to_le_bytes()[..3]);
        if word & DESC_STAMP_MASK == SlotDesc::stamp(index, shift) {
            v.push(0);
        } else {
            v.push(240);
            v.extend_from_slice(&word.to_le_bytes());
        }
    }
    let bytes = slot_count as usize * slot_size as usize;
    v.extend_from_slice(&(bytes as u16).to_le_bytes());
    // SAFETY: the data area is `bytes` long; nothing writes it now.
    v.extend_from_slice(unsafe { std::slice::from_raw_parts(ring.data(), bytes) });
    v.extend_from_slice(ops);
    v
}

fn main() {
    let g = Geometry::with_max_frame_len(512, 64, 1514).unwrap();
    for (name, m) in [
        ("hello", Msg::hello(g, 1, 1 << 21, 7)),
        ("ack", Msg::new(Kind::Ack, 7)),
        (
            "reject",
            Msg::refusal(Kind::Reject, 0, "uid 1000 is not allowed"),
        ),
        (
            "nack",
            Msg::refusal(
                Kind::Nack,
                7,
                "region slot count mismatch: ours 512, theirs 1024",
            ),
        ),
    ] {
        write("handshake_decode", name, &m.encode());
        // handshake_recv: no flags and no descriptors (first two bytes),
        // then the datagram; the Hello also with the region and a doorbell
        // per ring of one queue pair (3 descriptors), as a master sends it.
        let mut input = vec![0u8, 0];
        input.extend_from_slice(&m.encode());
        write("handshake_recv", name, &input);
    }
    let mut input = vec![0u8, 3];
    input.extend_from_slice(&Msg::hello(g, 1, 1 << 21, 7).encode());
    write("handshake_recv", "hello_fds", &input);
    // region_attach: headers of regions the real master makes, with the
    // memfd at the header's size (mode 0), and with every expectation set
    // as the slave's handshake sets them (mode 0x78).
    for (name, geometry, queues) in [
        ("one_queue", g, 1u16),
        (
            "four_queues",
            Geometry::with_max_frame_len(64, 128, 256).unwrap(),
            4,
        ),
    ] {
        let opts = RegionOptions {
            hugepages: vecring_core::HugepagePolicy::Never,
            ..RegionOptions::default()
        };
        let region = Region::create(geometry, queues, 7, &opts).unwrap();
        // SAFETY: the region maps at least `HEADER_AREA` bytes, and its
        // first bytes are the header the master just wrote: plain
        // integers, read as bytes while the region lives.
        let header = unsafe {
            std::slice::from_raw_parts(
                region.as_ptr(),
                std::mem::size_of::<vecring_core::internal::abi::RegionHeader>(),
            )
        };
        let mut plain = header.to_vec();
        plain.push(0);
        write("region_attach", name, &plain);
        let mut expecting = header.to_vec();
        expecting.push(0x78);
        expecting.extend_from_slice(&7u64.to_le_bytes());
        expecting.extend_from_slice(&queues.to_le_bytes());
        expecting.extend_from_slice(&geometry.slot_count().to_le_bytes());
        expecting.extend_from_slice(&geometry.slot_size().to_le_bytes());
        expecting.extend_from_slice(&geometry.max_frame_len().to_le_bytes());
        expecting.extend_from_slice(&queues.to_le_bytes());
        write("region_attach", &format!("{name}_expected"), &expecting);
    }
    // 16 slots of 64 bytes, frames up to 512 bytes.
    let frames = [64, 64, 60, 200, 1, 300, 64];
    // read_chunk(32) + release; recv (cap 1024); read_chunk runs; recv_batch.
    let reads = [2, 32, 0, 0, 0x00, 0x04, 3, 32, 1, 4, 0x00, 0x02, 4];
    write(
        "ring_endpoints",
        "consumer_frames",
        &ring_input(0, 3, 512, &frames, &reads),
    );
    // 32 slots of 128 bytes, frames up to 256 bytes.
    write(
        "ring_endpoints",
        "consumer_small",
        &ring_input(0, 2 | 8, 256, &[100, 256, 30], &[0, 0, 1, 1, 2, 0x00, 0x01]),
    );
    // Producer: send, send_batch, a chunk with pushes, unread.
    let writes = [
        0, 64, 0, 1, 3, 64, 0, 200, 0, 1, 0, 2, 8, 1, 3, 0, 64, 0, 0, 1, 100, 0, 0, 2, 60, 0, 3, 3,
    ];
    write(
        "ring_endpoints",
        "producer_sends",
        &ring_input(1, 3, 512, &[64, 64], &writes),
    );
}
