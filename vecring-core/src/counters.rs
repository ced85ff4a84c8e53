//! [`LinkCounters`]: a snapshot of a link's counters, as the link reports
//! them and as its master's status answer ([`crate::status`]) carries them.
//! Plain data below both, so that neither imports the other.

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
    /// Regions of this link that peers which left still hold (master)
    /// through a descriptor, an `O_PATH` descriptor or a mapping: their
    /// memory stays allocated until they let go. The master makes no new
    /// region while [`MAX_REGIONS`](crate::link::MAX_REGIONS) are held.
    /// Pages held without any of those (`vmsplice`d into a pipe, io_uring
    /// registered buffers) are invisible here; the
    /// [`RegionBudget`](crate::RegionBudget) bounds them.
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

/// A snapshot of one queue pair's data-path counters (see
/// [`Link::queue_counters`](crate::Link::queue_counters)); the link's
/// [`LinkCounters`] hold their sums over all queues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Frames sent on this queue.
    pub tx_frames: u64,
    /// Bytes sent on this queue.
    pub tx_bytes: u64,
    /// Frames sent on this queue but still unread when their generation
    /// ended.
    pub tx_lost_on_link_down: u64,
    /// `send` and `send_batch` calls on this queue that found its ring full.
    pub tx_ring_full: u64,
    /// Frames received on this queue.
    pub rx_frames: u64,
    /// Bytes received on this queue.
    pub rx_bytes: u64,
}

impl QueueCounters {
    /// Field-by-field sum (wrapping, as counters do).
    pub(crate) fn sum(&self, o: &QueueCounters) -> QueueCounters {
        QueueCounters {
            tx_frames: self.tx_frames.wrapping_add(o.tx_frames),
            tx_bytes: self.tx_bytes.wrapping_add(o.tx_bytes),
            tx_lost_on_link_down: self
                .tx_lost_on_link_down
                .wrapping_add(o.tx_lost_on_link_down),
            tx_ring_full: self.tx_ring_full.wrapping_add(o.tx_ring_full),
            rx_frames: self.rx_frames.wrapping_add(o.rx_frames),
            rx_bytes: self.rx_bytes.wrapping_add(o.rx_bytes),
        }
    }
}
