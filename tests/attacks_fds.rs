//! Descriptors whose last close blocks, passed by a hostile local process
//! to a root master (the `vecring` tool): a loopback TCP socket with
//! `SO_LINGER {1, 3600}` and data queued against a zero window
//! (`vecring-attack plant`), sent in `SCM_RIGHTS`
//!
//! - with the first message of a connection, by a uid the master refuses
//!   and by the one it admits;
//! - on the slave's end of every doorbell, then leaving the link, with the
//!   master's receiver asleep (`--interrupt`);
//! - on a doorbell the master's sleeping receiver muted after rings for
//!   nothing, then publishing frames without leaving: the receiver finds
//!   them by timer, takes the doorbell back and drains the planted
//!   message on the data path (and the same attack against a polling
//!   receiver);
//! - the same on a Rust master without a receiver, which then closes its
//!   `Link`: the drop returns within a second;
//! - every closer held (lingering sockets with connections from a refused
//!   uid), then a flood of descriptors through fresh connections that
//!   would fill the master's descriptor table, then a full message on the
//!   doorbell whose last descriptor lingers: the table keeps room, the
//!   receiver leaves that message unread and still counts every frame,
//!   and the offender's uid is refused afterwards while another is
//!   served.
//!
//! Each runs twice: on this kernel as it is (Linux 6.16+ refuses the
//! descriptor: `SO_PASSRIGHTS`) and with `VECRING_NO_PASSRIGHTS=1` in the
//! master's environment, the path of older kernels (Debian 12's 6.1), where
//! the descriptor arrives and must be closed off every thread that matters.
//! Asserted: a legitimate slave attaches within a second after the attack,
//! frames still arrive, and the master exits promptly when told to,
//! whatever the attacker still holds.
//!
//! The close of a `Link` after a plant, the flood, and a peer changing
//! uid with each offence are in `tests/attacks_fds/close.rs`, `flood.rs`
//! and `rotate.rs`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_tests::hostile::{
    as_nobody, as_uid, attacker, num, scratch, tool, wait_for_path, Proc, NOBODY,
};
use vecring_tests::Watchdog;

// Two attacks in files of their own (a test target's root resolves `mod`
// beside itself, so they are named by path).
#[path = "attacks_fds/close.rs"]
mod close;
#[path = "attacks_fds/flood.rs"]
mod flood;
#[path = "attacks_fds/rotate.rs"]
mod rotate;

const LIMIT: Duration = Duration::from_secs(90);
/// The budget for a legitimate slave's attach under attack.
const ATTACH_BUDGET_MS: u64 = 1000;
/// A uid that is neither root, nor the master's, nor admitted.
const STRANGER: u32 = 4242;
/// The legitimate slave's uid: admitted, as nobody (the attacker when
/// admitted) is, but another, so that refusing the attacker's uid after
/// its offence does not refuse it.
const LEGIT: u32 = 4343;

/// Which kernel path the master takes.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    /// This kernel's refusal (`SO_PASSRIGHTS`), if it has it.
    Refused,
    /// The fallback of kernels without it.
    Fallback,
}

struct Setup {
    root: PathBuf,
    run: PathBuf,
    path: Path,
}

impl Setup {
    fn new(name: &str, path: Path) -> Setup {
        let root = scratch(name);
        let run = root.join("run");
        std::fs::create_dir(&run).unwrap();
        vecring_tests::hostile::set_mode(&run, 0o755);
        Setup { root, run, path }
    }

    fn socket(&self) -> PathBuf {
        self.run.join("dom/l0.sock")
    }

    /// The root master (`vecring rxonly`) admitting nobody and [`LEGIT`], its
    /// socket and domain directory open to every local user (the
    /// attacker of the first case must reach them).
    fn master(&self, interrupt: bool) -> Proc {
        self.master_logging(interrupt, None)
    }

    /// [`master`](Self::master) with `RUST_LOG` set to `log`.
    fn master_logging(&self, interrupt: bool, log: Option<&str>) -> Proc {
        self.master_with(interrupt, log, |_| {})
    }

