//! Model checks of the ring's index protocol with loom.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vecring-core --test loom --release`.
//! Capacities are tiny so every interleaving is explored in seconds.
#![cfg(loom)]

use vecring_core::{Consumer, Geometry, HeapRing, Producer, RecvError};

fn pattern(seq: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| seq.wrapping_mul(17).wrapping_add(i as u8))
        .collect()
}

/// Producer sends `lens.len()` frames through a ring of `slots` slots of 64
/// bytes while the consumer receives; every frame arrives once, in order,
/// intact, and the ring never reports corruption.
fn run(slots: u32, max_frame: u32, lens: &'static [usize]) {
    loom::model(move || {
        let ring = HeapRing::new(Geometry::with_max_frame_len(slots, 64, max_frame).unwrap());
        // SAFETY: the model's only producer and consumer of this ring.
        let (mut tx, mut rx) = unsafe {
            (
                Producer::attach(ring.clone()).unwrap(),
                Consumer::attach(ring.clone()).unwrap(),
            )
        };
        let producer = loom::thread::spawn(move || {
            for (seq, &len) in lens.iter().enumerate() {
                let f = pattern(seq as u8, len);
                loop {
                    match tx.send(&f) {
                        Ok(()) => break,
                        Err(vecring_core::SendError::Push(vecring_core::PushError::Full)) => {
                            loom::thread::yield_now()
                        }
                        Err(e) => panic!("producer: {e}"),
                    }
                }
            }
        });
        let mut buf = [0u8; 256];
        for (seq, &len) in lens.iter().enumerate() {
            let n = loop {
                match rx.recv(&mut buf) {
                    Ok(n) => break n,
                    Err(RecvError::Empty) => loom::thread::yield_now(),
                    Err(e) => panic!("consumer: {e}"),
                }
            };
            assert_eq!(n, len);
            assert_eq!(&buf[..n], &pattern(seq as u8, len)[..]);
        }
        producer.join().unwrap();
        assert!(rx.ready_slots().unwrap() == 0);
    });
}

#[test]
fn single_slot_frames_through_two_slots() {
    run(2, 64, &[1, 64, 7]);
}

#[test]
fn multi_slot_frames_wrap_around() {
    run(4, 128, &[100, 30, 128]);
}
