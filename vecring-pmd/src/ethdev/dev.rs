//! `Dev`: an ethdev port of this driver during one control operation,
//! with typed access to the fields of `rte_eth_dev_data` the operations
//! read and write.

use crate::datapath::rx::{self, RxQueue};
use crate::datapath::tx::{self, TxQueue};
use crate::port::lsc;
use crate::port::state::{port_of, Port};
use crate::sys::ffi::{self, rte_eth_dev};
use crate::sys::guard::guarded;
use std::ffi::c_void;
use std::ptr::addr_of_mut;
use vecring_core::MAX_QUEUES;

/// `RTE_ETH_QUEUE_STATE_STOPPED`.
pub const QUEUE_STOPPED: u8 = 0;
/// `RTE_ETH_QUEUE_STATE_STARTED`.
pub const QUEUE_STARTED: u8 = 1;

/// An ethdev port of this driver, during one control operation.
///
/// Invariant (established by [`Dev::new`]): the pointer is a valid,
/// allocated port of this driver in the primary process, and no other
/// control operation runs on it meanwhile. Fields of `dev->data` are read
/// and written through raw pointers, never through a `&mut` to the whole
/// struct, because the data path updates `rx_mbuf_alloc_failed` in it.
#[derive(Clone, Copy)]
pub(crate) struct Dev(*mut rte_eth_dev);

impl Dev {
    /// # Safety
    /// `dev` must satisfy the invariant of [`Dev`] for as long as the
    /// handle is used (ethdev guarantees it for the operations of
    /// [`OPS`](super::ops::OPS)).
    pub(crate) unsafe fn new(dev: *mut rte_eth_dev) -> Self {
        Dev(dev)
    }

    pub(crate) fn data(self) -> *mut ffi::rte_eth_dev_data {
        // SAFETY: a valid port (type invariant) has valid `data`.
        unsafe { (*self.0).data }
    }

    /// Runs `f` on the port, or returns `-ENODEV` if it is closed.
    pub(crate) fn with_port(self, what: &str, f: impl FnOnce(&mut Port) -> i32) -> i32 {
        guarded(what, -libc::EIO, || {
            // SAFETY: a valid port of ours (type invariant); operations are
            // not concurrent, so this is the only reference to the `Port`.
            match unsafe { port_of(self.0) } {
                Some(p) => f(p),
                None => -libc::ENODEV,
            }
        })
    }

    pub(crate) fn nb_rx_queues(self) -> u16 {
        // SAFETY: `data` is valid (type invariant).
        unsafe { (*self.data()).nb_rx_queues }
    }

    pub(crate) fn nb_tx_queues(self) -> u16 {
        // SAFETY: `data` is valid (type invariant).
        unsafe { (*self.data()).nb_tx_queues }
    }

    /// Slot `q` of `rx_queues` (`q < nb_rx_queues`).
    pub(crate) fn rx_slot(self, q: u16) -> *mut *mut c_void {
        assert!(q < self.nb_rx_queues());
        // SAFETY: ethdev allocates `nb_rx_queues` entries.
        unsafe { (*self.data()).rx_queues.add(usize::from(q)) }
    }

    /// Slot `q` of `tx_queues` (`q < nb_tx_queues`).
    pub(crate) fn tx_slot(self, q: u16) -> *mut *mut c_void {
        assert!(q < self.nb_tx_queues());
        // SAFETY: ethdev allocates `nb_tx_queues` entries.
        unsafe { (*self.data()).tx_queues.add(usize::from(q)) }
    }

    /// The mbuf data room of RX queue `q`, if it is set up.
    pub(crate) fn rx_queue_buf_space(self, q: u16) -> Option<usize> {
        // SAFETY: the slot holds null or a `Box<RxQueue>` from
        // `rx_queue_setup`, alive until `rx_queue_release`, which cannot run
        // during this operation.
        unsafe { (*self.rx_slot(q)).cast::<RxQueue>().as_ref() }.map(RxQueue::buf_space)
    }

