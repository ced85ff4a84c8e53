//! Descriptors whose last close blocks, passed to a master
//! (`plant socket=P where=W ...`):
//!
//! - `where=hello`: on a fresh connection, with its Request (refused by
//!   uid or not, the master has to close what it received);
//! - `where=doorbell run-dir=R domain=D link=L`: as a real slave, on its
//!   end of every ring's doorbell (among them the one the master's
//!   receiver drains), then drops the link at once;
//! - `where=doorbell then=frames ...`: as a real slave, first rings every
//!   doorbell for nothing, a wakeup at a time, until a sleeping receiver
//!   mutes it (it then checks the ring by timer only), plants on every
//!   doorbell, then stays and publishes frames: the receiver finds them by
//!   timer, unmutes the doorbell and drains what was planted on it.
//! - `where=hogs socket=P count=N`: as a uid the master refuses, holds
//!   `N` of the master's closers, each in the final close of a lingering
//!   socket that came with a connection the master closed unread;
//! - `where=flood socket=P run-dir=R domain=D link=L`: as a real slave
//!   that stays (admitted), sends fresh connections each with a Request
//!   and a full message of `/dev/null` copies (the first is read, and its
//!   253 descriptors wait behind closers held by `hogs`), then plants on
//!   every doorbell a full message whose last descriptor lingers (a table
//!   without room for it makes the kernel close that one on the draining
//!   thread), then publishes frames.
//!
//! The planted file is a loopback TCP socket with `SO_LINGER {1, 3600}`
//! and megabytes queued against a peer that never reads: whichever thread
//! drops the last reference to it sleeps in the close for an hour. This
//! process keeps only the never-reading end.
//!
//! Reports `planted ok` (the kernel took the descriptor) or `planted
//! refused errno=E`, then `left` (doorbell) or `sent frames=N` (the frames
//! published, `then=frames`), then holds everything until stdin closes.

use crate::{report, until_stdin_closes, Args};
use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;
use std::time::Duration;

