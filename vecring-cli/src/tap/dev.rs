//! The TAP interface: its queues (one descriptor each, `IFF_MULTI_QUEUE`)
//! from `/dev/net/tun`, and the settings the bridge gives it (MAC, MTU,
//! up, carrier, offloads), all through ioctls in the network namespace the
//! process runs in. Creating one needs `CAP_NET_ADMIN` over that namespace
//! only: an unprivileged container's root has it in its own.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The kernel's longest interface name plus its terminating NUL.
const IFNAMSIZ: usize = libc::IFNAMSIZ;

/// The TUN/TAP character device.
const TUN_PATH: &str = "/dev/net/tun";

/// Checks an interface name as the kernel does (`dev_valid_name`): 1 to 15
/// bytes, not `.` or `..`, without `/`, `:` or white space.
///
/// # Errors
/// What is wrong with it.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() >= IFNAMSIZ {
        return Err(format!(
            "'{}': an interface name has 1 to {} bytes",
            name.escape_debug(),
            IFNAMSIZ - 1
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("'{name}' is not an interface name"));
    }
    if name
        .bytes()
        .any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b == 0)
    {
        return Err(format!(
            "'{}': an interface name has no '/', ':' or white space",
            name.escape_debug()
        ));
    }
    Ok(())
}

/// The index of interface `name` in this network namespace, if it exists.
pub fn index_of(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: a valid C string; the call only reads it.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (index != 0).then_some(index)
}

/// An `ifreq` naming `name` (checked by [`check_name`]), the rest zero.
fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain data (a name and a union of integers,
    // addresses and a pointer), for which all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
        *dst = src as libc::c_char;
    }
    req
}

