//! What the application asked for when it set a queue up ([`QueueSetup`]),
//! kept by RX and TX queues alike for queue information (`rxq_info_get`,
//! `txq_info_get`).

/// What the application asked for when it set a queue up, for queue info.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueueSetup {
    /// `nb_desc` of the setup call.
    pub nb_desc: u16,
    /// The queue's own offloads.
    pub offloads: u64,
}
