//! `vecring prepare`: makes a domain directory before either side starts,
//! so that a container that bind-mounts it can start first, and prints the
//! LXC configuration lines for that bind mount.
//!
//! The directory gets what the master gives it when it creates it: this
//! user's ownership (the master's; run it as the user the master runs as)
//! and the mode of [`vecring_core::internal::dirs::domain_mode`] (0711 with an owner,
//! 0710 otherwise), so that the master accepts it.

use clap::Args;
use std::path::PathBuf;
use vecring_core::internal::dirs::{domain_mode, prepare_domain};
use vecring_core::link::DEFAULT_SOCKET_MODE;

/// Options of `vecring prepare`.
#[derive(Args)]
pub struct PrepareArgs {
    /// Domain (typically the container's name).
    #[arg(long)]
    domain: String,
    /// Parent of the domain directories (an absolute path).
    #[arg(long, default_value = vecring_core::link::DEFAULT_RUN_DIR)]
    run_dir: PathBuf,
    /// The UID:GID the master will open the socket to (the container's root
    /// as the host sees it, for an unprivileged container); also prints
    /// the matching lxc.idmap lines.
    #[arg(long, value_parser = crate::parse_owner)]
    owner: Option<(u32, u32)>,
}

/// Creates (or checks) the domain directory and prints the LXC lines.
///
/// # Errors
/// A bad name or path, or a directory the master would refuse.
pub fn run(args: &PrepareArgs) -> Result<(), String> {
    vecring_core::name::validate("domain", &args.domain).map_err(|e| e.to_string())?;
    if !args.run_dir.is_absolute() {
        return Err(format!(
            "--run-dir {}: must be an absolute path",
            args.run_dir.display()
        ));
    }
    let dir = args.run_dir.join(&args.domain);
    let mode = domain_mode(DEFAULT_SOCKET_MODE, args.owner);
    // Through descriptors (vecring_core::internal::dirs): a racing rename or symlink
    // in a writable run directory cannot make this chmod another path.
    if prepare_domain(&args.run_dir, &args.domain, mode).map_err(|e| e.to_string())? {
        log::info!("created {}", dir.display());
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    println!(
        "# {} ready (mode {mode:04o}, uid {me}); LXC configuration:",
        dir.display()
    );
    let rel = dir.strip_prefix("/").unwrap_or(&dir);
    println!(
        "lxc.mount.entry = {} {} none bind,create=dir 0 0",
        dir.display(),
        rel.display()
    );
    if let Some((uid, gid)) = args.owner {
        println!("lxc.idmap = u 0 {uid} 65536");
        println!("lxc.idmap = g 0 {gid} 65536");
    }
    Ok(())
}
