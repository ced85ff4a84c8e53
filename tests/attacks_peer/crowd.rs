//! Two admitted uids: one keeps the master's waiting connections full of
//! its own requests and never answers an offer, the other still attaches.

use super::{Setup, LIMIT};
use std::time::Duration;
use vecring_tests::hostile::{as_nobody, as_uid, attacker, num, set_mode, Proc, NOBODY};
use vecring_tests::Watchdog;

/// The other admitted uid, the legitimate slave's.
const OTHER: u32 = 4343;
/// How long the legitimate slave may take: the crowding uid's offer in
/// progress runs out (the master's handshake timeout, 2 s), the back-off
/// after it (at most 400 ms), and a request's wait for its turn (1 s).
const CROWD_BOUND_MS: u64 = 5000;

/// Nobody connects and asks in a loop, holding its newest 64 connections
/// and answering no offer; a slave of another admitted uid attaches within
/// [`CROWD_BOUND_MS`]. Before each uid kept its share of the waiting
/// connections, every new request pushed out the oldest, the other uid's
/// among them, and it did not attach within 10 s.
#[test]
fn an_admitted_uid_crowding_the_waiting_requests_cannot_keep_another_out() {
    let _w = Watchdog::alone("crowded requests", LIMIT);
    vecring_tests::require_root!();
    let s = Setup::new("crowd");
    let mut master = s.master(
        "rxonly",
        &[
            "--hugepages",
            "never",
            "--allow-uid",
            &NOBODY.to_string(),
            "--allow-uid",
            &OTHER.to_string(),
            "--up-timeout",
            "100",
        ],
    );
    // Reachable by both uids.
    set_mode(&s.run.join("dom"), 0o711);
    set_mode(&s.socket(), 0o666);
    let mut crowd = Proc::spawn(
        "crowd",
        as_nobody(&mut attacker("crowd")).args([&s.socket_arg(), "hold=64"]),
    );
    crowd
        .line("crowding", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}\n{}", master.output()));
    std::thread::sleep(Duration::from_millis(300));
    let mut slave = Proc::spawn(
        "other uid's slave",
        as_uid(&mut attacker("slave"), OTHER).args([
            &s.run_arg(),
            "domain=dom",
            "link=l0",
            "timeout-ms=10000",
        ]),
    );
    let attach = slave.line("up", Duration::from_secs(30));
    crowd.close_stdin();
    let crowded = crowd.line("crowded", Duration::from_secs(10));
    eprintln!("crowded requests: the other uid's attach {attach:?}; crowd {crowded:?}");
    let mut failures = Vec::new();
    match &attach {
        Ok(l) if num(l, "ms") < CROWD_BOUND_MS => {}
        Ok(l) => failures.push(format!("the other uid's slave took too long: {l}")),
        Err(e) => failures.push(format!(
            "the other uid's slave did not attach: {e}\n{}",
            slave.output()
        )),
    }
    if !master.alive() {
        failures.push("the master died".into());
    }
    assert!(
        failures.is_empty(),
        "{}\ncrowd: {crowded:?}\n{}",
        failures.join("\n"),
        master.output()
    );
}
