//! The `vecring` tool, the operator's tool for vecring links (the binary,
//! `src/main.rs`, only calls [`main`]).
//!
//! - Traffic: `stress`, `txonly` and `rxonly` open one end of a link
//!   (master or slave) and send and check, send, or count frames on each
//!   of its queue pairs (`--queues`, a thread per queue), with labelled
//!   counts and rates per queue and in total (`traffic`).
//! - Operations: `list` and `stats` ask each link's master for its state
//!   and counters (`ops`, over `vecring_core::status`); `doctor` checks
//!   the host and a container's configuration (`doctor`); `prepare`
//!   creates a domain directory for a container's bind mount and says
//!   what the runtime needs for it (`prepare`, ids from `userns`), and
//!   declares it to systemd-tmpfiles for every boot (`persist`); `cdi`
//!   writes CDI devices that give a container a domain without a
//!   bind-mount flag (`cdi`).
//! - `tap` bridges a link to a TAP interface (`tap`).
//! - Every option is checked against vecring-core's limits before a link
//!   opens; `--json` gives scripts the same figures.
//!
//! As a library it also serves the benchmark harness, `vecring-bench`
//! (`benches/src/bin/vecring-bench/`), which drives links the way the
//! tool does and must not drive them another way. Its public items are
//! only what the harness shares: the link options ([`LinkArgs`], with the
//! wait for the peer), CPU placement ([`cpus`]), the test frames, the
//! sending loops and `rxonly` ([`traffic`]), and the logging options'
//! meaning ([`init_logging`]). Everything else is private.
//!
//! `docs/operations.md` in the repository is the guide; `vecring --help`
//! and `vecring <command> --help` the reference.

mod cdi;
pub mod cpus;
mod doctor;
mod escape;
mod manual;
mod open;
mod ops;
mod persist;
mod prepare;
mod tap;
pub mod traffic;
mod userns;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use vecring_core::geometry::{
    check_queues, MAX_SLOT_COUNT, MAX_SLOT_SIZE, MIN_SLOT_COUNT, MIN_SLOT_SIZE,
};
use vecring_core::MAX_QUEUES;
use vecring_core::{Geometry, HugepagePolicy, Link, LinkBuilder, RegionBudget, Role};

/// The log target of every line the tool writes: `vecring`, as the guides
/// show them (`INFO  vecring] waiting for the master on ...`), whichever
/// module writes it (the module paths are the library's, `vecring_cli`).
const LOG_TARGET: &str = "vecring";

/// The text after `--help`: logging and how the modes end.
const AFTER_HELP: &str = "\
Logging: on by default at level info (link up and down, the peer's pid and
uid, the socket path a side waits on, refusals), on stderr. -v: debug, -vv:
trace; -q: warnings only, -qq: errors only. RUST_LOG (env_logger syntax, e.g.
RUST_LOG=vecring_core=debug) overrides both.

rxonly ends when its stdin closes or on Ctrl-C, txonly when it has sent for
--seconds of link up or on Ctrl-C; both print a summary then, also when
they were still waiting for a peer. Their rates count only the time the
link was up.

Exit status: 0 on success, 1 on any error (bad option, link refused, peer
not there in time), 2 on a usage error.";

