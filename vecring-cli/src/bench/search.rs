//! The zero-loss rate search (RFC 2544 style): the highest constant
//! offered rate whose trial loses at most a given share, by binary search
//! between a rate known to pass and the unthrottled rate.

/// RFC 2544-style binary search: the highest rate in `floor..=ceiling`
/// (frames per second) whose trial loses at most `max_loss`, to within 1 %
/// of `ceiling`. `floor` must be known to pass (0 always does).
pub fn search(
    ceiling: f64,
    floor: f64,
    max_loss: f64,
    trial: &mut impl FnMut(f64) -> Result<f64, String>,
) -> Result<f64, String> {
    if ceiling <= floor || trial(ceiling)? <= max_loss {
        return Ok(ceiling.max(floor));
    }
    let (mut pass, mut fail) = (floor, ceiling);
    while fail - pass > ceiling * 0.01 {
        let mid = (pass + fail) / 2.0;
        if trial(mid)? <= max_loss {
            pass = mid;
        } else {
            fail = mid;
        }
    }
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::search;

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
        assert!(found <= 6.3e6 && found > 6.3e6 - 0.1e6, "{found}");
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
}
