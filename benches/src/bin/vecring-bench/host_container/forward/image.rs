//! The image of a Docker far side (`--container docker`): made once per
//! run by `scripts/image.sh` from the host's own files (the programs the
//! far side runs, with their libraries, and for DPDK ports EAL's driver
//! directory with the mempool driver and eth_vecring), imported under a
//! tag of the run's and removed at its end; or an image the user made,
//! named by `--docker-image`, used as it is.
//!
//! The client is Debian's `/usr/bin/docker`, by path (another `docker`
//! may come first in PATH); it talks to the daemon `DOCKER_HOST` names,
//! else the default socket.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Docker client.
pub const DOCKER: &str = "/usr/bin/docker";

/// Where coreutils keeps the library `stdbuf` preloads (Debian's path).
const LIBSTDBUF: &str = "/usr/libexec/coreutils/libstdbuf.so";

/// What the far side runs, which the image must hold.
pub struct Programs<'a> {
    /// A DPDK port is measured: testpmd and the DPDK agent, and `stdbuf`
    /// (testpmd's output line by line through a pipe).
    pub dpdk: bool,
    pub testpmd: &'a str,
    pub dpdk_agent: &'a Path,
    /// The harness, `vecring-bench` (the agent of `link` ports).
    pub tool: &'a Path,
}

/// The far side's image.
pub struct Image {
    /// Its name in the daemon.
    pub tag: String,
    /// Made by this run (and removed at its end).
    pub made: bool,
}

/// A command of the Docker client: its stdout, or its stderr as the
/// error.
pub fn docker(args: &[&str]) -> Result<String, String> {
    let out = Command::new(DOCKER)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{DOCKER}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// `scripts/image.sh` of the source tree this harness was built from, or of
/// the checkout it runs in (`target/release/vecring-bench`).
fn builder() -> Result<PathBuf, String> {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/image.sh");
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| Some(e.parent()?.parent()?.parent()?.join("scripts/image.sh")));
    [Some(built), beside]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "scripts/image.sh not found (this harness runs outside its checkout): make an image with it and give --docker-image".to_string()
        })
}

impl Image {
    /// The image `given`, which must be in the daemon, or, without one, a
    /// new one holding `programs`, made in `scratch`.
    ///
    /// # Errors
    /// No Docker client, no daemon answering, no such image, or a build
    /// or import that failed (with the builder's or daemon's words).
    pub fn prepare(
        given: Option<&str>,
        scratch: &Path,
        programs: &Programs,
    ) -> Result<Self, String> {
        if !Path::new(DOCKER).exists() {
            return Err(format!(
                "{DOCKER} not found: install Debian's docker.io (scripts/setup.sh does)"
            ));
        }
        docker(&["version", "--format", "{{.Server.Version}}"]).map_err(|e| {
            format!(
                "no Docker daemon answers (DOCKER_HOST={}): start one (service docker start); {e}",
                std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unset".into())
            )
        })?;
        if let Some(tag) = given {
            docker(&["image", "inspect", "--format", "{{.Id}}", tag]).map_err(|e| {
                format!("--docker-image {tag}: not in the daemon ({e}); make it with scripts/image.sh and docker import")
            })?;
            return Ok(Self {
                tag: tag.to_string(),
                made: false,
            });
        }
        let dir = scratch.join("image");
        let rootfs = dir.join("rootfs");
        let tar = dir.join("far.tar");
        let mut build = Command::new("bash");
        build.arg(builder()?);
        if programs.dpdk {
            build
                .arg("dpdk")
                .arg(&rootfs)
                .args(["--program", programs.testpmd, "--program"])
                .arg(programs.dpdk_agent)
                .arg("--add")
                .arg(programs.tool)
                .args(["--add", "stdbuf"]);
        } else {
            build
                .arg("vecring")
                .arg(&rootfs)
                .arg("--tool")
                .arg(programs.tool);
        }
        let out = build
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("scripts/image.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/image.sh could not make the far side's image: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        if programs.dpdk {
            // stdbuf preloads this library by its path.
            let to = rootfs.join(LIBSTDBUF.trim_start_matches('/'));
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::copy(LIBSTDBUF, &to)
                .map_err(|e| format!("{LIBSTDBUF} (stdbuf's library, for the image): {e}"))?;
        }
        let packed = Command::new("tar")
            .arg("-C")
            .arg(&rootfs)
            .args(["--numeric-owner", "-cf"])
            .arg(&tar)
            .arg(".")
            .status()
            .is_ok_and(|s| s.success());
        if !packed {
            return Err(format!("tar of {} failed", rootfs.display()));
        }
        let tag = format!("vecring-fwd-{}", std::process::id());
        docker(&["import", &tar.display().to_string(), &tag])
            .map_err(|e| format!("docker import of the far side's image: {e}"))?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(Self { tag, made: true })
    }

    /// Removes the image if this run made it.
    pub fn remove(&self) {
        if self.made {
            let _ = docker(&["rmi", "-f", &self.tag]);
        }
    }
}
