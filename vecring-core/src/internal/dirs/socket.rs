//! The master's socket file: made under a name no link can have, listened
//! on, given its group and mode, and only then renamed to `<link>.sock`.
//!
//! A slave that finds `<link>.sock` therefore finds a socket that accepts
//! connections, with the access the master asked for. Bound in place, the
//! name would exist before `listen` (a connection refused) and before its
//! mode was set (what the umask gave it, for as long as that took).
//!
//! The staging name is `.<link>.new`: link names never start with a `.`
//! ([`crate::name`]), so it is nobody's socket or lock. Only the domain
//! directory's owner can write there, so one found under the link's lock
//! was left by a master of ours that died between bind and rename.

use super::at::{cstring, cvt, fd_ref, kind, open_at, stat_entry, stat_fd, via_fd};
use super::{io_at, unsafe_at, DirError, MasterFiles};
use crate::closer::PeerSocket;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

/// Whether `name` in `dir` is a socket (left by a master) or absent;
/// anything else there is refused.
pub(super) fn stale(dir: BorrowedFd<'_>, name: &CStr, path: &Path) -> Result<bool, DirError> {
    match stat_entry(dir, name).map_err(io_at("inspecting", path))? {
        None => Ok(false),
        Some(st) if st.st_mode & libc::S_IFMT == libc::S_IFSOCK => Ok(true),
        Some(st) => Err(unsafe_at(
            path,
            format!("it is {}, not a socket left by a master", kind(st.st_mode)),
        )),
    }
}

/// Removes the socket file `name` from `dir`.
pub(super) fn remove(dir: BorrowedFd<'_>, name: &CStr, path: &Path) -> Result<(), DirError> {
    // SAFETY: valid C string, our directory descriptor.
    cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })
        .map_err(io_at("removing stale socket", path))?;
    Ok(())
}

/// Listens on `sock_file` in `dir` (the domain directory, `dir_path`),
/// the caller holding the link's lock and `sock_file` being free: bound
/// as the staging name, given its access, renamed into place.
pub(super) fn place(
    dir: BorrowedFd<'_>,
    dir_path: &Path,
    sock_file: &str,
    files: &MasterFiles<'_>,
    listen: impl Fn(&Path) -> io::Result<PeerSocket>,
) -> Result<PeerSocket, DirError> {
    let socket = dir_path.join(sock_file);
    let sock_name = cstring(sock_file.as_bytes()).map_err(io_at("opening", &socket))?;
    let staging_file = format!(".{}.new", files.link);
    let staging = dir_path.join(&staging_file);
    let staging_name = cstring(staging_file.as_bytes()).map_err(io_at("opening", &staging))?;
    if stale(dir, &staging_name, &staging)? {
        remove(dir, &staging_name, &staging)?;
    }
    let listener = listen(&via_fd(dir, &staging_file)).map_err(io_at("listening on", &socket))?;
    let placed = set_access(dir, &staging_name, &staging, files)
        .and_then(|()| rename_free(dir, &staging_name, &sock_name, &socket));
    if let Err(e) = placed {
        // The next claim would remove what is left under the staging
        // name, but `vecring list` would report it until then.
        // SAFETY: valid C string, our directory descriptor.
        unsafe { libc::unlinkat(dir.as_raw_fd(), staging_name.as_ptr(), 0) };
        return Err(e);
    }
    Ok(listener)
}

/// Renames `from` to `to` in `dir`, refusing to replace an entry there.
fn rename_free(dir: BorrowedFd<'_>, from: &CStr, to: &CStr, path: &Path) -> Result<(), DirError> {
    // SAFETY: valid C strings, our directory descriptor for both.
    let rc = unsafe {
        libc::renameat2(
            dir.as_raw_fd(),
            from.as_ptr(),
            dir.as_raw_fd(),
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    match cvt(rc) {
        Ok(_) => Ok(()),
        // A file system without RENAME_NOREPLACE: a hard link refuses an
        // existing name the same way, and the staging name then goes.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // SAFETY: as above; no flags, so no symlink is followed.
            cvt(unsafe {
                libc::linkat(
                    dir.as_raw_fd(),
                    from.as_ptr(),
                    dir.as_raw_fd(),
                    to.as_ptr(),
                    0,
                )
            })
            .map_err(io_at("placing the socket at", path))?;
            // SAFETY: as above.
            cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), from.as_ptr(), 0) })
                .map_err(io_at("placing the socket at", path))?;
            Ok(())
        }
        Err(e) => Err(io_at("placing the socket at", path)(e)),
    }
}

/// Sets the socket file's mode and owner through an `O_PATH` descriptor of
/// it, never by path.
fn set_access(
    dir: BorrowedFd<'_>,
    name: &CStr,
    path: &Path,
    files: &MasterFiles<'_>,
) -> Result<(), DirError> {
    let sock = open_at(dir.as_raw_fd(), name, libc::O_PATH | libc::O_NOFOLLOW, 0)
        .map_err(io_at("opening", path))?;
    let st = stat_fd(fd_ref(&sock)).map_err(io_at("inspecting", path))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(unsafe_at(
            path,
            format!("it is {}, not our socket", kind(st.st_mode)),
        ));
    }
    // The owner's group gets the socket, never its ownership: the owner of
    // a file may chmod it, and a container that could make the root
    // master's socket 0777 would open it to every local user. The socket
    // stays the master's; its group, with read and write, is how the
    // container reaches it.
    let mode = match files.owner {
        Some(_) => files.socket_mode | 0o060,
        None => files.socket_mode,
    };
    if let Some((_, gid)) = files.owner {
        // SAFETY: AT_EMPTY_PATH makes fchownat act on `sock` itself; an
        // owner of -1 leaves the owner as it is (ours).
        cvt(unsafe {
            libc::fchownat(
                sock.as_raw_fd(),
                c"".as_ptr(),
                u32::MAX,
                gid,
                libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            )
        })
        .map_err(io_at("changing the group of", path))?;
    }
    // chmod through the descriptor's /proc link reaches exactly this inode
    // (fchmod refuses O_PATH descriptors). After the chown, which may
    // clear mode bits.
    let by_fd = cstring(format!("/proc/self/fd/{}", sock.as_raw_fd()).as_bytes())
        .map_err(io_at("setting the mode of", path))?;
    // SAFETY: valid C string; the result is checked.
    cvt(unsafe { libc::chmod(by_fd.as_ptr(), mode) })
        .map_err(io_at("setting the mode of", path))?;
    Ok(())
}
