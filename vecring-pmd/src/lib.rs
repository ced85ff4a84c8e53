//! `librte_net_vecring.so`: the DPDK poll-mode driver of vecring, a
//! shared-memory virtual Ethernet link between two processes.
//!
//! ```text
//! dpdk-testpmd -d librte_net_vecring.so --no-pci \
//!     --vdev=eth_vecring0,domain=testcontainer,link=tap456,master=true
//! ```
//!
//! The driver registers as `net_vecring` (alias `eth_vecring`); EAL loads it
//! with `-d`. Its Rust API is nothing (a `cdylib`): every module is
//! `pub(crate)`, and `pub` inside a module means "for the rest of the
//! driver". The entry points are the functions `glue.c` registers and the
//! operations tables they install.
//!
//! # Layers
//!
//! The directories are layers. A file imports from the files of its own
//! directory and from the layers below its own, never from a layer above,
//! and no file imports another in a circle, within a directory either
//! (`scripts/pmd-layers.sh` checks both, and that `MAX_QUEUES` has one
//! definition):
//!
//! | layer | what | imports |
//! |---|---|---|
//! | `sys/` | DPDK: bindings, `glue.c`, line differences, logging, the panic guard | nothing of the driver |
//! | `devargs/` | parsing and validation of `--vdev` arguments (pure Rust) | nothing of the driver |
//! | `datapath/` | what runs on the lcores: queues, burst functions, and all they touch | `sys` |
//! | `port/` | the per-port state of the control path: the link, its events, counters | `sys`, `devargs`, `datapath` |
//! | `ethdev/` | the `eth_dev_ops` of a port in the primary process | `sys`, `devargs`, `datapath`, `port` |
//! | `mp/` | multi-process: a secondary's port, the primary's answers | `sys`, `ethdev` |
//! | `probe` | the vdev entry points: probe and remove | any |
//!
//! So the hot path can be read alone: `datapath/` is everything an lcore
//! runs in `rte_eth_rx_burst`/`rte_eth_tx_burst` (and Rx interrupt
//! enable/disable), and the control path reaches it only through the
//! queues' methods and the port's shared state (`datapath::shared`).
//!
//! # Modules
//!
//! | module | what |
//! |---|---|
//! | `sys::ffi` | bindgen bindings (of `sys/wrapper.h`) and mirrored constants; `sys/glue.c`: `RTE_PMD_REGISTER_*`, the log type, wrappers of DPDK `static inline` helpers |
//! | `sys::compat` | what differs between DPDK lines (22.11 to 25.11): mbuf fields, `stats_get`, the link word |
//! | `sys::eth_stats` | the counters `stats_get` reports, in one form for every DPDK line |
//! | `sys::log` | `rte_log` output (`VECRING: ...`), `vlog!` |
//! | `sys::guard` | no panic unwinds into C |
//! | `devargs` | parsing and validation of `--vdev` arguments |
//! | `datapath::rx` | RX queues, the RX burst, Rx interrupt enable/disable |
//! | `datapath::tx` | TX queues, the TX burst, and when it streams (non-temporal stores) |
//! | `datapath::scatter` | a long frame received into a chain of mbufs |
//! | `datapath::zerocopy` | zero-copy receive: mbufs attached to ring slots |
//! | `datapath::mbuf` | mbuf helpers: segment bytes and room, bulk free |
//! | `datapath::filter` | the receive filter as one burst sees it, and its decisions |
//! | `datapath::filter_config` | the filter's modes and address tables, as control operations set them |
//! | `datapath::shared` | what the data path and the control path share: per-queue counters (one writer each), hand-offs of a reopened link's ends |
//! | `datapath::setup` | what a queue was set up with, for queue info |
//! | `port::state` | the port: its link, its queues' ends, `dev_private` |
//! | `port::link` | opening the link the devargs describe |
//! | `port::queue_set` | the queues set up, per direction |
//! | `port::snapshot` | the counters at one moment, port totals, reset baselines |
//! | `port::lsc` | link status in `dev_link`, link-state events from the driver's own thread |
//! | `port::intr_handle` | the port's Rx interrupt handle |
//! | `ethdev::dev` | the ethdev port during a control operation |
//! | `ethdev::ops` | the `eth_dev_ops` table: start/stop, link up/down, configuration, filter, MAC, MTU |
//! | `ethdev::queues` | queue setup and release |
//! | `ethdev::addrs` | extra unicast MACs and multicast groups |
//! | `ethdev::qinfo` | queue and burst-mode information |
//! | `ethdev::intr` | Rx interrupts: the descriptors `rte_epoll_wait` sleeps on |
//! | `ethdev::stats` | statistics and extended statistics, and their resets |
//! | `ethdev::xstats` | the extended statistics' names and values |
//! | `ethdev::close` | closing a port (`dev_close`, remove) |
//! | `mp::primary` | the primary's answers to secondary processes (EAL IPC) |
//! | `mp::secondary` | a port seen from a secondary process (`dpdk-proc-info`, `dpdk-dumpcap`) |
//! | `mp::msg`, `mp::values` | the messages between them and the values they carry |
//! | `probe` | the vdev entry points: probe and remove |
//!
//! Queue pairs are at most `vecring_core::MAX_QUEUES` (16), the most a
//! link carries; every module uses that constant.
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub(crate) mod datapath;
pub(crate) mod devargs;
pub(crate) mod ethdev;
pub(crate) mod mp;
pub(crate) mod port;
pub(crate) mod probe;
pub(crate) mod sys;