/// A socket whose last close sleeps for an hour, and the peer that makes
/// it so (never reading: a zero window).
pub(crate) fn lingering() -> io::Result<(TcpStream, TcpStream)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let mut c = TcpStream::connect(l.local_addr()?)?;
    let (s, _) = l.accept()?;
    let small: libc::c_int = 4096;
    // SAFETY: an int option of our own socket, live for the call.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            4,
        )
    };
    c.set_nonblocking(true)?;
    let chunk = vec![0x5au8; 65536];
    while c.write(&chunk).is_ok() {}
    c.set_nonblocking(false)?;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 3600,
    };
    // SAFETY: a linger struct of our own socket, live for the call.
    let rc = unsafe {
        libc::setsockopt(
            c.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            core::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((c, s))
}

/// Sends `bytes` on `sock` with `fd` in `SCM_RIGHTS`.
pub(crate) fn send_with_fd(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fd: BorrowedFd<'_>,
) -> io::Result<()> {
    send_with_fds(sock, bytes, &[fd])
}

/// Descriptors one message carries at most (`SCM_MAX_FD`).
const SCM_MAX_FD: usize = 253;

/// Sends `bytes` on `sock` with `fds` (at most [`SCM_MAX_FD`], the same
/// one any number of times) in `SCM_RIGHTS`.
fn send_with_fds(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    assert!(fds.len() <= SCM_MAX_FD);
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut cmsg = [0u64; (SCM_MAX_FD + 8) / 2 + 4];
    let data = (fds.len() * 4) as u32;
    // SAFETY: an all-zero msghdr is valid.
    let mut hdr: libc::msghdr = unsafe { core::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    hdr.msg_control = cmsg.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a size computation.
    hdr.msg_controllen = unsafe { libc::CMSG_SPACE(data) } as usize;
    // SAFETY: the control buffer (1072 bytes) holds one header with up to
    // SCM_MAX_FD descriptors.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&hdr);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(data) as usize;
        let out = libc::CMSG_DATA(c).cast::<i32>();
        for (i, fd) in fds.iter().enumerate() {
            core::ptr::write_unaligned(out.add(i), fd.as_raw_fd());
        }
    }
    // SAFETY: `hdr` points to live buffers; MSG_NOSIGNAL avoids SIGPIPE.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &hdr, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Plants a lingering socket on each of `socks`; reports the outcome (of
/// the first refusal, if any). Returns the never-reading ends.
fn plant(
    socks: &[BorrowedFd<'_>],
    bytes: &[u8],
    made: Vec<(TcpStream, TcpStream)>,
) -> Vec<TcpStream> {
    let mut outcome = Ok(());
    let mut pairs = Vec::new();
    for (sock, (client, server)) in socks.iter().zip(made) {
        let sent = send_with_fd(*sock, bytes, client.as_fd());
        if let (Ok(()), Err(e)) = (&outcome, sent) {
            outcome = Err(e);
        }
        pairs.push((client, server));
    }
    settle(outcome, pairs)
}

/// After the sending: reports `planted ok` or the first refusal and lets
/// our copies of the sent descriptors go. Returns what must stay open.
fn settle(outcome: io::Result<()>, pairs: Vec<(TcpStream, TcpStream)>) -> Vec<TcpStream> {
    let mut kept = Vec::new();
    let mut sent = Vec::new();
    for (client, server) in pairs {
        if outcome.is_ok() {
            sent.push(client);
        } else {
            // Ours is the last reference: closing it would sleep here.
            // It goes at exit, where the kernel skips the linger.
            kept.push(client);
        }
        kept.push(server);
    }
    // Ours go, so that the copies in flight are the last references. The
    // master may have taken and closed its copy already (a busy machine
    // schedules it first): then ours is the last and its close sleeps for
    // the hour, so it happens on a thread of its own that nobody waits
    // for (exit interrupts it) and the report does not depend on it.
    std::thread::spawn(move || drop(sent));
    match outcome {
        Ok(()) => report("planted ok"),
        Err(e) => report(&format!(
            "planted refused errno={}",
            crate::sock::errno_name(e.raw_os_error().unwrap_or(0))
        )),
    }
    kept
}

/// `n` lingering sockets, made before anything is sent.
fn lingering_n(n: usize) -> Option<Vec<(TcpStream, TcpStream)>> {
    match (0..n).map(|_| lingering()).collect::<io::Result<Vec<_>>>() {
        Ok(v) => Some(v),
        Err(e) => {
            report(&format!("error lingering socket: {e}"));
            None
        }
    }
}

pub fn run(args: &Args) -> bool {
    match args.get("where") {
        "hello" => hello(Path::new(args.get("socket"))),
        "doorbell" => doorbell(args),
        "flood" => flood(args),
        "hogs" => hogs(args),
        other => {
            report(&format!("error unknown where={other}"));
            false
        }
    }
}

/// Attempts at the hello before giving up: a master that refuses the uid
/// may accept and close a connection before its first message is sent
/// (EPIPE), and a real attacker simply connects again.
const HELLO_ATTEMPTS: usize = 200;

fn hello(path: &Path) -> bool {
    // Kept to the end: a lingering socket whose sending failed is ours
    // alone, and only exit closes it without the linger.
    let mut kept = Vec::new();
    // A master between its bind and its listen refuses: waited for, up to
    // this, as in `hogs` (under load its start takes longer).
    let listening_by = std::time::Instant::now() + Duration::from_secs(20);
    for _ in 0..HELLO_ATTEMPTS {
        // Made first: the message goes right behind the connect, before
        // the master has even accepted.
        let Some(mut made) = lingering_n(1) else {
            return false;
        };
        let conn = loop {
            match crate::sock::connect(path, Duration::from_secs(3)) {
                Ok(c) => break c,
                Err(e)
                    if e.raw_os_error() == Some(libc::ECONNREFUSED)
                        && std::time::Instant::now() < listening_by =>
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => {
                    report(&format!("error connect: {e}"));
                    return false;
                }
            }
        };
        let (client, server) = made.remove(0);
        match send_with_fd(conn.as_fd(), &crate::sock::request(), client.as_fd()) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)) => {
                kept.extend([client, server]);
                continue;
            }
            outcome => {
                let servers = settle(outcome, vec![(client, server)]);
                until_stdin_closes();
                drop((conn, servers, kept));
                return true;
            }
        }
    }
    report("error every connection was closed before its first message");
    false
}

fn doorbell(args: &Args) -> bool {
    let Some(link) = crate::peer::slave_up(args, Duration::from_secs(30)) else {
        return false;
    };
    let tx = link.sender().expect("sender");
    let Some(region) = link.receiver().ok().and_then(|mut r| r.region()) else {
        report("error link went down");
        return false;
    };
    report("up");
    // Our ends of every ring's doorbell: the only datagram sockets here.
    let bells = vecring_tests::datagram_sockets();
    let Some(made) = lingering_n(bells.len()) else {
        return false;
    };
    // SAFETY: the descriptors stay open while the link is (we hold it).
    let socks: Vec<BorrowedFd<'_>> = bells
        .iter()
        .map(|&fd| unsafe { BorrowedFd::borrow_raw(fd) })
        .collect();
    let frames = args.opt("then") == Some("frames");
    if frames {
        ring_for_nothing(&socks);
    }
    let server = plant(&socks, b"!", made);
    report(&format!("bells {}", socks.len()));
    drop(socks);
    if frames {
        let mut tx = tx;
        let sent = (0..FRAMES)
            .filter(|i| tx.send(&[*i as u8; 60]).is_ok())
            .count();
        report(&format!("sent frames={sent}"));
        until_stdin_closes();
        drop((tx, region, link, server));
        return true;
    }
    drop((tx, region));
    drop(link);
    report("left");
    until_stdin_closes();
    drop(server);
    true
}

