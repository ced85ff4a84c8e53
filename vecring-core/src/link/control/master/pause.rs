//! The operator's pause ([`Kind::Pause`]): a checkpoint tool (the CRIU
//! plugin `vecring-criu`) asks the master, from the host socket, to let go
//! of the link's slave before it freezes and dumps it.
//!
//! The master closes the attached slave's connection (the link goes down
//! exactly as when the slave leaves: each side counts what the other never
//! took), drops an offer in flight, makes no offer while the asker's
//! connection stays open, and answers `Ack` once every region it had
//! handed out for the link is gone from every process ([`PinWatch`]: the
//! slave has unmapped it and closed its doorbells with it). A dump taken
//! after the `Ack` holds no part of the link: no copy of the region, no
//! descriptor of the host. When the asker closes (the dump ended, or the
//! tool died), the master serves requests again; a restored slave asks
//! like any other and gets a new generation.
//!
//! Only root and the master's own uid may pause: they could stop the
//! master anyway. One pause at a time.
//!
//! [`PinWatch`]: crate::pinned::PinWatch

use super::{describe, privileged, Master, Pending};
use crate::closer::PeerSocket;
use crate::handshake::{self, Kind, Msg};
use std::time::Duration;

/// The pause in force and who asked for it.
pub(super) struct Paused {
    /// The asker's connection: the pause lasts while it is open.
    pub(super) conn: PeerSocket,
    cred: libc::ucred,
    /// The regions handed out before the pause, still held by someone.
    regions: Vec<i32>,
    acked: bool,
}

impl Paused {
    /// Why a request waits, for its Busy.
    pub(super) fn reason(&self) -> String {
        format!(
            "the link is paused by pid {} (a checkpoint); try again later",
            self.cred.pid
        )
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
        let mut regions = Vec::new();
        if let Some(a) = self.attached.take() {
            // Closed before the link reports down, as when the slave leaves.
            drop(a.conn);
            regions.push(a.watch);
            let (label, g, who) = (self.label().to_string(), a.generation, describe(&p.cred));
            self.left_lines
                .log(module_path!(), log::Level::Info, "more such lines", || {
                    format!(
                        "vecring: {label}: pause asked by {who}: slave of generation {g} detached"
                    )
                });
            self.end_session(a.watch, a.since);
        }
        if let Some(o) = self.offer.take() {
            regions.push(o.watch);
            let reason = "the link is paused (a checkpoint); try again later";
            self.refuse(&o.conn, Some(&o.cred), Kind::Busy, reason);
            self.offer_failed(o);
        }
        log::info!(
            "vecring: {}: paused by {}: no region is offered until it closes",
            self.label(),
            describe(&p.cred)
        );
        self.paused = Some(Paused {
            conn: p.conn,
            cred: p.cred,
            regions,
            acked: false,
        });
        self.pause_released();
    }

    /// Answers the pause once no region handed out before it is held.
    pub(super) fn pause_released(&mut self) {
        let Some(held) = &mut self.paused else {
            return;
        };
        if held.acked {
            return;
        }
        let pins = &self.pins;
        held.regions.retain(|&w| pins.holds(w));
        if !held.regions.is_empty() {
            return;
        }
        held.acked = true;
        let sent = handshake::send(&held.conn, &Msg::new(Kind::Ack, 0), &[]);
        let pid = held.cred.pid;
        match sent {
            Ok(()) => log::info!(
                "vecring: {}: paused by pid {pid}: no process holds the link's memory",
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
