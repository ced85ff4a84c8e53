//! A link's status as its master reports it to a process that asks: the
//! operator's view (`vecring list`, `vecring stats`), from outside both
//! peers and without disturbing them.
//!
//! A process connects to the link's socket and sends one handshake message
//! of kind [`Kind::Status`] instead of a `Request`. The master checks the
//! asker's credentials (root, the master's own uid, and the uids allowed
//! to attach), answers with one datagram of `key value` lines and closes;
//! no memory is created for it. The answer starts with
//! `vecring-status <version>`; unknown keys are ignored, so that newer
//! masters can say more.
//!
//! The asker treats the answer as untrusted: it is bounded in size, and
//! every value is parsed and checked.

use crate::closer;
use crate::counters::LinkCounters;
use crate::handshake::{self, Kind, Msg};
use std::io;
use std::path::Path;
use std::time::Duration;

/// Version of the answer's format; the first line says it.
pub const STATUS_VERSION: u32 = 1;
/// Largest answer accepted.
pub const MAX_STATUS_LEN: usize = 4096;

/// The attached slave, as the master sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its pid, in the master's pid namespace; 0 unless the asker is root
    /// or runs as the master's uid.
    pub pid: i32,
    /// Its uid, as the master sees it.
    pub uid: u32,
    /// Its gid, as the master sees it.
    pub gid: u32,
}

/// The current region of a link that is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// Bytes mapped.
    pub size: u64,
    /// Backed by 2 MiB hugepages.
    pub hugepages: bool,
    /// Slots per ring.
    pub slot_count: u32,
    /// Bytes per slot.
    pub slot_size: u32,
    /// Largest frame.
    pub max_frame_len: u32,
}

/// What a master says about its link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkStatus {
    /// The master's pid, in its own pid namespace; 0 unless the asker is
    /// root or runs as the master's uid.
    pub master_pid: i32,
    /// The master's uid.
    pub master_uid: u32,
    /// Seconds since the master opened the link.
    pub uptime_secs: u64,
    /// The NUMA node the memory is bound to, if any.
    pub numa_node: Option<u32>,
    /// Queue pairs of the link.
    pub queues: u32,
    /// The attached slave, if the link is up.
    pub peer: Option<PeerInfo>,
    /// The current region, if the link is up.
    pub region: Option<RegionInfo>,
    /// The link's counters (the master's side).
    pub counters: LinkCounters,
}

impl LinkStatus {
    /// Whether a slave is attached.
    pub fn is_up(&self) -> bool {
        self.peer.is_some()
    }

    /// The answer's text.
    pub fn encode(&self) -> String {
        let mut s = format!("vecring-status {STATUS_VERSION}\n");
        let mut kv = |k: &str, v: String| {
            s.push_str(k);
            s.push(' ');
            s.push_str(&v);
            s.push('\n');
        };
        kv("master_pid", self.master_pid.to_string());
        kv("master_uid", self.master_uid.to_string());
        kv("uptime_secs", self.uptime_secs.to_string());
        if let Some(n) = self.numa_node {
            kv("numa_node", n.to_string());
        }
        kv("queues", self.queues.to_string());
        if let Some(p) = self.peer {
            kv("peer_pid", p.pid.to_string());
            kv("peer_uid", p.uid.to_string());
            kv("peer_gid", p.gid.to_string());
        }
        if let Some(r) = self.region {
            kv("region_size", r.size.to_string());
            kv("hugepages", u8::from(r.hugepages).to_string());
            kv("slot_count", r.slot_count.to_string());
            kv("slot_size", r.slot_size.to_string());
            kv("max_frame_len", r.max_frame_len.to_string());
        }
        let c = &self.counters;
        for (k, v) in [
            ("generation", c.generation),
            ("link_ups", c.link_ups),
            ("link_downs", c.link_downs),
            ("peer_corruptions", c.peer_corruptions),
            ("rejected_peers", c.rejected_peers),
            ("pinned_regions", c.pinned_regions),
            ("tx_frames", c.tx_frames),
            ("tx_bytes", c.tx_bytes),
            ("tx_lost_on_link_down", c.tx_lost_on_link_down),
            ("tx_ring_full", c.tx_ring_full),
            ("rx_frames", c.rx_frames),
            ("rx_bytes", c.rx_bytes),
        ] {
            kv(k, v.to_string());
        }
        s
    }

