//! `vecring tap`: a kernel interface for one end of a link. It creates a
//! TAP interface in the network namespace it runs in, with one queue per
//! queue pair of the link (`IFF_MULTI_QUEUE`), and moves frames both ways
//! between them until SIGINT or SIGTERM, so that the programs of a
//! container (or of the host) use the link through sockets: `ping`,
//! `iperf3`, anything.
//!
//! - [`options`]: the options and their checks, before anything exists;
//! - [`dev`]: the TAP interface and its settings (ioctls);
//! - [`bridge`]: one thread per queue moving frames, asleep when idle;
//! - [`vnet`]: the virtio-net header of `--offload`, and [`tso`]: TCP
//!   super-frames cut into pieces that fit the link's frames;
//! - [`epoll`]: the sets the threads sleep on.
//!
//! The main thread follows the link: the interface's carrier is on while
//! the peer is attached and off while it is away, and the MTU is lowered
//! if a peer's frames are shorter than it needs. Its counters are the
//! link's (`vecring stats`) and the interface's (`ip -s link`); what the
//! bridge drops is counted and said at the end.

mod bridge;
mod dev;
mod epoll;
mod options;
mod tso;
mod vnet;

pub use options::TapArgs;

use crate::LOG_TARGET;
use bridge::{Queue, Shared, Tally};
use dev::mac_text;
use epoll::{Epoll, Event};
use options::{link_prefix, mtu_for};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use vecring_core::Link;
use vnet::ETH_HLEN;

/// Bytes a VLAN tag adds to a frame: a frame from the link may carry one
/// on top of the MTU.
const VLAN_HLEN: usize = 4;

/// A signalfd for SIGINT and SIGTERM, which are blocked in this thread and
/// every thread started after (the link's and the bridge's): they end the
/// run through this descriptor instead of killing the process.
fn stop_signals() -> io::Result<OwnedFd> {
    // SAFETY: sigset operations on a local set, then the calling thread's
    // mask and a fresh signalfd; results checked.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Which signal ended the run, read from the signalfd.
fn signal_name(fd: &OwnedFd) -> Option<&'static str> {
    // SAFETY: signalfd_siginfo is plain data; all zeroes is valid.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: reads one record into a live struct of its size.
    let n = unsafe {
        libc::read(
            fd.as_raw_fd(),
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            size,
        )
    };
    (n == size as isize).then_some(if info.ssi_signo == libc::SIGINT as u32 {
        "SIGINT"
    } else {
        "SIGTERM"
    })
}

/// Runs `vecring tap` until SIGINT or SIGTERM.
///
/// # Errors
/// A bad option, an interface that cannot be made, a link that cannot
/// open, with what to do.
pub fn run(args: &TapArgs) -> Result<(), String> {
    let plan = args.plan()?;
    let signals = stop_signals().map_err(|e| format!("signalfd: {e}"))?;
    // The interface is made (and its control socket, through which it is
    // configured from then on) in its namespace; both descriptors keep it.
    let make = || -> Result<(dev::Tap, dev::IfConfig), String> {
        let tap = dev::Tap::create(&plan.ifname, plan.queues, plan.offload)?;
        let ifc = dev::IfConfig::new(&plan.ifname)?;
        ifc.set_mac(plan.mac)?;
        ifc.set_mtu(plan.mtu)?;
        if plan.offload {
            tap.set_offload(vnet::TUN_OFFLOADS)?;
        }
        ifc.set_up()?;
        Ok((tap, ifc))
    };
    let (mut tap, ifc) = match &plan.if_netns {
        Some(ns) => ns
            .run(make)
            .map_err(|e| format!("--if-netns {}: cannot enter it: {e}", ns.path().display()))??,
        None => make()?,
    };
    let prefix = link_prefix(plan.offload);
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        stop_event: Event::new().map_err(|e| format!("eventfd: {e}"))?,
        max_from_link: AtomicUsize::new(max_from_link(plan.mtu, prefix)),
        vnet_hdr: plan.offload,
        poll: plan.poll,
    });
    // The link's control thread says every change here; the main thread
    // follows it with the carrier.
    let changed = Arc::new(Event::new().map_err(|e| format!("eventfd: {e}"))?);
    let link = {
        let changed = Arc::clone(&changed);
        plan.link
            .builder()?
            .on_state_change(move |_| changed.signal())
            .open()
            .map_err(|e| e.to_string())?
    };
    let mut endpoints = Vec::new();
    for q in 0..plan.queues {
        let tx = link.sender_on(q).map_err(|e| e.to_string())?;
        let rx = link.receiver_on(q).map_err(|e| e.to_string())?;
        endpoints.push((tx, rx));
    }
    log::info!(
        target: LOG_TARGET,
        "tap {}: {} queue{}, MTU {}, MAC {}{}; bridging link {}/{} ({}) at {}",
        plan.ifname,
        plan.queues,
        if plan.queues == 1 { "" } else { "s" },
        plan.mtu,
        mac_text(plan.mac),
        if plan.offload { ", offloads (virtio-net header on the link)" } else { "" },
        plan.link.domain,
        plan.link.link,
        plan.link.role,
        link.socket_path().map_or_else(String::new, |p| p.display().to_string())
    );
    let tallies: Vec<Arc<Tally>> = (0..plan.queues).map(|_| Arc::default()).collect();
    let mut threads = Vec::new();
    for ((q, (tx, rx)), (tap_fd, tally)) in (0u16..)
        .zip(endpoints)
        .zip(tap.take_queues().into_iter().zip(&tallies))
    {
        let queue = Queue {
            q,
            tap: tap_fd,
            tx,
            rx,
            tally: Arc::clone(tally),
            shared: Arc::clone(&shared),
        };
        let cpu = crate::cpus::for_queue(&plan.link.cpu, q);
        let (changed, shared) = (Arc::clone(&changed), Arc::clone(&shared));
        let t = std::thread::Builder::new()
            .name(format!("tap-q{q}"))
            .spawn(move || {
                crate::cpus::pin(cpu);
                let r = queue.run();
                if r.is_err() {
                    // Wake the main thread to end the run.
                    shared.stop.store(true, Ordering::Relaxed);
                    changed.signal();
                }
                r
            })
            .map_err(|e| format!("spawning queue {q}'s thread: {e}"))?;
        threads.push(t);
    }
    let why = follow(&link, &tap, &ifc, &plan, &shared, &changed, &signals);
    shared.stop.store(true, Ordering::Relaxed);
    shared.stop_event.signal();
    let mut failure = why.as_ref().err().cloned();
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                failure.get_or_insert(e);
            }
            Err(_) => {
                failure.get_or_insert("a queue's thread panicked".into());
            }
        }
    }
    summary(&plan.ifname, &tallies, why.as_ref().map_or("failed", |w| w));
    drop(link);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The longest plain frame accepted from the link: the MTU, an Ethernet
