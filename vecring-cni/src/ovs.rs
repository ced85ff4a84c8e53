//! The switch: an Open vSwitch with DPDK, changed through `ovs-vsctl`. The
//! plugin adds one `dpdk` port per container interface (its
//! `dpdk-devargs` an `eth_vecring` master) and removes it by name, so that
//! DEL needs nothing but the configuration and the container's id.

use crate::error::{code, CniError, Result};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a port may take to come up in the switch.
const PORT_UP: Duration = Duration::from_secs(10);

/// `ovs-vsctl` against one database.
pub struct Ovs {
    vsctl: PathBuf,
    db: Option<String>,
}

/// The port's name: `vr` and 12 hex digits of a hash of the container's id
/// and interface, so that it fits an interface name (15 bytes) and DEL
/// finds it from the same two.
pub fn port_name(container_id: &str, ifname: &str) -> String {
    // FNV-1a, 64 bits: stable across builds and releases.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in container_id.bytes().chain([0]).chain(ifname.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("vr{:012x}", h >> 16)
}

impl Ovs {
    pub fn new(vsctl: Option<PathBuf>, db: Option<String>) -> Ovs {
        let vsctl = vsctl.unwrap_or_else(|| {
            // Runtimes may run plugins with a short PATH.
            ["/usr/bin/ovs-vsctl", "/usr/local/bin/ovs-vsctl"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
                .unwrap_or_else(|| PathBuf::from("ovs-vsctl"))
        });
        Ovs { vsctl, db }
    }

    fn run(&self, args: &[&str]) -> Result<String> {
        let mut cmd = Command::new(&self.vsctl);
        cmd.arg("--timeout=10");
        if let Some(db) = &self.db {
            cmd.arg(format!("--db={db}"));
        }
        let out = cmd.args(args).output().map_err(|e| {
            CniError::new(
                code::TRY_AGAIN,
                format!("cannot run {}: {e}", self.vsctl.display()),
                "the switch's tools are not installed where the plugin looks ('ovsVsctl')",
            )
        })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).trim().to_string());
        }
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        // A database that does not answer is the switch being away, not a
        // bad request: the runtime may try again.
        let c = if err.contains("database connection failed") || err.contains("timeout") {
            code::TRY_AGAIN
        } else {
            code::OVS
        };
        Err(CniError::new(
            c,
            format!(
                "ovs-vsctl {}: {err}",
                args.iter()
                    .find(|a| !a.starts_with("--"))
                    .copied()
                    .unwrap_or("")
            ),
            format!("database {}", self.db.as_deref().unwrap_or("(default)")),
        ))
    }

    /// Fails unless the switch answers and has `bridge`.
    pub fn check_bridge(&self, bridge: &str) -> Result<()> {
        let list = self.run(&["list-br"])?;
        if list.lines().any(|b| b == bridge) {
            Ok(())
        } else {
            Err(CniError::new(
                code::INVALID_CONFIG,
                format!("the switch has no bridge '{bridge}'"),
                format!(
                    "its bridges: [{}]",
                    list.lines().collect::<Vec<_>>().join(", ")
                ),
            ))
        }
    }

    /// Adds `port` to `bridge` with `devargs` and `queues` receive queues,
    /// and waits until the switch runs it (or says why not).
    pub fn add_port(&self, bridge: &str, port: &str, devargs: &str, queues: u16) -> Result<()> {
        let dev = format!("options:dpdk-devargs={devargs}");
        let rxq = format!("options:n_rxq={queues}");
        self.run(&[
            "add-port",
            bridge,
            port,
            "--",
            "set",
            "Interface",
            port,
            "type=dpdk",
            &dev,
            &rxq,
        ])?;
        let end = Instant::now() + PORT_UP;
        loop {
            let ofport = self.run(&["get", "Interface", port, "ofport"])?;
            if ofport.parse::<i64>().is_ok_and(|n| n > 0) {
                return Ok(());
            }
            let error = self.run(&["get", "Interface", port, "error"])?;
            if !error.is_empty() && error != "[]" {
                return Err(CniError::new(
                    code::OVS,
                    format!(
                        "the switch could not open port {port}: {}",
                        error.trim_matches('"')
                    ),
                    format!("dpdk-devargs {devargs}"),
                ));
            }
            if Instant::now() >= end {
                return Err(CniError::new(
                    code::OVS,
                    format!("port {port} did not come up in the switch within {PORT_UP:?}"),
                    format!("dpdk-devargs {devargs}"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Removes `port` from `bridge`; nothing if it is not there.
    pub fn del_port(&self, bridge: &str, port: &str) -> Result<()> {
        self.run(&["--if-exists", "del-port", bridge, port])
            .map(|_| ())
    }

    /// Fails unless `port` is on `bridge` and running.
    pub fn check_port(&self, bridge: &str, port: &str) -> Result<()> {
        let on = self.run(&["port-to-br", port]).map_err(|_| {
            CniError::new(
                code::OVS,
                format!("port {port} is not in the switch"),
                format!("bridge {bridge}"),
            )
        })?;
        if on != bridge {
            return Err(CniError::new(
                code::OVS,
                format!("port {port} is on bridge {on}, not {bridge}"),
                "",
            ));
        }
        let ofport = self.run(&["get", "Interface", port, "ofport"])?;
        if ofport.parse::<i64>().is_ok_and(|n| n > 0) {
            Ok(())
        } else {
            Err(CniError::new(
                code::OVS,
                format!("port {port} is not running (ofport {ofport})"),
                "",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_names_fit_an_interface_and_differ() {
        let a = port_name("0123456789abcdef", "net1");
        assert_eq!(a.len(), 14);
        assert!(a.starts_with("vr"));
        assert_eq!(a, port_name("0123456789abcdef", "net1"));
        assert_ne!(a, port_name("0123456789abcdef", "net2"));
        assert_ne!(a, port_name("0123456789abcdee", "net1"));
    }
}
