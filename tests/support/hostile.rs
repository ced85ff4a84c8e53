//! Helpers of the attack tests: scratch trees and their snapshots, child
//! processes whose report lines and stderr are read with deadlines, the
//! unprivileged identity attackers run as, and the hugepage pool.

use crate::built_binary;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The unprivileged uid and gid attackers run as (`nobody`).
pub const NOBODY: u32 = 65534;

/// The `vecring` tool.
pub fn tool() -> Command {
    Command::new(built_binary("vecring"))
}

/// The attacker (`tests/attacker/main.rs`) in `role`.
pub fn attacker(role: &str) -> Command {
    let mut c = Command::new(built_binary("vecring-attack"));
    c.arg(role);
    c
}

/// Makes `cmd` run as uid and gid [`NOBODY`] with no supplementary groups.
pub fn as_nobody(cmd: &mut Command) -> &mut Command {
    as_uid(cmd, NOBODY)
}

/// Makes `cmd` run as uid and gid `uid` with no supplementary groups.
pub fn as_uid(cmd: &mut Command, uid: u32) -> &mut Command {
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (setgroups, setgid, setuid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setgroups(0, core::ptr::null()) != 0
                || libc::setgid(uid) != 0
                || libc::setuid(uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// A fresh directory `/tmp/vecring-attack-<pid>-<name>`, root's, 0755.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-attack-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir(&d).unwrap();
    set_mode(&d, 0o755);
    d
}

/// `mkdir` with exactly `mode` (no umask).
pub fn mkdir(path: &Path, mode: u32) {
    std::fs::create_dir(path).unwrap();
    set_mode(path, mode);
}

/// chmod, not following a symlink's target is not needed here: the
/// tests only call it on what they created.
pub fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// chown of an entry the test created.
pub fn set_owner(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid)).unwrap();
}

/// What a snapshot records of one entry (never following a symlink).
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    /// `dir`, `file`, `socket`, `symlink -> target`, ...
    pub kind: String,
    /// Permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size (files) or 0.
    pub size: u64,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:04o} {}:{} {}B",
            self.kind, self.mode, self.uid, self.gid, self.size
        )
    }
}

/// Every entry under a directory, by path, from `lstat`.
pub type Snapshot = BTreeMap<PathBuf, Entry>;

