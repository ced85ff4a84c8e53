//! Device arguments of `--vdev=net_vecring0,key=value,...`.
//!
//! Pure Rust, no DPDK: EAL hands the driver the raw argument string (what
//! follows the first comma of `--vdev`), and [`Devargs::parse`] validates
//! every key. An unknown key, a missing required key, a key given twice or a
//! malformed value is a [`DevargsError`] whose text names the key and the
//! problem; the probe logs it and fails.
//!
//! | key | value | default |
//! |---|---|---|
//! | `domain` | name (required) | — |
//! | `link` | name (required) | — |
//! | `master` | bool | `false` (slave) |
//! | `mac` | `xx:xx:xx:xx:xx:xx`, unicast | derived from domain, link and role |
//! | `socket` | NUMA node (`u32`) | not bound |
//! | `slots` | ring slot count, power of two | vecring-core default |
//! | `slot_size` | bytes, power of two, multiple of 64 | vecring-core default |
//! | `queues` | queue pairs, 1 to 16: the master's count; on a slave, the count it requires of the master | master: 1; slave: the master's |
//! | `run_dir` | absolute path | vecring-core default (`/run/vecring`) |
//! | `hugepages` | `prefer` \| `require` \| `never` | `prefer` |
//! | `zero_copy` | bool: receive frames of 512+ bytes as mbufs attached to the ring (no copy) | `false` |
//! | `hold_back` | bool: the receiver's hold-back ([`vecring_core::HoldBack::STREAMING`]) | `false` |
//! | `owner` | `uid:gid` given the socket, and the only slave uid admitted unless `allow_uid` is given (master only) | the creating user |
//! | `allow_uid` | `uid[:uid...]`: the only slave uids the master accepts (master only) | any (`owner`'s uid when given) |
//! | `master_uid` | `uid[:uid...]`: the uids the master may run as (slave only) | root, or the run or domain directory's owner |
//! | `socket_mode` | octal permission bits of the socket (master only) | `0660` |
//! | `netns` | `self` or the absolute path of a network namespace file (`/proc/PID/ns/net`, `/run/netns/NAME`): meet there, on the abstract name `@vecring/1/<domain>/<link>`, with no directory shared; not with `owner` or `socket_mode` | the run directory's socket |
//! | `env` | bool: `domain`, `link`, `run_dir` and `netns`, when not given, from `VECRING_DOMAIN`, `VECRING_LINK`, `VECRING_RUN_DIR` and `VECRING_NETNS` (what a CDI device sets: [`env`](mod@env)) | `false` |
//!
//! Names (`domain`, `link`) are 1 to 64 characters of `[A-Za-z0-9_.-]`, not
//! starting with `.` or `-`, without `..` (the rules of vecring-core, checked
//! here too so that the error names the key). Booleans are
//! `true|false|1|0|yes|no|on|off`, in any case. Values cannot contain a comma:
//! EAL separates arguments with commas.

use std::fmt;
use std::path::PathBuf;

pub mod env;
mod values;

use values::{
    parse_bool, parse_hugepages, parse_mac, parse_mode, parse_name, parse_netns, parse_owner,
    parse_queues, parse_run_dir, parse_slot_size, parse_slots, parse_u32, parse_uids,
};
pub use vecring_core::internal::mac::default_mac;
use vecring_core::HugepagePolicy;

