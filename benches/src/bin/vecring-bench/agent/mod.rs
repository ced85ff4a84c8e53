//! The agent: one end of a link or DPDK port that the forwarding benchmark
//! (`vecring-bench host-container --forward`, the harness in
//! `crate::host_container::forward`)
//! drives over stdin and stdout. Here are the agent protocol
//! ([`protocol`]), the frames agents send ([`frame`]), what a receiving
//! agent counts of them ([`tally`]), latency histograms ([`histogram`]) and
//! the Rust agent itself ([`command`], `vecring-bench agent`). The DPDK agent,
//! `vecring-dpdk-agent` (`benches/dpdk-agent/`), speaks the same protocol
//! and builds the same frames.

pub mod command;
pub mod frame;
pub mod histogram;
pub mod protocol;
pub mod tally;
