//! What differs between the DPDK lines the driver builds against (22.11,
//! 23.11, 24.11, 25.11), in one place. `build.rs` reads the version of the
//! DPDK that `pkg-config` finds and turns it into the `cfg`s used here:
//!
//! | cfg | from | what changed |
//! |---|---|---|
//! | `dpdk_mbuf_unions` | 24.07 | `rte_mbuf`'s `RTE_MARKER` fields became unions around anonymous structs, so bindgen nests `data_off`, `nb_segs`, `pkt_len`, `data_len` one level deeper |
//! | `dpdk_queue_stats` | 25.11 | the per-queue arrays left `rte_eth_stats` for `struct eth_queue_stats`, a third argument of `stats_get` that ethdev may pass as NULL |
//!
//! Everything else the driver touches has one form on every line: the link
//! word is built by `glue.c` (C sees through `rte_eth_link`'s anonymous
//! union on every line), the registration macros compile unchanged, and
//! `RTE_ETH_DEV_TO_VDEV` (gone in 26.07) is not used. The wire format does
//! not depend on any of this: the ring and the handshake are vecring-core's.

use super::eth_stats::EthStats;
use super::ffi::{self, rte_eth_stats, rte_mbuf};

/// The field of an mbuf at its place on this DPDK line, as a place
/// expression (`$m` is a `*const`/`*mut rte_mbuf`; the caller is in an
/// `unsafe` context and guarantees `$m` is valid).
macro_rules! mbuf_field {
    ($m:expr, data_off) => { mbuf_field!(@rearm $m, data_off) };
    ($m:expr, nb_segs) => { mbuf_field!(@rearm $m, nb_segs) };
    ($m:expr, pkt_len) => { mbuf_field!(@rx $m, pkt_len) };
    ($m:expr, data_len) => { mbuf_field!(@rx $m, data_len) };
    (@rearm $m:expr, $f:ident) => {{
        #[cfg(dpdk_mbuf_unions)]
        let p = ::core::ptr::addr_of_mut!((*$m).__bindgen_anon_1.__bindgen_anon_1.$f);
        #[cfg(not(dpdk_mbuf_unions))]
        let p = ::core::ptr::addr_of_mut!((*$m).$f);
        p
    }};
    (@rx $m:expr, $f:ident) => {{
        #[cfg(dpdk_mbuf_unions)]
        let p = ::core::ptr::addr_of_mut!((*$m).__bindgen_anon_2.__bindgen_anon_1.$f);
        #[cfg(not(dpdk_mbuf_unions))]
        let p = ::core::ptr::addr_of_mut!((*$m).$f);
        p
    }};
}

/// Accessors of the mbuf fields whose place differs between DPDK lines.
/// Each is one load or store, inlined into the burst functions.
pub mod mbuf {
    use super::rte_mbuf;

    /// `m->data_off`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf.
    #[inline(always)]
    pub unsafe fn data_off(m: *const rte_mbuf) -> u16 {
        let m = m.cast_mut();
        // SAFETY: the caller guarantees `m` is valid; the place is a plain
        // field of it (a union member on newer lines, every member of
        // which is plain data).
        unsafe { *mbuf_field!(m, data_off) }
    }

    /// `m->data_len`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf.
    #[inline(always)]
    pub unsafe fn data_len(m: *const rte_mbuf) -> u16 {
        let m = m.cast_mut();
        // SAFETY: as in `data_off`.
        unsafe { *mbuf_field!(m, data_len) }
    }

    /// `m->pkt_len`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf.
    #[inline(always)]
    pub unsafe fn pkt_len(m: *const rte_mbuf) -> u32 {
        let m = m.cast_mut();
        // SAFETY: as in `data_off`.
        unsafe { *mbuf_field!(m, pkt_len) }
    }

    /// `m->nb_segs`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf.
    #[inline(always)]
    pub unsafe fn nb_segs(m: *const rte_mbuf) -> u16 {
        let m = m.cast_mut();
        // SAFETY: as in `data_off`.
        unsafe { *mbuf_field!(m, nb_segs) }
    }

    /// `m->data_len = len`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf the caller owns.
    #[inline(always)]
    pub unsafe fn set_data_len(m: *mut rte_mbuf, len: u16) {
        // SAFETY: the caller owns the valid mbuf; a plain field store.
        unsafe { *mbuf_field!(m, data_len) = len }
    }

    /// `m->pkt_len = len`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf the caller owns.
    #[inline(always)]
    pub unsafe fn set_pkt_len(m: *mut rte_mbuf, len: u32) {
        // SAFETY: as in `set_data_len`.
        unsafe { *mbuf_field!(m, pkt_len) = len }
    }

