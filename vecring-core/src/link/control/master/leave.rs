//! How a generation ends, seen by the master: the attached slave closes
//! its connection or breaks protocol ([`Master::slave_left`]), passes
//! descriptors on a doorbell or corrupts the ring
//! ([`Master::check_corruption`]); and the back-off that makes a short
//! generation's next offer wait ([`Master::end_session`]).

use super::super::{corrupt, BACKOFF_FIRST, BACKOFF_MAX};
use super::{planted, Master};
use crate::closer;
use crate::handshake;
use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Master<'_> {
    /// The attached slave closed (EOF) or broke protocol: either way it is
    /// gone for this generation.
    pub(super) fn slave_left(&mut self) {
        let Some(a) = self.attached.take() else {
            return;
        };
        let farewell = handshake::recv(&a.conn, Duration::ZERO);
        // Closed before the link reports down, so that down means the
        // connection is gone too.
        drop(a.conn);
        let g = a.generation;
        match farewell {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                let label = self.label().to_string();
                self.left_lines
                    .log(module_path!(), log::Level::Info, "more such lines", || {
                        format!("vecring: {label}: slave of generation {g} left")
                    })
            }
            Err(e) if closer::is_no_room(&e) => {
                let label = self.label().to_string();
                self.left_lines
                    .log(module_path!(), log::Level::Info, "more such lines", || {
                        format!("vecring: {label}: slave of generation {g} left or wrote (not read: {e})")
                    })
            }
            Err(e) => {
                let punished = handshake::passed_fds(&e).map(|n| {
                    closer::count_planted(n);
                    format!(", {}", self.punish(a.peer.uid))
                });
                let punished = punished.unwrap_or_default();
                self.peer_line(log::Level::Warn, || {
                    format!("slave of generation {g}: {e}{punished}")
                })
            }
            Ok((_, fds)) if !fds.is_empty() => {
                let why = planted(&fds).unwrap_or_default();
                let punished = self.punish(a.peer.uid);
                self.peer_line(log::Level::Warn, || {
                    format!("slave of generation {g}: {why}; disconnecting, {punished}")
                })
            }
            Ok((m, _)) => self.peer_line(log::Level::Warn, || {
                format!("unexpected {:?} from slave; disconnecting", m.kind)
            }),
        }
        self.end_session(a.watch, a.since);
    }

    /// The generation begun at `since` ended. One shorter than
    /// [`SHORT_GENERATION`](super::super::SHORT_GENERATION) makes the next offer
    /// wait, doubling up to [`BACKOFF_MAX`]; only a generation that lasted
    /// resets the back-off, so attaching and leaving in a loop is
    /// throttled like taking regions and leaving.
    pub(super) fn end_session(&mut self, watch: i32, since: Instant) {
        self.shared.set_session(None);
        self.pins.dropped(watch);
        if let Some(p) = &mut self.paused {
            p.ended(watch);
        }
        if since.elapsed() < super::super::SHORT_GENERATION {
            self.backoff = (self.backoff * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX);
            self.next_offer = Instant::now() + self.backoff;
        } else {
            self.backoff = Duration::ZERO;
        }
    }

    pub(super) fn check_corruption(&mut self) {
        if self.attached.is_some() && self.shared.session_tainted() {
            let g = self.attached.as_ref().map_or(0, |a| a.generation);
            let uid = self.attached.as_ref().map_or(0, |a| a.peer.uid);
            let punished = self.punish(uid);
            self.peer_line(log::Level::Warn, || {
                format!(
                    "slave of generation {g} passed file descriptors on a doorbell \
                     (closed apart, off the data path); disconnecting, {punished}"
                )
            });
            self.shared
                .counters
                .rejected_peers
                .fetch_add(1, Ordering::Relaxed);
            if let Some(a) = self.attached.take() {
                drop(a.conn);
                self.end_session(a.watch, a.since);
            }
            return;
        }
        if self
            .attached
            .as_ref()
            .is_some_and(|a| corrupt(self.shared, a.generation))
        {
            self.shared
                .counters
                .peer_corruptions
                .fetch_add(1, Ordering::Relaxed);
            if let Some(a) = self.attached.take() {
                drop(a.conn);
                self.end_session(a.watch, a.since);
            }
        }
    }
}
