//! The control thread of a link: the master's accept loop and the slave's
//! connect loop, running the [`handshake`] and installing sessions in
//! [`LinkShared`]. Nothing here is on the data path.

use crate::handshake::{self, Kind, Msg};
use crate::link::{Config, Failure, LinkError, LinkShared, Session};
use crate::memory::{Expectation, Region, RegionOptions};
use crate::{abi, geometry::Geometry};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Files a master created, removed at close.
#[derive(Clone)]
pub(crate) struct MasterFiles {
    pub(crate) socket: PathBuf,
    lock: PathBuf,
}

impl MasterFiles {
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_file(&self.lock);
        // The domain directory stays: a container may have it bind-mounted,
        // and a directory made anew by the next master would not be seen
        // through that mount.
    }
}

/// A master's claim on a link: its lock and its listening socket.
pub(crate) struct MasterClaim {
    _lock: OwnedFd,
    listener: OwnedFd,
    pub(crate) files: MasterFiles,
}

fn io_err<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> LinkError + 'p {
    move |source| LinkError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn chown(path: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a valid C string for the duration of the call.
    if unsafe { libc::chown(c.as_ptr(), uid, gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Creates the domain directory, takes the link's lock (refusing if a live
/// master holds it), replaces a stale socket and listens.
pub(crate) fn claim_master(
    config: &Config,
    owner: Option<(u32, u32)>,
    socket_mode: u32,
) -> Result<MasterClaim, LinkError> {
    // Directory: owner rwx, plus the socket mode's read bits turned into
    // search permission for group/others who may connect.
    let dir_mode = 0o700 | (socket_mode & 0o066) | ((socket_mode & 0o044) >> 2);
    if let Some(parent) = config.dir.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(io_err("creating", parent))?;
    }
    match std::fs::DirBuilder::new()
        .mode(dir_mode)
        .create(&config.dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err("creating", &config.dir)(e)),
    }
    std::fs::set_permissions(&config.dir, std::fs::Permissions::from_mode(dir_mode))
        .map_err(io_err("setting the mode of", &config.dir))?;
    if let Some((uid, gid)) = owner {
        chown(&config.dir, uid, gid).map_err(io_err("changing the owner of", &config.dir))?;
    }

    let lock_c = CString::new(config.lock.as_os_str().as_bytes())
        .map_err(|_| io_err("opening", &config.lock)(io::ErrorKind::InvalidInput.into()))?;
    // SAFETY: `lock_c` is a valid C string; the result is checked.
    let fd = unsafe {
        libc::open(
            lock_c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io_err("opening", &config.lock)(io::Error::last_os_error()));
    }
    // SAFETY: `fd` is a fresh descriptor we own.
    let lock = unsafe { OwnedFd::from_raw_fd(fd) };
    // The lock is released by the kernel when the holder dies, even by
    // kill -9: a held lock means a live master.
    // SAFETY: flock on our own descriptor.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(LinkError::MasterExists {
                path: config.lock.clone(),
            });
        }
        return Err(io_err("locking", &config.lock)(e));
    }
    // We hold the lock, so any socket file left is stale.
    match std::fs::remove_file(&config.socket) {
        Ok(()) => log::info!("vecring: removed stale socket {}", config.socket.display()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err("removing stale socket", &config.socket)(e)),
    }
    let listener =
        handshake::listen(&config.socket).map_err(io_err("listening on", &config.socket))?;
    std::fs::set_permissions(&config.socket, std::fs::Permissions::from_mode(socket_mode))
        .map_err(io_err("setting the mode of", &config.socket))?;
    if let Some((uid, gid)) = owner {
        chown(&config.socket, uid, gid).map_err(io_err("changing the owner of", &config.socket))?;
    }
    Ok(MasterClaim {
        _lock: lock,
        listener,
        files: MasterFiles {
            socket: config.socket.clone(),
            lock: config.lock.clone(),
        },
    })
}

