//! `vecring_close` under attack: a C master (`tests/c/close_attack.c`)
//! whose hostile slave, a separate process, planted descriptors whose last
//! close blocks; the close returns within a second, with `SO_PASSRIGHTS`
//! and on the fallback of older kernels.

use super::{c_source, compile, scratch};
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_tests::Watchdog;

/// What `vecring_close` may take whatever the peer holds (`docs/c-api.md`),
/// and the longest round of the receiving thread.
const CLOSE_BUDGET_MS: u64 = 1000;
/// The longest wait for the next progress line of the C master (it prints
/// one every 100 ms; a thread blocked in a planted close prints none for an
/// hour).
const REPORT_BOUND: Duration = Duration::from_secs(3);

/// A C master (`tests/c/close_attack.c`) receives, asleep in
/// `vecring_recv_timeout`, from a hostile slave in a separate process
/// running as `nobody` (`vecring-attack plant where=doorbell
/// then=frames`): it rings the doorbells for nothing until the sleeping
/// receiver mutes them, plants a socket whose last close sleeps for an
/// hour on each, publishes frames and stays. The frames arrive, the
/// receiving thread keeps returning, and `vecring_close` returns within a
/// second. `fallback`: the master runs with `VECRING_NO_PASSRIGHTS=1`, the
/// path of kernels without `SO_PASSRIGHTS` (before 6.16), where the
/// descriptors arrive; else this kernel refuses them if it can.
fn c_close_under_a_planted_doorbell(test: &str, fallback: bool) {
    use vecring_tests::hostile::{as_nobody, attacker, num, set_mode, Proc, NOBODY};
    vecring_tests::require_root!();
    let dir = scratch(test);
    let exe = compile(&dir, "close_attack", &[c_source("close_attack.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    // The attacker runs as nobody and must reach the socket.
    set_mode(&dir, 0o755);
    set_mode(&run_at, 0o755);
    let mut cmd = Command::new(&exe);
    cmd.arg(&run_at)
        .args(["dom", "l0", &NOBODY.to_string()])
        .env("RUST_LOG", "info");
    if fallback {
        cmd.env("VECRING_NO_PASSRIGHTS", "1");
    }
    let mut master = Proc::spawn("C master", &mut cmd);
    master
        .line("close_attack: listening", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    set_mode(&run_at.join("dom"), 0o711);
    let mut plant = Proc::spawn(
        "attacker",
        as_nobody(&mut attacker("plant")).args([
            "where=doorbell".to_string(),
            "then=frames".into(),
            format!("run-dir={}", run_at.display()),
            "domain=dom".into(),
            "link=l0".into(),
        ]),
    );
    let mut failures = Vec::new();
    let (sent, planted) = vecring_tests::hostile::muted_plant_steps(
        &mut plant,
        fallback,
        "master",
        &String::new,
        &mut failures,
    );
    // The frames arrive, and the receiving thread keeps returning after
    // that (each call sleeps 50 ms at most).
    let t0 = Instant::now();
    let mut rx = String::new();
    while t0.elapsed() < Duration::from_secs(5) {
        match master.line("close_attack: rx", REPORT_BOUND) {
            Ok(l) => rx = l,
            Err(e) => {
                failures.push(format!("the receiving thread stopped reporting: {e}"));
                break;
            }
        }
        if num(&rx, "frames") >= sent {
            break;
        }
    }
    let got = if rx.is_empty() { 0 } else { num(&rx, "frames") };
    if got < sent {
        failures.push(format!("{got} of the {sent} frames arrived within 5 s"));
    }
    let mut later = String::new();
    for _ in 0..10 {
        match master.line("close_attack: rx", REPORT_BOUND) {
            Ok(l) => later = l,
            Err(e) => {
                failures.push(format!("the receiving thread stopped returning: {e}"));
                break;
            }
        }
    }
    if !later.is_empty() && num(&later, "max_gap_ms") >= CLOSE_BUDGET_MS {
        failures.push(format!("a receive call took too long: {later}"));
    }
    // Stdin closed, the master closes its link while the attacker still
    // holds everything.
    master.close_stdin();
    match master.line("close_attack: closed", Duration::from_secs(10)) {
        Ok(l) => {
            let ms = num(&l, "ms");
            eprintln!("{test}: {planted}; {later}; vecring_close took {ms} ms");
            if ms >= CLOSE_BUDGET_MS {
                failures.push(format!("vecring_close took {ms} ms"));
            }
            if !l.contains("rc=0") {
                failures.push(format!("vecring_close failed: {l}"));
            }
        }
        Err(e) => failures.push(format!("vecring_close did not return: {e}")),
    }
    match master.wait(Duration::from_secs(5)) {
        Some(st) if st.success() => {}
        Some(st) => failures.push(format!("the C master exited with {st}")),
        None => failures.push("the C master did not exit after closing".into()),
    }
    plant.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nattacker: {}\nC master: {}",
        failures.join("\n"),
        plant.output(),
        master.output()
    );
}

#[test]
fn c_close_returns_within_a_second_under_a_planted_doorbell() {
    let _w = Watchdog::new("c close, planted doorbell", Duration::from_secs(120));
    c_close_under_a_planted_doorbell("close_attack", false);
}

#[test]
fn c_close_returns_within_a_second_under_a_planted_doorbell_without_so_passrights() {
    let _w = Watchdog::new(
        "c close, planted doorbell, fallback",
        Duration::from_secs(120),
    );
    c_close_under_a_planted_doorbell("close_attack_fb", true);
}
