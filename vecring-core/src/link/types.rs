//! The plain types a link's users meet: its role and its state (its
//! counters are [`LinkCounters`], which the status answer carries too).

pub use crate::counters::{LinkCounters, QueueCounters};

/// Default parent of the domain directories.
pub const DEFAULT_RUN_DIR: &str = "/run/vecring";

/// Default permission bits of the master's socket
/// ([`LinkBuilder::socket_mode`](super::LinkBuilder::socket_mode)).
pub const DEFAULT_SOCKET_MODE: u32 = 0o660;

/// Which end of the link this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Creates the memory and listens (typically the host).
    Master,
    /// Connects and maps the master's memory (typically the container).
    Slave,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Master => "master",
            Role::Slave => "slave",
        })
    }
}

/// Whether the link has a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// No peer attached.
    Down,
    /// A peer is attached; frames flow in generation `generation`.
    Up {
        /// Grows by one with every connection, and across master restarts
        /// (a master starts from the clock).
        generation: u64,
    },
}

impl LinkState {
    /// Whether the link is up.
    pub fn is_up(&self) -> bool {
        matches!(self, LinkState::Up { .. })
    }
}
