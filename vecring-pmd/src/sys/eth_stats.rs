//! The port's counters as `stats_get` reports them, whatever the DPDK line
//! ([`EthStats`]): the one form the driver, its secondary processes and
//! [`super::compat`] share. Only plain data.

use super::ffi::QUEUE_STAT_CNTRS;

/// What `stats_get` reports, whatever the DPDK line: the fields of
/// `rte_eth_stats` a driver fills and the per-queue counters (which
/// [`super::compat::write_stats`] puts where the line's ethdev reads them).
/// Secondary processes receive it as values ([`crate::mp`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EthStats {
    /// Frames received.
    pub ipackets: u64,
    /// Frames sent.
    pub opackets: u64,
    /// Bytes received.
    pub ibytes: u64,
    /// Bytes sent.
    pub obytes: u64,
    /// Frames lost before the driver saw them.
    pub imissed: u64,
    /// Receive errors.
    pub ierrors: u64,
    /// Transmit errors.
    pub oerrors: u64,
    /// Frames received per queue.
    pub q_ipackets: [u64; QUEUE_STAT_CNTRS],
    /// Frames sent per queue.
    pub q_opackets: [u64; QUEUE_STAT_CNTRS],
    /// Bytes received per queue.
    pub q_ibytes: [u64; QUEUE_STAT_CNTRS],
    /// Bytes sent per queue.
    pub q_obytes: [u64; QUEUE_STAT_CNTRS],
    /// Receive errors per queue.
    pub q_errors: [u64; QUEUE_STAT_CNTRS],
}
