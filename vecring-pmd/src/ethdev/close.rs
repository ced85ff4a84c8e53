//! Closing a port: [`close`], reached from `dev_close` and from the vdev
//! remove callback.

use super::dev::Dev;
use super::{intr, queues};
use crate::port::state::PrivData;
use crate::sys::ffi::rte_eth_dev;
use crate::sys::log::vlog;

/// Releases everything the port holds: queues, link-state events, the link
/// and the Rust state. Idempotent.
///
/// # Safety
/// `dev` must be a valid port of this driver, in the primary process.
pub unsafe fn close(dev: *mut rte_eth_dev) {
    // SAFETY: per the caller; control operations are not concurrent.
    let data = unsafe { (*dev).data };
    // SAFETY: as above.
    let priv_ = unsafe { (*data).dev_private.cast::<PrivData>() };
    // SAFETY: as above.
    if priv_.is_null() || unsafe { (*priv_).port.is_null() } {
        return;
    }
    // SAFETY: as above; the `Port` is live until freed below.
    if let Some(p) = unsafe { (*priv_).port.as_mut() } {
        // A sleeper (which should have stopped polling) wakes.
        p.shared.wake_all();
        // SAFETY: as above.
        intr::uninstall(unsafe { Dev::new(dev) }, p);
    }
    // SAFETY: as above.
    unsafe {
        for q in 0..(*data).nb_rx_queues {
            queues::rx_queue_release(dev, q);
        }
        for q in 0..(*data).nb_tx_queues {
            queues::tx_queue_release(dev, q);
        }
    }
    // SAFETY: `port` came from `Box::into_raw` at probe and is cleared here,
    // so it is freed once.
    let mut port =
        unsafe { Box::from_raw(std::mem::replace(&mut (*priv_).port, std::ptr::null_mut())) };
    // No more link-state events into this port from now on (from a
    // link-state callback: once it returns).
    port.lsc.stop();
    let name = port.name.clone();
    drop(port);
    // SAFETY: `mac_addrs` points into `dev_private`; ethdev would `rte_free`
    // it at release, so it must not point there any more.
    unsafe { (*data).mac_addrs = std::ptr::null_mut() };
    vlog!(INFO, "{name}: closed");
}
