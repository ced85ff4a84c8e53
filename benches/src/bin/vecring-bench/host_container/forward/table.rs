//! What `vecring-bench host-container --forward` prints: a table row per port,
//! direction, size and round as each completes, with its latency levels
//! under it, then the ratios of each port to net_memif (when both ran);
//! or one JSON document (schema `vecring-bench-forward`, version 1) or CSV
//! (a line per row, the latency levels as columns) at the end.

use super::rig::{Context, Direction, Port, Trial};
use super::{ForwardArgs, Plan, Row, LEVELS};
use crate::agent::histogram::Histogram;
use crate::host_container::report::group;
use crate::host_container::BenchArgs;

fn is_table(args: &BenchArgs) -> bool {
    !args.json && !args.csv
}

fn pps(frames: u64, t: &Trial) -> f64 {
    frames as f64 / t.secs.max(1e-9)
}

fn mbits(rate: f64, size: usize) -> f64 {
    rate * size as f64 * 8.0 / 1e6
}

/// Received by the container per 100 frames the generator sent (direction
/// both and to-container), or received by the host per 100 the container
/// sent (from-container).
fn throughput(r: &Row) -> f64 {
    let t = &r.free;
    let (got, sent) = match r.direction {
        Direction::FromContainer => (t.tx.saturating_sub(t.lost), t.tx),
        _ => (t.far_rx, t.tx),
    };
    if sent == 0 {
        0.0
    } else {
        got as f64 * 100.0 / sent as f64
    }
}

/// The frames the final receiver got in the unthrottled trial.
fn delivered(r: &Row) -> u64 {
    r.free.offered.saturating_sub(r.free.lost)
}

/// The set-up, then the column names.
pub fn heading(args: &BenchArgs, fwd: &ForwardArgs, cx: &Context, plan: &Plan) {
    if !is_table(args) {
        return;
    }
    println!(
        "vecring-bench host-container --forward: host side on CPU {}, container side on CPU {}",
        cx.host_cpu, cx.far_cpu
    );
    for port in &fwd.ports {
        let (host, far, iso) = match port {
            Port::Link => (
                "vecring-bench agent (Rust, master)",
                "vecring-bench agent (slave)",
                cx.link_isolation,
            ),
            Port::Vecring => (
                "vecring-dpdk-agent on eth_vecring",
                &*format!("dpdk-testpmd {} on eth_vecring", cx.fwd_mode.name()),
                cx.dpdk_isolation,
            ),
            Port::Memif => (
                "vecring-dpdk-agent on net_memif",
                &*format!("dpdk-testpmd {} on net_memif", cx.fwd_mode.name()),
                cx.dpdk_isolation,
            ),
        };
        println!(
            "  {:<11}: host {host} <-> {far} in {}",
            port.name(),
            iso.describe()
        );
    }
    if !cx.image.is_empty() {
        println!("  the container's image: {}", cx.image);
    }
    println!(
        "  rings: vecring {} slots per direction, memif {} buffers",
        cx.slots.map_or_else(
            || {
                let g = vecring_core::Geometry::DEFAULT;
                format!("default ({} x {} B)", g.slot_count(), g.slot_size())
            },
            |n| n.to_string()
        ),
        cx.memif_rsize
            .map_or("default (1024 x 2 KiB)".to_string(), |r| (1u32 << r)
                .to_string())
    );
    println!(
        "  first trial {:.1} s {}; RFC 2544 searches: {}; burst {}, {} flow(s)",
        plan.seconds,
        if plan.rate > 0.0 {
            format!("at {} pps", group(plan.rate))
        } else {
            "unthrottled".to_string()
        },
        if plan.trial_secs > 0.0 {
            format!(
                "{:.1} s trials, results re-verified by {:.1} s trials",
                plan.trial_secs, plan.verify_secs
            )
        } else {
            "none".to_string()
        },
        fwd.gen.burst,
        fwd.gen.flows().count()
    );
    println!();
    println!(
        "{:<11} | {:>8} | {:>5} | {:>4} | {:>12} | {:>9} | {:>12} | {:>9} | {:>12} | {:>12} | {:>8} | {:>9} | {:>5} | {:>5} | {:>12} | {:>12}",
        "port", "dir", "frame", "c2c", "gen TX pps", "TX Mbit/s", "gen RX pps", "RX Mbit/s", "ctr RX pps", "ctr TX pps", "thr %", "lost", "reord", "dup", "0-loss pps", "0.002% pps"
    );
    println!("{}", "-".repeat(186));
}

