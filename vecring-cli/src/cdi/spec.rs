//! The CDI spec vecring writes: its kind, its devices and their container
//! edits, and the edits of an existing spec (merge, removal) on its JSON
//! document, so that fields vecring does not write survive.
//!
//! One device gives a container one domain of the host (see
//! [`super`]): the environment the application reads
//! ([`ENV_DOMAIN`], [`ENV_LINK`], and [`ENV_RUN_DIR`] or [`ENV_NETNS`])
//! and, in directory mode, the bind mount of the domain directory at the
//! path it has on the host; in network-namespace mode nothing is mounted.
//! A device is vecring's when its `containerEdits.env` names a domain; its
//! identity is its (domain, link) pair, read back from that env, never
//! parsed out of the device's name (which `-` joins ambiguously).

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// The kind of every device vecring writes: vendor `vecring.dev`, class
/// `link` (`podman run --device vecring.dev/link=NAME`).
pub const KIND: &str = "vecring.dev/link";

/// The CDI version written: the oldest that has `containerEdits.env` and
/// `mounts` and that current CDI libraries still accept (they accept every
/// version from it to their own; Podman 4.3.1's accepts up to 0.5.0).
pub const CDI_VERSION: &str = "0.3.0";
/// The version a spec needs when a device's name starts with a digit
/// (before 0.5.0 a name started with a letter; libraries that check it
/// refuse the whole file).
pub const CDI_VERSION_DIGIT_NAMES: &str = "0.5.0";

/// The domain the device gives (always set).
pub const ENV_DOMAIN: &str = "VECRING_DOMAIN";
/// The link, for a device of one link (unset for a domain's device: the
/// application names its links).
pub const ENV_LINK: &str = "VECRING_LINK";
/// The run directory, in directory mode (the domain directory's parent, as
/// mounted in the container).
pub const ENV_RUN_DIR: &str = "VECRING_RUN_DIR";
/// `self`, in network-namespace mode: the link meets in the container's
/// own network namespace (the tool's `--netns self`).
pub const ENV_NETNS: &str = "VECRING_NETNS";

/// Options of the bind mount: read-only (the slave connects to the socket
/// through it all the same, and nobody in the container can change the
/// directory), and nothing on it can be a device, set-uid or executable.
const MOUNT_OPTIONS: [&str; 5] = ["bind", "ro", "nosuid", "nodev", "noexec"];

/// One device vecring writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// The domain.
    pub domain: String,
    /// The link, or `None` for the whole domain.
    pub link: Option<String>,
    /// Where the link is found.
    pub mode: Mode,
}

/// How the container reaches the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The domain directory under this run directory, bind-mounted at the
    /// same path.
    Directory(PathBuf),
    /// The abstract socket in the container's own network namespace, where
    /// the host's master listens (`--netns /proc/PID/ns/net`): nothing
    /// mounted.
    Netns,
}

impl Device {
    /// The device's name: the domain, or `<domain>-<link>`.
    pub fn name(&self) -> String {
        match &self.link {
            Some(l) => format!("{}-{l}", self.domain),
            None => self.domain.clone(),
        }
    }

    /// Checks that the name is one CDI takes: of letters, digits and `-`,
    /// `_`, `.`, starting and ending with a letter or a digit (vecring's
    /// names may also start with `_` and end with `_`, `-` or `.`). A
    /// runtime refuses the whole spec file when one device's name is not.
    ///
    /// # Errors
    /// The name, and why.
    pub fn check_name(&self) -> Result<(), String> {
        let name = self.name();
        let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        if alnum(name.chars().next()) && alnum(name.chars().last()) {
            Ok(())
        } else {
            Err(format!(
                "the device name {name} ({}) is not one CDI takes: it must start and end with a letter or a digit (a runtime would refuse the whole spec file)",
                describe(self)
            ))
        }
    }

    /// `vecring.dev/link=<name>`, what `--device` takes.
    pub fn qualified(&self) -> String {
        format!("{KIND}={}", self.name())
    }

    /// The domain directory, in directory mode.
    pub fn domain_dir(&self) -> Option<PathBuf> {
        match &self.mode {
            Mode::Directory(run) => Some(run.join(&self.domain)),
            Mode::Netns => None,
        }
    }