/// What woke a control-thread wait.
enum Wake {
    /// This descriptor (index into the set) is readable or hung up.
    Ready(usize),
    /// The link's eventfd: shutdown or a corruption report.
    Poked,
    /// The timeout passed.
    Timeout,
}

fn wait(shared: &LinkShared, fds: &[&OwnedFd], timeout: Option<Duration>) -> Wake {
    let mut set: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .chain(std::iter::once(libc::pollfd {
            fd: shared.wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }))
        .collect();
    let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
    // SAFETY: `set` holds `set.len()` valid pollfds.
    let rc = unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, ms) };
    if rc <= 0 {
        // Timeout, or EINTR: both mean "look again".
        return Wake::Timeout;
    }
    let wake = set.len() - 1;
    if set[wake].revents != 0 {
        let mut buf = [0u8; 8];
        // SAFETY: reads 8 bytes into a live buffer; drains the eventfd.
        unsafe { libc::read(shared.wake.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        return Wake::Poked;
    }
    set[..wake]
        .iter()
        .position(|p| p.revents != 0)
        .map_or(Wake::Timeout, Wake::Ready)
}

fn stopping(shared: &LinkShared) -> bool {
    // Acquire: pairs with the Release store in `Link::drop`.
    shared.shutdown.load(Ordering::Acquire)
}

/// Whether the data path reported the current generation corrupt.
fn corrupt(shared: &LinkShared, generation: u64) -> bool {
    shared.corrupt_generation.load(Ordering::Relaxed) == generation
}

pub(crate) fn spawn_master(
    shared: Arc<LinkShared>,
    config: Config,
    claim: MasterClaim,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("vecring-master".into())
        .spawn(move || master_loop(&shared, &config, claim))
}

pub(crate) fn spawn_slave(shared: Arc<LinkShared>, config: Config) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("vecring-slave".into())
        .spawn(move || slave_loop(&shared, &config))
}

/// The master's loop: accept a slave, hand it a fresh region, watch the
/// connection; refuse any second slave meanwhile.
fn master_loop(shared: &LinkShared, config: &Config, claim: MasterClaim) {
    let geometry = config.geometry.unwrap_or_default();
    // Generations grow by one per connection. A new master continues from
    // the clock (microseconds), so generations also grow across master
    // restarts and a slave never sees the same number twice in a row.
    let mut generation = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let mut conn: Option<(OwnedFd, u64)> = None;
    while !stopping(shared) {
        let fds: Vec<&OwnedFd> = match &conn {
            Some((c, _)) => vec![&claim.listener, c],
            None => vec![&claim.listener],
        };
        match wait(shared, &fds, None) {
            Wake::Ready(0) => {
                let Ok(new) = handshake::accept(&claim.listener) else {
                    continue;
                };
                if conn.is_some() {
                    refuse(shared, &new, "the link already has a slave");
                    continue;
                }
                generation += 1;
                if let Some(session) = offer(shared, config, &new, geometry, generation) {
                    shared.set_session(Some(session));
                    conn = Some((new, generation));
                }
            }
            Wake::Ready(_) => {
                // The slave closed (EOF) or broke protocol: either way it is
                // gone for this generation.
                if let Some((c, g)) = conn.take() {
                    let farewell = handshake::recv(&c, Duration::ZERO);
                    // Closed before the link reports down, so that down
                    // means the connection is gone too.
                    drop(c);
                    match farewell {
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                            log::info!("vecring: {}: slave of generation {g} left", shared.label)
                        }
                        Err(e) => {
                            log::warn!("vecring: {}: slave of generation {g}: {e}", shared.label)
                        }
                        Ok((m, _)) => log::warn!(
                            "vecring: {}: unexpected {:?} from slave; disconnecting",
                            shared.label,
                            m.kind
                        ),
                    }
                    shared.set_session(None);
                }
            }
            Wake::Poked | Wake::Timeout => {
                if let Some((_, g)) = &conn {
                    if corrupt(shared, *g) {
                        shared
                            .counters
                            .peer_corruptions
                            .fetch_add(1, Ordering::Relaxed);
                        conn = None;
                        shared.set_session(None);
                    }
                }
            }
        }
    }
    if conn.is_some() {
        shared.set_session(None);
    }
}

