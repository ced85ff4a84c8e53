//! The wait decision of a ring end (`ring::wait`): a nap until the other
//! side has acknowledged the wait protocol, a full sleep on the doorbell
//! from then on. Beside the ring's modules, as `wait_throttle_tests`.

use super::heap::heap_channel;
use super::wait::WaitDecision;
use super::RecvError;
use crate::geometry::Geometry;

#[test]
fn a_consumer_naps_until_the_producer_acknowledges_then_sleeps() {
    let (mut tx, mut rx) = heap_channel(Geometry::DEFAULT);
    let mut buf = vec![0u8; 2048];
    // Before the producer has seen the consumer armed: a nap, since a
    // publish now may come without a signal.
    assert_eq!(rx.prepare_wait(), Ok(WaitDecision::Nap));
    rx.cancel_wait();
    // The producer's first publish after the consumer armed takes the
    // fenced path and acknowledges it.
    tx.send(b"ack").unwrap();
    assert_eq!(rx.recv(&mut buf), Ok(3));
    assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
    // Every later publish is followed by the producer's check of the
    // consumer's line: a full sleep, and the doorbell rings for it.
    assert_eq!(rx.prepare_wait(), Ok(WaitDecision::Sleep));
    let signals = tx.wait.signals;
    tx.send(b"wake").unwrap();
    assert_eq!(tx.wait.signals, signals + 1, "the sleeper was signalled");
    rx.cancel_wait();
    assert_eq!(rx.recv(&mut buf), Ok(4));
    // And so on for every later sleep.
    assert_eq!(rx.prepare_wait(), Ok(WaitDecision::Sleep));
    rx.cancel_wait();
}

#[test]
fn a_producer_naps_until_the_consumer_acknowledges_then_sleeps() {
    let (mut tx, mut rx) = heap_channel(Geometry::with_max_frame_len(4, 64, 64).unwrap());
    let mut buf = [0u8; 64];
    let fill = |tx: &mut super::Producer<super::HeapRing>| {
        while tx.send(&[1; 64]).is_ok() {}
    };
    fill(&mut tx);
    assert_eq!(tx.prepare_wait(1), Ok(WaitDecision::Nap));
    tx.cancel_wait();
    // The consumer's first release after the producer armed acknowledges.
    assert_eq!(rx.recv(&mut buf), Ok(64));
    fill(&mut tx);
    assert_eq!(tx.prepare_wait(1), Ok(WaitDecision::Sleep));
    let signals = rx.wait.signals;
    assert_eq!(rx.recv(&mut buf), Ok(64));
    assert_eq!(rx.wait.signals, signals + 1, "the sleeper was signalled");
    tx.cancel_wait();
}
