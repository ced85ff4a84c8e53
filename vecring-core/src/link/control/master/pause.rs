//! The operator's pause ([`Kind::Pause`]): a checkpoint tool (the CRIU
//! plugin `vecring-criu`) asks the master, from the host socket, to let go
//! of the link's slave before it freezes and dumps it.
//!
//! The master half-closes the attached slave's connection: the slave
//! takes the link down, waits for its data path to let go of the rings,
//! and closes, and only then does the link go down here, so that what each
//! side counts is final (what one side sent and the other never took is
//! counted lost on link down, never delivered twice). An offer in flight
//! is dropped; no offer is made while the asker's connection stays open.
//! The answer (`Ack`) comes once every region handed out for the link is
//! gone from every process ([`PinWatch`]) and every doorbell the slave had
//! is closed: a dump taken then holds no part of the link, no copy of the
//! region, no descriptor of the host. When the asker closes (the dump
//! ended, or the tool died), the master serves requests again; a restored
//! slave asks like any other and gets a new generation.
//!
//! Only root and the master's own uid may pause: they could stop the
//! master anyway. One pause at a time. A slave that does not close within
//! the handshake timeout is disconnected.
//!
//! [`PinWatch`]: crate::pinned::PinWatch

use super::{describe, privileged, Master, Pending};
use crate::closer::PeerSocket;
use crate::doorbell::Doorbell;
use crate::handshake::{self, Kind, Msg};
use crate::link::control::far_future;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a pause that waits for the slave's doorbells to close looks
/// again (their closing raises no event here).
pub(super) const RECHECK: Duration = Duration::from_millis(5);

/// The pause in force and who asked for it.
pub(super) struct Paused {
    /// The asker's connection: the pause lasts while it is open.
    pub(super) conn: PeerSocket,
    cred: libc::ucred,
    /// The regions handed out before the pause, still held by someone.
    regions: Vec<i32>,
    /// Our ends of the doorbells handed out before the pause, until the
    /// slave's ends are closed.
    bells: Vec<Arc<Doorbell>>,
    /// When a slave that was asked to leave is disconnected.
    deadline: Instant,
    pub(super) acked: bool,
}

impl Paused {
    /// Why a request waits, for its Busy.
    pub(super) fn reason(&self) -> String {
        format!(
            "the link is paused by pid {} (a checkpoint); try again later",
            self.cred.pid
        )
    }

    /// A region of the link ended while the pause waits: it waits for it.
    pub(super) fn ended(&mut self, watch: i32) {
        if !self.acked {
            self.regions.push(watch);
        }
    }
}

impl Master<'_> {
    /// Pending connection `p` asked for a pause.
    pub(super) fn pause(&mut self, p: Pending) {
        if !privileged(p.cred.uid) {
            let reason = format!(
                "uid {} may not pause the link (only root and the master's uid)",
                p.cred.uid
            );
            self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
            return;
        }
        if let Some(held) = &self.paused {
            let reason = format!("the link is already paused by pid {}", held.cred.pid);
            self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
            return;
        }
        let mut paused = Paused {
            conn: p.conn,
            cred: p.cred,
            regions: Vec::new(),
            bells: Vec::new(),
            deadline: Instant::now()
                .checked_add(self.config.handshake_timeout)
                .unwrap_or_else(far_future),
            acked: false,
        };
        if let Some(a) = &self.attached {
            if let Some(s) = &self.shared.lock().session {
                paused.bells.extend(s.doorbells.iter().cloned());
            }
            // SAFETY: shutdown on a socket we own; the slave reads the end
            // of the connection and leaves (`slave_left`).
            unsafe { libc::shutdown(a.conn.as_raw_fd(), libc::SHUT_WR) };
            let (label, g, who) = (self.label().to_string(), a.generation, describe(&p.cred));
            self.left_lines
                .log(module_path!(), log::Level::Info, "more such lines", || {
                    format!("vecring: {label}: pause asked by {who}: slave of generation {g} asked to detach")
                });
        }
        if let Some(o) = self.offer.take() {
            paused.regions.push(o.watch);
            paused.bells.extend(o.doorbells.iter().cloned());
            let reason = "the link is paused (a checkpoint); try again later";
            self.refuse(&o.conn, Some(&o.cred), Kind::Busy, reason);
            self.offer_failed(o);
        }
        log::info!(
            "vecring: {}: paused by {}: no region is offered until it closes",
            self.label(),
            describe(&p.cred)
        );
        self.paused = Some(paused);
        self.pause_released();
    }

    /// Answers the pause once the slave has left and nothing handed out
    /// before it is held; disconnects a slave that takes too long.
    pub(super) fn pause_released(&mut self) {
        let Some(held) = &self.paused else {
            return;
        };
        if held.acked {
            return;
        }
        if self.attached.is_some() {
            if Instant::now() < held.deadline {
                return;
            }
            if let Some(a) = self.attached.take() {
                let g = a.generation;
                self.peer_line(log::Level::Warn, || {
                    format!("slave of generation {g} did not leave when paused; disconnecting")
                });
                drop(a.conn);
                self.end_session(a.watch, a.since);
            }
        }
        let Some(held) = &mut self.paused else {
            return;
        };
        let pins = &self.pins;
        held.regions.retain(|&w| pins.holds(w));
        held.bells.retain(|b| !b.peer_closed());
        if !held.regions.is_empty() || !held.bells.is_empty() {
            return;
        }
        held.acked = true;
        let sent = handshake::send(&held.conn, &Msg::new(Kind::Ack, 0), &[]);
        let pid = held.cred.pid;
        match sent {
            Ok(()) => log::info!(
                "vecring: {}: paused by pid {pid}: no process holds the link's memory or doorbells",
                self.label()
            ),
            Err(e) => log::debug!("vecring: {}: pause answer not sent: {e}", self.label()),
        }
    }

    /// The asker closed or spoke: the pause ends either way.
    pub(super) fn pause_ended(&mut self) {
        let Some(held) = self.paused.take() else {
            return;
        };
        // Whatever came (a message, descriptors) is read and dropped.
        let _ = handshake::recv(&held.conn, Duration::ZERO);
        log::info!(
            "vecring: {}: pause by pid {} ended; serving requests again",
            self.label(),
            held.cred.pid
        );
    }
}
