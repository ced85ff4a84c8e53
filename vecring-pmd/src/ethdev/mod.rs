//! The ethdev port of a primary process: the operations table ethdev calls
//! (`eth_dev_ops`), each operation on the port's state ([`crate::port`])
//! and, for queue setup, queue info and Rx interrupts, on the queues
//! ([`crate::datapath`]). Control operations of one port are never
//! concurrent (DPDK's rule for applications).
//!
//! | module | what |
//! |---|---|
//! | `dev` | [`Dev`](dev::Dev): the ethdev port during one control operation |
//! | `ops` | the `eth_dev_ops` table: start/stop, link up/down, configuration, filter, MAC, MTU |
//! | `queues` | queue setup and release |
//! | `addrs` | extra unicast MACs and multicast groups |
//! | `qinfo` | queue and burst-mode information |
//! | `intr` | Rx interrupts: the descriptors `rte_epoll_wait` sleeps on |
//! | `monitor` | the power-monitor hook: the word `rte_power_monitor` watches |
//! | `stats` | `stats_get`, `xstats_get` and their resets |
//! | `xstats` | the extended statistics' names and values |
//! | `close` | closing a port (`dev_close`, remove) |

pub(crate) mod addrs;
pub(crate) mod close;
pub(crate) mod dev;
pub(crate) mod intr;
pub(crate) mod monitor;
pub(crate) mod ops;
pub(crate) mod qinfo;
pub(crate) mod queues;
pub(crate) mod stats;
pub(crate) mod xstats;
