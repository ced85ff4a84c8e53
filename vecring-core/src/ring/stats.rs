//! The counters an endpoint keeps.

/// Counters kept by one endpoint (local, not shared).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Frames sent or received.
    pub frames: u64,
    /// Payload bytes sent or received.
    pub bytes: u64,
    /// Times the peer's corruption was detected (0 or 1 per endpoint: the
    /// endpoint stays poisoned).
    pub corruptions: u64,
    /// Batch reads that found nothing because the hold-back held ready
    /// frames back ([`crate::HoldBack`]; a consumer's, 0 for a producer).
    pub held_back: u64,
}
