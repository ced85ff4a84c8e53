//! `vecring`: open a link from the command line, move and check traffic,
//! and benchmark a host↔container link.

mod bench;
mod doctor;
mod ops;
mod traffic;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use vecring_core::{Geometry, HugepagePolicy, Link, LinkBuilder, Role};

#[derive(Parser)]
#[command(
    name = "vecring",
    version,
    about = "Shared-memory virtual Ethernet links between processes and containers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send and check self-verifying frames both ways (sequence numbers and
    /// checksums): nothing lost, duplicated, reordered or altered.
    Stress {
        #[command(flatten)]
        link: LinkArgs,
        /// Frames to send (and to expect from the peer).
        #[arg(long, default_value_t = 1_000_000)]
        frames: u64,
    },
    /// Send frames of one size as fast as the peer takes them.
    Txonly {
        #[command(flatten)]
        link: LinkArgs,
        /// Frame size in bytes.
        #[arg(long, default_value_t = 64)]
        size: usize,
        /// How long to send.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// Receive and count frames; answers each line on stdin with the counts.
    Rxonly {
        #[command(flatten)]
        link: LinkArgs,
    },
    /// Start a slave in its own namespaces (standing in for a container),
    /// send traffic to it, and print pps, Mbit/s and throughput per frame size.
    Bench(bench::BenchArgs),
    /// Every link under the run directory, one line each: state, peer,
    /// geometry, memory, uptime (asked of each link's master).
    List(ops::ListArgs),
    /// Each link's counters per direction, with rates when refreshed
    /// (--watch).
    Stats(ops::StatsArgs),
    /// Check the host: hugepages, NUMA, the run directory, stale sockets,
    /// DPDK and the driver, and (with --domain --lxc) a container's
    /// configuration. Exits 1 when something would stop a link.
    Doctor(doctor::DoctorArgs),
}

/// Options naming and shaping a link.
#[derive(Args, Clone)]
pub struct LinkArgs {
    /// master (creates the memory, typically the host) or slave.
    #[arg(long, value_parser = parse_role, default_value = "slave")]
    role: Role,
    /// Domain (typically the container's name).
    #[arg(long)]
    domain: String,
    /// Link name within the domain.
    #[arg(long)]
    link: String,
    /// Parent of the domain directories.
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// NUMA node of the link memory.
    #[arg(long)]
    socket: Option<u32>,
    /// Slots per ring (power of two).
    #[arg(long)]
    slots: Option<u32>,
    /// Bytes per slot (power of two, 64..=32768).
    #[arg(long)]
    slot_size: Option<u32>,
    /// prefer, require or never.
    #[arg(long, default_value = "prefer")]
    hugepages: HugepagePolicy,
    /// Give the socket to UID:GID and admit only that uid (master); the
    /// domain directory stays the master's, searchable by UID.
    #[arg(long, value_parser = parse_owner)]
    owner: Option<(u32, u32)>,
    /// Only this uid may attach (master; repeatable).
    #[arg(long)]
    allow_uid: Vec<u32>,
    /// The master must run as this uid, as seen here (slave; repeatable).
    /// Default: root, or the owner of the run or domain directory.
    #[arg(long)]
    master_uid: Vec<u32>,
    /// Seconds to wait for the peer.
    #[arg(long, default_value_t = 30.0)]
    up_timeout: f64,
    /// Pin the data-path threads to this CPU.
    #[arg(long)]
    cpu: Option<usize>,
    /// Receive with the hold-back on (vecring_core::HoldBack::STREAMING):
    /// a few frames wait up to 250 ns rather than being read right behind
    /// a streaming sender.
    #[arg(long)]
    hold_back: bool,
}

fn parse_role(s: &str) -> Result<Role, String> {
    match s {
        "master" => Ok(Role::Master),
        "slave" => Ok(Role::Slave),
        _ => Err(format!("'{s}' is not master or slave")),
    }
}

fn parse_owner(s: &str) -> Result<(u32, u32), String> {
    let (u, g) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not UID:GID"))?;
    Ok((
        u.parse().map_err(|_| format!("bad uid '{u}'"))?,
        g.parse().map_err(|_| format!("bad gid '{g}'"))?,
    ))
}

impl LinkArgs {
    fn builder(&self) -> Result<LinkBuilder, String> {
        let mut b = Link::builder(&self.domain, &self.link)
            .role(self.role)
            .run_dir(&self.run_dir)
            .hugepages(self.hugepages);
        if let Some(n) = self.socket {
            b = b.numa_node(n);
        }
        if self.slots.is_some() || self.slot_size.is_some() {
            let d = Geometry::DEFAULT;
            let g = Geometry::new(
                self.slots.unwrap_or(d.slot_count()),
                self.slot_size.unwrap_or(d.slot_size()),
            )
            .map_err(|e| e.to_string())?;
            b = b.geometry(g);
        }
        if let Some((uid, gid)) = self.owner {
            b = b.owner(uid, gid);
        }
        for &uid in &self.allow_uid {
            b = b.allow_uid(uid);
        }
        for &uid in &self.master_uid {
            b = b.master_uid(uid);
        }
        Ok(b)
    }

    /// Opens the link and waits for the peer.
    fn open_up(&self) -> Result<Link, String> {
        let link = self.builder()?.open().map_err(|e| e.to_string())?;
        link.wait_up(Duration::from_secs_f64(self.up_timeout))
            .map_err(|e| e.to_string())?;
        Ok(link)
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays within it for any
    // cpu below CPU_SETSIZE, checked first.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return;
        }
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            log::warn!(
                "cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Stress { link, frames } => traffic::stress(&link, frames),
        Command::Txonly {
            link,
            size,
            seconds,
        } => traffic::txonly(&link, size, seconds),
        Command::Rxonly { link } => traffic::rxonly(&link),
        Command::Bench(args) => bench::run(&args),
        Command::List(args) => ops::list(&args),
        Command::Stats(args) => ops::stats(&args),
        Command::Doctor(args) => match doctor::doctor(&args) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vecring: error: {e}");
            ExitCode::FAILURE
        }
    }
}
