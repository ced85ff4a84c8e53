//! Latency probes, each between [`PRODUCER_CPU`](crate::PRODUCER_CPU) (the caller, already
//! pinned) and [`CONSUMER_CPU`]: the core-to-core ping-pong that tags every
//! run with its vCPU placement, the signal-then-data floor, the ring's own
//! one-way latency, and the two ways of timing round trips (one at a time,
//! or a hundred together when a clock read costs as much as a trip).

use crate::{geometry, pin_current_thread, region, CONSUMER_CPU};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::{internal::abi, Consumer, Producer, RingStorage};

/// One-way core-to-core latency between [`PRODUCER_CPU`](crate::PRODUCER_CPU) (the caller,
/// already pinned) and [`CONSUMER_CPU`]: half the median round trip of a
/// ping-pong on one cache line. The machine's placement of its vCPUs
/// changes this (and every cross-core figure) from run to run, so the
/// reports print it beside the results.
pub fn core_to_core_latency() -> Duration {
    use std::sync::atomic::{AtomicU64, Ordering};
    let line = Arc::new(crossbeam_utils::CachePadded::new(AtomicU64::new(0)));
    let peer = Arc::clone(&line);
    let echo = std::thread::spawn(move || {
        pin_current_thread(CONSUMER_CPU).expect("pin the echo thread");
        for round in 0..PING_PONG_ROUNDS {
            // Acquire/Release: each side's store pairs with the other's load.
            while peer.load(Ordering::Acquire) != 2 * round + 1 {
                std::hint::spin_loop();
            }
            peer.store(2 * round + 2, Ordering::Release);
        }
    });
    let one_way = half_median_round_trip(0, |round| {
        line.store(2 * round + 1, Ordering::Release);
        while line.load(Ordering::Acquire) != 2 * round + 2 {
            std::hint::spin_loop();
        }
    });
    echo.join().expect("echo thread");
    one_way
}

/// The ping-pongs of the latency probes below: how many each side makes
/// after its warm-up.
const PING_PONG_ROUNDS: u64 = 20_000;

/// Half the median of [`PING_PONG_ROUNDS`] round trips `trip(round)`,
/// timed after `warm` untimed ones (rounds numbered from 0 throughout).
fn half_median_round_trip(warm: u64, mut trip: impl FnMut(u64)) -> Duration {
    let mut trips = Vec::with_capacity(PING_PONG_ROUNDS as usize);
    for round in 0..warm + PING_PONG_ROUNDS {
        let start = Instant::now();
        trip(round);
        if round >= warm {
            trips.push(start.elapsed());
        }
    }
    trips.sort();
    trips[trips.len() / 2] / 2
}

/// Round trips timed together by [`half_median_of_samples`]: a clock read
/// costs about as much as a round trip between near vCPUs, and reads it in
/// steps of 10-20 ns here.
pub const TRIPS_PER_SAMPLE: usize = 100;

