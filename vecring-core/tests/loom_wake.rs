//! Model checks of the ring's sleep/wake protocol with loom.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vecring-core --test loom_wake --release`.
//!
//! Under loom, `HeapRing`'s doorbells are loom `Notify`s: a sticky permit,
//! as a datagram waiting in a socket is, that may also wake its waiter
//! spuriously. A side that sleeps blocks in `Notify::wait` without a
//! timeout; a lost wakeup therefore leaves it blocked after the other side
//! has finished, which loom reports as a deadlock.
//!
//! A side told to nap ([`WaitDecision::Nap`]) yields, standing for its
//! short timer; a yield would hide a lost wakeup, so naps are allowed only
//! where the protocol needs them. A nap is the wait of a side whose peer
//! has not yet acknowledged the protocol, and an acknowledgement lasts as
//! long as the ring: once a side has been told to sleep, every later
//! decision of that side must be `Ready` or `Sleep`, and every model fails
//! on a nap after a sleep. `an_acknowledged_consumer_sleeps` and
//! `an_acknowledged_producer_sleeps` check that the sleep comes at all.
//!
//! The models fail (a deadlock) when either SeqCst fence of the protocol
//! (`WaitProtocol::signal`, `WaitProtocol::prepare`) is removed
//! (`scripts/loom-weaken.sh` removes each and runs them). The `ack` word
//! needs no ordering of its own: it is stored before a fence and loaded
//! after one.
#![cfg(loom)]

use vecring_core::{
    Bell, Consumer, Geometry, HeapRing, Producer, PushError, RecvError, SendError, WaitDecision,
};

/// The preemption bound when `LOOM_MAX_PREEMPTIONS` is not set.
const PREEMPTIONS: usize = 3;

fn builder() -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    builder
}

/// A two-slot ring of 64-byte slots and its two ends.
fn channel() -> (HeapRing, Producer<HeapRing>, Consumer<HeapRing>) {
    let ring = HeapRing::new(Geometry::with_max_frame_len(2, 64, 64).expect("geometry"));
    // SAFETY: the ring is new; these are its only producer and consumer.
    let (tx, rx) = unsafe {
        (
            Producer::attach(ring.clone()).expect("fresh"),
            Consumer::attach(ring.clone()).expect("fresh"),
        )
    };
    (ring, tx, rx)
}

/// How a side that found nothing to do waits.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Idle {
    /// Yields and tries again (a polling side).
    Poll,
    /// Sleeps through the protocol.
    Sleep,
}

/// Sends one-byte frames holding `first`, … up to `count` (excluded);
/// `idle` says what to do when the ring is full. `batch` sends two at a
/// time.
fn produce(
    ring: &HeapRing,
    tx: &mut Producer<HeapRing>,
    (first, count): (u8, u8),
    batch: bool,
    idle: Idle,
) {
    let mut next = first;
    let mut slept = false;
    while next < count {
        let sent = if batch {
            let frames = [[next], [next.wrapping_add(1)]];
            let want = usize::from((count - next).min(2));
            tx.send_batch(frames[..want].iter().map(|f| &f[..]))
                .expect("producer")
        } else {
            match tx.send(&[next]) {
                Ok(()) => 1,
                Err(SendError::Push(PushError::Full)) => 0,
                Err(e) => panic!("producer: {e}"),
            }
        };
        next += sent as u8;
        if sent == 0 {
            match idle {
                Idle::Poll => loom::thread::yield_now(),
                Idle::Sleep => match tx.prepare_wait(1).expect("producer") {
                    WaitDecision::Ready => {}
                    WaitDecision::Nap => {
                        assert!(!slept, "the producer napped after a sleep");
                        loom::thread::yield_now();
                        tx.cancel_wait();
                    }
                    WaitDecision::Sleep => {
                        slept = true;
                        ring.sleep(Bell::Space);
                        tx.cancel_wait();
                    }
                },
            }
        }
    }
}

