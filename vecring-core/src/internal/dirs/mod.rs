//! The link's files, handled so that nobody else's entry is ever followed
//! or trusted: `<run-dir>/<domain>/<link>.lock` and `<link>.sock` (made
//! as `.<link>.new` and renamed into place once listening: `socket.rs`).
//!
//! The master usually runs as root and the domain directory is reachable
//! from an untrusted container, so every step works on descriptors:
//!
//! - the run and domain directories are opened with
//!   `O_DIRECTORY | O_NOFOLLOW` and checked with `fstat` (a directory, owned
//!   by the master, writable by nobody else);
//! - the lock and the socket are created, inspected and removed relative to
//!   the domain directory's descriptor (`openat`, `fstatat` with
//!   `AT_SYMLINK_NOFOLLOW`, `unlinkat`), and the socket's mode and owner are
//!   set through an `O_PATH` descriptor of the socket file, not by path;
//! - the socket is bound and connected through `/proc/self/fd/<dir>/…`, so
//!   a directory swapped after the check cannot redirect it.
//!
//! A pre-existing entry that is a symlink, has another owner or is
//! writable by others is refused with [`Unsafe`], naming the path and what
//! is wrong. The peer never needs write permission on the domain directory:
//! it gets search permission there and the socket file.
//!
//! The slave applies the same rules to the directories it connects
//! through, and takes the owners of the two directories as the identities a
//! master may have by default: root and those two owners.

mod at;
mod socket;

use crate::closer::PeerSocket;
use at::{
    cstring, cvt, dir_problem, euid, fd_ref, kind, open_at, open_dir, open_run_dir, stat_entry,
    stat_fd, via_fd, Access,
};
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A directory or entry that vecring refuses to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing {path}: {problem}")]
pub struct Unsafe {
    /// The path.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

/// Why the link's files could not be set up. The link's control layer
/// turns it into the `LinkError` variant of the same name and text.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// Something there is not ours or not safe.
    #[error(transparent)]
    Unsafe(Unsafe),
    /// A system call failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was attempted.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The system error.
        source: io::Error,
    },
}

fn unsafe_at(path: &Path, problem: impl Into<String>) -> DirError {
    DirError::Unsafe(Unsafe {
        path: path.to_path_buf(),
        problem: problem.into(),
    })
}

fn io_at<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> DirError + 'p {
    move |source| DirError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// What the master creates and how: the domain directory's mode, and
/// the socket's mode and owner.
pub(crate) struct MasterFiles<'a> {
    pub run_dir: &'a Path,
    pub domain: &'a str,
    pub link: &'a str,
    pub socket_mode: u32,
    pub owner: Option<(u32, u32)>,
}

/// The domain directory's mode: the master's full access, and search
/// permission (nothing more) for whoever may connect to the socket
/// (`socket_mode`, or the `owner` given the socket). A directory prepared
/// before the master starts (for a container's bind mount) gets this mode
/// and the master's ownership, so that the master accepts it.
pub fn domain_mode(socket_mode: u32, owner: Option<(u32, u32)>) -> u32 {
    let group = if socket_mode & 0o060 != 0 { 0o010 } else { 0 };
    // An owner given the socket is, to the directory, "others".
    let others = if socket_mode & 0o006 != 0 || owner.is_some() {
        0o001
    } else {
        0
    };
    0o700 | group | others
}

/// Makes (or checks) a domain directory ahead of the master, as `vecring
/// prepare` does: the run directory is opened and checked as the master
/// does (created when missing), the domain directory is created under it
/// with `mode` when missing, opened without following a symlink, checked
/// (a directory of this user that only its owner may write), and given
/// `mode` exactly, all through descriptors: a racing rename or symlink
/// cannot make this act on another path. Returns whether it was created.
///
/// # Errors
/// [`DirError::Unsafe`] for a directory the master would refuse,
/// [`DirError::Io`] for a failed call.
pub fn prepare_domain(run_dir: &Path, domain: &str, mode: u32) -> Result<bool, DirError> {
    let me = euid();
    let run = open_run_dir(run_dir, me)?;
    let dir_path = run_dir.join(domain);
    let name = cstring(domain.as_bytes()).map_err(io_at("opening", &dir_path))?;
    let (dir, made) = open_dir(run.as_raw_fd(), &name, &dir_path, Some(mode), Access::Owner)?
        .ok_or_else(|| io_at("opening", &dir_path)(io::ErrorKind::NotFound.into()))?;
    let st = stat_fd(fd_ref(&dir)).map_err(io_at("inspecting", &dir_path))?;
    if let Some(problem) = dir_problem(&st, |uid| uid == me) {
        return Err(unsafe_at(&dir_path, problem));
    }
    // The umask may have taken bits away: set the mode exactly.
    // SAFETY: fchmod on the directory descriptor just checked.
    cvt(unsafe { libc::fchmod(dir.as_raw_fd(), mode) })
        .map_err(io_at("setting the mode of", &dir_path))?;
    Ok(made)
}