    /// `m->nb_segs = n`.
    ///
    /// # Safety
    /// `m` must be a valid mbuf the caller owns.
    #[inline(always)]
    pub unsafe fn set_nb_segs(m: *mut rte_mbuf, n: u16) {
        // SAFETY: as in `set_data_len`.
        unsafe { *mbuf_field!(m, nb_segs) = n }
    }
}

/// Where this line's `stats_get` puts per-queue counters: `rte_eth_stats`
/// itself before 25.11, `struct eth_queue_stats` from 25.11.
#[cfg(dpdk_queue_stats)]
pub type QueueStats = ffi::eth_queue_stats;
/// Where this line's `stats_get` puts per-queue counters: `rte_eth_stats`
/// itself before 25.11, `struct eth_queue_stats` from 25.11.
#[cfg(not(dpdk_queue_stats))]
pub type QueueStats = rte_eth_stats;

/// Writes `s` the way this line's ethdev reads it: port totals into `out`,
/// per-queue counters into `queues` when ethdev passed somewhere to put
/// them (before 25.11 that is `out` itself).
pub fn write_stats(s: &EthStats, out: &mut rte_eth_stats, queues: Option<&mut QueueStats>) {
    out.ipackets = s.ipackets;
    out.opackets = s.opackets;
    out.ibytes = s.ibytes;
    out.obytes = s.obytes;
    out.imissed = s.imissed;
    out.ierrors = s.ierrors;
    out.oerrors = s.oerrors;
    let write = |q: &mut QueueStats| {
        q.q_ipackets = s.q_ipackets;
        q.q_opackets = s.q_opackets;
        q.q_ibytes = s.q_ibytes;
        q.q_obytes = s.q_obytes;
        q.q_errors = s.q_errors;
    };
    #[cfg(not(dpdk_queue_stats))]
    {
        let _ = queues;
        write(out);
    }
    #[cfg(dpdk_queue_stats)]
    if let Some(q) = queues {
        write(q);
    }
}

/// Defines `$name` (with visibility `$vis`) as this line's
/// `eth_dev_ops::stats_get` around
/// `$get: unsafe fn(*mut rte_eth_dev) -> Result<EthStats, i32>`, which
/// makes the counters; the wrapper writes them where ethdev reads them.
macro_rules! stats_get_op {
    ($vis:vis $name:ident, $get:path) => {
        /// `eth_dev_ops::stats_get`, in this DPDK line's form
        /// ([`crate::sys::compat`]).
        /// # Safety
        /// ethdev calls it with a valid port of this driver and a zeroed
        /// stats struct (and, from 25.11, a queue stats struct or NULL),
        /// none referenced elsewhere during the call.
        $vis unsafe extern "C" fn $name(
            dev: *mut $crate::sys::ffi::rte_eth_dev,
            out: *mut $crate::sys::ffi::rte_eth_stats,
            #[cfg(dpdk_queue_stats)] queues: *mut $crate::sys::ffi::eth_queue_stats,
        ) -> i32 {
            // SAFETY: ethdev passes a valid port of ours.
            match unsafe { $get(dev) } {
                Ok(s) => {
                    // SAFETY: ethdev passes a valid stats struct (and a
                    // valid or NULL queue struct) only this call uses.
                    #[cfg(dpdk_queue_stats)]
                    let queues = unsafe { queues.as_mut() };
                    #[cfg(not(dpdk_queue_stats))]
                    let queues = None;
                    // SAFETY: as above.
                    $crate::sys::compat::write_stats(&s, unsafe { &mut *out }, queues);
                    0
                }
                Err(e) => e,
            }
        }
    };
}
pub(crate) use stats_get_op;

/// The 64-bit `rte_eth_link` of a link that is up or down, full duplex,
/// autonegotiated, with no line rate (`RTE_ETH_SPEED_NUM_UNKNOWN` when up).
pub fn link_word(up: bool) -> u64 {
    let speed = if up { ffi::SPEED_NUM_UNKNOWN } else { 0 };
    // SAFETY: a pure function of its arguments (glue.c).
    unsafe { ffi::vecring_link_word(speed, i32::from(up)) }
}

/// Whether the 64-bit `rte_eth_link` `word` says the link is up.
pub fn link_word_up(word: u64) -> bool {
    // SAFETY: a pure function of its argument (glue.c).
    unsafe { ffi::vecring_link_word_up(word) != 0 }
}
