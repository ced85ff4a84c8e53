//! `vecring-bench agent`: one end of a link driven over stdin and stdout by the
//! forwarding benchmark's harness ([`super::protocol`]): a generator that
//! sends trials of numbered, time-stamped frames and counts what comes
//! back, a forwarder that swaps MACs and sends each frame back (as
//! `dpdk-testpmd --forward-mode=macswap`), or a sink that counts.
//!
//! One thread does everything, on the first CPU of `--cpu`: it polls the
//! link and, between polls, takes commands a reader thread queues.

use super::frame::{self, Flows, Mac};
use super::protocol::latency_fields;
use super::tally::{Tally, MAX_SEQ};
use clap::{Args, ValueEnum};
use std::io::{BufRead, Write};
use std::sync::mpsc::{self, Receiver as Lines, TryRecvError};
use std::time::{Duration, Instant};
use vecring_cli::{cpus, LinkArgs};
use vecring_core::MAX_FRAME_LEN;
use vecring_core::{LinkRecvError, LinkSendError, PushError, Receiver, Sender};

/// What an agent does with its link.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Mode {
    /// Sends trials and counts the frames that come back.
    Gen,
    /// Swaps MACs and sends every frame back.
    Fwd,
    /// Counts what arrives.
    Sink,
}

/// Options of `vecring-bench agent`.
#[derive(Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub link: LinkArgs,
    /// gen, fwd or sink.
    #[arg(long)]
    pub mode: Mode,
    #[command(flatten)]
    pub gen: GenArgs,
}

/// How a generator makes its frames (kernel pktgen's parameters).
#[derive(Args, Clone)]
pub struct GenArgs {
    /// Frames per burst (1..=256).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_BURST)))]
    pub burst: u16,
    /// pktgen's clone_skb: a frame's headers (its flow) are made anew only
    /// every N frames; the frames between reuse them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub clone: u64,
    /// Source IPv4 address or range MIN-MAX, walked one flow at a time.
    #[arg(long, default_value = "10.0.0.1", value_parser = frame::parse_ip_range)]
    pub src_ip: frame::Range<u32>,
    /// Destination IPv4 address or range.
    #[arg(long, default_value = "10.0.0.2", value_parser = frame::parse_ip_range)]
    pub dst_ip: frame::Range<u32>,
    /// UDP source port or range.
    #[arg(long, default_value = "1024", value_parser = frame::parse_port_range)]
    pub src_port: frame::Range<u32>,
    /// UDP destination port or range.
    #[arg(long, default_value = "1024", value_parser = frame::parse_port_range)]
    pub dst_port: frame::Range<u32>,
    /// Source MAC (frames come back to it).
    #[arg(long, default_value = "02:00:00:00:00:01", value_parser = frame::parse_mac)]
    pub src_mac: Mac,
    /// Destination MAC.
    #[arg(long, default_value = "02:00:00:00:00:02", value_parser = frame::parse_mac)]
    pub dst_mac: Mac,
    /// Receivers check every payload byte, not only the fields.
    #[arg(long)]
    pub verify: bool,
}

impl GenArgs {
    /// These options as a command line (for another agent, Rust or DPDK).
    pub fn to_args(&self) -> Vec<String> {
        let ip = |r: frame::Range<u32>| {
            format!(
                "{}-{}",
                std::net::Ipv4Addr::from(r.min),
                std::net::Ipv4Addr::from(r.max)
            )
        };
        let port = |r: frame::Range<u32>| format!("{}-{}", r.min, r.max);
        let mac = |m: Mac| m.map(|b| format!("{b:02x}")).join(":");
        let mut a = vec![
            format!("--burst={}", self.burst),
            format!("--clone={}", self.clone),
            format!("--src-ip={}", ip(self.src_ip)),
            format!("--dst-ip={}", ip(self.dst_ip)),
            format!("--src-port={}", port(self.src_port)),
            format!("--dst-port={}", port(self.dst_port)),
            format!("--src-mac={}", mac(self.src_mac)),
            format!("--dst-mac={}", mac(self.dst_mac)),
        ];
        if self.verify {
            a.push("--verify".into());
        }
        a
    }

    /// The flows these options describe.
    pub fn flows(&self) -> Flows {
        Flows {
            src_mac: self.src_mac,
            dst_mac: self.dst_mac,
            src_ip: self.src_ip,
            dst_ip: self.dst_ip,
            src_port: self.src_port,
            dst_port: self.dst_port,
        }
    }
}

