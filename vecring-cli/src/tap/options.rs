//! `vecring tap`'s options, and their check before anything is created:
//! the interface's name, MAC and MTU, and the link options it shares with
//! the other modes.

use super::dev;
use super::vnet::{ETH_HLEN, VNET_HDR_LEN};
use crate::LinkArgs;
use clap::Args;
use vecring_core::internal::netns::NetNs;
use vecring_core::Role;
use vecring_core::MAX_FRAME_LEN;

/// The smallest MTU accepted: IPv4's minimum.
pub const MIN_MTU: u32 = 68;

/// The link's `--up-timeout` default, which `tap` does not use (it waits
/// for its peer as long as it runs).
const UP_TIMEOUT_DEFAULT: f64 = 30.0;

/// Options of `vecring tap`. Of the link's options, `--up-timeout` and
/// `--hold-back` mean nothing to a tap: hidden from its help, and refused
/// when given.
#[derive(Args)]
#[command(
    mut_arg("up_timeout", |a| a.hide(true)),
    mut_arg("hold_back", |a| a.hide(true))
)]
pub struct TapArgs {
    #[command(flatten)]
    pub link: LinkArgs,
    /// Name of the TAP interface to create (default: the link's name).
    #[arg(long, value_name = "NAME")]
    pub ifname: Option<String>,
    /// The interface's Ethernet address, as aa:bb:cc:dd:ee:ff (default:
    /// derived from domain, link and role, as the DPDK driver's port
    /// gets it, so the same across restarts).
    #[arg(long, value_parser = parse_mac)]
    pub mac: Option<[u8; 6]>,
    /// The interface's MTU (default: the largest the link's frames carry,
    /// 9202, or 9192 with --offload).
    #[arg(long)]
    pub mtu: Option<u32>,
    /// Carry the kernel's virtio-net header (IFF_VNET_HDR) in every frame
    /// on the link: checksums are left to the receiving kernel, and TCP
    /// super-frames (up to 64 KiB) cross in pieces of whole segments that
    /// fit the link's frames. Both ends must give it: frames are no longer
    /// plain Ethernet (a DPDK peer cannot read them).
    #[arg(long)]
    pub offload: bool,
    /// Microseconds each queue's thread keeps looking for frames after
    /// the last it moved before it sleeps: a reply or the next frame of a
    /// burst is then taken without a wakeup's delay. Busy while traffic
    /// flows, asleep when idle; 0 sleeps at once.
    #[arg(long, value_name = "USECS", default_value_t = DEFAULT_POLL_US)]
    pub poll_us: u64,
    /// Create the interface in this network namespace (a namespace file:
    /// /proc/PID/ns/net, /run/netns/NAME) rather than this process's: how
    /// a container gets a kernel interface whose frames this process, on
    /// the host, bridges to the link. Needs CAP_SYS_ADMIN over it; only a
    /// short-lived thread enters it.
    #[arg(long, value_name = "PATH")]
    pub if_netns: Option<std::path::PathBuf>,
}

/// `--poll-us`'s default: longer than a request's round trip through
/// the other end's bridge and kernel (its wakeup alone takes about 40 us
/// on a VM), so that the reply finds this thread still looking. In an
/// A/B of ping through two taps, 200 us gave a median round trip of 106.5
/// us against 134 us with 50 (veth's: 44.5), at 9 % more of the taps'
/// CPU while traffic flows and none while idle.
pub const DEFAULT_POLL_US: u64 = 200;

/// `--poll-us`'s largest value: a tenth of a second.
const MAX_POLL_US: u64 = 100_000;

/// What the options resolved to, checked.
pub struct Plan {
    /// The link options (a slave's queue count made explicit).
    pub link: LinkArgs,
    pub ifname: String,
    pub mac: [u8; 6],
    pub mtu: u32,
    pub queues: u16,
    pub offload: bool,
    pub poll: std::time::Duration,
    /// The namespace the interface is made in, if not this process's.
    pub if_netns: Option<NetNs>,
}