#[derive(Parser)]
#[command(
    name = "vecring",
    version,
    about = "Shared-memory virtual Ethernet links between processes and containers",
    after_help = AFTER_HELP
)]
struct Cli {
    /// More log output (-v debug, -vv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Less log output (-q warnings, -qq errors).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    quiet: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send and check self-verifying frames both ways
    ///
    /// Send and check self-verifying frames both ways (sequence numbers and
    /// checksums): nothing lost, duplicated, reordered or altered.
    Stress {
        #[command(flatten)]
        link: LinkArgs,
        /// Frames to send on each queue (and to expect from the peer on
        /// each).
        #[arg(long, default_value_t = 1_000_000)]
        frames: u64,
    },
    /// Send frames of one size as fast as the peer takes them, and report
    ///
    /// Send Ethernet frames of one size (ethertype 0x88b5, from this end's
    /// MAC to the peer's, as the DPDK driver assigns them; --src-mac and
    /// --dst-mac set them) as fast as the peer takes them, for --seconds
    /// of link up: when the peer leaves, report its generation and wait
    /// for the next one. Then wait (at most --drain seconds) for the peer
    /// to read them, and report the frames sent, taken by the peer and
    /// left in the ring (per queue and in total).
    Txonly(traffic::TxonlyArgs),
    /// Receive and count frames, with rates and a summary
    ///
    /// Receive and count frames. Prints labelled counts and rates every
    /// --interval seconds and on link up/down (stderr), answers each line
    /// on stdin with `rx <frames> <bytes>` (stdout; with several queues,
    /// followed by `<frames> <bytes>` of each queue), and ends with a
    /// summary when stdin closes or on Ctrl-C.
    Rxonly {
        #[command(flatten)]
        link: LinkArgs,
        /// Seconds between reports (0: none).
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
        /// Sleep until frames arrive instead of polling: each queue's
        /// thread waits on its ring's doorbell when the ring is empty
        /// (the sender then pays a fence per publish).
        #[arg(long)]
        interrupt: bool,
    },
    /// Create a domain directory for a container, and print its configuration
    ///
    /// Create a domain directory before either side starts (for a
    /// container's bind mount) with the owner and mode the master accepts,
    /// and print what the container needs for it: LXC's configuration
    /// lines, or (--runtime docker|podman) the run options and the master's
    /// --owner. With --persist, also a systemd-tmpfiles entry that makes the
    /// directory again at every boot; --forget removes it.
    Prepare(prepare::PrepareArgs),
    /// Write, remove and list CDI devices that give a container a domain
    ///
    /// Write, remove and list devices of the Container Device Interface
    /// (kind vecring.dev/link) that give a container a domain: the domain
    /// directory bound in and VECRING_DOMAIN, VECRING_LINK and
    /// VECRING_RUN_DIR, which the link options default to (`podman run
    /// --device vecring.dev/link=NAME`, no -v).
    Cdi(cdi::CdiArgs),
    /// Bridge the link to a TAP interface of this network namespace
    ///
    /// Create a TAP interface in this network namespace and bridge it to
    /// the link until SIGINT or SIGTERM: one interface queue per queue
    /// pair, MTU from the link's largest frame, carrier on while the peer
    /// is attached. Needs CAP_NET_ADMIN in this namespace (a container's
    /// root in its own).
    ///
    /// The interface's queues are made before the peer is known: a slave
    /// requires its --queues (default 1) of the master. It waits for its
    /// peer as long as it runs (--up-timeout and --hold-back are not tap
    /// options) and prints what it moved and dropped when it ends.
    Tap(tap::TapArgs),
    /// List every link under the run directory, one line each
    ///
    /// Every link under the run directory, one line each: state, peer,
    /// geometry, memory, uptime (asked of each link's master).
    List(ops::ListArgs),
    /// Each link's counters per direction, with rates (--watch)
    ///
    /// Each link's counters per direction, with rates when refreshed
    /// (--watch).
    Stats(ops::StatsArgs),
    /// Check the host (and a container) for what would stop a link
    ///
    /// Check the host: hugepages, NUMA, the run directory, stale sockets,
    /// DPDK and the driver, and (with --domain and --lxc or --container) a
    /// container's configuration. Exits 1 when something would stop a link.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    ///
    /// Print the completion script for SHELL on stdout, generated from the
    /// command definitions: for example `vecring completions bash >
    /// /usr/share/bash-completion/completions/vecring`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (vecring.1, one per command) into a directory
    ///
    /// Write vecring.1 and a page per command (vecring-tap.1, ...),
    /// generated from the command definitions, into DIR (which must
    /// exist), and print their paths; `man -l DIR/vecring-tap.1` reads one.
    Manpages {
        /// Where to write them.
        dir: PathBuf,
    },
}

