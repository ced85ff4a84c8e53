//! One vecring port: the per-port state behind
//! `rte_eth_dev_data::dev_private` ([`Port`](state::Port)), created by
//! [`crate::probe`] and freed by [`crate::ethdev::close`]; everything the
//! control path keeps about a port and its link.
//!
//! Ownership: `dev_private` (allocated by ethdev, freed by
//! `rte_eth_dev_release_port`) holds a [`PrivData`](state::PrivData): the
//! MAC that `data->mac_addrs` points to, and a pointer to the Rust-owned
//! `Port`. The port owns the [`Link`](vecring_core::Link); RX queue `q`
//! owns the link's receiving end of queue pair `q` (and TX queue `q` its
//! sending end) while it exists, and drops it when released. An end is
//! taken only for a queue the application set up: a queue pair it did not
//! configure has no consumer on this side, which the peer can see.
//!
//! Queue counts: the master's link has `queues=` pairs (1 by default); a
//! slave's has the master's (see
//! [`Port::link_queues`](state::Port::link_queues)).
//!
//! Stopping the port or setting its link down closes the link, so the peer
//! sees this end leave (EOF) and stops sending; starting the port or setting
//! the link up opens a new one (a master claims the link again: closing
//! removed its socket and lock). The new link's ends reach the queues
//! through hand-offs (`datapath::shared`, its hand-offs), since an lcore may be polling
//! them. `dev_close` (also reached from `remove`, i.e. `rte_vdev_uninit`)
//! releases the queues, stops link-state events, drops the link and frees
//! the port; it may be called from the application's link-state callback
//! (see [`lsc`]), and it waits for nothing the peer controls.
//!
//! Control operations of one port are never concurrent (a DPDK rule for
//! applications), so they may take `&mut Port`. The data path touches only
//! its queue and the port's [`Shared`](crate::datapath::shared::Shared)
//! state; vecring's control thread touches only the [`Lsc`](lsc::Lsc)
//! notifier, whose event thread touches only the link status and the
//! application's callbacks.
//!
//! | module | what |
//! |---|---|
//! | `state` | [`Port`](state::Port) and [`PrivData`](state::PrivData): the port, its link and its queues' ends |
//! | `link` | opening the link the devargs describe |
//! | `queue_set` | the queues set up, per direction |
//! | `snapshot` | the counters at one moment, port totals, reset baselines |
//! | `lsc` | link status in `dev_link`, link-state events from the driver's own thread |
//! | `intr_handle` | the port's Rx interrupt handle (`dev->intr_handle`) |

pub(crate) mod intr_handle;
pub(crate) mod link;
pub(crate) mod lsc;
pub(crate) mod queue_set;
pub(crate) mod snapshot;
pub(crate) mod state;
