//! Opening a link and waiting for its peer, for every mode: the socket
//! path said at once and every [`WAIT_REPORT`], the wait ended early when
//! the caller asks (stdin closed, Ctrl-C), and a timeout that says whether
//! peers came and were refused.

use crate::{LinkArgs, LOG_TARGET};
use std::time::{Duration, Instant};
use vecring_core::memory::AttachError;
use vecring_core::{Link, LinkError, Role};

/// How often a side waiting for its peer says so.
const WAIT_REPORT: Duration = Duration::from_secs(10);

/// How often a wait looks at its stop condition.
const STOP_POLL: Duration = Duration::from_millis(50);

/// How a wait for the peer ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The link is up.
    Up,
    /// The caller's stop condition held first; the reason it gave.
    Stopped(&'static str),
}

impl LinkArgs {
    /// The peer's role, for messages.
    fn peer(&self) -> &'static str {
        match self.role {
            Role::Master => "slave",
            Role::Slave => "master",
        }
    }

    /// Checks the options and opens this end of the link (no wait).
    ///
    /// # Errors
    /// A bad option, or a link that cannot open.
    pub(crate) fn open(&self) -> Result<Link, String> {
        self.check()?;
        self.builder()?.open().map_err(|e| e.to_string())
    }

    /// Waits up to `--up-timeout` for the peer, saying so (with the socket
    /// path) at once and again every [`WAIT_REPORT`]; `stop` is asked
    /// every [`STOP_POLL`] and ends the wait with its reason.
    ///
    /// # Errors
    /// No peer in time (saying how many were refused, if any), or the
    /// link refused for good.
    pub(crate) fn wait_for_peer(
        &self,
        link: &Link,
        stop: &dyn Fn() -> Option<&'static str>,
    ) -> Result<Waited, String> {
        let path = match (&self.netns, link.socket_path()) {
            (Some(ns), _) => format!(
                "@{} in network namespace {}",
                vecring_core::internal::netns::abstract_name(&self.domain, &self.link),
                ns.display()
            ),
            (None, Some(p)) => p.display().to_string(),
            (None, None) => String::new(),
        };
        let timeout = Duration::from_secs_f64(self.up_timeout);
        let peer = self.peer();
        if link.state().is_up() {
            return Ok(Waited::Up);
        }
        log::info!(
            target: LOG_TARGET,
            "waiting for the {peer} on {path} (up to {:.0} s)",
            self.up_timeout
        );
        let start = Instant::now();
        let mut next_report = WAIT_REPORT;
        loop {
            if let Some(why) = stop() {
                return Ok(Waited::Stopped(why));
            }
            let left = timeout.saturating_sub(start.elapsed());
            match link.wait_up(left.min(STOP_POLL)) {
                Ok(_) => return Ok(Waited::Up),
                Err(LinkError::Timeout(_)) if start.elapsed() < timeout => {
                    if start.elapsed() >= next_report {
                        next_report += WAIT_REPORT;
                        log::warn!(
                            target: LOG_TARGET,
                            "still waiting for the {peer} on {path} after {:.0} s",
                            start.elapsed().as_secs_f64()
                        );
                    }
                }
                Err(LinkError::Timeout(_)) => {
                    let refused = link.counters().rejected_peers;
                    return Err(if refused > 0 {
                        format!(
                            "no {peer} on {path} was admitted in {:.0} s (--up-timeout): this side refused {refused} since it started (the warnings above say why: its uid, its queue count, ...)",
                            self.up_timeout
                        )
                    } else if let Some(why) = self.socket_closed_to_us(&path) {
                        format!(
                            "the {peer} on {path} is not reachable after {:.0} s (--up-timeout): {why}",
                            self.up_timeout
                        )
                    } else {
                        format!(
                            "no {peer} on {path} after {:.0} s (--up-timeout): is it running, with the same --domain, --link and --run-dir?",
                            self.up_timeout
                        )
                    });
                }
                Err(e) => return Err(self.refusal(&path, e)),
            }
        }
    }

    /// Checks the options, opens the link and waits for the peer (its
    /// socket path said at once and every 10 s).
    ///
    /// # Errors
    /// A bad option, a link refused, or no peer within `--up-timeout`.
    pub fn open_up(&self) -> Result<Link, String> {
        let link = self.open()?;
        self.wait_for_peer(&link, &|| None)?;
        Ok(link)
    }

    /// For a slave: why the master's socket at `path`, which exists, is
    /// closed to this process (its uid and gid may not write it), in the
    /// terms of the master's options; `None` when it is open or absent.
    fn socket_closed_to_us(&self, path: &str) -> Option<String> {
        if self.role != Role::Slave || path.is_empty() {
            return None;
        }
        let c = std::ffi::CString::new(path).ok()?;
        // SAFETY: access() reads a NUL-terminated path we own.
        let what = if unsafe { libc::access(c.as_ptr(), libc::F_OK) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EACCES) {
                return None;
            }
            "its domain directory is closed to this process"
        // SAFETY: as above.
        } else if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            "its socket is not open to this process"
        } else {
            return None;
        };
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Some(format!(
            "{what} (uid {uid}, gid {gid} here; in a user namespace the host numbers them otherwise): start the master with --owner (devarg owner=) naming this process's uid:gid as the host sees them, or run this side as the uid the master was given (`vecring prepare` prints both for each container runtime)"
        ))
    }

    /// Why the link did not come up, in the tool's terms: a slave whose
    /// `--queues` differs from the master's count is told both counts and
    /// what to give instead.
    fn refusal(&self, path: &str, e: LinkError) -> String {
        match e {
            // The field vecring-core's region check names when the
            // master's count is not the one this slave required.
            LinkError::Attach(AttachError::Mismatch {
                field: "queue count",
                ours,
                theirs,
            }) => format!(
                "--queues {ours}: the master on {path} has {theirs} queue pairs; give --queues {theirs}, or leave --queues out to take the master's count"
            ),
            e => format!("{path}: {e}"),
        }
    }
}
