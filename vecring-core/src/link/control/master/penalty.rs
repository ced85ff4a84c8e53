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

use std::time::{Duration, Instant};

/// The first penalty.
pub(super) const FIRST: Duration = Duration::from_secs(60);
/// The longest: a penalty doubles with each offence up to this.
pub(super) const LONGEST: Duration = Duration::from_secs(3600);
/// Uids remembered at most; past them the one whose penalty ends first
/// is forgotten. Each offender costs a connection the master accepted, so
/// a local attacker would need that many uids.
const REMEMBERED: usize = 64;

#[derive(Clone, Copy)]
struct Entry {
    uid: u32,
    until: Instant,
    /// This uid's last penalty, the next one's half.
    length: Duration,
}

/// The remembered uids.
#[derive(Default)]
pub(super) struct Penalties(Vec<Entry>);

impl Penalties {
    /// `uid` passed descriptors at `now`: refused from now on for twice
    /// its last penalty (if that one ended less than [`LONGEST`] ago) or
    /// for [`FIRST`]. Returns the new penalty's length.
    pub(super) fn punish(&mut self, uid: u32, now: Instant) -> Duration {
        let length = match self.0.iter().position(|e| e.uid == uid) {
            Some(i) => {
                let e = self.0.swap_remove(i);
                let recent = now.saturating_duration_since(e.until) < LONGEST;
                if recent {
                    (e.length * 2).min(LONGEST)
                } else {
                    FIRST
                }
            }
            None => FIRST,
        };
        if self.0.len() >= REMEMBERED {
            if let Some(i) = (0..self.0.len()).min_by_key(|&i| self.0[i].until) {
                self.0.swap_remove(i);
            }
        }
        self.0.push(Entry {
            uid,
            until: now + length,
            length,
        });
        length
    }

    /// How much longer `uid` is refused at `now`, if it is.
    pub(super) fn refused(&self, uid: u32, now: Instant) -> Option<Duration> {
        self.0
            .iter()
            .find(|e| e.uid == uid && now < e.until)
            .map(|e| e.until - now)
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
        assert_eq!(p.punish(7, t), FIRST);
        assert_eq!(p.refused(7, t), Some(FIRST));
        assert_eq!(p.refused(8, t), None, "only the offender");
        let later = t + FIRST - Duration::from_secs(1);
        assert_eq!(p.refused(7, later), Some(Duration::from_secs(1)));
        assert_eq!(p.refused(7, t + FIRST), None);
    }

    #[test]
    fn each_new_offence_doubles_the_penalty_up_to_the_longest() {
        let mut p = Penalties::default();
        let mut t = Instant::now();
        let mut expect = FIRST;
        for _ in 0..10 {
            assert_eq!(p.punish(7, t), expect);
            // It offends again as soon as its penalty ends.
            t += expect;
            expect = (expect * 2).min(LONGEST);
        }
        assert_eq!(p.punish(7, t), LONGEST);
    }

    #[test]
    fn an_offence_long_after_the_last_penalty_starts_over() {
        let mut p = Penalties::default();
        let t = Instant::now();
        p.punish(7, t);
        p.punish(7, t + FIRST);
        let much_later = t + 3 * FIRST + LONGEST;
        assert_eq!(p.punish(7, much_later), FIRST);
    }

    #[test]
    fn many_offenders_keep_the_list_bounded() {
        let mut p = Penalties::default();
        let t = Instant::now();
        for uid in 0..(REMEMBERED as u32 + 10) {
            p.punish(uid, t + Duration::from_millis(uid.into()));
        }
        assert_eq!(p.0.len(), REMEMBERED);
        // The newest are remembered; the ones ending first went.
        let last = REMEMBERED as u32 + 9;
        assert!(p.refused(last, t).is_some());
        assert!(p.refused(0, t).is_none());
    }
}
