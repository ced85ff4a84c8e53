//! `vecring-bench`: the benchmark harness of vecring links, the lab's
//! counterpart of the shipped `vecring` tool (whose library it shares for
//! the link options, CPU placement, test frames and sending loops).
//!
//! - `host-container`: a master on the host sends to a slave in its own
//!   namespaces (standing in for a container) and prints pps, Mbit/s,
//!   throughput % and the zero-loss rates per frame size, its queues'
//!   threads spread over the CPUs given; with `--forward`, the forwarding
//!   benchmark, the far side in a real container ([`host_container`]).
//! - `agent`: one end of a link driven over stdin and stdout by the
//!   forwarding benchmark ([`agent`]).
//! - `slave` (hidden): the tool's `rxonly`, the slave `host-container`
//!   starts (`host_container/slave.rs`).
//!
//! `benches/README.md` indexes it with the other benchmarks;
//! `docs/benchmarks/README.md` gives the figures and how they were made.

mod agent;
mod host_container;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use vecring_cli::LinkArgs;

#[derive(Parser)]
#[command(
    name = "vecring-bench",
    version,
    about = "The benchmark harness of vecring links (host<->container rates, forwarding, latency)"
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
    /// Benchmark a host<->container link: pps, Mbit/s, throughput, zero loss
    ///
    /// Start a slave in its own namespaces (standing in for a container),
    /// send traffic to it, and print pps, Mbit/s and throughput per frame
    /// size; with --forward, the forwarding benchmark.
    HostContainer(host_container::BenchArgs),
    /// The far end of `vecring-bench host-container --forward` (driven on stdin)
    ///
    /// The far end of `vecring-bench host-container --forward`: one end of
    /// a link, generating numbered frames (gen), sending every frame back
    /// with its MACs swapped (fwd) or counting (sink), driven by commands
    /// on stdin (one reply line each on stdout; see the crate's
    /// `agent::protocol`).
    Agent(agent::command::AgentArgs),
    /// The slave of `host-container`: `vecring rxonly --interval 0`
    #[command(hide = true)]
    Slave {
        #[command(flatten)]
        link: LinkArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    vecring_cli::init_logging(cli.verbose, cli.quiet);
    let result = match cli.command {
        Command::HostContainer(args) => host_container::run(&args),
        Command::Agent(args) => agent::command::run(&args),
        Command::Slave { link } => vecring_cli::traffic::rxonly(&link, 0.0, false),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vecring-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}
