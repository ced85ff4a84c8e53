//! The messages of the primary/secondary protocol ([`super`]) and their
//! paging: one `rte_mp_msg` carries 256 bytes of parameters, at most
//! [`MAX_VALUES`] values, fewer than a port of 16 queues reports (87
//! statistics, up to 160 xstats). So a request names the index of the
//! first value it wants, a reply carries the values from there (at most
//! [`MAX_VALUES`]) and the total, and the secondary asks again from where
//! the reply ended ([`Pages`]) until it has them all.
//!
//! Parameters (native endianness: both processes are on one host, and use
//! the same driver build):
//!
//! ```text
//! request: version u32 | op u32 | first u32 | reserved u32 (0)
//!          | port name, NUL-terminated, 64 bytes
//! reply:   version u32 | status i32 (0 or -errno) | count u32 | total u32
//!          | count x u64 values: values first .. first + count of total
//! ```
//!
//! Each page is computed afresh: while traffic flows, values of different
//! pages are read at slightly different moments (as two `rte_eth_stats_get`
//! calls would be).

use crate::sys::ffi::rte_mp_msg;
use std::ffi::{c_char, c_int, CStr};

/// The IPC action's name (the protocol version is part of it: a driver
/// speaking another version is not asked at all).
pub const ACTION: &str = "vecring_port_v2";
/// The message format version carried in every message (2: paged
/// replies).
pub const VERSION: u32 = 2;
/// `RTE_MP_MAX_PARAM_LEN`: bytes of parameters in one message.
const PARAM_LEN: usize = 256;
/// `RTE_ETH_NAME_MAX_LEN`: room for a port name, with its NUL.
pub const NAME_LEN: usize = 64;
/// Bytes before the name of a request.
const REQUEST_HEADER: usize = 16;
/// Bytes of a request's parameters.
const REQUEST_LEN: usize = REQUEST_HEADER + NAME_LEN;
/// Bytes before the values of a reply.
const REPLY_HEADER: usize = 16;
/// Values one reply carries.
pub const MAX_VALUES: usize = (PARAM_LEN - REPLY_HEADER) / 8;
/// The most values an answer may have in all: far more than any port
/// reports, and a bound on the pages a secondary asks for.
pub const MAX_TOTAL: usize = 4096;

const _: () = assert!(REQUEST_LEN <= PARAM_LEN, "a request fits in one message");

/// What a secondary asks about a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    /// `rte_eth_stats` (port and per-queue counters; see
    /// [`super::values::stats_to_values`]).
    Stats = 1,
    /// The driver's xstats values, in the order of
    /// [`crate::ethdev::xstats::list`].
    Xstats = 2,
    /// The driver's `rte_eth_dev_info` fields (see
    /// [`super::values::info_to_values`]).
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

/// A request: the values of `op` about port `name`, from index `first`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What is asked.
    pub op: Op,
    /// The index of the first value wanted.
    pub first: u32,
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

fn put_u32(p: &mut [u8], at: usize, v: u32) {
    p[at..at + 4].copy_from_slice(&v.to_ne_bytes());
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
        put_u32(&mut msg.param, 0, VERSION);
        put_u32(&mut msg.param, 4, self.op as u32);
        put_u32(&mut msg.param, 8, self.first);
        let name = &mut msg.param[REQUEST_HEADER..REQUEST_HEADER + self.name.len()];
        name.copy_from_slice(self.name.as_bytes());
        msg.len_param = REQUEST_LEN as c_int;
        Ok(msg)
    }

    /// The request in a message, checked field by field.
    ///
    /// # Errors
    /// `-EPROTO` for another version or length, an unknown op, a reserved
    /// field not 0 or a name without its NUL.
    pub fn decode(msg: &rte_mp_msg) -> Result<Request, i32> {
        if msg.len_param != REQUEST_LEN as c_int
            || u32_at(&msg.param, 0) != VERSION
            || u32_at(&msg.param, 12) != 0
        {
            return Err(-libc::EPROTO);
        }
        let op = Op::from_u32(u32_at(&msg.param, 4)).ok_or(-libc::EPROTO)?;
        let name = CStr::from_bytes_until_nul(&msg.param[REQUEST_HEADER..REQUEST_LEN])
            .map_err(|_| -libc::EPROTO)?
            .to_str()
            .map_err(|_| -libc::EPROTO)?
            .to_owned();
        Ok(Request {
            op,
            first: u32_at(&msg.param, 8),
            name,
        })
    }
}

