//! The primary's side of DPDK multi-process support: answering a secondary
//! process's questions about a vecring port over EAL's IPC (`rte_mp_*`).
//!
//! A port's state (its [`Port`](crate::port::Port), link and counters)
//! lives in the primary's heap, which a secondary process such as
//! `dpdk-proc-info` or `dpdk-dumpcap` does not map. So a secondary's
//! statistics and information operations (see [`crate::secondary`]) ask the
//! primary: they send a request naming the port and an [`Op`] to the IPC
//! action [`ACTION`], and the primary answers with one message of `u64`
//! values, computed by the port's own operations ([`crate::ops::OPS`]): a
//! secondary sees exactly what the primary's application sees.
//!
//! Message parameters (native endianness: both processes are on one host,
//! and use the same driver build):
//!
//! ```text
//! request: version u32 | op u32 | port name, NUL-terminated, 64 bytes
//! reply:   version u32 | status i32 (0 or -errno) | count u32 | reserved u32
//!          | count x u64 values (at most MAX_VALUES)
//! ```
//!
//! Concurrency: EAL runs the action on its IPC thread, concurrently with the
//! application's control operations, as ethdev's telemetry thread calls the
//! same statistics operations. The operations it calls only read counters;
//! a request that races with the port's close can find the port closed
//! (`-ENODEV`), like a telemetry request can.

use crate::ffi::{self, rte_eth_dev, rte_mp_msg};
use crate::guard::guarded;
use crate::stats::XSTATS;
use crate::vlog;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Once;

/// The IPC action's name (the protocol version is part of it: a driver
/// speaking another version is not asked at all).
pub const ACTION: &str = "vecring_port_v1";
/// The message format version carried in every message.
pub const VERSION: u32 = 1;
/// `RTE_MP_MAX_PARAM_LEN`: bytes of parameters in one message.
const PARAM_LEN: usize = 256;
/// `RTE_ETH_NAME_MAX_LEN`: room for a port name, with its NUL.
pub const NAME_LEN: usize = 64;
/// Bytes before the values of a reply.
const REPLY_HEADER: usize = 16;
/// Values one reply carries.
pub const MAX_VALUES: usize = (PARAM_LEN - REPLY_HEADER) / 8;
/// Queues whose counters a [`Op::Stats`] reply carries (a vecring port has
/// one queue per direction; four fit in one message).
pub const STATS_QUEUES: usize = 4;
/// Values of a [`Op::Stats`] reply: 7 port counters, 5 per queue.
const STATS_VALUES: usize = 7 + 5 * STATS_QUEUES;

const _: () = assert!(std::mem::size_of::<[u8; PARAM_LEN]>() == PARAM_LEN);
const _: () = assert!(8 + NAME_LEN <= PARAM_LEN, "a request fits in one message");
const _: () = assert!(STATS_VALUES <= MAX_VALUES, "stats fit in one reply");
const _: () = assert!(XSTATS.len() <= MAX_VALUES, "xstats fit in one reply");
const _: () = assert!(INFO_VALUES <= MAX_VALUES, "device info fits in one reply");
const _: () = assert!(STATS_QUEUES <= ffi::QUEUE_STAT_CNTRS);

/// What a secondary asks about a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    /// `rte_eth_stats` (port and per-queue counters; see [`stats_to_values`]).
    Stats = 1,
    /// The driver's xstats values, in the order of [`XSTATS`].
    Xstats = 2,
    /// The driver's `rte_eth_dev_info` fields (see [`info_to_values`]).
    Info = 3,
}

impl Op {
    fn from_u32(v: u32) -> Option<Op> {
        match v {
            1 => Some(Op::Stats),
            2 => Some(Op::Xstats),
            3 => Some(Op::Info),
            _ => None,
        }
    }
}

/// A request: `op` about port `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What is asked.
    pub op: Op,
    /// The ethdev name of the port (`eth_vecring0`).
    pub name: String,
}

/// Copies `s` into a message's name field (`RTE_MP_MAX_NAME_LEN` bytes).
fn set_msg_name(msg: &mut rte_mp_msg, s: &str) {
    debug_assert!(s.len() < msg.name.len());
    for (d, b) in msg.name.iter_mut().zip(s.as_bytes()) {
        *d = *b as c_char;
    }
}

fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(p[at..at + 4].try_into().expect("4 bytes"))
}

impl Request {
    /// The IPC message of this request.
    ///
    /// # Errors
    /// `-EINVAL` if the name does not fit.
    pub fn encode(&self) -> Result<rte_mp_msg, i32> {
        if self.name.len() >= NAME_LEN || self.name.contains('\0') {
            return Err(-libc::EINVAL);
        }
        let mut msg = rte_mp_msg::default();
        set_msg_name(&mut msg, ACTION);
        msg.param[0..4].copy_from_slice(&VERSION.to_ne_bytes());
        msg.param[4..8].copy_from_slice(&(self.op as u32).to_ne_bytes());
        msg.param[8..8 + self.name.len()].copy_from_slice(self.name.as_bytes());
        msg.len_param = (8 + NAME_LEN) as c_int;
        Ok(msg)
    }

    /// The request in a message, checked field by field.
    ///
    /// # Errors
    /// `-EPROTO` for another version or length, an unknown op or a name
    /// without its NUL.
    pub fn decode(msg: &rte_mp_msg) -> Result<Request, i32> {
        if msg.len_param != (8 + NAME_LEN) as c_int || u32_at(&msg.param, 0) != VERSION {
            return Err(-libc::EPROTO);
        }
        let op = Op::from_u32(u32_at(&msg.param, 4)).ok_or(-libc::EPROTO)?;
        let name = CStr::from_bytes_until_nul(&msg.param[8..8 + NAME_LEN])
            .map_err(|_| -libc::EPROTO)?
            .to_str()
            .map_err(|_| -libc::EPROTO)?
            .to_owned();
        Ok(Request { op, name })
    }
}

