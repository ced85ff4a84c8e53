//! `env=1`: the link's names from the process environment, as a CDI device
//! (`vecring cdi write`) sets it in a container: `VECRING_DOMAIN`,
//! `VECRING_LINK` and `VECRING_RUN_DIR` stand for `domain=`, `link=` and
//! `run_dir=` where the devargs do not give them (a key given wins), so
//! an image's `--vdev=net_vecring0,env=1` needs no per-container
//! command line. Each value is checked as the key's would be; an error
//! names the variable.

use super::{parse_name, parse_run_dir, DevargsError, KEY_DOMAIN, KEY_LINK, KEY_RUN_DIR};
use std::path::PathBuf;

/// The variable for `domain=`.
pub const ENV_DOMAIN: &str = "VECRING_DOMAIN";
/// The variable for `link=`.
pub const ENV_LINK: &str = "VECRING_LINK";
/// The variable for `run_dir=`.
pub const ENV_RUN_DIR: &str = "VECRING_RUN_DIR";

/// Fills the keys not given from the variables `lookup` finds.
///
/// # Errors
/// A variable whose value the key would refuse.
pub(super) fn fill(
    domain: &mut Option<String>,
    link: &mut Option<String>,
    run_dir: &mut Option<PathBuf>,
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