/// Every key the driver accepts, in the order the docs list them.
pub const VALID_KEYS: &[&str] = &[
    KEY_DOMAIN,
    KEY_LINK,
    KEY_MASTER,
    KEY_MAC,
    KEY_SOCKET,
    KEY_SLOTS,
    KEY_SLOT_SIZE,
    KEY_QUEUES,
    KEY_RUN_DIR,
    KEY_HUGEPAGES,
    KEY_ZERO_COPY,
    KEY_HOLD_BACK,
    KEY_OWNER,
    KEY_ALLOW_UID,
    KEY_MASTER_UID,
    KEY_SOCKET_MODE,
    KEY_NETNS,
    KEY_ENV,
];
/// Domain name (required): the directory under `run_dir`.
pub const KEY_DOMAIN: &str = "domain";
/// Link name (required): the socket inside the domain directory.
pub const KEY_LINK: &str = "link";
/// `true` for the side that creates the memory and listens.
pub const KEY_MASTER: &str = "master";
/// The port's MAC address.
pub const KEY_MAC: &str = "mac";
/// NUMA node of the link's memory and of the port.
pub const KEY_SOCKET: &str = "socket";
/// Ring slot count (master only decides; the slave checks).
pub const KEY_SLOTS: &str = "slots";
/// Ring slot size in bytes.
pub const KEY_SLOT_SIZE: &str = "slot_size";
/// Queue pairs of the link (the master decides; a slave that gives it
/// refuses a master with another count).
pub const KEY_QUEUES: &str = "queues";
/// Rendezvous directory.
pub const KEY_RUN_DIR: &str = "run_dir";
/// Hugepage policy of the link's memory.
pub const KEY_HUGEPAGES: &str = "hugepages";
/// Zero-copy receive of long frames (see [`crate::datapath::zerocopy`]).
pub const KEY_ZERO_COPY: &str = "zero_copy";
/// The receiver's hold-back (see [`vecring_core::HoldBack`]).
pub const KEY_HOLD_BACK: &str = "hold_back";
/// Owner (`uid:gid`) of the domain directory and socket the master creates.
pub const KEY_OWNER: &str = "owner";
/// Slave uids the master accepts, separated by `:`.
pub const KEY_ALLOW_UID: &str = "allow_uid";
/// Uids the master may run as (slave only).
pub const KEY_MASTER_UID: &str = "master_uid";
/// Permission bits (octal) of the master's socket.
pub const KEY_SOCKET_MODE: &str = "socket_mode";
/// `netns=self|/path`: the network namespace the link meets in.
pub const KEY_NETNS: &str = "netns";
/// The names from the environment ([`env`](mod@env)).
pub const KEY_ENV: &str = "env";

/// Largest accepted `slots`: the ring format's limit (vecring-core's
/// `abi::MAX_SLOT_COUNT`; the geometry may bound it further).
pub const MAX_SLOTS: u32 = vecring_core::geometry::MAX_SLOT_COUNT;
/// Largest accepted `slot_size` in bytes (vecring-core's
/// `abi::MAX_SLOT_SIZE`).
pub const MAX_SLOT_SIZE: u32 = vecring_core::geometry::MAX_SLOT_SIZE;

/// Validated device arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devargs {
    /// `domain=`.
    pub domain: String,
    /// `link=`.
    pub link: String,
    /// `master=`; `false` means slave.
    pub master: bool,
    /// `mac=`, or `None` for the derived default (see [`Devargs::mac`]).
    pub mac: Option<[u8; 6]>,
    /// `socket=`.
    pub socket: Option<u32>,
    /// `slots=`.
    pub slots: Option<u32>,
    /// `slot_size=`.
    pub slot_size: Option<u32>,
    /// `queues=`: the master's queue pair count (1 when `None`); a slave's
    /// expectation of the master's (any when `None`).
    pub queues: Option<u16>,
    /// `run_dir=`.
    pub run_dir: Option<PathBuf>,
    /// `hugepages=`, parsed by vecring-core ([`HugepagePolicy`]'s `FromStr`).
    pub hugepages: HugepagePolicy,
    /// `zero_copy=`: zero-copy receive (see [`crate::datapath::zerocopy`]).
    pub zero_copy: bool,
    /// `hold_back=`: rx bursts leave a few frames for up to 250 ns while
    /// the peer streams ([`vecring_core::HoldBack::STREAMING`]).
    pub hold_back: bool,
    /// `owner=uid:gid` (master only).
    pub owner: Option<(u32, u32)>,
    /// `allow_uid=uid:uid...` (master only; empty: any uid).
    pub allow_uids: Vec<u32>,
    /// `master_uid=uid:uid...` (slave only; empty: the default rule).
    pub master_uids: Vec<u32>,
    /// `socket_mode=` (master only).
    pub socket_mode: Option<u32>,
    /// `netns=`: the namespace the link meets in, if not the run
    /// directory.
    pub netns: Option<Netns>,
}

/// `netns=`'s value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Netns {
    /// `self`: this process's own namespace.
    Own,
    /// The namespace whose file this is.
    Path(PathBuf),
}