/// The reply message: `status` (0 or `-errno`) and, on success, `values`.
pub fn encode_reply(status: i32, values: &[u64]) -> rte_mp_msg {
    let values = if status == 0 { values } else { &[] };
    debug_assert!(values.len() <= MAX_VALUES);
    let values = &values[..values.len().min(MAX_VALUES)];
    let mut msg = rte_mp_msg::default();
    set_msg_name(&mut msg, ACTION);
    msg.param[0..4].copy_from_slice(&VERSION.to_ne_bytes());
    msg.param[4..8].copy_from_slice(&status.to_ne_bytes());
    msg.param[8..12].copy_from_slice(&(values.len() as u32).to_ne_bytes());
    for (i, v) in values.iter().enumerate() {
        let at = REPLY_HEADER + 8 * i;
        msg.param[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    }
    msg.len_param = (REPLY_HEADER + 8 * values.len()) as c_int;
    msg
}

/// The values of a reply, or its error status.
///
/// # Errors
/// The primary's `-errno`, or `-EPROTO` for a malformed reply.
pub fn decode_reply(msg: &rte_mp_msg) -> Result<Vec<u64>, i32> {
    let len = usize::try_from(msg.len_param).map_err(|_| -libc::EPROTO)?;
    if !(REPLY_HEADER..=PARAM_LEN).contains(&len) || u32_at(&msg.param, 0) != VERSION {
        return Err(-libc::EPROTO);
    }
    let status = u32_at(&msg.param, 4) as i32;
    if status != 0 {
        return Err(if status < 0 { status } else { -libc::EPROTO });
    }
    let count = u32_at(&msg.param, 8) as usize;
    if count > MAX_VALUES || len != REPLY_HEADER + 8 * count {
        return Err(-libc::EPROTO);
    }
    Ok((0..count)
        .map(|i| {
            let at = REPLY_HEADER + 8 * i;
            u64::from_ne_bytes(msg.param[at..at + 8].try_into().expect("8 bytes"))
        })
        .collect())
}

/// The counters of `rte_eth_stats` a reply carries, in order: `ipackets,
/// opackets, ibytes, obytes, imissed, ierrors, oerrors`, then `q_ipackets,
/// q_opackets, q_ibytes, q_obytes, q_errors` of the first [`STATS_QUEUES`]
/// queues. (`rx_nombuf` is in the port's shared data: ethdev fills it in
/// every process.)
pub fn stats_to_values(s: &ffi::rte_eth_stats) -> Vec<u64> {
    let mut v = vec![
        s.ipackets, s.opackets, s.ibytes, s.obytes, s.imissed, s.ierrors, s.oerrors,
    ];
    for q in [
        &s.q_ipackets,
        &s.q_opackets,
        &s.q_ibytes,
        &s.q_obytes,
        &s.q_errors,
    ] {
        v.extend_from_slice(&q[..STATS_QUEUES]);
    }
    v
}

/// The reverse of [`stats_to_values`].
///
/// # Errors
/// `-EPROTO` if `v` has another length.
pub fn values_to_stats(v: &[u64], s: &mut ffi::rte_eth_stats) -> Result<(), i32> {
    if v.len() != STATS_VALUES {
        return Err(-libc::EPROTO);
    }
    let (port, queues) = v.split_at(7);
    [
        s.ipackets, s.opackets, s.ibytes, s.obytes, s.imissed, s.ierrors, s.oerrors,
    ] = port.try_into().expect("7 values");
    for (q, src) in [
        &mut s.q_ipackets,
        &mut s.q_opackets,
        &mut s.q_ibytes,
        &mut s.q_obytes,
        &mut s.q_errors,
    ]
    .into_iter()
    .zip(queues.chunks(STATS_QUEUES))
    {
        q[..STATS_QUEUES].copy_from_slice(src);
    }
    Ok(())
}

/// Declares the `rte_eth_dev_info` fields a reply carries, once, for both
/// directions.
macro_rules! info_fields {
    ($($($field:ident).+ : $ty:ty),* $(,)?) => {
        /// Values of an [`Op::Info`] reply.
        const INFO_VALUES: usize = [$(stringify!($($field).+)),*].len();

        /// The fields of `rte_eth_dev_info` a driver fills (limits,
        /// capabilities), as a reply carries them; ethdev itself fills the
        /// rest (device, driver name, queue counts, flags) in every process.
        pub fn info_to_values(i: &ffi::rte_eth_dev_info) -> Vec<u64> {
            vec![$(u64::from(i.$($field).+)),*]
        }

        /// The reverse of [`info_to_values`].
        ///
        /// # Errors
        /// `-EPROTO` if `v` has another length or a value does not fit.
        pub fn values_to_info(v: &[u64], i: &mut ffi::rte_eth_dev_info) -> Result<(), i32> {
            if v.len() != INFO_VALUES {
                return Err(-libc::EPROTO);
            }
            let mut it = v.iter();
            $(
                i.$($field).+ = <$ty>::try_from(*it.next().expect("length checked"))
                    .map_err(|_| -libc::EPROTO)?;
            )*
            Ok(())
        }
    };
}

info_fields! {
    max_rx_pktlen: u32,
    max_lro_pkt_size: u32,
    max_mac_addrs: u32,
    max_hash_mac_addrs: u32,
    max_rx_queues: u16,
    max_tx_queues: u16,
    min_mtu: u16,
    max_mtu: u16,
    min_rx_bufsize: u32,
    rx_offload_capa: u64,
    tx_offload_capa: u64,
    rx_queue_offload_capa: u64,
    tx_queue_offload_capa: u64,
    reta_size: u16,
    hash_key_size: u8,
    flow_type_rss_offloads: u64,
    rx_desc_lim.nb_max: u16,
    rx_desc_lim.nb_min: u16,
    rx_desc_lim.nb_align: u16,
    rx_desc_lim.nb_seg_max: u16,
    rx_desc_lim.nb_mtu_seg_max: u16,
    tx_desc_lim.nb_max: u16,
    tx_desc_lim.nb_min: u16,
    tx_desc_lim.nb_align: u16,
    tx_desc_lim.nb_seg_max: u16,
    tx_desc_lim.nb_mtu_seg_max: u16,
    speed_capa: u32,
    dev_capa: u64,
}

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
    let (status, values) = guarded(
        "IPC request",
        (-libc::EIO, Vec::new()),
        || match Request::decode(msg) {
            Ok(req) => match answer(&req) {
                Ok(v) => (0, v),
                Err(e) => (e, Vec::new()),
            },
            Err(e) => (e, Vec::new()),
        },
    );
    let mut reply = encode_reply(status, &values);
    // SAFETY: a valid message and the peer EAL gave this action.
    if unsafe { ffi::rte_mp_reply(&mut reply, peer.cast::<c_char>()) } < 0 {
        vlog!(WARNING, "cannot answer a secondary process's request");
    }
    0
}

