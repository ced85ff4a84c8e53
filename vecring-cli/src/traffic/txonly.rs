//! `vecring txonly`: sends Ethernet frames of one size (`frame.rs`) on
//! every queue for `--seconds` of link up, generation by generation: when
//! the peer leaves, it reports that generation and waits for the next
//! peer (up to `--up-timeout`), until the time is sent or Ctrl-C. At the
//! end it waits for the peer to read the rings and reports, per queue and
//! in total, what was sent, taken by the peer and left in the ring.

use super::frame::{self, Addresses};
use super::{interrupt, on_each_queue, send_for, Burst, Failure};
use crate::open::Waited;
use crate::{queues_of, LinkArgs};
use clap::Args;
use std::time::{Duration, Instant};
use vecring_core::{Link, LinkState, Sender};

/// Options of `vecring txonly`.
#[derive(Args)]
pub struct TxonlyArgs {
    #[command(flatten)]
    pub link: LinkArgs,
    /// Frame size in bytes.
    #[arg(long, default_value_t = 64, help = frame_size_help())]
    pub size: usize,
    /// How long to send, counting only time the link is up.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Longest wait, after sending, for the peer to read the ring.
    #[arg(long, default_value_t = 5.0)]
    pub drain: f64,
    /// Source MAC of the frames (default: the address the DPDK driver
    /// gives this end of the link).
    #[arg(long, value_parser = frame::parse_mac, value_name = "MAC")]
    pub src_mac: Option<[u8; 6]>,
    /// Destination MAC of the frames (default: the address the DPDK driver
    /// gives the other end).
    #[arg(long, value_parser = frame::parse_mac, value_name = "MAC")]
    pub dst_mac: Option<[u8; 6]>,
}

fn frame_size_help() -> String {
    format!(
        "Frame size in bytes, {}..={} (an Ethernet header and a filler payload)",
        frame::HEADER_LEN,
        vecring_core::MAX_FRAME_LEN
    )
}

/// What was sent: in one generation, one queue, or in total.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    frames: u64,
    /// Times the ring was full when a batch was offered.
    full: u64,
    /// Frames the peer had not read when this side stopped waiting.
    unread: u64,
    /// Frames the peer had not read when it left (gone with the link's
    /// memory of that generation).
    lost: u64,
    /// Seconds spent sending while the link was up.
    secs: f64,
}

impl Sent {
    fn add(&mut self, o: &Sent) {
        self.frames += o.frames;
        self.full += o.full;
        self.unread += o.unread;
        self.lost += o.lost;
        self.secs += o.secs;
    }

    fn taken(&self) -> u64 {
        self.frames.saturating_sub(self.unread + self.lost)
    }

    fn pps(&self) -> f64 {
        self.frames as f64 / self.secs.max(1e-9)
    }
}

/// Slices of sending between looks at Ctrl-C.
const SLICE: Duration = Duration::from_millis(100);

/// Sends `frame` on `tx` until `stop`, Ctrl-C, another queue's failure or
/// the link going down.
fn send_queue(
    tx: &mut Sender,
    frame: &[u8],
    stop: Instant,
    failure: &Failure,
) -> Result<Burst, String> {
    let mut total = Burst::default();
    loop {
        let slice = (Instant::now() + SLICE).min(stop);
        let b = send_for(tx, frame, slice, failure.flag())?;
        total.frames += b.frames;
        total.full += b.full;
        if b.down {
            total.down = true;
            break;
        }
        if Instant::now() >= stop || interrupt::interrupted() || failure.is_set() {
            break;
        }
    }
    Ok(total)
}

/// One generation: sends for at most `budget`, then (link still up) waits
/// up to `drain` for the peer to read. Returns each queue's figures and
/// whether the peer left.
fn generation(
    link: &Link,
    id: u64,
    frame: &[u8],
    budget: Duration,
    drain: f64,
    cpus: &[usize],
) -> Result<(Vec<Sent>, bool), String> {
    let queues = queues_of(link)?;
    let mut txs = (0..queues)
        .map(|q| link.sender_on(q))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let lost_before = link.counters().tx_lost_on_link_down;
    let start = Instant::now();
    let stop = start + budget;
    let failure = Failure::default();
    let bursts = on_each_queue(&mut txs, cpus, &failure, |_, tx| {
        send_queue(tx, frame, stop, &failure)
    })?;
    let secs = start.elapsed().as_secs_f64();
    let mut left = bursts.iter().any(|b| b.down);
    if !left {
        let deadline = Instant::now() + Duration::from_secs_f64(drain);
        let same = || link.state() == LinkState::Up { generation: id };
        while txs.iter_mut().any(|tx| tx.unread() > 0) && Instant::now() < deadline && same() {
            std::thread::sleep(Duration::from_millis(5));
        }
        left = !same();
    }
    let mut per_queue: Vec<Sent> = bursts
        .iter()
        .zip(&mut txs)
        .map(|(b, tx)| Sent {
            frames: b.frames,
            full: b.full,
            unread: if left { 0 } else { tx.unread() },
            lost: 0,
            secs,
        })
        .collect();
    if left {
        // The link's count of frames the departed peer never read, given
        // to the first queue (the link counts them as a whole).
        let lost = link
            .counters()
            .tx_lost_on_link_down
            .saturating_sub(lost_before);
        if let Some(q) = per_queue.first_mut() {
            q.lost = lost;
        }
    }
    Ok((per_queue, left))
}