/// Options naming and shaping a link.
#[derive(Args, Clone)]
pub struct LinkArgs {
    /// master (creates the memory, typically the host) or slave.
    #[arg(long, value_parser = parse_role, default_value = "slave")]
    role: Role,
    /// Domain (typically the container's name).
    #[arg(long, env = "VECRING_DOMAIN")]
    domain: String,
    /// Link name within the domain.
    #[arg(long, env = "VECRING_LINK")]
    link: String,
    /// Parent of the domain directories (an absolute path).
    #[arg(long, env = "VECRING_RUN_DIR", default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// NUMA node of the link memory.
    #[arg(long)]
    socket: Option<u32>,
    /// Slots per ring (master).
    #[arg(long, help = slots_help())]
    slots: Option<u32>,
    /// Bytes per slot (master).
    #[arg(long, help = slot_size_help())]
    slot_size: Option<u32>,
    /// prefer, require or never.
    #[arg(long, default_value = "prefer")]
    hugepages: HugepagePolicy,
    /// Open the socket to UID:GID and admit only that uid (master): socket
    /// and domain directory stay the master's, the socket's group becomes
    /// GID (read and write), the directory searchable by others.
    #[arg(long, value_parser = parse_owner)]
    owner: Option<(u32, u32)>,
    /// Regions the master may create for this link: BURST at once, then
    /// one per SECS seconds (master; default 16/60). Every offer costs one,
    /// whatever the peer does with it.
    #[arg(long, value_name = "BURST/SECS", value_parser = parse_budget)]
    region_budget: Option<RegionBudget>,
    /// Meet in this network namespace, with no directory shared: PATH is
    /// a namespace file (/proc/PID/ns/net, /run/netns/NAME), or `self` for
    /// this process's own. The master listens on the abstract name
    /// @vecring/1/DOMAIN/LINK there and admits only that namespace's
    /// processes; a slave connects from inside it (a container's
    /// application: --netns self, nothing mounted). Entering another
    /// namespace needs CAP_SYS_ADMIN over it.
    #[arg(
        long,
        value_name = "PATH|self",
        conflicts_with = "owner",
        env = "VECRING_NETNS"
    )]
    netns: Option<PathBuf>,
    /// Only this uid may attach (master; repeatable).
    #[arg(long)]
    allow_uid: Vec<u32>,
    /// The master must run as this uid, as seen here (slave; repeatable).
    /// Default: root, or the owner of the run or domain directory; with
    /// --netns, root or the overflow uid (a host uid this user namespace
    /// does not map).
    #[arg(long)]
    master_uid: Vec<u32>,
    /// Seconds to wait for the peer.
    #[arg(long, default_value_t = 30.0)]
    up_timeout: f64,
    /// Queue pairs: the link's (master) or the count required of the
    /// master (slave); the help text is [`queues_help`].
    #[arg(long, value_name = "N", help = queues_help())]
    queues: Option<u64>,
    /// Pin the data-path threads to these CPUs (ones this process may run
    /// on; comma-separated): queue q's to the (q mod count)-th.
    #[arg(long, value_name = "CPU,...", value_delimiter = ',')]
    cpu: Vec<usize>,
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

fn parse_budget(s: &str) -> Result<RegionBudget, String> {
    let (n, secs) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}' is not BURST/SECS"))?;
    let n: u32 = n.parse().map_err(|_| format!("bad burst '{n}'"))?;
    let secs: f64 = secs.parse().map_err(|_| format!("bad seconds '{secs}'"))?;
    if n == 0 || !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("'{s}': the burst and the seconds must be positive"));
    }
    Ok(RegionBudget::new(
        n,
        std::time::Duration::from_secs_f64(secs),
    ))
}

fn slots_help() -> String {
    format!(
        "Slots per ring: a power of two, {MIN_SLOT_COUNT}..={MAX_SLOT_COUNT} (master; default {})",
        Geometry::DEFAULT.slot_count()
    )
}

fn slot_size_help() -> String {
    format!(
        "Bytes per slot: a power of two, {MIN_SLOT_SIZE}..={MAX_SLOT_SIZE} (master; default {})",
        Geometry::DEFAULT.slot_size()
    )
}

fn queues_help() -> String {
    format!(
        "Queue pairs, 1..={MAX_QUEUES}, one data-path thread each (stress: two). Master: the link's count (default 1); slave: the count required of the master (default: the master's)"
    )
}

