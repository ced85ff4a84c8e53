//! Finding the links of a process tree and pausing them at their masters.
//!
//! A slave's link shows in its process as a connected `SOCK_SEQPACKET`
//! Unix socket whose peer is the master's listener: an abstract
//! `@vecring/1/<domain>/<link>` (a link in the container's network
//! namespace) or a path `<run-dir>/<domain>/<link>.sock` beside its
//! `.lock` (a master binds it through its directory's descriptor as
//! `.<link>.new` and renames it once it listens, so the name reads
//! `/proc/self/fd/N/.<link>.new`, which is the master's `/proc/PID/fd/N`;
//! masters before that bound `<link>.sock` itself, and the plugin takes
//! either). The plugin takes a copy of each socket of each
//! process (`pidfd_getfd`), reads its peer's name and the listener's pid,
//! and asks the master on its host socket: the same path, or for an
//! abstract name `<link>@ns<inode>.sock` in the domain's directory, which
//! the master's `/proc/PID/net/unix` lists (only the master's own sockets
//! are looked at there: that table is the whole namespace's, and any
//! local user can bind names in it). A master is asked only if it
//! is that listener's process (checked on the connection that asks) and
//! is not part of what is dumped: outside the container's pid namespace,
//! or for a tree of the host's, outside the tree. A process of the
//! container posing as a master is never trusted to name a host path; a
//! link with both ends in the container is dumped whole, as CRIU can.

use crate::{log, PAUSE_TIMEOUT};
use std::collections::HashSet;
use std::ffi::c_int;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use vecring_core::pause::{self, Paused};

/// A pause held for the dump, and the name the slave's side knows its
/// master by.
pub(crate) struct Held {
    /// The peer name of the slave's connection (abstract names start
    /// with a NUL byte).
    peer_name: Vec<u8>,
    /// The master's host socket.
    socket: PathBuf,
    _pause: Paused,
}

/// A link found in the tree, not yet paused.
struct Found {
    peer_name: Vec<u8>,
    socket: PathBuf,
    master_pid: i32,
    slave_pid: i32,
}

/// Pauses every link of the processes of the tree rooted at `root` that
/// is not paused yet, adding to `held`.
pub(crate) fn pause_tree(root: c_int, held: &mut Vec<Held>) -> Result<(), String> {
    let pids = tree(root);
    let mut found: Vec<Found> = Vec::new();
    for &pid in &pids {
        for f in links_of(pid, root, &pids) {
            let known = held.iter().any(|h| h.socket == f.socket)
                || found.iter().any(|g| g.socket == f.socket);
            if !known {
                found.push(f);
            }
        }
    }
    for f in found {
        let paused =
            pause::pause_master(&f.socket, Some(f.master_pid), PAUSE_TIMEOUT).map_err(|e| {
                format!(
                    "cannot pause the link of pid {} at {}: {e}",
                    f.slave_pid,
                    f.socket.display()
                )
            })?;
        log::info(&format!(
            "paused the link of pid {} at {} (master pid {}): no process holds its memory",
            f.slave_pid,
            f.socket.display(),
            f.master_pid
        ));
        held.push(Held {
            peer_name: f.peer_name,
            socket: f.socket,
            _pause: paused,
        });
    }
    Ok(())
}

/// Whether socket `fd` (CRIU's copy of a dumped socket) is connected to
/// the listener of a link paused for this dump.
pub(crate) fn is_paused_peer(fd: c_int, held: &[Held]) -> bool {
    match peer_name(fd) {
        Some(name) => held.iter().any(|h| h.peer_name == name),
        None => false,
    }
}

