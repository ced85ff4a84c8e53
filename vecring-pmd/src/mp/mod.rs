//! DPDK multi-process support: a vecring port seen from a secondary
//! process (`dpdk-proc-info`, `dpdk-dumpcap`), which asks the primary over
//! EAL's IPC for what lives in the primary's heap, and the primary's
//! answers, computed by the port's own operations ([`crate::ethdev`]).
//!
//! | module | what |
//! |---|---|
//! | `primary` | the IPC action that answers a secondary's questions |
//! | `secondary` | a port in a secondary process: its own operations table, asking the primary |
//! | `msg` | the messages of the protocol and their paging |
//! | `values` | statistics and device information as the values a reply carries |

mod msg;
pub(crate) mod primary;
pub(crate) mod secondary;
mod values;