fn refuse(shared: &LinkShared, conn: &OwnedFd, reason: &str) {
    shared
        .counters
        .rejected_peers
        .fetch_add(1, Ordering::Relaxed);
    let who = handshake::peer_credentials(conn)
        .map(|c| format!("pid {} uid {} gid {}", c.pid, c.uid, c.gid))
        .unwrap_or_else(|_| "unknown peer".into());
    log::warn!(
        "vecring: {}: refusing slave ({who}): {reason}",
        shared.label
    );
    let _ = handshake::send(conn, &Msg::refusal(Kind::Reject, 0, reason), None);
}

/// Checks a new slave, creates the region for `generation`, sends it and
/// waits for the slave's verdict.
fn offer(
    shared: &LinkShared,
    config: &Config,
    conn: &OwnedFd,
    geometry: Geometry,
    generation: u64,
) -> Option<Arc<Session>> {
    let cred = match handshake::peer_credentials(conn) {
        Ok(c) => c,
        Err(e) => {
            refuse(shared, conn, &format!("cannot read peer credentials: {e}"));
            return None;
        }
    };
    if !config.allowed_uids.is_empty() && !config.allowed_uids.contains(&cred.uid) {
        refuse(
            shared,
            conn,
            &format!(
                "uid {} is not allowed to attach (allowed: {:?})",
                cred.uid, config.allowed_uids
            ),
        );
        return None;
    }
    let opts = RegionOptions {
        hugepages: config.hugepages,
        numa_node: config.numa_node,
    };
    let region = match Region::create(geometry, generation, &opts) {
        Ok(r) => Arc::new(r),
        Err(e) => {
            log::error!("vecring: {}: cannot create link memory: {e}", shared.label);
            refuse(
                shared,
                conn,
                &format!("master cannot create link memory: {e}"),
            );
            return None;
        }
    };
    let hello = Msg::hello(geometry, region.size() as u64, generation);
    if let Err(e) = handshake::send(conn, &hello, Some(region.fd().as_raw_fd())) {
        log::warn!(
            "vecring: {}: slave vanished during handshake: {e}",
            shared.label
        );
        return None;
    }
    match handshake::recv(conn, config.handshake_timeout) {
        Ok((m, None)) if m.kind == Kind::Ack && m.generation == generation => {
            log::info!(
                "vecring: {}: slave attached: pid {} uid {} gid {}; {} MiB region, {}",
                shared.label,
                cred.pid,
                cred.uid,
                cred.gid,
                region.size() >> 20,
                if region.hugepages() {
                    "hugepages"
                } else {
                    "4 KiB pages"
                }
            );
            Some(Arc::new(Session { region, generation }))
        }
        Ok((m, _)) if m.kind == Kind::Nack => {
            shared
                .counters
                .rejected_peers
                .fetch_add(1, Ordering::Relaxed);
            log::error!(
                "vecring: {}: slave refused our region: {}",
                shared.label,
                m.text
            );
            None
        }
        Ok((m, _)) => {
            refuse(
                shared,
                conn,
                &format!("unexpected {:?} for generation {}", m.kind, m.generation),
            );
            None
        }
        Err(e) => {
            shared
                .counters
                .rejected_peers
                .fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "vecring: {}: handshake with slave failed: {e}",
                shared.label
            );
            None
        }
    }
}