/// The longest trial, and the highest rate, a generator accepts.
pub const MAX_SECS: f64 = 3600.0;
const MAX_RATE: f64 = 1e9;
/// Frames burst at most.
const MAX_BURST: u16 = 256;
/// Sequence numbers a sink counts.
const SINK_ROOM: u64 = 1 << 28;

/// Frames a receive call takes at most.
const RX_BATCH: usize = 32;
/// The drain after a trial, when frames are missing: until nothing came
/// for this long (a forwarder descheduled for a while still counts)...
const DRAIN_QUIET: Duration = Duration::from_millis(200);
/// ... or this long in all.
const DRAIN_MAX: Duration = Duration::from_secs(2);

/// The agent's state: its link ends, receive buffers and counts.
struct Agent {
    mode: Mode,
    gen: GenArgs,
    flows: Flows,
    tx: Sender,
    rx: Receiver,
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    /// Trial id of the last trial (generators).
    trial: u16,
    /// Frames of trials, or since the last reset (sinks).
    tally: Tally,
    ipackets: u64,
    opackets: u64,
    /// Frames a forwarder could not send back (its ring was full).
    oerrors: u64,
}

/// Runs an agent until `quit` or the end of stdin.
///
/// # Errors
/// A bad option, a link that does not come up, or one that broke.
pub fn run(args: &AgentArgs) -> Result<(), String> {
    cpus::check("--cpu", args.link.cpus())?;
    let link = args.link.open_up()?;
    let (tx, rx) = (
        link.sender().map_err(|e| e.to_string())?,
        link.receiver().map_err(|e| e.to_string())?,
    );
    cpus::pin(cpus::for_queue(args.link.cpus(), 0));
    let lines = read_lines();
    let mut agent = Agent {
        mode: args.mode,
        gen: args.gen.clone(),
        flows: args.gen.flows(),
        tx,
        rx,
        bufs: vec![vec![0u8; MAX_FRAME_LEN]; RX_BATCH],
        lens: vec![0; RX_BATCH],
        trial: 0,
        tally: Tally::new(0),
        ipackets: 0,
        opackets: 0,
        oerrors: 0,
    };
    if agent.mode == Mode::Sink {
        // A sink does not know a trial's size: room for 256 M frames
        // (32 MiB), kept across resets, and no more.
        agent.tally.reserve(SINK_ROOM);
        agent.tally.limit = SINK_ROOM;
    }
    let mac = agent.flows.src_mac.map(|b| format!("{b:02x}")).join(":");
    say(&format!("ready mac={mac} max_frame={MAX_FRAME_LEN}"));
    let mut polls = 0u32;
    loop {
        agent.poll()?;
        polls = polls.wrapping_add(1);
        if polls % 64 != 0 {
            continue;
        }
        match lines.try_recv() {
            Ok(line) => match line.trim() {
                "quit" => {
                    say("ok");
                    return Ok(());
                }
                cmd => say(&agent.command(cmd).unwrap_or_else(|e| format!("err {e}"))),
            },
            Err(TryRecvError::Empty) => {}
            Err(TryRecvError::Disconnected) => return Ok(()),
        }
    }
}

/// Prints one reply line and flushes it.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A harness that is gone ends the agent at its next read of stdin.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// Lines of stdin, read by a thread of their own (the channel closes at
/// the end of stdin).
fn read_lines() -> Lines<String> {
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(l) = line else { break };
            if send.send(l).is_err() {
                break;
            }
        }
    });
    lines
}

impl Agent {
    /// One receive: counts (gen, sink) or sends back (fwd) what came.
    /// Returns the frames received.
    fn poll(&mut self) -> Result<usize, String> {
        let n = match self.rx.recv_batch(&mut self.bufs, &mut self.lens) {
            Ok(n) => n,
            Err(LinkRecvError::NoPeer) => return Err("link went down".into()),
            Err(e) => return Err(e.to_string()),
        };
        if n == 0 {
            return Ok(0);
        }
        self.ipackets += n as u64;
        match self.mode {
            Mode::Fwd => {
                for (buf, &len) in self.bufs.iter_mut().zip(&self.lens).take(n) {
                    frame::swap_macs(&mut buf[..len]);
                }
                let frames = self
                    .bufs
                    .iter()
                    .zip(&self.lens)
                    .take(n)
                    .map(|(b, &l)| &b[..l]);
                let sent = match self.tx.send_batch(frames) {
                    Ok(k) => k,
                    Err(LinkSendError::Push(PushError::Full)) => 0,
                    Err(LinkSendError::NoPeer) => return Err("link went down".into()),
                    Err(e) => return Err(e.to_string()),
                };
                self.opackets += sent as u64;
                // A forwarder drops what its full ring refuses, as
                // testpmd does.
                self.oerrors += (n - sent) as u64;
            }
            Mode::Gen | Mode::Sink => {
                let now = frame::now_ns();
                let ours = self.flows.src_mac;
                let gen = self.mode == Mode::Gen;
                for (buf, &len) in self.bufs.iter().zip(&self.lens).take(n) {
                    self.tally.frame(
                        &buf[..len],
                        now,
                        |f| !gen || f[..6] == ours,
                        self.gen.verify,
                    );
                }
            }
        }
        Ok(n)
    }

