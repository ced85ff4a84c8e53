//! Uids the master refuses for a while because one of their processes
//! passed file descriptors (a slave sends none; see `crate::closer`).
//!
//! On a kernel that cannot refuse descriptors (`SO_PASSRIGHTS`), every one
//! a peer passes lands in our descriptor table until a closer has closed
//! it. Refusing the connection that brought them does not stop the same
//! uid from connecting again at once; remembering it does: for
//! [`FIRST`], doubling with each new offence up to [`LONGEST`], the
//! master refuses that uid's connections as soon as it knows the uid,
//! before reading anything from them. In a container every process runs
//! as the container's uid, so the container's honest slave waits out the
//! penalty too: the container is the peer. Root and the master's own uid
//! are never refused (the master decides, `Master::punish`): they can stop
//! or replace the master anyway.
//!
//! The table holds [`REMEMBERED`] uids, and an unprivileged container has
//! 65,536: were the oldest forgotten to make room, a peer that changes uid
//! with each offence would never be refused. So a uid is forgotten only
//! once its penalty has been over for [`LONGEST`] (an offence after that
//! starts over anyway), and an offence by a new uid while every place is
//! taken (more than [`REMEMBERED`] offenders within at most two hours)
//! refuses every uid (but root and the master's own) instead, for a
//! penalty that doubles the same way. A peer with many uids then passes
//! descriptors at the rate one uid could; other admitted uids wait with
//! it, the price of admitting a peer that has many uids (naming the uids
//! that may attach, `allow_uid`, leaves it one).

use std::time::{Duration, Instant};

/// The first penalty.
pub(super) const FIRST: Duration = Duration::from_secs(60);
/// The longest: a penalty doubles with each offence up to this.
pub(super) const LONGEST: Duration = Duration::from_secs(3600);
/// Uids remembered at most; an offence by another while all are
/// remembered refuses every uid.
pub(super) const REMEMBERED: usize = 64;

#[derive(Clone, Copy)]
struct Entry {
    until: Instant,
    /// This penalty's length, the next one's half.
    length: Duration,
}

impl Entry {
    /// The penalty after this one, for an offence at `now`: twice this
    /// one if it ended less than [`LONGEST`] ago, else [`FIRST`].
    fn next(self, now: Instant) -> Entry {
        let length = if self.matters(now) {
            (self.length * 2).min(LONGEST)
        } else {
            FIRST
        };
        Entry {
            until: now + length,
            length,
        }
    }

    /// Whether it still counts at `now`: running, or ended less than
    /// [`LONGEST`] ago (the next offence doubles it).
    fn matters(self, now: Instant) -> bool {
        now.saturating_duration_since(self.until) < LONGEST
    }

    fn left(self, now: Instant) -> Option<Duration> {
        (now < self.until).then(|| self.until - now)
    }
}

/// Who a penalty refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Whom {
    /// The offender's uid.
    Uid,
    /// Every uid but root and the master's own: more than [`REMEMBERED`]
    /// uids offended.
    Everyone,
}

/// The remembered uids, and the penalty on every uid.
#[derive(Default)]
pub(super) struct Penalties {
    uids: Vec<(u32, Entry)>,
    everyone: Option<Entry>,
}

impl Penalties {
    /// `uid` passed descriptors at `now`: refused from now on for twice
    /// its last penalty (if that one ended less than [`LONGEST`] ago) or
    /// for [`FIRST`]; or, if `uid` is new and [`REMEMBERED`] uids are
    /// remembered, every uid is, for twice the last such penalty or for
    /// [`FIRST`]. Returns the new penalty's length and whom it refuses.
    pub(super) fn punish(&mut self, uid: u32, now: Instant) -> (Duration, Whom) {
        self.uids.retain(|(_, e)| e.matters(now));
        if let Some((_, e)) = self.uids.iter_mut().find(|(u, _)| *u == uid) {
            *e = e.next(now);
            return (e.length, Whom::Uid);
        }
        if self.uids.len() < REMEMBERED {
            let e = Entry {
                until: now + FIRST,
                length: FIRST,
            };
            self.uids.push((uid, e));
            return (FIRST, Whom::Uid);
        }
        let e = self.everyone.map_or(
            Entry {
                until: now + FIRST,
                length: FIRST,
            },
            |e| e.next(now),
        );
        self.everyone = Some(e);
        (e.length, Whom::Everyone)
    }

