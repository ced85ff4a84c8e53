//! What `vecring-bench host-container` prints: the table of rates per
//! frame size (a row per size, and on a link of several queues a row per
//! queue under it), one JSON document (schema `vecring-bench`, version 1:
//! fields are only ever added), or CSV (a line per frame size, totals).

use super::BenchArgs;
use vecring_cli::cpus;

/// The version of the JSON document's schema (`vecring-bench`).
const JSON_VERSION: u32 = 1;

/// Frames sent and received: a whole size's, or one queue's share.
#[derive(Clone, Copy, Default)]
pub struct Count {
    pub sent: u64,
    pub received: u64,
}

impl Count {
    /// Frames received per 100 sent.
    fn throughput(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.received as f64 * 100.0 / self.sent as f64
        }
    }
}

/// One frame size's results.
pub struct Row {
    pub size: usize,
    /// Seconds of the unthrottled run.
    pub secs: f64,
    /// All queues together.
    pub total: Count,
    /// Each queue's share of `total`, in queue order.
    pub queues: Vec<Count>,
    pub zero_loss_pps: Option<f64>,
    pub low_loss_pps: Option<f64>,
}

impl Row {
    fn pps(&self, frames: u64) -> f64 {
        frames as f64 / self.secs.max(1e-9)
    }
    fn mbits(&self, frames: u64) -> f64 {
        self.pps(frames) * self.size as f64 * 8.0 / 1e6
    }
}

/// The link the bench ran on, as its region says.
pub struct Setup {
    /// Where the slave runs (its namespaces).
    pub slave: &'static str,
    pub slot_count: u32,
    pub slot_size: u32,
    pub hugepages: bool,
    pub queues: u16,
}

/// `n` rounded, with thousands separated by commas.
pub(super) fn group(n: f64) -> String {
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

/// Whether the output is the table (neither `--json` nor `--csv`).
pub fn is_table(args: &BenchArgs) -> bool {
    !args.json && !args.csv
}

/// The table's heading: the set-up and the column names.
pub fn heading(args: &BenchArgs, setup: &Setup) {
    if !is_table(args) {
        return;
    }
    println!(
        "vecring-bench host-container: master (host side) on CPU {} -> slave ({}) on CPU {}",
        cpus::list(&args.master_cpu),
        setup.slave,
        cpus::list(&args.slave_cpu)
    );
    if setup.queues > 1 {
        println!(
            "  {} queue pairs, a thread per queue on each side; queue q on the (q mod count)-th CPU of each list",
            setup.queues
        );
    }
    println!(
        "  {} slots x {} B per direction, {}, batch 32, copy on both sides, {:.1} s per size",
        setup.slot_count,
        setup.slot_size,
        if setup.hugepages {
            "2 MiB hugepages"
        } else {
            "4 KiB pages (no hugepages)"
        },
        args.seconds
    );
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

/// A size's table row, then (several queues) a row per queue, named `qN`,
/// without the zero-loss columns (the searches run on all queues at once).
pub fn row(args: &BenchArgs, r: &Row) {
    if !is_table(args) {
        return;
    }
    let cell = |v: Option<f64>| v.map_or("-".to_string(), group);
    println!(
        "{:>6} | {:>12} | {:>12} | {:>10.1} | {:>8.2} % | {:>12} | {:>12}",
        r.size,
        group(r.pps(r.total.sent)),
        group(r.pps(r.total.received)),
        r.mbits(r.total.received),
        r.total.throughput(),
        cell(r.zero_loss_pps),
        cell(r.low_loss_pps),
    );
    if r.queues.len() > 1 {
        for (q, c) in r.queues.iter().enumerate() {
            println!(
                "{:>6} | {:>12} | {:>12} | {:>10.1} | {:>8.2} % | {:>12} | {:>12}",
                format!("q{q}"),
                group(r.pps(c.sent)),
                group(r.pps(c.received)),
                r.mbits(c.received),
                c.throughput(),
                "",
                "",
            );
        }
    }
}

/// After the last size: the table's notes, or the JSON document or CSV.
pub fn finish(args: &BenchArgs, setup: &Setup, rows: &[Row]) {
    if args.json {
        println!("{}", json(args, setup, rows));
    } else if args.csv {
        csv(rows);
    } else {
        println!();
        println!("Mbit/s counts frame bytes only. Throughput = frames received / frames sent.");
        if args.trial_seconds() > 0.0 {
            println!(
                "0-loss / 0.002% pps: the highest constant rate (frames offered on schedule, a frame that \
                 finds the ring full dropped) losing no frame / at most 0.002 %, in {:.2} s trials.",
                args.trial_seconds()
            );
        }
    }
}

/// The JSON document. `master_cpu` and `slave_cpu` are each list's first
/// CPU (the fields of a bench of one queue); `master_cpus`, `slave_cpus`,
/// `queues` and each row's `queues` give the rest.
fn json(args: &BenchArgs, setup: &Setup, rows: &[Row]) -> serde_json::Value {
    serde_json::json!({
        "schema": "vecring-bench",
        "version": JSON_VERSION,
        "master_cpu": args.master_cpu.first(),
        "slave_cpu": args.slave_cpu.first(),
        "master_cpus": args.master_cpu,
        "slave_cpus": args.slave_cpu,
        "queues": setup.queues,
        "slave": setup.slave,
        "slot_count": setup.slot_count,
        "slot_size": setup.slot_size,
        "hugepages": setup.hugepages,
        "seconds_per_size": args.seconds,
        "trial_seconds": args.trial_seconds(),
        "rows": rows.iter().map(|r| serde_json::json!({
            "frame_size": r.size,
            "tx_pps": r.pps(r.total.sent),
            "rx_pps": r.pps(r.total.received),
            "rx_mbit_s": r.mbits(r.total.received),
            "frames_sent": r.total.sent,
            "frames_received": r.total.received,
            "throughput_percent": r.total.throughput(),
            "zero_loss_pps": r.zero_loss_pps,
            "low_loss_pps": r.low_loss_pps,
            "queues": r.queues.iter().enumerate().map(|(q, c)| serde_json::json!({
                "queue": q,
                "tx_pps": r.pps(c.sent),
                "rx_pps": r.pps(c.received),
                "rx_mbit_s": r.mbits(c.received),
                "frames_sent": c.sent,
                "frames_received": c.received,
                "throughput_percent": c.throughput(),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// The CSV: a header line, then a line per frame size (all queues
/// together).
fn csv(rows: &[Row]) {
    println!("frame_size,tx_pps,rx_pps,rx_mbit_s,frames_sent,frames_received,throughput_percent,zero_loss_pps,low_loss_pps");
    let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
    for r in rows {
        println!(
            "{},{:.0},{:.0},{:.1},{},{},{:.3},{},{}",
            r.size,
            r.pps(r.total.sent),
            r.pps(r.total.received),
            r.mbits(r.total.received),
            r.total.sent,
            r.total.received,
            r.total.throughput(),
            cell(r.zero_loss_pps),
            cell(r.low_loss_pps)
        );
    }
}