    /// Carries out one command; returns the reply.
    fn command(&mut self, line: &str) -> Result<String, String> {
        let mut words = line.split_whitespace();
        let verb = words.next().unwrap_or("");
        let mut kv = std::collections::HashMap::new();
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| format!("'{w}' is not key=value"))?;
            kv.insert(k, v);
        }
        let num = |k: &str, default: Option<f64>| -> Result<f64, String> {
            match kv.get(k) {
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| format!("{k}={v}: not a non-negative number")),
                None => default.ok_or_else(|| format!("{k}= missing")),
            }
        };
        match verb {
            "gen" if self.mode == Mode::Gen => {
                let size = num("size", None)? as usize;
                if !(frame::MIN_SIZE..=MAX_FRAME_LEN).contains(&size) {
                    return Err(format!(
                        "size={size}: frames are {}..={MAX_FRAME_LEN} bytes",
                        frame::MIN_SIZE
                    ));
                }
                let burst = num("burst", Some(f64::from(self.gen.burst)))? as usize;
                if !(1..=usize::from(MAX_BURST)).contains(&burst) {
                    return Err(format!("burst={burst}: 1..={MAX_BURST}"));
                }
                let plan = Plan {
                    size,
                    rate: num("rate", None)?,
                    secs: num("secs", None)?,
                    count: num("count", Some(0.0))? as u64,
                    burst,
                };
                if plan.secs > MAX_SECS {
                    return Err(format!("a trial lasts at most {MAX_SECS} s"));
                }
                if plan.rate > MAX_RATE || (plan.rate > 0.0 && plan.rate < 1.0) {
                    return Err(format!(
                        "rate={}: 0 (unthrottled) or 1..={MAX_RATE} frames/s",
                        plan.rate
                    ));
                }
                if plan.count > MAX_SEQ {
                    return Err(format!("count={}: at most {MAX_SEQ}", plan.count));
                }
                if plan.secs == 0.0 && plan.count == 0 {
                    return Err("a trial needs secs= or count=".into());
                }
                self.trial(&plan)
            }
            "counts" => Ok(format!(
                "ok rx={} unique={} reordered={} dup={} bad={} {}",
                self.tally.rx,
                self.tally.unique,
                self.tally.reordered,
                self.tally.dup,
                self.tally.bad,
                latency_fields(&self.tally.latency)
            )),
            "reset" => {
                let trial = num("trial", Some(0.0))?;
                if trial > f64::from(u16::MAX) {
                    return Err(format!("trial={trial}: a trial id is 1..=65535"));
                }
                self.tally.reset(trial as u16);
                Ok("ok".into())
            }
            "stats" => Ok(format!(
                "ok ipackets={} opackets={} imissed=0 oerrors={}",
                self.ipackets, self.opackets, self.oerrors
            )),
            _ => Err(format!("unknown command: {line}")),
        }
    }

    /// Sends one trial (see [`super::protocol`]) and drains what comes
    /// back; returns the `gen` reply.
    fn trial(&mut self, plan: &Plan) -> Result<String, String> {
        self.trial = self.trial.wrapping_add(1).max(1);
        self.tally.reset(self.trial);
        let by_time = plan.secs > 0.0;
        // Frames the trial offers: `count`, or the rate's share of `secs`,
        // whichever is fewer; 0 (unthrottled, by time only) has no limit.
        let paced = (plan.rate > 0.0 && by_time).then(|| (plan.rate * plan.secs).ceil() as u64);
        let total = match (plan.count, paced) {
            (0, Some(p)) => p,
            (c, Some(p)) => c.min(p),
            (c, None) => c,
        };
        // Room for every sequence number the trial may give out
        // (unthrottled: at up to 100 M frames/s).
        let most = if total > 0 {
            total
        } else {
            (plan.secs * 100e6) as u64
        };
        self.tally.reserve(most);
        let mut frames: Vec<Vec<u8>> = vec![vec![0u8; plan.size]; plan.burst];
        // The flow each buffer's headers are of (a single flow: written
        // once).
        let mut flow_of = vec![u64::MAX; plan.burst];
        let one_flow = self.flows.count() == 1;
        let (mut offered, mut tx) = (0u64, 0u64);
        let window = Duration::from_secs_f64(plan.secs);
        let start = Instant::now();
        // A limited trial ends when all its frames are offered, or, when
        // the generator fell behind, 2 % after its window (a count-only
        // one after MAX_SECS); an unlimited one at the end of its window.
        let late = if by_time {
            window.mul_f64(1.02) + Duration::from_millis(10)
        } else {
            Duration::from_secs_f64(MAX_SECS)
        };
        self.tally.limit = 0;
        loop {
            let elapsed = start.elapsed();
            let over = if total > 0 {
                offered >= total || elapsed >= late
            } else {
                elapsed >= window
            };
            if over {
                break;
            }
            let due = if plan.rate > 0.0 {
                ((elapsed.as_secs_f64() * plan.rate) as u64).min(total)
            } else if total > 0 {
                (offered + plan.burst as u64).min(total)
            } else {
                offered + plan.burst as u64
            };
            if due <= offered {
                self.poll()?;
                continue;
            }
            let n = (due - offered).min(plan.burst as u64) as usize;
            let stamp = frame::now_ns();
            for (i, (f, of)) in frames.iter_mut().zip(&mut flow_of).take(n).enumerate() {
                let seq = offered + i as u64;
                let flow = if one_flow { 0 } else { seq / self.gen.clone };
                if *of != flow {
                    self.flows.write_headers(f, flow);
                    *of = flow;
                }
                frame::write_fields(f, self.trial, seq, stamp, self.gen.verify);
            }
            let k = match self.tx.send_batch(frames.iter().take(n).map(Vec::as_slice)) {
                Ok(k) => k,
                Err(LinkSendError::Push(PushError::Full)) => 0,
                Err(LinkSendError::NoPeer) => return Err("link went down".into()),
                Err(e) => return Err(e.to_string()),
            };
            tx += k as u64;
            // Paced: what the full ring refused is lost, as on a NIC.
            // Unthrottled: the refused frames are offered again.
            offered += if plan.rate > 0.0 { n as u64 } else { k as u64 };
            // Sequence numbers not given out yet are bad when they come.
            self.tally.limit = offered;
            self.poll()?;
        }
        let tx_secs = start.elapsed().as_secs_f64();
        self.tx.flush_counters();
        self.opackets += tx;
        // A paced generator that fell behind (offered under 99.9 % of
        // what was due, or took 0.1 % longer) measured itself, not the
        // link.
        let kept_rate = plan.rate <= 0.0
            || (offered as f64 >= 0.999 * total as f64
                && (!by_time || tx_secs <= plan.secs * 1.001 + 1e-3));
        // The drain: frames still on their way back.
        let drain = Instant::now();
        let mut quiet = Instant::now();
        // Done at once when every frame the ring took is back (a
        // forwarder); otherwise after a quiet spell (a sink, or losses).
        while self.tally.unique < tx && quiet.elapsed() < DRAIN_QUIET && drain.elapsed() < DRAIN_MAX
        {
            if self.poll()? > 0 {
                quiet = Instant::now();
            }
        }
        self.rx.flush_counters();
        let t = &self.tally;
        Ok(format!(
            "ok trial={} offered={offered} tx={tx} rx={} lost={} reordered={} dup={} bad={} tx_secs={tx_secs:.6} kept_rate={} {}",
            self.trial,
            t.rx,
            offered.saturating_sub(t.unique),
            t.reordered,
            t.dup,
            t.bad,
            u8::from(kept_rate),
            latency_fields(&t.latency)
        ))
    }
}

/// One trial's parameters.
struct Plan {
    size: usize,
    /// Frames per second; 0 as fast as the link takes them.
    rate: f64,
    /// Seconds (0: until `count`).
    secs: f64,
    /// Frames (0: until `secs`).
    count: u64,
    burst: usize,
}
