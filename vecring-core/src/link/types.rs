//! The plain types a link's users meet: its role, its state, its counters.

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

/// A snapshot of a link's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    /// Current (or last) generation.
    pub generation: u64,
    /// Times the link came up.
    pub link_ups: u64,
    /// Times the link went down.
    pub link_downs: u64,
    /// Generations ended because the peer corrupted the memory.
    pub peer_corruptions: u64,
    /// Peers refused (bad credentials, second slave, bad handshake).
    pub rejected_peers: u64,
    /// Regions of this link that peers which left still hold (master):
    /// their memory stays allocated until they let go. The master makes
    /// no new region while [`MAX_REGIONS`](super::MAX_REGIONS) are held.
    pub pinned_regions: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames sent but still unread when their generation ended.
    pub tx_lost_on_link_down: u64,
    /// `send` and `send_batch` calls that found the ring full: the sender
    /// was faster than the peer (chunk users see it as a short chunk).
    pub tx_ring_full: u64,
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
}
