//! The port's Rx interrupt handle ([`IntrHandle`]): what a port in Rx
//! interrupt mode gives ethdev as `dev->intr_handle`, so that
//! `rte_eth_dev_rx_intr_ctl_q` finds each RX queue's descriptor (see
//! [`crate::ethdev::intr`] for the mechanism).

use crate::sys::ffi::{self, rte_intr_handle};
use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use vecring_core::MAX_QUEUES;

/// The port's `rte_intr_handle` (`dev->intr_handle`): `RTE_INTR_HANDLE_VDEV`,
/// one vector per RX queue index (`RTE_INTR_VEC_RXTX_OFFSET + q`), `efds[q]`
/// the queue's [`QueueIntr`](crate::datapath::shared::QueueIntr).
/// Allocated at the first start with `intr_conf.rxq`, freed at close.
#[derive(Debug)]
pub struct IntrHandle(NonNull<rte_intr_handle>);

impl IntrHandle {
    /// The handle, for `dev->intr_handle`.
    pub fn as_ptr(&self) -> *mut rte_intr_handle {
        self.0.as_ptr()
    }

    /// A handle with every vector set and no event descriptor yet.
    pub fn new() -> Result<Self, String> {
        // SAFETY: plain EAL calls on the handle they return (checked for
        // null); every index is below the handle's RTE_MAX_RXTX_INTR_VEC_ID
        // entries, which exceed MAX_QUEUES + 1 (checked in glue.c).
        unsafe {
            let h = NonNull::new(ffi::rte_intr_instance_alloc(ffi::INTR_INSTANCE_F_PRIVATE))
                .ok_or("cannot allocate an interrupt handle")?;
            let handle = IntrHandle(h);
            let h = h.as_ptr();
            let queues = i32::from(MAX_QUEUES);
            check(
                "rte_intr_vec_list_alloc",
                ffi::rte_intr_vec_list_alloc(h, core::ptr::null(), queues),
            )?;
            for q in 0..queues {
                check(
                    "rte_intr_vec_list_index_set",
                    ffi::rte_intr_vec_list_index_set(
                        h,
                        q,
                        ffi::RTE_INTR_VEC_RXTX_OFFSET as i32 + q,
                    ),
                )?;
            }
            // EAL reads this many bytes from a VDEV descriptor after each
            // event, retrying while it would block: 0, since an epoll set
            // cannot be read and each enable drains the set itself.
            check(
                "rte_intr_efd_counter_size_set",
                ffi::rte_intr_efd_counter_size_set(h, 0),
            )?;
            check(
                "rte_intr_type_set",
                ffi::rte_intr_type_set(h, ffi::rte_intr_handle_type::RTE_INTR_HANDLE_VDEV),
            )?;
            Ok(handle)
        }
    }

    /// Publishes `efds` (queue `q`'s descriptor at `q`) as the handle's
    /// event descriptors.
    pub fn publish(&self, efds: &[RawFd]) -> Result<(), String> {
        let h = self.0.as_ptr();
        let n = efds.len() as i32;
        // SAFETY: a valid handle (type invariant); `efds` has at most
        // MAX_QUEUES entries, below the handle's limit.
        unsafe {
            for (q, &fd) in efds.iter().enumerate() {
                check(
                    "rte_intr_efds_index_set",
                    ffi::rte_intr_efds_index_set(h, q as i32, fd),
                )?;
            }
            check("rte_intr_nb_efd_set", ffi::rte_intr_nb_efd_set(h, n))?;
            check(
                "rte_intr_max_intr_set",
                ffi::rte_intr_max_intr_set(h, n + 1),
            )?;
        }
        Ok(())
    }
}

impl Drop for IntrHandle {
    fn drop(&mut self) {
        let h = self.0.as_ptr();
        // SAFETY: a handle of `rte_intr_instance_alloc`, freed once here;
        // its events leave the epoll sets they were added to first.
        unsafe {
            ffi::rte_intr_free_epoll_fd(h);
            ffi::rte_intr_vec_list_free(h);
            ffi::rte_intr_instance_free(h);
        }
    }
}

/// An EAL status (0 or a negative errno) as a result.
fn check(what: &str, rc: i32) -> Result<(), String> {
    if rc < 0 {
        Err(format!("{what}: {}", io::Error::from_raw_os_error(-rc)))
    } else {
        Ok(())
    }
}
