//! The master's control loop: accepts connections, checks credentials,
//! makes one offer at a time within the bound on regions, seals the region
//! once the slave has mapped it, and watches the attached slave until its
//! generation ends ([`leave`]).

use super::MAX_REGIONS;
use super::{stopping, wait, Wake};
use crate::closer::{self, PeerSocket, Received};
use crate::doorbell::Doorbell;
use crate::handshake::{self, Kind, Msg};
use crate::link::budget::Bucket;
use crate::link::control::Claim;
use crate::link::rate_log::RateLog;
use crate::link::shared::{Config, LinkShared};
use crate::memory::Region;
use crate::pinned::PinWatch;
use crate::status::{LinkStatus, PeerInfo, RegionInfo};
use crate::{abi, geometry::Geometry};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod accept;
mod leave;
mod offer;
mod pause;
mod penalty;
mod turns;

use penalty::{Penalties, Whom};

/// Refusal lines, rate-limited ([`RateLog`]).
#[derive(Default)]
struct Refusals(RateLog);

impl Refusals {
    fn warn(&mut self, label: &str, msg: impl FnOnce() -> String) {
        self.0
            .log(module_path!(), log::Level::Warn, "more refusals", || {
                format!("vecring: {label}: {}", msg())
            });
    }
}

/// Root, or the master's own uid: never penalised, since they can stop
/// or replace the master anyway.
fn privileged(uid: u32) -> bool {
    // SAFETY: geteuid has no preconditions.
    uid == 0 || uid == unsafe { libc::geteuid() }
}

fn describe(cred: &libc::ucred) -> String {
    format!("pid {} uid {} gid {}", cred.pid, cred.uid, cred.gid)
}

/// Why a message that came with descriptors is refused (a slave sends
/// none); counts them. `None` when none came.
fn planted(fds: &Received) -> Option<String> {
    if fds.is_empty() {
        return None;
    }
    closer::count_planted(fds.len());
    Some(format!(
        "it passed {} file descriptors; a slave sends none (closed apart, off this thread)",
        fds.len()
    ))
}

/// A connection that passed the credential check and waits for its
/// request (or, having asked, for its turn).
struct Pending {
    conn: PeerSocket,
    cred: libc::ucred,
    /// In a network namespace: why its process is not in the link's
    /// namespace (it may then ask for the status, if privileged, but
    /// never attach).
    outside: Option<String>,
    deadline: Instant,
    requested: bool,
}

/// A region sent to a peer, waiting for its verdict.
struct Offer {
    conn: PeerSocket,
    cred: libc::ucred,
    region: Arc<Region>,
    /// Our ends of the region's doorbells, in ring order.
    doorbells: Vec<Arc<Doorbell>>,
    watch: i32,
    generation: u64,
    deadline: Instant,
}

/// The attached slave.
struct Attached {
    conn: PeerSocket,
    generation: u64,
    /// When the generation began (its length decides the back-off).
    since: Instant,
    watch: i32,
    peer: PeerInfo,
    region: RegionInfo,
}

/// The master's control loop and its state.
pub(super) struct Master<'a> {
    shared: &'a LinkShared,
    config: &'a Config,
    claim: Claim,
    geometry: Geometry,
    /// Queue pairs offered in every region.
    queues: u16,
    pins: PinWatch,
    generation: u64,
    pending: Vec<Pending>,
    offer: Option<Offer>,
    attached: Option<Attached>,
    /// No offer before this instant (back-off after an incomplete one).
    next_offer: Instant,
    backoff: Duration,
    refusals: Refusals,
    /// "slave attached" lines.
    attached_lines: RateLog,
    /// "slave left" lines.
    left_lines: RateLog,
    /// Other lines a peer can provoke at will (it vanished, broke
    /// protocol, refused the region, passed descriptors).
    peer_lines: RateLog,
    /// Regions left to create ([`RegionBudget`](crate::RegionBudget)).
    budget: Bucket,
    /// "region budget spent" lines: one per time the budget runs out.
    budget_lines: RateLog,
    budget_told: bool,
    /// When the master opened the link (for the status's uptime).
    started: Instant,
    /// Uids refused for a while after passing descriptors.
    penalties: Penalties,
    /// The uids of the latest offers, for the next one's turn.
    offered: turns::Offered,
    /// "not reading peers" lines: one per time the closers fill up.
    full_lines: RateLog,
    full_told: bool,
    /// An operator's pause in force ([`pause`]).
    paused: Option<pause::Paused>,
}

