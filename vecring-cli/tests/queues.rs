//! The tool on links of several queue pairs (`--queues N`): txonly on four
//! queues to rxonly on four, every queue's count exact on both sides and
//! every frame whole; stress checking every frame of three queues both
//! ways; `list` and `stats` showing the count; and the refusals (a count
//! out of range, rings too large for the count, a slave requiring a count
//! the master does not have), each a message naming the option and exit
//! status 1, never a panic. The benchmark harness on several queues:
//! benches/tests/host_container.rs.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{Proc, Watchdog, TOOL};

impl Proc {
    /// Waits for the process to end; returns whether it succeeded, its
    /// stdout and its stderr.
    fn finish(mut self) -> (bool, String, String) {
        let mut stderr = self.0.stderr.take().expect("piped stderr");
        let reader = std::thread::spawn(move || {
            let mut err = String::new();
            let _ = stderr.read_to_string(&mut err);
            err
        });
        let mut out = String::new();
        let _ = self
            .0
            .stdout
            .take()
            .expect("piped stdout")
            .read_to_string(&mut out);
        let ok = self.0.wait().expect("wait for vecring").success();
        (ok, out, reader.join().unwrap_or_default())
    }
}

fn spawn(args: &[&str]) -> Proc {
    Proc(
        Command::new(TOOL)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start vecring"),
    )
}

/// Runs `vecring ARGS` to its end (the test's watchdog stops a hang);
/// returns its exit code, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(TOOL)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run vecring");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn run_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-cli-q-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The number after `key` in `line` (up to a space, `,` or `;`).
fn number_after(line: &str, key: &str) -> u64 {
    line.split(key)
        .nth(1)
        .and_then(|rest| rest.split([' ', ',', ';']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after '{key}' in '{line}'"))
}

/// The lines of `text` that start with `prefix: queue q:`, for q = 0, 1, …
/// (each present exactly once, in order, none further).
fn queue_lines<'a>(text: &'a str, prefix: &str, queues: u16) -> Vec<&'a str> {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{prefix}: queue ")))
        .collect();
    assert_eq!(lines.len(), usize::from(queues), "{text}");
    for (q, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("{prefix}: queue {q}: ")),
            "{text}"
        );
    }
    lines
}