/// Receives `count` frames and checks they are 0, 1, … in order.
fn consume(ring: &HeapRing, rx: &mut Consumer<HeapRing>, count: u8, idle: Idle) {
    let mut next = 0u8;
    let mut buf = [0u8; 64];
    let mut slept = false;
    while next < count {
        match rx.recv(&mut buf) {
            Ok(n) => {
                assert_eq!(&buf[..n], &[next], "frames in order and intact");
                next += 1;
            }
            Err(RecvError::Empty) => match idle {
                Idle::Poll => loom::thread::yield_now(),
                Idle::Sleep => match rx.prepare_wait().expect("consumer") {
                    WaitDecision::Ready => {}
                    WaitDecision::Nap => {
                        assert!(!slept, "the consumer napped after a sleep");
                        loom::thread::yield_now();
                        rx.cancel_wait();
                    }
                    WaitDecision::Sleep => {
                        slept = true;
                        ring.sleep(Bell::Data);
                        rx.cancel_wait();
                    }
                },
            },
            Err(e) => panic!("consumer: {e}"),
        }
    }
}

/// A sleeping consumer and a polling producer: `count` frames, one or two
/// per publish.
fn model(count: u8, batch: bool, tx_idle: Idle, rx_idle: Idle) {
    model_bounded(count, batch, tx_idle, rx_idle, usize::MAX);
}

/// [`model`] with a preemption bound of at most `max_preemptions`.
fn model_bounded(count: u8, batch: bool, tx_idle: Idle, rx_idle: Idle, max_preemptions: usize) {
    let mut builder = builder();
    builder.preemption_bound = builder.preemption_bound.map(|b| b.min(max_preemptions));
    builder.check(move || {
        let (ring, mut tx, mut rx) = channel();
        let ring2 = ring.clone();
        let producer =
            loom::thread::spawn(move || produce(&ring2, &mut tx, (0, count), batch, tx_idle));
        consume(&ring, &mut rx, count, rx_idle);
        producer.join().expect("producer thread");
    });
}

#[test]
fn sleeping_consumer_gets_every_frame() {
    model(3, false, Idle::Poll, Idle::Sleep);
}

#[test]
fn sleeping_consumer_gets_every_batch() {
    model(3, true, Idle::Poll, Idle::Sleep);
}

#[test]
fn sleeping_producer_gets_room() {
    // The ring full and the producer armed once before the consumer
    // starts: the consumer's first release takes the fenced path and
    // acknowledges, so the producer's waits for room for the next two
    // frames may be full sleeps (with three frames from an idle start, the
    // one wait is always a nap, and removing a fence went unnoticed).
    builder().check(|| {
        let (ring, mut tx, mut rx) = channel();
        tx.send(&[0]).expect("room");
        tx.send(&[1]).expect("room");
        assert_eq!(tx.prepare_wait(1), Ok(WaitDecision::Nap));
        tx.cancel_wait();
        let ring2 = ring.clone();
        let consumer = loom::thread::spawn(move || consume(&ring2, &mut rx, 4, Idle::Poll));
        produce(&ring, &mut tx, (2, 4), false, Idle::Sleep);
        consumer.join().expect("consumer thread");
    });
}

#[test]
fn both_sides_sleep() {
    // At most two preemptions: at three this model alone explores for
    // nearly three minutes; the models of one sleeping side keep three,
    // and each fence removed fails them (scripts/loom-weaken.sh).
    model_bounded(3, false, Idle::Sleep, Idle::Sleep, 2);
}

/// The consumer sleeps for its first frame only after the producer has
/// already published (and checked nothing): the ack race. The frame is
/// found by the re-check or by the nap, never lost.
#[test]
fn arming_after_a_publish() {
    builder().check(|| {
        let (ring, mut tx, mut rx) = channel();
        let producer = loom::thread::spawn(move || {
            tx.send(&[0]).expect("room");
            tx.send(&[1]).expect("room");
        });
        consume(&ring, &mut rx, 2, Idle::Sleep);
        producer.join().expect("producer thread");
    });
}

