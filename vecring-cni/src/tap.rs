//! Mode `tap`: the container's kernel interface, made in its network
//! namespace by `vecring tap --if-netns` on the host, which bridges it to
//! the link whose master is the switch's port. The process runs detached
//! (a session of its own, output to a log beside the state) and is known
//! by its pid and start time, so that DEL never signals a process that
//! merely reused the pid.

use crate::config::Config;
use crate::error::{code, CniError, Result};
use crate::state::Records;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vecring_core::internal::netns::NetNs;

/// How long the interface may take to appear.
const IF_UP: Duration = Duration::from_secs(10);

/// The `vecring` tool: the configuration's, or the one beside this
/// plugin, or the one on the `PATH`.
fn tool(cfg: &Config) -> PathBuf {
    if let Some(p) = &cfg.vecring {
        return p.clone();
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("vecring")));
    beside
        .filter(|p| p.exists())
        .or_else(|| {
            ["/usr/bin/vecring", "/usr/local/bin/vecring"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        })
        .unwrap_or_else(|| PathBuf::from("vecring"))
}

/// A process's start time (clock ticks since boot), from
/// `/proc/PID/stat`; `None` when there is no such process.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields count from
    // the last ')'. starttime is field 22, the 20th after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `(pid, start)` still runs.
pub fn alive(tap: (u32, u64)) -> bool {
    start_time(tap.0) == Some(tap.1)
}

/// Starts the bridge for `ifname` in `netns`, slave of `domain`/`link` in
/// the run directory; returns its (pid, start time) once the interface
/// exists, or why it did not come.
pub fn start(
    cfg: &Config,
    netns: &Path,
    ifname: &str,
    link: &str,
    (records, key): (&Records, &str),
) -> Result<(u32, u64)> {
    let out = records.log(key)?;
    let err = out.try_clone().map_err(|e| {
        let log = records.path(&format!("{key}.log"));
        CniError::new(code::STATE, format!("opening {}: {e}", log.display()), "")
    })?;
    let tool = tool(cfg);
    let mut cmd = Command::new(&tool);
    cmd.args([
        "tap",
        "--role",
        "slave",
        "--domain",
        &cfg.domain,
        "--link",
        link,
        "--ifname",
        ifname,
    ])
    .arg("--run-dir")
    .arg(&cfg.run_dir)
    .arg("--if-netns")
    .arg(netns)
    .args(["--queues", &cfg.queues.to_string()]);
    if let Some(mtu) = cfg.mtu {
        cmd.args(["--mtu", &mtu.to_string()]);
    }
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    // SAFETY: setsid in the child before exec; async-signal-safe. The
    // bridge outlives this plugin and must not share its session.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let mut child = cmd.spawn().map_err(|e| {
        CniError::new(
            code::TAP,
            format!("cannot start {}: {e}", tool.display()),
            "the vecring tool, for mode 'tap' ('vecring' in the configuration)",
        )
    })?;
    let pid = child.id();
    let start = start_time(pid).unwrap_or(0);
    let ns = NetNs::open(netns).map_err(|e| {
        CniError::new(
            code::INVALID_ENV,
            format!("CNI_NETNS {}: {e}", netns.display()),
            "",
        )
    })?;
    let end = Instant::now() + IF_UP;
    loop {
        let c = std::ffi::CString::new(ifname).expect("checked name");
        // SAFETY: a valid C string; the call only reads it.
        let index = ns
            .run(|| unsafe { libc::if_nametoindex(c.as_ptr()) })
            .unwrap_or(0);
        if index != 0 {
            // Not waited for: the bridge runs on after this plugin exits.
            drop(child);
            return Ok((pid, start));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CniError::new(
                code::TAP,
                format!("vecring tap exited ({status}) before {ifname} appeared"),
                records.log_tail(key, 5),
            ));
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CniError::new(
                code::TAP,
                format!("{ifname} did not appear in the container within {IF_UP:?}"),
                records.log_tail(key, 5),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops the bridge `(pid, start)`: SIGTERM, then SIGKILL after 3 s.
/// Nothing when it is gone (or its pid is another process's now).
pub fn stop(tap: (u32, u64)) {
    if !alive(tap) {
        return;
    }
    // SAFETY: signalling a pid whose start time we just matched.
    unsafe { libc::kill(tap.0 as libc::pid_t, libc::SIGTERM) };
    let end = Instant::now() + Duration::from_secs(3);
    while alive(tap) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    if alive(tap) {
        // SAFETY: as above, still the same process.
        unsafe { libc::kill(tap.0 as libc::pid_t, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_start_time_is_read() {
        let me = std::process::id();
        let t = start_time(me).expect("our stat");
        assert!(alive((me, t)));
        assert!(!alive((me, t + 1)));
        assert_eq!(start_time(u32::MAX), None);
    }
}
