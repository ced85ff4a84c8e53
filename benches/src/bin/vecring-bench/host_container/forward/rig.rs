//! One measurement set-up of the forwarding benchmark: the host-side peer
//! and the container-side peer on one kind of port, for one direction,
//! and their trials.
//!
//! | port | host side | container side |
//! |---|---|---|
//! | `link` | `vecring-bench agent` (master) | `vecring-bench agent` (slave) |
//! | `vecring`, `memif` | `vecring-dpdk-agent` on `eth_vecring` / `net_memif` | `dpdk-testpmd --forward-mode=macswap` (or `io`), or `vecring-dpdk-agent` for one-way runs |
//!
//! Direction `both`: the host generates, the container swaps MACs and
//! sends every frame back, the host counts what returns (round-trip
//! latency). `to-container`: the host generates, the container counts
//! (one-way latency, both sides reading CLOCK_MONOTONIC). `from-container`:
//! the container generates, the host counts.

use super::container::{Container, Isolation, MAPPED_ROOT};
use super::peer::Peer;
use crate::agent::command::GenArgs;
use crate::agent::histogram::Histogram;
use crate::agent::protocol::{Fields, GenResult, PortStats, SinkCounts};
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The kind of port both sides use.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug, Hash)]
pub enum Port {
    /// A vecring link between two `vecring-bench agent` processes (Rust).
    Link,
    /// DPDK's eth_vecring (this project's driver) between DPDK programs.
    Vecring,
    /// DPDK's net_memif between the same DPDK programs.
    Memif,
}

impl Port {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Port::Link => "link",
            Port::Vecring => "eth_vecring",
            Port::Memif => "net_memif",
        }
    }

    /// Whether both sides are DPDK programs.
    pub fn dpdk(self) -> bool {
        self != Port::Link
    }
}

/// How the container's testpmd sends each frame back.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug, Hash)]
pub enum FwdMode {
    /// Source and destination MACs swapped.
    Macswap,
    /// As received (the generator addresses its frames to itself).
    Io,
}

impl FwdMode {
    /// testpmd's name for it.
    pub fn name(self) -> &'static str {
        match self {
            FwdMode::Macswap => "macswap",
            FwdMode::Io => "io",
        }
    }
}

/// Which way the frames go.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug, Hash)]
pub enum Direction {
    /// Host -> container -> host, the container forwarding (bidirectional).
    Both,
    /// Host -> container.
    ToContainer,
    /// Container -> host.
    FromContainer,
}

impl Direction {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Both => "both",
            Direction::ToContainer => "to-ctr",
            Direction::FromContainer => "from-ctr",
        }
    }
}

/// What the rigs of one benchmark share.
pub struct Context {
    /// Parent of the link's domain directory (the host's side).
    pub run_dir: PathBuf,
    /// The container's scratch directory (configurations, the harness).
    pub scratch: PathBuf,
    /// The copy of `vecring-bench` the agents run.
    pub tool: PathBuf,
    pub dpdk_agent: PathBuf,
    pub pmd: PathBuf,
    pub testpmd: String,
    /// testpmd's forwarding mode.
    pub fwd_mode: FwdMode,
    /// The containers for Rust and for DPDK far sides.
    pub link_isolation: Isolation,
    pub dpdk_isolation: Isolation,
    /// The far side's Docker image (Isolation::Docker).
    pub image: String,
    pub host_cpu: usize,
    pub far_cpu: usize,
    pub gen: GenArgs,
    /// Slots per ring of vecring links (None: the default geometry).
    pub slots: Option<u32>,
    /// memif's ring size, log2 (None: memif's default).
    pub memif_rsize: Option<u8>,
    pub hugepages: &'static str,
    /// Rigs started so far (each gets its own names).
    pub started: u32,
}

/// One trial's figures, whichever side generated and received.
#[derive(Clone, Debug, Default)]
pub struct Trial {
    /// Frames the generator offered (given sequence numbers) and sent.
    pub offered: u64,
    pub tx: u64,
    /// Frames the generator got back (direction both).
    pub gen_rx: u64,
    /// Frames the container side received and sent.
    pub far_rx: u64,
    pub far_tx: u64,
    /// Offered frames that never reached the final receiver.
    pub lost: u64,
    pub reordered: u64,
    pub dup: u64,
    pub bad: u64,
    /// Seconds the generator sent for.
    pub secs: f64,
    pub kept_rate: bool,
    pub latency: Histogram,
}