    /// Parses an answer.
    ///
    /// # Errors
    /// What is malformed: a wrong first line, a value that is not a
    /// number, a missing required key, an incomplete peer or region.
    pub fn decode(text: &str) -> Result<LinkStatus, String> {
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        let version = first
            .strip_prefix("vecring-status ")
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| format!("not a vecring status answer: '{}'", first.escape_debug()))?;
        if version != STATUS_VERSION {
            return Err(format!(
                "status format {version}; this vecring reads {STATUS_VERSION}"
            ));
        }
        let mut kv = std::collections::HashMap::new();
        for line in lines {
            let (k, v) = line
                .split_once(' ')
                .ok_or_else(|| format!("malformed status line '{}'", line.escape_debug()))?;
            let v: u64 = v
                .parse()
                .map_err(|_| format!("status value of '{}' is not a number", k.escape_debug()))?;
            kv.insert(k, v);
        }
        let get = |k: &str| kv.get(k).copied();
        let need = |k: &str| get(k).ok_or_else(|| format!("status lacks '{k}'"));
        let small = |k: &str, v: u64| {
            u32::try_from(v).map_err(|_| format!("status '{k}' {v} is out of range"))
        };
        let peer = match (get("peer_pid"), get("peer_uid"), get("peer_gid")) {
            (Some(pid), Some(uid), Some(gid)) => Some(PeerInfo {
                pid: i32::try_from(pid)
                    .map_err(|_| format!("status peer_pid {pid} is out of range"))?,
                uid: small("peer_uid", uid)?,
                gid: small("peer_gid", gid)?,
            }),
            (None, None, None) => None,
            _ => return Err("status names part of a peer".into()),
        };
        let region = match get("region_size") {
            Some(size) => Some(RegionInfo {
                size,
                hugepages: need("hugepages")? != 0,
                slot_count: small("slot_count", need("slot_count")?)?,
                slot_size: small("slot_size", need("slot_size")?)?,
                max_frame_len: small("max_frame_len", need("max_frame_len")?)?,
            }),
            None => None,
        };
        let master_pid = need("master_pid")?;
        Ok(LinkStatus {
            master_pid: i32::try_from(master_pid)
                .map_err(|_| format!("status master_pid {master_pid} is out of range"))?,
            master_uid: small("master_uid", need("master_uid")?)?,
            uptime_secs: need("uptime_secs")?,
            numa_node: get("numa_node")
                .map(|n| small("numa_node", n))
                .transpose()?,
            queues: small("queues", need("queues")?)?,
            peer,
            region,
            counters: LinkCounters {
                generation: need("generation")?,
                link_ups: need("link_ups")?,
                link_downs: need("link_downs")?,
                peer_corruptions: need("peer_corruptions")?,
                rejected_peers: need("rejected_peers")?,
                pinned_regions: need("pinned_regions")?,
                tx_frames: need("tx_frames")?,
                tx_bytes: need("tx_bytes")?,
                tx_lost_on_link_down: need("tx_lost_on_link_down")?,
                // Not said by every master: 0 when absent.
                tx_ring_full: get("tx_ring_full").unwrap_or(0),
                rx_frames: need("rx_frames")?,
                rx_bytes: need("rx_bytes")?,
            },
        })
    }
}

/// Why a status query failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// Nobody listens there (no master, or a stale socket).
    #[error("no master listens at {path}")]
    NoMaster {
        /// The socket.
        path: String,
    },
    /// The master refused to answer (credentials), with its reason.
    #[error("the master refused: {0}")]
    Refused(String),
    /// The answer was malformed.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// A system call failed or the master did not answer in time.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Asks the master listening at `socket` for its status, waiting at most
/// `timeout` for the answer: [`ask`], a wait, [`Asked::answer`].
///
/// # Errors
/// [`QueryError`].
pub fn query(socket: &Path, timeout: Duration) -> Result<LinkStatus, QueryError> {
    let asked = ask(socket)?;
    if !handshake::wait_readable(&asked.conn, timeout)? {
        return Err(QueryError::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            "the master did not answer in time",
        )));
    }
    asked.answer()
}

