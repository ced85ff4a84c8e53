//! Fake masters at a link's socket path, against a real slave (the
//! `vecring` tool, or a `Link` in the attacker helper where the time
//! `Link` drop takes is measured): each bad answer is refused with a clear
//! error, the slave never acknowledges it, and it gives up and closes
//! within a second; a process that merely holds the socket path cannot
//! pose as the master.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use vecring_tests::hostile::{
    as_nobody, attacker, describe, mkdir, num, scratch, set_mode, set_owner, tool, wait_for_path,
    Proc, NOBODY,
};
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(60);
/// The budget: refusing, exiting, or dropping the link.
const CLOSE_BUDGET: Duration = Duration::from_secs(1);

/// `run/` (root's, 0755) and `run/dom/` (root's, `dom_mode`).
struct Dirs {
    root: PathBuf,
    run: PathBuf,
}

impl Dirs {
    fn new(name: &str, dom_mode: u32) -> Dirs {
        let root = scratch(name);
        let run = root.join("run");
        mkdir(&run, 0o755);
        mkdir(&run.join("dom"), dom_mode);
        Dirs { root, run }
    }

    /// The fake master in `mode`, listening before this returns.
    fn fake(&self, mode: &str, nobody: bool) -> Proc {
        let mut cmd = attacker("fake-master");
        cmd.arg(format!("socket={}", self.run.join("dom/l0.sock").display()))
            .arg(format!("mode={mode}"));
        if nobody {
            as_nobody(&mut cmd);
        }
        let mut fake = Proc::spawn("fake master", &mut cmd);
        fake.line("listening", Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(wait_for_path(
            &self.run.join("dom/l0.sock"),
            Duration::from_secs(1)
        ));
        fake
    }

    /// The `vecring` tool as a slave of dom/l0.
    fn slave(&self, extra: &[&str]) -> Proc {
        let mut cmd = tool();
        cmd.args([
            "rxonly", "--role", "slave", "--domain", "dom", "--link", "l0",
        ])
        .arg("--run-dir")
        .arg(&self.run)
        .args(["--up-timeout", "20"])
        .args(extra);
        Proc::spawn("slave", &mut cmd)
    }

    /// A `Link` slave that gives up after 500 ms; how long its drop took
    /// and why it gave up.
    fn slave_drop(&self) -> Proc {
        Proc::spawn(
            "slave (Link)",
            attacker("slave-drop").args([
                &format!("run-dir={}", self.run.display()),
                "domain=dom",
                "link=l0",
                "up-ms=500",
            ]),
        )
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Whether the fake master received an Ack from a slave that has exited:
/// the fake master, told to stop, reads everything still waiting on its
/// connections and reports how many Acks it received in all.
fn acked(fake: &mut Proc) -> bool {
    fake.close_stdin();
    let done = fake
        .line("done", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("the fake master did not report its Acks: {e}"));
    num(&done, "acks") > 0
}

/// The fake master serves `mode`; the tool slave must exit with an error
/// containing one of `phrases` (case-insensitive) within a second of the
/// bad answer, without acknowledging it and without dying of a signal.
fn refused(mode: &str, phrases: &[&str]) {
    let d = Dirs::new(&format!("fake-{mode}"), 0o711);
    let mut fake = d.fake(mode, false);
    let mut slave = d.slave(&[]);
    fake.line("sent", Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}\n{}", slave.output()));
    let sent = Instant::now();
    let status = slave.wait(Duration::from_secs(10));
    let took = sent.elapsed();
    let mut failures = Vec::new();
    match status {
        None => failures.push("the slave is still running 10 s after the bad answer".to_string()),
        Some(s) if s.success() => failures.push("the slave exited successfully".into()),
        Some(s) if s.code().is_none() => failures.push(format!("the slave was {}", describe(s))),
        Some(_) if took > CLOSE_BUDGET => {
            failures.push(format!("the slave took {took:?} to refuse and exit"))
        }
        Some(_) => {}
    }
    let err = slave.stderr().to_lowercase();
    if !phrases.iter().any(|p| err.contains(&p.to_lowercase())) {
        failures.push(format!("the slave's error says none of {phrases:?}"));
    }
    if acked(&mut fake) {
        failures.push("the slave acknowledged the bad region".into());
    }
    assert!(
        failures.is_empty(),
        "{mode}: {}\n{}\n{}",
        failures.join("\n"),
        slave.output(),
        fake.output()
    );
}

#[test]
fn fake_master_sending_garbage_is_refused() {
    let _w = Watchdog::new("fake master: garbage", LIMIT);
    vecring_tests::require_root!();
    refused("garbage", &["magic", "protocol"]);
}

#[test]
fn fake_master_sending_a_pipe_is_refused() {
    let _w = Watchdog::new("fake master: pipe", LIMIT);
    vecring_tests::require_root!();
    refused("pipe", &["memfd", "seal"]);
}

#[test]
fn fake_master_sending_an_unsealed_memfd_is_refused() {
    let _w = Watchdog::new("fake master: unsealed", LIMIT);
    vecring_tests::require_root!();
    refused("unsealed", &["not sealed"]);
}

#[test]
fn fake_master_sending_a_memfd_too_small_is_refused() {
    let _w = Watchdog::new("fake master: too small", LIMIT);
    vecring_tests::require_root!();
    refused("small", &["size"]);
}

#[test]
fn fake_master_announcing_another_queue_count_than_its_header_is_refused() {
    let _w = Watchdog::new("fake master: queue lie", LIMIT);
    vecring_tests::require_root!();
    refused(
        "queue-lie",
        &["queue count (handshake vs header) mismatch: ours 4, theirs 1"],
    );
}

#[test]
fn fake_master_claiming_more_queues_than_its_memfd_holds_is_refused() {
    let _w = Watchdog::new("fake master: queue header", LIMIT);
    vecring_tests::require_root!();
    refused("queue-header", &["region size"]);
}

#[test]
fn fake_master_sending_a_pipe_as_a_doorbell_is_refused() {
    let _w = Watchdog::new("fake master: pipe doorbell", LIMIT);
    vecring_tests::require_root!();
    refused(
        "bell-pipe",
        &["doorbell 1 is not a socket pair made by the master (file mode"],
    );
}

#[test]
fn fake_master_sending_an_eventfd_as_a_doorbell_is_refused() {
    let _w = Watchdog::new("fake master: eventfd doorbell", LIMIT);
    vecring_tests::require_root!();
    refused(
        "bell-eventfd",
        &["doorbell 1 is not a socket pair made by the master (file mode"],
    );
}

#[test]
fn fake_master_sending_a_stream_socket_as_a_doorbell_is_refused() {
    let _w = Watchdog::new("fake master: stream doorbell", LIMIT);
    vecring_tests::require_root!();
    refused(
        "bell-stream",
        &["doorbell 1 is not a socket pair made by the master (socket domain 1, type 1"],
    );
}

#[test]
fn fake_master_sending_one_doorbell_twice_is_refused() {
    let _w = Watchdog::new("fake master: duplicate doorbell", LIMIT);
    vecring_tests::require_root!();
    refused(
        "bell-dup",
        &["doorbell 1 is not a socket pair made by the master (the same socket"],
    );
}

#[test]
fn fake_master_sending_too_few_doorbells_is_refused() {
    let _w = Watchdog::new("fake master: missing doorbell", LIMIT);
    vecring_tests::require_root!();
    refused("bell-few", &["1 doorbells for 2 rings"]);
}

#[test]
fn fake_master_truncating_the_memfd_after_sending_is_refused() {
    let _w = Watchdog::new("fake master: truncated", LIMIT);
    vecring_tests::require_root!();
    refused("truncated", &["not sealed", "size"]);
}

/// The fake master in `mode` never completes a handshake: the `Link`
/// slave gives up after its 500 ms and its drop returns within a second.
fn link_drop_is_prompt(mode: &str) {
    let d = Dirs::new(&format!("fake-{mode}"), 0o711);
    let mut fake = d.fake(mode, false);
    let mut slave = d.slave_drop();
    let line = slave.line("", Duration::from_secs(10)).unwrap_or_else(|e| {
        panic!(
            "{mode}: the slave's Link did not give up and drop within 10 s: {e}\n{}",
            fake.output()
        )
    });
    assert!(
        line.starts_with("gave-up"),
        "{mode}: the slave did not give up: {line}"
    );
    let drop_ms = num(&line, "drop_ms");
    assert!(
        drop_ms < CLOSE_BUDGET.as_millis() as u64,
        "{mode}: Link drop took {drop_ms} ms: {line}"
    );
    assert!(!acked(&mut fake), "{mode}: the slave acknowledged");
}

#[test]
fn fake_master_that_never_accepts_cannot_hang_the_slave() {
    let _w = Watchdog::new("fake master: never accepts", LIMIT);
    vecring_tests::require_root!();
    link_drop_is_prompt("never-accept");
}

#[test]
fn fake_master_that_accepts_and_says_nothing_cannot_hold_the_slave() {
    let _w = Watchdog::new("fake master: silent", LIMIT);
    vecring_tests::require_root!();
    link_drop_is_prompt("silent");
}

/// The harness itself: a fake master serving a real region, as root in
/// root's directories, is a master the slave accepts. The refusals above
/// are then the slave's checks, not a broken fake.
#[test]
fn fake_master_serving_a_real_region_as_root_is_accepted() {
    let _w = Watchdog::new("fake master: valid", LIMIT);
    vecring_tests::require_root!();
    let d = Dirs::new("fake-valid", 0o711);
    let mut fake = d.fake("valid", false);
    let mut slave = Proc::spawn(
        "slave (Link)",
        attacker("slave").args([
            &format!("run-dir={}", d.run.display()),
            "domain=dom",
            "link=l0",
            "timeout-ms=10000",
        ]),
    );
    if let Err(e) = slave.line("up", Duration::from_secs(20)) {
        panic!("{e}\n{}", fake.output());
    }
    if let Err(e) = fake.line("acked", Duration::from_secs(5)) {
        panic!("{e}\n{}", slave.output());
    }
}

/// The tool slave against an impersonating master running as `nobody`:
/// it exits with an error containing `phrase`, without acknowledging.
fn impersonation_refused(d: &Dirs, slave_extra: &[&str], phrase: &str) {
    let mut fake = d.fake("valid", true);
    let mut slave = d.slave(slave_extra);
    let status = slave.wait(Duration::from_secs(10));
    let mut failures = Vec::new();
    match status {
        None => failures.push("the slave is still running after 10 s".to_string()),
        Some(s) if s.success() => failures.push("the slave exited successfully".into()),
        Some(_) => {}
    }
    if !slave.stderr().contains(phrase) {
        failures.push(format!("the slave's error does not say '{phrase}'"));
    }
    if acked(&mut fake) {
        failures.push("the slave attached to the impersonator".into());
    }
    assert!(
        failures.is_empty(),
        "{}\n{}\n{}",
        failures.join("\n"),
        slave.output(),
        fake.output()
    );
}

/// A domain directory anyone may write lets anyone bind the socket path:
/// the slave refuses to trust it.
#[test]
fn slave_refuses_a_master_behind_a_world_writable_domain_directory() {
    let _w = Watchdog::new("impersonation: writable dir", LIMIT);
    vecring_tests::require_root!();
    let d = Dirs::new("imp-writable", 0o777);
    set_mode(&d.run.join("dom"), 0o777);
    impersonation_refused(&d, &[], "writable by group or others");
}

/// `--master-uid 0` pins the master: a process of another uid at the
/// socket path is refused, with its uid named.
#[test]
fn slave_with_master_uid_refuses_a_master_of_another_uid() {
    let _w = Watchdog::new("impersonation: master uid", LIMIT);
    vecring_tests::require_root!();
    let d = Dirs::new("imp-uid", 0o755);
    set_owner(&d.run.join("dom"), NOBODY, NOBODY);
    impersonation_refused(&d, &["--master-uid", "0"], "uid 65534");
}

/// `vecring list` (root, as an operator runs it) asks a listener that is
/// no master, which answers with a socket whose last close sleeps for an
/// hour: the tool reads the answer with a control buffer, hands the
/// descriptor to a closer and exits at once, saying what came.
#[test]
fn a_status_answer_carrying_a_lingering_socket_cannot_hang_vecring_list() {
    vecring_tests::require_root!();
    let _w = Watchdog::new("status with descriptors", LIMIT);
    let d = Dirs::new("fake-status-fds", 0o711);
    let mut fake = d.fake("status-fds", false);
    let mut list = tool();
    list.args(["list", "--json", "--run-dir"]).arg(&d.run);
    let mut list = Proc::spawn("vecring list", &mut list);
    let t0 = Instant::now();
    let status = list.wait(Duration::from_secs(10));
    let took = t0.elapsed();
    let out = list.output();
    fake.close_stdin();
    match status {
        None => panic!(
            "vecring list still runs after 10 s: {out}\n{}",
            fake.output()
        ),
        Some(_) if took > Duration::from_secs(3) => {
            panic!("vecring list took {took:?}: {out}")
        }
        Some(_) => {}
    }
    assert!(
        out.contains("file descriptors"),
        "vecring list does not say what came: {out}\n{}",
        fake.output()
    );
    eprintln!("vecring list returned in {took:?}");
}