/// A master's claim on a link: the domain directory, the held lock and the
/// listening socket. Dropping it removes socket and lock while the lock is
/// still held, then releases it.
#[derive(Debug)]
pub(crate) struct MasterClaim {
    dir: OwnedFd,
    /// Held (flock) for the claim's life; closed after the names are gone.
    _lock: OwnedFd,
    lock_name: CString,
    sock_name: CString,
    pub listener: PeerSocket,
}

impl Drop for MasterClaim {
    fn drop(&mut self) {
        // Both names are still ours: nobody else can hold the lock, and
        // nobody else can write the directory.
        // SAFETY: valid C strings and our directory descriptor.
        unsafe {
            libc::unlinkat(self.dir.as_raw_fd(), self.sock_name.as_ptr(), 0);
            libc::unlinkat(self.dir.as_raw_fd(), self.lock_name.as_ptr(), 0);
        }
        // The fields drop after this body: `_lock` is closed, and the lock
        // released, only once both names are gone.
    }
}

/// Why a master could not claim a link.
#[derive(Debug)]
pub(crate) enum ClaimError {
    /// Another live master holds the lock.
    Held(PathBuf),
    Dir(DirError),
}

impl From<DirError> for ClaimError {
    fn from(e: DirError) -> Self {
        ClaimError::Dir(e)
    }
}

/// Opens (creating when missing) and checks the run and domain
/// directories, takes the link's lock, replaces a stale socket of ours and
/// listens.
pub(crate) fn claim_master(
    files: &MasterFiles<'_>,
    listen: impl Fn(&Path) -> io::Result<PeerSocket>,
) -> Result<MasterClaim, ClaimError> {
    let me = euid();
    let run = open_run_dir(files.run_dir, me)?;
    let dir_path = files.run_dir.join(files.domain);
    let domain = cstring(files.domain.as_bytes()).map_err(io_at("opening", &dir_path))?;
    let mode = domain_mode(files.socket_mode, files.owner);
    let (dir, made) = open_dir(
        run.as_raw_fd(),
        &domain,
        &dir_path,
        Some(mode),
        Access::Owner,
    )?
    .ok_or_else(|| io_at("opening", &dir_path)(io::ErrorKind::NotFound.into()))?;
    let st = stat_fd(fd_ref(&dir)).map_err(io_at("inspecting", &dir_path))?;
    if let Some(problem) = dir_problem(&st, |uid| uid == me) {
        return Err(unsafe_at(&dir_path, problem).into());
    }
    if made {
        // Ours and new: set the mode we want (umask may have narrowed it).
        // A directory that was there is left as found: its mode is its
        // owner's choice.
        // SAFETY: fchmod on our own directory descriptor.
        cvt(unsafe { libc::fchmod(dir.as_raw_fd(), mode) })
            .map_err(io_at("setting the mode of", &dir_path))?;
    }

    let sock_file = format!("{}.sock", files.link);
    let socket = dir_path.join(&sock_file);
    let sock_name = cstring(sock_file.as_bytes()).map_err(io_at("opening", &socket))?;
    // Refuse a planted entry before creating anything; checked again
    // under the lock below.
    socket::stale(fd_ref(&dir), &sock_name, &socket)?;

    let lock_path = dir_path.join(format!("{}.lock", files.link));
    let lock_name =
        cstring(format!("{}.lock", files.link).as_bytes()).map_err(io_at("opening", &lock_path))?;
    let lock = take_lock(fd_ref(&dir), &lock_name, &lock_path, me)?;

    // We hold the lock, so a socket of ours left there is stale.
    if socket::stale(fd_ref(&dir), &sock_name, &socket)? {
        socket::remove(fd_ref(&dir), &sock_name, &socket)?;
        log::info!("vecring: removed stale socket {}", socket.display());
    }
    let listener = socket::place(fd_ref(&dir), &dir_path, &sock_file, files, listen)?;
    Ok(MasterClaim {
        dir,
        _lock: lock,
        lock_name,
        sock_name,
        listener,
    })
}

