//! CNI errors: what the plugin prints on stdout when a command fails, with
//! the spec's well-known codes and the plugin's own from 100.

use serde_json::json;

/// An error as the CNI spec's error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CniError {
    pub code: u32,
    pub msg: String,
    pub details: String,
}

/// The spec's codes (CNI 1.0 "Error"), and ours.
pub mod code {
    /// Incompatible CNI version.
    pub const INCOMPATIBLE_VERSION: u32 = 1;
    /// The container is unknown or does not exist (CHECK).
    pub const UNKNOWN_CONTAINER: u32 = 3;
    /// Invalid network configuration.
    pub const INVALID_CONFIG: u32 = 4;
    /// Invalid environment variables.
    pub const INVALID_ENV: u32 = 7;
    /// Try again later: a resource (the switch) is not there now.
    pub const TRY_AGAIN: u32 = 11;
    /// Open vSwitch refused or failed a change.
    pub const OVS: u32 = 100;
    /// The TAP bridge for the container's interface did not start.
    pub const TAP: u32 = 101;
    /// The plugin's state could not be read or written.
    pub const STATE: u32 = 102;
}

impl CniError {
    pub fn new(code: u32, msg: impl Into<String>, details: impl Into<String>) -> Self {
        CniError {
            code,
            msg: msg.into(),
            details: details.into(),
        }
    }

    /// The error object, in the configuration's version.
    pub fn to_json(&self, version: &str) -> serde_json::Value {
        json!({
            "cniVersion": version,
            "code": self.code,
            "msg": self.msg,
            "details": self.details,
        })
    }
}

impl std::fmt::Display for CniError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.msg, self.details)
    }
}

pub type Result<T> = std::result::Result<T, CniError>;
