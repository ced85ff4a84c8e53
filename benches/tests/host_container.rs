//! `vecring-bench host-container` end to end: a master and a slave process
//! (the slave in its own namespaces when run as root) print the table of
//! rates per frame size with the zero-loss columns, and nothing sent is
//! lost; on two queues each queue is reported; a run leaves no directory
//! it made behind; a queue count or CPU out of range is refused before a
//! link opens.

use serde_json::Value;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The harness under test.
const HARNESS: &str = env!("CARGO_BIN_EXE_vecring-bench");

/// One benchmark at a time: two of them on this two-CPU machine starve
/// each other's receivers, and a lossless rate would then be missing for a
/// reason that is not the harness's.
static ONE_BENCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `vecring-bench ARGS`, killing it if it outlives `limit` (the
/// watchdog); returns its exit success and stdout.
fn run_with_watchdog(args: &[&str], limit: Duration) -> (bool, String) {
    let _alone = ONE_BENCH.lock().unwrap_or_else(|p| p.into_inner());
    let mut child = Command::new(HARNESS)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start vecring-bench");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for vecring-bench") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vecring-bench {args:?} still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut out)
        .expect("read stdout");
    (status.success(), out)
}

fn number(cell: &str) -> u64 {
    cell.trim()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("'{cell}' is not a count: {e}"))
}

#[test]
fn host_container_prints_the_table_with_zero_loss_rates_and_loses_nothing_sent() {
    let (ok, out) = run_with_watchdog(
        &[
            "host-container",
            "--sizes",
            "64,1514",
            "--seconds",
            "0.3",
            "--trial-seconds",
            "0.05",
        ],
        Duration::from_secs(120),
    );
    assert!(ok, "vecring-bench host-container failed:\n{out}");
    let header = out
        .lines()
        .find(|l| l.trim_start().starts_with("frame |"))
        .unwrap_or_else(|| panic!("no table header:\n{out}"));
    assert!(
        header.contains("0-loss pps") && header.contains("0.002% pps"),
        "{header}"
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split('|').collect::<Vec<_>>())
        .filter(|cells| cells.len() == 7 && cells[0].trim().parse::<usize>().is_ok())
        .collect();
    let sizes: Vec<usize> = rows.iter().map(|r| r[0].trim().parse().unwrap()).collect();
    assert_eq!(sizes, [64, 1514], "{out}");
    for row in &rows {
        let (tx, rx) = (number(row[1]), number(row[2]));
        assert!(tx > 0, "nothing sent: {row:?}");
        // The sender waits for room: every frame it sent arrives.
        assert_eq!(rx, tx, "{row:?}");
        assert_eq!(row[4].trim(), "100.00 %", "{row:?}");
        let (zero, low) = (number(row[5]), number(row[6]));
        // Some constant rate loses nothing (a broken pacer or loss count
        // finds none); allowing a little loss can only raise the rate, and
        // the search stays under the unthrottled rate.
        assert!(zero > 0, "no lossless rate found: {row:?}");
        assert!(zero <= low && low <= tx, "{row:?}");
    }
}

#[test]
fn host_container_writes_json_and_csv_for_scripts() {
    let (ok, out) = run_with_watchdog(
        &[
            "host-container",
            "--sizes",
            "64,1514",
            "--seconds",
            "0.2",
            "--trial-seconds",
            "0",
            "--json",
        ],
        Duration::from_secs(120),
    );
    assert!(ok, "vecring-bench host-container --json failed:\n{out}");
    let doc: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["schema"], "vecring-bench");
    assert_eq!(doc["version"], 1);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{out}");
    for (row, size) in rows.iter().zip([64, 1514]) {
        assert_eq!(row["frame_size"], size);
        assert!(row["frames_sent"].as_u64().unwrap() > 0, "{row}");
        assert_eq!(row["frames_sent"], row["frames_received"], "{row}");
        assert_eq!(row["zero_loss_pps"], Value::Null, "trials were skipped");
    }

    let (ok, out) = run_with_watchdog(
        &[
            "host-container",
            "--sizes",
            "128",
            "--seconds",
            "0.2",
            "--trial-seconds",
            "0",
            "--csv",
        ],
        Duration::from_secs(120),
    );
    assert!(ok, "vecring-bench host-container --csv failed:\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("frame_size,tx_pps,rx_pps"), "{out}");
    let cells: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(cells.len(), 9, "{out}");
    assert_eq!(cells[0], "128");
    assert_eq!(cells[4], cells[5], "sent and received: {out}");
}