/// Snapshots `root` and everything under it without following symlinks.
pub fn snapshot(root: &Path) -> Snapshot {
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

fn walk(path: &Path, out: &mut Snapshot) {
    let Ok(md) = std::fs::symlink_metadata(path) else {
        return;
    };
    let ft = md.file_type();
    use std::os::unix::fs::FileTypeExt;
    let kind = if ft.is_symlink() {
        format!(
            "symlink -> {}",
            std::fs::read_link(path).unwrap_or_default().display()
        )
    } else if ft.is_dir() {
        "dir".into()
    } else if ft.is_socket() {
        "socket".into()
    } else if ft.is_file() {
        "file".into()
    } else {
        "other".into()
    };
    out.insert(
        path.to_path_buf(),
        Entry {
            kind,
            mode: md.mode() & 0o7777,
            uid: md.uid(),
            gid: md.gid(),
            size: if ft.is_file() { md.size() } else { 0 },
        },
    );
    if ft.is_dir() {
        let mut names: Vec<_> = std::fs::read_dir(path)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        names.sort();
        for n in names {
            walk(&n, out);
        }
    }
}

/// Differences between two snapshots, one line each; entries under
/// `ignore` (a path prefix) are left out.
pub fn diff(before: &Snapshot, after: &Snapshot, ignore: Option<&Path>) -> Vec<String> {
    let skip = |p: &Path| ignore.is_some_and(|i| p.starts_with(i));
    let mut out = Vec::new();
    for (p, b) in before {
        if skip(p) {
            continue;
        }
        match after.get(p) {
            None => out.push(format!("{} was removed (was {b:?})", p.display())),
            Some(a) if a != b => out.push(format!("{} changed: {b:?} -> {a:?}", p.display())),
            Some(_) => {}
        }
    }
    for (p, a) in after {
        if !skip(p) && !before.contains_key(p) {
            out.push(format!("{} was created: {a:?}", p.display()));
        }
    }
    out
}

/// A child process whose stdout lines and stderr are collected by
/// threads; killed (SIGKILL) and reaped when dropped.
pub struct Proc {
    name: String,
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
    stderr_done: Option<std::thread::JoinHandle<()>>,
    status: Option<ExitStatus>,
}

impl Proc {
    /// Starts `cmd` with piped stdin, stdout and stderr.
    pub fn spawn(name: &str, cmd: &mut Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let err = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        let stderr_done = std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Proc {
            name: name.to_string(),
            child,
            lines,
            seen: Vec::new(),
            stderr,
            stderr_done: Some(stderr_done),
            status: None,
        }
    }

    /// The next stdout line starting with `prefix` within `timeout`
    /// (other lines are kept for [`Proc::output`]).
    pub fn line(&mut self, prefix: &str, timeout: Duration) -> Result<String, String> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.starts_with(prefix) {
                        return Ok(l);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no '{prefix}' line within {timeout:?}: {}",
                        self.output()
                    ))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = self.wait(Duration::from_secs(1));
                    return Err(format!(
                        "exited without a '{prefix}' line: {}",
                        self.output()
                    ));
                }
            }
        }
    }

    /// Whether stdout has shown a line starting with `prefix` so far.
    pub fn said(&mut self, prefix: &str) -> bool {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
        self.seen.iter().any(|l| l.starts_with(prefix))
    }

    /// Waits at most `timeout` for the process to exit.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.status {
                return Some(s);
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                self.status = Some(s);
                if let Some(t) = self.stderr_done.take() {
                    let _ = t.join();
                }
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        self.wait(Duration::ZERO).is_none()
    }

    /// Closes its stdin (the attacker's and rxonly's signal to finish).
    pub fn close_stdin(&mut self) {
        drop(self.child.stdin.take());
    }

    /// Writes a line to its stdin.
    pub fn say(&mut self, line: &str) {
        if let Some(s) = self.child.stdin.as_mut() {
            let _ = writeln!(s, "{line}");
        }
    }

    /// Sends `sig` to the process.
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: signalling our own child by pid; it is not reaped before
        // `self` is dropped, so the pid is still its.
        unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
    }

    /// Waits at most `timeout` until its stderr (a log) has said `needle`
    /// `times` times.
    pub fn logged(&mut self, needle: &str, times: usize, timeout: Duration) -> Result<(), String> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if self.stderr().matches(needle).count() >= times {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "'{needle}' not logged {times} times within {timeout:?}: {}",
            self.output()
        ))
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Status, stdout lines and stderr, for failure messages.
    pub fn output(&mut self) -> String {
        let _ = self.said("");
        let status = match self.status {
            Some(s) => describe(s),
            None => "running".into(),
        };
        format!(
            "[{}: {status}; stdout: {:?}; stderr: {:?}]",
            self.name,
            self.seen,
            self.stderr()
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// "exit 1" or "killed by signal 7 (SIGBUS)".
pub fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(libc::SIGBUS)) => "killed by signal 7 (SIGBUS)".into(),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => format!("{s}"),
    }
}

/// The value of `key=` in a report line.
pub fn field<'l>(line: &'l str, key: &str) -> Option<&'l str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

