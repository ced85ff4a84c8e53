//! The one interface setting that has no ioctl: the largest GSO
//! super-frame the kernel builds for the interface (`IFLA_GSO_MAX_SIZE`),
//! set over rtnetlink. With `--offload` the TAP takes TCP super-frames,
//! and a link carries frames of at most 9216 bytes: capped so, every
//! super-frame the kernel hands over fits one frame on the link, and none
//! has to be cut into pieces in between.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `IFLA_GSO_MAX_SIZE` of `linux/if_link.h`.
const IFLA_GSO_MAX_SIZE: u16 = 41;
/// `NLM_F_REQUEST | NLM_F_ACK` of `linux/netlink.h`.
const FLAGS: u16 = 1 | 4;
/// `NLMSG_ERROR`: the kernel's answer, an error code (0: done).
const NLMSG_ERROR: u16 = 2;

/// `struct nlmsghdr`, `struct ifinfomsg` and one `u32` attribute.
#[repr(C)]
struct SetU32 {
    len: u32,
    kind: u16,
    flags: u16,
    seq: u32,
    pid: u32,
    family: u8,
    pad: u8,
    if_type: u16,
    index: i32,
    if_flags: u32,
    change: u32,
    attr_len: u16,
    attr_kind: u16,
    value: u32,
}

/// Sets interface `index`'s largest GSO super-frame to `size` bytes (in
/// this network namespace; needs CAP_NET_ADMIN over it).
///
/// # Errors
/// The socket's or the kernel's error.
pub fn set_gso_max_size(index: u32, size: u32) -> io::Result<()> {
    // SAFETY: a plain system call; the result is checked.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let req = SetU32 {
        len: std::mem::size_of::<SetU32>() as u32,
        kind: libc::RTM_NEWLINK,
        flags: FLAGS,
        seq: 1,
        pid: 0,
        family: libc::AF_UNSPEC as u8,
        pad: 0,
        if_type: 0,
        index: index as i32,
        if_flags: 0,
        change: 0,
        attr_len: 8,
        attr_kind: IFLA_GSO_MAX_SIZE,
        value: size,
    };
    // SAFETY: sends the bytes of a live, fully initialised repr(C) struct
    // without padding (its fields are laid out back to back); the kernel
    // is the destination of a netlink socket without an address.
    let sent = unsafe {
        libc::send(
            fd.as_raw_fd(),
            (&req as *const SetU32).cast(),
            std::mem::size_of::<SetU32>(),
            0,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut answer = [0u8; 1024];
    // SAFETY: receives into a live buffer of its length.
    let n = unsafe { libc::recv(fd.as_raw_fd(), answer.as_mut_ptr().cast(), answer.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // The answer: a netlink header (16 bytes) and, for NLMSG_ERROR, the
    // error code (0 for success, else a negative errno).
    let answer = &answer[..n as usize];
    if answer.len() < 20 || u16::from_ne_bytes([answer[4], answer[5]]) != NLMSG_ERROR {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "unexpected answer from the kernel",
        ));
    }
    let code = i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]);
    if code != 0 {
        return Err(io::Error::from_raw_os_error(-code));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_request_has_the_kernels_layout() {
        // nlmsghdr 16 + ifinfomsg 16 + rtattr 4 + u32 4, no padding.
        assert_eq!(std::mem::size_of::<super::SetU32>(), 40);
    }
}
