//! The primary's side of DPDK multi-process support: answering a secondary
//! process's questions about a vecring port over EAL's IPC (`rte_mp_*`).
//!
//! A port's state (its [`Port`](crate::port::state::Port), link and counters)
//! lives in the primary's heap, which a secondary process such as
//! `dpdk-proc-info` or `dpdk-dumpcap` does not map. So a secondary's
//! statistics and information operations (see [`super::secondary`]) ask the
//! primary: they send a request naming the port and an [`Op`] to the IPC
//! action [`ACTION`], and the primary answers with `u64` values, computed
//! by the port's own operations ([`OPS`]): a secondary sees exactly what
//! the primary's application sees. An answer longer than one message
//! crosses in pages ([`super::msg`]).
//!
//! Concurrency: EAL runs the action on its IPC thread, concurrently with the
//! application's control operations, as ethdev's telemetry thread calls the
//! same statistics operations. The operations it calls only read counters;
//! a request that races with the port's close can find the port closed
//! (`-ENODEV`), like a telemetry request can.

use super::msg::{self, encode_reply, Op, Request, ACTION, MAX_VALUES};
use super::values::{self, info_to_values, stats_to_values};
use crate::ethdev::ops::OPS;
use crate::ethdev::{stats, xstats};
use crate::sys::ffi::{self, rte_eth_dev, rte_mp_msg};
use crate::sys::guard::guarded;
use crate::sys::log::vlog;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Once;

const _: () = assert!(
    values::INFO_VALUES <= MAX_VALUES,
    "device info fits in one page"
);

static SERVE: Once = Once::new();

/// Registers the IPC action in the primary process, once. Without EAL's
/// IPC (`--in-memory`, `--no-shconf`) there are no secondary processes and
/// nothing to register.
pub fn serve() {
    SERVE.call_once(|| {
        let name = CString::new(ACTION).expect("no NUL");
        // SAFETY: a NUL-terminated name (EAL copies it) and a handler with
        // the `rte_mp_t` signature that stays loaded with this driver.
        let rc = unsafe { ffi::rte_mp_action_register(name.as_ptr(), Some(on_request)) };
        if rc < 0 {
            // SAFETY: reads this thread's rte_errno.
            let e = unsafe { ffi::vecring_errno() };
            if e == libc::ENOTSUP {
                vlog!(
                    INFO,
                    "multi-process IPC is off (--in-memory or --no-shconf): no secondary process can read vecring ports"
                );
            } else {
                vlog!(
                    WARNING,
                    "cannot register IPC action {ACTION} ({}): secondary processes cannot read vecring ports",
                    std::io::Error::from_raw_os_error(e)
                );
            }
        }
    });
}

/// The IPC action (`rte_mp_t`): answers one request from a secondary.
///
/// # Safety
/// EAL calls it with a message and a peer name valid for the call.
unsafe extern "C" fn on_request(msg: *const rte_mp_msg, peer: *const c_void) -> c_int {
    // SAFETY: EAL passes a valid message for the duration of the call.
    let msg = unsafe { &*msg };
    let mut reply = guarded("IPC request", encode_reply(-libc::EIO, &[], 0), || {
        let answered = Request::decode(msg).and_then(|req| {
            let all = answer(&req)?;
            Ok(encode_reply(0, msg::page(&all, req.first)?, all.len()))
        });
        answered.unwrap_or_else(|e| encode_reply(e, &[], 0))
    });
    // SAFETY: a valid message and the peer EAL gave this action.
    if unsafe { ffi::rte_mp_reply(&mut reply, peer.cast::<c_char>()) } < 0 {
        vlog!(WARNING, "cannot answer a secondary process's request");
    }
    0
}

/// Runs `req` on the port it names, with the port's own operations: every
/// value of the answer (the caller sends the page asked for).
fn answer(req: &Request) -> Result<Vec<u64>, i32> {
    let name = CString::new(req.name.as_str()).map_err(|_| -libc::EINVAL)?;
    // SAFETY: a NUL-terminated name; ethdev looks it up under its lock.
    let dev = unsafe { ffi::rte_eth_dev_allocated(name.as_ptr()) };
    // SAFETY: a non-null result is an allocated port of this process.
    if dev.is_null() || !std::ptr::eq(unsafe { (*dev).dev_ops }, &OPS) {
        return Err(-libc::ENODEV);
    }
    let ops = &OPS;
    match req.op {
        Op::Stats => {
            // SAFETY: a port of ours; this handler runs on EAL's IPC thread
            // as ethdev's own multi-process requests do.
            let s = unsafe { stats::eth_stats(dev) }?;
            Ok(stats_to_values(&s))
        }
        Op::Xstats => {
            // SAFETY: `data` of an allocated port is valid; the queue
            // counts are what `xstats_get` itself reads.
            let (nb_rx, nb_tx) =
                unsafe { ((*(*dev).data).nb_rx_queues, (*(*dev).data).nb_tx_queues) };
            let count = xstats::count(nb_rx, nb_tx);
            let mut x = vec![ffi::rte_eth_xstat::default(); count];
            let f = ops.xstats_get.ok_or(-libc::ENOTSUP)?;
            // SAFETY: a port of ours and room for every xstat.
            let n = unsafe { f(dev, x.as_mut_ptr(), x.len() as u32) };
            check(n)?;
            if n as usize != count {
                // The queues were reconfigured in between: ask again.
                return Err(-libc::EAGAIN);
            }
            Ok(x.iter().map(|s| s.value).collect())
        }
        Op::Info => {
            let mut i = default_info(dev);
            let f = ops.dev_infos_get.ok_or(-libc::ENOTSUP)?;
            // SAFETY: a port of ours and an info struct initialised as
            // ethdev initialises it.
            check(unsafe { f(dev, &mut i) })?;
            Ok(info_to_values(&i))
        }
    }
}

fn check(rc: c_int) -> Result<(), i32> {
    if rc < 0 {
        Err(rc)
    } else {
        Ok(())
    }
}

/// `rte_eth_dev_info` as `rte_eth_dev_info_get` prepares it before calling
/// the driver.
fn default_info(dev: *mut rte_eth_dev) -> ffi::rte_eth_dev_info {
    let lim = ffi::rte_eth_desc_lim {
        nb_max: u16::MAX,
        nb_min: 0,
        nb_align: 1,
        nb_seg_max: u16::MAX,
        nb_mtu_seg_max: u16::MAX,
    };
    let mut i = ffi::rte_eth_dev_info {
        rx_desc_lim: lim,
        tx_desc_lim: lim,
        // RTE_ETHER_MIN_LEN - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN.
        min_mtu: 64 - 14 - 4,
        max_mtu: u16::MAX,
        ..Default::default()
    };
    // SAFETY: `dev` is an allocated port.
    i.device = unsafe { (*dev).device };
    i.switch_info.domain_id = u16::MAX; // RTE_ETH_DEV_SWITCH_DOMAIN_ID_INVALID
    i
}