/// Runs `req` on the port it names, with the port's own operations.
fn answer(req: &Request) -> Result<Vec<u64>, i32> {
    let name = CString::new(req.name.as_str()).map_err(|_| -libc::EINVAL)?;
    // SAFETY: a NUL-terminated name; ethdev looks it up under its lock.
    let dev = unsafe { ffi::rte_eth_dev_allocated(name.as_ptr()) };
    // SAFETY: a non-null result is an allocated port of this process.
    if dev.is_null() || !std::ptr::eq(unsafe { (*dev).dev_ops }, &crate::ops::OPS) {
        return Err(-libc::ENODEV);
    }
    let ops = &crate::ops::OPS;
    match req.op {
        Op::Stats => {
            let mut s = ffi::rte_eth_stats::default();
            let f = ops.stats_get.ok_or(-libc::ENOTSUP)?;
            // SAFETY: a port of ours and a zeroed stats struct, as ethdev
            // passes them.
            check(unsafe { f(dev, &mut s) })?;
            Ok(stats_to_values(&s))
        }
        Op::Xstats => {
            let mut x = vec![ffi::rte_eth_xstat::default(); XSTATS.len()];
            let f = ops.xstats_get.ok_or(-libc::ENOTSUP)?;
            // SAFETY: a port of ours and room for every xstat.
            let n = unsafe { f(dev, x.as_mut_ptr(), x.len() as u32) };
            check(n)?;
            if n as usize != XSTATS.len() {
                return Err(-libc::EPROTO);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip_and_refusals() {
        let r = Request {
            op: Op::Xstats,
            name: "eth_vecring0".into(),
        };
        let msg = r.encode().unwrap();
        assert_eq!(Request::decode(&msg).unwrap(), r);
        let long = Request {
            op: Op::Stats,
            name: "x".repeat(NAME_LEN),
        };
        assert_eq!(long.encode().unwrap_err(), -libc::EINVAL);
        let mut bad = msg;
        bad.param[4] = 9;
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = msg;
        bad.param[0] = 2;
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = msg;
        bad.param[8..8 + NAME_LEN].fill(b'a');
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
    }

    #[test]
    fn reply_round_trip_and_refusals() {
        let v: Vec<u64> = (0..MAX_VALUES as u64).map(|i| i << 40 | i).collect();
        assert_eq!(decode_reply(&encode_reply(0, &v)).unwrap(), v);
        assert_eq!(
            decode_reply(&encode_reply(-libc::ENODEV, &v)).unwrap_err(),
            -libc::ENODEV
        );
        let mut bad = encode_reply(0, &v[..3]);
        bad.param[8] = 4; // count disagrees with the length
        assert_eq!(decode_reply(&bad).unwrap_err(), -libc::EPROTO);
    }

    #[test]
    fn stats_and_info_round_trip() {
        let mut s = ffi::rte_eth_stats {
            ipackets: 1,
            opackets: 2,
            ibytes: 3,
            obytes: 4,
            imissed: 5,
            ierrors: 6,
            oerrors: 7,
            ..Default::default()
        };
        s.q_ipackets[0] = 8;
        s.q_errors[STATS_QUEUES - 1] = 9;
        let mut back = ffi::rte_eth_stats::default();
        values_to_stats(&stats_to_values(&s), &mut back).unwrap();
        assert_eq!(format!("{back:?}"), format!("{s:?}"));

        let mut i = ffi::rte_eth_dev_info {
            max_rx_pktlen: 9216,
            max_mtu: 9198,
            tx_offload_capa: 1 << 16,
            ..Default::default()
        };
        i.rx_desc_lim.nb_max = 7;
        let v = info_to_values(&i);
        assert_eq!(v.len(), INFO_VALUES);
        let mut back = ffi::rte_eth_dev_info::default();
        values_to_info(&v, &mut back).unwrap();
        assert_eq!(info_to_values(&back), v);
        let mut over = v.clone();
        over[4] = 1 << 20; // max_rx_queues is a u16
        assert_eq!(values_to_info(&over, &mut back).unwrap_err(), -libc::EPROTO);
    }
}