/// Opens and locks `<link>.lock`, refusing anything but a regular file of
/// ours, and makes sure the name still refers to the file locked (a master
/// that was closing may have removed it meanwhile).
fn take_lock(
    dir: BorrowedFd<'_>,
    name: &CStr,
    path: &Path,
    me: u32,
) -> Result<OwnedFd, ClaimError> {
    for _ in 0..8 {
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW;
        let lock = match open_at(dir.as_raw_fd(), name, flags, 0o600) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(unsafe_at(path, "it is a symlink (symlinks are never followed)").into())
            }
            Err(e) => return Err(io_at("opening", path)(e).into()),
        };
        let st = stat_fd(fd_ref(&lock)).map_err(io_at("inspecting", path))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(
                unsafe_at(path, format!("it is {}, not a lock file", kind(st.st_mode))).into(),
            );
        }
        if st.st_uid != me || st.st_nlink != 1 {
            return Err(unsafe_at(
                path,
                format!(
                    "it is owned by uid {} with {} links; a lock file of ours has one",
                    st.st_uid, st.st_nlink
                ),
            )
            .into());
        }
        // The lock is released by the kernel when the holder dies, even by
        // kill -9: a held lock means a live master.
        // SAFETY: flock on our own descriptor.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(ClaimError::Held(path.to_path_buf()));
            }
            return Err(io_at("locking", path)(e).into());
        }
        match stat_entry(dir, name).map_err(io_at("inspecting", path))? {
            Some(now) if now.st_ino == st.st_ino && now.st_dev == st.st_dev => return Ok(lock),
            // Unlinked by its previous holder after we opened it: again.
            _ => continue,
        }
    }
    Err(io_at("locking", path)(io::ErrorKind::WouldBlock.into()).into())
}

/// The directories a slave connects through, opened and checked.
pub(crate) struct SlaveDirs {
    dir: OwnedFd,
    run_owner: u32,
    domain_owner: u32,
}

impl SlaveDirs {
    /// Opens and checks the run and domain directories. `Ok(None)` when
    /// either does not exist yet (no master has made it).
    pub(crate) fn open(run_dir: &Path, domain: &str) -> Result<Option<SlaveDirs>, DirError> {
        let c = cstring(run_dir.as_os_str().as_bytes()).map_err(io_at("opening", run_dir))?;
        let Some((run, _)) = open_dir(libc::AT_FDCWD, &c, run_dir, None, Access::Search)? else {
            return Ok(None);
        };
        let run_st = stat_fd(fd_ref(&run)).map_err(io_at("inspecting", run_dir))?;
        let writable = |p: &Path, st: &libc::stat| {
            dir_problem(st, |_| true).map(|problem| {
                unsafe_at(
                    p,
                    format!("{problem}: anyone able to write it could pose as the master"),
                )
            })
        };
        if let Some(e) = writable(run_dir, &run_st) {
            return Err(e);
        }
        let dir_path = run_dir.join(domain);
        let name = cstring(domain.as_bytes()).map_err(io_at("opening", &dir_path))?;
        let Some((dir, _)) = open_dir(run.as_raw_fd(), &name, &dir_path, None, Access::Search)?
        else {
            return Ok(None);
        };
        let st = stat_fd(fd_ref(&dir)).map_err(io_at("inspecting", &dir_path))?;
        if let Some(e) = writable(&dir_path, &st) {
            return Err(e);
        }
        Ok(Some(SlaveDirs {
            dir,
            run_owner: run_st.st_uid,
            domain_owner: st.st_uid,
        }))
    }

    /// The path to connect to, through the checked directory.
    pub(crate) fn socket(&self, link: &str) -> PathBuf {
        via_fd(fd_ref(&self.dir), &format!("{link}.sock"))
    }

    /// The uids a master may have by default: root, and the owners of the
    /// run and domain directories (who alone can create the socket there).
    pub(crate) fn master_uids(&self) -> [u32; 3] {
        [0, self.run_owner, self.domain_owner]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vecring-dirs-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        d
    }