/// The page of `all` a request from `first` gets: at most [`MAX_VALUES`]
/// values.
///
/// # Errors
/// `-ERANGE` for `first` past the end (the end itself is a page of none),
/// `-E2BIG` for more than [`MAX_TOTAL`] values.
pub fn page(all: &[u64], first: u32) -> Result<&[u64], i32> {
    if all.len() > MAX_TOTAL {
        return Err(-libc::E2BIG);
    }
    let first = usize::try_from(first).map_err(|_| -libc::ERANGE)?;
    let rest = all.get(first..).ok_or(-libc::ERANGE)?;
    Ok(&rest[..rest.len().min(MAX_VALUES)])
}

/// The reply message: `status` (0 or `-errno`) and, on success, one page
/// of values ([`page`]) out of `total`.
pub fn encode_reply(status: i32, values: &[u64], total: usize) -> rte_mp_msg {
    let (values, total) = if status == 0 {
        (values, total)
    } else {
        (&[][..], 0)
    };
    debug_assert!(values.len() <= MAX_VALUES && total <= MAX_TOTAL);
    let values = &values[..values.len().min(MAX_VALUES)];
    let mut msg = rte_mp_msg::default();
    set_msg_name(&mut msg, ACTION);
    put_u32(&mut msg.param, 0, VERSION);
    msg.param[4..8].copy_from_slice(&status.to_ne_bytes());
    put_u32(&mut msg.param, 8, values.len() as u32);
    put_u32(&mut msg.param, 12, total.min(MAX_TOTAL) as u32);
    for (i, v) in values.iter().enumerate() {
        let at = REPLY_HEADER + 8 * i;
        msg.param[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    }
    msg.len_param = (REPLY_HEADER + 8 * values.len()) as c_int;
    msg
}

/// One page of a reply: its values and the answer's total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The values of this page.
    pub values: Vec<u64>,
    /// Values in the whole answer.
    pub total: usize,
}

/// The page a reply carries, or its error status.
///
/// # Errors
/// The primary's `-errno`, or `-EPROTO` for a malformed reply.
pub fn decode_reply(msg: &rte_mp_msg) -> Result<Reply, i32> {
    let len = usize::try_from(msg.len_param).map_err(|_| -libc::EPROTO)?;
    if !(REPLY_HEADER..=PARAM_LEN).contains(&len) || u32_at(&msg.param, 0) != VERSION {
        return Err(-libc::EPROTO);
    }
    let status = u32_at(&msg.param, 4) as i32;
    if status != 0 {
        return Err(if status < 0 { status } else { -libc::EPROTO });
    }
    let count = u32_at(&msg.param, 8) as usize;
    let total = u32_at(&msg.param, 12) as usize;
    if count > MAX_VALUES || len != REPLY_HEADER + 8 * count || total > MAX_TOTAL {
        return Err(-libc::EPROTO);
    }
    let values = (0..count)
        .map(|i| {
            let at = REPLY_HEADER + 8 * i;
            u64::from_ne_bytes(msg.param[at..at + 8].try_into().expect("8 bytes"))
        })
        .collect();
    Ok(Reply { values, total })
}

/// A secondary's answer being put together from pages.
#[derive(Debug, Default)]
pub struct Pages {
    values: Vec<u64>,
    total: Option<usize>,
}

impl Pages {
    /// Where the next request starts.
    pub fn next_first(&self) -> u32 {
        self.values.len() as u32
    }

    /// Adds the page that answered a request from [`Pages::next_first`];
    /// returns whether the answer is complete.
    ///
    /// # Errors
    /// `-EPROTO` if the page changes the total, overruns it, or is empty
    /// before the end (no progress: the next request would be the same).
    pub fn add(&mut self, page: Reply) -> Result<bool, i32> {
        let total = *self.total.get_or_insert(page.total);
        if page.total != total
            || self.values.len() + page.values.len() > total
            || (page.values.is_empty() && self.values.len() < total)
        {
            return Err(-libc::EPROTO);
        }
        self.values.extend(page.values);
        Ok(self.values.len() == total)
    }

