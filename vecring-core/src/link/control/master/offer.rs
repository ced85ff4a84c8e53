//! The master's offer to one slave: a new region and its doorbells sent
//! with the Hello, then the slave's verdict (Ack: seal and Ready; Nack,
//! EOF or silence: the offer fails and the next one waits longer).

use super::{describe, Attached, Master, Offer};
use crate::abi;
use crate::doorbell::Doorbell;
use crate::handshake::{self, Kind, Msg};
use crate::link::control::{far_future, BACKOFF_FIRST, BACKOFF_MAX, MAX_REGIONS};
use crate::link::shared::Session;
use crate::memory::{Region, RegionOptions};
use crate::status::{PeerInfo, RegionInfo};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Master<'_> {
    /// Makes an offer to the next request ([`turns`](super::turns): of
    /// the uid offered one least recently, its oldest) if the link has room
    /// for one; refuses requests while a slave is attached.
    pub(super) fn serve(&mut self) {
        if self.attached.is_some() {
            while let Some(i) = self.pending.iter().position(|p| p.requested) {
                let p = self.pending.remove(i);
                self.refuse(
                    &p.conn,
                    Some(&p.cred),
                    Kind::Reject,
                    "the link already has a slave",
                );
            }
            return;
        }
        if self.offer.is_some()
            || self.paused.is_some()
            || Instant::now() < self.next_offer
            || self.pins.pinned() >= MAX_REGIONS
        {
            return;
        }
        let Some(i) = self.offered.next(&self.waiting()) else {
            return;
        };
        let now = Instant::now();
        if !self.budget.available(now) {
            self.budget_spent();
            return;
        }
        let p = self.pending.remove(i);
        self.offered.record(p.cred.uid);
        self.generation += 1;
        let opts = RegionOptions {
            hugepages: self.config.hugepages,
            numa_node: self.config.numa_node,
        };
        let region = match Region::create(self.geometry, self.queues, self.generation, &opts) {
            Ok(r) => {
                // Charged whatever becomes of the region: its pages may
                // outlive every descriptor and mapping of it.
                self.budget.take(now);
                self.budget_told = false;
                Arc::new(r)
            }
            Err(e) => {
                self.peer_line(log::Level::Error, || {
                    format!("cannot create link memory: {e}")
                });
                let reason = format!("master cannot create link memory: {e}");
                self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
                return;
            }
        };
        let watch = match self.pins.watch(region.fd()) {
            Ok(w) => w,
            Err(e) => {
                let reason = format!("master cannot watch link memory: {e}");
                self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
                return;
            }
        };
        let (doorbells, theirs) = match Doorbell::pairs(abi::ring_count(self.queues) as usize) {
            Ok(pairs) => pairs,
            Err(e) => {
                self.peer_line(log::Level::Error, || {
                    format!("cannot create doorbells: {e}")
                });
                let reason = format!("master cannot create doorbells: {e}");
                self.refuse(&p.conn, Some(&p.cred), Kind::Reject, &reason);
                self.pins.dropped(watch);
                return;
            }
        };
        let hello = Msg::hello(
            self.geometry,
            self.queues,
            region.size() as u64,
            self.generation,
        );
        // The memfd, then the slave's end of each ring's doorbell in ring
        // order; our copies of their ends close when `theirs` drops.
        let fds: Vec<BorrowedFd<'_>> = std::iter::once(region.fd())
            .chain(theirs.iter().map(|fd| fd.as_fd()))
            .collect();
        let sent = handshake::send(&p.conn, &hello, &fds);
        drop(fds);
        drop(theirs);
        let deadline = Instant::now()
            .checked_add(self.config.handshake_timeout)
            .unwrap_or_else(far_future);
        let offer = Offer {
            conn: p.conn,
            cred: p.cred,
            region,
            doorbells: doorbells.into_iter().map(Arc::new).collect(),
            watch,
            generation: self.generation,
            deadline,
        };
        match sent {
            Ok(()) => self.offer = Some(offer),
            Err(e) => {
                self.peer_line(log::Level::Warn, || {
                    format!("slave vanished during handshake: {e}")
                });
                self.offer_failed(offer);
            }
        }
    }

    /// A slave asked while the region budget is spent: it waits (and gets
    /// Busy once its time is up) rather than the master allocating.
    fn budget_spent(&mut self) {
        if std::mem::replace(&mut self.budget_told, true) {
            return;
        }
        let b = self.budget.budget();
        let wait = self.budget.next_token().map_or(Duration::ZERO, |t| {
            t.saturating_duration_since(Instant::now())
        });
        let label = self.label().to_string();
        self.budget_lines
            .log(module_path!(), log::Level::Warn, "more such lines", || {
                format!(
                    "vecring: {label}: region budget spent ({} regions at once, then one per {:?}): \
                     the waiting slave gets the next region in {wait:.0?}",
                    b.burst(),
                    b.every()
                )
            });
    }

    /// An offer that did not end in an attached slave: drop the region
    /// (its pages stay pinned while the peer holds them) and wait longer
    /// before the next offer.
    pub(super) fn offer_failed(&mut self, o: Offer) {
        drop(o.region);
        self.pins.dropped(o.watch);
        self.backoff = (self.backoff * 2).clamp(BACKOFF_FIRST, BACKOFF_MAX);
        self.next_offer = Instant::now() + self.backoff;
    }

    /// The offered slave answered (or left).
    pub(super) fn verdict(&mut self) {
        let Some(o) = self.offer.take() else {
            return;
        };
        match handshake::recv(&o.conn, Duration::ZERO) {
            Ok((m, fds))
                if fds.is_empty() && m.kind == Kind::Ack && m.generation == o.generation =>
            {
                // The slave has mapped the region: seal it against new
                // writable mappings and hole punching, and check that our
                // own pages are all there.
                if let Err(e) = o.region.seal_shared() {
                    let reason = format!("cannot seal the region: {e}");
                    self.peer_line(log::Level::Warn, || reason.clone());
                    self.refuse(&o.conn, Some(&o.cred), Kind::Reject, &reason);
                    self.offer_failed(o);
                    return;
                }
                if let Err(e) = handshake::send(&o.conn, &Msg::new(Kind::Ready, o.generation), &[])
                {
                    self.peer_line(log::Level::Warn, || {
                        format!("slave vanished during handshake: {e}")
                    });
                    self.offer_failed(o);
                    return;
                }
                let (label, who, mib, pages) = (
                    self.label().to_string(),
                    describe(&o.cred),
                    o.region.size() >> 20,
                    if o.region.hugepages() {
                        "hugepages"
                    } else {
                        "4 KiB pages"
                    },
                );
                self.attached_lines.log(
                    module_path!(),
                    log::Level::Info,
                    "more such lines",
                    || {
                        format!(
                            "vecring: {label}: slave attached: {who}; {mib} MiB region, {pages}"
                        )
                    },
                );
                // The back-off is not reset here: only a generation that
                // lasted resets it (`end_session`).
                let g = o.region.geometry();
                let region_info = RegionInfo {
                    size: o.region.size() as u64,
                    hugepages: o.region.hugepages(),
                    slot_count: g.slot_count(),
                    slot_size: g.slot_size(),
                    max_frame_len: g.max_frame_len(),
                };
                self.shared.set_session(Some(Arc::new(Session {
                    region: o.region,
                    doorbells: o.doorbells,
                    generation: o.generation,
                })));
                self.attached = Some(Attached {
                    conn: o.conn,
                    generation: o.generation,
                    since: Instant::now(),
                    watch: o.watch,
                    peer: PeerInfo {
                        pid: o.cred.pid,
                        uid: o.cred.uid,
                        gid: o.cred.gid,
                    },
                    region: region_info,
                });
            }
            // Nothing yet, or no room to read it (`closer::no_room`).
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.offer = Some(o),
            Ok((_, fds)) if !fds.is_empty() => {
                let why = super::planted(&fds).unwrap_or_default();
                let reason = format!("{why}; {}", self.punish(o.cred.uid));
                self.refuse(&o.conn, Some(&o.cred), Kind::Reject, &reason);
                self.offer_failed(o);
            }
            Ok((m, _)) if m.kind == Kind::Nack => {
                self.shared
                    .counters
                    .rejected_peers
                    .fetch_add(1, Ordering::Relaxed);
                // The slave's reason speaks from the slave's side ("ours"
                // is the slave's figure, "theirs" this master's): reword it
                // from this side.
                self.peer_line(log::Level::Error, || {
                    format!(
                        "slave refused our region: {}",
                        m.text
                            .replace("ours ", "\0")
                            .replace("theirs ", "ours ")
                            .replace('\0', "slave's ")
                    )
                });
                self.offer_failed(o);
            }
            Ok((m, _)) => {
                let reason = format!("unexpected {:?} for generation {}", m.kind, m.generation);
                self.refuse(&o.conn, Some(&o.cred), Kind::Reject, &reason);
                self.offer_failed(o);
            }
            // A reply that is no message (oversized, truncated, malformed):
            // refused by name, as a wrong message is, not taken for a
            // slave that left.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let reason = match handshake::passed_fds(&e) {
                    Some(n) => {
                        crate::closer::count_planted(n);
                        format!("{e}; {}", self.punish(o.cred.uid))
                    }
                    None => e.to_string(),
                };
                self.refuse(&o.conn, Some(&o.cred), Kind::Reject, &reason);
                self.offer_failed(o);
            }
            Err(e) => {
                self.shared
                    .counters
                    .rejected_peers
                    .fetch_add(1, Ordering::Relaxed);
                let label = self.shared.label.clone();
                let who = describe(&o.cred);
                self.refusals.warn(&label, || {
                    format!("slave ({who}) left during the handshake: {e}")
                });
                self.offer_failed(o);
            }
        }
    }
}