/// Half the median round trip of `trip`, in ns, over samples of
/// [`TRIPS_PER_SAMPLE`] round trips each (`trips` in all), after `warm`
/// untimed ones.
pub fn half_median_of_samples(warm: usize, trips: usize, mut trip: impl FnMut()) -> f64 {
    for _ in 0..warm {
        trip();
    }
    let mut ns: Vec<f64> = (0..(trips / TRIPS_PER_SAMPLE).max(1))
        .map(|_| {
            let t = Instant::now();
            for _ in 0..TRIPS_PER_SAMPLE {
                trip();
            }
            t.elapsed().as_nanos() as f64 / TRIPS_PER_SAMPLE as f64
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    ns[ns.len() / 2] / 2.0
}

/// One-way latency of the cheapest signal-then-data hand-off between
/// [`PRODUCER_CPU`](crate::PRODUCER_CPU) (the caller, already pinned) and [`CONSUMER_CPU`]: each
/// side writes 64 bytes into the next line of its own data array, then a
/// counter on a line of its own; the other side waits for the counter and
/// reads the line. Half the median round trip, timed after a lap of the
/// data arrays (`data_lines` lines each, wrapping like a ring's data
/// area). It is the floor for any protocol that publishes an index after
/// the data, as vecring and rtrb do.
pub fn signal_then_data_latency(data_lines: usize) -> Duration {
    use std::sync::atomic::{AtomicU64, Ordering};
    struct Side {
        counter: crossbeam_utils::CachePadded<AtomicU64>,
        data: Vec<crossbeam_utils::CachePadded<[AtomicU64; 8]>>,
    }
    let side = |n: usize| Side {
        counter: crossbeam_utils::CachePadded::new(AtomicU64::new(0)),
        data: (0..n)
            .map(|_| crossbeam_utils::CachePadded::new(Default::default()))
            .collect(),
    };
    let (ping, pong) = (Arc::new(side(data_lines)), Arc::new(side(data_lines)));
    let send = |to: &Side, round: u64| {
        let line = &to.data[round as usize % to.data.len()];
        for word in line.iter() {
            // Relaxed: published by the Release store of the counter.
            word.store(round, Ordering::Relaxed);
        }
        // Release: pairs with the Acquire load in `wait`.
        to.counter.store(round + 1, Ordering::Release);
    };
    let wait = |from: &Side, round: u64| -> u64 {
        // Acquire: pairs with the Release store in `send`.
        while from.counter.load(Ordering::Acquire) != round + 1 {
            std::hint::spin_loop();
        }
        let line = &from.data[round as usize % from.data.len()];
        line.iter().map(|w| w.load(Ordering::Relaxed)).sum()
    };
    let lap = data_lines as u64;
    let (ping2, pong2) = (Arc::clone(&ping), Arc::clone(&pong));
    let echo = std::thread::spawn(move || {
        pin_current_thread(CONSUMER_CPU).expect("pin the echo thread");
        for round in 0..lap + PING_PONG_ROUNDS {
            std::hint::black_box(wait(&ping2, round));
            send(&pong2, round);
        }
    });
    let one_way = half_median_round_trip(lap, |round| {
        send(&ping, round);
        std::hint::black_box(wait(&pong, round));
    });
    echo.join().expect("echo thread");
    one_way
}

/// One-way latency of a 64-byte frame through the ring alone: a ping-pong
/// between [`PRODUCER_CPU`](crate::PRODUCER_CPU) (the caller, already pinned) and
/// [`CONSUMER_CPU`] over the two rings of one region, with `send` and
/// `recv`, timed after a lap of untimed ones. Half the median round trip.
pub fn ring_latency() -> Duration {
    let region = region();
    let lap = u64::from(geometry().slot_count());
    // SAFETY: a fresh region; each ring gets one producer and one consumer.
    let (mut ping_tx, ping_rx, pong_tx, mut pong_rx) = unsafe {
        (
            Producer::attach(region.ring(abi::RING_MASTER_TO_SLAVE)).expect("fresh ring"),
            Consumer::attach(region.ring(abi::RING_MASTER_TO_SLAVE)).expect("fresh ring"),
            Producer::attach(region.ring(abi::RING_SLAVE_TO_MASTER)).expect("fresh ring"),
            Consumer::attach(region.ring(abi::RING_SLAVE_TO_MASTER)).expect("fresh ring"),
        )
    };
    fn wait<S: RingStorage>(rx: &mut Consumer<S>, buf: &mut [u8]) -> usize {
        loop {
            match rx.recv(buf) {
                Ok(len) => return len,
                Err(vecring_core::RecvError::Empty) => std::hint::spin_loop(),
                Err(e) => panic!("recv: {e}"),
            }
        }
    }
    let echo = std::thread::spawn(move || {
        let (mut rx, mut tx) = (ping_rx, pong_tx);
        pin_current_thread(CONSUMER_CPU).expect("pin the echo thread");
        let mut buf = [0u8; 64];
        for _ in 0..lap + PING_PONG_ROUNDS {
            let len = wait(&mut rx, &mut buf);
            tx.send(&buf[..len]).expect("room for the echo");
        }
    });
    let frame = [0x5au8; 64];
    let mut buf = [0u8; 64];
    let one_way = half_median_round_trip(lap, |_| {
        ping_tx.send(&frame).expect("room for the ping");
        wait(&mut pong_rx, &mut buf);
    });
    echo.join().expect("echo thread");
    one_way
}