fn cell(v: Option<f64>) -> String {
    v.map_or("-".to_string(), group)
}

/// A row as it completes, its latency levels under it.
pub fn row(args: &BenchArgs, r: &Row) {
    if !is_table(args) {
        return;
    }
    if let Some(e) = &r.error {
        println!(
            "{:<11} | {:>8} | {:>5} | failed: {e}",
            r.port.name(),
            r.direction.name(),
            r.size,
        );
        return;
    }
    let t = &r.free;
    let (gen_rx, ctr_rx, ctr_tx) = match r.direction {
        Direction::Both => (
            Some(pps(t.gen_rx, t)),
            Some(pps(t.far_rx, t)),
            Some(pps(t.far_tx, t)),
        ),
        Direction::ToContainer => (None, Some(pps(t.far_rx, t)), None),
        Direction::FromContainer => (Some(pps(delivered(r), t)), None, Some(pps(t.tx, t))),
    };
    println!(
        "{:<11} | {:>8} | {:>5} | {:>4} | {:>12} | {:>9.0} | {:>12} | {:>9} | {:>12} | {:>12} | {:>8.3} | {:>9} | {:>5} | {:>5} | {:>12} | {:>12}",
        r.port.name(),
        r.direction.name(),
        r.size,
        r.c2c_ns,
        group(pps(t.tx, t)),
        mbits(pps(t.tx, t), r.size),
        cell(gen_rx),
        gen_rx.map_or("-".to_string(), |v| format!("{:.0}", mbits(v, r.size))),
        cell(ctr_rx),
        cell(ctr_tx),
        throughput(r),
        t.lost,
        r.reordered,
        r.dup,
        cell(r.zero_loss),
        cell(r.low_loss),
    );
    for l in &r.latency {
        let h = &l.histogram;
        let ns = |v: Option<u64>| v.map_or("-".to_string(), |v| group(v as f64));
        println!(
            "{:<11}   latency at {:>3} % ({} pps): min {} ns, p50 {}, p99 {}, p99.9 {}, max {} ({} samples)",
            "",
            l.level,
            group(l.rate),
            ns(h.min()),
            ns(h.percentile(50.0)),
            ns(h.percentile(99.0)),
            ns(h.percentile(99.9)),
            ns(h.max()),
            h.count()
        );
    }
}

/// A ratio's median, minimum and maximum over the rounds.
struct Spread {
    median: f64,
    min: f64,
    max: f64,
    n: usize,
}