/// How often a master that stopped reading peers (the closers are full)
/// looks whether closes have made room.
const FULL_RECHECK: Duration = Duration::from_millis(100);

/// Whose descriptor a `poll` entry is.
#[derive(Clone, Copy)]
enum Slot {
    /// The run directory's socket.
    Listener,
    /// The abstract name in the link's network namespace.
    Meeting,
    Pins,
    Attached,
    Offer,
    /// The connection that holds the link paused.
    Paused,
    Pending(usize),
}

impl<'a> Master<'a> {
    pub(super) fn new(
        shared: &'a LinkShared,
        config: &'a Config,
        claim: Claim,
        pins: PinWatch,
    ) -> Self {
        // Generations grow by one per offer. A new master continues from
        // the clock (microseconds), so generations also grow across master
        // restarts and a slave never sees the same number twice in a row.
        let generation = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        Master {
            shared,
            config,
            claim,
            geometry: config.geometry.unwrap_or_default(),
            queues: config.queues.unwrap_or(1),
            pins,
            generation,
            pending: Vec::new(),
            offer: None,
            attached: None,
            next_offer: Instant::now(),
            backoff: Duration::ZERO,
            refusals: Refusals::default(),
            attached_lines: RateLog::default(),
            left_lines: RateLog::default(),
            peer_lines: RateLog::default(),
            budget: Bucket::new(config.region_budget, Instant::now()),
            budget_lines: RateLog::default(),
            budget_told: false,
            started: Instant::now(),
            penalties: Penalties::default(),
            offered: turns::Offered::default(),
            full_lines: RateLog::default(),
            full_told: false,
            paused: None,
        }
    }

    /// A process of `uid` passed descriptors: its uid is refused for a
    /// while (see [`penalty`]; every uid, when too many offended), unless
    /// it is root or the master's own uid, which can stop or replace the
    /// master anyway (refusing them would protect nothing and lock out the
    /// host's own tools). Returns the reason's tail.
    fn punish(&mut self, uid: u32) -> String {
        if privileged(uid) {
            return format!("uid {uid} is not refused later (root, or the master's own)");
        }
        match self.penalties.punish(uid, Instant::now()) {
            (length, Whom::Uid) => format!("uid {uid} refused for {length:?}"),
            (length, Whom::Everyone) => format!(
                "more than {} uids passed file descriptors: every uid but root and the master's refused for {length:?}",
                penalty::REMEMBERED
            ),
        }
    }

    /// Why a connection of `uid` is refused before anything it sends is
    /// read, if it is ([`penalty`]).
    fn penalised(&self, uid: u32) -> Option<String> {
        if privileged(uid) {
            return None;
        }
        let (left, whom) = self.penalties.refused(uid, Instant::now())?;
        Some(match whom {
            Whom::Uid => format!(
                "a process of uid {uid} passed file descriptors; refused for another {left:.0?}"
            ),
            Whom::Everyone => format!(
                "processes of more than {} uids passed file descriptors; every uid but root and the master's \
                 refused for another {left:.0?}",
                penalty::REMEMBERED
            ),
        })
    }

    /// Whether peers may be read now ([`closer::has_room`]); says so once
    /// each time they may not.
    fn peers_readable(&mut self) -> bool {
        if closer::has_room() {
            self.full_told = false;
            return true;
        }
        if !self.full_told {
            self.full_told = true;
            let label = self.label().to_string();
            let st = closer::stats();
            self.full_lines
                .log(module_path!(), log::Level::Warn, "more such lines", || {
                    format!(
                        "vecring: {label}: {} descriptors passed by peers are still closing (the bound is {}); \
                         no connection is accepted or read until some close",
                        st.open,
                        closer::limit()
                    )
                });
        }
        false
    }

    /// Whether a process running as `uid` may attach as the slave.
    fn may_attach(&self, uid: u32) -> bool {
        self.config.allowed_uids.is_empty() || self.config.allowed_uids.contains(&uid)
    }

    /// Whether it may at least ask for the link's status: also root and
    /// the master's own uid.
    fn may_ask(&self, uid: u32) -> bool {
        privileged(uid) || self.may_attach(uid)
    }

