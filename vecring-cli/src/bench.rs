//! The main job: a master (the host side) sends to a slave running in its
//! own namespaces (standing in for a container), size by size, and the
//! result is printed as the seed benchmarks' table: the rate with the
//! sender never waiting, then the zero-loss throughput (RFC 2544: the
//! highest constant offered rate at which no frame is dropped, found by
//! binary search over short trials) and the same with at most 0.002 % lost.

use crate::pin;
use clap::Args;
use std::io::IsTerminal;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use vecring_core::{HugepagePolicy, Link, Role};

/// Options of `vecring bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Frame sizes in bytes.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 128, 256, 512, 1024, 1514])]
    sizes: Vec<usize>,
    /// Seconds of traffic per size.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Seconds per trial of the zero-loss searches (about 15 trials per
    /// size); 0 skips them.
    #[arg(long, default_value_t = 0.25)]
    trial_seconds: f64,
    /// CPU of the master's sending thread.
    #[arg(long, default_value_t = 0)]
    master_cpu: usize,
    /// CPU of the slave's receiving thread.
    #[arg(long, default_value_t = 1)]
    slave_cpu: usize,
    /// Run the slave without new namespaces.
    #[arg(long)]
    no_namespaces: bool,
    /// prefer, require or never.
    #[arg(long, default_value = "prefer")]
    hugepages: HugepagePolicy,
    /// Run directory (default: a fresh one under /run or the temp dir).
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// The slave receives with the hold-back on (see `vecring rxonly
    /// --help`).
    #[arg(long)]
    hold_back: bool,
    /// Print one JSON document (schema "vecring-bench", version 1) instead
    /// of the table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV (a header line, then a line per frame size) instead of
    /// the table.
    #[arg(long)]
    csv: bool,
}

/// One frame size's results.
struct Row {
    size: usize,
    tx_pps: f64,
    rx_pps: f64,
    sent: u64,
    received: u64,
    zero_loss_pps: Option<f64>,
    low_loss_pps: Option<f64>,
}

impl Row {
    fn mbits(&self) -> f64 {
        self.rx_pps * self.size as f64 * 8.0 / 1e6
    }
    fn throughput(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.received as f64 * 100.0 / self.sent as f64
        }
    }
}

struct Slave {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Slave {
    /// Asks the slave for its receive counters.
    fn counts(&mut self) -> Result<(u64, u64), String> {
        writeln!(self.stdin, "?").map_err(|e| format!("slave gone: {e}"))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("slave gone: {e}"))?;
        let mut it = line.split_whitespace();
        match (
            it.next(),
            it.next().and_then(|v| v.parse().ok()),
            it.next().and_then(|v| v.parse().ok()),
        ) {
            (Some("rx"), Some(f), Some(b)) => Ok((f, b)),
            _ => Err(format!("slave answered '{}'", line.trim())),
        }
    }

    /// Counters once the slave has taken every frame `tx` sent (the ring
    /// drained) and its count stopped moving. A slave descheduled for a
    /// while on a busy machine only makes this wait longer; after 10 s the
    /// count is taken as it is.
    fn settled(&mut self, tx: &mut vecring_core::Sender) -> Result<(u64, u64), String> {
        let give_up = Instant::now() + Duration::from_secs(10);
        let mut last = self.counts()?;
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let now = self.counts()?;
            if (now == last && tx.unread() == 0) || Instant::now() > give_up {
                return Ok(now);
            }
            last = now;
        }
    }
}

fn default_run_dir() -> PathBuf {
    let name = format!("vecring-bench-{}", std::process::id());
    let run = PathBuf::from("/run");
    if std::fs::metadata(&run)
        .map(|m| !m.permissions().readonly())
        .unwrap_or(false)
        && std::fs::create_dir_all(run.join(&name)).is_ok()
    {
        return run.join(name);
    }
    std::env::temp_dir().join(name)
}

