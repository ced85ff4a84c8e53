//! `vecring-bench host-container`: a master (the host side) sends to a slave running in
//! its own namespaces (standing in for a container), size by size, and
//! prints per size pps and Mbit/s sent and received and the throughput
//! (received over sent): the rate with the sender never waiting, then the
//! zero-loss throughput (RFC 2544: the highest constant offered rate at
//! which no frame is dropped, found by binary search over short trials)
//! and the same with at most 0.002 % lost.
//!
//! With `--forward` it is the forwarding benchmark instead ([`forward`]):
//! the far side runs in a real container and sends every frame back.
//!
//! With `--queues N` the link has N queue pairs: the master sends on each
//! from a thread of its own, the slave receives on each likewise, each
//! side's threads spread round robin over its CPU list, and every figure
//! is given per queue as well as in total (a queue's share of a paced
//! trial's rate is the rate divided by N).

mod forward;
mod report;
mod search;
mod slave;

use clap::Args;
use report::{Count, Row, Setup};
use search::search;
use slave::Slave;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use vecring_cli::cpus;
use vecring_cli::traffic::frame::{ethernet, Addresses};
use vecring_cli::traffic::{on_each_queue, send_for, send_paced, Failure};
use vecring_core::geometry::check_queues;
use vecring_core::{HugepagePolicy, Link, Role, Sender};

/// Options of `vecring-bench host-container`.
#[derive(Args)]
pub struct BenchArgs {
    /// Frame sizes in bytes [default: 64,128,256,512,1024,1514; with
    /// --forward 64,128,256,512,1024,1280,1514,9000].
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Seconds of traffic per size.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Seconds per trial of the zero-loss searches (about 15 trials per
    /// size); 0 skips them [default: 0.25; with --forward 2, the least it
    /// takes].
    #[arg(long)]
    trial_seconds: Option<f64>,
    /// Queue pairs of the link: a sending thread per queue in the master
    /// and a receiving thread per queue in the slave.
    #[arg(long, default_value_t = 1, value_name = "N", help = queues_help())]
    queues: u64,
    /// CPUs of the master's sending threads (comma-separated): queue q's
    /// on the (q mod count)-th.
    #[arg(long, value_name = "CPU,...", value_delimiter = ',', default_values_t = [0usize])]
    master_cpu: Vec<usize>,
    /// CPUs of the slave's receiving threads (comma-separated): queue q's
    /// on the (q mod count)-th.
    #[arg(long, value_name = "CPU,...", value_delimiter = ',', default_values_t = [1usize])]
    slave_cpu: Vec<usize>,
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
    /// The forwarding benchmark: the far side, in a real LXC container (or
    /// a Docker one: --container docker), sends every frame back (or, with
    /// --directions, one way), with RFC 2544 searches, latency histograms
    /// and, with --ports, DPDK's eth_vecring and net_memif in the same
    /// harness. The options marked (--forward) shape it.
    #[arg(long)]
    forward: bool,
    #[command(flatten)]
    fwd: forward::ForwardArgs,
}

/// The domain and link of the benchmarked link.
const DOMAIN: &str = "bench";
const LINK: &str = "l0";

/// The termination bench's default trial length.
const TRIAL_SECONDS: f64 = 0.25;

impl BenchArgs {
    /// Seconds per search trial of the termination bench.
    fn trial_seconds(&self) -> f64 {
        self.trial_seconds.unwrap_or(TRIAL_SECONDS)
    }

    /// The frame sizes asked for, or the mode's defaults.
    fn sizes(&self) -> Vec<usize> {
        match (self.sizes.is_empty(), self.forward) {
            (false, _) => self.sizes.clone(),
            (true, true) => forward::SIZES.to_vec(),
            (true, false) => vec![64, 128, 256, 512, 1024, 1514],
        }
    }
}

/// Runs `work` on every queue's sender at once, each in a thread pinned to
/// its CPU of `cpus` (see [`on_each_queue`]); `work` gets a flag that is
/// set when another queue's thread failed.
fn each_queue<T: Send>(
    txs: &mut [Sender],
    cpus: &[usize],
    work: impl Fn(&mut Sender, &AtomicBool) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let failure = Failure::default();
    on_each_queue(txs, cpus, &failure, |_, tx| work(tx, failure.flag()))
}

fn queues_help() -> String {
    format!(
        "Queue pairs of the link, 1..={}: a sending thread per queue in the master and a receiving thread per queue in the slave",
        vecring_core::MAX_QUEUES
    )
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

/// Runs the benchmark and prints the table.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    if args.forward {
        return forward::run(args, &args.fwd, &args.sizes());
    }
    if let Some(bad) = args.sizes().iter().find(|&&s| !(1..=9216).contains(&s)) {
        return Err(format!("frame size {bad} is outside 1..=9216"));
    }
    let queues = check_queues(args.queues).map_err(|e| format!("--queues {}: {e}", args.queues))?;
    cpus::check("--master-cpu", &args.master_cpu)?;
    cpus::check("--slave-cpu", &args.slave_cpu)?;
    let (run_dir, made_run_dir) = match &args.run_dir {
        Some(dir) => (dir.clone(), false),
        None => (default_run_dir(), true),
    };
    let domain_dir = run_dir.join(DOMAIN);
    let made_domain_dir = !domain_dir.exists();
    let result = bench(args, queues, &run_dir);
    // What the run made goes, once the link has closed: its domain
    // directory and a run directory of its own (each only if empty).
    if made_domain_dir {
        let _ = std::fs::remove_dir(&domain_dir);
    }
    if made_run_dir {
        let _ = std::fs::remove_dir(&run_dir);
    }
    result
}

