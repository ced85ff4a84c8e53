//! Network namespaces: the rendezvous of a link without a volume.
//!
//! In this mode the master listens on an abstract Unix socket name
//! ([`abstract_name`]) inside the container's network namespace, and the
//! slave connects to it from inside, with nothing mounted. Three things
//! make that work and keep it safe:
//!
//! - [`NetNs::open`] takes a namespace file (`/proc/PID/ns/net`,
//!   `/run/netns/NAME`), refuses anything that is not a network namespace,
//!   and keeps it open: its identity ([`NsId`], the nsfs device and inode)
//!   cannot change under us.
//! - [`NetNs::run`] runs a closure on a short-lived thread that entered the
//!   namespace (`setns` changes the calling thread's namespace only, so the
//!   rest of the process, a DPDK application say, is untouched). A socket
//!   keeps the namespace it was created in for its whole life, whichever
//!   thread later uses it.
//! - [`peer_netns`] tells which namespace the process that connected is in,
//!   from that process itself: by the pidfd the kernel took at `connect`
//!   (`SO_PEERPIDFD`, Linux 6.5) and the namespace it names
//!   (`PIDFD_GET_NET_NAMESPACE`, Linux 6.11), so a pid reused between the
//!   connect and the check cannot stand in for the connector. Older kernels
//!   fall back to `/proc/PID/ns/net` with a pidfd that proves the process
//!   still lives after the lookup (see [`peer_netns`] for the one window
//!   that leaves).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The version of the abstract name scheme: part of every name, so that a
/// future scheme never meets a peer of this one.
pub const NAME_SCHEME: u32 = 1;

/// Longest abstract name: `sun_path` less its leading NUL.
pub const MAX_ABSTRACT_LEN: usize = 107;

/// The abstract socket name of a link in a network namespace, without
/// the leading NUL: `vecring/1/<domain>/<link>` (`ss -xl` shows it as
/// `@vecring/1/<domain>/<link>`). Names are per namespace, so every
/// container may use the same one.
pub fn abstract_name(domain: &str, link: &str) -> String {
    format!("vecring/{NAME_SCHEME}/{domain}/{link}")
}

/// A namespace's identity: the device and inode of its nsfs file, as
/// `stat` gives them and `ip netns identify`/`lsns` show the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NsId {
    /// `st_dev` of the nsfs file.
    pub dev: u64,
    /// `st_ino` of the nsfs file: the number in `net:[4026531840]`.
    pub ino: u64,
}

impl std::fmt::Display for NsId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "net:[{}]", self.ino)
    }
}

fn stat_id(fd: BorrowedFd<'_>) -> io::Result<NsId> {
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat writes into `st`; the descriptor is live.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(NsId {
        dev: st.st_dev,
        ino: st.st_ino,
    })
}

/// An open network namespace.
#[derive(Debug)]
pub struct NetNs {
    fd: OwnedFd,
    id: NsId,
    path: PathBuf,
}

impl NetNs {
    /// Opens the namespace file at `path` and checks that it is a network
    /// namespace.
    ///
    /// # Errors
    /// The open's error, or `InvalidInput` when the file is not a network
    /// namespace (a plain file, another namespace type).
    pub fn open(path: &Path) -> io::Result<NetNs> {
        let file = File::open(path)?;
        let fd: OwnedFd = file.into();
        // SAFETY: an ioctl without argument on our descriptor; the result
        // is checked.
        let kind = unsafe { libc::ioctl(fd.as_raw_fd(), libc::NS_GET_NSTYPE) };
        if kind < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is not a namespace file ({e})"),
            ));
        }
        if kind != libc::CLONE_NEWNET {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a namespace, but not a network namespace",
            ));
        }
        let id = stat_id(fd.as_fd())?;
        Ok(NetNs {
            fd,
            id,
            path: path.to_path_buf(),
        })
    }

    /// The calling thread's own network namespace.
    ///
    /// # Errors
    /// The open's error.
    pub fn current() -> io::Result<NetNs> {
        NetNs::open(Path::new("/proc/thread-self/ns/net"))
    }

    /// Its identity.
    pub fn id(&self) -> NsId {
        self.id
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the calling thread into this namespace: only [`run`]'s
    /// thread, never one an application owns.
    ///
    /// [`run`]: NetNs::run
    fn enter(&self) -> io::Result<()> {
        // SAFETY: setns on our namespace descriptor; affects this thread.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Runs `f` on a thread of its own that entered this namespace first,
    /// and returns its result. The thread ends with `f`: nothing else ever
    /// runs in the namespace, and the caller's thread never leaves its own.
    ///
    /// # Errors
    /// `EPERM` (no `CAP_SYS_ADMIN` over the namespace), or a failed spawn.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name("vecring-netns".into())
                .spawn_scoped(s, || -> io::Result<T> {
                    self.enter()?;
                    Ok(f())
                })?
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
        })
    }
}

/// Whether the network namespace checks use only the fallback that
/// kernels before 6.5 need (`VECRING_NO_PEERPIDFD=1`, for tests).
fn pidfd_disabled() -> bool {
    std::env::var_os("VECRING_NO_PEERPIDFD").is_some_and(|v| v == "1")
}

fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: the pidfd_open system call with a plain pid and no flags.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether the process a pidfd names has exited (the pidfd is readable).
fn exited(pidfd: BorrowedFd<'_>) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let rc = unsafe { libc::poll(&mut p, 1, 0) };
    rc != 0
}

/// The pidfd of the process that connected `conn`, when the kernel has
/// `SO_PEERPIDFD` (6.5); `None` on older kernels.
fn peer_pidfd(conn: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    if pidfd_disabled() {
        return Ok(None);
    }
    let mut fd: libc::c_int = -1;
    let mut len = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `fd`.
    let rc = unsafe {
        libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERPIDFD,
            (&mut fd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOPROTOOPT) | Some(libc::EINVAL) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: the kernel gave us a fresh descriptor.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// The network namespace of the process that connected `conn`, whose
/// credentials are `cred`. `Err` says why it cannot be told (the process
/// exited: it is refused either way).
///
/// With `SO_PEERPIDFD` and `PIDFD_GET_NET_NAMESPACE` (Linux 6.11) the
/// answer comes from the connecting process itself. On 6.5–6.10 the pidfd
/// pins the process while `/proc/PID/ns/net` is read. Before 6.5 the pid
/// from `SO_PEERCRED` is opened as a pidfd first and checked alive after
/// the read: a connector that exited and whose pid was reused, in that
/// instant, by a process of the link's namespace would pass. That process
/// could have connected itself, so the window admits nobody who could not
/// be admitted anyway.
pub fn peer_netns(conn: BorrowedFd<'_>, cred: &libc::ucred) -> Result<NsId, String> {
    let pidfd = peer_pidfd(conn).map_err(|e| format!("cannot read its pidfd: {e}"))?;
    if let Some(pidfd) = &pidfd {
        // SAFETY: an ioctl without argument on the pidfd; a new descriptor
        // or -1 comes back.
        let ns = unsafe { libc::ioctl(pidfd.as_raw_fd(), libc::PIDFD_GET_NET_NAMESPACE, 0) };
        if ns >= 0 {
            // SAFETY: a fresh descriptor we own.
            let ns = unsafe { OwnedFd::from_raw_fd(ns) };
            return stat_id(ns.as_fd()).map_err(|e| format!("cannot inspect its namespace: {e}"));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            return Err("it exited before its namespace could be read".into());
        }
        // ENOTTY / EINVAL: a kernel without the ioctl; the fallback below.
    }
    if cred.pid <= 0 {
        return Err(format!(
            "its pid reads {} (not in this process's pid namespace), so its network \
             namespace cannot be read on this kernel",
            cred.pid
        ));
    }
    let pidfd = match pidfd {
        Some(p) => p,
        None => pidfd_open(cred.pid).map_err(|e| format!("cannot open pid {}: {e}", cred.pid))?,
    };
    let path = CString::new(format!("/proc/{}/ns/net", cred.pid)).expect("no NUL");
    // SAFETY: a valid C string; the result is checked.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "cannot open {}: {}",
            path.to_string_lossy(),
            io::Error::last_os_error()
        ));
    }
    // SAFETY: a fresh descriptor we own.
    let ns = unsafe { OwnedFd::from_raw_fd(fd) };
    let id = stat_id(ns.as_fd()).map_err(|e| format!("cannot inspect its namespace: {e}"))?;
    if exited(pidfd.as_fd()) {
        return Err("it exited before its namespace could be read".into());
    }
    Ok(id)
}

/// Whether this process is in the initial pid namespace (the host's).
/// Its inode is fixed by the kernel (`PROC_PID_INIT_INO`). When it cannot
/// be told (no `/proc`), the answer is no: the stricter rule applies.
pub fn in_initial_pid_namespace() -> bool {
    const PROC_PID_INIT_INO: u64 = 0xEFFF_FFFC;
    std::fs::metadata("/proc/self/ns/pid")
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m) == PROC_PID_INIT_INO)
        .unwrap_or(false)
}

/// The uid that stands for every uid not mapped into this user namespace
/// (`/proc/sys/kernel/overflowuid`, 65534 unless changed).
pub fn overflow_uid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/overflowuid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65534)
}

/// The path given as a namespace, for messages: `self` for the caller's.
pub fn describe(path: Option<&Path>) -> String {
    match path {
        Some(p) => p.as_os_str().to_string_lossy().into_owned(),
        None => "self".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_namespace_is_a_network_namespace() {
        let ns = NetNs::current().unwrap();
        let again = NetNs::open(Path::new("/proc/self/ns/net")).unwrap();
        assert_eq!(ns.id(), again.id());
    }

    #[test]
    fn other_files_are_refused() {
        let e = NetNs::open(Path::new("/proc/self/ns/pid")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("not a network namespace"), "{e}");
        let e = NetNs::open(Path::new("/proc/self/status")).unwrap_err();
        assert!(e.to_string().contains("not a namespace file"), "{e}");
    }

    #[test]
    fn a_connected_peer_is_in_our_namespace() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let cred =
            crate::handshake::peer_credentials(&OwnedFd::from(a.try_clone().unwrap())).unwrap();
        let me = NetNs::current().unwrap().id();
        assert_eq!(peer_netns(a.as_fd(), &cred), Ok(me));
        drop(b);
    }

    #[test]
    fn names_follow_the_scheme() {
        assert_eq!(abstract_name("k8s", "net1"), "vecring/1/k8s/net1");
    }
}