    /// The device's entry in the spec's `devices`.
    ///
    /// # Errors
    /// A run directory that is not UTF-8 (JSON cannot carry it).
    pub fn to_json(&self) -> Result<Value, String> {
        let mut env = vec![format!("{ENV_DOMAIN}={}", self.domain)];
        if let Some(l) = &self.link {
            env.push(format!("{ENV_LINK}={l}"));
        }
        let mut edits = Map::new();
        match &self.mode {
            Mode::Directory(run) => {
                let text = |p: &Path| {
                    p.to_str().map(str::to_owned).ok_or_else(|| {
                        format!(
                            "{}: not UTF-8, which a CDI spec cannot name",
                            crate::escape::printable(&p.to_string_lossy())
                        )
                    })
                };
                env.push(format!("{ENV_RUN_DIR}={}", text(run)?));
                let dir = text(&run.join(&self.domain))?;
                edits.insert(
                    "mounts".into(),
                    json!([{"hostPath": dir, "containerPath": dir, "options": MOUNT_OPTIONS}]),
                );
            }
            Mode::Netns => env.push(format!("{ENV_NETNS}=self")),
        }
        edits.insert("env".into(), json!(env));
        Ok(json!({"name": self.name(), "containerEdits": edits}))
    }

    /// The vecring device an entry of `devices` is, if it is one: a
    /// `VECRING_DOMAIN` in its env, and `VECRING_NETNS` or
    /// `VECRING_RUN_DIR`.
    pub fn from_json(entry: &Value) -> Option<Device> {
        let env = entry.pointer("/containerEdits/env")?.as_array()?;
        let var = |key: &str| {
            env.iter().filter_map(Value::as_str).find_map(|kv| {
                kv.strip_prefix(key)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(str::to_owned)
            })
        };
        let mode = match var(ENV_NETNS) {
            Some(_) => Mode::Netns,
            None => Mode::Directory(PathBuf::from(var(ENV_RUN_DIR)?)),
        };
        Some(Device {
            domain: var(ENV_DOMAIN)?,
            link: var(ENV_LINK),
            mode,
        })
    }
}

/// A new spec holding `devices`.
///
/// # Errors
/// As [`Device::to_json`].
pub fn new_spec(devices: &[Device]) -> Result<Value, String> {
    let mut spec = json!({"cdiVersion": CDI_VERSION, "kind": KIND, "devices": []});
    merge(&mut spec, devices)?;
    Ok(spec)
}

/// Checks that `spec` is a CDI spec of [`KIND`] with a `devices` array,
/// and returns that array.
///
/// # Errors
/// What it is instead.
pub fn devices_of(spec: &mut Value) -> Result<&mut Vec<Value>, String> {
    let kind = spec.get("kind").and_then(Value::as_str);
    if kind != Some(KIND) {
        return Err(format!(
            "a CDI spec of kind {}, not {KIND}",
            kind.map_or_else(|| "(none)".to_string(), |k| format!("'{k}'"))
        ));
    }
    let version = spec.get("cdiVersion").and_then(Value::as_str);
    if version.and_then(parse_version).is_none() {
        return Err(format!(
            "cdiVersion {}: not a version x.y.z",
            version.map_or_else(|| "(none)".to_string(), |v| format!("'{v}'"))
        ));
    }
    spec.get_mut("devices")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| "no devices array".to_string())
}

/// Puts `devices` into `spec` (checked by [`devices_of`]), each replacing
/// the device of its name; the spec's version is raised to [`CDI_VERSION`]
/// (or [`CDI_VERSION_DIGIT_NAMES`] when a device's name starts with a
/// digit) if older, and kept if newer.
///
/// # Errors
/// A name CDI does not take ([`Device::check_name`]), a name already taken
/// by a device that gives another domain or link (or is not vecring's),
/// and [`Device::to_json`]'s.
pub fn merge(spec: &mut Value, devices: &[Device]) -> Result<(), String> {
    for d in devices {
        d.check_name()?;
    }
    let list = devices_of(spec)?;
    for d in devices {
        let name = d.name();
        let entry = d.to_json()?;
        match list
            .iter_mut()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name.as_str()))
        {
            Some(old) => {
                match Device::from_json(old) {
                    Some(o) if o.domain == d.domain && o.link == d.link => {}
                    Some(o) => {
                        return Err(format!(
                            "the device name {name} is taken by {}: give the domain or link another name",
                            describe(&o)
                        ))
                    }
                    None => {
                        return Err(format!(
                            "the device name {name} is taken by a device vecring did not write (no {ENV_DOMAIN})"
                        ))
                    }
                }
                *old = entry;
            }
            None => list.push(entry),
        }
    }
    let digit_first = list.iter().any(|e| {
        e.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
    });
    let needed = if digit_first {
        CDI_VERSION_DIGIT_NAMES
    } else {
        CDI_VERSION
    };
    let older = spec
        .get("cdiVersion")
        .and_then(Value::as_str)
        .and_then(parse_version)
        .is_some_and(|v| v < parse_version(needed).unwrap_or_default());
    if older {
        spec["cdiVersion"] = json!(needed);
    }
    Ok(())
}