#[test]
fn host_container_on_two_queues_reports_each_queue_and_loses_nothing_sent() {
    let common = [
        "host-container",
        "--queues",
        "2",
        "--master-cpu",
        "0,1",
        "--slave-cpu",
        "1,0",
        "--seconds",
        "0.2",
        "--trial-seconds",
        "0",
    ];
    let limit = Duration::from_secs(120);
    let mut args = common.to_vec();
    args.extend(["--sizes", "64,1514", "--json"]);
    let (ok, out) = run_with_watchdog(&args, limit);
    assert!(ok, "vecring-bench {args:?} failed:\n{out}");
    let doc: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["schema"], "vecring-bench");
    assert_eq!(doc["queues"], 2, "{doc}");
    assert_eq!(doc["master_cpu"], 0, "{doc}");
    assert_eq!(doc["master_cpus"], serde_json::json!([0, 1]), "{doc}");
    assert_eq!(doc["slave_cpus"], serde_json::json!([1, 0]), "{doc}");
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{doc}");
    for row in rows {
        let queues = row["queues"].as_array().unwrap();
        assert_eq!(queues.len(), 2, "{row}");
        let (mut sent, mut received) = (0, 0);
        for (q, queue) in queues.iter().enumerate() {
            assert_eq!(queue["queue"], q, "{row}");
            let s = queue["frames_sent"].as_u64().unwrap();
            assert!(s > 0, "queue {q} sent nothing: {row}");
            // The senders wait for room: every frame sent arrives, on
            // its own queue.
            assert_eq!(queue["frames_received"], s, "{row}");
            sent += s;
            received += queue["frames_received"].as_u64().unwrap();
        }
        assert_eq!(row["frames_sent"], sent, "{row}");
        assert_eq!(row["frames_received"], received, "{row}");
    }

    // The table: a row per size, then a row per queue under it.
    let mut args = common.to_vec();
    args.extend(["--sizes", "128"]);
    let (ok, out) = run_with_watchdog(&args, limit);
    assert!(ok, "vecring-bench {args:?} failed:\n{out}");
    let cells: Vec<Vec<String>> = out
        .lines()
        .map(|l| l.split('|').map(|c| c.trim().replace(',', "")).collect())
        .filter(|c: &Vec<String>| c.len() == 7)
        .collect();
    let names: Vec<&str> = cells.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(names, ["frame", "128", "q0", "q1"], "{out}");
    for c in &cells[1..] {
        assert!(c[1].parse::<u64>().unwrap() > 0, "{out}");
        assert_eq!(c[1], c[2], "TX and RX pps of {}: {out}", c[0]);
        assert_eq!(c[4], "100.00 %", "{out}");
    }
}

/// A refused option: exit 1, `want` in the message, no link opened, no
/// panic.
fn refused(args: &[&str], want: &str) {
    let out = Command::new(HARNESS)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run vecring-bench");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: want '{want}' in:\n{err}");
    assert!(
        !err.contains("waiting for"),
        "{args:?} opened a link:\n{err}"
    );
    assert!(!err.contains("panicked"), "{args:?}:\n{err}");
}

#[test]
fn queue_counts_and_cpus_out_of_range_are_refused_before_the_link_opens() {
    let _w = vecring_tests::Watchdog::new("refusals", Duration::from_secs(60));
    refused(
        &["host-container", "--queues", "17"],
        "--queues 17: queue count 17 is not between 1 and 16",
    );
    refused(
        &["host-container", "--queues", "2", "--master-cpu", "0,4000"],
        "--master-cpu 4000: no such CPU",
    );
    // The help states the range.
    let out = Command::new(HARNESS)
        .args(["host-container", "--help"])
        .output()
        .expect("run vecring-bench");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("1..=16"), "host-container --help:\n{help}");
}

#[test]
fn host_container_removes_the_domain_directory_it_made_and_keeps_the_run_directory_given() {
    let run_dir = std::env::temp_dir().join(format!("vecring-bench-hc-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir).unwrap();
    let (ok, out) = run_with_watchdog(
        &[
            "host-container",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--sizes",
            "64",
            "--seconds",
            "0.1",
            "--trial-seconds",
            "0",
        ],
        Duration::from_secs(120),
    );
    let left: Vec<_> = std::fs::read_dir(&run_dir)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    let kept = run_dir.is_dir();
    let _ = std::fs::remove_dir_all(&run_dir);
    assert!(ok, "vecring-bench host-container failed:\n{out}");
    assert!(kept, "the run directory given was removed");
    assert!(left.is_empty(), "left in the run directory: {left:?}");
}
