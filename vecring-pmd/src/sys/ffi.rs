//! DPDK bindings: what `bindgen` generated from `src/sys/wrapper.h`, the glue
//! functions of `src/sys/glue.c`, and the handful of constants bindgen cannot
//! evaluate (they are `RTE_BIT64()` expressions); `glue.c` checks each of
//! those against DPDK's headers with a `_Static_assert`, so a mismatch fails
//! the build instead of misbehaving.

#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks
)]

include!(concat!(env!("OUT_DIR"), "/dpdk_bindings.rs"));

/// `RTE_ETH_RX_OFFLOAD_SCATTER`.
pub const RX_OFFLOAD_SCATTER: u64 = 1 << 13;
/// `RTE_ETH_TX_OFFLOAD_MULTI_SEGS`.
pub const TX_OFFLOAD_MULTI_SEGS: u64 = 1 << 15;
/// `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`: the application promises that the
/// mbufs of a TX queue come from one pool and have a reference count of 1.
pub const TX_OFFLOAD_MBUF_FAST_FREE: u64 = 1 << 16;
/// `RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL`: the mbuf is attached to
/// another's data or to an external buffer, and must be detached to be freed.
pub const MBUF_F_ATTACHED: u64 = (1 << 62) | (1 << 61);
/// `RTE_ETH_DEV_INTR_LSC`: the port raises link-state-change events.
pub const DEV_INTR_LSC: u32 = 1 << 1;
/// `RTE_ETH_DEV_AUTOFILL_QUEUE_XSTATS`: ethdev makes per-queue xstats from
/// the `q_*` fields of `rte_eth_stats`.
pub const DEV_AUTOFILL_QUEUE_XSTATS: u32 = 1 << 6;
/// `RTE_ETH_LINK_SPEED_FIXED`.
pub const LINK_SPEED_FIXED: u32 = 1 << 0;
/// `RTE_ETH_SPEED_NUM_UNKNOWN`: shared memory has no line rate.
pub const SPEED_NUM_UNKNOWN: u32 = u32::MAX;
/// `RTE_ETH_XSTATS_NAME_SIZE`.
pub const XSTATS_NAME_SIZE: usize = 64;
/// `RTE_ETHDEV_QUEUE_STAT_CNTRS`.
pub const QUEUE_STAT_CNTRS: usize = 16;
/// `RTE_PKTMBUF_HEADROOM`.
pub const PKTMBUF_HEADROOM: u16 = 128;
/// `RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN`: what a frame adds to the MTU.
pub const ETHER_OVERHEAD: u32 = 14 + 4;
/// `RTE_ETHER_MIN_MTU`.
pub const ETHER_MIN_MTU: u16 = 68;
/// `SOCKET_ID_ANY`.
pub const SOCKET_ID_ANY: i32 = -1;
/// `RTE_INTR_INSTANCE_F_PRIVATE`: an interrupt handle in process-private
/// memory.
pub const INTR_INSTANCE_F_PRIVATE: u32 = 0;

/// DPDK log levels (`RTE_LOG_*`).
pub mod level {
    /// `RTE_LOG_ERR`.
    pub const ERR: u32 = 4;
    /// `RTE_LOG_WARNING`.
    pub const WARNING: u32 = 5;
    /// `RTE_LOG_NOTICE`.
    pub const NOTICE: u32 = 6;
    /// `RTE_LOG_INFO`.
    pub const INFO: u32 = 7;
    /// `RTE_LOG_DEBUG`.
    pub const DEBUG: u32 = 8;
}
