//! A process the forwarding benchmark drives over its stdin and stdout:
//! an agent ([`crate::agent::protocol`]) or an interactive testpmd. Every
//! read has a deadline (a peer that hangs is an error, not a hung
//! benchmark), stdout lines come through a reader thread, and the last
//! lines of stderr are kept for the error message when a peer fails.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of a peer's output kept for error messages.
const KEPT: usize = 30;

/// A running peer.
pub struct Peer {
    /// What it is, for messages ("host agent", "container testpmd").
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// The last lines of stdout and stderr.
    tail: Arc<Mutex<VecDeque<String>>>,
}

fn keep(tail: &Mutex<VecDeque<String>>, line: &str) {
    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
    if t.len() == KEPT {
        t.pop_front();
    }
    t.push_back(line.to_string());
}

/// Reads `from` line by line (lossy UTF-8), keeping each in `tail` and
/// passing it to `send` (until its receiver is gone).
fn reader(
    from: impl Read + Send + 'static,
    tail: Arc<Mutex<VecDeque<String>>>,
    send: Option<mpsc::Sender<String>>,
) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(from);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                    keep(&tail, &line);
                    if let Some(s) = &send {
                        if s.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
}

impl Peer {
    /// Starts `cmd` with piped stdin, stdout and stderr.
    ///
    /// # Errors
    /// It could not be started.
    pub fn spawn(name: &str, mut cmd: Command) -> Result<Self, String> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the {name} ({:?}): {e}", cmd.get_program()))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (send, lines) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            reader(out, Arc::clone(&tail), Some(send));
        }
        if let Some(err) = child.stderr.take() {
            reader(err, Arc::clone(&tail), None);
        }
        Ok(Self {
            name: name.to_string(),
            stdin: child.stdin.take(),
            child,
            lines,
            tail,
        })
    }

    /// The peer's last lines of output, indented, for an error message.
    pub fn tail(&self) -> String {
        let t = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        t.iter().map(|l| format!("\n    {l}")).collect()
    }

    /// An error about this peer, with its last output.
    pub fn fail(&self, what: &str) -> String {
        format!("{}: {what}; its last output:{}", self.name, self.tail())
    }

    /// Writes one line to its stdin.
    ///
    /// # Errors
    /// The peer is gone.
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let ok = self
            .stdin
            .as_mut()
            .is_some_and(|s| writeln!(s, "{line}").and_then(|()| s.flush()).is_ok());
        if ok {
            Ok(())
        } else {
            Err(self.fail("exited"))
        }
    }

    /// The next stdout line for which `want` holds, skipping the others,
    /// by `deadline`.
    ///
    /// # Errors
    /// The deadline passed or the peer's stdout closed.
    pub fn expect(
        &mut self,
        deadline: Instant,
        want: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if want(&line) => return Ok(line),
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return Err(self.fail("no answer in time")),
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.try_wait().ok().flatten();
                    let how =
                        status.map_or("closed its output".to_string(), |s| format!("exited ({s})"));
                    return Err(self.fail(&how));
                }
            }
        }
    }

    /// Sends an agent command and returns its reply (`ok ...`; an `err`
    /// reply is returned as the error).
    ///
    /// # Errors
    /// No reply within `timeout`, the peer gone, or `err ...`.
    pub fn ask(&mut self, command: &str, timeout: Duration) -> Result<String, String> {
        self.send(command)?;
        let line = self.expect(Instant::now() + timeout, |l| {
            l.starts_with("ok") || l.starts_with("err")
        })?;
        if let Some(e) = line.strip_prefix("err") {
            return Err(format!("{}: '{command}': {}", self.name, e.trim()));
        }
        Ok(line)
    }

    /// Ends the peer: `quit` (and the end of its stdin), then SIGTERM and
    /// SIGKILL to it and every process under it if it has not exited within
    /// `grace`.
    pub fn stop(mut self, grace: Duration) {
        let _ = self.send("quit");
        self.stdin = None;
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = self.child.id() as i32;
        // SIGTERM first (DPDK programs stop their ports and free their
        // memory on it), SIGKILL to whatever is left 3 s later.
        for (signal, wait_ms) in [(libc::SIGTERM, 3000), (libc::SIGKILL, 1000)] {
            for p in tree(pid) {
                // SAFETY: kill has no memory preconditions; these are our
                // child and its descendants.
                unsafe { libc::kill(p, signal) };
            }
            for _ in 0..wait_ms / 20 {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.wait();
    }
}

/// `pid` and every process under it (from the children lists of each of
/// its threads in /proc), deepest first.
fn tree(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten();
    for task in tasks {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            out.extend(tree(c));
        }
    }
    out.push(pid);
    out
}