/// Runs `vecring txonly`.
///
/// # Errors
/// A bad option, no peer within `--up-timeout` (after the summary, when a
/// generation had run), or a queue whose sending failed.
pub fn txonly(a: &TxonlyArgs) -> Result<(), String> {
    let max = vecring_core::MAX_FRAME_LEN;
    if !(frame::HEADER_LEN..=max).contains(&a.size) {
        return Err(format!(
            "--size {}: a frame is {} (an Ethernet header) to {max} bytes",
            a.size,
            frame::HEADER_LEN
        ));
    }
    if !(a.seconds.is_finite() && a.seconds >= 0.0 && a.drain.is_finite() && a.drain >= 0.0) {
        return Err("--seconds and --drain must be non-negative numbers".into());
    }
    let args = &a.link;
    // Before the link opens: once its socket exists, Ctrl-C ends a wait
    // with a summary.
    interrupt::install();
    let link = args.open()?;
    let defaults = Addresses::of_link(&args.domain, &args.link, args.role);
    let addrs = Addresses {
        src: a.src_mac.unwrap_or(defaults.src),
        dst: a.dst_mac.unwrap_or(defaults.dst),
    };
    let frame = frame::ethernet(a.size, &addrs);
    log::debug!(
        target: crate::LOG_TARGET,
        "frames of {} bytes from {} to {}, ethertype {:#06x}",
        a.size,
        frame::format_mac(&addrs.src),
        frame::format_mac(&addrs.dst),
        frame::ETHERTYPE
    );
    let mut left = Duration::from_secs_f64(a.seconds);
    let mut total = Sent::default();
    let mut per_queue: Vec<Sent> = Vec::new();
    let mut generations = 0u32;
    let mut outcome = Ok(());
    loop {
        let stop = || interrupt::interrupted().then_some("interrupted");
        match args.wait_for_peer(&link, &stop) {
            Ok(Waited::Up) => {}
            Ok(Waited::Stopped(_)) => break,
            Err(e) if generations == 0 => return Err(e),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
        let id = match link.state() {
            LinkState::Up { generation } => generation,
            LinkState::Down => continue,
        };
        let (queues, peer_left) = generation(&link, id, &frame, left, a.drain, &args.cpu)?;
        generations += 1;
        let mut g = Sent::default();
        for (q, s) in queues.iter().enumerate() {
            g.add(s);
            match per_queue.get_mut(q) {
                Some(t) => t.add(s),
                None => per_queue.push(*s),
            }
        }
        g.secs = queues.first().map_or(0.0, |s| s.secs);
        total.frames += g.frames;
        total.full += g.full;
        total.unread += g.unread;
        total.lost += g.lost;
        total.secs += g.secs;
        left = left.saturating_sub(Duration::from_secs_f64(g.secs));
        if peer_left || generations > 1 {
            println!(
                "txonly: generation {id}: sent {} frames in {:.1} s ({:.0} pps, {} ring-full retries); taken by the peer {}; {}",
                g.frames,
                g.secs,
                g.pps(),
                g.full,
                g.taken(),
                if peer_left {
                    format!("the peer left; {} unread frames went with it", g.lost)
                } else {
                    format!("still in the ring {}", g.unread)
                }
            );
        }
        if interrupt::interrupted() || !peer_left || left.is_zero() {
            break;
        }
        log::info!(target: crate::LOG_TARGET, "the peer left: waiting for the next one");
    }
    report(&per_queue, &total, a.size, a.drain);
    outcome
}

/// The summary: per queue (when several), then in total; times are the
/// link's up time.
fn report(per_queue: &[Sent], total: &Sent, size: usize, drain: f64) {
    if per_queue.len() > 1 {
        for (q, s) in per_queue.iter().enumerate() {
            println!(
                "txonly: queue {q}: sent {} frames ({:.0} pps, {} ring-full retries); taken by the peer {}; still in the ring {}",
                s.frames,
                s.frames as f64 / total.secs.max(1e-9),
                s.full,
                s.taken(),
                s.unread
            );
        }
    }
    println!(
        "txonly: sent {} frames of {size} bytes in {:.1} s ({:.0} pps, {} ring-full retries); taken by the peer {}; still in the ring {}",
        total.frames,
        total.secs,
        total.pps(),
        total.full,
        total.taken(),
        total.unread
    );
    if total.unread > 0 {
        println!(
            "txonly: {} frames were not read by the peer within --drain {drain} s; they are lost when this side exits",
            total.unread
        );
    }
}
