//! Fairness between the uids a master admits: whose waiting connection
//! makes room for a new one, and whose request is offered the next
//! region.
//!
//! The waiting connections are few ([`MAX_PENDING`]) and one uid can open
//! as many as it likes. Were the newest to push out the oldest, one
//! admitted uid connecting in a loop would keep every other uid's request
//! out. So room is made in the uid that holds the most connections,
//! counting the new one: each of `n` uids keeps at least
//! `MAX_PENDING / n` of them, and a uid that floods pushes out only its
//! own. For the same reason the next region goes to the uid offered one
//! least recently (then to the oldest request), so a uid whose offers fail
//! (it takes the region and never answers) cannot take every turn.
//!
//! The share is per uid: a peer that runs as many admitted uids (an
//! unprivileged container whose uids are all allowed, `allow_uid` empty)
//! gets as many shares; naming the uids that may attach keeps it to one.

use crate::link::control::MAX_PENDING;
use std::collections::VecDeque;

/// A waiting connection, as the choice sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Waiting {
    pub(super) uid: u32,
    /// It has sent its request.
    pub(super) requested: bool,
}

/// Which of `waiting` (oldest first, [`MAX_PENDING`] of them) to close
/// to make room for a new connection of `newcomer`: of the uid holding the
/// most, counting the newcomer (ties: every such uid), a connection that
/// has not asked yet, else the oldest. `None` if `waiting` is empty.
pub(super) fn make_room(waiting: &[Waiting], newcomer: u32) -> Option<usize> {
    let held =
        |uid: u32| waiting.iter().filter(|w| w.uid == uid).count() + usize::from(uid == newcomer);
    let most = waiting.iter().map(|w| held(w.uid)).max()?;
    let crowded = |w: &Waiting| held(w.uid) == most;
    waiting
        .iter()
        .position(|w| crowded(w) && !w.requested)
        .or_else(|| waiting.iter().position(crowded))
}

/// The uids of the latest offers, newest last, [`MAX_PENDING`] at most.
#[derive(Default)]
pub(super) struct Offered(VecDeque<u32>);

impl Offered {
    /// A region was offered to `uid`.
    pub(super) fn record(&mut self, uid: u32) {
        if self.0.len() >= MAX_PENDING {
            self.0.pop_front();
        }
        self.0.push_back(uid);
    }

    /// Which of `waiting` (oldest first) to offer the next region: a
    /// request of the uid offered one least recently (one not among the
    /// latest offers first), the oldest of that uid's. `None` if none
    /// asked.
    pub(super) fn next(&self, waiting: &[Waiting]) -> Option<usize> {
        // Rank 0: not offered lately; then by how long ago.
        let rank = |uid: u32| self.0.iter().rposition(|&u| u == uid).map_or(0, |i| i + 1);
        waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| w.requested)
            .min_by_key(|&(i, w)| (rank(w.uid), i))
            .map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(uid: u32, requested: bool) -> Waiting {
        Waiting { uid, requested }
    }

    #[test]
    fn a_uid_that_floods_makes_room_in_its_own_connections() {
        // B's request is the oldest; A holds the other fifteen.
        let mut waiting = vec![w(2, true)];
        waiting.extend((0..MAX_PENDING - 1).map(|_| w(1, true)));
        assert_eq!(make_room(&waiting, 1), Some(1), "A's oldest, not B's");
        // A silent one of A's goes first.
        waiting[7].requested = false;
        assert_eq!(make_room(&waiting, 1), Some(7));
        // A newcomer of B's, with A holding fifteen: still A's.
        assert_eq!(make_room(&waiting, 2), Some(7));
    }

    #[test]
    fn each_uid_keeps_its_share() {
        // A and B hold eight each; a newcomer of A's makes room in A's.
        let waiting: Vec<_> = (0..MAX_PENDING)
            .map(|i| w(if i % 2 == 0 { 1 } else { 2 }, true))
            .collect();
        assert_eq!(make_room(&waiting, 1), Some(0));
        assert_eq!(make_room(&waiting, 2), Some(1));
        // A newcomer of a third uid: one of the two crowded uids, the
        // oldest.
        assert_eq!(make_room(&waiting, 3), Some(0));
    }

    #[test]
    fn one_uid_alone_closes_its_oldest_silent_then_its_oldest() {
        let mut waiting: Vec<_> = (0..MAX_PENDING).map(|_| w(5, true)).collect();
        assert_eq!(make_room(&waiting, 5), Some(0));
        waiting[3].requested = false;
        assert_eq!(make_room(&waiting, 5), Some(3));
        assert_eq!(make_room(&[], 5), None);
    }

    #[test]
    fn the_next_offer_goes_to_the_uid_offered_least_recently() {
        let waiting = [w(1, true), w(1, true), w(2, false), w(2, true)];
        let mut offered = Offered::default();
        // Nobody was offered yet: the oldest request.
        assert_eq!(offered.next(&waiting), Some(0));
        offered.record(1);
        // A was offered last: B's request, though younger (B's silent
        // connection is no request).
        assert_eq!(offered.next(&waiting), Some(3));
        offered.record(2);
        assert_eq!(offered.next(&waiting), Some(0));
        offered.record(1);
        assert_eq!(offered.next(&waiting), Some(3));
        assert_eq!(offered.next(&[w(1, false)]), None);
    }

    #[test]
    fn the_record_of_offers_is_bounded() {
        let mut offered = Offered::default();
        for uid in 0..(MAX_PENDING as u32 * 3) {
            offered.record(uid);
        }
        assert_eq!(offered.0.len(), MAX_PENDING);
        // A uid offered long ago counts as not offered lately.
        assert_eq!(offered.next(&[w(40, true), w(0, true)]), Some(1));
    }
}