/// Why the device arguments were refused. The `Display` text names the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevargsError {
    /// An argument without `=`.
    Malformed {
        /// The offending argument, verbatim.
        arg: String,
    },
    /// A key the driver does not know.
    UnknownKey {
        /// The key, verbatim.
        key: String,
    },
    /// A key given more than once.
    Duplicate {
        /// The key.
        key: &'static str,
    },
    /// A required key that is absent.
    Missing {
        /// The key.
        key: &'static str,
    },
    /// A required key that is absent, and so is its variable (`env=1`).
    MissingFromEnv {
        /// The key.
        key: &'static str,
        /// The variable that would have given it.
        var: &'static str,
    },
    /// A key only the master may set, given to a slave.
    MasterOnly {
        /// The key.
        key: &'static str,
    },
    /// A key only a slave may set, given to the master.
    SlaveOnly {
        /// The key.
        key: &'static str,
    },
    /// Two keys that cannot go together.
    Conflict {
        /// The key given.
        key: &'static str,
        /// The key it excludes.
        with: &'static str,
    },
    /// A value that does not parse or is out of range.
    InvalidValue {
        /// The key.
        key: &'static str,
        /// The value, verbatim.
        value: String,
        /// What is wrong, lowercase.
        reason: String,
    },
}

impl DevargsError {
    /// The key the error is about, if it is about a known one.
    #[cfg(test)]
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Malformed { .. } => None,
            Self::UnknownKey { key } => Some(key),
            Self::Duplicate { key }
            | Self::Missing { key }
            | Self::MissingFromEnv { key, .. }
            | Self::MasterOnly { key }
            | Self::SlaveOnly { key }
            | Self::Conflict { key, .. }
            | Self::InvalidValue { key, .. } => Some(key),
        }
    }
}

impl fmt::Display for DevargsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed { arg } => {
                write!(f, "malformed argument '{arg}': expected key=value")
            }
            Self::UnknownKey { key } => write!(
                f,
                "unknown key '{key}' (valid keys: {})",
                VALID_KEYS.join(", ")
            ),
            Self::Duplicate { key } => write!(f, "key '{key}' given more than once"),
            Self::Missing { key } => write!(f, "missing required key '{key}'"),
            Self::MissingFromEnv { key, var } => write!(
                f,
                "missing required key '{key}', and {var} is not set (env=1)"
            ),
            Self::SlaveOnly { key } => write!(
                f,
                "key '{key}' applies to a slave only (drop it or master=true)"
            ),
            Self::MasterOnly { key } => {
                write!(
                    f,
                    "key '{key}' applies to the master only (add master=true or drop it)"
                )
            }
            Self::Conflict { key, with } => write!(
                f,
                "key '{key}' cannot go with '{with}' (drop one): {}",
                if *key == KEY_NETNS || *with == KEY_NETNS {
                    "a link in a network namespace has no socket file for peers"
                } else {
                    "they exclude each other"
                }
            ),
            Self::InvalidValue { key, value, reason } => {
                write!(f, "invalid value '{value}' for key '{key}': {reason}")
            }
        }
    }
}

impl std::error::Error for DevargsError {}

impl Devargs {
    /// Parses and validates the raw devargs string (`key=value,key=value`);
    /// with `env=1`, names not given come from this process's environment
    /// ([`env`](mod@env)).
    ///
    /// # Errors
    ///
    /// A [`DevargsError`] naming the first offending key.
    pub fn parse(args: &str) -> Result<Self, DevargsError> {
        Self::parse_with_env(args, &|var| std::env::var(var).ok())
    }

