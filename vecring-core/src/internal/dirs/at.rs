//! The descriptor-relative steps the link's files are handled with: C
//! strings and system-call results, `openat`/`fstatat` that never follow
//! a symlink, what is wrong with a directory about to be trusted, opening
//! (and creating) a directory checked, and the `/proc/self/fd` path that
//! reaches an entry through a directory already opened.

use super::{io_at, unsafe_at, DirError};
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub(super) fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

pub(super) fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// `openat(at, name, flags)`, owning the result.
pub(super) fn open_at(
    at: libc::c_int,
    name: &CStr,
    flags: libc::c_int,
    mode: u32,
) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a valid C string; the result is checked.
    let fd = cvt(unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_CLOEXEC, mode) })?;
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstat` of a descriptor.
pub(super) fn stat_fd(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fstat writes into `st`, which outlives the call.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself, never what
/// it points to. `Ok(None)` when there is no such entry.
pub(super) fn stat_entry(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Option<libc::stat>> {
    // SAFETY: a zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `name` is a valid C string; fstatat writes into `st`.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    match cvt(rc) {
        Ok(_) => Ok(Some(st)),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

pub(super) fn kind(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFLNK => "a symlink",
        libc::S_IFDIR => "a directory",
        libc::S_IFREG => "a regular file",
        libc::S_IFSOCK => "a socket",
        libc::S_IFIFO => "a FIFO",
        _ => "a device or other special file",
    }
}

/// What is wrong with a directory we are about to trust, if anything:
/// not a directory, owned by a uid `owner_ok` refuses, or writable by
/// group or others (who could then plant entries in it).
pub(super) fn dir_problem(st: &libc::stat, owner_ok: impl Fn(u32) -> bool) -> Option<String> {
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return Some(format!("it is {}, not a directory", kind(st.st_mode)));
    }
    if !owner_ok(st.st_uid) {
        return Some(format!("it is owned by uid {}", st.st_uid));
    }
    if st.st_mode & 0o022 != 0 {
        return Some(format!(
            "it is writable by group or others (mode {:04o}); only its owner may write it",
            st.st_mode & 0o7777
        ));
    }
    None
}

/// How a directory is opened: to read and change it (the master, its
/// owner), or only to reach and inspect it (`O_PATH`: the slave, which may
/// have nothing but search permission there).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Owner,
    Search,
}

/// Opens the directory `name` under `at` (or the path itself with
/// `AT_FDCWD`) without following a symlink in its last component; `create`
/// makes it first with that mode when missing. `Ok(None)` when it does not
/// exist and was not to be created.
pub(super) fn open_dir(
    at: libc::c_int,
    name: &CStr,
    path: &Path,
    create: Option<u32>,
    access: Access,
) -> Result<Option<(OwnedFd, bool)>, DirError> {
    let mut made = false;
    if let Some(mode) = create {
        // SAFETY: `name` is a valid C string; the result is checked.
        match cvt(unsafe { libc::mkdirat(at, name.as_ptr(), mode) }) {
            Ok(_) => made = true,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) => return Err(io_at("creating", path)(e)),
        }
    }
    let open = match access {
        Access::Owner => libc::O_RDONLY,
        Access::Search => libc::O_PATH,
    };
    match open_at(at, name, open | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0) {
        Ok(fd) => Ok(Some((fd, made))),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) => {
            // Say precisely what is there instead.
            // SAFETY: a zeroed stat is a valid out-parameter.
            let mut st: libc::stat = unsafe { core::mem::zeroed() };
            // SAFETY: `name` is a valid C string; fstatat writes into `st`.
            let rc =
                unsafe { libc::fstatat(at, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
            let what = if rc == 0 {
                kind(st.st_mode)
            } else {
                "not a directory"
            };
            Err(unsafe_at(
                path,
                format!("it is {what}, not a directory (symlinks are never followed)"),
            ))
        }
        Err(e) => Err(io_at("opening", path)(e)),
    }
}

/// `/proc/self/fd/<dir>/<name>`: a path that reaches `name` through the
/// directory we opened and checked, whatever happens to the directory's
/// own path meanwhile. Used for `bind` and `connect`, which take no
/// directory descriptor.
pub(super) fn via_fd(dir: BorrowedFd<'_>, name: &str) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}/{name}", dir.as_raw_fd()))
}

pub(super) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The run directory, opened and checked; created (with its parents,
/// `0755`) when missing.
pub(super) fn open_run_dir(run_dir: &Path, me: u32) -> Result<OwnedFd, DirError> {
    let c = cstring(run_dir.as_os_str().as_bytes()).map_err(io_at("opening", run_dir))?;
    let fd = match open_dir(libc::AT_FDCWD, &c, run_dir, None, Access::Owner)? {
        Some((fd, _)) => fd,
        None => {
            std::fs::create_dir_all(run_dir).map_err(io_at("creating", run_dir))?;
            open_dir(libc::AT_FDCWD, &c, run_dir, None, Access::Owner)?
                .ok_or_else(|| io_at("opening", run_dir)(io::ErrorKind::NotFound.into()))?
                .0
        }
    };
    let st = stat_fd(fd_ref(&fd)).map_err(io_at("inspecting", run_dir))?;
    if let Some(problem) = dir_problem(&st, |uid| uid == me || uid == 0) {
        return Err(unsafe_at(run_dir, problem));
    }
    Ok(fd)
}

pub(super) fn fd_ref(fd: &OwnedFd) -> BorrowedFd<'_> {
    use std::os::fd::AsFd;
    fd.as_fd()
}