/// `ioctl(fd, request, arg)` for requests that take a pointer.
fn ioctl_ptr<T>(fd: RawFd, request: libc::Ioctl, arg: &mut T) -> io::Result<()> {
    // SAFETY: every request this module makes with a pointer takes a
    // pointer to a `T` of the size the kernel expects (an ifreq, or an
    // int), live and writable for the call.
    let r = unsafe { libc::ioctl(fd, request, arg as *mut T) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `ioctl(fd, request, value)` for requests that take an integer by value.
fn ioctl_val(fd: RawFd, request: libc::Ioctl, value: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the TUN requests made with a value (TUNSETCARRIER's and
    // TUNSETOFFLOAD's) read it as an integer, not as a pointer.
    let r = unsafe { libc::ioctl(fd, request, value) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A datagram socket for the interface ioctls (SIOCSIF*), which any
/// socket of the namespace accepts.
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: a plain system call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A TAP interface of this process: its queues' descriptors. The kernel
/// removes the interface when the last one closes (it is not persistent).
pub struct Tap {
    name: String,
    queues: Vec<OwnedFd>,
    /// A second descriptor of queue 0, for the ioctls once the queues
    /// went to their threads.
    control: Option<OwnedFd>,
}

/// Why the interface could not be made, said with what to do.
fn open_error(name: &str, e: io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => format!(
            "cannot create interface {name}: {e}: this needs CAP_NET_ADMIN in the network namespace it runs in (root, or a container's root in the container's own namespace)"
        ),
        Some(libc::EBUSY) | Some(libc::EEXIST) => format!(
            "cannot create interface {name}: it exists already; choose another --ifname"
        ),
        Some(libc::EINVAL) => format!(
            "cannot create interface {name}: {e} (an interface of that name but another kind exists, or the kernel lacks multi-queue TAP)"
        ),
        _ => format!("cannot create interface {name}: {e}"),
    }
}

impl Tap {
    /// Creates TAP interface `name` with `queues` queues, frames with a
    /// virtio-net header of [`VNET_HDR_LEN`](super::vnet::VNET_HDR_LEN)
    /// bytes when `vnet_hdr`. Its descriptors are non-blocking; it starts
    /// down with its carrier off.
    ///
    /// # Errors
    /// No `/dev/net/tun`, no permission, a name taken, with what to do.
    pub fn create(name: &str, queues: u16, vnet_hdr: bool) -> Result<Tap, String> {
        check_name(name)?;
        if index_of(name).is_some() {
            return Err(format!(
                "interface {name} exists already in this network namespace; choose another --ifname"
            ));
        }
        let mut tap = Tap {
            name: name.to_string(),
            queues: Vec::with_capacity(usize::from(queues)),
            control: None,
        };
        let path = CString::new(TUN_PATH).expect("no NUL in a constant");
        for q in 0..queues {
            // SAFETY: a valid C string; the result is checked.
            let fd = unsafe {
                libc::open(
                    path.as_ptr(),
                    libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                let e = io::Error::last_os_error();
                return Err(format!(
                    "cannot open {TUN_PATH}: {e} (in a container: bind-mount the host's {TUN_PATH} and allow the device c 10:200; see docs/lxc.md)"
                ));
            }
            // SAFETY: a fresh descriptor nobody else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let mut req = ifreq(name);
            let mut flags = libc::IFF_TAP | libc::IFF_NO_PI | libc::IFF_MULTI_QUEUE;
            if vnet_hdr {
                flags |= libc::IFF_VNET_HDR;
            }
            if q == 0 {
                // The first queue creates the interface: never attach to one
                // someone else made meanwhile.
                flags |= libc::IFF_TUN_EXCL;
            }
            req.ifr_ifru.ifru_flags = flags as libc::c_short;
            ioctl_ptr(fd.as_raw_fd(), libc::TUNSETIFF, &mut req)
                .map_err(|e| open_error(name, e))?;
            if vnet_hdr {
                let mut len = super::vnet::VNET_HDR_LEN as libc::c_int;
                ioctl_ptr(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &mut len)
                    .map_err(|e| format!("{name}: cannot set the virtio-net header size: {e}"))?;
            }
            if q == 0 {
                tap.control = Some(
                    fd.try_clone()
                        .map_err(|e| format!("{name}: cannot duplicate its descriptor: {e}"))?,
                );
            }
            tap.queues.push(fd);
        }
        tap.set_carrier(false)?;
        Ok(tap)
    }

    /// The queues' descriptors, queue `q` at index `q` (the interface
    /// stays until they and this `Tap` are closed).
    pub fn take_queues(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.queues)
    }

    /// A descriptor of the interface for the TUN ioctls.
    fn any_queue(&self) -> io::Result<RawFd> {
        self.control
            .as_ref()
            .map(AsRawFd::as_raw_fd)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }

    /// Turns the carrier on or off (`TUNSETCARRIER`): off, the interface
    /// says NO-CARRIER and the kernel sends nothing through it.
    ///
    /// # Errors
    /// The ioctl's error (a kernel before 5.0 lacks it).
    pub fn set_carrier(&self, on: bool) -> Result<(), String> {
        let mut v: libc::c_int = on.into();
        ioctl_ptr(
            self.any_queue().map_err(|e| e.to_string())?,
            libc::TUNSETCARRIER,
            &mut v,
        )
        .map_err(|e| format!("{}: cannot set the carrier: {e}", self.name))
    }

    /// Sets the offloads the kernel may hand this TAP (`TUNSETOFFLOAD`,
    /// `TUN_F_*`): frames with partial checksums and GSO super-frames.
    ///
    /// # Errors
    /// The ioctl's error.
    pub fn set_offload(&self, flags: libc::c_uint) -> Result<(), String> {
        ioctl_val(
            self.any_queue().map_err(|e| e.to_string())?,
            libc::TUNSETOFFLOAD,
            libc::c_ulong::from(flags),
        )
        .map_err(|e| format!("{}: cannot set offloads {flags:#x}: {e}", self.name))
    }
}

/// Interface settings by name (SIOCSIF* on a socket of the namespace).
pub struct IfConfig {
    name: String,
    sock: OwnedFd,
}

impl IfConfig {
    /// For interface `name`.
    ///
    /// # Errors
    /// No socket could be made.
    pub fn new(name: &str) -> Result<IfConfig, String> {
        Ok(IfConfig {
            name: name.to_string(),
            sock: control_socket().map_err(|e| format!("socket for interface ioctls: {e}"))?,
        })
    }

    /// Sets the MTU.
    ///
    /// # Errors
    /// The ioctl's error.
    pub fn set_mtu(&self, mtu: u32) -> Result<(), String> {
        let mut req = ifreq(&self.name);
        req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        ioctl_ptr(self.sock.as_raw_fd(), libc::SIOCSIFMTU, &mut req)
            .map_err(|e| format!("{}: cannot set MTU {mtu}: {e}", self.name))
    }

    /// The MTU.
    ///
    /// # Errors
    /// The ioctl's error.
    pub fn mtu(&self) -> Result<u32, String> {
        let mut req = ifreq(&self.name);
        ioctl_ptr(self.sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req)
            .map_err(|e| format!("{}: cannot read the MTU: {e}", self.name))?;
        // SAFETY: SIOCGIFMTU wrote the union's MTU member.
        Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
    }

    /// Sets the Ethernet address.
    ///
    /// # Errors
    /// The ioctl's error.
    pub fn set_mac(&self, mac: [u8; 6]) -> Result<(), String> {
        let mut req = ifreq(&self.name);
        // SAFETY: sockaddr is plain data; all zeroes is valid.
        let mut addr: libc::sockaddr = unsafe { std::mem::zeroed() };
        addr.sa_family = libc::ARPHRD_ETHER;
        for (dst, &src) in addr.sa_data.iter_mut().zip(&mac) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_hwaddr = addr;
        ioctl_ptr(self.sock.as_raw_fd(), libc::SIOCSIFHWADDR, &mut req)
            .map_err(|e| format!("{}: cannot set MAC {}: {e}", self.name, mac_text(mac)))
    }

    /// Brings the interface up (administratively; the carrier says whether
    /// frames flow).
    ///
    /// # Errors
    /// The ioctl's error.
    pub fn set_up(&self) -> Result<(), String> {
        let mut req = ifreq(&self.name);
        ioctl_ptr(self.sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req)
            .map_err(|e| format!("{}: cannot read its flags: {e}", self.name))?;
        // SAFETY: SIOCGIFFLAGS wrote the union's flags member.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
        ioctl_ptr(self.sock.as_raw_fd(), libc::SIOCSIFFLAGS, &mut req)
            .map_err(|e| format!("{}: cannot bring it up: {e}", self.name))
    }
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_as_the_kernel_does() {
        for good in ["eth0", "vr-web.0", "a", "fifteen-chars-x"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a:b", "a b", "sixteen-chars-xx"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