    /// [`Devargs::parse`], the environment's variables found by `lookup`.
    ///
    /// # Errors
    ///
    /// A [`DevargsError`] naming the first offending key.
    pub fn parse_with_env(
        args: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, DevargsError> {
        let mut domain = None;
        let mut link = None;
        let mut master = None;
        let mut mac = None;
        let mut socket = None;
        let mut slots = None;
        let mut slot_size = None;
        let mut queues = None;
        let mut run_dir = None;
        let mut hugepages = None;
        let mut zero_copy = None;
        let mut hold_back = None;
        let mut owner = None;
        let mut allow_uids = None;
        let mut master_uids = None;
        let mut socket_mode = None;
        let mut netns = None;
        let mut from_env = None;

        for arg in args.split(',').filter(|a| !a.is_empty()) {
            let (key, value) = arg.split_once('=').ok_or_else(|| DevargsError::Malformed {
                arg: arg.to_owned(),
            })?;
            let key = canonical_key(key).ok_or_else(|| DevargsError::UnknownKey {
                key: key.to_owned(),
            })?;
            match key {
                KEY_DOMAIN => set_once(&mut domain, key, parse_name(key, value)?)?,
                KEY_LINK => set_once(&mut link, key, parse_name(key, value)?)?,
                KEY_MASTER => set_once(&mut master, key, parse_bool(key, value)?)?,
                KEY_MAC => set_once(&mut mac, key, parse_mac(key, value)?)?,
                KEY_SOCKET => set_once(&mut socket, key, parse_u32(key, value)?)?,
                KEY_SLOTS => set_once(&mut slots, key, parse_slots(key, value)?)?,
                KEY_SLOT_SIZE => set_once(&mut slot_size, key, parse_slot_size(key, value)?)?,
                KEY_QUEUES => set_once(&mut queues, key, parse_queues(key, value)?)?,
                KEY_RUN_DIR => set_once(&mut run_dir, key, parse_run_dir(key, value)?)?,
                KEY_HUGEPAGES => set_once(&mut hugepages, key, parse_hugepages(key, value)?)?,
                KEY_ZERO_COPY => set_once(&mut zero_copy, key, parse_bool(key, value)?)?,
                KEY_HOLD_BACK => set_once(&mut hold_back, key, parse_bool(key, value)?)?,
                KEY_OWNER => set_once(&mut owner, key, parse_owner(key, value)?)?,
                KEY_ALLOW_UID => set_once(&mut allow_uids, key, parse_uids(key, value)?)?,
                KEY_MASTER_UID => set_once(&mut master_uids, key, parse_uids(key, value)?)?,
                KEY_SOCKET_MODE => set_once(&mut socket_mode, key, parse_mode(key, value)?)?,
                KEY_NETNS => set_once(&mut netns, key, parse_netns(key, value)?)?,
                KEY_ENV => set_once(&mut from_env, key, parse_bool(key, value)?)?,
                _ => unreachable!("canonical_key returns only VALID_KEYS"),
            }
        }

        let from_env = from_env.unwrap_or(false);
        if from_env {
            env::fill(&mut domain, &mut link, &mut run_dir, &mut netns, lookup)?;
        }
        let missing = |key: &'static str| match env::variable_of(key) {
            Some(var) if from_env => DevargsError::MissingFromEnv { key, var },
            _ => DevargsError::Missing { key },
        };
        let master = master.unwrap_or(false);
        if !master {
            // These shape what the master creates and whom it accepts; a
            // slave that sets them would be silently ignored.
            for (key, given) in [
                (KEY_OWNER, owner.is_some()),
                (KEY_ALLOW_UID, allow_uids.is_some()),
                (KEY_SOCKET_MODE, socket_mode.is_some()),
            ] {
                if given {
                    return Err(DevargsError::MasterOnly { key });
                }
            }
        } else if master_uids.is_some() {
            // Whom a slave trusts as its master means nothing to a master.
            return Err(DevargsError::SlaveOnly {
                key: KEY_MASTER_UID,
            });
        }
        if netns.is_some() {
            for (with, given) in [
                (KEY_OWNER, owner.is_some()),
                (KEY_SOCKET_MODE, socket_mode.is_some()),
            ] {
                if given {
                    return Err(DevargsError::Conflict {
                        key: KEY_NETNS,
                        with,
                    });
                }
            }
        }
        Ok(Self {
            domain: domain.ok_or_else(|| missing(KEY_DOMAIN))?,
            link: link.ok_or_else(|| missing(KEY_LINK))?,
            master,
            mac,
            socket,
            slots,
            slot_size,
            queues,
            run_dir,
            hugepages: hugepages.unwrap_or_default(),
            zero_copy: zero_copy.unwrap_or(false),
            hold_back: hold_back.unwrap_or(false),
            owner,
            allow_uids: allow_uids.unwrap_or_default(),
            master_uids: master_uids.unwrap_or_default(),
            socket_mode,
            netns,
        })
    }

    /// The port's MAC address: `mac=` if given, else [`default_mac`].
    pub fn mac(&self) -> [u8; 6] {
        self.mac
            .unwrap_or_else(|| default_mac(&self.domain, &self.link, self.master))
    }

    /// `"master"` or `"slave"`, for log lines.
    pub fn role_name(&self) -> &'static str {
        if self.master {
            "master"
        } else {
            "slave"
        }
    }
}

/// Formats a MAC address as `xx:xx:xx:xx:xx:xx`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    let [a, b, c, d, e, f] = *mac;
    format!("{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}")
}

fn canonical_key(key: &str) -> Option<&'static str> {
    VALID_KEYS.iter().copied().find(|k| *k == key)
}

fn set_once<T>(slot: &mut Option<T>, key: &'static str, value: T) -> Result<(), DevargsError> {
    if slot.is_some() {
        return Err(DevargsError::Duplicate { key });
    }
    *slot = Some(value);
    Ok(())
}

#[cfg(test)]
mod tests;
