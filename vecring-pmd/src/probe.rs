//! The vdev driver's entry points: [`vecring_rs_probe`] creates a port
//! (validating its devargs, opening its link, allocating the ethdev) and
//! [`vecring_rs_remove`] closes and releases it. `glue.c` registers them
//! with the vdev bus.

use crate::datapath::rx::rx_burst_fn;
use crate::datapath::shared::Shared;
use crate::datapath::tx::tx_burst_fn;
use crate::datapath::zerocopy::ZC_MIN_LEN;
use crate::devargs::{format_mac, Devargs};
use crate::ethdev::close::close;
use crate::ethdev::ops::OPS;
use crate::mp::{primary, secondary};
use crate::port::link::{open_link, requested_geometry};
use crate::port::lsc::{set_link_status, Lsc};
use crate::port::queue_set::QueueSet;
use crate::port::snapshot::Snapshot;
use crate::port::state::{port_of, Port, PrivData};
use crate::sys::ffi::{self, rte_vdev_device};
use crate::sys::guard::guarded;
use crate::sys::log::{self, vlog};
use std::ffi::CStr;
use std::sync::Arc;
use vecring_core::LinkCounters;

fn cstr(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: DPDK hands out NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The vdev probe callback (`rte_vdev_driver::probe`).
///
/// # Safety
/// Called by the vdev bus with a valid device.
#[no_mangle]
pub unsafe extern "C" fn vecring_rs_probe(dev: *mut rte_vdev_device) -> i32 {
    // SAFETY: the bus passes a valid device.
    let name = cstr(unsafe { ffi::vecring_vdev_name(dev) });
    guarded(&name.clone(), -libc::EINVAL, || {
        // SAFETY: as above.
        unsafe { probe(dev, name) }
    })
}

unsafe fn probe(dev: *mut rte_vdev_device, name: String) -> i32 {
    log::install();
    // SAFETY: plain query.
    if secondary::is_secondary() {
        // SAFETY: the bus passes a valid device.
        return unsafe { secondary::probe(dev, &name) };
    }
    primary::serve();
    // SAFETY: the bus passes a valid device.
    let raw = cstr(unsafe { ffi::vecring_vdev_args(dev) });
    let args = match Devargs::parse(&raw) {
        Ok(a) => a,
        Err(e) => {
            vlog!(ERR, "{name}: {e}");
            return -libc::EINVAL;
        }
    };
    if args.zero_copy {
        vlog!(
            NOTICE,
            "{name}: zero-copy receive: frames of {} bytes or more are attached to the ring's slots (external mbufs) instead of copied",
            ZC_MIN_LEN
        );
        if args.master {
            vlog!(
                WARNING,
                "{name}: zero_copy=true on a master: received frames stay in shared memory the slave (the container) can rewrite while the application parses them; checks done on such a frame may not hold when it is used. Use it only with a trusted slave, or copy (the default)"
            );
        }
    }

    let geometry = match requested_geometry(&args) {
        Ok(g) => g,
        Err(msg) => {
            vlog!(ERR, "{name}: {msg}");
            return -libc::EINVAL;
        }
    };
    let lsc = match Lsc::start(&name) {
        Ok(l) => l,
        Err(e) => {
            vlog!(ERR, "{name}: cannot start the link-state event thread: {e}");
            return -libc::ENOMEM;
        }
    };
    let shared = Arc::new(Shared::default());
    let link = match open_link(&args, geometry, &shared, &lsc) {
        Ok(l) => l,
        Err(msg) => {
            vlog!(ERR, "{name}: {msg}");
            return -libc::EIO;
        }
    };
    if args.hold_back {
        let hold = vecring_core::HoldBack::STREAMING;
        vlog!(
            NOTICE,
            "{name}: rx hold-back: 2 to {} ready one-slot frames wait up to {} ns while the peer streams",
            hold.below_slots - 1,
            hold.wait.as_nanos()
        );
    }

    // SAFETY: a valid vdev; the size is that of `PrivData`, which ethdev
    // zero-fills.
    let eth = unsafe { ffi::vecring_eth_vdev_allocate(dev, std::mem::size_of::<PrivData>()) };
    if eth.is_null() {
        vlog!(
            ERR,
            "{name}: cannot allocate an ethdev port (name in use, or out of memory)"
        );
        return -libc::ENOMEM;
    }

    let mac = args.mac();
    shared.macs.set(0, Some(&mac));
    shared.set_filter(false, false);
    let socket = args.socket;
    let role = args.role_name();
    let port = Box::new(Port {
        name: name.clone(),
        args,
        link: Some(link),
        closed_links: LinkCounters::default(),
        tx_queues: QueueSet::default(),
        rx_queues: QueueSet::default(),
        known_queues: None,
        told_guess: false,
        shared,
        lsc,
        stats_base: Snapshot::default(),
        xstats_base: Snapshot::default(),
        intr: None,
    });
    let desc = format!("{role} of link {}/{}", port.args.domain, port.args.link);

    // SAFETY: `eth` was just allocated for us; its `data` and `dev_private`
    // (a zeroed `PrivData`) are valid and not yet visible to anyone else.
    unsafe {
        let data = (*eth).data;
        let priv_ = (*data).dev_private.cast::<PrivData>();
        (*priv_).macs[0].addr_bytes = mac;
        (*priv_).port = Box::into_raw(port);
        (*data).mac_addrs = std::ptr::addr_of_mut!((*priv_).macs).cast();
        (*data).dev_flags |= ffi::DEV_INTR_LSC | ffi::DEV_AUTOFILL_QUEUE_XSTATS;
        (*data).numa_node = match socket {
            Some(n) => n as i32,
            None => ffi::rte_socket_id() as i32,
        };
        (*eth).dev_ops = &OPS;
        (*eth).rx_pkt_burst = rx_burst_fn(false, false);
        (*eth).tx_pkt_burst = tx_burst_fn(false);
    }
    // SAFETY: `priv_->port` was set above and nothing else uses it until
    // probing finishes.
    let up = unsafe { port_of(eth) }.is_some_and(|p| {
        // Link-state changes reach the port from now on; read the state
        // after arming so that a change in between is not lost.
        // SAFETY: `eth` is allocated; `dev_close` stops the events before
        // the port is released.
        unsafe { p.lsc.attach(eth) };
        p.link_up()
    });
    // SAFETY: `eth` is allocated and set up.
    unsafe { set_link_status(eth, up) };
    // SAFETY: the port is fully set up.
    unsafe { ffi::rte_eth_dev_probing_finish(eth) };
    // SAFETY: `data` is valid.
    let port_id = unsafe { (*(*eth).data).port_id };
    vlog!(
        NOTICE,
        "{name}: port {port_id}, {desc}, mac {}, link {}",
        format_mac(&mac),
        if up { "up" } else { "down (waiting for peer)" }
    );
    0
}

/// The vdev remove callback (`rte_vdev_driver::remove`, `rte_vdev_uninit`).
///
/// # Safety
/// Called by the vdev bus with a valid device.
#[no_mangle]
pub unsafe extern "C" fn vecring_rs_remove(dev: *mut rte_vdev_device) -> i32 {
    if dev.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: the bus passes a valid device.
    let name_ptr = unsafe { ffi::vecring_vdev_name(dev) };
    let name = cstr(name_ptr);
    guarded(&name, -libc::EIO, || {
        if secondary::is_secondary() {
            // SAFETY: a NUL-terminated name.
            return unsafe { secondary::remove(name_ptr) };
        }
        // SAFETY: a NUL-terminated name.
        let eth = unsafe { ffi::rte_eth_dev_allocated(name_ptr) };
        if eth.is_null() {
            return 0; // already closed and released by the application
        }
        // SAFETY: an allocated port of this driver.
        unsafe {
            close(eth);
            ffi::rte_eth_dev_release_port(eth);
        }
        0
    })
}