    fn not_allowed(&self, uid: u32) -> String {
        format!(
            "uid {uid} is not allowed to attach (allowed: {:?})",
            self.config.allowed_uids
        )
    }

    /// The link's status, for a process running as `asker` that asked
    /// (`vecring list`). Host PIDs go only to root and the master's own
    /// uid: a container has no use for them, and they tell it what runs
    /// on the host (0 stands for "not told").
    fn status(&self, asker: u32) -> LinkStatus {
        let told = privileged(asker);
        LinkStatus {
            master_pid: if told { std::process::id() as i32 } else { 0 },
            // SAFETY: geteuid has no preconditions.
            master_uid: unsafe { libc::geteuid() },
            uptime_secs: self.started.elapsed().as_secs(),
            numa_node: self.config.numa_node,
            queues: self.queues.into(),
            peer: self.attached.as_ref().map(|a| PeerInfo {
                pid: if told { a.peer.pid } else { 0 },
                ..a.peer
            }),
            region: self.attached.as_ref().map(|a| a.region),
            counters: self.shared.counters(),
        }
    }

    fn label(&self) -> &str {
        &self.shared.label
    }

    /// The pending connections as [`turns`] sees them, oldest first.
    fn waiting(&self) -> Vec<turns::Waiting> {
        self.pending
            .iter()
            .map(|p| turns::Waiting {
                uid: p.cred.uid,
                requested: p.requested,
            })
            .collect()
    }

    /// Logs a line a peer can provoke at will, at most one a second with
    /// the others of its kind ([`RateLog`]).
    fn peer_line(&self, level: log::Level, msg: impl FnOnce() -> String) {
        let label = self.label();
        self.peer_lines
            .log(module_path!(), level, "more such lines", || {
                format!("vecring: {label}: {}", msg())
            });
    }

    pub(super) fn run(mut self) {
        while !stopping(self.shared) {
            // Without room for what a peer may pass, nothing is accepted
            // or read but the attached slave's departure (which ends its
            // session whether or not its last message can be read).
            let readable = self.peers_readable();
            let (slots, fds): (Vec<Slot>, Vec<BorrowedFd<'_>>) = {
                let mut v = vec![(Slot::Pins, self.pins.fd())];
                if let Some(a) = &self.attached {
                    v.push((Slot::Attached, a.conn.as_fd()));
                }
                if let Some(p) = &self.paused {
                    v.push((Slot::Paused, p.conn.as_fd()));
                }
                if readable {
                    v.push((Slot::Listener, self.claim.files.listener.as_fd()));
                    if let Some(m) = &self.claim.meeting {
                        v.push((Slot::Meeting, m.as_fd()));
                    }
                    if let Some(o) = &self.offer {
                        v.push((Slot::Offer, o.conn.as_fd()));
                    }
                    for (i, p) in self.pending.iter().enumerate() {
                        v.push((Slot::Pending(i), p.conn.as_fd()));
                    }
                }
                v.into_iter().unzip()
            };
            let mut timeout = self
                .next_deadline()
                .map(|d| d.saturating_duration_since(Instant::now()));
            if !readable {
                // Closes complete without telling us: look again soon.
                timeout = Some(timeout.map_or(FULL_RECHECK, |t| t.min(FULL_RECHECK)));
            }
            let ready = match wait(self.shared, &fds, timeout) {
                Wake::Ready(r) => r.into_iter().map(|i| slots[i]).collect(),
                Wake::Poked | Wake::Timeout => Vec::new(),
            };
            drop(fds);
            // Pending connections are handled last and from the highest
            // index down, so that removing one does not shift the others.
            let mut pending_ready = Vec::new();
            for slot in ready {
                match slot {
                    Slot::Listener => self.accept_all(false),
                    Slot::Meeting => self.accept_all(true),
                    Slot::Pins => self.pins.poll(),
                    Slot::Attached => self.slave_left(),
                    Slot::Offer => self.verdict(),
                    Slot::Paused => self.pause_ended(),
                    Slot::Pending(i) => pending_ready.push(i),
                }
            }
            pending_ready.sort_unstable_by(|a, b| b.cmp(a));
            for i in pending_ready {
                self.read_request(i);
            }
            self.check_corruption();
            self.expire();
            self.pause_released();
            self.serve();
            self.shared
                .counters
                .pinned_regions
                .store(self.pins.pinned() as u64, Ordering::Relaxed);
        }
        if self.attached.take().is_some() {
            self.shared.set_session(None);
        }
    }