/// The slave's loop: connect (retrying while no master listens), attach,
/// watch the connection, and start again when it ends.
fn slave_loop(shared: &LinkShared, config: &Config) {
    // Repeated failures are logged once until something changes.
    let mut last_complaint = String::new();
    let complain = |last: &mut String, msg: String, failure: Option<Failure>| {
        if msg != *last {
            log::warn!("vecring: {}: {msg}", shared.label);
            *last = msg;
        }
        if let Some(f) = failure {
            shared.set_failure(f);
        }
    };
    while !stopping(shared) {
        let conn = match handshake::connect(&config.socket) {
            Ok(c) => c,
            Err(e) => {
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT) | Some(libc::ECONNREFUSED)
                ) {
                    log::debug!(
                        "vecring: {}: waiting for master at {}",
                        shared.label,
                        config.socket.display()
                    );
                } else {
                    complain(
                        &mut last_complaint,
                        format!("cannot connect to {}: {e}", config.socket.display()),
                        None,
                    );
                }
                wait(shared, &[], Some(config.retry_interval));
                continue;
            }
        };
        match attach(config, &conn) {
            Ok(session) => {
                last_complaint.clear();
                let generation = session.generation;
                shared.set_session(Some(session));
                loop {
                    match wait(shared, &[&conn], None) {
                        Wake::Ready(_) => {
                            log::info!(
                                "vecring: {}: master closed generation {generation}",
                                shared.label
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
                drop(conn);
                shared.set_session(None);
            }
            Err((msg, None)) => {
                log::debug!("vecring: {}: {msg}; retrying", shared.label);
                wait(shared, &[], Some(config.retry_interval));
            }
            Err((msg, failure)) => {
                shared
                    .counters
                    .rejected_peers
                    .fetch_add(1, Ordering::Relaxed);
                complain(&mut last_complaint, msg, failure);
                // Back off longer after a refusal: retrying at once would
                // only be refused again.
                wait(shared, &[], Some(config.retry_interval * 20));
            }
        }
    }
}

/// Runs the slave's half of the handshake on a fresh connection.
fn attach(config: &Config, conn: &OwnedFd) -> Result<Arc<Session>, (String, Option<Failure>)> {
    let (msg, fd) = handshake::recv(conn, config.handshake_timeout).map_err(|e| {
        let m = format!("handshake failed: {e}");
        // A master that dies or is replaced mid-handshake is not a reason
        // to give up: only a malformed message is the master's fault.
        let failure =
            (e.kind() == io::ErrorKind::InvalidData).then(|| Failure::Protocol(m.clone()));
        (m, failure)
    })?;
    let nack = |generation: u64, reason: String, failure: Failure| {
        let _ = handshake::send(conn, &Msg::refusal(Kind::Nack, generation, &reason), None);
        (
            format!("refusing the master's region: {reason}"),
            Some(failure),
        )
    };
    match (msg.kind, fd) {
        (Kind::Reject, _) => Err((
            format!("master refused us: {}", msg.text),
            Some(Failure::Refused(msg.text)),
        )),
        (Kind::Hello, Some(fd)) => {
            if msg.version_major != abi::VERSION_MAJOR {
                let e = crate::memory::AttachError::Mismatch {
                    field: "major version",
                    ours: abi::VERSION_MAJOR.into(),
                    theirs: msg.version_major.into(),
                };
                return Err(nack(msg.generation, e.to_string(), Failure::Attach(e)));
            }
            let expect = Expectation {
                geometry: config.geometry,
                generation: Some(msg.generation),
            };
            match Region::attach(fd, &expect) {
                Ok(region) => {
                    if let Err(e) =
                        handshake::send(conn, &Msg::new(Kind::Ack, msg.generation), None)
                    {
                        let m = format!("master vanished during handshake: {e}");
                        return Err((m, None));
                    }
                    Ok(Arc::new(Session {
                        region: Arc::new(region),
                        generation: msg.generation,
                    }))
                }
                Err(e) => Err(nack(msg.generation, e.to_string(), Failure::Attach(e))),
            }
        }
        (kind, _) => {
            let m = format!("unexpected {kind:?} message from master");
            Err(nack(msg.generation, m.clone(), Failure::Protocol(m)))
        }
    }
}
