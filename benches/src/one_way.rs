//! One-way latency as a user feels it: the mean of a ping-pong timed as a
//! whole, with no timer inside its loop, and the distribution of round
//! trips timed one by one (median, 99th and 99.9th percentile), halved.
//!
//! A timer inside the loop costs something, and what it costs shows in
//! every timed trip: on this machine a shared line flipped between two
//! CPUs reads 60-70 ns one way timed as a whole, and half as much again
//! or more timed trip by trip. So both are taken from the same
//! candidate in the same run: the untimed mean, which the timer cannot
//! touch, and the per-trip figures, taken with the cheapest clock there is
//! (the time-stamp counter, fenced: `lfence; rdtsc; lfence`) less the
//! median cost of one such read, which is reported beside them.

use std::time::Instant;

/// One candidate's one-way latency, in ns.
#[derive(Debug, Clone, Copy)]
pub struct OneWay {
    /// Half the mean round trip of a batch timed as a whole.
    pub untimed_mean: f64,
    /// Half the mean round trip, timed trip by trip (less the timer).
    pub mean: f64,
    /// Half the median round trip, timed trip by trip (less the timer).
    pub p50: f64,
    /// Half the 99th-percentile round trip (less the timer).
    pub p99: f64,
    /// Half the 99.9th-percentile round trip (less the timer).
    pub p999: f64,
    /// The median cost of one timer read, subtracted from each timed
    /// round trip before halving.
    pub timer: f64,
}

/// `trip` (one round trip) `warm` times untimed, then `trips` times timed
/// as a whole, then `trips` times each timed alone.
pub fn one_way(warm: usize, trips: usize, mut trip: impl FnMut()) -> OneWay {
    let clock = Clock::calibrated();
    for _ in 0..warm {
        trip();
    }
    let t = Instant::now();
    for _ in 0..trips {
        trip();
    }
    let untimed_mean = t.elapsed().as_nanos() as f64 / trips as f64 / 2.0;
    let mut ticks: Vec<u64> = Vec::with_capacity(trips);
    for _ in 0..trips {
        let t0 = ticks_now();
        trip();
        ticks.push(ticks_now().wrapping_sub(t0));
    }
    let timer = clock.read_cost();
    let mut ns: Vec<f64> = ticks
        .iter()
        .map(|&t| ((clock.ns(t) - timer) / 2.0).max(0.0))
        .collect();
    ns.sort_by(f64::total_cmp);
    let at = |q: f64| ns[((ns.len() as f64 * q) as usize).min(ns.len() - 1)];
    OneWay {
        untimed_mean,
        mean: ns.iter().sum::<f64>() / ns.len() as f64,
        p50: at(0.5),
        p99: at(0.99),
        p999: at(0.999),
        timer,
    }
}

/// The time-stamp counter's rate, measured against `Instant`.
struct Clock {
    ns_per_tick: f64,
}

impl Clock {
    /// The counter's ticks over 50 ms of `Instant`.
    fn calibrated() -> Clock {
        let (t, c) = (Instant::now(), ticks_now());
        while t.elapsed().as_millis() < 50 {
            std::hint::spin_loop();
        }
        let (ns, ticks) = (t.elapsed().as_nanos() as f64, ticks_now().wrapping_sub(c));
        Clock {
            ns_per_tick: ns / ticks.max(1) as f64,
        }
    }

    fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// The median of 100,000 back-to-back reads' differences, in ns: what
    /// bracketing a trip adds to it.
    fn read_cost(&self) -> f64 {
        let mut d: Vec<u64> = (0..100_000)
            .map(|_| {
                let t0 = ticks_now();
                ticks_now().wrapping_sub(t0)
            })
            .collect();
        d.sort_unstable();
        self.ns(d[d.len() / 2])
    }
}

/// The time-stamp counter, fenced so that the trip neither starts before
/// the read nor ends after the next one.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn ticks_now() -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: `lfence` and `rdtsc` exist on every x86-64 CPU and touch no
    // memory.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

/// Elsewhere, the monotonic clock in ns (the counter is one tick a ns).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn ticks_now() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trip_of_known_length_reads_as_half_of_it() {
        // A "round trip" that spins 2 µs: one way 1 µs, timed or not.
        let w = one_way(10, 2000, || {
            let t = Instant::now();
            while t.elapsed().as_nanos() < 2000 {
                std::hint::spin_loop();
            }
        });
        // A trip is never shorter than its spin; the median is not moved
        // by a preempted trip or two.
        assert!((900.0..1500.0).contains(&w.p50), "{w:?}");
        assert!(w.untimed_mean >= 900.0 && w.mean >= 900.0, "{w:?}");
        assert!(w.p50 <= w.p99 && w.p99 <= w.p999, "{w:?}");
        assert!(w.timer > 0.0 && w.timer < 1000.0, "{w:?}");
    }
}