#[test]
fn txonly_on_four_queues_reaches_rxonly_on_four_exactly() {
    let _w = Watchdog::new("txonly_rxonly", Duration::from_secs(120));
    let dir = run_dir("pair");
    let rd = dir.to_str().unwrap();
    let link = ["--domain", "p", "--link", "l0", "--run-dir", rd];
    let mut rx_args = vec!["rxonly", "--role", "master", "--queues", "4"];
    rx_args.extend(link);
    rx_args.extend(["--interval", "0", "--hugepages", "never"]);
    let mut rx = spawn(&rx_args);
    // The slave gives no --queues: it takes the master's four. It waits
    // for the master to read everything (--drain), so that what each
    // queue's sender saw taken is all the master will count.
    let mut tx_args = vec![
        "txonly",
        "--seconds",
        "0.5",
        "--drain",
        "60",
        "--up-timeout",
        "30",
    ];
    tx_args.extend(link);
    let (code, out, err) = run(&tx_args);
    assert_eq!(code, 0, "{err}");
    let mut taken = Vec::new();
    for line in queue_lines(&out, "txonly", 4) {
        let (sent, took, left) = (
            number_after(line, "sent "),
            number_after(line, "taken by the peer "),
            number_after(line, "still in the ring "),
        );
        assert!(sent > 0, "queue sent nothing: {line}");
        assert_eq!(sent, took + left, "{line}");
        taken.push(took);
    }
    let total = out
        .lines()
        .find(|l| l.starts_with("txonly: sent"))
        .unwrap_or_else(|| panic!("no total line:\n{out}"));
    assert_eq!(
        number_after(total, "taken by the peer "),
        taken.iter().sum::<u64>(),
        "{out}"
    );

    // The master reports the count to list and stats.
    let (code, list, _) = run(&["list", "--json", "--run-dir", rd]);
    assert_eq!(code, 0);
    let list: Value = serde_json::from_str(&list).unwrap_or_else(|e| panic!("{e}: {list}"));
    assert_eq!(list["links"][0]["queues"], 4, "{list}");
    let (code, stats, _) = run(&["stats", "--json", "--run-dir", rd]);
    assert_eq!(code, 0);
    let stats: Value = serde_json::from_str(&stats).unwrap_or_else(|e| panic!("{e}: {stats}"));
    assert_eq!(stats["links"][0]["queues"], 4, "{stats}");
    let (code, table, _) = run(&["stats", "p", "--run-dir", rd]);
    assert_eq!(code, 0);
    assert!(table.contains("; queues 4; "), "{table}");

    // Asked on stdin: the total, then each queue's frames and bytes; the
    // frames of each queue are those its sender saw taken, each of them
    // 64 bytes, whole.
    let mut stdin = rx.0.stdin.take().unwrap();
    let mut stdout = BufReader::new(rx.0.stdout.take().unwrap());
    let answer = loop {
        writeln!(stdin, "?").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let numbers: Vec<u64> = line
            .trim()
            .strip_prefix("rx ")
            .unwrap_or_else(|| panic!("answer '{line}'"))
            .split(' ')
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(numbers.len(), 2 + 2 * 4, "{line}");
        if numbers[2..].iter().step_by(2).eq(taken.iter()) {
            break numbers;
        }
        // The receivers publish their counts just after releasing the
        // frames the sender saw taken: ask again.
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(answer[0], taken.iter().sum::<u64>(), "{answer:?}");
    assert_eq!(answer[1], answer[0] * 64, "{answer:?}");
    for q in 0..4 {
        assert_eq!(answer[3 + 2 * q], answer[2 + 2 * q] * 64, "{answer:?}");
    }
    drop(stdin); // stdin closed: rxonly ends with its summary
    let status = rx.0.wait().unwrap();
    let mut err = String::new();
    rx.0.stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    for (line, &took) in queue_lines(&err, "rxonly", 4).iter().zip(&taken) {
        assert_eq!(number_after(line, "frames "), took, "{line}");
        assert_eq!(number_after(line, "bytes "), took * 64, "{line}");
    }
    let summary = err
        .lines()
        .find(|l| l.contains("summary (stdin closed)"))
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        number_after(summary, "frames "),
        taken.iter().sum::<u64>(),
        "{summary}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stress_checks_every_frame_of_three_queues_both_ways() {
    let _w = Watchdog::new("stress", Duration::from_secs(120));
    let dir = run_dir("stress");
    let rd = dir.to_str().unwrap();
    let link = ["--domain", "s", "--link", "l0", "--run-dir", rd];
    let mut master_args = vec!["stress", "--role", "master", "--queues", "3"];
    master_args.extend(link);
    master_args.extend(["--frames", "3000", "--hugepages", "never"]);
    let master = spawn(&master_args);
    let mut slave_args = vec!["stress", "--frames", "3000"];
    slave_args.extend(link);
    let (code, out, err) = run(&slave_args);
    assert_eq!(code, 0, "{err}");
    let (ok, output, err) = master.finish();
    assert!(ok, "{err}");
    for (side, text) in [("slave", out.as_str()), ("master", output.as_str())] {
        let prefix = format!("vecring stress ({side})");
        for line in queue_lines(text, &prefix, 3) {
            assert!(
                line.ends_with("sent 3000 frames, received 3000 frames, all intact and in order"),
                "{line}"
            );
        }
        assert!(
            text.contains(&format!(
                "{prefix}: sent 9000 frames, received 9000 frames, all intact and in order"
            )),
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A refused option: exit 1, `want` in the message, no link opened, no
/// panic.
fn refused(args: &[&str], want: &str) {
    let (code, _, err) = run(args);
    assert_eq!(code, 1, "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: want '{want}' in:\n{err}");
    assert!(
        !err.contains("waiting for"),
        "{args:?} opened a link:\n{err}"
    );
    assert!(!err.contains("panicked"), "{args:?}:\n{err}");
}

#[test]
fn queue_counts_out_of_range_are_refused_before_the_link_opens() {
    let _w = Watchdog::new("out_of_range", Duration::from_secs(60));
    let dir = run_dir("range");
    let rd = dir.to_str().unwrap();
    let link = ["--domain", "d", "--link", "l", "--run-dir", rd];
    for mode in ["txonly", "rxonly", "stress"] {
        for role in ["master", "slave"] {
            for (n, want) in [
                ("0", "--queues 0: queue count 0 is not between 1 and 16"),
                ("17", "--queues 17: queue count 17 is not between 1 and 16"),
                (
                    "70000",
                    "--queues 70000: queue count 70000 is not between 1 and 16",
                ),
            ] {
                let mut args = vec![mode, "--role", role, "--queues", n];
                args.extend(link);
                refused(&args, want);
            }
        }
    }
    // Sixteen queues of rings that large make a region no slave accepts.
    let mut args = vec![
        "txonly",
        "--role",
        "master",
        "--queues",
        "16",
        "--slots",
        "262144",
        "--slot-size",
        "1024",
    ];
    args.extend(link);
    refused(
        &args,
        "--queues/--slots/--slot-size: 16 queue pairs of 262144 slots of 1024 bytes need a region of",
    );
    // The help states the range.
    for mode in ["txonly", "rxonly", "stress"] {
        let (code, out, _) = run(&[mode, "--help"]);
        assert_eq!(code, 0);
        assert!(out.contains("1..=16"), "{mode} --help:\n{out}");
    }
    // Not a number: a usage error (status 2), named by the parser.
    let mut args = vec!["rxonly", "--queues", "two"];
    args.extend(link);
    let (code, _, err) = run(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--queues"), "{err}");
}

#[test]
fn a_slave_requiring_another_count_is_told_the_masters() {
    let _w = Watchdog::new("mismatch", Duration::from_secs(90));
    let dir = run_dir("mismatch");
    let rd = dir.to_str().unwrap();
    let link = ["--domain", "m", "--link", "l0", "--run-dir", rd];
    let mut master_args = vec!["txonly", "--role", "master", "--queues", "4"];
    master_args.extend(link);
    master_args.extend(["--up-timeout", "60", "--hugepages", "never"]);
    let _master = spawn(&master_args);
    // txonly: rxonly ends its wait when its stdin closes, and this one's
    // is empty.
    let mut slave_args = vec!["txonly", "--queues", "2", "--up-timeout", "30"];
    slave_args.extend(link);
    let (code, _, err) = run(&slave_args);
    assert_eq!(code, 1, "{err}");
    let sock = format!("{rd}/m/l0.sock");
    assert!(
        err.contains(&format!(
            "--queues 2: the master on {sock} has 4 queue pairs; give --queues 4, or leave --queues out to take the master's count"
        )),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// CPU time of process `pid` in clock ticks (utime + stime).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which ends with the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// `rxonly --interrupt` on two queues counts every frame txonly's senders
/// saw taken, and while its peer is up and silent its threads sleep: over
/// two idle seconds the whole process uses a few ticks, where two polling
/// threads would use two CPUs (400 ticks).
#[test]
fn rxonly_interrupt_counts_everything_and_sleeps_while_idle() {
    let _w = Watchdog::new("rxonly_interrupt", Duration::from_secs(120));
    let dir = run_dir("intr");
    let rd = dir.to_str().unwrap();
    let link = ["--domain", "p", "--link", "l0", "--run-dir", rd];
    let mut rx_args = vec!["rxonly", "--role", "master", "--queues", "2", "--interrupt"];
    rx_args.extend(link);
    rx_args.extend(["--interval", "0", "--hugepages", "never"]);
    let mut rx = spawn(&rx_args);
    let mut taken = 0;
    for round in 0..2 {
        let mut tx_args = vec![
            "txonly",
            "--seconds",
            "0.3",
            "--drain",
            "60",
            "--up-timeout",
            "30",
        ];
        tx_args.extend(link);
        let (code, out, err) = run(&tx_args);
        assert_eq!(code, 0, "round {round}: {err}");
        let total = out
            .lines()
            .find(|l| l.starts_with("txonly: sent"))
            .unwrap_or_else(|| panic!("no total line:\n{out}"));
        taken += number_after(total, "taken by the peer ");
        if round == 0 {
            // A slave that holds the link up and sends nothing: the
            // master's rings stay empty, and its receivers sleep.
            let mut idle_args = vec!["rxonly", "--interval", "0", "--up-timeout", "30"];
            idle_args.extend(link);
            let mut idle = spawn(&idle_args);
            let t0 = Instant::now();
            loop {
                let (_, list, _) = run(&["list", "--json", "--run-dir", rd]);
                let v: Value = serde_json::from_str(&list).unwrap_or(Value::Null);
                if v["links"][0]["state"] == "up" {
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "the idle slave did not attach: {list}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(300));
            let before = cpu_ticks(rx.0.id());
            std::thread::sleep(Duration::from_secs(2));
            let used = cpu_ticks(rx.0.id()) - before;
            assert!(
                used < 20,
                "idle rxonly --interrupt used {used} ticks in 2 s"
            );
            let _ = idle.0.kill();
            let _ = idle.0.wait();
        }
    }
    let mut stdin = rx.0.stdin.take().unwrap();
    let mut stdout = BufReader::new(rx.0.stdout.take().unwrap());
    let t0 = Instant::now();
    loop {
        writeln!(stdin, "?").unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let frames: u64 = line.split(' ').nth(1).unwrap().parse().unwrap();
        if frames == taken {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "rxonly counted {line} of {taken}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    assert!(rx.0.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}