impl Trial {
    /// The fraction of offered frames lost; infinite when the generator
    /// could not keep the rate (the trial measured the generator).
    pub fn loss(&self) -> f64 {
        if !self.kept_rate || self.offered == 0 {
            f64::INFINITY
        } else {
            self.lost as f64 / self.offered as f64
        }
    }
}

/// The two peers of one port and direction.
pub struct Rig {
    host: Peer,
    far: Peer,
    direction: Direction,
    /// The far side is testpmd (its counts come from `show port stats`).
    testpmd: bool,
    /// The id the generator gives its next trial (known after its first):
    /// a sink told it ignores late frames of the trial before.
    next_trial: Option<u16>,
    /// The far side's container, removed (Docker) once the peers ended.
    _container: Container,
}

/// How long a peer has to come up (EAL, hugepages, the container).
const UP: Duration = Duration::from_secs(90);

impl Rig {
    /// Starts the peers of `port` for `direction` and frames up to `size`
    /// bytes, and waits until both are ready.
    ///
    /// # Errors
    /// A peer that could not start or did not come up.
    pub fn start(
        cx: &mut Context,
        port: Port,
        direction: Direction,
        size: usize,
    ) -> Result<Self, String> {
        cx.started += 1;
        let id = format!("{}{}", std::process::id(), cx.started);
        let (host_mode, far_mode) = match direction {
            Direction::Both => ("gen", "fwd"),
            Direction::ToContainer => ("gen", "sink"),
            Direction::FromContainer => ("sink", "gen"),
        };
        let domain = cx.run_dir.join("bench");
        std::fs::create_dir_all(&domain).map_err(|e| format!("{}: {e}", domain.display()))?;
        let isolation = if port.dpdk() {
            cx.dpdk_isolation
        } else {
            cx.link_isolation
        };
        let container = Container::new(
            isolation,
            &format!("vecring-fwd-{id}"),
            &cx.scratch,
            &domain,
            &cx.image,
        )?;
        let docker = isolation == Isolation::Docker;
        let testpmd = port.dpdk() && far_mode == "fwd";
        let (host_cmd, far_cmd) = if port.dpdk() {
            let (host_vdev, far_vdev) = match port {
                Port::Vecring => (
                    format!(
                        "eth_vecring0,domain=bench,link=f{id},master=true,run_dir={},hugepages={}{}",
                        cx.run_dir.display(),
                        cx.hugepages,
                        cx.slots.map_or(String::new(), |n| format!(",slots={n}"))
                    ),
                    format!(
                        "eth_vecring0,domain=bench,link=f{id},run_dir={}",
                        cx.run_dir.display()
                    ),
                ),
                _ => {
                    // A socket on the file system: memif's default
                    // abstract socket lives in the host's network
                    // namespace, which the container does not share.
                    let sock = domain.join(format!("memif-{id}.sock"));
                    let rsize = cx.memif_rsize.map_or(String::new(), |r| format!(",rsize={r}"));
                    (
                        format!(
                            "net_memif0,role=server,socket={},socket-abstract=no{rsize}",
                            sock.display()
                        ),
                        format!(
                            "net_memif0,role=client,socket={},socket-abstract=no{rsize}",
                            sock.display()
                        ),
                    )
                }
            };
            let eal = |cpu: usize, side: &str, vdev: &str, docker: bool| -> Vec<String> {
                let mut a = vec![
                    format!("--lcores=(0,1)@{cpu}"),
                    "--no-pci".into(),
                    "--log-level=lib.eal:warning".into(),
                ];
                if docker {
                    // No hugepages in the container: EAL's memory from
                    // ordinary pages (the link's is the host master's),
                    // no files of EAL's; the image's driver directory
                    // holds eth_vecring, which EAL loads without -d.
                    a.extend(["--no-huge", "-m", "1024", "--no-shconf"].map(String::from));
                } else {
                    a.push(format!("--file-prefix=vrfwd{id}{side}"));
                    // The hugepage files go as soon as they are mapped:
                    // nothing is left behind by a peer that is killed.
                    a.push("--huge-unlink".into());
                }
                if port == Port::Vecring && !docker {
                    a.push("-d".into());
                    a.push(cx.pmd.display().to_string());
                }
                a.push(format!("--vdev={vdev}"));
                a.push("--".into());
                a
            };
            let mut host = Command::new(&cx.dpdk_agent);
            host.args(eal(cx.host_cpu, "h", &host_vdev, false))
                .args(["--mode", host_mode])
                .args(cx.gen.to_args());
            let mut far = if testpmd {
                // testpmd's stdout is a pipe here: line-buffered, so that
                // its replies come when it prints them.
                let mut c = container.command(Path::new("stdbuf"));
                c.args(["-oL", "-eL", &container.inside(&cx.testpmd)]);
                c
            } else {
                container.command(&cx.dpdk_agent)
            };
            far.args(eal(cx.far_cpu, "c", &far_vdev, docker));
            if testpmd {
                far.args([
                    "-i",
                    &format!("--forward-mode={}", cx.fwd_mode.name()),
                    "--auto-start",
                    "--txd=1024",
                    "--rxd=1024",
                ]);
                if size > 1514 {
                    far.arg(format!("--max-pkt-len={size}"));
                }
                if size > 2048 {
                    far.args(["--mbuf-size=10240", "--total-num-mbufs=32768"]);
                } else if docker {
                    // Within --no-huge's -m (testpmd's default pool is
                    // sized for 32 ports).
                    far.arg("--total-num-mbufs=16384");
                }
                if docker {
                    // Without IPC_LOCK, locking fails (testpmd says so and
                    // goes on).
                    far.arg("--no-mlockall");
                }
            } else {
                far.args(["--mode", far_mode]).args(cx.gen.to_args());
            }
            (host, far)
        } else {
            let common = |role: &str, cpu: usize| -> Vec<String> {
                vec![
                    "agent".into(),
                    format!("--role={role}"),
                    "--domain=bench".into(),
                    format!("--link=f{id}"),
                    format!("--run-dir={}", cx.run_dir.display()),
                    format!("--cpu={cpu}"),
                    "--up-timeout=60".into(),
                    "-q".into(),
                ]
            };
            let mut host = Command::new(&cx.tool);
            host.args(common("master", cx.host_cpu))
                .arg(format!("--hugepages={}", cx.hugepages))
                .arg(format!("--mode={host_mode}"))
                .args(cx.gen.to_args());
            if let Some(n) = cx.slots {
                host.arg(format!("--slots={n}"));
            }
            if isolation == Isolation::Unprivileged {
                host.arg(format!("--owner={MAPPED_ROOT}:{MAPPED_ROOT}"))
                    .arg(format!("--allow-uid={MAPPED_ROOT}"));
            }
            let mut far = container.command(&cx.tool);
            far.args(common("slave", cx.far_cpu))
                .arg(format!("--mode={far_mode}"))
                .args(cx.gen.to_args());
            (host, far)
        };
        let mut host = Peer::spawn(&format!("host {host_mode} ({})", port.name()), host_cmd)?;
        // The host side listens first; the container's side attaches.
        std::thread::sleep(Duration::from_millis(300));
        let mut far = match Peer::spawn(&format!("container {far_mode} ({})", port.name()), far_cmd)
        {
            Ok(f) => f,
            Err(e) => {
                host.stop(Duration::from_secs(1));
                return Err(e);
            }
        };
        let deadline = Instant::now() + UP;
        let up = host
            .expect(deadline, |l| l.starts_with("ready"))
            .and_then(|h| {
                if testpmd {
                    far.expect(deadline, |l| l.contains("packet forwarding - ports"))
                        .map(|_| (h, None))
                } else {
                    far.expect(deadline, |l| l.starts_with("ready"))
                        .map(|f| (h, Some(f)))
                }
            });
        // The largest frame each agent's port carries (`ready ...
        // max_frame=N`; memif's end at its buffer size).
        let fits = up.and_then(|lines| {
            let (host_ready, far_ready) = lines;
            for (peer, line) in [(&host, Some(host_ready)), (&far, far_ready)] {
                let Some(line) = line else { continue };
                let max = Fields::parse(line.replacen("ready", "ok", 1).as_str())
                    .and_then(|f| f.num::<usize>("max_frame"))
                    .map_err(|e| peer.fail(&e))?;
                if size > max {
                    return Err(format!(
                        "{}: its port carries frames of at most {max} bytes",
                        peer.name
                    ));
                }
            }
            Ok(())
        });
        if let Err(e) = fits {
            far.stop(Duration::from_secs(2));
            host.stop(Duration::from_secs(2));
            return Err(e);
        }
        Ok(Self {
            host,
            far,
            direction,
            testpmd,
            next_trial: None,
            _container: container,
        })
    }

