//! DPDK's tools (secondary processes such as `dpdk-proc-info`, and
//! `dpdk-telemetry.py`) against a testpmd with a shared configuration:
//! running them under a watchdog, and removing the runtime files such a
//! primary leaves behind.

use crate::testpmd::Env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Seconds a DPDK tool may run (the `timeout` around it).
pub const TOOL_WATCHDOG: &str = "30";

/// testpmd's runtime directory and hugepage files, removed on drop (a
/// primary with a shared configuration leaves them behind).
pub struct RuntimeFiles {
    pub prefix: String,
}

impl RuntimeFiles {
    pub fn dir(&self) -> PathBuf {
        Path::new("/var/run/dpdk").join(&self.prefix)
    }
}

impl Drop for RuntimeFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.dir());
        let map = format!("{}map_", self.prefix);
        if let Ok(d) = std::fs::read_dir("/dev/hugepages") {
            for e in d.flatten() {
                if e.file_name().to_string_lossy().starts_with(&map) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

/// Runs a DPDK tool under `timeout`; returns its stdout and stderr after
/// checking that it succeeded.
pub fn run_tool(cmd: &mut Command, what: &str) -> (String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what}: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// `dpdk-proc-info` with the PMD loaded, on testpmd's file prefix.
pub fn proc_info(env: &Env, prefix: &str, what: &str) -> String {
    let (out, _) = run_tool(
        Command::new("timeout")
            .args([TOOL_WATCHDOG, "dpdk-proc-info", "-d"])
            .arg(&env.so)
            .args(["--no-pci", "--file-prefix", prefix, "--", what]),
        &format!("dpdk-proc-info {what}"),
    );
    out
}
