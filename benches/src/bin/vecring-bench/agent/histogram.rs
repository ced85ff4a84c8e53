//! Latency histograms: log-linear buckets of nanoseconds, 16 per power of
//! two (so a bucket is at most 1/16 = 6.25 % wide relative to its values),
//! exact below 32 ns, with the exact minimum and maximum kept beside them.
//!
//! The bucket formula is part of the agent protocol: the DPDK agent
//! (`benches/dpdk-agent/`) computes the same index, and the harness
//! merges and reads histograms from either.

/// Buckets: 32 exact ones, then 16 per power of two from 2^5 to 2^63.
pub const BUCKETS: usize = 32 + 59 * 16;

/// The bucket of `ns`.
pub fn bucket(ns: u64) -> usize {
    if ns < 32 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize; // >= 5
    let m = (ns >> (e - 4)) as usize; // 16..=31
    32 + (e - 5) * 16 + (m - 16)
}

/// The smallest value of bucket `idx`.
pub fn low(idx: usize) -> u64 {
    if idx < 32 {
        return idx as u64;
    }
    let e = 5 + (idx - 32) / 16;
    let m = 16 + (idx - 32) % 16;
    (m as u64) << (e - 4)
}

/// The largest value of bucket `idx`.
pub fn high(idx: usize) -> u64 {
    if idx + 1 >= BUCKETS {
        u64::MAX
    } else {
        low(idx + 1) - 1
    }
}

/// Counts per bucket, with the exact extremes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    min: u64,
    max: u64,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            min: u64::MAX,
            max: 0,
            total: 0,
        }
    }
}

impl Histogram {
    /// Adds `n` samples of `ns` nanoseconds.
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[bucket(ns)] += n;
        self.total += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Adds one sample.
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The smallest sample (None when empty).
    pub fn min(&self) -> Option<u64> {
        (self.total > 0).then_some(self.min)
    }

    /// The largest sample (None when empty).
    pub fn max(&self) -> Option<u64> {
        (self.total > 0).then_some(self.max)
    }

    /// The value at or below which `p` percent of the samples lie, as the
    /// largest value of its bucket (never more than the maximum): a
    /// conservative figure within 6.25 %. None when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        // The rank of the sample asked for, 1-based: ceil(p/100 * total).
        let rank = ((p / 100.0 * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (idx, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(high(idx).min(self.max).max(self.min));
            }
        }
        Some(self.max)
    }

    /// The protocol's form: `IDX:N` for each non-empty bucket, in index
    /// order, comma-separated (empty when there are none).
    pub fn encode(&self) -> String {
        let mut s = String::new();
        for (idx, &c) in self.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
            if !s.is_empty() {
                s.push(',');
            }
            s.push_str(&format!("{idx}:{c}"));
        }
        s
    }

    /// Reads the protocol's form back, with the extremes sent beside it
    /// (`min`, `max`; ignored when the histogram is empty).
    ///
    /// # Errors
    /// A malformed pair, a bucket out of range, or extremes that do not
    /// fall in the first and last buckets.
    pub fn decode(text: &str, min: u64, max: u64) -> Result<Self, String> {
        let mut h = Histogram::default();
        for pair in text.split(',').filter(|p| !p.is_empty()) {
            let bad = || format!("bad histogram entry '{pair}'");
            let (i, n) = pair.split_once(':').ok_or_else(bad)?;
            let i: usize = i.parse().map_err(|_| bad())?;
            let n: u64 = n.parse().map_err(|_| bad())?;
            if i >= BUCKETS {
                return Err(bad());
            }
            h.counts[i] = h.counts[i].checked_add(n).ok_or_else(bad)?;
            h.total = h.total.checked_add(n).ok_or_else(bad)?;
        }
        if h.total > 0 {
            let first = h.counts.iter().position(|&c| c > 0).unwrap_or(0);
            let last = h.counts.iter().rposition(|&c| c > 0).unwrap_or(0);
            if bucket(min) != first || bucket(max) != last {
                return Err(format!(
                    "histogram extremes min={min} max={max} outside its buckets {first}..={last}"
                ));
            }
            h.min = min;
            h.max = max;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_at_most_a_sixteenth_wide() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(31), 31);
        assert_eq!(bucket(32), 32);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        for idx in 0..BUCKETS {
            assert_eq!(bucket(low(idx)), idx, "{idx}");
            assert_eq!(bucket(high(idx)), idx, "{idx}");
            if idx >= 32 {
                assert!((high(idx) - low(idx) + 1) * 16 <= low(idx), "{idx}");
            }
        }
    }

    #[test]
    fn percentiles_of_known_samples() {
        // 1..=1000 ns, one each.
        let mut h = Histogram::default();
        for ns in 1..=1000 {
            h.record(ns);
        }
        assert_eq!(h.min(), Some(1));
        assert_eq!(h.max(), Some(1000));
        let p50 = h.percentile(50.0).unwrap();
        assert!((500..=500 + 500 / 16).contains(&p50), "{p50}");
        let p99 = h.percentile(99.0).unwrap();
        assert!((990..=1000).contains(&p99), "{p99}");
        assert_eq!(h.percentile(100.0), Some(1000));
        // Exact below 32 ns.
        let mut small = Histogram::default();
        for ns in [3, 5, 7, 9] {
            small.record(ns);
        }
        assert_eq!(small.percentile(50.0), Some(5));
        assert_eq!(small.percentile(75.0), Some(7));
        assert_eq!(Histogram::default().percentile(50.0), None);
    }

    #[test]
    fn a_long_tail_shows_in_the_high_percentiles_only() {
        // 99 800 samples at 1 µs, 180 at 50 µs, 20 at 2 ms.
        let mut h = Histogram::default();
        h.record_n(1_000, 99_800);
        h.record_n(50_000, 180);
        h.record_n(2_000_000, 20);
        let p = |q| h.percentile(q).unwrap();
        assert!((1_000..1_064).contains(&p(50.0)));
        assert!((1_000..1_064).contains(&p(99.0)));
        assert!((50_000..53_200).contains(&p(99.9)), "{}", p(99.9));
        assert!((2_000_000..=2_000_000).contains(&p(99.99)), "{}", p(99.99));
    }

    #[test]
    fn encoding_round_trips_and_bad_input_is_refused() {
        let mut h = Histogram::default();
        h.record_n(700, 3);
        h.record(12);
        h.record(9_000_000);
        let back = Histogram::decode(&h.encode(), 12, 9_000_000).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.count(), 5);
        assert_eq!(Histogram::decode("", 0, 0).unwrap().count(), 0);
        for bad in [
            "x",
            "1:",
            "99999:1",
            "3:-1",
            "1:1,2",
            "1:18446744073709551615,2:1",
        ] {
            assert!(Histogram::decode(bad, 1, 1).is_err(), "{bad}");
        }
        assert!(Histogram::decode("40:1", 1, 1).is_err(), "extremes checked");
    }
}