    /// The earliest instant at which something is due.
    fn next_deadline(&self) -> Option<Instant> {
        let mut due: Option<Instant> = None;
        let mut at = |t: Instant| due = Some(due.map_or(t, |d| d.min(t)));
        if let Some(o) = &self.offer {
            at(o.deadline);
        }
        for p in &self.pending {
            at(p.deadline);
            if p.requested && self.offer.is_none() && self.pins.pinned() < MAX_REGIONS {
                // The next offer is due when both the back-off and the
                // budget allow it (a full bound of regions waits for the
                // pins, below).
                at(self
                    .budget
                    .next_token()
                    .map_or(self.next_offer, |t| t.max(self.next_offer)));
            }
        }
        if self.pins.pinned() > 0 {
            // inotify reports releases; look at the count again now and
            // then all the same.
            at(Instant::now() + Duration::from_millis(500));
        }
        if self.attached.is_some() {
            // Corruption reports poke the eventfd; this is a fallback.
            at(Instant::now() + Duration::from_secs(1));
        }
        if self.paused.as_ref().is_some_and(|p| !p.acked) {
            // Doorbells closing raise no event here.
            at(Instant::now() + pause::RECHECK);
        }
        due
    }

    fn refuse(&mut self, conn: &PeerSocket, cred: Option<&libc::ucred>, kind: Kind, reason: &str) {
        if kind == Kind::Reject {
            self.shared
                .counters
                .rejected_peers
                .fetch_add(1, Ordering::Relaxed);
        }
        let who = cred.map_or_else(|| "unknown peer".into(), describe);
        let label = self.shared.label.clone();
        let verb = if kind == Kind::Busy {
            "deferring"
        } else {
            "refusing"
        };
        self.refusals
            .warn(&label, || format!("{verb} slave ({who}): {reason}"));
        let _ = handshake::send(conn, &Msg::refusal(kind, 0, reason), &[]);
    }

    /// Drops what is overdue: silent connections, unanswered offers, and
    /// requests that waited their whole time for a turn.
    fn expire(&mut self) {
        let now = Instant::now();
        if self.offer.as_ref().is_some_and(|o| now >= o.deadline) {
            let o = self.offer.take();
            if let Some(o) = o {
                let reason = "no answer to the offered region in time";
                self.refuse(&o.conn, Some(&o.cred), Kind::Reject, reason);
                self.offer_failed(o);
            }
        }
        let mut i = 0;
        while i < self.pending.len() {
            if now < self.pending[i].deadline {
                i += 1;
                continue;
            }
            let p = self.pending.remove(i);
            if p.requested {
                let reason = self.busy_reason();
                self.refuse(&p.conn, Some(&p.cred), Kind::Busy, &reason);
            } else {
                log::debug!(
                    "vecring: {}: closing connection ({}) that sent no request",
                    self.label(),
                    describe(&p.cred)
                );
                // A slave of an older vecring waits for the master to speak
                // first: tell it why nothing comes (one send, never waited
                // on; a silent attacker loses nothing by it).
                let why = format!(
                    "no Request within {:?}: this master (vecring ABI {}) waits for the slave to ask first; \
                     an older slave must be upgraded",
                    self.config.handshake_timeout,
                    abi::VERSION_MAJOR
                );
                let _ = handshake::send(&p.conn, &Msg::refusal(Kind::Reject, 0, &why), &[]);
            }
        }
    }

    fn busy_reason(&self) -> String {
        let pinned = self.pins.pinned();
        if let Some(p) = &self.paused {
            p.reason()
        } else if let Some(t) = self.budget.next_token() {
            let b = self.budget.budget();
            format!(
                "this link's region budget is spent ({} at once, then one per {:?}); the next region in {:.0?}",
                b.burst(),
                b.every(),
                t.saturating_duration_since(Instant::now())
            )
        } else if pinned + usize::from(self.offer.is_some()) >= MAX_REGIONS {
            format!(
                "{pinned} regions of this link are still held by peers that left (the limit is {MAX_REGIONS}); try again once they are released"
            )
        } else {
            "another slave is being served; try again".into()
        }
    }
}