/// [`field`] as a number; panics naming the line if absent.
pub fn num(line: &str, key: &str) -> u64 {
    field(line, key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {key}= in '{line}'"))
}

/// Waits until `path` exists (as anything, even a dangling symlink).
pub fn wait_for_path(path: &Path, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if std::fs::symlink_metadata(path).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// `HugePages_Free` from /proc/meminfo.
pub fn hugepages_free() -> u64 {
    meminfo("HugePages_Free:")
}

fn meminfo(key: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

const NR_HUGEPAGES: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";

/// Makes sure `pages` 2 MiB pages are free, reserving more as root if
/// needed; Err says why that is impossible.
pub fn ensure_free_hugepages(pages: u64) -> Result<(), String> {
    let free = hugepages_free();
    if free >= pages {
        return Ok(());
    }
    let total = meminfo("HugePages_Total:");
    let want = total + (pages - free);
    let _ = std::fs::write(NR_HUGEPAGES, want.to_string());
    let free = hugepages_free();
    if free >= pages {
        Ok(())
    } else {
        Err(format!(
            "{pages} free 2 MiB hugepages needed, {free} free after asking {NR_HUGEPAGES} for {want}"
        ))
    }
}

/// Reads what the muted-doorbell planter (`plant where=doorbell
/// then=frames`) says, in order (`up`, `rang`, `planted`, `sent`), and
/// checks that the attack took the kernel path asked for: the descriptor
/// reached `victim` on the fallback (`VECRING_NO_PASSRIGHTS=1`), or the
/// kernel refused it with EPERM where it can; and that frames were
/// published. `context` is added to a panic (the victim's output).
/// Returns the frames published and the `planted` line.
pub fn muted_plant_steps(
    plant: &mut Proc,
    fallback: bool,
    victim: &str,
    context: &dyn Fn() -> String,
    failures: &mut Vec<String>,
) -> (u64, String) {
    let mut step = |prefix: &str| {
        plant
            .line(prefix, Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e}\n{}", context()))
    };
    step("up");
    step("rang");
    let planted = step("planted");
    let sent = num(&step("sent"), "frames");
    if fallback {
        if !planted.contains("planted ok") {
            failures.push(format!(
                "the descriptor should have reached the {victim}: {planted}"
            ));
        }
    } else if vecring_core::internal::closer::rights_refusable()
        && !planted.contains("refused errno=EPERM")
    {
        failures.push(format!(
            "SO_PASSRIGHTS should have refused the descriptor: {planted}"
        ));
    }
    if sent == 0 {
        failures.push("the attacker published no frame".into());
    }
    (sent, planted)
}

/// A container as the kernel sees one: `unshare` holding a network and a
/// pid namespace (its child, `sleep`, is pid 1 there). Dropping it kills
/// the holder, and with it every process of the pid namespace.
pub struct Container {
    holder: Proc,
}

impl Container {
    pub fn start() -> Container {
        let mut holder = Proc::spawn(
            "container",
            Command::new("unshare").args([
                "--net",
                "--pid",
                "--fork",
                "--kill-child",
                "sh",
                "-c",
                "echo ready; exec sleep 600",
            ]),
        );
        holder
            .line("ready", Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{e}"));
        Container { holder }
    }

    /// Its network namespace, as the host names it.
    pub fn netns(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/ns/net", self.holder.pid()))
    }

    /// `args` run inside: its network and pid namespaces, optionally as
    /// `uid` (root otherwise).
    pub fn inside(&self, uid: Option<u32>, args: &[&str]) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={}", self.netns().display()))
            .arg(format!(
                "--pid=/proc/{}/ns/pid_for_children",
                self.holder.pid()
            ))
            .arg("--");
        if let Some(uid) = uid {
            c.args([
                "setpriv",
                &format!("--reuid={uid}"),
                &format!("--regid={uid}"),
                "--clear-groups",
                "--",
            ]);
        }
        c.args(args);
        c
    }

    /// The `vecring` tool's `rxonly` slave of link k8s/net1, run inside (as
    /// `uid`, behind the command `wrap`) and meeting its master in this
    /// namespace: `--netns self`, and a run directory that does not exist
    /// (nothing is mounted). `extra` ends its arguments.
    pub fn rxonly_slave(&self, uid: Option<u32>, wrap: &[&str], extra: &[&str]) -> Proc {
        let tool = built_binary("vecring").display().to_string();
        let mut args: Vec<&str> = wrap.to_vec();
        args.extend([
            tool.as_str(),
            "rxonly",
            "--domain",
            "k8s",
            "--link",
            "net1",
            "--netns",
            "self",
            "--run-dir",
            "/nonexistent/run",
        ]);
        args.extend(extra);
        Proc::spawn("slave", &mut self.inside(uid, &args))
    }
}