/// A status question sent to the listener at a socket, its answer not yet
/// read. Its descriptor (`AsFd`) becomes readable when the answer is
/// there, so one process can wait for many masters at once (`poll`), and a
/// listener that never answers holds up only its own question.
#[derive(Debug)]
pub struct Asked {
    conn: closer::PeerSocket,
}

impl std::os::fd::AsFd for Asked {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.conn.as_fd()
    }
}

/// Connects to `socket` and sends the status question; neither step
/// waits (a full backlog is an error).
///
/// # Errors
/// [`QueryError::NoMaster`] when nobody listens, [`QueryError::Io`].
pub fn ask(socket: &Path) -> Result<Asked, QueryError> {
    let conn = handshake::connect(socket).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ECONNREFUSED) => QueryError::NoMaster {
            path: socket.display().to_string(),
        },
        _ => QueryError::Io(e),
    })?;
    handshake::send(&conn, &Msg::new(Kind::Status, 0), &[])?;
    Ok(Asked { conn })
}

impl Asked {
    /// Reads and checks the answer, without waiting: call it once the
    /// descriptor is readable.
    ///
    /// # Errors
    /// [`QueryError`]; `Io` with `WouldBlock` when nothing has come yet.
    pub fn answer(self) -> Result<LinkStatus, QueryError> {
        let conn = self.conn;
        let mut buf = vec![0u8; MAX_STATUS_LEN + 1];
        // With a control buffer: whatever a listener that is no master
        // sends along goes to the closers, never closed on this thread.
        let (n, _, fds) = handshake::recv_bytes(&conn, &mut buf)?;
        if !fds.is_empty() {
            closer::count_planted(fds.len());
            return Err(QueryError::Malformed(format!(
                "the answer came with {} file descriptors (closed apart); a master sends none",
                fds.len()
            )));
        }
        if n == handshake::MSG_LEN {
            // A handshake message, not a status: the master refused.
            if let Ok(m) = Msg::decode(&buf[..n]) {
                return Err(QueryError::Refused(m.text));
            }
        }
        if n > MAX_STATUS_LEN {
            return Err(QueryError::Malformed(format!(
                "answer longer than {MAX_STATUS_LEN} bytes"
            )));
        }
        let text = std::str::from_utf8(&buf[..n])
            .map_err(|_| QueryError::Malformed("answer is not UTF-8".into()))?;
        LinkStatus::decode(text).map_err(QueryError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LinkStatus {
        LinkStatus {
            master_pid: 42,
            master_uid: 0,
            uptime_secs: 7,
            numa_node: Some(0),
            queues: 1,
            peer: Some(PeerInfo {
                pid: 43,
                uid: 100000,
                gid: 100000,
            }),
            region: Some(RegionInfo {
                size: 6 << 20,
                hugepages: true,
                slot_count: 1024,
                slot_size: 2048,
                max_frame_len: 9216,
            }),
            counters: LinkCounters {
                generation: 9,
                tx_frames: 5,
                ..LinkCounters::default()
            },
        }
    }

    #[test]
    fn status_round_trips() {
        let s = sample();
        assert_eq!(LinkStatus::decode(&s.encode()).unwrap(), s);
        let down = LinkStatus {
            peer: None,
            region: None,
            numa_node: None,
            ..sample()
        };
        assert_eq!(LinkStatus::decode(&down.encode()).unwrap(), down);
        assert!(s.encode().len() < MAX_STATUS_LEN);
    }

    #[test]
    fn malformed_answers_are_refused() {
        assert!(LinkStatus::decode("hello")
            .unwrap_err()
            .contains("not a vecring status"));
        assert!(LinkStatus::decode("vecring-status 9\n")
            .unwrap_err()
            .contains("format 9"));
        let text = sample().encode().replace("tx_frames 5", "tx_frames five");
        assert!(LinkStatus::decode(&text).unwrap_err().contains("tx_frames"));
        let text = sample().encode().replace("peer_uid 100000\n", "");
        assert!(LinkStatus::decode(&text)
            .unwrap_err()
            .contains("part of a peer"));
        let text = sample()
            .encode()
            .replace("master_uid 0", "master_uid 99999999999");
        assert!(LinkStatus::decode(&text)
            .unwrap_err()
            .contains("out of range"));
        // Unknown keys are for newer masters: ignored.
        let text = sample().encode() + "new_counter 1\n";
        assert_eq!(LinkStatus::decode(&text).unwrap(), sample());
    }
}
