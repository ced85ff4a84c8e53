//! Model checks of the ring's sleep/wake protocol with loom.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p vecring-core --test loom_wake --release`.
//!
//! Under loom, `HeapRing`'s doorbells are loom `Notify`s: a sticky permit,
//! as a datagram waiting in a socket is, that may also wake its waiter
//! spuriously. A side that sleeps blocks in `Notify::wait` without a
//! timeout; a lost wakeup therefore leaves it blocked after the other side
//! has finished, which loom reports as a deadlock. A side told to nap
//! ([`WaitDecision::Nap`]) yields instead, standing for its short timer.
//!
//! The models fail (a deadlock) when either SeqCst fence of the protocol
//! (`WaitProtocol::signal`, `WaitProtocol::prepare`) is removed. The `ack` word
//! needs no ordering of its own: it is stored before a fence and loaded
//! after one. Because a nap stands for a timer here, the models above
//! would pass if every wait napped; `an_acknowledged_consumer_sleeps`
//! fails then.
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

/// Sends `count` one-byte frames holding 0, 1, …; `idle` says what to do
/// when the ring is full. `batch` sends two at a time.
fn produce(ring: &HeapRing, tx: &mut Producer<HeapRing>, count: u8, batch: bool, idle: Idle) {
    let mut next = 0u8;
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
                Idle::Sleep => match tx.prepare_space_sleep(1).expect("producer") {
                    WaitDecision::Ready => {}
                    WaitDecision::Nap => {
                        loom::thread::yield_now();
                        tx.cancel_space_sleep();
                    }
                    WaitDecision::Sleep => {
                        ring.wait_doorbell(Bell::Space);
                        tx.cancel_space_sleep();
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
    while next < count {
        match rx.recv(&mut buf) {
            Ok(n) => {
                assert_eq!(&buf[..n], &[next], "frames in order and intact");
                next += 1;
            }
            Err(RecvError::Empty) => match idle {
                Idle::Poll => loom::thread::yield_now(),
                Idle::Sleep => match rx.prepare_sleep().expect("consumer") {
                    WaitDecision::Ready => {}
                    WaitDecision::Nap => {
                        loom::thread::yield_now();
                        rx.cancel_sleep();
                    }
                    WaitDecision::Sleep => {
                        ring.wait_doorbell(Bell::Data);
                        rx.cancel_sleep();
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
    builder().check(move || {
        let (ring, mut tx, mut rx) = channel();
        let ring2 = ring.clone();
        let producer = loom::thread::spawn(move || produce(&ring2, &mut tx, count, batch, tx_idle));
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
    model(3, false, Idle::Sleep, Idle::Poll);
}

#[test]
fn both_sides_sleep() {
    model(3, false, Idle::Sleep, Idle::Sleep);
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
            rx.prepare_sleep(),
            Ok(WaitDecision::Nap),
            "nobody acknowledged yet"
        );
        rx.cancel_sleep();
        let producer = loom::thread::spawn(move || {
            tx.send(&[0]).expect("room");
            tx.send(&[1]).expect("room");
            tx
        });
        consume(&ring, &mut rx, 2, Idle::Sleep);
        let mut tx = producer.join().expect("producer thread");
        assert_eq!(rx.prepare_sleep(), Ok(WaitDecision::Sleep), "acknowledged");
        rx.cancel_sleep();
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
            match rx.prepare_sleep().expect("consumer") {
                WaitDecision::Ready => {}
                WaitDecision::Nap => panic!("an acknowledged consumer napped"),
                WaitDecision::Sleep => {
                    ring.wait_doorbell(Bell::Data);
                    rx.cancel_sleep();
                }
            }
        }
        producer.join().expect("producer thread");
    });
}