fn spread(mut v: Vec<f64>) -> Option<Spread> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Spread {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// The p99 latency at the zero-loss rate.
fn p99_at_zero(r: &Row) -> Option<f64> {
    r.latency
        .iter()
        .find(|l| l.level == 100)
        .and_then(|l| l.histogram.percentile(99.0))
        .map(|v| v as f64)
}

/// Placements under this core-to-core latency are near, the others far.
pub const NEAR_NS: u64 = 100;

/// Whether two rows drew the same kind of placement.
fn same_placement(a: &Row, b: &Row) -> bool {
    (a.c2c_ns < NEAR_NS) == (b.c2c_ns < NEAR_NS)
}

/// A comparison: port `a` against net_memif, one figure, per direction
/// and size, round by round (a round's two rows ran back to back).
struct Ratio {
    port: Port,
    direction: Direction,
    size: usize,
    metric: &'static str,
    spread: Spread,
    /// Rounds left out because their two rows drew different placements.
    mixed: usize,
}

/// A figure of a row, if it has it.
type Metric = fn(&Row) -> Option<f64>;

fn ratios(rows: &[Row]) -> Vec<Ratio> {
    let metrics: [(&'static str, Metric); 4] = [
        ("gen_rx_pps", |r| {
            (r.error.is_none()).then(|| pps(delivered(r), &r.free))
        }),
        ("zero_loss_pps", |r| r.zero_loss),
        ("low_loss_pps", |r| r.low_loss),
        ("p99_at_zero_loss_ns", p99_at_zero),
    ];
    let mut out = Vec::new();
    for a in [Port::Link, Port::Vecring] {
        let mut keys: Vec<(Direction, usize)> = rows
            .iter()
            .filter(|r| r.port == a)
            .map(|r| (r.direction, r.size))
            .collect();
        keys.dedup();
        for (direction, size) in keys {
            for (metric, f) in metrics {
                let mut mixed = 0;
                let v: Vec<f64> = rows
                    .iter()
                    .filter(|r| r.port == a && r.direction == direction && r.size == size)
                    .filter_map(|r| {
                        let m = rows.iter().find(|m| {
                            m.port == Port::Memif
                                && m.direction == direction
                                && m.size == size
                                && m.round == r.round
                        })?;
                        if !same_placement(r, m) {
                            mixed += 1;
                            return None;
                        }
                        Some(f(r)? / f(m)?)
                    })
                    .collect();
                if let Some(spread) = spread(v) {
                    out.push(Ratio {
                        port: a,
                        direction,
                        size,
                        metric,
                        spread,
                        mixed,
                    });
                }
            }
        }
    }
    out
}

/// After the last row: the notes and ratios, or the JSON or CSV.
pub fn finish(args: &BenchArgs, fwd: &ForwardArgs, cx: &Context, plan: &Plan, rows: &[Row]) {
    let ratios = ratios(rows);
    if args.json {
        println!("{}", json(fwd, cx, plan, rows, &ratios));
        return;
    }
    if args.csv {
        csv(rows);
        return;
    }
    println!();
    println!("gen TX: frames the generator's port took; gen RX: frames back at the generator (from-ctr: at the host);");
    println!("TX/RX Mbit/s: the frames' bytes (no preamble or gap), of gen TX and gen RX.");
    println!("ctr RX/TX: the container side's port counters; thr % = ctr RX / gen TX (from-ctr: host RX / ctr TX).");
    println!("lost: offered frames that never arrived (first trial); reord, dup: over every trial of the row.");
    println!("c2c: one-way core-to-core latency between the two CPUs around the row, in ns (the vCPU placement:");
    println!("  near under {NEAR_NS} ns; it changes every figure 2-3x, so ratios are taken between rows of one placement).");
    println!("Latency: round trip (both) or one way (CLOCK_MONOTONIC on both sides), in ns; percentiles within 6.25 %.");
    if !ratios.is_empty() {
        println!();
        println!("Ratios to net_memif, round by round, rounds of one placement (median, min-max, rounds):");
        for r in &ratios {
            println!(
                "  {:<11} {:>8} {:>5} B {:<20} {:.2} ({:.2}-{:.2}, {}){}",
                r.port.name(),
                r.direction.name(),
                r.size,
                r.metric,
                r.spread.median,
                r.spread.min,
                r.spread.max,
                r.spread.n,
                if r.mixed > 0 {
                    format!(", {} mixed-placement round(s) left out", r.mixed)
                } else {
                    String::new()
                }
            );
        }
    }
}

fn latency_json(h: &Histogram) -> serde_json::Value {
    serde_json::json!({
        "samples": h.count(),
        "min_ns": h.min(),
        "p50_ns": h.percentile(50.0),
        "p90_ns": h.percentile(90.0),
        "p99_ns": h.percentile(99.0),
        "p999_ns": h.percentile(99.9),
        "max_ns": h.max(),
        "histogram": h.encode(),
    })
}

fn json(
    fwd: &ForwardArgs,
    cx: &Context,
    plan: &Plan,
    rows: &[Row],
    ratios: &[Ratio],
) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "schema": "vecring-bench-forward",
        "version": 1,
        "host_cpu": cx.host_cpu,
        "container_cpu": cx.far_cpu,
        "link_container": cx.link_isolation.describe(),
        "dpdk_container": cx.dpdk_isolation.describe(),
        "rate": plan.rate,
        "seconds": plan.seconds,
        "trial_seconds": plan.trial_secs,
        "verify_seconds": plan.verify_secs,
        "burst": fwd.gen.burst,
        "vecring_slots": cx.slots,
        "memif_rsize": cx.memif_rsize,
        "flows": fwd.gen.flows().count(),
        "rows": rows.iter().map(|r| {
            let t = &r.free;
            serde_json::json!({
                "port": r.port.name(),
                "direction": r.direction.name(),
                "frame_size": r.size,
                "round": r.round,
                "c2c_ns": r.c2c_ns,
                "error": r.error,
                "seconds": t.secs,
                "offered": t.offered,
                "gen_tx": t.tx,
                "gen_rx": t.gen_rx,
                "container_rx": t.far_rx,
                "container_tx": t.far_tx,
                "gen_tx_pps": pps(t.tx, t),
                "gen_tx_mbit_s": mbits(pps(t.tx, t), r.size),
                "delivered_pps": pps(delivered(r), t),
                "delivered_mbit_s": mbits(pps(delivered(r), t), r.size),
                "throughput_percent": throughput(r),
                "lost": t.lost,
                "reordered": r.reordered,
                "duplicated": r.dup,
                "bad": r.bad,
                "zero_loss_pps": r.zero_loss,
                "low_loss_pps": r.low_loss,
                "first_trial_latency": latency_json(&t.latency),
                "latency": r.latency.iter().map(|l| {
                    let mut v = latency_json(&l.histogram);
                    v["level_percent"] = l.level.into();
                    v["rate_pps"] = l.rate.into();
                    v
                }).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
        "ratios_to_memif": ratios.iter().map(|r| serde_json::json!({
            "port": r.port.name(),
            "direction": r.direction.name(),
            "frame_size": r.size,
            "metric": r.metric,
            "median": r.spread.median,
            "min": r.spread.min,
            "max": r.spread.max,
            "rounds": r.spread.n,
            "mixed_placement_rounds": r.mixed,
        })).collect::<Vec<_>>(),
    });
    // The far side's Docker image, when it ran in one.
    doc["container_image"] = (!cx.image.is_empty()).then_some(cx.image.as_str()).into();
    doc["forward_mode"] = cx.fwd_mode.name().into();
    doc
}

fn csv(rows: &[Row]) {
    let mut head = "port,direction,frame_size,round,c2c_ns,gen_tx_pps,delivered_pps,container_rx_pps,container_tx_pps,throughput_percent,lost,reordered,duplicated,bad,zero_loss_pps,low_loss_pps".to_string();
    for l in LEVELS {
        for f in [
            "rate_pps", "min_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns",
        ] {
            head.push_str(&format!(",lat{l}_{f}"));
        }
    }
    println!("{head}");
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
    for r in rows.iter().filter(|r| r.error.is_none()) {
        let t = &r.free;
        let mut line = format!(
            "{},{},{},{},{},{:.0},{:.0},{:.0},{:.0},{:.3},{},{},{},{},{},{}",
            r.port.name(),
            r.direction.name(),
            r.size,
            r.round,
            r.c2c_ns,
            pps(t.tx, t),
            pps(delivered(r), t),
            pps(t.far_rx, t),
            pps(t.far_tx, t),
            throughput(r),
            t.lost,
            r.reordered,
            r.dup,
            r.bad,
            opt(r.zero_loss),
            opt(r.low_loss),
        );
        for level in LEVELS {
            match r.latency.iter().find(|l| l.level == level) {
                Some(l) => {
                    let h = &l.histogram;
                    let v = |x: Option<u64>| x.map_or(String::new(), |x| x.to_string());
                    line.push_str(&format!(
                        ",{:.0},{},{},{},{},{}",
                        l.rate,
                        v(h.min()),
                        v(h.percentile(50.0)),
                        v(h.percentile(99.0)),
                        v(h.percentile(99.9)),
                        v(h.max())
                    ));
                }
                None => line.push_str(",,,,,,"),
            }
        }
        println!("{line}");
    }
}
