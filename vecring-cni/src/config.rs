//! The plugin's input: the CNI environment variables and the network
//! configuration on stdin, checked before anything is touched.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "vecnet", "type": "vecring-cni",
//!  "mode": "tap", "bridge": "br0", "ovsdb": "unix:/run/openvswitch/db.sock",
//!  "domain": "cni", "ifname": "net1", "queues": 1}
//! ```

use crate::error::{code, CniError, Result};
use serde_json::Value;
use std::path::PathBuf;

/// The plugin's records by default: root's, apart from the run directory,
/// whose domain directories belong to the masters (a switch may run as a
/// user of its own) and may be bound into pods.
pub const DEFAULT_STATE_DIR: &str = "/run/vecring-cni";

/// The CNI versions this plugin speaks: results and errors take the
/// configuration's; the plugin adds its interface and passes the rest of
/// the previous result through unchanged.
pub const SUPPORTED_VERSIONS: &[&str] = &["0.3.0", "0.3.1", "0.4.0", "1.0.0"];

/// What the container gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A vecring link its DPDK application (or the `vecring` tool) opens
    /// with `netns=self`, whose master is a port of the switch listening
    /// in the container's network namespace. No kernel interface.
    Dpdk,
    /// A kernel interface in the container, bridged by `vecring tap` on the
    /// host to a link whose master is a port of the switch.
    Tap,
}

/// The CNI command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Add,
    Del,
    Check,
    Version,
}

/// The environment the runtime set.
#[derive(Debug, Clone)]
pub struct Env {
    pub command: Command,
    pub container_id: String,
    /// Missing on DEL when the namespace is already gone.
    pub netns: Option<PathBuf>,
    pub ifname: String,
}

/// The checked network configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub cni_version: String,
    pub mode: Mode,
    pub bridge: String,
    pub ovsdb: Option<String>,
    pub domain: String,
    /// Dpdk: the link's name in the container's namespace.
    pub link: Option<String>,
    /// Tap: the container's interface (default: `CNI_IFNAME`).
    pub ifname: Option<String>,
    pub queues: u16,
    pub mtu: Option<u32>,
    pub run_dir: PathBuf,
    pub state_dir: PathBuf,
    pub vecring: Option<PathBuf>,
    pub ovs_vsctl: Option<PathBuf>,
    pub prev_result: Option<Value>,
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn bad_env(msg: String) -> CniError {
    CniError::new(
        code::INVALID_ENV,
        msg,
        "see the CNI specification's parameters",
    )
}

/// A container id or interface name that names our files and ports: the
/// characters runtimes use, nothing that could leave a directory.
fn check_token(what: &str, v: &str, max: usize) -> Result<()> {
    let ok = !v.is_empty()
        && v.len() <= max
        && !v.starts_with('.')
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(bad_env(format!(
            "{what} '{v}' must be 1 to {max} of [A-Za-z0-9_.-], not starting with '.'"
        )))
    }
}

impl Env {
    /// Reads `CNI_COMMAND` and, for every command but VERSION, the rest.
    pub fn from_env() -> Result<Env> {
        let command = match env_var("CNI_COMMAND").as_deref() {
            Some("ADD") => Command::Add,
            Some("DEL") => Command::Del,
            Some("CHECK") => Command::Check,
            Some("VERSION") => Command::Version,
            Some(other) => {
                return Err(bad_env(format!(
                    "CNI_COMMAND '{other}' is not ADD, DEL, CHECK or VERSION"
                )))
            }
            None => return Err(bad_env("CNI_COMMAND is not set".into())),
        };
        if command == Command::Version {
            return Ok(Env {
                command,
                container_id: String::new(),
                netns: None,
                ifname: String::new(),
            });
        }
        let container_id = env_var("CNI_CONTAINERID")
            .ok_or_else(|| bad_env("CNI_CONTAINERID is not set".into()))?;
        check_token("CNI_CONTAINERID", &container_id, 256)?;
        let ifname =
            env_var("CNI_IFNAME").ok_or_else(|| bad_env("CNI_IFNAME is not set".into()))?;
        check_token("CNI_IFNAME", &ifname, 15)?;
        let netns = env_var("CNI_NETNS").map(PathBuf::from);
        if command != Command::Del && netns.is_none() {
            return Err(bad_env("CNI_NETNS is not set".into()));
        }
        if let Some(p) = &netns {
            if !p.is_absolute() {
                return Err(bad_env(format!(
                    "CNI_NETNS '{}' is not an absolute path",
                    p.display()
                )));
            }
        }
        Ok(Env {
            command,
            container_id,
            netns,
            ifname,
        })
    }
}

fn bad_config(msg: String) -> CniError {
    CniError::new(
        code::INVALID_CONFIG,
        msg,
        "the network configuration of vecring-cni (docs/kubernetes.md)",
    )
}

fn string(v: &Value, key: &str) -> Result<Option<String>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(bad_config(format!("'{key}' must be a string, not {other}"))),
    }
}

fn path(v: &Value, key: &str) -> Result<Option<PathBuf>> {
    match string(v, key)? {
        Some(s) if s.starts_with('/') && !s.split('/').any(|c| c == "..") => {
            Ok(Some(PathBuf::from(s)))
        }
        Some(s) => Err(bad_config(format!(
            "'{key}' must be an absolute path without '..', not '{s}'"
        ))),
        None => Ok(None),
    }
}

fn name(v: &Value, key: &'static str) -> Result<Option<String>> {
    let Some(s) = string(v, key)? else {
        return Ok(None);
    };
    vecring_core::name::validate(key, &s).map_err(|e| bad_config(e.to_string()))?;
    Ok(Some(s))
}

