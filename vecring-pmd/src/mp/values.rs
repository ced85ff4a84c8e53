//! The values a reply carries for [`Op::Stats`](super::msg::Op::Stats) and
//! [`Op::Info`](super::msg::Op::Info): the port's [`EthStats`] and the driver's fields
//! of `rte_eth_dev_info`, as flat lists of `u64`, and back.

use crate::sys::eth_stats::EthStats;
use crate::sys::ffi;

/// Queues whose counters a [`super::msg::Op::Stats`] answer carries: every
/// entry of `q_ipackets` and friends (as many as a port may have queues).
pub const STATS_QUEUES: usize = ffi::QUEUE_STAT_CNTRS;
/// Values of a [`super::msg::Op::Stats`] answer: 7 port counters, 5 per queue
/// (more than one message holds: answers are paged, see [`super::msg`]).
pub const STATS_VALUES: usize = 7 + 5 * STATS_QUEUES;

/// The counters of [`EthStats`] a reply carries, in order: `ipackets,
/// opackets, ibytes, obytes, imissed, ierrors, oerrors`, then `q_ipackets,
/// q_opackets, q_ibytes, q_obytes, q_errors` of the first [`STATS_QUEUES`]
/// queues. (`rx_nombuf` is in the port's shared data: ethdev fills it in
/// every process.)
pub fn stats_to_values(s: &EthStats) -> Vec<u64> {
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
pub fn values_to_stats(v: &[u64], s: &mut EthStats) -> Result<(), i32> {
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
        /// Values of an [`Op::Info`](super::msg::Op::Info) answer.
        pub const INFO_VALUES: usize = [$(stringify!($($field).+)),*].len();

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_info_round_trip() {
        let mut s = EthStats {
            ipackets: 1,
            opackets: 2,
            ibytes: 3,
            obytes: 4,
            imissed: 5,
            ierrors: 6,
            oerrors: 7,
            ..Default::default()
        };
        for q in 0..STATS_QUEUES {
            let k = q as u64;
            s.q_ipackets[q] = 100 + k;
            s.q_opackets[q] = 200 + k;
            s.q_ibytes[q] = 300 + k;
            s.q_obytes[q] = 400 + k;
            s.q_errors[q] = 500 + k;
        }
        let v = stats_to_values(&s);
        assert_eq!(v.len(), STATS_VALUES);
        assert_eq!(STATS_QUEUES, 16, "every queue a port may have");
        let mut back = EthStats::default();
        values_to_stats(&v, &mut back).unwrap();
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
        assert_eq!(
            values_to_stats(&v[1..], &mut back).unwrap_err(),
            -libc::EPROTO
        );

        let mut i = ffi::rte_eth_dev_info {
            max_rx_pktlen: 9216,
            max_mtu: 9198,
            max_rx_queues: 16,
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
