//! `vecring-bench host-container --forward`: the forwarding benchmark. The host side
//! generates numbered, time-stamped UDP frames on a port; the far side, in
//! a real container ([`container`]: LXC, or Docker with an image made for
//! the run, [`image`]), swaps MACs and sends each frame back
//! (or, one way, only counts, or generates itself); the host side counts
//! what returns. Per frame size: the generator's and the container's
//! rates, throughput, loss, reordering and duplicates; the zero-loss and
//! 0.002 %-loss rates by RFC 2544 binary search with re-verification; and
//! the latency histogram under load at 50 %, 90 % and 100 % of the
//! zero-loss rate.
//!
//! The same harness drives a Rust link (`vecring-bench agent` at both ends) and
//! DPDK ports (`benches/dpdk-agent` on the host, `dpdk-testpmd
//! --forward-mode=macswap` or `io` in the container) of either kind, eth_vecring
//! or net_memif; with several ports, each size is measured on each in
//! turn, the order alternating from round to round, and the report gives
//! the ratios ([`rig`], [`table`]).

mod container;
mod image;
mod peer;
mod placement;
mod rig;
mod table;

use super::search::{search_verified, Trial as Step};
use super::BenchArgs;
use crate::agent::command::{GenArgs, MAX_SECS};
use crate::agent::frame::MIN_SIZE;
use crate::agent::histogram::Histogram;
use clap::Args;
use container::Isolation;
use rig::{Context, Direction, FwdMode, Port, Rig, Trial};
use std::io::IsTerminal;
use std::path::PathBuf;
use vecring_core::HugepagePolicy;
use vecring_core::MAX_FRAME_LEN;

