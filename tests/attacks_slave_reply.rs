//! A hostile slave's reply to the master's Hello, against a master in its
//! own process (the `vecring` tool, `rxonly`): an Ack carrying a
//! descriptor, an Ack naming another generation, a message of another
//! kind, and an Ack with bytes after it (a datagram longer than a
//! message). The attacker is this test, speaking the wire format on a raw
//! connection to the master's socket: it asks, takes the Hello and its
//! descriptors, and sends the reply.
//!
//! For each the master refuses the reply: it answers with a Reject naming
//! the reason and closes the connection, logs that reason, and then
//! serves the next slave: a legitimate one attaches and its frames arrive.
//! The descriptor case runs with `VECRING_NO_PASSRIGHTS=1` in the master's
//! environment, so that the descriptor reaches the master's check (on
//! Linux 6.16+ the kernel otherwise refuses it at `sendmsg`, which
//! `attacks_fds.rs` tests).

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vecring_core::internal::handshake::{self, Kind, Msg, MSG_LEN};
use vecring_core::{HugepagePolicy, Link, Role};
use vecring_tests::hostile::{scratch, tool, wait_for_path, Proc};
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(60);
const UP: Duration = Duration::from_secs(10);

/// The master and its run directory.
struct Master {
    root: PathBuf,
    run: PathBuf,
    proc: Proc,
}

impl Master {
    fn start(name: &str, no_passrights: bool) -> Master {
        let root = scratch(name);
        let run = root.join("run");
        std::fs::create_dir(&run).unwrap();
        let mut cmd = tool();
        cmd.args([
            "rxonly", "--role", "master", "--domain", "dom", "--link", "l0",
        ])
        .arg("--run-dir")
        .arg(&run)
        .args([
            "--up-timeout",
            "100",
            "--hugepages",
            "never",
            "--interval",
            "0",
        ]);
        if no_passrights {
            cmd.env("VECRING_NO_PASSRIGHTS", "1");
        }
        let mut proc = Proc::spawn("master", &mut cmd);
        let socket = run.join("dom/l0.sock");
        assert!(
            wait_for_path(&socket, Duration::from_secs(10)),
            "the master does not listen: {}",
            proc.output()
        );
        Master { root, run, proc }
    }

    fn socket(&self) -> PathBuf {
        self.run.join("dom/l0.sock")
    }

    /// The master's frame count (`rx <frames> <bytes>` for a line on its
    /// stdin).
    fn rx_frames(&mut self) -> u64 {
        self.proc.say("");
        let line = self
            .proc
            .line("rx ", Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"));
        line.split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count in {line:?}"))
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Connects as a slave, asks, and returns the connection and the Hello's
/// generation (its descriptors are dropped: the attacker maps nothing).
fn take_hello(socket: &Path) -> (vecring_core::internal::closer::PeerSocket, u64) {
    let conn = handshake::connect(socket).unwrap();
    handshake::send(&conn, &Msg::new(Kind::Request, 0), &[]).unwrap();
    let (hello, fds) = handshake::recv(&conn, UP).unwrap();
    assert_eq!(hello.kind, Kind::Hello, "the master's answer: {hello:?}");
    assert!(!fds.is_empty(), "a Hello without its region");
    (conn, hello.generation)
}

/// What the master sends after the hostile reply: a Reject (its reason
/// returned) and then the end of the connection.
fn refused(conn: &vecring_core::internal::closer::PeerSocket) -> Result<String, String> {
    let reject = match handshake::recv(conn, UP) {
        Ok((m, _)) if m.kind == Kind::Reject => m.text,
        Ok((m, _)) => return Err(format!("the master answered {m:?}")),
        Err(e) => return Err(format!("no Reject: {e}")),
    };
    match handshake::recv(conn, UP) {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(reject),
        other => Err(format!(
            "the connection stayed open after the Reject: {other:?}"
        )),
    }
}

/// Runs one hostile reply (`reply` sends it on the connection, given the
/// Hello's generation) against a fresh master; `reason` is what both the
/// Reject and the master's log must say.
fn attack(
    name: &'static str,
    no_passrights: bool,
    reason: &str,
    reply: impl FnOnce(&vecring_core::internal::closer::PeerSocket, u64),
) {
    let _w = Watchdog::new(name, LIMIT);
    let mut master = Master::start(name, no_passrights);
    let (conn, generation) = take_hello(&master.socket());
    reply(&conn, generation);
    let reject = refused(&conn).unwrap_or_else(|e| panic!("{e}\n{}", master.proc.output()));
    assert!(
        reject.contains(reason),
        "the Reject says {reject:?}, not {reason:?}"
    );
    drop(conn);

    // The next slave, a legitimate one, attaches and is served.
    let t0 = Instant::now();
    let slave = Link::builder("dom", "l0")
        .role(Role::Slave)
        .run_dir(&master.run)
        .hugepages(HugepagePolicy::Never)
        .retry_interval(Duration::from_millis(10))
        .open()
        .unwrap();
    slave
        .wait_up(UP)
        .unwrap_or_else(|e| panic!("the legitimate slave: {e}\n{}", master.proc.output()));
    let took = t0.elapsed();
    let mut tx = slave.sender().unwrap();
    for i in 0..10u8 {
        tx.send_timeout(&[i; 64], UP).unwrap();
    }
    let end = Instant::now() + UP;
    while master.rx_frames() < 10 {
        assert!(
            Instant::now() < end,
            "the legitimate slave's frames never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("{name}: refused ({reject}); a legitimate slave attached in {took:?}");
    drop(slave);

    assert!(
        master.proc.alive(),
        "the master died: {}",
        master.proc.output()
    );
    master.proc.close_stdin();
    assert!(
        master.proc.wait(Duration::from_secs(5)).is_some(),
        "the master did not exit: {}",
        master.proc.output()
    );
    let log = master.proc.stderr();
    assert!(
        log.lines()
            .any(|l| l.contains("refusing slave") && l.contains(reason)),
        "the master's log does not give the reason {reason:?}: {log}"
    );
}

#[test]
fn an_ack_carrying_a_descriptor_is_refused() {
    attack("reply-fds", true, "passed 1 file descriptors", |conn, g| {
        let file = std::fs::File::open("/dev/null").unwrap();
        handshake::send(conn, &Msg::new(Kind::Ack, g), &[file.as_fd()]).unwrap();
    });
}

#[test]
fn an_ack_for_another_generation_is_refused() {
    attack(
        "reply-generation",
        false,
        "unexpected Ack for generation",
        |conn, g| {
            handshake::send(conn, &Msg::new(Kind::Ack, g.wrapping_add(1)), &[]).unwrap();
        },
    );
}

#[test]
fn a_reply_of_another_kind_is_refused() {
    attack(
        "reply-kind",
        false,
        "unexpected Ready for generation",
        |conn, g| {
            handshake::send(conn, &Msg::new(Kind::Ready, g), &[]).unwrap();
        },
    );
}

#[test]
fn an_oversized_ack_is_refused() {
    attack(
        "reply-oversized",
        false,
        "oversized handshake message",
        |conn, g| {
            // A well-formed Ack for the right generation, with bytes after it.
            let mut bytes = Msg::new(Kind::Ack, g).encode().to_vec();
            bytes.resize(2 * MSG_LEN, 0x5a);
            handshake::send_bytes(conn, &bytes).unwrap();
        },
    );
}