fn spawn_slave(
    args: &BenchArgs,
    run_dir: &std::path::Path,
) -> Result<(Slave, &'static str), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut slave_args: Vec<String> = vec![
        "rxonly".into(),
        "--role=slave".into(),
        "--domain=bench".into(),
        "--link=l0".into(),
        format!("--run-dir={}", run_dir.display()),
        format!("--cpu={}", args.slave_cpu),
        "--interval=0".into(),
    ];
    if args.hold_back {
        slave_args.push("--hold-back".into());
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unshare = ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let (mut cmd, where_) = match (args.no_namespaces, root, unshare) {
        (false, true, Some(unshare)) => {
            let mut c = Command::new(unshare);
            c.args([
                "--mount", "--uts", "--ipc", "--net", "--pid", "--fork", "--",
            ])
            .arg(&exe);
            (c, "own mount/uts/ipc/net/pid namespaces")
        }
        _ => (Command::new(&exe), "same namespaces"),
    };
    cmd.args(slave_args.drain(..))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the slave: {e}"))?;
    let stdin = child.stdin.take().ok_or("no slave stdin")?;
    let stdout = BufReader::new(child.stdout.take().ok_or("no slave stdout")?);
    Ok((
        Slave {
            child,
            stdin,
            stdout,
        },
        where_,
    ))
}

fn group(n: f64) -> String {
    let s = format!("{:.0}", n);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Runs the benchmark and prints the table.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    if let Some(bad) = args.sizes.iter().find(|&&s| !(1..=9216).contains(&s)) {
        return Err(format!("frame size {bad} is outside 1..=9216"));
    }
    let run_dir = args.run_dir.clone().unwrap_or_else(default_run_dir);
    let link = Link::builder("bench", "l0")
        .role(Role::Master)
        .run_dir(&run_dir)
        .hugepages(args.hugepages)
        .open()
        .map_err(|e| e.to_string())?;
    let (mut slave, where_) = spawn_slave(args, &run_dir)?;
    let result = measure(args, &link, &mut slave, where_);
    drop(slave.stdin);
    let status = slave.child.wait().map_err(|e| e.to_string())?;
    drop(link);
    let _ = std::fs::remove_dir(&run_dir);
    result?;
    if !status.success() {
        return Err(format!("slave exited with {status}"));
    }
    Ok(())
}