/// Parses `aa:bb:cc:dd:ee:ff` (hex digits in either case).
///
/// # Errors
/// Not six bytes, or not hex.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut mac = [0u8; 6];
    if parts.len() != 6 {
        return Err(format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)"));
    }
    for (b, p) in mac.iter_mut().zip(&parts) {
        if p.len() != 2 {
            return Err(format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)"));
        }
        *b = u8::from_str_radix(p, 16)
            .map_err(|_| format!("'{s}' is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
    }
    if mac[0] & 1 != 0 {
        return Err(format!(
            "{s} is a multicast address; an interface needs a unicast one"
        ));
    }
    if mac == [0; 6] {
        return Err("00:00:00:00:00:00 is not an interface address".into());
    }
    Ok(mac)
}

/// Bytes a frame on the link carries before its Ethernet header.
pub fn link_prefix(offload: bool) -> usize {
    if offload {
        VNET_HDR_LEN
    } else {
        0
    }
}

/// The largest MTU whose frames fit the link's of `max_frame` bytes.
pub fn mtu_for(max_frame: usize, offload: bool) -> u32 {
    max_frame.saturating_sub(ETH_HLEN + link_prefix(offload)) as u32
}

impl TapArgs {
    /// Checks every option and resolves the defaults, before anything is
    /// created.
    ///
    /// # Errors
    /// The first bad option, named.
    pub fn plan(&self) -> Result<Plan, String> {
        let mut link = self.link.clone();
        if link.up_timeout != UP_TIMEOUT_DEFAULT {
            return Err(
                "--up-timeout is not a tap option: tap waits for its peer as long as it runs (carrier off meanwhile)".into(),
            );
        }
        if link.hold_back {
            return Err("--hold-back is not a tap option".into());
        }
        // The TAP's queues are made before the peer is known: a slave
        // requires its count of the master, 1 unless --queues says (a
        // master offers 1 by default too).
        link.queues.get_or_insert(1);
        link.check()?;
        let queues = link.queue_count()?.unwrap_or(1);
        let ifname = self.ifname.clone().unwrap_or_else(|| link.link.clone());
        dev::check_name(&ifname).map_err(|e| match &self.ifname {
            Some(_) => format!("--ifname {e}"),
            None => format!("the link's name is no interface name ({e}); give --ifname"),
        })?;
        let max = mtu_for(MAX_FRAME_LEN, self.offload);
        let mtu = self.mtu.unwrap_or(max);
        if !(MIN_MTU..=max).contains(&mtu) {
            return Err(format!(
                "--mtu {mtu}: must be {MIN_MTU} to {max} (the link's frames carry at most {MAX_FRAME_LEN} bytes{})",
                if self.offload {
                    ", virtio-net header and Ethernet header included"
                } else {
                    ", Ethernet header included"
                }
            ));
        }
        let mac = self.mac.unwrap_or_else(|| {
            vecring_core::internal::mac::default_mac(
                &link.domain,
                &link.link,
                link.role == Role::Master,
            )
        });
        let if_netns = match &self.if_netns {
            Some(p) => {
                Some(NetNs::open(p).map_err(|e| format!("--if-netns {}: {e}", p.display()))?)
            }
            None => None,
        };
        let exists = match &if_netns {
            Some(ns) => ns
                .run(|| dev::index_of(&ifname))
                .map_err(|e| format!("--if-netns {}: cannot enter it: {e}", ns.path().display()))?,
            None => dev::index_of(&ifname),
        };
        if exists.is_some() {
            return Err(format!(
                "interface {ifname} exists already in {}; choose another --ifname",
                match &self.if_netns {
                    Some(p) => format!("network namespace {}", p.display()),
                    None => "this network namespace".into(),
                }
            ));
        }
        if self.poll_us > MAX_POLL_US {
            return Err(format!(
                "--poll-us {}: at most {MAX_POLL_US} (a tenth of a second)",
                self.poll_us
            ));
        }
        Ok(Plan {
            link,
            ifname,
            mac,
            mtu,
            queues,
            offload: self.offload,
            poll: std::time::Duration::from_micros(self.poll_us),
            if_netns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_parse_and_print() {
        assert_eq!(
            parse_mac("02:0A:bc:00:ff:01"),
            Ok([2, 0x0a, 0xbc, 0, 0xff, 1])
        );
        assert_eq!(
            dev::mac_text([2, 0x0a, 0xbc, 0, 0xff, 1]),
            "02:0a:bc:00:ff:01"
        );
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "02:0:00:00:00:01",
            "zz:00:00:00:00:01",
            "01:00:5e:00:00:01",
            "00:00:00:00:00:00",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_mtu_leaves_room_for_the_headers() {
        assert_eq!(mtu_for(9216, false), 9202);
        assert_eq!(mtu_for(9216, true), 9202 - VNET_HDR_LEN as u32);
    }
}