    /// [`master_logging`](Self::master_logging), with `more` done to its
    /// command.
    fn master_with(
        &self,
        interrupt: bool,
        log: Option<&str>,
        more: impl FnOnce(&mut Command),
    ) -> Proc {
        let mut cmd = tool();
        if let Some(l) = log {
            cmd.env("RUST_LOG", l);
        }
        cmd.args([
            "rxonly", "--role", "master", "--domain", "dom", "--link", "l0",
        ])
        .arg("--run-dir")
        .arg(&self.run)
        .args([
            "--allow-uid",
            &NOBODY.to_string(),
            "--allow-uid",
            &LEGIT.to_string(),
        ])
        .args(["--up-timeout", "100"])
        .args(["--hugepages", "never", "--interval", "0"]);
        if interrupt {
            cmd.arg("--interrupt");
        }
        if self.path == Path::Fallback {
            cmd.env("VECRING_NO_PASSRIGHTS", "1");
        }
        more(&mut cmd);
        let mut m = Proc::spawn("master", &mut cmd);
        assert!(
            wait_for_path(&self.socket(), Duration::from_secs(10)),
            "the master does not listen: {}",
            m.output()
        );
        // Open to every local user, as an operator who wants any uid to
        // reach the master's uid check would make it.
        vecring_tests::hostile::set_mode(&self.run.join("dom"), 0o711);
        vecring_tests::hostile::set_mode(&self.socket(), 0o666);
        m
    }

    fn run_arg(&self) -> String {
        format!("run-dir={}", self.run.display())
    }

    /// A legitimate slave ([`LEGIT`]); how long its attach took, in ms.
    fn legitimate_attach(&self) -> Result<u64, String> {
        let mut slave = Proc::spawn(
            "legitimate slave",
            as_uid(&mut attacker("slave"), LEGIT).args([
                &self.run_arg(),
                "domain=dom",
                "link=l0",
                "timeout-ms=10000",
            ]),
        );
        let line = slave.line("up", Duration::from_secs(30))?;
        Ok(num(&line, "ms"))
    }

    /// The attacker's uid (nobody) is refused, for having passed
    /// descriptors, when it tries to attach as a slave.
    fn offender_refused(&self, name: &str, failures: &mut Vec<String>) {
        let mut again = Proc::spawn(
            "the offender again",
            as_nobody(&mut attacker("slave")).args([
                &self.run_arg(),
                "domain=dom",
                "link=l0",
                "timeout-ms=5000",
            ]),
        );
        match again.line("error", Duration::from_secs(30)) {
            Ok(l) if l.contains("passed file descriptors") => eprintln!("{name}: offender: {l}"),
            Ok(l) => failures.push(format!("the offender was refused for another reason: {l}")),
            Err(e) => failures.push(format!("the offender was not refused: {e}")),
        }
    }

    /// What the planting said, checked against the kernel path: refused
    /// with EPERM where the kernel refuses, taken on the fallback path (so
    /// that the attack really reached the master).
    fn check_planted(&self, line: &str, failures: &mut Vec<String>) {
        let refusable = vecring_core::internal::closer::rights_refusable();
        match self.path {
            Path::Refused if refusable => {
                if !line.contains("refused errno=EPERM") {
                    failures.push(format!(
                        "SO_PASSRIGHTS should have refused the descriptor: {line}"
                    ));
                }
            }
            Path::Refused => eprintln!(
                "this kernel has no SO_PASSRIGHTS (Linux < 6.16): both runs take the fallback"
            ),
            Path::Fallback => {
                if !line.contains("planted ok") {
                    failures.push(format!(
                        "the descriptor should have reached the master: {line}"
                    ));
                }
            }
        }
    }

    /// The master's frame count (`rx <frames> <bytes>` for a line on its
    /// stdin).
    fn rx_count(master: &mut Proc) -> u64 {
        master.say("");
        master
            .line("rx ", Duration::from_secs(5))
            .ok()
            .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
            .unwrap_or(0)
    }