fn measure(args: &BenchArgs, link: &Link, slave: &mut Slave, where_: &str) -> Result<(), String> {
    link.wait_up(Duration::from_secs(20))
        .map_err(|e| format!("slave did not attach: {e}"))?;
    let region = link.region().ok_or("link went down")?;
    let g = region.geometry();
    if !args.json && !args.csv {
        println!(
            "vecring bench: master (host side) on CPU {} -> slave ({where_}) on CPU {}",
            args.master_cpu, args.slave_cpu
        );
        println!(
            "  {} slots x {} B per direction, {}, batch 32, copy on both sides, {:.1} s per size",
            g.slot_count(),
            g.slot_size(),
            if region.hugepages() {
                "2 MiB hugepages"
            } else {
                "4 KiB pages (no hugepages)"
            },
            args.seconds
        );
    }
    let (slots, slot_size, hugepages) = (g.slot_count(), g.slot_size(), region.hugepages());
    drop(region);
    let table = !args.json && !args.csv;
    let progress = std::io::stderr().is_terminal();
    if table {
        println!();
        println!(
            "{:>6} | {:>12} | {:>12} | {:>10} | {:>10} | {:>12} | {:>12}",
            "frame", "TX pps", "RX pps", "Mbit/s", "throughput", "0-loss pps", "0.002% pps"
        );
        println!(
            "{:-<6}-+-{:-<12}-+-{:-<12}-+-{:-<10}-+-{:-<10}-+-{:-<12}-+-{:-<12}",
            "", "", "", "", "", "", ""
        );
    }
    let mut tx = link.sender().map_err(|e| e.to_string())?;
    pin(Some(args.master_cpu));
    let never = AtomicBool::new(false);
    let mut rows = Vec::new();
    for &size in &args.sizes {
        if progress {
            eprint!(
                "\r\x1b[Kvecring bench: {size} B: sending for {:.1} s",
                args.seconds
            );
        }
        // Warm-up, not counted.
        crate::traffic::send_for(
            &mut tx,
            size,
            Instant::now() + Duration::from_millis(200),
            &never,
        )?;
        let (rx0, _) = slave.settled(&mut tx)?;
        let start = Instant::now();
        let (sent, _) = crate::traffic::send_for(
            &mut tx,
            size,
            start + Duration::from_secs_f64(args.seconds),
            &never,
        )?;
        let secs = start.elapsed().as_secs_f64();
        let (rx1, _) = slave.settled(&mut tx)?;
        let received = rx1 - rx0;
        let (tx_pps, rx_pps) = (sent as f64 / secs, received as f64 / secs);
        let (zero_loss_pps, low_loss_pps) = if args.trial_seconds > 0.0 {
            if progress {
                eprint!("\r\x1b[Kvecring bench: {size} B: searching the zero-loss rates");
            }
            let trial = Duration::from_secs_f64(args.trial_seconds);
            let mut run = |rate: f64| loss_at(&mut tx, slave, size, rate, trial);
            let zero = search(tx_pps, 0.0, 0.0, &mut run)?;
            let low = search(tx_pps, zero, LOW_LOSS, &mut run)?;
            (Some(zero), Some(low))
        } else {
            (None, None)
        };
        let row = Row {
            size,
            tx_pps,
            rx_pps,
            sent,
            received,
            zero_loss_pps,
            low_loss_pps,
        };
        if progress {
            eprint!("\r\x1b[K");
        }
        if table {
            let cell = |v: Option<f64>| v.map_or("-".to_string(), group);
            println!(
                "{:>6} | {:>12} | {:>12} | {:>10.1} | {:>8.2} % | {:>12} | {:>12}",
                size,
                group(tx_pps),
                group(rx_pps),
                row.mbits(),
                row.throughput(),
                cell(zero_loss_pps),
                cell(low_loss_pps),
            );
        }
        rows.push(row);
    }
    if args.json {
        let doc = serde_json::json!({
            "schema": "vecring-bench",
            "version": crate::ops::JSON_VERSION,
            "master_cpu": args.master_cpu,
            "slave_cpu": args.slave_cpu,
            "slave": where_,
            "slot_count": slots,
            "slot_size": slot_size,
            "hugepages": hugepages,
            "seconds_per_size": args.seconds,
            "trial_seconds": args.trial_seconds,
            "rows": rows.iter().map(|r| serde_json::json!({
                "frame_size": r.size,
                "tx_pps": r.tx_pps,
                "rx_pps": r.rx_pps,
                "rx_mbit_s": r.mbits(),
                "frames_sent": r.sent,
                "frames_received": r.received,
                "throughput_percent": r.throughput(),
                "zero_loss_pps": r.zero_loss_pps,
                "low_loss_pps": r.low_loss_pps,
            })).collect::<Vec<_>>(),
        });
        println!("{doc}");
        return Ok(());
    }
    if args.csv {
        println!("frame_size,tx_pps,rx_pps,rx_mbit_s,frames_sent,frames_received,throughput_percent,zero_loss_pps,low_loss_pps");
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
        for r in &rows {
            println!(
                "{},{:.0},{:.0},{:.1},{},{},{:.3},{},{}",
                r.size,
                r.tx_pps,
                r.rx_pps,
                r.mbits(),
                r.sent,
                r.received,
                r.throughput(),
                cell(r.zero_loss_pps),
                cell(r.low_loss_pps)
            );
        }
        return Ok(());
    }
    println!();
    println!("Mbit/s counts frame bytes only. Throughput = frames received / frames sent.");
    if args.trial_seconds > 0.0 {
        println!(
            "0-loss / 0.002% pps: the highest constant rate (frames offered on schedule, a frame that \
             finds the ring full dropped) losing no frame / at most 0.002 %, in {:.2} s trials.",
            args.trial_seconds
        );
    }
    Ok(())
}

