//! The slave of `vecring-bench host-container`: `vecring-bench slave`,
//! which is the tool's `rxonly` (the same code, from vecring-cli's
//! library), started in its own namespaces (standing in for a container),
//! asked for its receive counts over its stdin and stdout. The harness runs
//! itself as the slave so that it needs no `vecring` beside it and always
//! measures the receive path it was built with.

use super::BenchArgs;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use vecring_cli::cpus;
use vecring_core::Sender;

/// The slave process, its counts asked for on `stdin`, answered on
/// `stdout`.
pub struct Slave {
    /// The process, waited for when the bench ends.
    pub child: Child,
    /// Its stdin: a line asks for its counts; closing it ends the slave.
    pub stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Queue pairs of the link: the counts come per queue.
    queues: u16,
}

/// What the slave has received: frames per queue, in queue order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received(pub Vec<u64>);

impl Received {
    /// Frames received on all queues.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
}

impl Slave {
    /// Asks the slave for its receive counters: `rx <frames> <bytes>`,
    /// then `<frames> <bytes>` per queue on a link of several.
    fn counts(&mut self) -> Result<Received, String> {
        writeln!(self.stdin, "?").map_err(|e| format!("slave gone: {e}"))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("slave gone: {e}"))?;
        let bad = || format!("slave answered '{}'", line.trim());
        let mut it = line.split_whitespace();
        if it.next() != Some("rx") {
            return Err(bad());
        }
        let numbers = it
            .map(str::parse::<u64>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad())?;
        let queues = usize::from(self.queues);
        match numbers.as_slice() {
            [frames, _] if queues == 1 => Ok(Received(vec![*frames])),
            [frames, _, each @ ..] if queues > 1 && each.len() == 2 * queues => {
                let per_queue: Vec<u64> = each.iter().step_by(2).copied().collect();
                if per_queue.iter().sum::<u64>() == *frames {
                    Ok(Received(per_queue))
                } else {
                    Err(bad())
                }
            }
            _ => Err(bad()),
        }
    }

    /// Counters once the slave has taken every frame `txs` sent (the rings
    /// drained) and its counts stopped moving. A slave descheduled for a
    /// while on a busy machine only makes this wait longer; after 10 s the
    /// counts are taken as they are.
    pub fn settled(&mut self, txs: &mut [Sender]) -> Result<Received, String> {
        let give_up = Instant::now() + Duration::from_secs(10);
        let mut last = self.counts()?;
        loop {
            std::thread::sleep(Duration::from_millis(10));
            let now = self.counts()?;
            let drained = txs.iter_mut().all(|tx| tx.unread() == 0);
            if (now == last && drained) || Instant::now() > give_up {
                return Ok(now);
            }
            last = now;
        }
    }
}

/// Starts the slave (`vecring-bench slave` on link `DOMAIN/LINK` of
/// `run_dir`, its `queues` queues' threads on `--slave-cpu`), in new
/// namespaces when run as root with `unshare` at hand; returns it and where
/// it runs.
pub fn spawn(
    args: &BenchArgs,
    queues: u16,
    run_dir: &std::path::Path,
) -> Result<(Slave, &'static str), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut slave_args: Vec<String> = vec![
        "slave".into(),
        "--role=slave".into(),
        format!("--domain={}", super::DOMAIN),
        format!("--link={}", super::LINK),
        format!("--run-dir={}", run_dir.display()),
        format!("--queues={queues}"),
        format!("--cpu={}", cpus::list(&args.slave_cpu)),
    ];
    if args.hold_back {
        slave_args.push("--hold-back".into());
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let unshare = ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let (mut cmd, where_) = match (args.no_namespaces, root, unshare) {
        (false, true, Some(unshare)) => {
            let mut c = Command::new(unshare);
            c.args([
                "--mount", "--uts", "--ipc", "--net", "--pid", "--fork", "--",
            ])
            .arg(&exe);
            (c, "own mount/uts/ipc/net/pid namespaces")
        }
        _ => (Command::new(&exe), "same namespaces"),
    };
    cmd.args(slave_args.drain(..))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start the slave: {e}"))?;
    let stdin = child.stdin.take().ok_or("no slave stdin")?;
    let stdout = BufReader::new(child.stdout.take().ok_or("no slave stdout")?);
    Ok((
        Slave {
            child,
            stdin,
            stdout,
            queues,
        },
        where_,
    ))
}
