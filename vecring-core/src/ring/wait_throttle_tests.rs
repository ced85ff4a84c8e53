//! The signalling side of the wait line against a consumer that asks for
//! signals and never reads (`wait`'s throttle), on a heap ring whose
//! consumer line the tests write. Beside the ring's modules rather than
//! inside `wait`, which the producer and consumer import.

use super::heap::HeapRing;
use super::storage::{Bell, RingStorage};
use super::wait::{WaitProtocol, THROTTLE_GAP, UNANSWERED_MAX};
use crate::abi::{WAIT_ARMED, WAIT_PRESENT};
use crate::geometry::Geometry;
use crate::sync::Ordering;
use std::time::Instant;

/// The producer's wait state and a ring whose consumer line the test
/// writes as a hostile (or honest) consumer would.
fn producer() -> (WaitProtocol, HeapRing) {
    let ring = HeapRing::new(Geometry::DEFAULT);
    let ctl = ring.control();
    let state = WaitProtocol::attach(&ctl.producer_wait);
    (state, ring)
}

/// The consumer says it sleeps with a fresh odd sequence, then the
/// producer stores; returns whether that store signalled.
fn burst(w: &mut WaitProtocol, ring: &HeapRing, seq: u32) -> bool {
    let ctl = ring.control();
    ctl.consumer_wait.state.store(
        WAIT_PRESENT | WAIT_ARMED | u64::from(seq),
        Ordering::Relaxed,
    );
    let before = w.signals;
    w.after_store(
        ring,
        &ctl.producer_wait,
        &ctl.consumer_wait,
        &ctl.tail.index,
        Bell::Data,
    );
    w.signals > before
}

#[test]
fn a_consumer_that_sleeps_and_reads_is_signalled_every_time() {
    let (mut w, ring) = producer();
    for i in 0..10 * UNANSWERED_MAX {
        assert!(burst(&mut w, &ring, 2 * i + 1), "sleep {i}");
        // It woke and read: its tail moved.
        ring.control()
            .tail
            .index
            .store(u64::from(i) + 1, Ordering::Relaxed);
    }
    assert_eq!(w.held_back, 0);
}

#[test]
fn a_consumer_that_asks_and_never_reads_is_throttled_then_released() {
    let (mut w, ring) = producer();
    let mut seq = 1;
    let mut fresh = || {
        seq += 2;
        seq
    };
    let mut sent = 0;
    let t0 = Instant::now();
    let tries = 100 * UNANSWERED_MAX;
    for _ in 0..tries {
        sent += u32::from(burst(&mut w, &ring, fresh()));
    }
    let gaps = (t0.elapsed().as_nanos() / THROTTLE_GAP.as_nanos()) as u32;
    // The first UNANSWERED_MAX go (the first of them sets the index
    // seen), then one per gap at most.
    assert!(
        sent <= UNANSWERED_MAX + gaps + 1,
        "{sent} signals of {tries} in {gaps} gaps"
    );
    assert!(w.held_back > 0 && w.held_back == u64::from(tries - sent));
    // A sequence held back is signalled once the gap has passed.
    let held = fresh();
    let at_once = burst(&mut w, &ring, held);
    std::thread::sleep(THROTTLE_GAP);
    assert!(at_once || burst(&mut w, &ring, held));
    // Reading ends the throttle.
    ring.control().tail.index.store(7, Ordering::Relaxed);
    for _ in 0..UNANSWERED_MAX / 2 {
        assert!(burst(&mut w, &ring, fresh()));
    }
}