/// The loss the 0.002 % column allows.
const LOW_LOSS: f64 = 0.002 / 100.0;

/// One trial: offers frames of `size` bytes at `rate` for `trial`; returns
/// the fraction of the offered frames the slave did not receive, or
/// infinity if the sender could not keep the rate.
fn loss_at(
    tx: &mut vecring_core::Sender,
    slave: &mut Slave,
    size: usize,
    rate: f64,
    trial: Duration,
) -> Result<f64, String> {
    let (rx0, _) = slave.settled(tx)?;
    let paced = crate::traffic::send_paced(tx, size, rate, trial)?;
    let (rx1, _) = slave.settled(tx)?;
    if !paced.kept_rate || paced.offered == 0 {
        return Ok(f64::INFINITY);
    }
    let lost = paced.offered.saturating_sub(rx1 - rx0);
    Ok(lost as f64 / paced.offered as f64)
}

/// RFC 2544-style binary search: the highest rate in `floor..=ceiling`
/// (frames per second) whose trial loses at most `max_loss`, to within 1 %
/// of `ceiling`. `floor` must be known to pass (0 always does).
fn search(
    ceiling: f64,
    floor: f64,
    max_loss: f64,
    trial: &mut impl FnMut(f64) -> Result<f64, String>,
) -> Result<f64, String> {
    if ceiling <= floor || trial(ceiling)? <= max_loss {
        return Ok(ceiling.max(floor));
    }
    let (mut pass, mut fail) = (floor, ceiling);
    while fail - pass > ceiling * 0.01 {
        let mid = (pass + fail) / 2.0;
        if trial(mid)? <= max_loss {
            pass = mid;
        } else {
            fail = mid;
        }
    }
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::search;

    /// A link that loses nothing up to `limit` frames/s and a growing
    /// share above it.
    fn link_with_limit(limit: f64) -> impl FnMut(f64) -> Result<f64, String> {
        move |rate| {
            Ok(if rate <= limit {
                0.0
            } else {
                (rate - limit) / rate
            })
        }
    }

    #[test]
    fn search_finds_the_highest_lossless_rate_within_one_percent() {
        let found = search(10e6, 0.0, 0.0, &mut link_with_limit(6.3e6)).unwrap();
        assert!(found <= 6.3e6 && found > 6.3e6 - 0.1e6, "{found}");
    }

    #[test]
    fn search_allows_the_loss_asked_for() {
        // 1 % loss at 6.3e6 / 0.99 frames/s.
        let found = search(10e6, 0.0, 0.01, &mut link_with_limit(6.3e6)).unwrap();
        assert!(found > 6.3e6 && found <= 6.3e6 / 0.99, "{found}");
    }

    #[test]
    fn search_returns_the_ceiling_when_it_passes_and_stops_at_the_floor() {
        let mut trials = 0;
        let mut counted = |_rate: f64| {
            trials += 1;
            Ok(0.0)
        };
        assert_eq!(search(5e6, 0.0, 0.0, &mut counted).unwrap(), 5e6);
        assert_eq!(trials, 1);
        let mut lossy = |_rate: f64| Ok(1.0);
        assert_eq!(search(5e6, 2e6, 0.0, &mut lossy).unwrap(), 2e6);
    }

    #[test]
    fn a_failing_trial_is_an_error() {
        let mut broken = |_rate: f64| Err("link went down".to_string());
        assert!(search(5e6, 0.0, 0.0, &mut broken).is_err());
    }
}