/// Opens the link in `run_dir`, starts the slave, measures, and waits for
/// the slave to end.
fn bench(args: &BenchArgs, queues: u16, run_dir: &Path) -> Result<(), String> {
    let link = Link::builder(DOMAIN, LINK)
        .role(Role::Master)
        .run_dir(run_dir)
        .hugepages(args.hugepages)
        .queues(queues)
        .open()
        .map_err(|e| e.to_string())?;
    let (mut slave, where_) = slave::spawn(args, queues, run_dir)?;
    let result = measure(args, &link, &mut slave, where_);
    drop(slave.stdin);
    let status = slave.child.wait().map_err(|e| e.to_string())?;
    result?;
    if !status.success() {
        return Err(format!("slave exited with {status}"));
    }
    Ok(())
}

/// Waits for the slave, then runs every size: the unthrottled run on all
/// queues at once, then (unless `--trial-seconds 0`) the two searches, and
/// prints each size's results as they come.
fn measure(
    args: &BenchArgs,
    link: &Link,
    slave: &mut Slave,
    where_: &'static str,
) -> Result<(), String> {
    link.wait_up(Duration::from_secs(20))
        .map_err(|e| format!("slave did not attach: {e}"))?;
    let region = link.region().ok_or("link went down")?;
    let setup = Setup {
        slave: where_,
        slot_count: region.geometry().slot_count(),
        slot_size: region.geometry().slot_size(),
        hugepages: region.hugepages(),
        queues: region.queues(),
    };
    drop(region);
    report::heading(args, &setup);
    let progress = std::io::stderr().is_terminal();
    let mut txs = (0..setup.queues)
        .map(|q| link.sender_on(q))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let cpus = &args.master_cpu;
    let mut rows = Vec::new();
    for size in args.sizes() {
        if progress {
            eprint!(
                "\r\x1b[Kvecring-bench: {size} B: sending for {:.1} s",
                args.seconds
            );
        }
        let frame = ethernet(size, &Addresses::BENCH);
        let send =
            |tx: &mut Sender, stop, abort: &AtomicBool| match send_for(tx, &frame, stop, abort)? {
                b if b.down => Err("link went down".to_string()),
                b => Ok((b.frames, b.full)),
            };
        // Warm-up, not counted.
        let warm = Instant::now() + Duration::from_millis(200);
        each_queue(&mut txs, cpus, |tx, abort| send(tx, warm, abort))?;
        let rx0 = slave.settled(&mut txs)?;
        let start = Instant::now();
        let stop = start + Duration::from_secs_f64(args.seconds);
        let sent = each_queue(&mut txs, cpus, |tx, abort| send(tx, stop, abort))?;
        let secs = start.elapsed().as_secs_f64();
        let rx1 = slave.settled(&mut txs)?;
        let queues: Vec<Count> = sent
            .iter()
            .zip(rx1.0.iter().zip(&rx0.0))
            .map(|(&(sent, _), (&after, &before))| Count {
                sent,
                received: after.saturating_sub(before),
            })
            .collect();
        let total = queues.iter().fold(Count::default(), |t, c| Count {
            sent: t.sent + c.sent,
            received: t.received + c.received,
        });
        let (zero_loss_pps, low_loss_pps) = if args.trial_seconds() > 0.0 {
            if progress {
                eprint!("\r\x1b[Kvecring-bench: {size} B: searching the zero-loss rates");
            }
            let trial = Duration::from_secs_f64(args.trial_seconds());
            let ceiling = total.sent as f64 / secs.max(1e-9);
            let mut run = |rate: f64| loss_at(&mut txs, cpus, slave, size, rate, trial);
            let zero = search(ceiling, 0.0, 0.0, &mut run)?;
            let low = search(ceiling, zero, LOW_LOSS, &mut run)?;
            (Some(zero), Some(low))
        } else {
            (None, None)
        };
        if progress {
            eprint!("\r\x1b[K");
        }
        let row = Row {
            size,
            secs,
            total,
            queues,
            zero_loss_pps,
            low_loss_pps,
        };
        report::row(args, &row);
        rows.push(row);
    }
    report::finish(args, &setup, &rows);
    Ok(())
}

/// The loss the 0.002 % column allows.
const LOW_LOSS: f64 = 0.002 / 100.0;

/// One trial: offers frames of `size` bytes at `rate` for `trial`, each
/// queue its share; returns the fraction of the offered frames the slave
/// did not receive, or infinity if a sender could not keep the rate.
fn loss_at(
    txs: &mut [Sender],
    cpus: &[usize],
    slave: &mut Slave,
    size: usize,
    rate: f64,
    trial: Duration,
) -> Result<f64, String> {
    let rx0 = slave.settled(txs)?;
    let share = rate / txs.len().max(1) as f64;
    let frame = ethernet(size, &Addresses::BENCH);
    let paced = each_queue(txs, cpus, |tx, _| send_paced(tx, &frame, share, trial))?;
    let rx1 = slave.settled(txs)?;
    let offered: u64 = paced.iter().map(|p| p.offered).sum();
    if !paced.iter().all(|p| p.kept_rate) || offered == 0 {
        return Ok(f64::INFINITY);
    }
    let lost = offered.saturating_sub(rx1.total().saturating_sub(rx0.total()));
    Ok(lost as f64 / offered as f64)
}
