//! The master's budget of regions: a token bucket that only elapsed time
//! refills. Every region a master creates costs a token, whatever becomes
//! of it; so the memory a peer can make the host hold (pages it keeps
//! through `vmsplice` or io_uring after closing every descriptor and
//! mapping, which no count of descriptors sees) grows by at most one
//! region per refill interval after the first burst.

use std::time::{Duration, Instant};

/// How many regions a master may create for one link: `burst` at once,
/// then one more per `every`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionBudget {
    burst: u32,
    every: Duration,
}

impl RegionBudget {
    /// 16 regions at once, then one a minute: a peer that restarts up to
    /// 16 times in a row, and on average at most once a minute, never
    /// waits.
    pub const DEFAULT: RegionBudget = RegionBudget {
        burst: 16,
        every: Duration::from_secs(60),
    };

    /// `burst` regions at once (at least 1), then one per `every` (at
    /// least a millisecond).
    pub fn new(burst: u32, every: Duration) -> Self {
        RegionBudget {
            burst: burst.max(1),
            every: every.max(Duration::from_millis(1)),
        }
    }

    /// Regions available at once.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Time that refills one region.
    pub fn every(&self) -> Duration {
        self.every
    }
}

impl Default for RegionBudget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The tokens left of a [`RegionBudget`].
pub(crate) struct Bucket {
    budget: RegionBudget,
    tokens: u32,
    /// Where the refill clock stands: the next token is due at
    /// `since + every` (meaningless while the bucket is full).
    since: Instant,
}

impl Bucket {
    /// A full bucket.
    pub(crate) fn new(budget: RegionBudget, now: Instant) -> Self {
        Bucket {
            budget,
            tokens: budget.burst,
            since: now,
        }
    }

    pub(crate) fn budget(&self) -> RegionBudget {
        self.budget
    }

    fn refill(&mut self, now: Instant) {
        if self.tokens >= self.budget.burst {
            self.since = now;
            return;
        }
        let every = self.budget.every.as_nanos();
        let due = now.saturating_duration_since(self.since).as_nanos() / every;
        let missing = u128::from(self.budget.burst - self.tokens);
        let add = due.min(missing) as u32;
        self.tokens += add;
        if self.tokens >= self.budget.burst {
            self.since = now;
        } else {
            self.since += self.budget.every * add;
        }
    }

    /// Whether a region may be created now (without taking it).
    pub(crate) fn available(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens > 0
    }

    /// Takes one token; false (and nothing taken) when none is left.
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens == 0 {
            return false;
        }
        if self.tokens == self.budget.burst {
            // The refill clock starts when the bucket stops being full.
            self.since = now;
        }
        self.tokens -= 1;
        true
    }

    /// When the next token arrives, if none is left now.
    pub(crate) fn next_token(&self) -> Option<Instant> {
        (self.tokens == 0).then(|| self.since + self.budget.every)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_token_per_interval() {
        let t0 = Instant::now();
        let mut b = Bucket::new(RegionBudget::new(3, Duration::from_secs(60)), t0);
        for _ in 0..3 {
            assert!(b.take(t0));
        }
        assert!(!b.take(t0), "the burst is spent");
        assert_eq!(b.next_token(), Some(t0 + Duration::from_secs(60)));
        assert!(!b.take(t0 + Duration::from_secs(59)));
        assert!(b.take(t0 + Duration::from_secs(60)));
        assert!(!b.take(t0 + Duration::from_secs(61)));
        // Two intervals later, two more.
        assert!(b.take(t0 + Duration::from_secs(180)));
        assert!(b.take(t0 + Duration::from_secs(180)));
        assert!(!b.take(t0 + Duration::from_secs(180)));
    }

    #[test]
    fn refills_stop_at_the_burst() {
        let t0 = Instant::now();
        let mut b = Bucket::new(RegionBudget::new(2, Duration::from_secs(1)), t0);
        assert!(b.take(t0));
        let later = t0 + Duration::from_secs(3600);
        let taken = (0..10).filter(|_| b.take(later)).count();
        assert_eq!(taken, 2, "an idle hour gives back the burst, no more");
    }

    #[test]
    fn the_default_allows_sixteen_then_waits_a_minute() {
        let t0 = Instant::now();
        let mut b = Bucket::new(RegionBudget::DEFAULT, t0);
        assert_eq!((0..100).filter(|_| b.take(t0)).count(), 16);
        assert!(!b.available(t0 + Duration::from_secs(59)));
        assert!(b.available(t0 + Duration::from_secs(60)));
    }
}
