//! `outside-connect netns=PATH name=NAME`: a process outside a link's
//! network namespace that reaches its abstract name anyway. A thread of
//! its own enters the namespace (root may) and creates the socket there,
//! as a socket passed out of the container would be; the main thread, in
//! the host's namespace, connects it and asks for a region. The master
//! must judge the process that connects, not where its socket was made.
//! Reports `reply kind=K text=T`, or `closed`, or `error ...`.

use crate::{report, until_stdin_closes, Args};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;
use vecring_core::internal::handshake::{self, Kind, Msg};
use vecring_core::internal::netns::NetNs;

pub fn run(args: &Args) -> bool {
    let ns = match NetNs::open(Path::new(args.get("netns"))) {
        Ok(ns) => ns,
        Err(e) => {
            report(&format!("error opening the namespace: {e}"));
            return false;
        }
    };
    let sock = match ns.run(crate::sock::seqpacket).and_then(|r| r) {
        Ok(s) => s,
        Err(e) => {
            report(&format!("error creating the socket inside: {e}"));
            return false;
        }
    };
    let (addr, len) = crate::sock::sockaddr(Path::new(&format!("@{}", args.get("name"))));
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
    let rc = unsafe {
        libc::connect(
            sock.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            len,
        )
    };
    if rc != 0 {
        report(&format!(
            "error connecting: {}",
            std::io::Error::last_os_error()
        ));
        return false;
    }
    report("connected");
    if let Err(e) = handshake::send(&sock, &Msg::new(Kind::Request, 0), &[]) {
        report(&format!("closed ({e})"));
        return true;
    }
    match handshake::recv(&sock, Duration::from_secs(5)) {
        Ok((m, _fds)) => report(&format!("reply kind={:?} text={}", m.kind, m.text)),
        Err(e) => report(&format!("closed ({e})")),
    }
    until_stdin_closes();
    true
}
