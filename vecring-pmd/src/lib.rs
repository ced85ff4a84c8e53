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
//! | [`eth_stats`] | the counters `stats_get` reports, in one form for every DPDK line |
//! | [`compat`] | what differs between DPDK lines (22.11 to 25.11): mbuf fields, `stats_get`, the link word |
//! | [`devargs`] | parsing and validation of `--vdev` arguments (pure Rust) |
//! | [`probe`] | the vdev entry points: probe and remove |
//! | [`port`] | per-port state: the link, its ends, counters of closed links |
//! | [`close`] | closing a port (`dev_close`, remove) |
//! | [`guard`] | no panic unwinds into C |
//! | [`lsc`] | link status in `dev_link`, link-state events from the driver's own thread |
//! | [`dev`] | the ethdev port during a control operation |
//! | [`ops`] | the `eth_dev_ops` table: start/stop, link up/down, configuration, stats |
//! | [`queues`] | queue setup and release |
//! | [`addrs`] | extra unicast MACs and multicast groups (`eth_dev_ops`) |
//! | [`qinfo`] | queue and burst-mode information (`eth_dev_ops`) |
//! | [`handoff`] | a reopened link's ends on their way to the queues |
//! | [`intr`] | Rx interrupts: the descriptors `rte_epoll_wait` sleeps on |
//! | [`mp`] | the primary's answers to secondary processes (EAL IPC) |
//! | [`secondary`] | a port seen from a secondary process (`dpdk-proc-info`, `dpdk-dumpcap`) |
//! | [`rxtx`] | the queues' state and burst functions |
//! | [`scatter`] | a long frame received into a chain of mbufs |
//! | [`stats`] | per-queue counters, the receive filter |
//! | [`snapshot`] | the counters at one moment, port totals, reset baselines |
//! | [`xstats`] | the extended statistics: port totals and per-queue drops |
//! | [`zerocopy`] | zero-copy receive: mbufs attached to ring slots |
//! | [`log`] | `rte_log` output (`VECRING: ...`) |
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod addrs;
pub mod close;
pub mod compat;
pub mod dev;
pub mod devargs;
pub mod eth_stats;
pub mod ffi;
pub mod guard;
pub mod handoff;
pub mod intr;
pub mod log;
pub mod lsc;
pub mod mp;
pub mod ops;
pub mod port;
pub mod probe;
pub mod qinfo;
pub mod queues;
pub mod rxtx;
pub mod scatter;
pub mod secondary;
pub mod snapshot;
pub mod stats;
pub mod stream;
pub mod xstats;
pub mod zerocopy;