    /// How much longer `uid` is refused at `now`, and by which penalty
    /// (the one that ends last), if it is.
    pub(super) fn refused(&self, uid: u32, now: Instant) -> Option<(Duration, Whom)> {
        let own = self
            .uids
            .iter()
            .find(|(u, _)| *u == uid)
            .and_then(|(_, e)| e.left(now))
            .map(|l| (l, Whom::Uid));
        let all = self
            .everyone
            .and_then(|e| e.left(now))
            .map(|l| (l, Whom::Everyone));
        own.into_iter().chain(all).max_by_key(|&(l, _)| l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offender_is_refused_for_the_first_penalty_then_forgiven() {
        let mut p = Penalties::default();
        let t = Instant::now();
        assert_eq!(p.refused(7, t), None);
        assert_eq!(p.punish(7, t), (FIRST, Whom::Uid));
        assert_eq!(p.refused(7, t), Some((FIRST, Whom::Uid)));
        assert_eq!(p.refused(8, t), None, "only the offender");
        let later = t + FIRST - Duration::from_secs(1);
        assert_eq!(
            p.refused(7, later),
            Some((Duration::from_secs(1), Whom::Uid))
        );
        assert_eq!(p.refused(7, t + FIRST), None);
    }

    #[test]
    fn each_new_offence_doubles_the_penalty_up_to_the_longest() {
        let mut p = Penalties::default();
        let mut t = Instant::now();
        let mut expect = FIRST;
        for _ in 0..10 {
            assert_eq!(p.punish(7, t), (expect, Whom::Uid));
            // It offends again as soon as its penalty ends.
            t += expect;
            expect = (expect * 2).min(LONGEST);
        }
        assert_eq!(p.punish(7, t), (LONGEST, Whom::Uid));
    }

    #[test]
    fn an_offence_long_after_the_last_penalty_starts_over() {
        let mut p = Penalties::default();
        let t = Instant::now();
        p.punish(7, t);
        p.punish(7, t + FIRST);
        let much_later = t + 3 * FIRST + LONGEST;
        assert_eq!(p.punish(7, much_later), (FIRST, Whom::Uid));
    }

    #[test]
    fn a_rotating_offender_gets_every_uid_refused_once_the_table_is_full() {
        let mut p = Penalties::default();
        let mut t = Instant::now();
        for uid in 0..REMEMBERED as u32 {
            assert_eq!(p.punish(uid, t), (FIRST, Whom::Uid));
            t += Duration::from_millis(1);
        }
        assert_eq!(p.refused(1000, t), None, "not yet");
        // One more uid: no place is free, every uid is refused.
        assert_eq!(p.punish(1000, t), (FIRST, Whom::Everyone));
        assert_eq!(p.uids.len(), REMEMBERED);
        assert_eq!(p.refused(1001, t), Some((FIRST, Whom::Everyone)));
        // The first offenders are still remembered: their penalty, not
        // forgotten to make room.
        assert_eq!(p.refused(0, t).map(|r| r.1), Some(Whom::Everyone));
        assert!(p.uids.iter().any(|(u, _)| *u == 0));
        // After it, the next new uid doubles it, as one uid would.
        t += FIRST;
        assert_eq!(p.refused(1001, t), None);
        assert_eq!(p.punish(1001, t), (2 * FIRST, Whom::Everyone));
        // A remembered uid's own offence is its own.
        t += 2 * FIRST;
        assert_eq!(p.punish(3, t), (2 * FIRST, Whom::Uid));
    }

    #[test]
    fn a_uid_is_forgotten_only_once_its_penalty_no_longer_counts() {
        let mut p = Penalties::default();
        let t = Instant::now();
        for uid in 0..REMEMBERED as u32 {
            p.punish(uid, t);
        }
        // The table's penalties ended LONGEST ago: a new uid gets a place.
        let later = t + FIRST + LONGEST;
        assert_eq!(p.punish(1000, later), (FIRST, Whom::Uid));
        assert_eq!(p.uids.len(), 1);
        assert_eq!(p.refused(5, later), None);
    }
}