/// Removes from `spec` every device of `domain` (with `links` empty) or
/// the devices of those links of it; returns the names removed.
///
/// # Errors
/// As [`devices_of`].
pub fn remove(spec: &mut Value, domain: &str, links: &[String]) -> Result<Vec<String>, String> {
    let list = devices_of(spec)?;
    let mut removed = Vec::new();
    list.retain(|e| {
        let gone = Device::from_json(e).is_some_and(|d| {
            d.domain == domain
                && (links.is_empty() || d.link.as_ref().is_some_and(|l| links.contains(l)))
        });
        if gone {
            removed.push(
                e.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        !gone
    });
    Ok(removed)
}

/// "domain D" or "link D/L", for messages.
pub fn describe(d: &Device) -> String {
    match &d.link {
        Some(l) => format!("link {}/{l}", d.domain),
        None => format!("domain {}", d.domain),
    }
}

/// `x.y.z` as numbers.
fn parse_version(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.split('.').map(str::parse::<u32>);
    let parsed = (it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?);
    it.next().is_none().then_some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(domain: &str, link: Option<&str>) -> Device {
        Device {
            domain: domain.into(),
            link: link.map(Into::into),
            mode: Mode::Directory("/run/vecring".into()),
        }
    }

    #[test]
    fn a_link_device_carries_the_mount_and_the_environment() {
        let spec = new_spec(&[dev("pd", Some("eth0"))]).unwrap();
        assert_eq!(
            spec,
            json!({
                "cdiVersion": "0.3.0",
                "kind": "vecring.dev/link",
                "devices": [{
                    "name": "pd-eth0",
                    "containerEdits": {
                        "env": ["VECRING_DOMAIN=pd", "VECRING_LINK=eth0", "VECRING_RUN_DIR=/run/vecring"],
                        "mounts": [{
                            "hostPath": "/run/vecring/pd",
                            "containerPath": "/run/vecring/pd",
                            "options": ["bind", "ro", "nosuid", "nodev", "noexec"]
                        }]
                    }
                }]
            })
        );
        let back = Device::from_json(&spec["devices"][0]).unwrap();
        assert_eq!(back, dev("pd", Some("eth0")));
    }

    #[test]
    fn a_netns_device_mounts_nothing() {
        let d = Device {
            mode: Mode::Netns,
            ..dev("pd", Some("eth0"))
        };
        let spec = new_spec(std::slice::from_ref(&d)).unwrap();
        assert_eq!(
            spec["devices"][0],
            json!({
                "name": "pd-eth0",
                "containerEdits": {
                    "env": ["VECRING_DOMAIN=pd", "VECRING_LINK=eth0", "VECRING_NETNS=self"]
                }
            })
        );
        assert_eq!(Device::from_json(&spec["devices"][0]), Some(d.clone()));
        assert_eq!(d.domain_dir(), None);
        // Written again in directory mode, the same device changes mode.
        let mut spec = spec;
        merge(&mut spec, &[dev("pd", Some("eth0"))]).unwrap();
        assert!(spec["devices"][0]["containerEdits"]["mounts"].is_array());
    }

    #[test]
    fn merging_replaces_a_device_keeps_the_others_and_foreign_fields() {
        let mut spec = new_spec(&[dev("pd", None), dev("pd", Some("eth0"))]).unwrap();
        spec["annotations"] = json!({"kept": "yes"});
        spec["cdiVersion"] = json!("0.5.0");
        let moved = Device {
            mode: Mode::Directory("/srv/run".into()),
            ..dev("pd", Some("eth0"))
        };
        merge(&mut spec, &[moved, dev("db", None)]).unwrap();
        let names: Vec<_> = spec["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["pd", "pd-eth0", "db"]);
        assert_eq!(
            spec["devices"][1]["containerEdits"]["mounts"][0]["hostPath"],
            "/srv/run/pd"
        );
        assert_eq!(spec["annotations"]["kept"], "yes");
        assert_eq!(spec["cdiVersion"], "0.5.0", "a newer version is kept");
        spec["cdiVersion"] = json!("0.2.0");
        merge(&mut spec, &[]).unwrap();
        assert_eq!(spec["cdiVersion"], "0.3.0", "an older one is raised");
    }

    #[test]
    fn a_name_another_domain_or_link_holds_is_refused() {
        // "a-b" + "c" and "a" + "b-c" are both a-b-c.
        let mut spec = new_spec(&[dev("a-b", Some("c"))]).unwrap();
        let e = merge(&mut spec, &[dev("a", Some("b-c"))]).unwrap_err();
        assert!(e.contains("taken by link a-b/c"), "{e}");
        let mut spec = new_spec(&[dev("a", Some("b"))]).unwrap();
        let e = merge(&mut spec, &[dev("a-b", None)]).unwrap_err();
        assert!(e.contains("taken by link a/b"), "{e}");
        spec["devices"][0]["containerEdits"] = json!({"env": ["OTHER=1"]});
        let e = merge(&mut spec, &[dev("a", Some("b"))]).unwrap_err();
        assert!(e.contains("did not write"), "{e}");
    }

    #[test]
    fn names_cdi_refuses_are_refused_and_digits_first_need_0_5_0() {
        for (domain, link) in [
            ("_pd", None),
            ("pd_", None),
            ("pd", Some("eth0.")),
            ("pd", Some("l-")),
        ] {
            let e = new_spec(&[dev(domain, link)]).unwrap_err();
            assert!(e.contains("is not one CDI takes"), "{e}");
        }
        let mut spec = new_spec(&[dev("pd", Some("_x"))]).unwrap();
        assert_eq!(spec["cdiVersion"], "0.3.0");
        merge(&mut spec, &[dev("1pd", None)]).unwrap();
        assert_eq!(spec["cdiVersion"], "0.5.0");
        remove(&mut spec, "1pd", &[]).unwrap();
        merge(&mut spec, &[]).unwrap();
        assert_eq!(spec["cdiVersion"], "0.5.0", "never lowered");
    }

    #[test]
    fn another_kind_or_a_bad_document_is_refused() {
        for (doc, want) in [
            (
                json!({"cdiVersion": "0.3.0", "kind": "vendor.com/gpu", "devices": []}),
                "of kind 'vendor.com/gpu'",
            ),
            (
                json!({"cdiVersion": "0.3.0", "devices": []}),
                "of kind (none)",
            ),
            (
                json!({"cdiVersion": "x", "kind": KIND, "devices": []}),
                "cdiVersion 'x'",
            ),
            (json!({"cdiVersion": "0.3.0", "kind": KIND}), "no devices"),
            (json!([1]), "of kind (none)"),
        ] {
            let mut doc = doc;
            let e = merge(&mut doc, &[dev("pd", None)]).unwrap_err();
            assert!(e.contains(want), "{e} (want {want})");
        }
    }

    #[test]
    fn removal_by_domain_or_by_link() {
        let all = [
            dev("pd", None),
            dev("pd", Some("eth0")),
            dev("pd", Some("eth1")),
            dev("db", Some("eth0")),
        ];
        let mut spec = new_spec(&all).unwrap();
        let gone = remove(&mut spec, "pd", &["eth1".into(), "eth9".into()]).unwrap();
        assert_eq!(gone, ["pd-eth1"]);
        let gone = remove(&mut spec, "pd", &[]).unwrap();
        assert_eq!(gone, ["pd", "pd-eth0"]);
        assert_eq!(spec["devices"].as_array().unwrap().len(), 1);
        assert!(remove(&mut spec, "nope", &[]).unwrap().is_empty());
    }

    #[test]
    fn versions() {
        assert_eq!(parse_version("0.3.0"), Some((0, 3, 0)));
        assert!(parse_version("0.10.0") > parse_version("0.9.0"));
        assert_eq!(parse_version("0.3"), None);
        assert_eq!(parse_version("0.3.0.1"), None);
    }
}