/// `root` and its descendants (`/proc/PID/task/TID/children`).
fn tree(root: c_int) -> Vec<c_int> {
    let mut out = vec![root];
    let mut seen: HashSet<c_int> = HashSet::from([root]);
    let mut i = 0;
    while i < out.len() {
        let pid = out[i];
        i += 1;
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(text) = fs::read_to_string(t.path().join("children")) else {
                continue;
            };
            for c in text.split_whitespace().filter_map(|w| w.parse().ok()) {
                if seen.insert(c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The links process `pid` holds a connection of.
fn links_of(pid: c_int, root: c_int, pids: &[c_int]) -> Vec<Found> {
    let mut out = Vec::new();
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return out;
    };
    let Some(pidfd) = pidfd_open(pid) else {
        return out;
    };
    for e in fds.flatten() {
        let is_socket =
            fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:["));
        let Some(num) = e.file_name().to_str().and_then(|n| n.parse::<c_int>().ok()) else {
            continue;
        };
        if !is_socket {
            continue;
        }
        let Some(sock) = pidfd_getfd(&pidfd, num) else {
            continue;
        };
        if let Some(f) = link_of(&sock, pid, root, pids) {
            out.push(f);
        }
    }
    out
}

/// The link socket `sock` of process `pid` is a connection to, if any.
fn link_of(sock: &OwnedFd, pid: c_int, root: c_int, pids: &[c_int]) -> Option<Found> {
    let fd = sock.as_raw_fd();
    if sockopt(fd, libc::SO_DOMAIN)? != libc::AF_UNIX
        || sockopt(fd, libc::SO_TYPE)? != libc::SOCK_SEQPACKET
    {
        return None;
    }
    let name = peer_name(fd)?;
    let master_pid = peer_pid(fd)?;
    if master_pid <= 0 {
        return None;
    }
    // Before any path is built from what the listener bound: a process of
    // the container is never trusted to name one (nor to make this one
    // look at its own mounts).
    if inside(master_pid, root, pids) {
        log::info(&format!(
            "pid {pid} is connected to {} served by pid {master_pid}, a process of the dumped \
             container or tree: dumped with it, not paused",
            String::from_utf8_lossy(&name).replace('\0', "@")
        ));
        return None;
    }
    let socket = match name.strip_prefix(b"\0") {
        Some(abs) => {
            let abs = std::str::from_utf8(abs).ok()?;
            let rest = abs.strip_prefix("vecring/1/")?;
            let (domain, link) = rest.split_once('/')?;
            let ino = fs::metadata(format!("/proc/{pid}/ns/net")).ok()?.ino();
            host_socket(master_pid, domain, link, ino)?
        }
        None => {
            let file = socket_file(std::str::from_utf8(&name).ok()?)?;
            let socket = in_master(master_pid, &file);
            let lock = file.strip_suffix(".sock")?.to_string() + ".lock";
            fs::symlink_metadata(in_master(master_pid, &lock)).ok()?;
            socket
        }
    };
    Some(Found {
        peer_name: name,
        socket,
        master_pid,
        slave_pid: pid,
    })
}

/// The host socket of a master serving an abstract name in network
/// namespace `ino`: `<link>@ns<ino>.sock` in its domain's directory, as
/// the master's network namespace lists its sockets.
fn host_socket(master: c_int, domain: &str, link: &str, ino: u64) -> Option<PathBuf> {
    let tail = format!("/{link}@ns{ino}.sock");
    let own = socket_inodes(master);
    let table = fs::read_to_string(format!("/proc/{master}/net/unix")).ok()?;
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cols = l.split_whitespace();
            let inode: u64 = cols.nth(6)?.parse().ok()?;
            Some((inode, cols.next()?))
        })
        .filter(|(inode, _)| own.contains(inode))
        .filter_map(|(_, bound)| bound.starts_with("/proc/self/fd/").then_some(bound))
        .filter_map(socket_file)
        .filter(|p| p.ends_with(&tail))
        .map(|p| in_master(master, &p))
        .find(|p| {
            p.parent()
                .and_then(|d| fs::canonicalize(d).ok())
                .is_some_and(|d| d.file_name().is_some_and(|n| n == domain))
        })
}

/// The socket file of the name a master bound: `<dir>/.<link>.new` is
/// `<dir>/<link>.sock` once renamed (a link's name never starts with a
/// `.`); `<dir>/<link>.sock` is itself. `None` for anything else.
fn socket_file(bound: &str) -> Option<String> {
    let (dir, file) = bound.rsplit_once('/')?;
    if file.ends_with(".sock") && !file.starts_with('.') {
        return Some(bound.to_string());
    }
    let link = file.strip_prefix('.')?.strip_suffix(".new")?;
    (!link.is_empty()).then(|| format!("{dir}/{link}.sock"))
}

/// The inodes of the sockets process `pid` holds.
fn socket_inodes(pid: c_int) -> HashSet<u64> {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    fds.flatten()
        .filter_map(|e| {
            let l = fs::read_link(e.path()).ok()?;
            let l = l.to_str()?;
            l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

/// A path a master bound, as this process reaches it: a master binds
/// through its directory's descriptor (`/proc/self/fd/N/<link>.sock`),
/// which is `/proc/<master>/fd/N/...` from here.
fn in_master(master: c_int, bound: &str) -> PathBuf {
    match bound.strip_prefix("/proc/self/") {
        Some(rest) => PathBuf::from(format!("/proc/{master}/{rest}")),
        None => PathBuf::from(bound),
    }
}

/// Whether `master` belongs to what is dumped: the tree's own pid
/// namespace when that is not ours (a container), else the tree itself.
/// Such a listener is dumped with its peers (a link inside a container),
/// and a process of the container is never trusted to name a host path.
fn inside(master: c_int, root: c_int, pids: &[c_int]) -> bool {
    let ns = |p: &str| {
        fs::metadata(format!("/proc/{p}/ns/pid"))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    match (ns(&master.to_string()), ns(&root.to_string()), ns("self")) {
        (Some(m), Some(r), Some(me)) if r != me => m == r,
        (Some(_), Some(_), Some(_)) => pids.contains(&master),
        // Unknown: treated as inside, never asked.
        _ => true,
    }
}

fn pidfd_open(pid: c_int) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) with no flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as c_int) })
}

fn pidfd_getfd(pidfd: &OwnedFd, fd: c_int) -> Option<OwnedFd> {
    // SAFETY: pidfd_getfd(2) with no flags; the result is checked.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    // SAFETY: a fresh descriptor (a copy of the target's) nobody else owns.
    (got >= 0).then(|| unsafe { OwnedFd::from_raw_fd(got as c_int) })
}

fn sockopt(fd: c_int, opt: c_int) -> Option<c_int> {
    let mut v: c_int = 0;
    let mut len = size_of::<c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `v`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&mut v as *mut c_int).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(v)
}

