//! A Docker or Podman container as its runtime describes it: found by
//! asking `docker inspect` (Debian's own client when there), then `podman
//! inspect`, each with a deadline; `DOCKER_HOST` and Podman's
//! configuration variables apply as for the operator's own commands.

use crate::escape::shell_quote;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a runtime may take to answer `inspect`.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(20);

/// One bind (or other) mount of the container.
pub(super) struct Mount {
    pub kind: String,
    pub source: PathBuf,
    pub dest: PathBuf,
    pub rw: bool,
    /// Docker's mode (`rw,z`), Podman's options, joined.
    pub options: String,
}

/// What `inspect` says of a container.
pub(super) struct Inspected {
    /// `docker` or `podman`: the command its fixes name.
    pub runtime: &'static str,
    /// The name the operator gave.
    pub name: String,
    pub running: bool,
    /// Its init process, as the host sees it.
    pub pid: i32,
    /// `Config.User` (`uid[:gid]` or names; empty: the image's root).
    pub user: String,
    /// `Config.Env`.
    pub env: Vec<String>,
    pub mounts: Vec<Mount>,
    pub apparmor: String,
    pub selinux_label: String,
}

impl Inspected {
    fn parse(runtime: &'static str, name: &str, doc: &Value) -> Inspected {
        let c = &doc[0];
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        let mounts = c["Mounts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| Mount {
                kind: s(&m["Type"]),
                source: PathBuf::from(s(&m["Source"])),
                dest: PathBuf::from(s(&m["Destination"])),
                rw: m["RW"].as_bool().unwrap_or(false),
                options: match m["Options"].as_array() {
                    Some(o) => o
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(","),
                    None => s(&m["Mode"]),
                },
            })
            .collect();
        Inspected {
            runtime,
            name: name.to_string(),
            running: c["State"]["Running"].as_bool().unwrap_or(false),
            pid: c["State"]["Pid"]
                .as_i64()
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            user: s(&c["Config"]["User"]),
            env: c["Config"]["Env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_string))
                .collect(),
            mounts,
            apparmor: s(&c["AppArmorProfile"]),
            selinux_label: s(&c["ProcessLabel"]),
        }
    }

    /// The fix that recreates the container with `options` added.
    pub(super) fn recreate(&self, options: &str) -> String {
        format!(
            "recreate it ({rt} rm -f {n}, then {rt} run with its options) adding: {options}",
            rt = self.runtime,
            n = shell_quote(&self.name)
        )
    }

    /// The container's root file system as the host reaches it.
    pub(super) fn root(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.pid))
    }
}

/// Runs `cmd` with a deadline: its standard output when it succeeds, else
/// the first line of what it said.
fn bounded(cmd: &mut Command) -> Result<Vec<u8>, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("not installed ({e})"))?;
    let mut out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < INSPECT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer in {} s", INSPECT_TIMEOUT.as_secs()));
            }
        }
    };
    let stdout = reader.join().unwrap_or_default();
    if status.success() {
        return Ok(stdout);
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    Err(err.lines().next().unwrap_or("failed").trim().to_string())
}

/// Asks Docker, then Podman, for the container `name`.
pub(super) fn find(name: &str) -> Result<Inspected, String> {
    // Debian's own docker client, when there, before any other on PATH.
    let docker = if Path::new("/usr/bin/docker").exists() {
        "/usr/bin/docker"
    } else {
        "docker"
    };
    let mut why = Vec::new();
    for (runtime, bin) in [("docker", docker), ("podman", "podman")] {
        let out = bounded(Command::new(bin).args(["inspect", "--type", "container", "--", name]));
        match out.and_then(|o| serde_json::from_slice::<Value>(&o).map_err(|e| e.to_string())) {
            Ok(doc) if doc[0].is_object() => return Ok(Inspected::parse(runtime, name, &doc)),
            Ok(_) => why.push(format!("{runtime}: no such container")),
            Err(e) => why.push(format!("{runtime}: {e}")),
        }
    }
    Err(why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_and_podman_documents_are_read_alike() {
        let docker = r#"[{"State":{"Running":true,"Pid":42},"Config":{"User":"1000:1000","Env":["PATH=/bin"]},
            "Mounts":[{"Type":"bind","Source":"/run/vecring/web","Destination":"/run/vecring/web","Mode":"rw,z","RW":true}],
            "AppArmorProfile":"docker-default","ProcessLabel":""}]"#;
        let podman = r#"[{"State":{"Running":true,"Pid":42},"Config":{"User":"1000:1000","Env":["PATH=/bin"]},
            "Mounts":[{"Type":"bind","Source":"/run/vecring/web","Destination":"/run/vecring/web","Options":["rbind"],"RW":true}],
            "AppArmorProfile":"","ProcessLabel":""}]"#;
        for (rt, text, opts) in [("docker", docker, "rw,z"), ("podman", podman, "rbind")] {
            let c = Inspected::parse(rt, "web", &serde_json::from_str(text).unwrap());
            assert!(c.running);
            assert_eq!((c.pid, c.user.as_str()), (42, "1000:1000"));
            assert_eq!(c.mounts[0].source, Path::new("/run/vecring/web"));
            assert_eq!(c.mounts[0].options, opts);
            assert_eq!(c.env, ["PATH=/bin"]);
        }
        let c = Inspected::parse("docker", "a b", &serde_json::from_str(docker).unwrap());
        assert_eq!(
            c.recreate("--tmpfs /tmp"),
            "recreate it (docker rm -f 'a b', then docker run with its options) adding: --tmpfs /tmp"
        );
    }
}
