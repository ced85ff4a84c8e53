//! The agent protocol: a harness drives an agent (one end of a link or
//! DPDK port, generating, forwarding or sinking frames) over its stdin and
//! stdout, one line per command and exactly one line per reply.
//!
//! - At start-up, once its link is up, an agent prints
//!   `ready mac=<its MAC> max_frame=<largest frame it can send>`.
//! - `gen size=B rate=PPS secs=S [count=N] [burst=N]` (generators): one
//!   trial. Reply `ok trial=ID offered=N tx=N rx=N lost=N reordered=N
//!   dup=N bad=N tx_secs=F kept_rate=0|1 min=NS max=NS hist=IDX:N,...`.
//!   Trial ids count up from 1, wrapping past 65535 to 1. A trial ends
//!   when its frames are offered (`count`, or `rate` x `secs`), or at the
//!   end of `secs` when unthrottled; at most 3600 s, `count` at most 2^32,
//!   `rate` 0 (unthrottled) or 1 to 10^9.
//! - `counts` (sinks): `ok rx=N unique=N reordered=N dup=N bad=N min=NS
//!   max=NS hist=...` since the last `reset`.
//! - `reset [trial=ID]`: `ok`; a sink then counts frames of trial `ID`
//!   only (without it, of the first trial id it sees).
//! - `stats`: `ok ipackets=N opackets=N imissed=N oerrors=N`, the port's
//!   totals.
//! - `quit`: `ok`, and the agent ends; so does the end of stdin.
//! - A bad command is answered `err <why>`; the agent goes on.
//!
//! `offered` is the frames due at the rate, each given a sequence number;
//! `tx` those the link took (a paced generator drops, and counts as lost,
//! a frame the full ring refuses, as a NIC's full queue would; an
//! unthrottled one retries it); `lost` = `offered` minus the distinct
//! sequence numbers that came back. Histograms are in the form of
//! [`Histogram::encode`].

use super::histogram::Histogram;
use std::collections::HashMap;

/// A reply's `key=value` fields.
pub struct Fields(HashMap<String, String>);

impl Fields {
    /// Parses `ok k=v ...`.
    ///
    /// # Errors
    /// `err ...` (the agent's message), or a line that is not a reply.
    pub fn parse(line: &str) -> Result<Self, String> {
        let line = line.trim();
        if let Some(e) = line.strip_prefix("err") {
            return Err(format!("agent: {}", e.trim()));
        }
        let rest = line
            .strip_prefix("ok")
            .ok_or_else(|| format!("agent answered '{line}'"))?;
        let mut map = HashMap::new();
        for kv in rest.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("agent answered '{line}'"))?;
            map.insert(k.to_string(), v.to_string());
        }
        Ok(Self(map))
    }

    /// A number field.
    ///
    /// # Errors
    /// Missing or not a number.
    pub fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, String> {
        self.0
            .get(key)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("agent reply lacks a valid '{key}'"))
    }

    /// The latency histogram (`hist`, `min`, `max`).
    ///
    /// # Errors
    /// Missing or malformed.
    pub fn histogram(&self) -> Result<Histogram, String> {
        let text = self.0.get("hist").map_or("", String::as_str);
        Histogram::decode(text, self.num("min")?, self.num("max")?)
    }
}

/// The `min=.. max=.. hist=..` tail of a reply.
pub fn latency_fields(h: &Histogram) -> String {
    format!(
        "min={} max={} hist={}",
        h.min().unwrap_or(0),
        h.max().unwrap_or(0),
        h.encode()
    )
}

/// A generator's trial, as its reply gives it.
#[derive(Clone, Debug, Default)]
pub struct GenResult {
    pub trial: u16,
    pub offered: u64,
    pub tx: u64,
    pub rx: u64,
    pub lost: u64,
    pub reordered: u64,
    pub dup: u64,
    pub bad: u64,
    pub tx_secs: f64,
    pub kept_rate: bool,
    pub latency: Histogram,
}

impl GenResult {
    /// Reads a `gen` reply.
    ///
    /// # Errors
    /// As [`Fields`].
    pub fn parse(line: &str) -> Result<Self, String> {
        let f = Fields::parse(line)?;
        Ok(Self {
            trial: f.num("trial")?,
            offered: f.num("offered")?,
            tx: f.num("tx")?,
            rx: f.num("rx")?,
            lost: f.num("lost")?,
            reordered: f.num("reordered")?,
            dup: f.num("dup")?,
            bad: f.num("bad")?,
            tx_secs: f.num("tx_secs")?,
            kept_rate: f.num::<u8>("kept_rate")? == 1,
            latency: f.histogram()?,
        })
    }
}

/// A sink's counts, as its reply gives them.
#[derive(Clone, Debug, Default)]
pub struct SinkCounts {
    pub rx: u64,
    pub unique: u64,
    pub reordered: u64,
    pub dup: u64,
    pub bad: u64,
    pub latency: Histogram,
}

impl SinkCounts {
    /// Reads a `counts` reply.
    ///
    /// # Errors
    /// As [`Fields`].
    pub fn parse(line: &str) -> Result<Self, String> {
        let f = Fields::parse(line)?;
        Ok(Self {
            rx: f.num("rx")?,
            unique: f.num("unique")?,
            reordered: f.num("reordered")?,
            dup: f.num("dup")?,
            bad: f.num("bad")?,
            latency: f.histogram()?,
        })
    }
}

/// A port's totals (`stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    pub ipackets: u64,
    pub opackets: u64,
}

impl PortStats {
    /// Reads a `stats` reply.
    ///
    /// # Errors
    /// As [`Fields`].
    pub fn parse(line: &str) -> Result<Self, String> {
        let f = Fields::parse(line)?;
        Ok(Self {
            ipackets: f.num("ipackets")?,
            opackets: f.num("opackets")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_and_errors_carry_the_agents_words() {
        let g = GenResult::parse(
            "ok trial=3 offered=10 tx=10 rx=9 lost=1 reordered=0 dup=0 bad=0 tx_secs=2.0 kept_rate=1 min=900 max=1200 hist=108:4,114:5",
        )
        .unwrap();
        assert_eq!((g.offered, g.rx, g.lost, g.kept_rate), (10, 9, 1, true));
        assert_eq!(g.latency.count(), 9);
        let s = SinkCounts::parse("ok rx=3 unique=3 reordered=0 dup=0 bad=0 min=0 max=0 hist=")
            .unwrap();
        assert_eq!(s.unique, 3);
        assert_eq!(
            PortStats::parse("ok ipackets=5 opackets=4 imissed=0 oerrors=1").unwrap(),
            PortStats {
                ipackets: 5,
                opackets: 4
            }
        );
        assert_eq!(
            GenResult::parse("err size 3 is below 64").unwrap_err(),
            "agent: size 3 is below 64"
        );
        assert!(GenResult::parse("ok tx=1").is_err());
        assert!(GenResult::parse("ready mac=1").is_err());
    }
}
