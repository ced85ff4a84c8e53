//! The master's connections before an offer: each accepted, its
//! credentials checked (and its uid's penalty, and the room for what it
//! may pass), kept until its request comes, and its request read.

use super::{describe, planted, privileged, turns, Master, Pending};
use crate::abi;
use crate::closer::{self, PeerSocket};
use crate::handshake::{self, Kind};
use crate::link::control::{far_future, MAX_PENDING};
use crate::netns;
use std::io;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

impl Master<'_> {
    /// Accepts queued connections (a bounded number per turn); checks each one's credentials
    /// before anything else, and reads its request if it is already there.
    /// `meeting`: from the abstract name in the link's network namespace,
    /// else from the run directory's socket.
    pub(super) fn accept_all(&mut self, meeting: bool) {
        // At most this many per turn of the loop: a flood that refills the
        // backlog as fast as it drains must not keep the loop from serving
        // the requests it already has.
        for _ in 0..2 * MAX_PENDING {
            let listener = match (meeting, &self.claim.meeting) {
                (true, Some(m)) => m,
                _ => &self.claim.files.listener,
            };
            let conn = match handshake::accept(listener) {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // EMFILE and the like: leave the rest queued for now.
                    let label = self.shared.label.clone();
                    self.refusals
                        .warn(&label, || format!("cannot accept a connection: {e}"));
                    return;
                }
            };
            let cred = match handshake::peer_credentials(&conn) {
                Ok(c) => c,
                Err(e) => {
                    self.refuse(
                        &conn,
                        None,
                        Kind::Reject,
                        &format!("cannot read peer credentials: {e}"),
                    );
                    continue;
                }
            };
            if !self.may_ask(cred.uid) {
                let reason = self.not_allowed(cred.uid);
                self.refuse(&conn, Some(&cred), Kind::Reject, &reason);
                continue;
            }
            if let Some(reason) = self.penalised(cred.uid) {
                self.refuse(&conn, Some(&cred), Kind::Reject, &reason);
                continue;
            }
            let outside = self.outside(&conn, &cred);
            if let Some(reason) = &outside {
                // Only root and our own uid, from anywhere, may ask for
                // the status; nobody outside may attach.
                if !privileged(cred.uid) {
                    self.refuse(&conn, Some(&cred), Kind::Reject, reason);
                    continue;
                }
            }
            if !closer::has_room() {
                // What this connection may carry would not fit: it goes
                // back to the loop, which stops accepting.
                self.park(conn, cred, outside);
                return;
            }
            self.park(conn, cred, outside);
            let last = self.pending.len() - 1;
            if handshake::wait_readable(&self.pending[last].conn, Duration::ZERO).unwrap_or(false) {
                self.read_request(last);
            }
        }
    }

    /// Keeps a connection that passed the credential check until its
    /// request comes; past [`MAX_PENDING`] one of the uid that holds the
    /// most is closed ([`turns::make_room`]).
    fn park(&mut self, conn: PeerSocket, cred: libc::ucred, outside: Option<String>) {
        if self.pending.len() >= MAX_PENDING {
            let victim = turns::make_room(&self.waiting(), cred.uid).unwrap_or(0);
            let old = self.pending.remove(victim);
            log::debug!(
                "vecring: {}: closing idle connection ({}) to make room",
                self.label(),
                describe(&old.cred)
            );
        }
        let deadline = Instant::now()
            .checked_add(self.config.handshake_timeout)
            .unwrap_or_else(far_future);
        self.pending.push(Pending {
            conn,
            cred,
            outside,
            deadline,
            requested: false,
        });
    }

    /// In a network namespace: why the process that connected `conn` is
    /// not in the link's namespace, checked from that process itself
    /// ([`netns::peer_netns`]); `None` when it is, or when the link meets
    /// in the run directory.
    fn outside(&self, conn: &PeerSocket, cred: &libc::ucred) -> Option<String> {
        let m = self.config.netns.as_ref()?;
        let want = m.ns.id();
        match netns::peer_netns(conn.as_fd(), cred) {
            Ok(id) if id == want => None,
            Ok(id) => Some(format!(
                "its network namespace {id} is not the link's {want} ({})",
                m.ns.path().display()
            )),
            Err(why) => Some(format!(
                "its network namespace cannot be checked against the link's {want}: {why}"
            )),
        }
    }

    /// Reads what pending connection `i` sent: its request, or its
    /// departure.
    pub(super) fn read_request(&mut self, i: usize) {
        if i >= self.pending.len() {
            return;
        }
        match handshake::recv(&self.pending[i].conn, Duration::ZERO) {
            Ok((m, fds))
                if fds.is_empty() && m.kind == Kind::Request && !self.pending[i].requested =>
            {
                if let Some(reason) = self.pending[i].outside.take() {
                    let p = self.pending.remove(i);
                    self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
                    return;
                }
                if !self.may_attach(self.pending[i].cred.uid) {
                    let p = self.pending.remove(i);
                    let reason = self.not_allowed(p.cred.uid);
                    self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
                    return;
                }
                if m.version_major != abi::VERSION_MAJOR {
                    let p = self.pending.remove(i);
                    let reason = format!(
                        "ABI major version mismatch: ours {}, theirs {}",
                        abi::VERSION_MAJOR,
                        m.version_major
                    );
                    self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
                    return;
                }
                self.pending[i].requested = true;
                // A request that has to wait (the budget, the bound on
                // regions, another offer) gets Busy before the slave's own
                // timeout, the same length but started at its connect,
                // ends its attempt as a failure.
                let half = Instant::now()
                    .checked_add(self.config.handshake_timeout / 2)
                    .unwrap_or_else(far_future);
                self.pending[i].deadline = self.pending[i].deadline.min(half);
            }
            Ok((m, fds))
                if fds.is_empty() && m.kind == Kind::Pause && !self.pending[i].requested =>
            {
                let p = self.pending.remove(i);
                self.pause(p);
            }
            Ok((m, fds))
                if fds.is_empty() && m.kind == Kind::Status && !self.pending[i].requested =>
            {
                let p = self.pending.remove(i);
                let answer = self.status(p.cred.uid).encode();
                if let Err(e) = handshake::send_bytes(&p.conn, answer.as_bytes()) {
                    log::debug!("vecring: {}: status answer not sent: {e}", self.label());
                }
            }
            // Nothing yet, or no room to read it (`closer::no_room`).
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut => {
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.pending.remove(i);
            }
            other => {
                let p = self.pending.remove(i);
                let reason = match other {
                    Ok((_, fds)) if !fds.is_empty() => {
                        let why = planted(&fds).unwrap_or_default();
                        format!("{why}; {}", self.punish(p.cred.uid))
                    }
                    Ok((m, _)) => format!("unexpected {:?} before any region was offered", m.kind),
                    Err(e) => match handshake::passed_fds(&e) {
                        Some(n) => {
                            closer::count_planted(n);
                            format!("handshake: {e}; {}", self.punish(p.cred.uid))
                        }
                        None => format!("handshake: {e}"),
                    },
                };
                self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
            }
        }
    }
}
