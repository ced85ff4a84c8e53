//! A process the forwarding benchmark drives over its stdin and stdout:
//! an agent ([`crate::agent::protocol`]) or an interactive testpmd. Every
//! read has a deadline (a peer that hangs is an error, not a hung
//! benchmark), stdout lines come through a reader thread, and the last
//! lines of stderr are kept for the error message when a peer fails.
//!
//! A peer runs in the container, so what it writes is bounded here: a
//! line is kept to [`LINE_MAX`] bytes (the rest of a longer one is read
//! and dropped), at most [`QUEUED`] lines wait for the benchmark (more are
//! dropped until it reads, kept only among the last lines for errors),
//! and past [`TOTAL_MAX`] bytes a stream is no longer read, which the
//! benchmark sees as the peer having closed its output, with a line saying
//! why.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of a peer's output kept for error messages.
const KEPT: usize = 30;
/// Bytes of one line kept at most.
const LINE_MAX: usize = 4096;
/// Bytes read from one stream of a peer at most: far more than an agent
/// or testpmd writes in a benchmark.
const TOTAL_MAX: u64 = 64 << 20;
/// Stdout lines waiting for the benchmark at most: an agent answers
/// each command with a line or two, testpmd with a screen.
const QUEUED: usize = 1024;

/// The bounds on what is read from one stream.
#[derive(Clone, Copy)]
struct Limits {
    line: usize,
    total: u64,
}

const LIMITS: Limits = Limits {
    line: LINE_MAX,
    total: TOTAL_MAX,
};

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

/// One line read by [`next_line`].
struct Line {
    /// Bytes taken from the stream, the newline and what was dropped
    /// included; 0 at its end.
    read: u64,
    /// Longer than the bound (or cut by the budget): the rest was dropped.
    cut: bool,
}

/// Reads up to and including the next newline of `r`, at most `budget`
/// bytes, keeping the first `max` in `line` (without the newline).
fn next_line(
    r: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
    budget: u64,
) -> io::Result<Line> {
    let mut got = Line {
        read: 0,
        cut: false,
    };
    while got.read < budget {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(got);
        }
        let room = usize::try_from(budget - got.read).unwrap_or(usize::MAX);
        let buf = &buf[..buf.len().min(room)];
        let (part, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1),
            None => (buf, buf.len()),
        };
        let keep = part.len().min(max - line.len().min(max));
        line.extend_from_slice(&part[..keep]);
        got.cut |= keep < part.len();
        let newline = done > part.len();
        r.consume(done);
        got.read += done as u64;
        if newline {
            return Ok(got);
        }
    }
    got.cut = true;
    Ok(got)
}

/// Reads `from` line by line (lossy UTF-8) within `limits`, keeping each
/// line in `tail` and passing it to `send` (until its receiver is gone).
fn read_lines(
    from: impl Read,
    tail: &Mutex<VecDeque<String>>,
    send: Option<&SyncSender<String>>,
    limits: Limits,
) {
    let mut r = BufReader::new(from);
    let mut buf = Vec::new();
    let mut read = 0u64;
    loop {
        buf.clear();
        let line = match next_line(&mut r, &mut buf, limits.line, limits.total - read) {
            Ok(l) if l.read > 0 => l,
            _ => return,
        };
        read += line.read;
        let mut text = String::from_utf8_lossy(&buf).trim_end().to_string();
        if line.cut {
            text.push_str(" [cut]");
        }
        keep(tail, &text);
        // A full queue drops the line (the tail keeps it): the peer never
        // waits on us, so it can always be told to quit.
        if let Some(Err(TrySendError::Disconnected(_))) = send.map(|s| s.try_send(text)) {
            return;
        }
        if read >= limits.total {
            keep(
                tail,
                &format!("[no more of this output read: past {} bytes]", limits.total),
            );
            return;
        }
    }
}

