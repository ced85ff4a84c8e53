//! `env=1`: the link's names from the process environment, as a CDI device
//! (`vecring cdi write`) sets it in a container: `VECRING_DOMAIN`,
//! `VECRING_LINK`, `VECRING_RUN_DIR` and `VECRING_NETNS` stand for
//! `domain=`, `link=`, `run_dir=` and `netns=` where the devargs do not
//! give them (a key given wins), so
//! an image's `--vdev=net_vecring0,env=1` needs no per-container
//! command line. Each value is checked as the key's would be; an error
//! names the variable.

use super::{
    parse_name, parse_netns, parse_run_dir, DevargsError, Netns, KEY_DOMAIN, KEY_LINK, KEY_NETNS,
    KEY_RUN_DIR,
};
use std::path::PathBuf;

/// The variable for `domain=`.
pub const ENV_DOMAIN: &str = "VECRING_DOMAIN";
/// The variable for `link=`.
pub const ENV_LINK: &str = "VECRING_LINK";
/// The variable for `run_dir=`.
pub const ENV_RUN_DIR: &str = "VECRING_RUN_DIR";
/// The variable for `netns=` (`self` from a CDI device in network-namespace
/// mode).
pub const ENV_NETNS: &str = "VECRING_NETNS";

/// Fills the keys not given from the variables `lookup` finds.
///
/// # Errors
/// A variable whose value the key would refuse.
pub(super) fn fill(
    domain: &mut Option<String>,
    link: &mut Option<String>,
    run_dir: &mut Option<PathBuf>,
    netns: &mut Option<Netns>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), DevargsError> {
    let from = |var: &'static str, e: DevargsError| match e {
        DevargsError::InvalidValue { key, value, reason } => DevargsError::InvalidValue {
            key,
            value,
            reason: format!("{reason} (from {var}, env=1)"),
        },
        other => other,
    };
    if domain.is_none() {
        if let Some(v) = lookup(ENV_DOMAIN) {
            *domain = Some(parse_name(KEY_DOMAIN, &v).map_err(|e| from(ENV_DOMAIN, e))?);
        }
    }
    if link.is_none() {
        if let Some(v) = lookup(ENV_LINK) {
            *link = Some(parse_name(KEY_LINK, &v).map_err(|e| from(ENV_LINK, e))?);
        }
    }
    if run_dir.is_none() {
        if let Some(v) = lookup(ENV_RUN_DIR) {
            *run_dir = Some(parse_run_dir(KEY_RUN_DIR, &v).map_err(|e| from(ENV_RUN_DIR, e))?);
        }
    }
    if netns.is_none() {
        if let Some(v) = lookup(ENV_NETNS) {
            *netns = Some(parse_netns(KEY_NETNS, &v).map_err(|e| from(ENV_NETNS, e))?);
        }
    }
    Ok(())
}

/// The variable that stands for a required `key` (for the error when
/// neither is there).
pub(super) fn variable_of(key: &str) -> Option<&'static str> {
    match key {
        KEY_DOMAIN => Some(ENV_DOMAIN),
        KEY_LINK => Some(ENV_LINK),
        _ => None,
    }
}
