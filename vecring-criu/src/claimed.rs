//! The connections the plugin claimed at the dump, by socket inode, in a
//! file of the image directory (`vecring-criu.img`, one inode per line),
//! and what each becomes at the restore.

use std::ffi::c_int;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};

const FILE: &std::ffi::CStr = c"vecring-criu.img";

/// CRIU's descriptor of its image directory (`criu_get_image_dir`, of its
/// plugin interface), looked up in the CRIU process that loaded us.
fn image_dir() -> io::Result<c_int> {
    // SAFETY: dlsym with a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"criu_get_image_dir".as_ptr()) };
    if f.is_null() {
        return Err(io::Error::other(
            "not loaded by CRIU (no criu_get_image_dir)",
        ));
    }
    // SAFETY: CRIU's `int criu_get_image_dir(void)`; hooks run with the
    // image directory open.
    let dir = unsafe { std::mem::transmute::<*mut libc::c_void, extern "C" fn() -> c_int>(f)() };
    if dir < 0 {
        return Err(io::Error::other("CRIU has no image directory open"));
    }
    Ok(dir)
}

fn open(flags: c_int) -> io::Result<File> {
    let dir = image_dir()?;
    // SAFETY: openat with a NUL-terminated relative name; checked below.
    let fd = unsafe { libc::openat(dir, FILE.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Records socket `ino` as claimed.
pub(crate) fn record(ino: u32) -> io::Result<()> {
    let mut f = open(libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND)?;
    f.write_all(format!("{ino}\n").as_bytes())
}

/// Whether socket `ino` was claimed at the dump.
pub(crate) fn contains(ino: u32) -> io::Result<bool> {
    let mut text = String::new();
    match open(libc::O_RDONLY) {
        Ok(f) => f.take(1 << 20).read_to_string(&mut text)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(text.lines().any(|l| l.trim().parse() == Ok(ino)))
}

/// A connected `SOCK_SEQPACKET` socket whose peer is already closed: its
/// owner reads the end of the connection first thing.
pub(crate) fn closed_socket() -> io::Result<c_int> {
    let mut sv = [0 as c_int; 2];
    // SAFETY: socketpair writes two descriptors into `sv`; checked.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0, sv.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors nobody else owns.
    let (ours, peer) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    drop(peer);
    Ok(ours.into_raw_fd())
}
