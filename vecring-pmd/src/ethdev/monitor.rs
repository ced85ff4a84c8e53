//! DPDK's power-monitor hook (`eth_dev_ops::get_monitor_addr`): where an
//! lcore that sleeps with `rte_power_monitor` (`UMWAIT`, `MWAITX`; power
//! management's `RTE_POWER_MGMT_TYPE_MONITOR`, l3fwd-power's
//! `--pmd-mgmt=monitor`) watches for an RX queue's next frame, and the
//! callback that tells it, just before it sleeps, whether to.
//!
//! The word is the queue's [`ReadyWord`](vecring_core::ReadyWord): the
//! descriptor of the ring slot the queue reads next while the link is up
//! (the peer writes it when it publishes that frame), the link's session
//! counter while it is down (written when the link comes up). The
//! callback gets the word's value and the three values the driver left in
//! `opaque` (value, mask, polarity); it says "sleep" only while the word
//! says nothing is new. A peer that writes something else there only
//! keeps the lcore awake for a burst, which then judges what it wrote.

use crate::datapath::rx::RxQueue;
use crate::sys::ffi::rte_power_monitor_cond;
use crate::sys::guard::guarded;
use std::ffi::c_void;

/// Bytes `rte_power_monitor` reads at the address.
const WORD_SIZE: u8 = 8;
/// `opaque[VALUE]`: the masked value compared with.
const VALUE: usize = 0;
/// `opaque[MASK]`: the bits that tell.
const MASK: usize = 1;
/// `opaque[IF_EQUAL]`: 1 if equal means "something new", 0 if differing
/// does.
const IF_EQUAL: usize = 2;

/// The monitor's callback: 0 to sleep, -1 not to (DPDK's contract).
///
/// # Safety
/// `opaque` points to the condition's `RTE_POWER_MONITOR_OPAQUE_SZ`
/// (4) values, as EAL passes them.
unsafe extern "C" fn still_empty(value: u64, opaque: *const u64) -> i32 {
    // SAFETY: per the contract, `opaque` holds at least three values.
    let (want, mask, if_equal) =
        unsafe { (*opaque.add(VALUE), *opaque.add(MASK), *opaque.add(IF_EQUAL)) };
    if (value & mask == want) == (if_equal != 0) {
        -1
    } else {
        0
    }
}

/// `eth_dev_ops::get_monitor_addr`: 0 with `pmc` filled, `-EAGAIN` when
/// the lcore must not sleep now (a reopened link's end waits for the
/// queue), `-ENODEV` when the queue has no link end.
///
/// # Safety
/// ethdev calls it with a set-up RX queue of this driver and a valid
/// condition to fill; the application calls it from the lcore that polls
/// the queue, never during its burst.
pub(crate) unsafe extern "C" fn get_monitor_addr(
    rxq: *mut c_void,
    pmc: *mut rte_power_monitor_cond,
) -> i32 {
    guarded("get_monitor_addr", -libc::EIO, || {
        // SAFETY: per this function's contract, `rxq` is the
        // `Box<RxQueue>` of `rx_queue_setup` (or null), used by nobody
        // else meanwhile.
        let Some(q) = (unsafe { rxq.cast::<RxQueue>().as_mut() }) else {
            return -libc::EINVAL;
        };
        let Some(w) = q.ready_word() else {
            return if q.has_link_end() {
                -libc::EAGAIN
            } else {
                -libc::ENODEV
            };
        };
        // SAFETY: ethdev passes a valid condition, ours for the call.
        let pmc = unsafe { &mut *pmc };
        pmc.addr = w.addr.cast_mut().cast();
        pmc.size = WORD_SIZE;
        pmc.fn_ = Some(still_empty);
        pmc.opaque = [0; 4];
        pmc.opaque[VALUE] = w.value;
        pmc.opaque[MASK] = w.mask;
        pmc.opaque[IF_EQUAL] = u64::from(w.ready_if_equal);
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_sleeps_only_on_the_empty_value() {
        // An index that moved on from 7: something new.
        let opaque = [7u64, u64::MAX, 0, 0];
        // SAFETY: four values, as EAL passes them.
        unsafe {
            assert_eq!(still_empty(7, opaque.as_ptr()), 0);
            assert_eq!(still_empty(8, opaque.as_ptr()), -1);
            assert_eq!(still_empty(u64::MAX, opaque.as_ptr()), -1);
        }
        // A stamp of 0x100 in bits 8..16 publishes the next frame.
        let stamp = [0x100u64, 0xff00, 1, 0];
        // SAFETY: as above.
        unsafe {
            assert_eq!(still_empty(0x1_01_ff, stamp.as_ptr()), -1);
            assert_eq!(still_empty(0x2_00_00, stamp.as_ptr()), 0);
            assert_eq!(still_empty(0x0_02_00, stamp.as_ptr()), 0);
        }
    }
}
