//! Log lines a peer can provoke at will (refusals, attach and leave, link
//! up and down), at most one per [`LOG_EVERY`] per kind; the next line
//! says how many were left out.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most one line of a kind per this interval; the rest are counted.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(1);

/// One kind of line.
#[derive(Default)]
pub(crate) struct RateLog {
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLog {
    /// Logs `msg()` at `level` for `target` (the caller's module, which the
    /// line names) unless a line of this kind went out less than
    /// [`LOG_EVERY`] ago; `what` names the lines left out ("more
    /// refusals").
    pub(crate) fn log(
        &self,
        target: &str,
        level: log::Level,
        what: &str,
        msg: impl FnOnce() -> String,
    ) {
        let now = Instant::now();
        let suppressed = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if s.0.is_some_and(|t| now.duration_since(t) < LOG_EVERY) {
                s.1 += 1;
                return;
            }
            s.0 = Some(now);
            std::mem::take(&mut s.1)
        };
        let more = match suppressed {
            0 => String::new(),
            n => format!(" ({n} {what} in the last interval not shown)"),
        };
        log::log!(target: target, level, "{}{more}", msg());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_line_within_the_interval_is_counted_not_logged() {
        let r = RateLog::default();
        r.log("t", log::Level::Info, "more", || "first".into());
        assert_eq!(r.state.lock().unwrap().1, 0);
        r.log("t", log::Level::Info, "more", || "second".into());
        r.log("t", log::Level::Info, "more", || "third".into());
        assert_eq!(r.state.lock().unwrap().1, 2, "two left out, counted");
    }
}
