//! The slave's control loop: checks the directories and the master's
//! credentials, asks for a region, checks and maps it, waits for the seal,
//! then watches the connection; and again when it ends.

use super::{corrupt, far_future, pause, stopping, wait, Wake};
use crate::abi;
use crate::closer::{PeerSocket, Received};
use crate::dirs::{DirError, SlaveDirs};
use crate::doorbell::Doorbell;
use crate::handshake::{self, Kind, Msg};
use crate::link::error::{Failure, LinkError};
use crate::link::shared::{Config, LinkShared, Meeting, Session};
use crate::memory::{Expectation, Region};
use crate::netns;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Why one attempt of the slave did not attach.
enum Attempt {
    /// Worth retrying soon (no master yet, master busy, master restarted).
    Retry(String),
    /// Retried soon too, but something the user should hear about
    /// (permission denied, say): logged once until it changes.
    Complain(String),
    /// The master or its region was refused, or refused us: reported to
    /// `wait_up`, retried after a longer pause.
    Failed(String, Failure),
    /// The link is closing.
    Stop,
}

/// The slave's loop: connect (retrying while no master listens), attach,
/// watch the connection, and start again when it ends.
pub(super) fn run(shared: &LinkShared, config: &Config) {
    // Repeated failures are logged once until something changes.
    let mut last_complaint = String::new();
    while !stopping(shared) {
        match attach(shared, config) {
            Ok((conn, session)) => {
                last_complaint.clear();
                let generation = session.generation;
                let held = Held::of(&session);
                shared.set_session(Some(session));
                // Whether a live master asked us to leave (a pause).
                let mut asked = false;
                loop {
                    match wait(shared, &[conn.as_fd()], None) {
                        Wake::Ready(_) => {
                            asked = asked_to_leave(&conn);
                            log::info!(
                                "vecring: {}: master {} generation {generation}",
                                shared.label,
                                if asked { "asked us to leave" } else { "closed" }
                            );
                            break;
                        }
                        _ if stopping(shared) => break,
                        _ if corrupt(shared, generation) => {
                            shared
                                .counters
                                .peer_corruptions
                                .fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        _ => {}
                    }
                }
                // Down first. Asked to leave by a master that lives on, we
                // also wait for the data path to let go of the rings before
                // it hears we left, so that what it then counts as taken is
                // final (a paused link's master waits for this close).
                shared.set_session(None);
                let released = !asked || held.released(shared, RELEASE_WAIT);
                drop(conn);
                if !released {
                    log::debug!(
                        "vecring: {}: the data path still held generation {generation} after {RELEASE_WAIT:?}",
                        shared.label
                    );
                }
            }
            Err(Attempt::Stop) => return,
            Err(Attempt::Retry(msg)) => {
                log::debug!("vecring: {}: {msg}; retrying", shared.label);
                pause(shared, config.retry_interval);
            }
            Err(Attempt::Complain(msg)) => {
                if msg != last_complaint {
                    log::warn!("vecring: {}: {msg}; retrying", shared.label);
                    last_complaint = msg;
                }
                pause(shared, config.retry_interval);
            }
            Err(Attempt::Failed(msg, failure)) => {
                shared
                    .counters
                    .rejected_peers
                    .fetch_add(1, Ordering::Relaxed);
                if msg != last_complaint {
                    log::warn!("vecring: {}: {msg}", shared.label);
                    last_complaint = msg;
                }
                shared.set_failure(failure);
                // Back off longer after a refusal: retrying at once would
                // only be refused again.
                pause(shared, config.retry_interval.saturating_mul(20));
            }
        }
    }
}

/// Longest wait at the end of a generation for the data path to let go of
/// its rings: it does at its next call; an application that stopped
/// calling should not hold up the next attach for long.
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Whether the master half-closed the connection (it asks us to leave and
/// waits for our close) rather than closed it or died (then the kernel
/// reports the hang-up too).
fn asked_to_leave(conn: &PeerSocket) -> bool {
    let mut p = libc::pollfd {
        fd: conn.as_raw_fd(),
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, live for the call; no waiting.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLRDHUP != 0 && p.revents & (libc::POLLHUP | libc::POLLERR) == 0
}

/// What of a generation the data path may still hold, without holding it:
/// the last endpoint to let go frees it on its own thread, as when the
/// link goes down for any other reason.
struct Held {
    region: Weak<Region>,
    doorbells: Vec<Weak<Doorbell>>,
}

impl Held {
    fn of(s: &Session) -> Self {
        Held {
            region: Arc::downgrade(&s.region),
            doorbells: s.doorbells.iter().map(Arc::downgrade).collect(),
        }
    }

    /// Waits up to `bound` until nobody holds the region and doorbells
    /// (every endpoint has seen the link down and detached); whether that
    /// happened.
    fn released(&self, shared: &LinkShared, bound: Duration) -> bool {
        let end = Instant::now() + bound;
        loop {
            if self.region.strong_count() == 0
                && self.doorbells.iter().all(|b| b.strong_count() == 0)
            {
                return true;
            }
            if Instant::now() >= end || stopping(shared) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Receives one message within `timeout`, giving up at shutdown.
fn recv(
    shared: &LinkShared,
    conn: &OwnedFd,
    timeout: Duration,
) -> Result<(Msg, Received), Attempt> {
    let deadline = Instant::now()
        .checked_add(timeout)
        .unwrap_or_else(far_future);
    loop {
        if stopping(shared) {
            return Err(Attempt::Stop);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match wait(shared, &[conn.as_fd()], Some(left)) {
            Wake::Ready(_) => {
                let got = match handshake::recv(conn, Duration::ZERO) {
                    // A master that refused us and closed before reading
                    // our request: the kernel reports the reset first, and
                    // the refusal it sent is still queued behind it.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                        handshake::recv(conn, Duration::ZERO).map_err(|_| e)
                    }
                    r => r,
                };
                return got.map_err(|e| {
                    let m = format!("handshake failed: {e}");
                    if e.kind() == io::ErrorKind::InvalidData {
                        Attempt::Failed(m.clone(), Failure::Protocol(m))
                    } else {
                        // A master that dies or is replaced mid-handshake
                        // is not a reason to give up.
                        Attempt::Retry(m)
                    }
                });
            }
            Wake::Timeout if left.is_zero() => {
                let m = "the master did not answer the handshake in time".to_string();
                return Err(Attempt::Failed(m.clone(), Failure::Protocol(m)));
            }
            Wake::Poked | Wake::Timeout => {}
        }
    }
}

/// Connects; a full backlog (a master busy with a burst of connections,
/// or a flood) is tried again within a millisecond for a while rather than
/// after the retry interval, since a place frees up as soon as the master
/// accepts.
fn connect_soon(
    shared: &LinkShared,
    connect: impl Fn() -> io::Result<PeerSocket>,
) -> io::Result<PeerSocket> {
    const TRIES: u32 = 200;
    let mut tries = 0;
    loop {
        match connect() {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && tries < TRIES => {
                tries += 1;
                pause(shared, Duration::from_micros(500));
                if stopping(shared) {
                    return Err(e);
                }
            }
            r => return r,
        }
    }
}

/// Checks the run and domain directories and connects to the link's
/// socket there.
fn connect_dir(shared: &LinkShared, config: &Config) -> Result<(PeerSocket, SlaveDirs), Attempt> {
    let socket = config
        .run_dir
        .join(&config.domain)
        .join(format!("{}.sock", config.link));
    let dirs = match SlaveDirs::open(&config.run_dir, &config.domain) {
        Ok(Some(d)) => d,
        Ok(None) => {
            return Err(Attempt::Retry(format!(
                "waiting for master at {}",
                socket.display()
            )))
        }
        Err(DirError::Unsafe(u)) => return Err(Attempt::Failed(u.to_string(), Failure::Unsafe(u))),
        Err(DirError::Io { what, path, source }) => {
            return Err(Attempt::Complain(format!(
                "{what} {}: {source}",
                path.display()
            )))
        }
    };
    let path = dirs.socket(&config.link);
    let conn = connect_soon(shared, || handshake::connect(&path))
        .map_err(|e| connect_failed(&socket.display().to_string(), e))?;
    Ok((conn, dirs))
}

/// Connects to the link's abstract name in this process's namespace
/// (a slave runs inside the link's: `LinkBuilder::netns` refuses a path).
fn connect_meeting(shared: &LinkShared, m: &Meeting) -> Result<PeerSocket, Attempt> {
    connect_soon(shared, || handshake::connect_abstract(&m.name))
        .map_err(|e| connect_failed(&m.display(), e))
}

/// What a failed connect means to the slave's loop.
fn connect_failed(place: &str, e: io::Error) -> Attempt {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ECONNREFUSED) => {
            Attempt::Retry(format!("waiting for master at {place}"))
        }
        Some(libc::EAGAIN) => Attempt::Retry(format!("the master's backlog at {place} is full")),
        Some(libc::EACCES) | Some(libc::EPERM) => Attempt::Complain(format!(
            "cannot connect to {place}: {e}: the master's socket is not open to this process's uid and gid \
             (the master's owner= names the uid:gid it opens it to, as the host sees them)"
        )),
        _ => Attempt::Complain(format!("cannot connect to {place}: {e}")),
    }
}

/// One attempt of the slave: check the directories (or, in a network
/// namespace, find the abstract name), connect, check who the master is,
/// ask, check and map the region, wait for the seal.
fn attach(shared: &LinkShared, config: &Config) -> Result<(PeerSocket, Arc<Session>), Attempt> {
    let (conn, place, dirs) = match &config.netns {
        Some(m) => (connect_meeting(shared, m)?, m.display(), None),
        None => {
            let (conn, dirs) = connect_dir(shared, config)?;
            let socket = config
                .run_dir
                .join(&config.domain)
                .join(format!("{}.sock", config.link));
            (conn, socket.display().to_string(), Some(dirs))
        }
    };
    // Ask at once: the request says nothing but "a region, please", and
    // one already queued when the master accepts is served first, however
    // many other connections flood it. Nothing the listener sends is
    // trusted before its credentials are checked below. A master that
    // refused us at once has closed already (the send fails): its refusal
    // is read below like any answer, once its credentials passed.
    let asked = handshake::send(&conn, &Msg::new(Kind::Request, 0), &[]);
    let cred = handshake::peer_credentials(&conn)
        .map_err(|e| Attempt::Retry(format!("cannot read the master's credentials: {e}")))?;
    let trusted: Vec<u32> = match (&dirs, config.master_uids.is_empty()) {
        (_, false) => config.master_uids.clone(),
        (Some(dirs), true) => dirs.master_uids().to_vec(),
        // In a namespace: root, or a host uid this user namespace does not
        // map (it reads as the overflow uid).
        (None, true) => vec![0, netns::overflow_uid()],
    };
    if let Some(m) = &config.netns {
        // The master runs outside the container: a listener whose pid this
        // process can see, from a pid namespace of its own, is a process of
        // the container that took the name.
        if cred.pid != 0 && !netns::in_initial_pid_namespace() {
            let f = Failure::MasterInside {
                name: m.name.clone(),
                pid: cred.pid,
                uid: cred.uid,
            };
            return Err(Attempt::Failed(LinkError::from(f.clone()).to_string(), f));
        }
    }
    if !trusted.contains(&cred.uid) {
        let f = Failure::UntrustedMaster {
            uid: cred.uid,
            pid: cred.pid,
            trusted,
        };
        return Err(Attempt::Failed(
            format!(
                "refusing the master at {place}: {}",
                LinkError::from(f.clone())
            ),
            f,
        ));
    }
    let (msg, mut fds) = match (recv(shared, &conn, config.handshake_timeout), asked) {
        (Err(Attempt::Retry(_)), Err(e)) => {
            return Err(Attempt::Retry(format!(
                "master vanished during handshake: {e}"
            )))
        }
        (r, _) => r?,
    };
    let nack = |generation: u64, reason: String, failure: Failure| {
        let _ = handshake::send(&conn, &Msg::refusal(Kind::Nack, generation, &reason), &[]);
        Attempt::Failed(format!("refusing the master's region: {reason}"), failure)
    };
    let (region, doorbells) = match msg.kind {
        Kind::Reject => {
            return Err(Attempt::Failed(
                format!("master refused us: {}", msg.text),
                Failure::Refused(msg.text),
            ))
        }
        Kind::Busy => return Err(Attempt::Retry(format!("master busy: {}", msg.text))),
        Kind::Hello if !fds.is_empty() => {
            if msg.version_major != abi::VERSION_MAJOR {
                let e = crate::memory::AttachError::Mismatch {
                    field: "major version",
                    ours: abi::VERSION_MAJOR.into(),
                    theirs: msg.version_major.into(),
                };
                return Err(nack(msg.generation, e.to_string(), Failure::Attach(e)));
            }
            let memfd = fds.take().expect("not empty");
            let expect = Expectation {
                geometry: config.geometry,
                queues: config.queues,
                generation: Some(msg.generation),
                announced_queues: Some(msg.queue_count),
            };
            let region = match Region::attach(memfd, &expect) {
                Ok(region) => region,
                Err(e) => return Err(nack(msg.generation, e.to_string(), Failure::Attach(e))),
            };
            // One doorbell per ring of the queues the header states (and
            // the Hello announced: `Region::attach` checked both agree).
            let rings = abi::ring_count(region.queues()) as usize;
            let doorbells: Vec<OwnedFd> = fds.take_all();
            if doorbells.len() != rings {
                let m = format!(
                    "{} doorbells for {rings} rings ({} queues)",
                    doorbells.len(),
                    region.queues()
                );
                // Not ours to close here: any of them may be a file whose
                // last close blocks.
                doorbells.into_iter().for_each(crate::closer::dispose);
                return Err(nack(msg.generation, m.clone(), Failure::Protocol(m)));
            }
            match Doorbell::received(doorbells, &cred) {
                Ok(d) => (region, d.into_iter().map(Arc::new).collect()),
                Err(m) => return Err(nack(msg.generation, m.clone(), Failure::Protocol(m))),
            }
        }
        kind => {
            let m = format!("unexpected {kind:?} message from master");
            return Err(nack(msg.generation, m.clone(), Failure::Protocol(m)));
        }
    };
    let generation = msg.generation;
    handshake::send(&conn, &Msg::new(Kind::Ack, generation), &[])
        .map_err(|e| Attempt::Retry(format!("master vanished during handshake: {e}")))?;
    let (ready, fds) = recv(shared, &conn, config.handshake_timeout)?;
    if ready.kind != Kind::Ready || ready.generation != generation || !fds.is_empty() {
        let m = format!(
            "expected Ready for generation {generation}, got {:?} for {}",
            ready.kind, ready.generation
        );
        return Err(Attempt::Failed(m.clone(), Failure::Protocol(m)));
    }
    if let Err(e) = region.check_shared_seal() {
        return Err(Attempt::Failed(
            format!("refusing the master's region: {e}"),
            Failure::Attach(e),
        ));
    }
    Ok((
        conn,
        Arc::new(Session {
            region: Arc::new(region),
            doorbells,
            generation,
        }),
    ))
}