impl LinkArgs {
    /// Checks every option before the link opens.
    ///
    /// # Errors
    /// The first bad option, named.
    pub fn check(&self) -> Result<(), String> {
        if !self.run_dir.is_absolute() {
            return Err(format!(
                "--run-dir {}: must be an absolute path",
                self.run_dir.display()
            ));
        }
        cpus::check("--cpu", &self.cpu)?;
        if let Some(p) = &self.netns {
            if p != std::path::Path::new("self") && !p.is_absolute() {
                return Err(format!(
                    "--netns {}: must be an absolute path or `self`",
                    p.display()
                ));
            }
        }
        let queues = self.queue_count()?;
        if self.role == Role::Slave {
            let master_only = [
                ("--owner", self.owner.is_some()),
                ("--allow-uid", !self.allow_uid.is_empty()),
                ("--region-budget", self.region_budget.is_some()),
                ("--slots", self.slots.is_some()),
                ("--slot-size", self.slot_size.is_some()),
            ];
            if let Some((opt, _)) = master_only.iter().find(|(_, given)| *given) {
                return Err(format!(
                    "{opt} is a master option (the master decides it); this side is the slave"
                ));
            }
        } else if !self.master_uid.is_empty() {
            return Err("--master-uid is a slave option; this side is the master".into());
        }
        match (self.geometry()?, queues) {
            (Some(g), Some(n)) => g
                .region_size_for(n)
                .map(|_| ())
                .map_err(|e| format!("--queues/--slots/--slot-size: {e}")),
            _ => Ok(()),
        }
    }

    /// The CPUs of the data-path threads (`--cpu`; empty: not pinned).
    pub fn cpus(&self) -> &[usize] {
        &self.cpu
    }

    /// The queue count asked for (`--queues`), checked by the core.
    fn queue_count(&self) -> Result<Option<u16>, String> {
        self.queues
            .map(|n| check_queues(n).map_err(|e| format!("--queues {n}: {e}")))
            .transpose()
    }

    /// The geometry asked for, checked by the core.
    fn geometry(&self) -> Result<Option<Geometry>, String> {
        if self.slots.is_none() && self.slot_size.is_none() {
            return Ok(None);
        }
        let d = Geometry::DEFAULT;
        Geometry::new(
            self.slots.unwrap_or(d.slot_count()),
            self.slot_size.unwrap_or(d.slot_size()),
        )
        .map(Some)
        .map_err(|e| format!("--slots/--slot-size: {e}"))
    }

    fn builder(&self) -> Result<LinkBuilder, String> {
        let mut b = Link::builder(&self.domain, &self.link)
            .role(self.role)
            .run_dir(&self.run_dir)
            .hugepages(self.hugepages);
        if let Some(n) = self.socket {
            b = b.numa_node(n);
        }
        if let Some(g) = self.geometry()? {
            b = b.geometry(g);
        }
        if let Some(n) = self.queue_count()? {
            b = b.queues(n);
        }
        if let Some((uid, gid)) = self.owner {
            b = b.owner(uid, gid);
        }
        for &uid in &self.allow_uid {
            b = b.allow_uid(uid);
        }
        if let Some(budget) = self.region_budget {
            b = b.region_budget(budget);
        }
        for &uid in &self.master_uid {
            b = b.master_uid(uid);
        }
        match self.netns.as_deref() {
            Some(p) if p == std::path::Path::new("self") => b = b.netns_self(),
            Some(p) => b = b.netns(p),
            None => {}
        }
        Ok(b)
    }
}

/// The queue count of a link that is (or was) up: the master's.
///
/// # Errors
/// A link that has not been up (a programming error: call after
/// [`LinkArgs::open_up`]).
pub(crate) fn queues_of(link: &Link) -> Result<u16, String> {
    link.queues()
        .ok_or_else(|| "the link's queue count is not known before it is up".to_string())
}

/// Starts logging on stderr at the level `-v` (`verbose` times) and `-q`
/// (`quiet` times) ask for, from info; RUST_LOG overrides it.
pub fn init_logging(verbose: u8, quiet: u8) {
    let level = match i16::from(verbose) - i16::from(quiet) {
        ..=-2 => "error",
        -1 => "warn",
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp_millis()
        .init();
}

/// The `vecring` tool: parses the command line, sets up logging, runs the
/// command and gives its exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.quiet);
    let result = match cli.command {
        Command::Stress { link, frames } => traffic::stress(&link, frames),
        Command::Txonly(args) => traffic::txonly(&args),
        Command::Rxonly {
            link,
            interval,
            interrupt,
        } => traffic::rxonly(&link, interval, interrupt),
        Command::Prepare(args) => prepare::run(&args),
        Command::Cdi(args) => cdi::run(&args),
        Command::Tap(args) => tap::run(&args),
        Command::List(args) => ops::list(&args),
        Command::Stats(args) => ops::stats(&args),
        Command::Completions { shell } => manual::completions(shell),
        Command::Manpages { dir } => manual::manpages(&dir),
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