impl Config {
    /// Parses and checks the configuration the runtime gave on stdin.
    pub fn parse(text: &str) -> Result<Config> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| bad_config(format!("the network configuration is not JSON: {e}")))?;
        if !v.is_object() {
            return Err(bad_config(
                "the network configuration is not a JSON object".into(),
            ));
        }
        let cni_version = string(&v, "cniVersion")?.unwrap_or_else(|| "1.0.0".into());
        if !SUPPORTED_VERSIONS.contains(&cni_version.as_str()) {
            return Err(CniError::new(
                code::INCOMPATIBLE_VERSION,
                format!("CNI version {cni_version} is not supported"),
                format!("supported: {}", SUPPORTED_VERSIONS.join(", ")),
            ));
        }
        let mode = match string(&v, "mode")?.as_deref() {
            Some("dpdk") => Mode::Dpdk,
            Some("tap") => Mode::Tap,
            Some(other) => {
                return Err(bad_config(format!(
                    "unknown mode '{other}': use 'dpdk' or 'tap'"
                )))
            }
            None => return Err(bad_config("'mode' is missing: 'dpdk' or 'tap'".into())),
        };
        let bridge = string(&v, "bridge")?.ok_or_else(|| {
            bad_config("'bridge' is missing: the Open vSwitch bridge to add the port to".into())
        })?;
        if bridge.is_empty()
            || bridge.len() > 64
            || bridge
                .bytes()
                .any(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'))
        {
            return Err(bad_config(format!(
                "bridge '{bridge}' is not a bridge name"
            )));
        }
        let queues = match v.get("queues") {
            None | Some(Value::Null) => 1,
            Some(q) => q
                .as_u64()
                .and_then(|n| vecring_core::geometry::check_queues(n).ok())
                .ok_or_else(|| {
                    bad_config(format!(
                        "'queues' must be 1 to {}, not {q}",
                        vecring_core::MAX_QUEUES
                    ))
                })?,
        };
        let mtu = match v.get("mtu") {
            None | Some(Value::Null) => None,
            Some(m) => Some(
                m.as_u64()
                    .filter(|n| (68..=9202).contains(n))
                    .ok_or_else(|| bad_config(format!("'mtu' must be 68 to 9202, not {m}")))?
                    as u32,
            ),
        };
        let ifname = string(&v, "ifname")?;
        if let Some(i) = &ifname {
            check_token("ifname", i, 15).map_err(|e| bad_config(e.msg))?;
        }
        if mode == Mode::Dpdk && (ifname.is_some() || mtu.is_some()) {
            return Err(bad_config(
                "'ifname' and 'mtu' are for mode 'tap': in mode 'dpdk' the container gets no kernel interface".into(),
            ));
        }
        if mode == Mode::Tap && v.get("link").is_some() {
            return Err(bad_config(
                "'link' is for mode 'dpdk': in mode 'tap' the link is the plugin's own".into(),
            ));
        }
        let prev_result = v.get("prevResult").filter(|p| !p.is_null()).cloned();
        Ok(Config {
            cni_version,
            mode,
            bridge,
            ovsdb: string(&v, "ovsdb")?,
            domain: name(&v, "domain")?.unwrap_or_else(|| "cni".into()),
            link: name(&v, "link")?,
            ifname,
            queues,
            mtu,
            run_dir: path(&v, "runDir")?
                .unwrap_or_else(|| PathBuf::from(vecring_core::link::DEFAULT_RUN_DIR)),
            state_dir: path(&v, "stateDir")?.unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR)),
            vecring: path(&v, "vecring")?,
            ovs_vsctl: path(&v, "ovsVsctl")?,
            prev_result,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> CniError {
        Config::parse(text).unwrap_err()
    }

    #[test]
    fn a_minimal_configuration_takes_the_defaults() {
        let c = Config::parse(r#"{"cniVersion":"1.0.0","mode":"tap","bridge":"br0"}"#).unwrap();
        assert_eq!(c.mode, Mode::Tap);
        assert_eq!(c.domain, "cni");
        assert_eq!(c.queues, 1);
        assert_eq!(c.state_dir, PathBuf::from("/run/vecring-cni"));
    }

    #[test]
    fn bad_configurations_are_named() {
        assert_eq!(err("[1]").code, code::INVALID_CONFIG);
        assert!(err(r#"{"mode":"vhost","bridge":"b"}"#)
            .msg
            .contains("unknown mode 'vhost'"));
        assert!(err(r#"{"mode":"tap"}"#).msg.contains("'bridge' is missing"));
        assert!(err(r#"{"mode":"tap","bridge":"b r"}"#)
            .msg
            .contains("not a bridge name"));
        assert!(err(r#"{"mode":"tap","bridge":"b","queues":17}"#)
            .msg
            .contains("'queues'"));
        assert!(err(r#"{"mode":"tap","bridge":"b","stateDir":"rel"}"#)
            .msg
            .contains("absolute"));
        assert!(err(r#"{"mode":"tap","bridge":"b","domain":"../x"}"#).code == code::INVALID_CONFIG);
        assert!(err(r#"{"mode":"dpdk","bridge":"b","ifname":"net1"}"#)
            .msg
            .contains("mode 'tap'"));
        assert!(err(r#"{"mode":"tap","bridge":"b","link":"l"}"#)
            .msg
            .contains("mode 'dpdk'"));
        assert_eq!(
            err(r#"{"cniVersion":"9.9.9","mode":"tap","bridge":"b"}"#).code,
            code::INCOMPATIBLE_VERSION
        );
    }

    #[test]
    fn tokens_cannot_leave_a_directory() {
        assert!(check_token("id", "abc-1.2_3", 64).is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "a\nb"] {
            assert!(check_token("id", bad, 64).is_err(), "{bad:?}");
        }
        assert!(check_token("if", "a234567890123456", 15).is_err());
    }
}