/// Once the producer has published after seeing the consumer armed, the
/// consumer's next wait is a full sleep on the doorbell, never a nap: a
/// nap (a yield here) would hide a lost wakeup from the models above, and
/// in a process costs a timer wakeup every 64 ms. The consumer arms
/// before the producer starts, so the producer's first publish takes the
/// fenced path; whatever the interleaving of the two frames with the
/// consumer's waits, after the producer has finished the decision is
/// `Sleep`, and the doorbell that sleep waits on rings for the next frame.
#[test]
fn an_acknowledged_consumer_sleeps() {
    builder().check(|| {
        let (ring, mut tx, mut rx) = channel();
        assert_eq!(
            rx.prepare_wait(),
            Ok(WaitDecision::Nap),
            "nobody acknowledged yet"
        );
        rx.cancel_wait();
        let producer = loom::thread::spawn(move || {
            tx.send(&[0]).expect("room");
            tx.send(&[1]).expect("room");
            tx
        });
        consume(&ring, &mut rx, 2, Idle::Sleep);
        let mut tx = producer.join().expect("producer thread");
        assert_eq!(rx.prepare_wait(), Ok(WaitDecision::Sleep), "acknowledged");
        rx.cancel_wait();
        let producer = loom::thread::spawn(move || tx.send(&[2]).expect("room"));
        let mut buf = [0u8; 64];
        loop {
            match rx.recv(&mut buf) {
                Ok(n) => {
                    assert_eq!(&buf[..n], &[2]);
                    break;
                }
                Err(RecvError::Empty) => {}
                Err(e) => panic!("consumer: {e}"),
            }
            // A wakeup for an earlier signal or a spurious one: every wait
            // from now on is still a full sleep.
            match rx.prepare_wait().expect("consumer") {
                WaitDecision::Ready => {}
                WaitDecision::Nap => panic!("an acknowledged consumer napped"),
                WaitDecision::Sleep => {
                    ring.sleep(Bell::Data);
                    rx.cancel_wait();
                }
            }
        }
        producer.join().expect("producer thread");
    });
}

/// The producer's side of `an_acknowledged_consumer_sleeps`: once the
/// consumer has released slots after seeing the producer armed for space,
/// the producer's next wait for space is a full sleep, and the doorbell
/// rings for the room the consumer makes next.
#[test]
fn an_acknowledged_producer_sleeps() {
    builder().check(|| {
        let (ring, mut tx, mut rx) = channel();
        tx.send(&[0]).expect("room");
        tx.send(&[1]).expect("room");
        assert_eq!(
            tx.prepare_wait(1),
            Ok(WaitDecision::Nap),
            "nobody acknowledged yet"
        );
        tx.cancel_wait();
        let consumer = loom::thread::spawn(move || {
            let mut buf = [0u8; 64];
            for want in [0u8, 1] {
                loop {
                    match rx.recv(&mut buf) {
                        Ok(n) => {
                            assert_eq!(&buf[..n], &[want]);
                            break;
                        }
                        Err(RecvError::Empty) => loom::thread::yield_now(),
                        Err(e) => panic!("consumer: {e}"),
                    }
                }
            }
            rx
        });
        produce(&ring, &mut tx, (0, 2), false, Idle::Sleep);
        let mut rx = consumer.join().expect("consumer thread");
        // The ring holds the two frames just sent: full again.
        assert_eq!(tx.prepare_wait(1), Ok(WaitDecision::Sleep), "acknowledged");
        tx.cancel_wait();
        let consumer = loom::thread::spawn(move || {
            let mut buf = [0u8; 64];
            loop {
                match rx.recv(&mut buf) {
                    Ok(n) => {
                        assert_eq!(&buf[..n], &[0]);
                        break;
                    }
                    Err(RecvError::Empty) => loom::thread::yield_now(),
                    Err(e) => panic!("consumer: {e}"),
                }
            }
        });
        loop {
            match tx.send(&[2]) {
                Ok(()) => break,
                Err(SendError::Push(PushError::Full)) => {}
                Err(e) => panic!("producer: {e}"),
            }
            match tx.prepare_wait(1).expect("producer") {
                WaitDecision::Ready => {}
                WaitDecision::Nap => panic!("an acknowledged producer napped"),
                WaitDecision::Sleep => {
                    ring.sleep(Bell::Space);
                    tx.cancel_wait();
                }
            }
        }
        consumer.join().expect("consumer thread");
    });
}
