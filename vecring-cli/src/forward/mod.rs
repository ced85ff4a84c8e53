//! The forwarding benchmark's pieces shared by its two ends: the frames
//! ([`frame`]), what a receiver counts of them ([`tally`]), latency
//! histograms ([`histogram`]), the agent protocol ([`protocol`]) and the
//! Rust agent itself ([`agent`], `vecring agent`). The harness that drives
//! agents is `vecring bench --forward` (`crate::bench::forward`).

pub mod agent;
pub mod frame;
pub mod histogram;
pub mod protocol;
pub mod tally;