    fn files<'a>(run: &'a Path) -> MasterFiles<'a> {
        MasterFiles {
            run_dir: run,
            domain: "d",
            link: "l",
            socket_mode: 0o660,
            owner: None,
        }
    }

    fn claim(run: &Path) -> Result<MasterClaim, ClaimError> {
        claim_master(&files(run), crate::handshake::listen)
    }

    fn refusal(r: Result<MasterClaim, ClaimError>) -> Unsafe {
        match r {
            Err(ClaimError::Dir(DirError::Unsafe(u))) => u,
            Err(ClaimError::Dir(DirError::Io { what, path, source })) => {
                panic!("io error {what} {}: {source}", path.display())
            }
            Err(ClaimError::Held(p)) => panic!("held {}", p.display()),
            Ok(_) => panic!("claimed"),
        }
    }

    #[test]
    fn claim_creates_private_files_and_removes_them_under_the_lock() {
        let run = scratch("claim");
        let c = claim(&run).unwrap();
        let dir = std::fs::metadata(run.join("d")).unwrap();
        assert_eq!(dir.permissions().mode() & 0o7777, 0o710);
        let sock = std::fs::symlink_metadata(run.join("d/l.sock")).unwrap();
        assert_eq!(sock.permissions().mode() & 0o777, 0o660);
        assert!(matches!(claim(&run), Err(ClaimError::Held(_))));
        drop(c);
        assert!(!run.join("d/l.sock").exists());
        assert!(!run.join("d/l.lock").exists());
        drop(claim(&run).unwrap());
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn the_socket_appears_listening_with_its_mode() {
        let run = scratch("appears");
        let sock = run.join("d/l.sock");
        let staging = run.join("d/.l.new");
        let listen = |path: &Path| {
            let l = crate::handshake::listen(path)?;
            assert!(
                !sock.exists(),
                "the socket's name is there before it listens"
            );
            // Nobody else may connect before the mode is set, whatever
            // the umask (one of 022 gives a socket bound as made 0755).
            let md = std::fs::symlink_metadata(&staging).unwrap();
            assert_eq!(md.permissions().mode() & 0o077, 0, "{md:?}");
            Ok(l)
        };
        let c = claim_master(&files(&run), listen).unwrap();
        let md = std::fs::symlink_metadata(&sock).unwrap();
        assert_eq!(md.permissions().mode() & 0o777, 0o660);
        crate::handshake::connect(&sock).expect("the socket accepts");
        assert_eq!(std::fs::read_dir(run.join("d")).unwrap().count(), 2);
        drop(c);
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn a_staging_socket_left_is_replaced_and_anything_else_there_refused() {
        let run = scratch("staging");
        std::fs::create_dir(run.join("d")).unwrap();
        std::fs::set_permissions(run.join("d"), std::fs::Permissions::from_mode(0o710)).unwrap();
        // What a master that died between bind and rename leaves.
        let left = crate::handshake::listen(&run.join("d/.l.new")).unwrap();
        drop(left);
        let c = claim(&run).unwrap();
        assert!(!run.join("d/.l.new").exists());
        crate::handshake::connect(&run.join("d/l.sock")).expect("the socket accepts");
        drop(c);

        symlink(run.join("victim"), run.join("d/.l.new")).unwrap();
        let u = refusal(claim(&run));
        assert!(u.problem.contains("symlink"), "{u}");
        assert!(!run.join("victim").exists());
        assert!(!run.join("d/l.sock").exists());
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn symlinks_are_refused_not_followed() {
        let run = scratch("links");
        let target = run.join("target");
        std::fs::create_dir(&target).unwrap();
        symlink(&target, run.join("d")).unwrap();
        let u = refusal(claim(&run));
        assert!(u.problem.contains("symlink"), "{u}");
        assert_eq!(u.path, run.join("d"));
        std::fs::remove_file(run.join("d")).unwrap();

        std::fs::create_dir(run.join("d")).unwrap();
        std::fs::set_permissions(run.join("d"), std::fs::Permissions::from_mode(0o700)).unwrap();
        symlink(run.join("victim"), run.join("d/l.lock")).unwrap();
        let u = refusal(claim(&run));
        assert!(u.problem.contains("symlink"), "{u}");
        assert!(!run.join("victim").exists());
        std::fs::remove_file(run.join("d/l.lock")).unwrap();

        symlink(run.join("victim"), run.join("d/l.sock")).unwrap();
        let u = refusal(claim(&run));
        assert!(u.problem.contains("symlink"), "{u}");
        assert!(!run.join("victim").exists());
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn directories_writable_by_others_are_refused() {
        let run = scratch("modes");
        std::fs::create_dir(run.join("d")).unwrap();
        std::fs::set_permissions(run.join("d"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let u = refusal(claim(&run));
        assert!(u.problem.contains("writable by group or others"), "{u}");
        // Refused, and left as found.
        let mode = std::fs::metadata(run.join("d"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o777);
        std::fs::remove_dir_all(&run).unwrap();
    }

    #[test]
    fn slave_refuses_directories_others_can_write() {
        let run = scratch("slave");
        assert!(SlaveDirs::open(&run, "d").unwrap().is_none());
        std::fs::create_dir(run.join("d")).unwrap();
        std::fs::set_permissions(run.join("d"), std::fs::Permissions::from_mode(0o770)).unwrap();
        match SlaveDirs::open(&run, "d") {
            Err(DirError::Unsafe(u)) => assert!(u.problem.contains("pose as the master"), "{u}"),
            _ => panic!("accepted a group-writable domain directory"),
        }
        std::fs::set_permissions(run.join("d"), std::fs::Permissions::from_mode(0o710)).unwrap();
        let dirs = SlaveDirs::open(&run, "d").unwrap().unwrap();
        assert_eq!(dirs.master_uids()[0], 0);
        std::fs::remove_dir_all(&run).unwrap();
    }
}
