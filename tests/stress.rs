//! Two threads move at least 10 million frames of random sizes through a
//! memfd-backed region mapped twice (as two processes would), proving that
//! none is lost, duplicated, reordered or altered.

use std::sync::Arc;
use std::time::Duration;
use vecring_core::memory::{Expectation, HugepagePolicy, Region, RegionOptions};
use vecring_core::{abi, Consumer, Geometry, Producer};
use vecring_tests::{check_frame, fill_frame, frame_len, Watchdog};

const FRAMES: u64 = 10_000_000;
const BATCH: usize = 32;

#[test]
fn ten_million_frames_arrive_once_in_order_intact() {
    let _watchdog = Watchdog::new("stress", Duration::from_secs(600));
    let geometry = Geometry::default();
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Prefer,
        numa_node: None,
    };
    let master = Arc::new(Region::create(geometry, 1, &opts).unwrap());
    let fd = master.fd().try_clone_to_owned().unwrap();
    let slave = Arc::new(
        Region::attach(
            fd,
            &Expectation {
                geometry: Some(geometry),
                generation: Some(1),
            },
        )
        .unwrap(),
    );

    // SAFETY: the only producer (this mapping) and consumer (the other
    // mapping) of ring 0.
    let mut tx = unsafe { Producer::attach(master.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    // SAFETY: as above.
    let mut rx = unsafe { Consumer::attach(slave.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };

    let producer = std::thread::spawn(move || {
        let mut seq = 0u64;
        let mut scratch = vec![0u8; 9216];
        while seq < FRAMES {
            let mut chunk = tx.write_chunk(BATCH * 5).unwrap();
            while seq < FRAMES && chunk.frames() < BATCH {
                let len = frame_len(seq);
                if !chunk.fits(len) {
                    break;
                }
                // Alternate the copying and the in-place paths.
                if seq % 2 == 0 {
                    fill_frame(&mut scratch[..len], seq);
                    chunk.push(&scratch[..len]).unwrap();
                } else {
                    chunk
                        .push_with(len, |w| {
                            fill_frame(&mut scratch[..len], seq);
                            let mut at = 0;
                            for seg in w.segments_mut() {
                                seg.copy_from_slice(&scratch[at..at + seg.len()]);
                                at += seg.len();
                            }
                        })
                        .unwrap();
                }
                seq += 1;
            }
            if chunk.commit() == 0 {
                std::hint::spin_loop();
            }
        }
        tx.stats()
    });

    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    while expected < FRAMES {
        let mut chunk = rx.read_chunk(BATCH).unwrap();
        let mut got = 0;
        while let Some(frame) = chunk.next_frame().unwrap() {
            let n = frame.copy_to(&mut buf);
            assert_eq!(n, frame_len(expected), "frame {expected}: length");
            let seq = check_frame(&buf[..n]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(seq, expected, "lost, duplicated or reordered");
            expected += 1;
            got += 1;
        }
        if got == 0 {
            std::hint::spin_loop();
        }
    }
    let sent = producer.join().unwrap();
    assert_eq!(sent.frames, FRAMES);
    assert_eq!(rx.stats().frames, FRAMES);
    assert_eq!(rx.ready_slots().unwrap(), 0, "nothing extra arrived");
    assert_eq!(rx.stats().corruptions, 0);
}