    /// Prepares RX queue `q` for the start ([`RxQueue::prepare`]), if it is
    /// set up. Only while the port is stopped: no lcore may poll it.
    pub(crate) fn prepare_rx_queue(self, q: u16) {
        // SAFETY: the slot holds null or a `Box<RxQueue>` from
        // `rx_queue_setup`; the port is starting, so no lcore polls it and
        // this is the only reference.
        if let Some(rxq) = unsafe { (*self.rx_slot(q)).cast::<RxQueue>().as_mut() } {
            rxq.prepare();
        }
    }

    /// Whether TX queue `q` frees sent mbufs the fast way, if it is set up.
    pub(crate) fn tx_queue_fast_free(self, q: u16) -> Option<bool> {
        // SAFETY: the slot holds null or a `Box<TxQueue>` from
        // `tx_queue_setup`, alive until `tx_queue_release`, which cannot run
        // during this operation.
        unsafe { (*self.tx_slot(q)).cast::<TxQueue>().as_ref() }.map(TxQueue::fast_free)
    }

    pub(crate) fn tx_offloads(self) -> u64 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.txmode.offloads }
    }

    pub(crate) fn set_queue_states(self, state: u8) {
        let d = self.data();
        // SAFETY: `data` is valid; the state arrays have
        // RTE_MAX_QUEUES_PER_PORT entries, as many as ethdev allows queues
        // (and more than the MAX_QUEUES a port of ours offers).
        unsafe {
            for q in 0..usize::from((*d).nb_rx_queues.min(MAX_QUEUES)) {
                (*d).rx_queue_state[q] = state;
            }
            for q in 0..usize::from((*d).nb_tx_queues.min(MAX_QUEUES)) {
                (*d).tx_queue_state[q] = state;
            }
        }
    }

    pub(crate) fn rx_offloads(self) -> u64 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.rxmode.offloads }
    }

    pub(crate) fn link_speeds(self) -> u32 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.link_speeds }
    }

    /// Whether the application asked for Rx interrupts
    /// (`dev_conf.intr_conf.rxq`).
    pub(crate) fn rxq_intr_requested(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.intr_conf.rxq() != 0 }
    }

    /// Points `dev->intr_handle` at `h` (null: none).
    pub(crate) fn set_intr_handle(self, h: *mut ffi::rte_intr_handle) {
        // SAFETY: a valid port; ethdev reads the field only in control
        // calls (`rte_eth_dev_rx_intr_ctl*`), not concurrent with ours.
        unsafe { (*self.0).intr_handle = h };
    }

    pub(crate) fn lsc_requested(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).dev_conf.intr_conf.lsc() != 0 }
    }

    pub(crate) fn promiscuous(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).promiscuous() != 0 }
    }

    pub(crate) fn all_multicast(self) -> bool {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).all_multicast() != 0 }
    }

    pub(crate) fn port_id(self) -> u16 {
        // SAFETY: `data` is valid.
        unsafe { (*self.data()).port_id }
    }

    /// `&data->rx_mbuf_alloc_failed`, for the data path.
    pub(crate) fn nombuf_counter(self) -> *mut u64 {
        // SAFETY: `data` is valid; no reference is made.
        unsafe { addr_of_mut!((*self.data()).rx_mbuf_alloc_failed) }
    }

    /// Installs the burst functions; ethdev copies them into its fast-path
    /// table when `dev_start` returns.
    pub(crate) fn set_burst_fns(self, scatter: bool, zero_copy: bool, fast_free: bool) {
        // SAFETY: a valid port; the fast path does not read these fields.
        unsafe {
            (*self.data()).set_scattered_rx(u8::from(scatter));
            (*self.0).rx_pkt_burst = rx::rx_burst_fn(scatter, zero_copy);
            (*self.0).tx_pkt_burst = tx::tx_burst_fn(fast_free);
        }
    }

    /// Stores the link status; returns whether up/down changed.
    pub(crate) fn set_link_status(self, up: bool) -> bool {
        // SAFETY: a valid, allocated port.
        unsafe { lsc::set_link_status(self.0, up) }
    }
}
