//! The zero-loss rate search (RFC 2544 style): the highest constant
//! offered rate whose trial loses at most a given share, by binary search
//! between a rate known to pass and the unthrottled rate.

/// Which trial the search asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trial {
    /// One step of the binary search.
    Step,
    /// The re-verification of a result, longer than a step.
    Verify,
}

/// RFC 2544-style binary search: the highest rate in `floor..=ceiling`
/// (frames per second) whose trial loses at most `max_loss`, to within 1 %
/// of the rate found (or 0.01 % of `ceiling`, below which it is 0).
/// `floor` must be known to pass (0 always does).
pub fn search(
    ceiling: f64,
    floor: f64,
    max_loss: f64,
    trial: &mut impl FnMut(f64) -> Result<f64, String>,
) -> Result<f64, String> {
    search_verified(ceiling, floor, max_loss, false, &mut |rate, _| trial(rate))
}

/// As [`search`], and with `verify` the result is re-run as a
/// [`Trial::Verify`] trial: a rate that fails it becomes the new upper
/// bound, and the search goes on below it with trials of the
/// verification's length, whose result has passed such a trial. `trial`
/// returns the fraction lost.
///
/// # Errors
/// The first trial that failed to run.
pub fn search_verified(
    ceiling: f64,
    floor: f64,
    max_loss: f64,
    verify: bool,
    trial: &mut impl FnMut(f64, Trial) -> Result<f64, String>,
) -> Result<f64, String> {
    if ceiling <= floor {
        return Ok(floor);
    }
    let (mut pass, mut fail) = (floor, ceiling);
    let candidate = if trial(ceiling, Trial::Step)? <= max_loss {
        ceiling
    } else {
        bisect(&mut pass, &mut fail, ceiling, max_loss, Trial::Step, trial)?
    };
    if !verify || candidate <= floor || trial(candidate, Trial::Verify)? <= max_loss {
        return Ok(candidate);
    }
    // Everything from the floor up to the failed rate is open again.
    (pass, fail) = (floor, candidate);
    bisect(
        &mut pass,
        &mut fail,
        ceiling,
        max_loss,
        Trial::Verify,
        trial,
    )
}

/// Halves `pass..fail` with trials of `kind` until `pass` is within 1 %
/// of `fail`, or `fail` is under 0.01 % of `ceiling`; returns `pass`.
fn bisect(
    pass: &mut f64,
    fail: &mut f64,
    ceiling: f64,
    max_loss: f64,
    kind: Trial,
    trial: &mut impl FnMut(f64, Trial) -> Result<f64, String>,
) -> Result<f64, String> {
    while *fail - *pass > *fail * 0.01 && *fail > ceiling * 1e-4 {
        let mid = (*pass + *fail) / 2.0;
        if trial(mid, kind)? <= max_loss {
            *pass = mid;
        } else {
            *fail = mid;
        }
    }
    Ok(*pass)
}

#[cfg(test)]
mod tests {
    use super::{search, search_verified, Trial};

    /// A link that loses nothing up to `limit` frames/s and a growing
    /// share above it.
    fn link_with_limit(limit: f64) -> impl FnMut(f64) -> Result<f64, String> {
        move |rate| {
            Ok(if rate <= limit {
                0.0
            } else {
                (rate - limit) / rate
            })
        }
    }

    #[test]
    fn search_finds_the_highest_lossless_rate_within_one_percent() {
        let found = search(10e6, 0.0, 0.0, &mut link_with_limit(6.3e6)).unwrap();
        assert!(found <= 6.3e6 && found > 6.3e6 * 0.99, "{found}");
        // Far below the ceiling too: 1 % of the rate, not of the ceiling.
        let found = search(40e6, 0.0, 0.0, &mut link_with_limit(0.3e6)).unwrap();
        assert!(found <= 0.3e6 && found > 0.3e6 * 0.99, "{found}");
        // Under 0.01 % of the ceiling is 0.
        assert_eq!(
            search(40e6, 0.0, 0.0, &mut link_with_limit(100.0)).unwrap(),
            0.0
        );
    }

    #[test]
    fn search_allows_the_loss_asked_for() {
        // 1 % loss at 6.3e6 / 0.99 frames/s.
        let found = search(10e6, 0.0, 0.01, &mut link_with_limit(6.3e6)).unwrap();
        assert!(found > 6.3e6 && found <= 6.3e6 / 0.99, "{found}");
    }

    #[test]
    fn search_returns_the_ceiling_when_it_passes_and_stops_at_the_floor() {
        let mut trials = 0;
        let mut counted = |_rate: f64| {
            trials += 1;
            Ok(0.0)
        };
        assert_eq!(search(5e6, 0.0, 0.0, &mut counted).unwrap(), 5e6);
        assert_eq!(trials, 1);
        let mut lossy = |_rate: f64| Ok(1.0);
        assert_eq!(search(5e6, 2e6, 0.0, &mut lossy).unwrap(), 2e6);
    }

    #[test]
    fn a_failing_trial_is_an_error() {
        let mut broken = |_rate: f64| Err("link went down".to_string());
        assert!(search(5e6, 0.0, 0.0, &mut broken).is_err());
    }

    /// A stub link that passes short trials up to 6.3 M frames/s but, in
    /// long ones, only up to 5.9 M (it loses frames after a while, as a
    /// link whose buffers fill slowly does).
    #[test]
    fn a_result_that_fails_its_verification_is_searched_again_below() {
        let mut log = Vec::new();
        let mut stub = |rate: f64, t: Trial| {
            log.push((rate, t));
            let limit = if t == Trial::Verify { 5.9e6 } else { 6.3e6 };
            Ok(if rate <= limit { 0.0 } else { 1e-3 })
        };
        let found = search_verified(10e6, 0.0, 0.0, true, &mut stub).unwrap();
        assert!(found <= 5.9e6 && found > 5.9e6 * 0.99, "{found}");
        let verifies: Vec<f64> = log
            .iter()
            .filter(|(_, t)| *t == Trial::Verify)
            .map(|&(r, _)| r)
            .collect();
        assert!(
            verifies[0] > 6.2e6,
            "the first verification is of the short trials' rate"
        );
        assert!(verifies.contains(&found), "the result passed a long trial");
        let first = log.iter().position(|(_, t)| *t == Trial::Verify).unwrap();
        assert!(
            log[first..].iter().all(|(_, t)| *t == Trial::Verify),
            "after a failed verification every step is a long trial: {log:?}"
        );
    }

    #[test]
    fn a_verified_result_is_not_searched_again() {
        let mut verifies = 0;
        let mut stub = |rate: f64, t: Trial| {
            verifies += usize::from(t == Trial::Verify);
            Ok(if rate <= 4e6 { 0.0 } else { 1.0 })
        };
        let found = search_verified(10e6, 0.0, 0.0, true, &mut stub).unwrap();
        assert!(found <= 4e6 && found > 4e6 * 0.99, "{found}");
        assert_eq!(verifies, 1);
    }

    #[test]
    fn a_verified_search_returns_the_floor_when_nothing_verifies() {
        let mut stub = |_rate: f64, t: Trial| Ok(if t == Trial::Verify { 1.0 } else { 0.0 });
        assert_eq!(
            search_verified(8e6, 1e6, 0.0, true, &mut stub).unwrap(),
            1e6
        );
    }
}