/// header and a VLAN tag, after the link's prefix.
fn max_from_link(mtu: u32, prefix: usize) -> usize {
    prefix + ETH_HLEN + VLAN_HLEN + mtu as usize
}

/// Follows the link until a signal (or a queue's thread fails): carrier
/// on while up, off while down. Returns the signal's name.
fn follow(
    link: &Link,
    tap: &dev::Tap,
    ifc: &dev::IfConfig,
    plan: &options::Plan,
    shared: &Shared,
    changed: &Event,
    signals: &OwnedFd,
) -> Result<&'static str, String> {
    const SIGNAL: u64 = 0;
    const CHANGED: u64 = 1;
    let ep = Epoll::new().map_err(|e| format!("epoll: {e}"))?;
    ep.add(signals.as_raw_fd(), SIGNAL, true)
        .and_then(|()| ep.add(changed.raw(), CHANGED, true))
        .map_err(|e| format!("epoll: {e}"))?;
    let prefix = link_prefix(plan.offload);
    let mut carrier = false;
    let mut tokens = Vec::new();
    loop {
        changed.drain();
        if shared.stop.load(Ordering::Relaxed) {
            return Ok("a queue failed");
        }
        let up = link.state().is_up();
        if up && !carrier {
            // A peer whose frames are shorter than the MTU needs: lower it.
            if let Some(region) = link.region() {
                let fits = mtu_for(region.geometry().max_frame_len() as usize, plan.offload);
                let mtu = ifc.mtu().unwrap_or(plan.mtu);
                if fits < mtu {
                    log::warn!(
                        target: LOG_TARGET,
                        "tap {}: the peer's frames carry at most {} bytes: MTU {mtu} lowered to {fits}",
                        plan.ifname,
                        region.geometry().max_frame_len()
                    );
                    ifc.set_mtu(fits.max(options::MIN_MTU))?;
                }
            }
            let mtu = ifc.mtu().unwrap_or(plan.mtu);
            shared
                .max_from_link
                .store(max_from_link(mtu, prefix), Ordering::Relaxed);
            tap.set_carrier(true)?;
            carrier = true;
            log::info!(target: LOG_TARGET, "tap {}: carrier on (peer attached)", plan.ifname);
        } else if !up && carrier {
            tap.set_carrier(false)?;
            carrier = false;
            log::info!(target: LOG_TARGET, "tap {}: carrier off (peer away)", plan.ifname);
        }
        ep.wait(None, &mut tokens)
            .map_err(|e| format!("epoll_wait: {e}"))?;
        if tokens.contains(&SIGNAL) {
            if let Some(name) = signal_name(signals) {
                return Ok(name);
            }
        }
    }
}

/// Prints what the bridge moved and dropped, per queue when several, on
/// stderr.
fn summary(ifname: &str, tallies: &[Arc<Tally>], why: &str) {
    let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    let line = |t: &[&Tally]| {
        let sum = |f: fn(&Tally) -> &std::sync::atomic::AtomicU64| -> u64 {
            t.iter().map(|t| load(f(t))).sum()
        };
        format!(
            "to the link {} frames {} bytes; to the interface {} frames {} bytes; dropped: link down {}, too long for the link {}, bad length {}, bad header {}, gso without checksum {}, gso too many segments {}, refused by the interface {}",
            sum(|t| &t.to_link_frames),
            sum(|t| &t.to_link_bytes),
            sum(|t| &t.to_tap_frames),
            sum(|t| &t.to_tap_bytes),
            sum(|t| &t.drop_link_down),
            sum(|t| &t.drop_too_long_for_link),
            sum(|t| &t.drop_bad_length),
            sum(|t| &t.drop_bad_header),
            sum(|t| &t.drop_gso_no_csum),
            sum(|t| &t.drop_gso_segments),
            sum(|t| &t.drop_tap_refused),
        )
    };
    if tallies.len() > 1 {
        for (q, t) in tallies.iter().enumerate() {
            eprintln!("tap {ifname}: queue {q}: {}", line(&[&**t]));
        }
    }
    let all: Vec<&Tally> = tallies.iter().map(|t| &**t).collect();
    eprintln!("tap {ifname}: summary ({why}): {}", line(&all));
}