    /// The whole answer.
    pub fn into_values(self) -> Vec<u64> {
        self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip_and_refusals() {
        let r = Request {
            op: Op::Xstats,
            first: 60,
            name: "eth_vecring0".into(),
        };
        let msg = r.encode().unwrap();
        assert_eq!(Request::decode(&msg).unwrap(), r);
        let long = Request {
            op: Op::Stats,
            first: 0,
            name: "x".repeat(NAME_LEN),
        };
        assert_eq!(long.encode().unwrap_err(), -libc::EINVAL);
        let mut bad = msg;
        bad.param[4] = 9;
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = msg;
        bad.param[0] = 1; // the unpaged version
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = msg;
        bad.param[12] = 1;
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = msg;
        bad.len_param = 72; // version 1's length
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = msg;
        bad.param[REQUEST_HEADER..REQUEST_LEN].fill(b'a');
        assert_eq!(Request::decode(&bad).unwrap_err(), -libc::EPROTO);
    }

    #[test]
    fn reply_round_trip_and_refusals() {
        let v: Vec<u64> = (0..MAX_VALUES as u64).map(|i| i << 40 | i).collect();
        let r = decode_reply(&encode_reply(0, &v, 100)).unwrap();
        assert_eq!(
            r,
            Reply {
                values: v.clone(),
                total: 100
            }
        );
        assert_eq!(
            decode_reply(&encode_reply(-libc::ENODEV, &v, 100)).unwrap_err(),
            -libc::ENODEV
        );
        let mut bad = encode_reply(0, &v[..3], 3);
        bad.param[8] = 4; // count disagrees with the length
        assert_eq!(decode_reply(&bad).unwrap_err(), -libc::EPROTO);
        let mut bad = encode_reply(0, &v[..3], 3);
        put_u32(&mut bad.param, 12, MAX_TOTAL as u32 + 1);
        assert_eq!(decode_reply(&bad).unwrap_err(), -libc::EPROTO);
    }

    /// 160 values (the xstats of 16 queues each way) cross in 6 pages, in
    /// order; a page from the end is empty, past it refused.
    #[test]
    fn pages_carry_every_value_in_order() {
        let all: Vec<u64> = (1000..1160).collect();
        let mut pages = Pages::default();
        let mut asked = 0;
        loop {
            asked += 1;
            let p = page(&all, pages.next_first()).unwrap();
            assert!(p.len() <= MAX_VALUES);
            let reply = decode_reply(&encode_reply(0, p, all.len())).unwrap();
            if pages.add(reply).unwrap() {
                break;
            }
        }
        assert_eq!(asked, all.len().div_ceil(MAX_VALUES));
        assert_eq!(pages.into_values(), all);
        assert_eq!(page(&all, 160).unwrap(), &[] as &[u64]);
        assert_eq!(page(&all, 161).unwrap_err(), -libc::ERANGE);
        assert_eq!(page(&vec![0; MAX_TOTAL + 1], 0).unwrap_err(), -libc::E2BIG);
        // An empty answer is complete at once.
        let mut none = Pages::default();
        assert!(none
            .add(Reply {
                values: vec![],
                total: 0
            })
            .unwrap());
    }

    /// A page that changes the total, overruns it or makes no progress is
    /// refused: the secondary's loop always ends.
    #[test]
    fn pages_refuse_inconsistent_replies() {
        let reply = |n: u64, total| Reply {
            values: (0..n).collect(),
            total,
        };
        let mut p = Pages::default();
        assert!(!p.add(reply(30, 40)).unwrap());
        assert_eq!(p.add(reply(10, 41)).unwrap_err(), -libc::EPROTO);
        let mut p = Pages::default();
        assert!(!p.add(reply(30, 40)).unwrap());
        assert_eq!(p.add(reply(11, 40)).unwrap_err(), -libc::EPROTO);
        let mut p = Pages::default();
        assert!(!p.add(reply(30, 40)).unwrap());
        assert_eq!(p.add(reply(0, 40)).unwrap_err(), -libc::EPROTO);
    }
}