/// Frames published after planting (`then=frames`): fewer than a ring
/// holds, so that every one is published at once.
const FRAMES: usize = 32;

/// Rings for nothing before planting (`then=frames`): four times the
/// receiver's mute threshold (eight wakeups in a row that find nothing),
/// each ring apart from the next, so that each is a wakeup of its own.
const MUTE_RINGS: usize = 32;
const MUTE_GAP: Duration = Duration::from_millis(5);

/// Rings each of `bells` [`MUTE_RINGS`] times, a wakeup at a time.
fn ring_for_nothing(bells: &[BorrowedFd<'_>]) {
    for _ in 0..MUTE_RINGS {
        for b in bells {
            // SAFETY: a one-byte buffer live for the call on an open
            // socket; MSG_DONTWAIT: a full queue only drops this ring.
            unsafe {
                libc::send(
                    b.as_raw_fd(),
                    b"!".as_ptr().cast(),
                    1,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
        }
        std::thread::sleep(MUTE_GAP);
    }
    report("rang");
}

/// Messages of `/dev/null` copies in the flood: the first is read (and
/// its 253 descriptors wait behind the held closers), the rest would be
/// too without the master's bound and penalty: 759 descriptors, more than
/// a table of 600 takes.
const FILLERS: usize = 3;

/// How long a hand-over of our copy of a lingering socket may take before
/// it counts as ours being the last (the dropping thread sleeps in the
/// close): the master had closed its own first.
/// A second: under load (two CPUs busy with other tests) the master's
/// closer took longer than 200 ms, and every attempt counted as failed.
const LAST_REF_WAIT: Duration = Duration::from_secs(1);

/// `where=hogs socket=P count=N`: holds `N` of the master's closers, each
/// in the final close of a lingering socket. Each goes with a Request on
/// a fresh connection that the master closes without reading (this uid is
/// refused), so the closer that closes the connection purges its queue
/// and drops the last reference; our copy is let go right after the send
/// ([`send_letting_go`]) and a hand-over that does not return within
/// [`LAST_REF_WAIT`] means the master's went first: tried again, up to
/// 32 times `N` (under load most attempts lose that race). Reports `hogs placed=P attempts=A`, then holds the
/// never-reading ends until stdin closes.
fn hogs(args: &Args) -> bool {
    let path = Path::new(args.get("socket"));
    let want = args.num("count") as usize;
    let (mut placed, mut attempts) = (0usize, 0usize);
    let mut kept = Vec::new();
    // A master not listening yet is waited for, up to this, without
    // counting attempts: under load its start took longer than the
    // attempts' 10 ms naps.
    let listening_by = std::time::Instant::now() + Duration::from_secs(20);
    // A lingering pair made for a refused connection, kept for the next.
    let mut spare = None;
    while placed < want && attempts < 32 * want {
        attempts += 1;
        let Some(mut made) = spare.take().or_else(|| lingering_n(1)) else {
            return false;
        };
        let conn = match crate::sock::connect(path, Duration::from_secs(3)) {
            Ok(c) => c,
            // A master between its bind and its listen refuses: again.
            Err(e)
                if e.raw_os_error() == Some(libc::ECONNREFUSED)
                    && std::time::Instant::now() < listening_by =>
            {
                spare = Some(made);
                attempts -= 1;
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(e) => {
                report(&format!("error connect: {e}"));
                return false;
            }
        };
        let (tx, done) = std::sync::mpsc::channel::<()>();
        let pair = made.remove(0);
        let sent = send_letting_go(
            conn.as_fd(),
            &crate::sock::request(),
            &[],
            0,
            Some(pair),
            &mut kept,
            Some(tx),
        );
        if matches!(sent, Some(Ok(()))) && done.recv_timeout(LAST_REF_WAIT).is_ok() {
            placed += 1;
        }
        // Held open until the master closes it (then the closer purges
        // it), or to the end.
        kept_conn(conn);
    }
    report(&format!("hogs placed={placed} attempts={attempts}"));
    until_stdin_closes();
    // Closed at exit, where the kernel skips the linger.
    std::mem::forget(kept);
    true
}

/// Keeps `conn` open to the end of the process (its close would be the
/// purge the master's closer must do).
fn kept_conn(conn: std::os::fd::OwnedFd) {
    std::mem::forget(conn);
}

/// `where=flood`: see the module documentation. Reports `up`, `flood
/// messages=N` (messages sent: those after the first meet a master that
/// refuses this uid, and may find the connection closed), the planting's
/// outcome, `sent frames=N`, then holds everything until stdin closes.
fn flood(args: &Args) -> bool {
    let Some(link) = crate::peer::slave_up(args, Duration::from_secs(30)) else {
        return false;
    };
    let mut tx = link.sender().expect("sender");
    report("up");
    // Taken before the flood, which adds datagram sockets of its own.
    let bells = vecring_tests::datagram_sockets();
    let devnull = match std::fs::File::open("/dev/null") {
        Ok(f) => f,
        Err(e) => {
            report(&format!("error /dev/null: {e}"));
            return false;
        }
    };
    let Some(tails) = lingering_n(bells.len()) else {
        return false;
    };
    let path = Path::new(args.get("socket"));
    let mut conns = Vec::new();
    let mut sent_messages = 0;
    let fds = vec![devnull.as_fd(); SCM_MAX_FD];
    for _ in 0..FILLERS {
        let conn = match crate::sock::connect(path, Duration::from_secs(2)) {
            Ok(c) => c,
            // A master that stopped accepting: the backlog is full.
            Err(_) => break,
        };
        match send_with_fds(conn.as_fd(), &crate::sock::request(), &fds) {
            Ok(()) => sent_messages += 1,
            // Refused and closed already.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)) => {}
            Err(e) => {
                report(&format!("error flood: {e}"));
                break;
            }
        }
        conns.push(conn);
    }
    report(&format!("flood messages={sent_messages}"));
    // The master reads what it can of the flood before the doorbells ring.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: the descriptors stay open while the link is (we hold it).
    let socks: Vec<BorrowedFd<'_>> = bells
        .iter()
        .map(|&fd| unsafe { BorrowedFd::borrow_raw(fd) })
        .collect();
    let mut kept = Vec::new();
    let mut outcome = Ok(());
    for (sock, tail) in socks.iter().zip(tails) {
        let sent = send_letting_go(
            *sock,
            b"!",
            &fds,
            SCM_MAX_FD - 1,
            Some(tail),
            &mut kept,
            None,
        )
        .unwrap_or(Ok(()));
        if let (Ok(()), Err(e)) = (&outcome, sent) {
            outcome = Err(e);
        }
    }
    drop(socks);
    match outcome {
        Ok(()) => report("planted ok"),
        Err(e) => report(&format!(
            "planted refused errno={}",
            crate::sock::errno_name(e.raw_os_error().unwrap_or(0))
        )),
    }
    let sent = (0..FRAMES)
        .filter(|i| tx.send(&[*i as u8; 60]).is_ok())
        .count();
    report(&format!("sent frames={sent}"));
    until_stdin_closes();
    drop((tx, link, conns, devnull));
    // Closed at exit, where the kernel skips the linger.
    std::mem::forget(kept);
    true
}

/// Sends `bytes` with `fds` on `sock`, the lingering socket of `pair`
/// (if any) at index `at`, and lets our copy of it go at once, before the
/// master can have taken and closed its own: then the master's is the
/// last reference, and whichever of its threads closes it sleeps. The
/// copy is dropped on a thread made beforehand (a hand-over, not a
/// thread's start, stands between the send and the drop), which says so
/// on `dropped` once the drop returned; should the master win anyway,
/// that thread sleeps, not this one. The never-reading end goes to
/// `kept`, as does our copy if the send failed. `None` if the thread
/// could not be made.
fn send_letting_go(
    sock: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
    at: usize,
    pair: Option<(TcpStream, TcpStream)>,
    kept: &mut Vec<TcpStream>,
    dropped: Option<std::sync::mpsc::Sender<()>>,
) -> Option<io::Result<()>> {
    let Some((client, server)) = pair else {
        return Some(send_with_fds(sock, bytes, fds));
    };
    kept.push(server);
    let (tx, rx) = std::sync::mpsc::channel::<TcpStream>();
    let dropper = std::thread::Builder::new().spawn(move || {
        if let Ok(c) = rx.recv() {
            drop(c);
            if let Some(d) = dropped {
                let _ = d.send(());
            }
        }
    });
    if dropper.is_err() {
        kept.push(client);
        return None;
    }
    let sent = {
        let mut fds: Vec<BorrowedFd<'_>> = fds.to_vec();
        if fds.is_empty() {
            fds.push(client.as_fd());
        } else {
            fds[at] = client.as_fd();
        }
        send_with_fds(sock, bytes, &fds)
    };
    if sent.is_ok() {
        let _ = tx.send(client);
    } else {
        kept.push(client);
    }
    Some(sent)
}