/// Options of `vecring-bench host-container --forward`.
#[derive(Args)]
pub struct ForwardArgs {
    /// Ports to measure, in turn: link (two Rust agents), vecring
    /// (DPDK's eth_vecring), memif (DPDK's net_memif) (--forward).
    #[arg(long, value_delimiter = ',', default_values = ["link"])]
    ports: Vec<Port>,
    /// Directions: both (the container forwards every frame back),
    /// to-container, from-container (--forward).
    #[arg(long, value_delimiter = ',', default_values = ["both"])]
    directions: Vec<Direction>,
    /// Rounds: each size measured this many times on each port, the
    /// order of the ports alternating (--forward).
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Offered rate of the first trial of each size, in frames/s (0: as
    /// fast as the port takes them); with searches, their ceiling
    /// (--forward).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Slots per ring of the vecring links (the Rust link's and
    /// eth_vecring's; default: vecring's default geometry). Deeper rings
    /// ride out longer stalls of the far side without loss (--forward).
    #[arg(long)]
    slots: Option<u32>,
    /// memif's ring size as log2 (its devarg rsize, 1..=14; default:
    /// memif's, 10 = 1024 buffers) (--forward).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=14))]
    memif_rsize: Option<u8>,
    /// Seconds of the trial that re-verifies each search's result
    /// (--forward).
    #[arg(long, default_value_t = 5.0)]
    verify_seconds: f64,
    /// Container: auto, unprivileged, privileged, namespaces or docker
    /// (--forward; DPDK far sides need hugepages in LXC, so auto gives
    /// them a privileged container; in Docker they run without).
    #[arg(long, default_value = "auto")]
    container: Isolation,
    /// The Docker far side's image, as scripts/image.sh makes it (default:
    /// one made for the run and removed after it) (--forward, --container
    /// docker).
    #[arg(long)]
    docker_image: Option<String>,
    /// The DPDK agent (default: vecring-dpdk-agent beside this program;
    /// `benches/dpdk-agent/build.sh` builds it) (--forward).
    #[arg(long)]
    dpdk_agent: Option<PathBuf>,
    /// The driver EAL loads with -d (--forward).
    #[arg(long, default_value = "/usr/local/lib/vecring/librte_net_vecring.so")]
    pmd: PathBuf,
    /// testpmd (--forward).
    #[arg(long, default_value = "dpdk-testpmd")]
    testpmd: String,
    /// How the container's testpmd sends each frame back (DPDK ports,
    /// direction both): macswap, or io (as received; the generator then
    /// addresses its frames to its own MAC, which it checks on return)
    /// (--forward).
    #[arg(long, default_value = "macswap")]
    forward_mode: FwdMode,
    #[command(flatten)]
    gen: GenArgs,
}

/// The latency levels: shares of the zero-loss rate, in percent.
pub const LEVELS: [u32; 3] = [50, 90, 100];

/// The sizes of a forwarding run when none are given.
pub const SIZES: [usize; 8] = [64, 128, 256, 512, 1024, 1280, 1514, 9000];

/// The smallest trial of a search: shorter ones mean little on a machine
/// whose rates swing from second to second.
const MIN_TRIAL: f64 = 2.0;

/// Latency under load at one level.
#[derive(Clone, Debug)]
pub struct Latency {
    pub level: u32,
    pub rate: f64,
    pub histogram: Histogram,
}

/// One (port, direction, size, round)'s results.
#[derive(Clone, Debug)]
pub struct Row {
    pub port: Port,
    pub direction: Direction,
    pub size: usize,
    pub round: u32,
    /// The first trial: unthrottled, or at `--rate`.
    pub free: Trial,
    /// Reordered, duplicated and bad frames over every trial of the row.
    pub reordered: u64,
    pub dup: u64,
    pub bad: u64,
    pub zero_loss: Option<f64>,
    pub low_loss: Option<f64>,
    pub latency: Vec<Latency>,
    /// Why the row has no figures (a port that cannot carry the size).
    pub error: Option<String>,
    /// The one-way core-to-core latency between the two CPUs, the larger
    /// of the measurements just before and just after the row
    /// ([`placement`]).
    pub c2c_ns: u64,
}

/// Runs the forwarding benchmark and prints its report.
///
/// # Errors
/// Bad options, or a set-up that could not start at all.
pub fn run(args: &BenchArgs, fwd: &ForwardArgs, sizes: &[usize]) -> Result<(), String> {
    let trial_secs = args.trial_seconds.unwrap_or(MIN_TRIAL);
    if trial_secs.is_nan() || (trial_secs != 0.0 && trial_secs < MIN_TRIAL) {
        return Err(format!(
            "--trial-seconds {trial_secs}: the forwarding searches need trials of at least {MIN_TRIAL} s (0 skips them)"
        ));
    }
    if fwd.verify_seconds.is_nan() || fwd.verify_seconds < trial_secs {
        return Err("--verify-seconds must be at least --trial-seconds".into());
    }
    if let Some(n) = fwd.slots {
        vecring_core::Geometry::new(n, vecring_core::Geometry::DEFAULT.slot_size())
            .map_err(|e| format!("--slots {n}: {e}"))?;
    }
    if !(fwd.rate.is_finite() && fwd.rate >= 0.0) {
        return Err(format!(
            "--rate {}: must be a non-negative number",
            fwd.rate
        ));
    }
    if fwd.rounds == 0 || args.seconds.is_nan() || args.seconds <= 0.0 {
        return Err("--rounds and --seconds must be positive".into());
    }
    if [args.seconds, trial_secs, fwd.verify_seconds]
        .iter()
        .any(|&s| s > MAX_SECS)
    {
        return Err(format!("a trial lasts at most {MAX_SECS} s"));
    }
    if let Some(bad) = sizes
        .iter()
        .find(|&&s| !(MIN_SIZE..=MAX_FRAME_LEN).contains(&s))
    {
        return Err(format!(
            "frame size {bad}: the forwarding frames are {MIN_SIZE}..={MAX_FRAME_LEN} bytes"
        ));
    }
    vecring_cli::cpus::check("--master-cpu", &args.master_cpu)?;
    vecring_cli::cpus::check("--slave-cpu", &args.slave_cpu)?;
    let host_cpu = args.master_cpu.first().copied().unwrap_or(0);
    let far_cpu = args.slave_cpu.first().copied().unwrap_or(1);
    if host_cpu == far_cpu {
        return Err(format!(
            "CPU {host_cpu} for both sides: each side busy-polls a CPU of its own (--master-cpu, --slave-cpu)"
        ));
    }
    let dpdk = fwd.ports.iter().any(|p| p.dpdk());
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dpdk_agent = fwd
        .dpdk_agent
        .clone()
        .unwrap_or_else(|| exe.with_file_name("vecring-dpdk-agent"));
    if dpdk && !dpdk_agent.exists() {
        return Err(format!(
            "{} missing: build it with benches/dpdk-agent/build.sh (or give --dpdk-agent)",
            dpdk_agent.display()
        ));
    }
    if fwd.ports.contains(&Port::Vecring) && !fwd.pmd.exists() {
        return Err(format!(
            "{} missing: install the driver there (benches/plugin.sh does) or give --pmd",
            fwd.pmd.display()
        ));
    }
    let link_isolation = container::resolve(fwd.container, false)?;
    let dpdk_isolation = container::resolve(fwd.container, true)?;
    let docker = fwd.container == Isolation::Docker;
    if docker && fwd.ports.contains(&Port::Memif) {
        return Err("--ports memif with --container docker: the far side's image holds eth_vecring only, and memif's client needs hugepages in its container; measure memif with --container privileged".into());
    }
    if fwd.forward_mode == FwdMode::Io && fwd.ports.contains(&Port::Link) {
        return Err("--forward-mode io: on link ports the container's side is vecring-bench's agent, which swaps MACs; give DPDK ports (--ports vecring,memif)".into());
    }
    if !docker && fwd.docker_image.is_some() {
        return Err("--docker-image is for --container docker".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(
            "vecring-bench host-container --forward starts containers: run it as root".into(),
        );
    }
    let scratch = PathBuf::from(format!("/var/tmp/vecring-fwd-{}", std::process::id()));
    // A run directory of its own, removed at the end; a user's keeps all
    // but the domain directory the run made in it.
    let (run_dir, made) = match &args.run_dir {
        Some(d) => (d.clone(), d.join("bench")),
        None => {
            let d = PathBuf::from(format!("/run/vecring-fwd-{}", std::process::id()));
            (d.clone(), d)
        }
    };
    let cleanup = || {
        let _ = std::fs::remove_dir_all(&scratch);
        let _ = std::fs::remove_dir_all(&made);
    };
    let tool = container::scratch_with_tool(&scratch).inspect_err(|_| cleanup())?;
    std::fs::create_dir_all(&run_dir).map_err(|e| {
        cleanup();
        format!("{}: {e}", run_dir.display())
    })?;
    let image = if docker {
        let programs = image::Programs {
            dpdk,
            testpmd: &fwd.testpmd,
            dpdk_agent: &dpdk_agent,
            tool: &tool,
        };
        let i = image::Image::prepare(fwd.docker_image.as_deref(), &scratch, &programs)
            .inspect_err(|_| cleanup())?;
        Some(i)
    } else {
        None
    };
    let mut cx = Context {
        run_dir: run_dir.clone(),
        scratch: scratch.clone(),
        tool,
        dpdk_agent,
        pmd: fwd.pmd.clone(),
        testpmd: fwd.testpmd.clone(),
        fwd_mode: fwd.forward_mode,
        link_isolation,
        dpdk_isolation,
        image: image.as_ref().map_or(String::new(), |i| i.tag.clone()),
        host_cpu,
        far_cpu,
        gen: {
            let mut g = fwd.gen.clone();
            if fwd.forward_mode == FwdMode::Io {
                // testpmd's io mode sends each frame back unchanged.
                g.dst_mac = g.src_mac;
            }
            g
        },
        slots: fwd.slots,
        memif_rsize: fwd.memif_rsize,
        hugepages: match args.hugepages {
            HugepagePolicy::Prefer => "prefer",
            HugepagePolicy::Require => "require",
            HugepagePolicy::Never => "never",
        },
        started: 0,
    };
    let plan = Plan {
        rate: fwd.rate,
        seconds: args.seconds,
        trial_secs,
        verify_secs: fwd.verify_seconds,
    };
    table::heading(args, fwd, &cx, &plan);
    let result = measure_all(args, fwd, &mut cx, &plan, sizes);
    if let Some(i) = &image {
        i.remove();
    }
    cleanup();
    let rows = result?;
    table::finish(args, fwd, &cx, &plan, &rows);
    Ok(())
}

/// Trial rates and lengths.
pub struct Plan {
    /// The first trial's rate (0: unthrottled) and length.
    pub rate: f64,
    pub seconds: f64,
    /// Each search step (0: no searches).
    pub trial_secs: f64,
    /// Each re-verification.
    pub verify_secs: f64,
}

fn measure_all(
    args: &BenchArgs,
    fwd: &ForwardArgs,
    cx: &mut Context,
    plan: &Plan,
    sizes: &[usize],
) -> Result<Vec<Row>, String> {
    let progress = std::io::stderr().is_terminal();
    let mut rows = Vec::new();
    for &direction in &fwd.directions {
        for &size in sizes {
            for round in 0..fwd.rounds {
                let mut order = fwd.ports.clone();
                if round % 2 == 1 {
                    order.reverse();
                }
                for &port in &order {
                    if progress {
                        eprint!(
                            "\r\x1b[Kvecring-bench --forward: {} {} {size} B, round {}",
                            port.name(),
                            direction.name(),
                            round + 1
                        );
                    }
                    let row = measure(cx, plan, port, direction, size, round);
                    if progress {
                        eprint!("\r\x1b[K");
                    }
                    let row = match row {
                        Ok(r) => r,
                        // A port that cannot carry the size (memif's frames
                        // end at its buffer size) leaves a row saying so;
                        // the run goes on.
                        Err(e) => Row::failed(port, direction, size, round, e),
                    };
                    table::row(args, &row);
                    rows.push(row);
                }
            }
        }
    }
    Ok(rows)
}

impl Row {
    /// A row with no figures yet.
    fn new(port: Port, direction: Direction, size: usize, round: u32) -> Self {
        Self {
            port,
            direction,
            size,
            round,
            free: Trial::default(),
            reordered: 0,
            dup: 0,
            bad: 0,
            zero_loss: None,
            low_loss: None,
            latency: Vec::new(),
            error: None,
            c2c_ns: 0,
        }
    }

    /// A row that could not be measured, and why.
    fn failed(port: Port, direction: Direction, size: usize, round: u32, e: String) -> Self {
        Self {
            error: Some(e),
            ..Self::new(port, direction, size, round)
        }
    }
}

/// The loss the 0.002 % column allows.
const LOW_LOSS: f64 = 0.002 / 100.0;

/// Measures one size on one port: a warm-up, the unthrottled trial, the
/// two searches and the latency levels.
fn measure(
    cx: &mut Context,
    plan: &Plan,
    port: Port,
    direction: Direction,
    size: usize,
    round: u32,
) -> Result<Row, String> {
    let before = placement::core_to_core_ns(cx.host_cpu, cx.far_cpu);
    let mut rig = Rig::start(cx, port, direction, size)?;
    let r = measure_on(&mut rig, plan, port, direction, size, round);
    rig.stop();
    let after = placement::core_to_core_ns(cx.host_cpu, cx.far_cpu);
    r.map(|mut row| {
        row.c2c_ns = before.max(after);
        row
    })
}

fn measure_on(
    rig: &mut Rig,
    plan: &Plan,
    port: Port,
    direction: Direction,
    size: usize,
    round: u32,
) -> Result<Row, String> {
    let mut row = Row::new(port, direction, size, round);
    let seen = |row: &mut Row, t: &Trial| {
        row.reordered += t.reordered;
        row.dup += t.dup;
        row.bad += t.bad;
    };
    // Warm-up, not counted.
    rig.trial(size, 0.0, 0.5)?;
    let free = rig.trial(size, plan.rate, plan.seconds)?;
    seen(&mut row, &free);
    if free.tx == 0 {
        return Err(format!("the generator sent no {size}-byte frame"));
    }
    // The searches' ceiling: the rate asked for, or the one the
    // unthrottled trial reached.
    let ceiling = if plan.rate > 0.0 {
        plan.rate
    } else {
        free.tx as f64 / free.secs.max(1e-9)
    };
    row.free = free;
    if plan.trial_secs > 0.0 {
        // The verification trial that passed at the zero-loss rate: the
        // latency at 100 %.
        let mut at_zero: Option<(f64, Trial)> = None;
        let mut run = |rate: f64,
                       step: Step,
                       max_loss: f64,
                       row: &mut Row,
                       keep: bool|
         -> Result<f64, String> {
            let secs = if step == Step::Verify {
                plan.verify_secs
            } else {
                plan.trial_secs
            };
            let t = rig.trial(size, rate, secs)?;
            seen(row, &t);
            let loss = t.loss();
            if keep && step == Step::Verify && loss <= max_loss {
                at_zero = Some((rate, t));
            }
            Ok(loss)
        };
        let zero = search_verified(ceiling, 0.0, 0.0, true, &mut |rate, step| {
            run(rate, step, 0.0, &mut row, true)
        })?;
        let low = search_verified(ceiling, zero, LOW_LOSS, true, &mut |rate, step| {
            run(rate, step, LOW_LOSS, &mut row, false)
        })?;
        row.zero_loss = Some(zero);
        row.low_loss = Some(low);
        if zero > 0.0 {
            for level in LEVELS {
                let rate = zero * f64::from(level) / 100.0;
                let histogram = match &at_zero {
                    Some((r, t)) if level == 100 && *r == zero => t.latency.clone(),
                    _ => {
                        let t = rig.trial(size, rate, plan.trial_secs)?;
                        seen(&mut row, &t);
                        t.latency
                    }
                };
                row.latency.push(Latency {
                    level,
                    rate,
                    histogram,
                });
            }
        }
    }
    Ok(row)
}