    /// Ends both peers.
    pub fn stop(self) {
        let grace = Duration::from_secs(5);
        if self.testpmd {
            let mut far = self.far;
            let _ = far.send("stop");
            far.stop(grace);
        } else {
            self.far.stop(grace);
        }
        self.host.stop(grace);
    }

    /// The container side's port totals.
    fn far_stats(&mut self) -> Result<PortStats, String> {
        if !self.testpmd {
            return PortStats::parse(&self.far.ask("stats", Duration::from_secs(10))?);
        }
        self.far.send("show port stats 0")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let number = |line: &str, key: &str| -> Option<u64> {
            let rest = &line[line.find(key)? + key.len()..];
            rest.split_whitespace().next()?.parse().ok()
        };
        let rx = self.far.expect(deadline, |l| l.contains("RX-packets:"))?;
        let tx = self.far.expect(deadline, |l| l.contains("TX-packets:"))?;
        match (number(&rx, "RX-packets:"), number(&tx, "TX-packets:")) {
            (Some(ipackets), Some(opackets)) => Ok(PortStats { ipackets, opackets }),
            _ => Err(self.far.fail("unreadable port stats")),
        }
    }

    /// One trial: frames of `size` bytes at `rate` frames/s (0: as fast as
    /// the port takes them) for `secs`.
    ///
    /// # Errors
    /// A peer that failed or did not answer.
    pub fn trial(&mut self, size: usize, rate: f64, secs: f64) -> Result<Trial, String> {
        // The agents take whole frames per second; a positive rate under
        // one is one (0 would mean unthrottled).
        let rate = if rate > 0.0 { rate.max(1.0) } else { 0.0 };
        let command = format!("gen size={size} rate={rate:.0} secs={secs}");
        let timeout = Duration::from_secs_f64(secs + 20.0);
        match self.direction {
            Direction::Both => {
                let before = self.far_stats()?;
                let g = GenResult::parse(&self.host.ask(&command, timeout)?)?;
                let after = self.far_stats()?;
                Ok(Trial {
                    offered: g.offered,
                    tx: g.tx,
                    gen_rx: g.rx,
                    far_rx: after.ipackets.saturating_sub(before.ipackets),
                    far_tx: after.opackets.saturating_sub(before.opackets),
                    lost: g.lost,
                    reordered: g.reordered,
                    dup: g.dup,
                    bad: g.bad,
                    secs: g.tx_secs,
                    kept_rate: g.kept_rate,
                    latency: g.latency,
                })
            }
            Direction::ToContainer | Direction::FromContainer => {
                let to = self.direction == Direction::ToContainer;
                let (gen, sink) = if to {
                    (&mut self.host, &mut self.far)
                } else {
                    (&mut self.far, &mut self.host)
                };
                let reset = match self.next_trial {
                    Some(t) => format!("reset trial={t}"),
                    None => "reset".to_string(),
                };
                sink.ask(&reset, Duration::from_secs(10))?;
                let g = GenResult::parse(&gen.ask(&command, timeout)?)?;
                self.next_trial = Some(g.trial.wrapping_add(1).max(1));
                let c = settled(sink)?;
                Ok(Trial {
                    offered: g.offered,
                    tx: g.tx,
                    gen_rx: 0,
                    far_rx: if to { c.rx } else { 0 },
                    far_tx: if to { 0 } else { g.tx },
                    lost: g.offered.saturating_sub(c.unique),
                    reordered: c.reordered,
                    dup: c.dup,
                    bad: c.bad,
                    secs: g.tx_secs,
                    kept_rate: g.kept_rate,
                    latency: c.latency,
                })
            }
        }
    }
}

/// A sink's counts once they stopped moving (20 ms apart), at most 2 s
/// after the generator finished.
fn settled(sink: &mut Peer) -> Result<SinkCounts, String> {
    let give_up = Instant::now() + Duration::from_secs(2);
    let mut last = SinkCounts::parse(&sink.ask("counts", Duration::from_secs(10))?)?;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = SinkCounts::parse(&sink.ask("counts", Duration::from_secs(10))?)?;
        if now.rx == last.rx || Instant::now() > give_up {
            return Ok(now);
        }
        last = now;
    }
}
