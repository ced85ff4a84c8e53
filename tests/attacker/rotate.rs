//! A peer with many uids passing descriptors under a new uid each time
//! (`rotate socket=P first=U count=N again=M`), as an unprivileged
//! container's root can (its 65,536 uids are all its own): the master
//! refuses a uid for a while after its process passed descriptors, and a
//! peer that changes uid would escape a refusal by uid alone.
//!
//! Runs as root. For each uid from `first` to `first + count - 1`, then
//! again for the first `again` of them: takes that uid as its effective
//! uid (which `SO_PEERCRED` reports), connects, sends a Request with a
//! `/dev/null` descriptor in `SCM_RIGHTS`, takes back root, and reads the
//! master's answer. Reports one line per connection, `round uid=U
//! outcome=read|refused|other pass=1|2`: `read` when the master read the
//! descriptor (its refusal says a slave sends none), `refused` when it
//! refused the uid before reading (`refused for another`); then `rotated
//! read=N refused=M read_again=K`, `read_again` counting the second pass's
//! reads. The master must not accept descriptors on this path
//! (`VECRING_NO_PASSRIGHTS=1`, or a kernel before 6.16), or every send
//! fails and the outcome is `other`.

use crate::plant::send_with_fd;
use crate::{report, sock, until_stdin_closes, Args};
use std::os::fd::AsFd;
use std::path::Path;
use std::time::Duration;
use vecring_core::internal::handshake;

/// One connection as `uid`: what the master answered.
fn round(path: &Path, uid: u32, null: &std::fs::File) -> &'static str {
    // SAFETY: seteuid has no memory preconditions; this process is
    // single-threaded, so the change is the whole process's.
    if unsafe { libc::seteuid(uid) } != 0 {
        return "other";
    }
    let conn = sock::connect(path, Duration::from_secs(1));
    // SAFETY: as above; the saved uid is root, so root comes back.
    let back = unsafe { libc::seteuid(0) };
    assert_eq!(back, 0, "cannot take back root");
    let Ok(conn) = conn else {
        return "other";
    };
    // A master that refuses the uid at once may have closed before the
    // send: its answer is read all the same.
    let _ = send_with_fd(conn.as_fd(), &sock::request(), null.as_fd());
    // A master that closes with our message unread makes the first
    // receive fail with ECONNRESET; its answer is queued behind that.
    for _ in 0..2 {
        match handshake::recv(&conn, Duration::from_secs(2)) {
            Ok((m, _)) if m.text.contains("a slave sends none") => return "read",
            Ok((m, _)) if m.text.contains("refused for another") => return "refused",
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => continue,
            _ => return "other",
        }
    }
    "other"
}

pub fn run(args: &Args) -> bool {
    let path = Path::new(args.get("socket"));
    let first = args.num("first") as u32;
    let count = args.num("count") as u32;
    let again = args.num("again") as u32;
    let Ok(null) = std::fs::File::open("/dev/null") else {
        report("error cannot open /dev/null");
        return false;
    };
    let (mut read, mut refused, mut read_again) = (0, 0, 0);
    let passes = (first..first + count)
        .map(|u| (u, 1))
        .chain((first..first + again).map(|u| (u, 2)));
    for (uid, pass) in passes {
        let outcome = round(path, uid, &null);
        match outcome {
            "read" if pass == 2 => {
                read += 1;
                read_again += 1;
            }
            "read" => read += 1,
            "refused" => refused += 1,
            _ => {}
        }
        report(&format!("round uid={uid} outcome={outcome} pass={pass}"));
    }
    report(&format!(
        "rotated read={read} refused={refused} read_again={read_again}"
    ));
    until_stdin_closes();
    true
}