/// The name of the socket `fd` is connected to (an abstract name keeps
/// its leading NUL); `None` when it has none.
fn peer_name(fd: c_int) -> Option<Vec<u8>> {
    // SAFETY: zeroed sockaddr_un is a valid out-parameter.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: getpeername writes at most `len` bytes into `addr`.
    let rc =
        unsafe { libc::getpeername(fd, (&mut addr as *mut libc::sockaddr_un).cast(), &mut len) };
    let off = std::mem::offset_of!(libc::sockaddr_un, sun_path);
    let n = (len as usize).checked_sub(off)?.min(addr.sun_path.len());
    if rc != 0 || n == 0 {
        return None;
    }
    let mut name: Vec<u8> = addr.sun_path[..n].iter().map(|&c| c as u8).collect();
    if name[0] != 0 {
        // A path: up to its NUL.
        if let Some(end) = name.iter().position(|&c| c == 0) {
            name.truncate(end);
        }
    }
    Some(name)
}

/// The pid (in our pid namespace) of the process that listened on the
/// socket `fd` is connected to.
fn peer_pid(fd: c_int) -> Option<c_int> {
    // SAFETY: zeroed ucred is a valid out-parameter.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_name_gives_its_socket_file() {
        let f = |b: &str| socket_file(b);
        assert_eq!(
            f("/proc/self/fd/7/.net1.new").as_deref(),
            Some("/proc/self/fd/7/net1.sock")
        );
        assert_eq!(
            f("/proc/self/fd/7/.net1@ns4026532.new").as_deref(),
            Some("/proc/self/fd/7/net1@ns4026532.sock")
        );
        assert_eq!(
            f("/run/vecring/d/l0.sock").as_deref(),
            Some("/run/vecring/d/l0.sock")
        );
        for other in [
            "/run/x/.new",
            "/run/x/.l0.sock",
            "/run/x/l0.new",
            "l0.sock",
            "/run/x/l0",
        ] {
            assert_eq!(f(other), None, "{other}");
        }
    }

    #[test]
    fn our_own_sockets_are_listed() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let ino = fs::metadata(format!("/proc/self/fd/{}", a.as_raw_fd()))
            .unwrap()
            .ino();
        assert!(socket_inodes(std::process::id() as c_int).contains(&ino));
    }
}
