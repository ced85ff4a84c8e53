//! A peer that passes descriptors under a new uid each time (as an
//! unprivileged container's root can, with its 65,536 uids), on the
//! fallback path of kernels without `SO_PASSRIGHTS`: the master's
//! penalty by uid must not be escaped by changing uid.

use super::{Path, Setup, LIMIT};
use std::time::Duration;
use vecring_tests::hostile::{attacker, num, Proc};
use vecring_tests::Watchdog;

/// The rotating peer's first uid.
const FIRST_UID: u32 = 20000;
/// Its uids: more than the master remembers (64).
const UIDS: u32 = 80;
/// The first uids it uses a second time.
const AGAIN: u32 = 16;
/// Offences the master may read: one per uid it remembers, and the one
/// that finds every place taken (from then on it refuses every uid).
const READ_AT_MOST: u64 = 64 + 1;

/// `vecring-attack rotate` (root, taking each uid in turn) connects as 80
/// admitted uids, each passing a `/dev/null` with its Request, then again
/// as the first 16: the master reads at most 65 of those descriptors (one
/// per uid it remembers, then one that refuses every uid) and none of the
/// second pass. Before the table refused every uid when full, it forgot
/// the oldest to make room: it read all 96.
#[test]
fn a_peer_rotating_uids_cannot_escape_the_penalty_without_so_passrights() {
    let _w = Watchdog::new("rotating uids, fallback", LIMIT);
    vecring_tests::require_root!();
    let s = Setup::new("rotate-fb", Path::Fallback);
    let mut master = s.master_with(false, None, |c| {
        for uid in FIRST_UID..FIRST_UID + UIDS {
            c.args(["--allow-uid", &uid.to_string()]);
        }
    });
    let mut rotate = Proc::spawn(
        "rotating peer",
        attacker("rotate").args([
            format!("socket={}", s.socket().display()),
            format!("first={FIRST_UID}"),
            format!("count={UIDS}"),
            format!("again={AGAIN}"),
        ]),
    );
    let done = rotate
        .line("rotated", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", master.output()));
    eprintln!("rotating uids: {done}");
    let mut failures = Vec::new();
    let (read, again) = (num(&done, "read"), num(&done, "read_again"));
    if read == 0 {
        failures.push("no descriptor reached the master: not the fallback path".into());
    }
    if read > READ_AT_MOST {
        failures.push(format!(
            "the master read {read} offences, more than {READ_AT_MOST}"
        ));
    }
    if again > 0 {
        failures.push(format!(
            "{again} of the {AGAIN} uids that offended before were read again"
        ));
    }
    if !master.alive() {
        failures.push("the master died".into());
    }
    Setup::master_exits(&mut master, Duration::from_secs(3), &mut failures);
    rotate.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nattacker: {}\nmaster: {}",
        failures.join("\n"),
        rotate.output(),
        master.output()
    );
}
