//! What ADD made, written before it makes it: the TAP bridge's process
//! (its pid and start time, so that a pid reused after a reboot or a crash
//! is never signalled), for DEL and CHECK. The switch's port needs no
//! state: its name comes from the container's id and interface.

use crate::error::{code, CniError, Result};
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// One ADD's record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub port: String,
    pub bridge: String,
    /// The TAP bridge: (pid, start time in clock ticks since boot).
    pub tap: Option<(u32, u64)>,
}

fn state_error(what: &str, path: &Path, e: impl std::fmt::Display) -> CniError {
    CniError::new(
        code::STATE,
        format!("{what} {}: {e}", path.display()),
        "the plugin's state directory ('stateDir')",
    )
}

/// The record's file.
pub fn path(dir: &Path, container_id: &str, ifname: &str) -> PathBuf {
    dir.join(format!("{container_id}-{ifname}.json"))
}

impl State {
    /// Reads the record, if there is one.
    pub fn load(file: &Path) -> Result<Option<State>> {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_error("reading", file, e)),
        };
        let v: Value = serde_json::from_str(&text).map_err(|e| state_error("parsing", file, e))?;
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let tap = match (
            v.get("tapPid").and_then(Value::as_u64),
            v.get("tapStart").and_then(Value::as_u64),
        ) {
            (Some(pid), Some(start)) => Some((pid as u32, start)),
            _ => None,
        };
        Ok(Some(State {
            port: s("port"),
            bridge: s("bridge"),
            tap,
        }))
    }

    /// Writes the record: a new file renamed over the old, root's alone.
    pub fn save(&self, file: &Path) -> Result<()> {
        let dir = file.parent().unwrap_or(Path::new("/"));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| state_error("creating", dir, e))?;
        let v = json!({
            "port": self.port,
            "bridge": self.bridge,
            "tapPid": self.tap.map(|t| t.0),
            "tapStart": self.tap.map(|t| t.1),
        });
        let tmp = file.with_extension("json.tmp");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| state_error("writing", &tmp, e))?;
        f.write_all(v.to_string().as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| state_error("writing", &tmp, e))?;
        std::fs::rename(&tmp, file).map_err(|e| state_error("renaming", file, e))
    }

    /// Removes the record; nothing if it is gone.
    pub fn remove(file: &Path) -> Result<()> {
        match std::fs::remove_file(file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(state_error("removing", file, e))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_goes() {
        let dir = std::env::temp_dir().join(format!("vecring-cni-state-{}", std::process::id()));
        let file = path(&dir, "abc", "net1");
        assert_eq!(State::load(&file).unwrap(), None);
        let s = State {
            port: "vr0123".into(),
            bridge: "br0".into(),
            tap: Some((42, 4242)),
        };
        s.save(&file).unwrap();
        assert_eq!(State::load(&file).unwrap(), Some(s));
        State::remove(&file).unwrap();
        State::remove(&file).unwrap();
        assert_eq!(State::load(&file).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
