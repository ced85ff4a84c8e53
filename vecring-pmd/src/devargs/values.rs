//! The values of the devargs: each key's parser, whose error names the key
//! and says what the value should be.

use super::{DevargsError, Netns, MAX_SLOTS, MAX_SLOT_SIZE};
use std::path::PathBuf;
use vecring_core::{HugepagePolicy, MAX_QUEUES};

pub(super) fn invalid(key: &'static str, value: &str, reason: impl Into<String>) -> DevargsError {
    DevargsError::InvalidValue {
        key,
        value: value.to_owned(),
        reason: reason.into(),
    }
}

pub(super) fn parse_name(key: &'static str, v: &str) -> Result<String, DevargsError> {
    // The rules are vecring-core's (one place decides what a name may be);
    // the error names the key.
    vecring_core::name::validate(key, v).map_err(|e| invalid(key, v, e.to_string()))?;
    Ok(v.to_owned())
}

pub(super) fn parse_bool(key: &'static str, v: &str) -> Result<bool, DevargsError> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(key, v, "expected true|false|1|0|yes|no|on|off")),
    }
}

pub(super) fn parse_u32(key: &'static str, v: &str) -> Result<u32, DevargsError> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid(key, v, "expected a decimal number"));
    }
    v.parse::<u32>()
        .map_err(|_| invalid(key, v, format!("number larger than {}", u32::MAX)))
}

pub(super) fn parse_slots(key: &'static str, v: &str) -> Result<u32, DevargsError> {
    let n = parse_u32(key, v)?;
    if n < vecring_core::geometry::MIN_SLOT_COUNT || !n.is_power_of_two() || n > MAX_SLOTS {
        return Err(invalid(
            key,
            v,
            format!(
                "expected a power of two from {} to {MAX_SLOTS}",
                vecring_core::geometry::MIN_SLOT_COUNT
            ),
        ));
    }
    Ok(n)
}

pub(super) fn parse_slot_size(key: &'static str, v: &str) -> Result<u32, DevargsError> {
    let n = parse_u32(key, v)?;
    if n < vecring_core::geometry::MIN_SLOT_SIZE || !n.is_power_of_two() || n > MAX_SLOT_SIZE {
        return Err(invalid(
            key,
            v,
            format!(
                "expected a power of two from {} to {MAX_SLOT_SIZE} (bytes)",
                vecring_core::geometry::MIN_SLOT_SIZE
            ),
        ));
    }
    Ok(n)
}

pub(super) fn parse_queues(key: &'static str, v: &str) -> Result<u16, DevargsError> {
    let n = parse_u32(key, v)?;
    match u16::try_from(n) {
        Ok(q) if (1..=MAX_QUEUES).contains(&q) => Ok(q),
        _ => Err(invalid(
            key,
            v,
            format!("expected a queue pair count from 1 to {MAX_QUEUES}"),
        )),
    }
}

pub(super) fn parse_mac(key: &'static str, v: &str) -> Result<[u8; 6], DevargsError> {
    const SHAPE: &str = "expected six hex bytes like 02:ec:f4:bb:d9:7f";
    let mut mac = [0u8; 6];
    let mut parts = v.split(':');
    for byte in &mut mac {
        let p = parts.next().ok_or_else(|| invalid(key, v, SHAPE))?;
        if p.len() != 2 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid(key, v, SHAPE));
        }
        *byte = u8::from_str_radix(p, 16).map_err(|_| invalid(key, v, SHAPE))?;
    }
    if parts.next().is_some() {
        return Err(invalid(key, v, SHAPE));
    }
    if mac[0] & 1 != 0 {
        return Err(invalid(
            key,
            v,
            "multicast address; a port needs a unicast one",
        ));
    }
    if mac == [0; 6] {
        return Err(invalid(key, v, "all-zero address"));
    }
    Ok(mac)
}

pub(super) fn parse_run_dir(key: &'static str, v: &str) -> Result<PathBuf, DevargsError> {
    if !v.starts_with('/') {
        return Err(invalid(key, v, "expected an absolute path"));
    }
    if v.split('/').any(|c| c == "..") {
        return Err(invalid(key, v, "path must not contain '..'"));
    }
    Ok(PathBuf::from(v))
}

pub(super) fn parse_netns(key: &'static str, v: &str) -> Result<Netns, DevargsError> {
    if v == "self" {
        return Ok(Netns::Own);
    }
    parse_run_dir(key, v)
        .map(Netns::Path)
        .map_err(|_| invalid(key, v, "expected `self` or an absolute path without '..'"))
}

pub(super) fn parse_owner(key: &'static str, v: &str) -> Result<(u32, u32), DevargsError> {
    let shape = || invalid(key, v, "expected uid:gid, e.g. 100000:100000");
    let (u, g) = v.split_once(':').ok_or_else(shape)?;
    Ok((
        parse_u32(key, u).map_err(|_| shape())?,
        parse_u32(key, g).map_err(|_| shape())?,
    ))
}

pub(super) fn parse_uids(key: &'static str, v: &str) -> Result<Vec<u32>, DevargsError> {
    v.split(':')
        .map(|u| {
            parse_u32(key, u).map_err(|_| invalid(key, v, "expected uid[:uid...], e.g. 100000"))
        })
        .collect()
}

pub(super) fn parse_mode(key: &'static str, v: &str) -> Result<u32, DevargsError> {
    let digits = v.strip_prefix("0o").unwrap_or(v);
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return Err(invalid(key, v, "expected octal permission bits, e.g. 0660"));
    }
    let mode = u32::from_str_radix(digits, 8).map_err(|_| invalid(key, v, "not octal"))?;
    if mode > 0o777 {
        return Err(invalid(
            key,
            v,
            "only permission bits (at most 0777) are allowed",
        ));
    }
    Ok(mode)
}

pub(super) fn parse_hugepages(key: &'static str, v: &str) -> Result<HugepagePolicy, DevargsError> {
    v.parse().map_err(|e| invalid(key, v, e))
}
