//! DPDK as the rest of the driver sees it: the bindings and `glue.c`, what
//! differs between DPDK lines, logging through `rte_log`, and the guard
//! every entry point from C runs under. Nothing here imports another part
//! of the driver.
//!
//! | module | what |
//! |---|---|
//! | `glue.c` | `RTE_PMD_REGISTER_*`, the log type, wrappers of DPDK `static inline` helpers |
//! | `ffi` | bindgen bindings (of `wrapper.h`) and mirrored constants |
//! | `eth_stats` | the counters `stats_get` reports, in one form for every DPDK line |
//! | `compat` | what differs between DPDK lines (22.11 to 25.11): mbuf fields, `stats_get`, the link word |
//! | `log` | `rte_log` output (`VECRING: ...`), [`vlog!`](log::vlog) |
//! | `guard` | no panic unwinds into C |

pub(crate) mod compat;
pub(crate) mod eth_stats;
pub(crate) mod ffi;
pub(crate) mod guard;
pub(crate) mod log;
