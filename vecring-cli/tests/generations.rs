//! The traffic modes across the peer's comings and goings, as the guides
//! describe them: a `txonly` master whose slave leaves waits for the next
//! one and reports each generation; its frames are Ethernet frames with
//! the addresses asked for; `rxonly` ends a wait for its peer with a
//! summary when stdin closes or on Ctrl-C, and its average counts only the
//! time the link was up; a master that refused slaves says so when it gives
//! up.

mod common;

use common::{Proc, Watchdog, TOOL};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vecring_core::{HugepagePolicy, Link, Role};

/// A run directory of this test's own, removed when dropped.
struct Scratch(String);

impl std::ops::Deref for Scratch {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("vecring-gen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    Scratch(d.to_str().unwrap().to_string())
}

/// `vecring MODE --domain d --link l --run-dir RUN --hugepages never EXTRA`,
/// stdin, stdout and stderr piped.
fn start(mode: &str, run: &str, extra: &[&str]) -> Proc {
    Proc(
        Command::new(TOOL)
            .args([mode, "--domain", "d", "--link", "l", "--run-dir", run])
            .args(["--hugepages", "never"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Waits (at most 30 s) for `child` to exit; its status code, stdout and
/// stderr.
fn finish(child: &mut Child) -> (Option<i32>, String, String) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "still running after 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap().code(), out, err)
}

/// Waits (at most 30 s) until the socket of link d/l exists under `run`.
fn socket_appears(run: &str) {
    let sock = std::path::Path::new(run).join("d/l.sock");
    let start = Instant::now();
    while !sock.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {}",
            sock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A slave of link d/l in this process, up within 30 s. One opened just
/// after the previous one closed is attached too: the master hears the
/// previous one hang up first.
fn slave(run: &str) -> Link {
    let link = Link::builder("d", "l")
        .role(Role::Slave)
        .run_dir(run)
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap();
    if let Err(e) = link.wait_up(Duration::from_secs(30)) {
        panic!("{e}");
    }
    link
}

/// The number after `label` in `text`.
fn number_after(text: &str, label: &str) -> u64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no '{label}' in:\n{text}"))
        + label.len();
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after '{label}' in:\n{text}"))
}

#[test]
fn a_master_whose_slave_leaves_waits_for_the_next_and_reports_each_generation() {
    let _w = Watchdog::new("generations", Duration::from_secs(90));
    let run = scratch("next");
    let mut master = start(
        "txonly",
        &run,
        &["--role", "master", "--seconds", "1.5", "--up-timeout", "30"],
    );
    socket_appears(&run);
    // The first slave reads for a moment and goes away.
    {
        let link = slave(&run);
        let mut rx = link.receiver().unwrap();
        let mut buf = [0u8; 64];
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(300) {
            let _ = rx.recv(&mut buf);
        }
    }
    // The second one reads until the master is done.
    let link = slave(&run);
    let mut rx = link.receiver().unwrap();
    let mut buf = [0u8; 64];
    let mut second = 0u64;
    while master.0.try_wait().unwrap().is_none() {
        while let Ok(n) = rx.recv(&mut buf) {
            if n == 0 {
                break;
            }
            second += 1;
        }
    }
    while let Ok(n) = rx.recv(&mut buf) {
        if n == 0 {
            break;
        }
        second += 1;
    }
    let (code, out, err) = finish(&mut master.0);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let generations: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("txonly: generation "))
        .collect();
    assert_eq!(generations.len(), 2, "{out}");
    assert!(generations[0].contains("the peer left"), "{out}");
    assert!(err.contains("waiting for the next one"), "{err}");
    let taken_second = number_after(generations[1], "taken by the peer ");
    assert_eq!(taken_second, second, "{out}");
    let summary = out
        .lines()
        .find(|l| l.starts_with("txonly: sent "))
        .expect(&out);
    let total = number_after(summary, "sent ");
    let first_sent = number_after(generations[0], "sent ");
    let second_sent = number_after(generations[1], "sent ");
    assert_eq!(total, first_sent + second_sent, "{out}");
}

#[test]
fn txonly_sends_ethernet_frames_with_the_addresses_asked_for() {
    let _w = Watchdog::new("frames", Duration::from_secs(60));
    let run = scratch("frames");
    let mut master = start(
        "txonly",
        &run,
        &[
            "--role",
            "master",
            "--seconds",
            "0.2",
            "--size",
            "60",
            "--src-mac",
            "02:00:00:00:0a:01",
            "--dst-mac",
            "02:00:00:00:0b:02",
        ],
    );
    socket_appears(&run);
    let link = slave(&run);
    let mut rx = link.receiver().unwrap();
    let mut buf = [0u8; 128];
    let start = Instant::now();
    let n = loop {
        match rx.recv(&mut buf) {
            Ok(n) if n > 0 => break n,
            _ => assert!(start.elapsed() < Duration::from_secs(10), "no frame"),
        }
    };
    assert_eq!(n, 60);
    assert_eq!(&buf[0..6], &[0x02, 0, 0, 0, 0x0b, 0x02], "destination");
    assert_eq!(&buf[6..12], &[0x02, 0, 0, 0, 0x0a, 0x01], "source");
    assert_eq!(&buf[12..14], &[0x88, 0xb5], "ethertype");
    assert!(buf[14..60].iter().all(|&b| b == 0x5a), "payload");
    while rx.recv(&mut buf).is_ok_and(|n| n > 0) || master.0.try_wait().unwrap().is_none() {}
    let (code, out, err) = finish(&mut master.0);
    assert_eq!(code, Some(0), "{out}\n{err}");
}

#[test]
fn txonly_frames_default_to_the_drivers_addresses_of_the_two_ends() {
    let _w = Watchdog::new("default macs", Duration::from_secs(60));
    let run = scratch("defaults");
    let mut master = start("txonly", &run, &["--role", "master", "--seconds", "0.2"]);
    socket_appears(&run);
    let link = slave(&run);
    let mut rx = link.receiver().unwrap();
    let mut buf = [0u8; 128];
    let start = Instant::now();
    while !rx.recv(&mut buf).is_ok_and(|n| n > 0) {
        assert!(start.elapsed() < Duration::from_secs(10), "no frame");
    }
    for (mac, what) in [(&buf[0..6], "destination"), (&buf[6..12], "source")] {
        assert_eq!(
            mac[0] & 0x03,
            0x02,
            "{what}: unicast, locally administered: {mac:02x?}"
        );
    }
    // The driver's default addresses differ in the role bit: the slave's
    // (destination) ends in 0, the master's (source) in 1.
    assert_eq!((buf[5] & 1, buf[11] & 1), (0, 1), "{:02x?}", &buf[..12]);
    while rx.recv(&mut buf).is_ok_and(|n| n > 0) || master.0.try_wait().unwrap().is_none() {}
    let (code, _, err) = finish(&mut master.0);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn rxonly_waiting_for_its_master_ends_with_a_summary_when_stdin_closes() {
    let _w = Watchdog::new("rxonly stdin", Duration::from_secs(60));
    let run = scratch("stdin");
    let mut rx = start("rxonly", &run, &["--up-timeout", "30"]);
    let start = Instant::now();
    while !std::path::Path::new(&*run).join("d").exists()
        && start.elapsed() < Duration::from_secs(2)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    drop(rx.0.stdin.take());
    let (code, _, err) = finish(&mut rx.0);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("rxonly: summary (stdin closed, before the peer came): frames 0"),
        "{err}"
    );
}

#[test]
fn ctrl_c_ends_a_wait_for_the_peer_with_a_summary() {
    let _w = Watchdog::new("ctrl-c", Duration::from_secs(60));
    for mode in ["rxonly", "txonly"] {
        let run = scratch(&format!("int-{mode}"));
        let mut p = start(mode, &run, &["--role", "master", "--up-timeout", "30"]);
        socket_appears(&run);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(p.0.id() as i32, libc::SIGINT) };
        let (code, out, err) = finish(&mut p.0);
        assert_eq!(code, Some(0), "{mode}: {out}\n{err}");
        let summary = match mode {
            "rxonly" => err.contains("rxonly: summary (interrupted, before the peer came)"),
            _ => out.contains("txonly: sent 0 frames"),
        };
        assert!(summary, "{mode}: {out}\n{err}");
    }
}

#[test]
fn rxonly_averages_over_the_time_the_link_was_up() {
    let _w = Watchdog::new("up time", Duration::from_secs(60));
    let run = scratch("uptime");
    let mut rx = start("rxonly", &run, &["--role", "master", "--interval", "0"]);
    socket_appears(&run);
    let mut tx = start("txonly", &run, &["--seconds", "0.3"]);
    let (code, _, err) = finish(&mut tx.0);
    assert_eq!(code, Some(0), "{err}");
    // The link stays down for two seconds before stdin closes: not
    // counted.
    std::thread::sleep(Duration::from_secs(2));
    drop(rx.0.stdin.take());
    let (code, _, err) = finish(&mut rx.0);
    assert_eq!(code, Some(0), "{err}");
    let summary = err
        .lines()
        .find(|l| l.contains("rxonly: summary"))
        .expect(&err);
    let secs: f64 = summary
        .split(" in ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        (0.2..1.5).contains(&secs),
        "up for {secs} s, not the 2.3 s of the run: {summary}"
    );
}

#[test]
fn a_master_that_refused_slaves_says_so_when_it_gives_up() {
    let _w = Watchdog::new("refused", Duration::from_secs(60));
    let run = scratch("refused");
    let mut master = start(
        "txonly",
        &run,
        &[
            "--role",
            "master",
            "--allow-uid",
            "4242",
            "--up-timeout",
            "3",
        ],
    );
    socket_appears(&run);
    let mut rx = start("rxonly", &run, &["--up-timeout", "5"]);
    let (code, _, err) = finish(&mut rx.0);
    assert_eq!(code, Some(1), "{err}");
    let (code, _, err) = finish(&mut master.0);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("was admitted in 3 s (--up-timeout): this side refused 1 since it started"),
        "{err}"
    );
}

/// `rxonly` as master receives from one slave after another and reports
/// what each generation brought; the generations add up to its summary.
#[test]
fn rxonly_reports_each_generation() {
    let _w = Watchdog::new("rxonly generations", Duration::from_secs(60));
    let run = scratch("rxgen");
    let mut rx = start("rxonly", &run, &["--role", "master", "--interval", "0"]);
    socket_appears(&run);
    let mut sent = 0;
    for _ in 0..2 {
        let mut tx = start("txonly", &run, &["--seconds", "0.2"]);
        let (code, out, err) = finish(&mut tx.0);
        assert_eq!(code, Some(0), "{out}\n{err}");
        sent += number_after(&out, "taken by the peer ");
        // The master sees this slave go before the next one comes.
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(rx.0.stdin.take());
    let (code, _, err) = finish(&mut rx.0);
    assert_eq!(code, Some(0), "{err}");
    let generations: Vec<u64> = err
        .lines()
        .filter(|l| l.starts_with("rxonly: generation "))
        .map(|l| number_after(l, "frames "))
        .collect();
    assert_eq!(generations.len(), 2, "{err}");
    let summary = err
        .lines()
        .find(|l| l.contains("rxonly: summary"))
        .expect(&err);
    assert_eq!(number_after(summary, "frames "), sent, "{err}");
    assert_eq!(generations.iter().sum::<u64>(), sent, "{err}");
}