    /// Waits up to [`FRAMES_BOUND`] for the master to count `sent` frames;
    /// the count and how long it took (a failure if short).
    fn frames_counted(master: &mut Proc, sent: u64, failures: &mut Vec<String>) -> (u64, Duration) {
        let t0 = Instant::now();
        let mut got = 0;
        while t0.elapsed() < FRAMES_BOUND {
            got = Setup::rx_count(master);
            if got >= sent {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if got < sent {
            failures.push(format!(
                "{got} of the {sent} frames arrived within {FRAMES_BOUND:?}"
            ));
        }
        (got, t0.elapsed())
    }

    /// Stdin closed, the master exits within `bound` (no join waits for
    /// what the attacker holds).
    fn master_exits(master: &mut Proc, bound: Duration, failures: &mut Vec<String>) {
        master.close_stdin();
        let t0 = Instant::now();
        if master.wait(bound).is_none() {
            failures.push(format!(
                "the master did not exit within {bound:?} of its stdin closing"
            ));
        } else {
            eprintln!("master exited {:?} after its stdin closed", t0.elapsed());
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The end of an attack on a doorbell: the master is alive and exits
/// within 3 s of its stdin closing, whatever the attacker still holds;
/// then the attacker lets go. Fails with every failure found.
fn conclude(mut master: Proc, mut plant: Proc, mut failures: Vec<String>) {
    if !master.alive() {
        failures.push("the master died".into());
    }
    Setup::master_exits(&mut master, Duration::from_secs(3), &mut failures);
    plant.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nattacker: {}\nmaster: {}",
        failures.join("\n"),
        plant.output(),
        master.output()
    );
}

fn attach_within_budget(attach: Result<u64, String>, failures: &mut Vec<String>) {
    match attach {
        Ok(ms) if ms < ATTACH_BUDGET_MS => {}
        Ok(ms) => failures.push(format!("the legitimate slave took {ms} ms to attach")),
        Err(e) => failures.push(format!("the legitimate slave did not attach: {e}")),
    }
}

/// A planted descriptor with a connection's first message, from `uid`.
fn on_a_fresh_connection(path: Path, uid: u32, name: &str) {
    vecring_tests::require_root!();
    let s = Setup::new(name, path);
    let mut master = s.master(false);
    let mut plant = Proc::spawn(
        "attacker",
        as_uid(&mut attacker("plant"), uid).args([
            "where=hello".to_string(),
            format!("socket={}", s.socket().display()),
        ]),
    );
    let planted = plant
        .line("planted", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}\n{}", plant.output()));
    let mut failures = Vec::new();
    s.check_planted(&planted, &mut failures);
    // Let the master read and close the connection.
    std::thread::sleep(Duration::from_millis(200));
    let attach = s.legitimate_attach();
    eprintln!("{name}: {planted}; legitimate attach {attach:?} ms");
    attach_within_budget(attach, &mut failures);
    if uid == NOBODY && planted.contains("planted ok") {
        // The master read the descriptor: the attacker's uid is refused
        // for a while.
        s.offender_refused(name, &mut failures);
    }
    if !master.alive() {
        failures.push("the master died".into());
    }
    Setup::master_exits(&mut master, Duration::from_secs(3), &mut failures);
    plant.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nmaster: {}",
        failures.join("\n"),
        master.output()
    );
}

#[test]
fn a_blocking_descriptor_from_a_refused_uid_cannot_stall_the_master() {
    let _w = Watchdog::new("plant hello refused uid", LIMIT);
    on_a_fresh_connection(Path::Refused, STRANGER, "plant-stranger");
}

#[test]
fn a_blocking_descriptor_from_a_refused_uid_cannot_stall_the_master_without_so_passrights() {
    let _w = Watchdog::new("plant hello refused uid, fallback", LIMIT);
    on_a_fresh_connection(Path::Fallback, STRANGER, "plant-stranger-fb");
}

#[test]
fn a_blocking_descriptor_from_the_admitted_uid_cannot_stall_the_master() {
    let _w = Watchdog::new("plant hello admitted uid", LIMIT);
    on_a_fresh_connection(Path::Refused, NOBODY, "plant-nobody");
}

#[test]
fn a_blocking_descriptor_from_the_admitted_uid_cannot_stall_the_master_without_so_passrights() {
    let _w = Watchdog::new("plant hello admitted uid, fallback", LIMIT);
    on_a_fresh_connection(Path::Fallback, NOBODY, "plant-nobody-fb");
}

/// A real slave plants on its doorbell ends, then leaves; the master's
/// receiver sleeps (`--interrupt`).
fn on_a_doorbell(path: Path, name: &str) {
    vecring_tests::require_root!();
    let s = Setup::new(name, path);
    let mut master = s.master(true);
    let mut plant = Proc::spawn(
        "attacker",
        as_nobody(&mut attacker("plant")).args([
            "where=doorbell".to_string(),
            s.run_arg(),
            "domain=dom".into(),
            "link=l0".into(),
        ]),
    );
    plant
        .line("up", Duration::from_secs(15))
        .unwrap_or_else(|e| panic!("{e}\n{}", plant.output()));
    let planted = plant
        .line("planted", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}\n{}", plant.output()));
    let mut failures = Vec::new();
    s.check_planted(&planted, &mut failures);
    plant
        .line("left", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}\n{}", plant.output()));
    // The next slave attaches within a second, and its frames arrive on
    // the same receiving thread.
    let before = Setup::rx_count(&mut master);
    let attach = s.legitimate_attach();
    eprintln!("{name}: {planted}; legitimate attach {attach:?} ms");
    attach_within_budget(attach, &mut failures);
    let mut sender = Proc::spawn(
        "legitimate sender",
        as_nobody(&mut tool()).args([
            "txonly",
            "--role",
            "slave",
            "--domain",
            "dom",
            "--link",
            "l0",
            "--run-dir",
            &s.run.display().to_string(),
            "--seconds",
            "1",
        ]),
    );
    let _ = sender.wait(Duration::from_secs(15));
    let after = Setup::rx_count(&mut master);
    if after <= before {
        failures.push(format!(
            "a legitimate sender's frames did not arrive ({before} before, {after} after): {}",
            sender.output()
        ));
    }
    conclude(master, plant, failures);
}

#[test]
fn a_blocking_descriptor_on_a_doorbell_then_leaving_cannot_stall_the_master() {
    let _w = Watchdog::new("plant doorbell leave", LIMIT);
    on_a_doorbell(Path::Refused, "bell-leave");
}

#[test]
fn a_blocking_descriptor_on_a_doorbell_then_leaving_cannot_stall_the_master_without_so_passrights()
{
    let _w = Watchdog::new("plant doorbell leave, fallback", LIMIT);
    on_a_doorbell(Path::Fallback, "bell-leave-fb");
}

/// How long the master may take to count frames published on a muted
/// doorbell: its timer checks an idle ring at least every 64 ms.
const FRAMES_BOUND: Duration = Duration::from_secs(5);

/// A real slave rings the master's doorbells for nothing until a sleeping
/// receiver mutes them, plants on them, then stays and publishes frames.
/// `interrupt`: the master's receiver sleeps (else it polls).
fn on_a_muted_doorbell(path: Path, interrupt: bool, name: &str) {
    vecring_tests::require_root!();
    let s = Setup::new(name, path);
    // The mute is a debug line of the receiver's wait set.
    let mut master = s.master_logging(interrupt, Some("info,vecring_core::link::wait_set=debug"));
    let mut plant = Proc::spawn(
        "attacker",
        as_nobody(&mut attacker("plant")).args([
            "where=doorbell".to_string(),
            "then=frames".into(),
            s.run_arg(),
            "domain=dom".into(),
            "link=l0".into(),
        ]),
    );
    let mut step = |prefix: &str, master: &mut Proc| {
        plant
            .line(prefix, Duration::from_secs(35))
            .unwrap_or_else(|e| panic!("{e}\n{}\n{}", plant.output(), master.output()))
    };
    step("up", &mut master);
    step("rang", &mut master);
    let planted = step("planted", &mut master);
    let sent = num(&step("sent", &mut master), "frames");
    let mut failures = Vec::new();
    s.check_planted(&planted, &mut failures);
    if sent == 0 {
        failures.push("the attacker published no frame".into());
    }
    let muted = master.stderr().contains("the peer rings for nothing");
    if interrupt && !muted {
        failures.push("the sleeping receiver never muted the doorbell".into());
    }
    // The frames arrive although the doorbell is muted, with a descriptor
    // queued on it.
    let (got, took) = Setup::frames_counted(&mut master, sent, &mut failures);
    eprintln!("{name}: {planted}; muted {muted}; {got} of {sent} frames in {took:?}");
    // A sleeping receiver takes the doorbell back, sleeps on it and drains
    // what was planted there; on the fallback path the control thread then
    // says so. Elsewhere nothing is drained: a short pause lets a polling
    // receiver go on.
    let drains = interrupt && path == Path::Fallback;
    let t1 = Instant::now();
    let reached = loop {
        let r = master
            .stderr()
            .contains("passed file descriptors on a doorbell");
        if r || !drains || t1.elapsed() > FRAMES_BOUND {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!(
        "{name}: planted descriptor drained: {reached} after {:?}",
        t1.elapsed()
    );
    if drains && !reached {
        failures.push("the receiver never drained the planted descriptor".into());
    }
    if reached {
        s.offender_refused(name, &mut failures);
    }
    std::thread::sleep(Duration::from_millis(200));
    // Its receiving thread stops within its wait slice, unless it sleeps
    // in the planted descriptor's close.
    conclude(master, plant, failures);
}

#[test]
fn a_blocking_descriptor_on_a_muted_doorbell_cannot_stall_a_sleeping_receiver() {
    let _w = Watchdog::new("plant muted doorbell, interrupt", LIMIT);
    on_a_muted_doorbell(Path::Refused, true, "bell-muted-intr");
}

#[test]
fn a_blocking_descriptor_on_a_muted_doorbell_cannot_stall_a_sleeping_receiver_without_so_passrights(
) {
    let _w = Watchdog::new("plant muted doorbell, interrupt, fallback", LIMIT);
    on_a_muted_doorbell(Path::Fallback, true, "bell-muted-intr-fb");
}

#[test]
fn a_blocking_descriptor_on_a_doorbell_cannot_stall_a_polling_receiver() {
    let _w = Watchdog::new("plant doorbell, polling", LIMIT);
    on_a_muted_doorbell(Path::Refused, false, "bell-muted-poll");
}

#[test]
fn a_blocking_descriptor_on_a_doorbell_cannot_stall_a_polling_receiver_without_so_passrights() {
    let _w = Watchdog::new("plant doorbell, polling, fallback", LIMIT);
    on_a_muted_doorbell(Path::Fallback, false, "bell-muted-poll-fb");
}
