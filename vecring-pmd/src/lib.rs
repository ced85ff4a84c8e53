//! `librte_net_vecring.so`: the DPDK poll-mode driver of vecring, a
//! shared-memory virtual Ethernet link between two processes.
//!
//! ```text
//! dpdk-testpmd -d librte_net_vecring.so --no-pci \
//!     --vdev=eth_vecring0,domain=testcontainer,link=tap456,master=true
//! ```
//!
//! The driver registers as `net_vecring` (alias `eth_vecring`); EAL loads it
//! with `-d`. Layout:
//!
//! | module | what |
//! |---|---|
//! | `glue.c` | `RTE_PMD_REGISTER_*`, the log type, wrappers of DPDK `static inline` helpers |
//! | [`ffi`] | bindgen bindings and mirrored constants |
//! | [`devargs`] | parsing and validation of `--vdev` arguments (pure Rust) |
//! | [`port`] | probe/remove, per-port state, close |
//! | [`lsc`] | link-state events, from the driver's own thread |
//! | [`ops`] | the `eth_dev_ops` table: start/stop, link up/down, configuration |
//! | [`addrs`] | extra unicast MACs and multicast groups (`eth_dev_ops`) |
//! | [`qinfo`] | queue and burst-mode information (`eth_dev_ops`) |
//! | [`handoff`] | a reopened link's ends on their way to the queues |
//! | [`mp`] | the primary's answers to secondary processes (EAL IPC) |
//! | [`secondary`] | a port seen from a secondary process (`dpdk-proc-info`, `dpdk-dumpcap`) |
//! | [`rxtx`] | queues and burst functions |
//! | [`stats`] | counters, filter, xstats |
//! | [`zerocopy`] | zero-copy receive: mbufs attached to ring slots |
//! | [`log`] | `rte_log` output (`VECRING: ...`) |
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod addrs;
pub mod devargs;
pub mod ffi;
pub mod handoff;
pub mod log;
pub mod lsc;
pub mod mp;
pub mod ops;
pub mod port;
pub mod qinfo;
pub mod rxtx;
pub mod secondary;
pub mod stats;
pub mod zerocopy;
