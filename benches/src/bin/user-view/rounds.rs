//! Rounds of two runs alternating, tagged with the vCPU placement each
//! drew, and the ratios' summary per placement.

use vecring_benches::core_to_core_latency;

/// `rounds` rounds of `a` and `b`, which goes first swapping every round,
/// each printed by `show(round, placement, a, b)`; returns each round's
/// placement and both results. The core-to-core latency is taken before, between
/// and after the two runs of a round, because the host moves the vCPUs
/// now and then: a round whose three figures fall in different placements
/// compared one placement with another.
pub fn alternate<T: Copy>(
    rounds: usize,
    mut a: impl FnMut() -> T,
    mut b: impl FnMut() -> T,
    show: impl Fn(usize, &Placement, T, T),
) -> Vec<(Placement, T, T)> {
    let c2c = || core_to_core_latency().as_nanos();
    (0..rounds)
        .map(|round| {
            let before = c2c();
            let (x, between, y) = if round % 2 == 0 {
                let x = a();
                let between = c2c();
                (x, between, b())
            } else {
                let y = b();
                let between = c2c();
                (a(), between, y)
            };
            let placement = Placement([before, between, c2c()]);
            show(round, &placement, x, y);
            (placement, x, y)
        })
        .collect()
}

/// A round's core-to-core latencies, in ns: before, between and after
/// its two runs.
#[derive(Clone)]
pub struct Placement(pub [u128; 3]);

impl Placement {
    /// The vCPUs on one physical core (under 45 ns: they share its
    /// caches), near (under 100 ns) or far; `None` if the round's three
    /// figures disagree (the host moved a vCPU during it).
    fn class(&self) -> Option<&'static str> {
        let class = |c: u128| match c {
            0..45 => "same-core",
            45..100 => "near",
            _ => "far",
        };
        let [a, b, c] = self.0.map(class);
        (a == b && b == c).then_some(a)
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c] = self.0;
        let moved = if self.class().is_none() { " moved" } else { "" };
        write!(f, "{:>17}", format!("{a}/{b}/{c}{moved}"))
    }
}

/// The median, min and max of `ratios`, over all rounds and per placement:
/// the two vCPUs on one physical core (core-to-core under 45 ns: they share
/// its caches), near (under 100 ns) or far, leaving out of these the
/// rounds that moved between them.
pub fn summary(what: &str, ratios: &[(Placement, f64)]) {
    for name in ["all", "same-core", "near", "far"] {
        let mut r: Vec<f64> = ratios
            .iter()
            .filter(|(p, _)| name == "all" || p.class() == Some(name))
            .map(|&(_, r)| r)
            .collect();
        if r.is_empty() {
            continue;
        }
        r.sort_by(f64::total_cmp);
        println!(
            "{what}, {name} rounds: median {:.3}, {:.3}-{:.3} ({} rounds)",
            r[r.len() / 2],
            r[0],
            r[r.len() - 1],
            r.len()
        );
    }
    let moved = ratios.iter().filter(|(p, _)| p.class().is_none()).count();
    if moved > 0 {
        println!("{what}: {moved} rounds moved between placements, in no placement's figures");
    }
}
