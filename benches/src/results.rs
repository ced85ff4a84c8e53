//! Machine-readable results: one CSV row per measurement, the same columns
//! for every benchmark tool (`ring-compare --csv`, `link-compare --csv`,
//! `benches/dpdk-compare.sh -o`), read by `benches/plot.py`.
//!
//! ```text
//! bench,group,candidate,frame,pair,metric,value,c2c_ns
//! ring,vecring-copy:rtrb-copy,vecring-copy,64,0,fps,512000000,55
//! ```
//!
//! - `bench`: which comparison (`ring`, `link`, `latency`, `dpdk`);
//! - `group`: the candidates run alternately with each other; ratios are
//!   taken only between rows of one group, frame size and pair;
//! - `candidate`: what was measured (`vecring-copy`, `rtrb-copy`,
//!   `iceoryx2`, `cache-line`, …);
//! - `frame`: frame length in bytes;
//! - `pair`: the round of the alternation (0, 1, …);
//! - `metric`: `fps` (frames per second), `rx_pps`/`tx_pps` (packets per
//!   second at the receiver/sender), `one_way_ns` (half a round trip);
//! - `value`: the figure, in the metric's unit;
//! - `c2c_ns`: the one-way core-to-core latency between the two CPUs
//!   measured around the round (the larger of the readings before and
//!   after it): the vCPU placement the round drew, under 100 ns "near".

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The header line of every results file.
pub const HEADER: &str = "bench,group,candidate,frame,pair,metric,value,c2c_ns";

/// One measurement.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// Which comparison.
    pub bench: &'a str,
    /// The candidates alternated with each other.
    pub group: &'a str,
    /// What was measured.
    pub candidate: &'a str,
    /// Frame length in bytes.
    pub frame: usize,
    /// The round of the alternation.
    pub pair: usize,
    /// The metric's name (see the module doc).
    pub metric: &'a str,
    /// The figure.
    pub value: f64,
    /// Core-to-core latency around the round, in nanoseconds.
    pub c2c_ns: f64,
}

/// A results file, or nothing when no file was asked for.
pub struct Results {
    out: Option<BufWriter<File>>,
}

impl Results {
    /// Creates (or truncates) `path` and writes the header; with `None`,
    /// a sink that drops every row.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: Option<&Path>) -> std::io::Result<Self> {
        let out = match path {
            Some(path) => {
                let mut out = BufWriter::new(File::create(path)?);
                writeln!(out, "{HEADER}")?;
                Some(out)
            }
            None => None,
        };
        Ok(Results { out })
    }

    /// Appends `row`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn push(&mut self, row: Row<'_>) -> std::io::Result<()> {
        if let Some(out) = &mut self.out {
            writeln!(
                out,
                "{},{},{},{},{},{},{:.1},{:.0}",
                row.bench,
                row.group,
                row.candidate,
                row.frame,
                row.pair,
                row.metric,
                row.value,
                row.c2c_ns
            )?;
        }
        Ok(())
    }

    /// Writes out what is buffered.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.out {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

/// The value following `--csv` in `args`, if any.
pub fn csv_arg(args: &[String]) -> Option<&Path> {
    args.iter()
        .position(|a| a == "--csv")
        .and_then(|i| args.get(i + 1))
        .map(Path::new)
}
