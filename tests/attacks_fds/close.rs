//! Closing a `Link` after a plant: a slave plants a lingering descriptor
//! on its doorbell ends and stays attached; the Rust master's drop of its
//! `Link` still returns within a second.

use super::{Path, Setup, LIMIT};
use std::time::Duration;
use vecring_tests::hostile::{as_nobody, attacker, num, Proc, NOBODY};
use vecring_tests::Watchdog;

/// What closing a `Link` may take, whatever the peer holds (the C API's
/// `vecring_close` promises the same).
const CLOSE_BUDGET_MS: u64 = 1000;

/// A slave plants on its doorbell ends and stays attached with frames
/// queued; the Rust master (`vecring-attack master-close`) then drops its
/// `Link`, closing the doorbell ends that hold the planted message.
fn closing_after_a_plant(path: Path, name: &str) {
    vecring_tests::require_root!();
    let s = Setup::new(name, path);
    let mut cmd = attacker("master-close");
    cmd.args([
        s.run_arg(),
        "domain=dom".into(),
        "link=l0".into(),
        format!("allow-uid={NOBODY}"),
    ]);
    if path == Path::Fallback {
        cmd.env("VECRING_NO_PASSRIGHTS", "1");
    }
    let mut master = Proc::spawn("rust master", &mut cmd);
    master
        .line("listening", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    vecring_tests::hostile::set_mode(&s.run.join("dom"), 0o711);
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
    let mut step = |prefix: &str| {
        plant
            .line(prefix, Duration::from_secs(15))
            .unwrap_or_else(|e| panic!("{e}\n{}", plant.output()))
    };
    let planted = step("planted");
    step("sent");
    let mut failures = Vec::new();
    s.check_planted(&planted, &mut failures);
    master
        .line("up", Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{e}"));
    master.say("close");
    match master.line("closed", Duration::from_secs(10)) {
        Ok(l) => {
            let ms = num(&l, "ms");
            eprintln!("{name}: {planted}; Link drop took {ms} ms");
            if ms >= CLOSE_BUDGET_MS {
                failures.push(format!("dropping the Link took {ms} ms"));
            }
        }
        Err(e) => failures.push(format!("dropping the Link did not return: {e}")),
    }
    if master.stderr().contains("left behind") {
        failures.push("the control thread was left behind, blocked".into());
    }
    if master.wait(Duration::from_secs(3)).is_none() {
        failures.push("the master did not exit after closing".into());
    }
    plant.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nattacker: {}\nmaster: {}",
        failures.join("\n"),
        plant.output(),
        master.output()
    );
}

#[test]
fn a_blocking_descriptor_on_a_doorbell_cannot_stall_closing_the_link() {
    let _w = Watchdog::new("plant doorbell, close", LIMIT);
    closing_after_a_plant(Path::Refused, "bell-close");
}

#[test]
fn a_blocking_descriptor_on_a_doorbell_cannot_stall_closing_the_link_without_so_passrights() {
    let _w = Watchdog::new("plant doorbell, close, fallback", LIMIT);
    closing_after_a_plant(Path::Fallback, "bell-close-fb");
}
