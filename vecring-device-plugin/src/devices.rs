//! What the plugin hands out: a resource per domain (`vecring.dev/<domain>`),
//! one device per link of it, and what a container that gets some of them
//! is given (`Allocate`'s answer), in one of three ways:
//!
//! - `netns`: the environment only (`VECRING_DOMAIN`, `VECRING_LINK`,
//!   `VECRING_NETNS=self`): the link meets in the pod's network namespace,
//!   where the host's master listens (`docs/kubernetes.md`); nothing is
//!   mounted.
//! - `dir`: the domain directory, bound read-only at the same path, and
//!   `VECRING_RUN_DIR` with the rest: the kubelet makes the bind, so the
//!   pod's spec has no `hostPath`. A pod given the directory can reach
//!   every link's socket in it, and a master tells slaves apart only by
//!   uid, which pods share: so this mode hands out a domain of one link,
//!   never a link among others a pod could attach to instead.
//! - `cdi`: the CDI device `vecring.dev/link=<domain>-<link>` that `vecring
//!   cdi write --domain D --link L` made, for runtimes with CDI.

use crate::api::{CdiDevice, ContainerAllocateResponse, Device, Mount, HEALTHY};
use std::path::PathBuf;

/// How a container is given its links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Netns,
    Dir { run_dir: PathBuf },
    Cdi,
}

/// A domain's links, as devices.
#[derive(Debug, Clone)]
pub struct Devices {
    pub domain: String,
    pub links: Vec<String>,
    pub mode: Mode,
}

impl Devices {
    /// Checks the names (vecring-core's rules), that links are unique, and
    /// that mode `dir` has one.
    ///
    /// # Errors
    /// The first bad name, or a link given twice, or none, or several in
    /// mode `dir`.
    pub fn new(domain: &str, links: &[String], mode: Mode) -> Result<Devices, String> {
        vecring_core::name::validate("domain", domain).map_err(|e| e.to_string())?;
        if links.is_empty() {
            return Err("no --link: a device is a link of the domain".into());
        }
        for (i, l) in links.iter().enumerate() {
            vecring_core::name::validate("link", l).map_err(|e| e.to_string())?;
            if links[..i].contains(l) {
                return Err(format!("--link {l} is given twice"));
            }
        }
        if matches!(mode, Mode::Dir { .. }) && links.len() > 1 {
            return Err(format!(
                "--mode dir binds the whole domain directory into each pod given a link, and a \
                 pod could attach to any of the {} links in it instead of its own: give each \
                 link a domain (and a plugin) of its own, or use --mode netns",
                links.len()
            ));
        }
        Ok(Devices {
            domain: domain.into(),
            links: links.to_vec(),
            mode,
        })
    }

    /// `vecring.dev/<domain>`: what a pod asks for in its limits.
    pub fn resource_name(&self) -> String {
        format!("vecring.dev/{}", self.domain)
    }

    /// The plugin's socket, a name in the kubelet's directory.
    pub fn endpoint(&self) -> String {
        format!("vecring-{}.sock", self.domain)
    }

    /// Every link, healthy.
    pub fn list(&self) -> Vec<Device> {
        self.links
            .iter()
            .map(|l| Device {
                id: l.clone(),
                health: HEALTHY.into(),
                topology: None,
            })
            .collect()
    }

    /// What a container given the links `ids` gets. With several, the
    /// first is `VECRING_LINK` and all are `VECRING_LINKS`
    /// (comma-separated).
    ///
    /// # Errors
    /// An id that is no link of this domain, or none.
    pub fn allocate(&self, ids: &[String]) -> Result<ContainerAllocateResponse, String> {
        if ids.is_empty() {
            return Err("no device asked for".into());
        }
        if let Some(bad) = ids.iter().find(|id| !self.links.contains(id)) {
            return Err(format!(
                "{bad} is no link of {} (its devices: {})",
                self.resource_name(),
                self.links.join(", ")
            ));
        }
        let mut r = ContainerAllocateResponse::default();
        if self.mode == Mode::Cdi {
            r.cdi_devices = ids
                .iter()
                .map(|id| CdiDevice {
                    name: format!("vecring.dev/link={}-{id}", self.domain),
                })
                .collect();
            return Ok(r);
        }
        r.envs.insert("VECRING_DOMAIN".into(), self.domain.clone());
        r.envs.insert("VECRING_LINK".into(), ids[0].clone());
        r.envs.insert("VECRING_LINKS".into(), ids.join(","));
        match &self.mode {
            Mode::Netns => {
                r.envs.insert("VECRING_NETNS".into(), "self".into());
            }
            Mode::Dir { run_dir } => {
                let dir = run_dir.join(&self.domain).display().to_string();
                r.envs
                    .insert("VECRING_RUN_DIR".into(), run_dir.display().to_string());
                r.mounts.push(Mount {
                    container_path: dir.clone(),
                    host_path: dir,
                    read_only: true,
                });
            }
            Mode::Cdi => unreachable!("answered above"),
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_are_checked() {
        assert!(Devices::new("k8s", &links(&["net1"]), Mode::Netns).is_ok());
        assert!(Devices::new("../x", &links(&["net1"]), Mode::Netns).is_err());
        assert!(Devices::new("k8s", &links(&[]), Mode::Netns).is_err());
        assert!(Devices::new("k8s", &links(&["a", "a"]), Mode::Netns)
            .unwrap_err()
            .contains("twice"));
    }

    #[test]
    fn each_mode_gives_what_it_says() {
        let ids = links(&["net2", "net1"]);
        let d = Devices::new("k8s", &links(&["net1", "net2"]), Mode::Netns).unwrap();
        let r = d.allocate(&ids).unwrap();
        assert_eq!(r.envs["VECRING_LINK"], "net2");
        assert_eq!(r.envs["VECRING_LINKS"], "net2,net1");
        assert_eq!(r.envs["VECRING_NETNS"], "self");
        assert!(r.mounts.is_empty());
        let dir = || Mode::Dir {
            run_dir: "/run/vecring".into(),
        };
        let e = Devices::new("k8s", &links(&["net1", "net2"]), dir()).unwrap_err();
        assert!(e.contains("domain (and a plugin) of its own"), "{e}");
        let d = Devices::new("k8s", &links(&["net1"]), dir()).unwrap();
        let r = d.allocate(&links(&["net1"])).unwrap();
        assert_eq!(r.mounts[0].host_path, "/run/vecring/k8s");
        assert!(r.mounts[0].read_only);
        assert_eq!(r.envs["VECRING_RUN_DIR"], "/run/vecring");
        let d = Devices::new("k8s", &links(&["net1", "net2"]), Mode::Cdi).unwrap();
        let r = d.allocate(&ids).unwrap();
        assert_eq!(r.cdi_devices[0].name, "vecring.dev/link=k8s-net2");
        assert!(r.envs.is_empty());
        assert!(d
            .allocate(&links(&["net9"]))
            .unwrap_err()
            .contains("no link"));
    }
}
