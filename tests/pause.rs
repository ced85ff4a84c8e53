//! The operator's pause (`vecring_core::pause`, what the CRIU plugin holds
//! while it dumps a slave), asked by a separate process of a root master
//! (`vecring txonly`) with a real slave (`vecring rxonly`): the slave is
//! detached and held off while the pause lasts, attaches again as a new
//! generation after it, and every frame the master counts as taken was
//! received once; a pause from another uid is refused; a slave that does
//! not run cannot be paused, and the asker is told so in time.

use std::path::PathBuf;
use std::time::Duration;
use vecring_tests::hostile::{
    as_nobody, attacker, mkdir, scratch, tool, wait_for_path, Proc, NOBODY,
};
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(120);
/// Far above what each step takes, so that a loaded machine meets it.
const PROMPT: Duration = Duration::from_secs(30);

struct Setup {
    root: PathBuf,
    run: PathBuf,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let root = scratch(name);
        let run = root.join("run");
        mkdir(&run, 0o755);
        Setup { root, run }
    }

    fn socket(&self) -> PathBuf {
        self.run.join("dom/l0.sock")
    }

    /// The root master sending for `seconds` of link up.
    fn master(&self, seconds: &str, extra: &[&str]) -> Proc {
        let mut cmd = tool();
        cmd.args([
            "txonly", "--role", "master", "--domain", "dom", "--link", "l0",
        ])
        .args(["--seconds", seconds, "--up-timeout", "60"])
        .arg("--run-dir")
        .arg(&self.run)
        .args(extra);
        let mut m = Proc::spawn("master", &mut cmd);
        assert!(
            wait_for_path(&self.socket(), Duration::from_secs(10)),
            "the master does not listen: {}",
            m.output()
        );
        m
    }

    fn slave(&self, nobody: bool) -> Proc {
        let mut cmd = tool();
        if nobody {
            as_nobody(&mut cmd);
        }
        cmd.args([
            "rxonly", "--role", "slave", "--domain", "dom", "--link", "l0",
        ])
        .args(["--interval", "0", "--up-timeout", "60"])
        .arg("--run-dir")
        .arg(&self.run);
        Proc::spawn("slave", &mut cmd)
    }

    fn pauser(&self, nobody: bool, timeout_ms: u64) -> Proc {
        let mut cmd = attacker("pause");
        if nobody {
            as_nobody(&mut cmd);
        }
        cmd.arg(format!("socket={}", self.socket().display()))
            .arg(format!("timeout-ms={timeout_ms}"));
        Proc::spawn("pauser", &mut cmd)
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The frames the slave has received so far (`rxonly` prints its totals
/// for each line on its stdin).
fn received(slave: &mut Proc) -> u64 {
    let _ = slave.said("");
    slave.say("");
    let line = slave.line("rx ", PROMPT).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The frames the master counted as taken by its peers, in total.
fn taken(master: &mut Proc) -> u64 {
    let line = master.line("txonly: sent ", PROMPT).unwrap();
    let (_, tail) = line.split_once("taken by the peer ").unwrap();
    tail.split(';').next().unwrap().trim().parse().unwrap()
}

#[test]
fn a_pause_detaches_the_slave_holds_it_off_and_loses_no_count() {
    let _w = Watchdog::alone("pause", LIMIT);
    let s = Setup::new("pause-hold");
    let mut master = s.master("3", &[]);
    let mut slave = s.slave(false);
    master.logged("slave attached", 1, PROMPT).unwrap();
    std::thread::sleep(Duration::from_millis(500));

    let mut pauser = s.pauser(false, 15_000);
    pauser.line("paused", PROMPT).unwrap();
    // (Its log is read by a thread of its own: waited for, not looked at.)
    master.logged("asked to detach", 1, PROMPT).unwrap();
    assert!(slave.alive(), "the slave died: {}", slave.output());
    // Held off while the pause lasts: its requests wait.
    // (The slave's own lines: the master's "attached" lines are
    // rate-limited.)
    let ups = slave.stderr().matches("rxonly: link up").count();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        slave.stderr().matches("rxonly: link up").count(),
        ups,
        "the slave attached during the pause: {}",
        slave.output()
    );

    pauser.close_stdin();
    master.logged("pause by pid", 1, PROMPT).unwrap();
    slave.logged("rxonly: link up", ups + 1, PROMPT).unwrap();
    let taken = taken(&mut master);
    assert!(taken > 0, "the master sent nothing: {}", master.output());
    assert!(
        master.wait(PROMPT).is_some_and(|st| st.success()),
        "{}",
        master.output()
    );
    assert_eq!(
        received(&mut slave),
        taken,
        "the slave's count differs from what the master says it took: {} {}",
        slave.output(),
        master.output()
    );
}

#[test]
fn a_pause_from_another_uid_is_refused() {
    let _w = Watchdog::alone("pause refused", LIMIT);
    let s = Setup::new("pause-uid");
    let owner = format!("{NOBODY}:{NOBODY}");
    let mut master = s.master("30", &["--owner", &owner]);
    let mut slave = s.slave(true);
    master.logged("slave attached", 1, PROMPT).unwrap();
    let mut pauser = s.pauser(true, 5_000);
    let line = pauser.line("refused", PROMPT).unwrap();
    assert!(
        line.contains(&format!("uid {NOBODY} may not pause")),
        "{line}"
    );
    assert!(
        !master.stderr().contains("detached"),
        "the slave was detached: {}",
        master.output()
    );
    // Still attached and receiving.
    let before = received(&mut slave);
    std::thread::sleep(Duration::from_millis(300));
    assert!(received(&mut slave) > before, "{}", slave.output());
}

#[test]
fn a_slave_that_does_not_run_cannot_be_paused_and_the_asker_is_told() {
    let _w = Watchdog::alone("pause stopped", LIMIT);
    let s = Setup::new("pause-stopped");
    let mut master = s.master("30", &[]);
    let mut slave = s.slave(false);
    master.logged("slave attached", 1, PROMPT).unwrap();
    let ups = slave.stderr().matches("rxonly: link up").count();
    slave.signal(libc::SIGSTOP);
    let mut pauser = s.pauser(false, 1_500);
    let line = pauser.line("timeout", PROMPT).unwrap();
    assert!(line.contains("still holds its memory"), "{line}");
    slave.signal(libc::SIGCONT);
    // The pause ends with its asker; the slave comes back.
    pauser.close_stdin();
    slave.logged("rxonly: link up", ups + 1, PROMPT).unwrap();
}
