//! A flood of descriptors: every closer held by a refused uid, then
//! connections carrying hundreds of descriptors and a full message on the
//! doorbell; the master's descriptor table keeps room and its receiver
//! keeps counting frames (the fallback path of kernels without
//! `SO_PASSRIGHTS`).

use super::{attach_within_budget, Path, Setup, FRAMES_BOUND, LIMIT, STRANGER};
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_tests::hostile::{as_nobody, as_uid, attacker, num, Proc};
use vecring_tests::Watchdog;

/// The master's soft `RLIMIT_NOFILE` in the flood test: small, so that
/// the flood (7 messages of 253 descriptors) would fill it.
const FLOOD_NOFILE: u64 = 600;

fn set_nofile(cmd: &mut Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls
    // only setrlimit, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
}

/// Descriptors `pid` has open.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Closers held by the hog planter: all of them (`closer::MAX_CLOSERS`).
const HOGS: u64 = 4;

/// A uid the master refuses holds every closer (`plant where=hogs`: a
/// lingering socket with each of four connections the master closes
/// unread); then a slave (nobody, admitted) sends connections with 253
/// `/dev/null` copies each (the first is read and waits behind the held
/// closers), plants a full message with a lingering last descriptor on
/// its doorbells, and publishes frames; the master sleeps on its doorbell
/// (`--interrupt`) and its table holds 600. Only on the fallback path:
/// where the kernel refuses descriptors, none arrive (the other tests show
/// the refusal).
fn flooded(name: &str) {
    vecring_tests::require_root!();
    let s = Setup::new(name, Path::Fallback);
    let mut master = s.master_with(true, Some("info,vecring_core::link::wait_set=debug"), |c| {
        set_nofile(c, FLOOD_NOFILE);
    });
    let mut hogs = Proc::spawn(
        "hog planter",
        as_uid(&mut attacker("plant"), STRANGER).args([
            "where=hogs".to_string(),
            format!("socket={}", s.socket().display()),
            format!("count={HOGS}"),
        ]),
    );
    let placed = hogs
        .line("hogs", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}\n{}", master.output()));
    assert_eq!(
        num(&placed, "placed"),
        HOGS,
        "the closers could not all be held: {placed}"
    );
    let mut plant = Proc::spawn(
        "attacker",
        as_nobody(&mut attacker("plant")).args([
            "where=flood".to_string(),
            format!("socket={}", s.socket().display()),
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
    let flood = num(&step("flood", &mut master), "messages");
    let planted = step("planted", &mut master);
    let sent = num(&step("sent", &mut master), "frames");
    let mut failures = Vec::new();
    s.check_planted(&planted, &mut failures);
    if flood == 0 {
        failures.push("no message of the flood was sent".into());
    }
    // Every frame arrives: the doorbell's message stays unread (no room)
    // and the receiver checks the ring by timer. Read into a full table,
    // the kernel would close its tail on the receiving thread, which
    // would then sleep.
    let (got, took) = Setup::frames_counted(&mut master, sent, &mut failures);
    let fds = open_fds(master.pid());
    eprintln!(
        "{name}: {placed}; {flood} messages, {planted}; {got} of {sent} frames in {took:?}; \
         the master holds {fds} descriptors"
    );
    // Room for one more message: no read could have been cut short.
    if fds + 253 > FLOOD_NOFILE as usize {
        failures.push(format!(
            "the master holds {fds} descriptors of its {FLOOD_NOFILE}: no room for a message"
        ));
    }
    // The master says it stopped reading peers, and the receiver left its
    // doorbell's message unread.
    let said = |e: &str| e.contains("are still closing") && e.contains("the closers are full");
    let t1 = Instant::now();
    while !said(&master.stderr()) && t1.elapsed() < FRAMES_BOUND {
        std::thread::sleep(Duration::from_millis(50));
    }
    let e = master.stderr();
    if !e.contains("are still closing") {
        failures.push("the master never said that it stopped reading peers".into());
    }
    if !e.contains("the closers are full") {
        failures.push("the receiver never left its doorbell for lack of room".into());
    }
    if e.contains("passed file descriptors on a doorbell") {
        failures.push("the receiver read its doorbell's message without room".into());
    }
    if !master.alive() {
        failures.push("the master died".into());
    }
    // The attackers let go: their lingering sockets' peers close, the
    // closes complete, the master reads peers again.
    for p in [&mut plant, &mut hogs] {
        p.close_stdin();
        if p.wait(Duration::from_secs(10)).is_none() {
            failures.push("an attacker did not exit".into());
        }
    }
    std::thread::sleep(Duration::from_millis(1000));
    // Another uid is served within the budget ...
    let attach = s.legitimate_attach();
    eprintln!("{name}: another uid's attach after the flood: {attach:?} ms");
    attach_within_budget(attach, &mut failures);
    // ... and the offender's uid is refused, before anything it sends is
    // read.
    s.offender_refused(name, &mut failures);
    Setup::master_exits(&mut master, Duration::from_secs(3), &mut failures);
    assert!(
        failures.is_empty(),
        "{}\nhogs: {}\nattacker: {}\nmaster: {}",
        failures.join("\n"),
        hogs.output(),
        plant.output(),
        master.output()
    );
}

#[test]
fn a_flood_of_descriptors_keeps_room_in_the_masters_table_and_its_receiver_running_without_so_passrights(
) {
    let _w = Watchdog::new("descriptor flood, fallback", LIMIT);
    flooded("flood-fb");
}
