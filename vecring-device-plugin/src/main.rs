//! `vecring-device-plugin`: see the library's documentation and
//! `docs/kubernetes.md`.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::signal::unix::{signal, SignalKind};
use vecring_device_plugin::devices::{Devices, Mode};

#[derive(Clone, Copy, ValueEnum)]
enum How {
    /// The environment only: the link meets in the pod's network namespace.
    Netns,
    /// The domain directory, bound by the kubelet, and the environment.
    Dir,
    /// The CDI device `vecring.dev/link=DOMAIN-LINK` (vecring cdi write).
    Cdi,
}

/// A Kubernetes device plugin handing out a domain's vecring links
/// (resource vecring.dev/DOMAIN, a device per link).
#[derive(Parser)]
#[command(name = "vecring-device-plugin", version)]
struct Args {
    /// The domain: the resource is vecring.dev/DOMAIN.
    #[arg(long)]
    domain: String,
    /// A link of the domain, one device (repeatable).
    #[arg(long = "link", value_name = "LINK", required = true)]
    links: Vec<String>,
    /// What a container that gets a link is given.
    #[arg(long, value_enum, default_value = "netns")]
    mode: How,
    /// The run directory (mode dir).
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// The kubelet's device-plugin directory (its kubelet.sock).
    #[arg(long, default_value = "/var/lib/kubelet/device-plugins")]
    kubelet_dir: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mode = match args.mode {
        How::Netns => Mode::Netns,
        How::Dir => Mode::Dir {
            run_dir: args.run_dir.clone(),
        },
        How::Cdi => Mode::Cdi,
    };
    let devices = match Devices::new(&args.domain, &args.links, mode) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("vecring-device-plugin: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("vecring-device-plugin: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT: {e}"))?;
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let _ = stop_tx.send(true);
        });
        vecring_device_plugin::serve::run(devices, &args.kubelet_dir, stop_rx).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vecring-device-plugin: {e}");
            ExitCode::FAILURE
        }
    }
}