/// [`read_lines`] with the bounds of a peer, on a thread of its own.
fn reader(
    from: impl Read + Send + 'static,
    tail: Arc<Mutex<VecDeque<String>>>,
    send: Option<SyncSender<String>>,
) {
    std::thread::spawn(move || read_lines(from, &tail, send.as_ref(), LIMITS));
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
        let (send, lines) = mpsc::sync_channel(QUEUED);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Endless output: `pattern` over and over.
    struct Endless(&'static [u8], usize);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            for b in buf.iter_mut() {
                *b = self.0[self.1 % self.0.len()];
                self.1 += 1;
            }
            Ok(buf.len())
        }
    }

    #[test]
    fn a_long_line_is_cut_and_the_rest_of_it_dropped() {
        let mut r = io::Cursor::new(b"short\n0123456789abcdef\nend".to_vec());
        let mut line = Vec::new();
        let l = next_line(&mut r, &mut line, 8, 1000).unwrap();
        assert_eq!((line.as_slice(), l.read, l.cut), (&b"short"[..], 6, false));
        line.clear();
        let l = next_line(&mut r, &mut line, 8, 1000).unwrap();
        assert_eq!(
            (line.as_slice(), l.read, l.cut),
            (&b"01234567"[..], 17, true)
        );
        line.clear();
        let l = next_line(&mut r, &mut line, 8, 1000).unwrap();
        assert_eq!((line.as_slice(), l.read, l.cut), (&b"end"[..], 3, false));
        line.clear();
        assert_eq!(next_line(&mut r, &mut line, 8, 1000).unwrap().read, 0);
    }

    #[test]
    fn a_line_without_end_is_read_only_within_the_budget() {
        let mut line = Vec::new();
        let l = next_line(&mut BufReader::new(Endless(b"x", 0)), &mut line, 8, 100_000).unwrap();
        assert_eq!((line.len(), l.read, l.cut), (8, 100_000, true));
    }

    /// A peer writing without end: the lines passed on are bounded, and
    /// the stream is left once the total is read, with a line saying so.
    fn endless(pattern: &'static [u8]) -> (Vec<String>, VecDeque<String>) {
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (send, lines) = mpsc::sync_channel(QUEUED);
        let limits = Limits {
            line: 16,
            total: 10_000,
        };
        let t = Arc::clone(&tail);
        let th =
            std::thread::spawn(move || read_lines(Endless(pattern, 0), &t, Some(&send), limits));
        // The sender is gone once the reader stopped.
        let got: Vec<String> = lines.iter().collect();
        th.join().unwrap();
        let tail = tail.lock().unwrap().clone();
        (got, tail)
    }

    #[test]
    fn endless_output_without_newlines_is_read_up_to_the_total() {
        let (got, tail) = endless(b"y");
        assert_eq!(got, vec![format!("{} [cut]", "y".repeat(16))]);
        assert_eq!(
            tail.back().map(String::as_str),
            Some("[no more of this output read: past 10000 bytes]")
        );
    }

    #[test]
    fn lines_past_the_queue_are_dropped_not_waited_for() {
        let tail = Mutex::new(VecDeque::new());
        let (send, lines) = mpsc::sync_channel(2);
        let limits = Limits {
            line: 16,
            total: 1000,
        };
        read_lines(&b"a\nb\nc\nd\n"[..], &tail, Some(&send), limits);
        drop(send);
        assert_eq!(lines.iter().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(tail.lock().unwrap().back().map(String::as_str), Some("d"));
    }

    #[test]
    fn endless_lines_are_read_up_to_the_total() {
        let (got, tail) = endless(b"0123456789abcdefghij\n");
        // 21 bytes a line: 476 whole lines in 10,000 bytes, and a part.
        assert_eq!(got.len(), 477);
        assert!(got.iter().all(|l| l.len() <= 16 + " [cut]".len()));
        assert_eq!(got[0], "0123456789abcdef [cut]");
        assert!(tail.len() <= KEPT);
        assert!(tail.back().unwrap().starts_with("[no more"));
    }
}
