//! A `dpdk-testpmd` (with the built `librte_net_vecring.so`) driven from a
//! test: where the PMD, testpmd and the memory options come from
//! ([`Env`]), an interactive testpmd session fed commands on stdin
//! ([`Testpmd`]), and the build of the small C DPDK programs of `tests/c/`
//! ([`build_dpdk_program`]). Used by the DPDK tests (`dpdk_interop`,
//! `dpdk_hostile`, `dpdk_intr`); they need root, so they are `#[ignore]`d
//! and run by `tests/dpdk/run.sh`.
//!
//! Env: `VECRING_PMD_SO` (default `target/release/librte_net_vecring.so`
//! beside the test executable; it must not lie under a world-writable
//! directory, or EAL refuses it), `TESTPMD` (default `dpdk-testpmd`),
//! `VECRING_TEST_NO_HUGE=1` (testpmd runs with `--no-huge -m 512
//! --no-shconf`; so it does when fewer than 512 hugepages are free).

use crate::{built_binary, check_frame, fill_frame, frame_len};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use vecring_core::{Link, LinkError, LinkRecvError, LinkSendError, PushError, Role};

/// testpmd's port MAC (devarg `mac`), the source of its txonly frames.
pub const PMD_MAC: [u8; 6] = [0x02, 0xec, 0xf4, 0x00, 0x00, 0x01];
/// Seconds one testpmd may live (the `timeout` watchdog around it).
pub const PMD_WATCHDOG: &str = "90";
/// Longest any wait for progress lasts.
pub const STALL: Duration = Duration::from_secs(20);

/// `m` as `xx:xx:xx:xx:xx:xx`.
pub fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The EAL `--file-prefix` of the testpmd session `name` of this process
/// (its runtime directory is `/var/run/dpdk/<prefix>`).
pub fn file_prefix(name: &str) -> String {
    format!("vrinterop_{name}_{}", std::process::id())
}

/// Where things are, from the environment.
#[derive(Debug, Clone)]
pub struct Env {
    /// The PMD, canonical path.
    pub so: PathBuf,
    /// The testpmd binary.
    pub testpmd: String,
    /// EAL memory options (hugepages or not).
    pub mem_args: Vec<String>,
    /// This test's directory: logs, built programs.
    pub work: PathBuf,
    /// The vecring run directory of this test's links.
    pub run: PathBuf,
}

impl Env {
    /// The environment of test `test` (a fresh work directory). Needs root.
    pub fn new(test: &str) -> Env {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(
            euid, 0,
            "DPDK tests need root (run tests/dpdk/run.sh as root)"
        );
        let so = match std::env::var_os("VECRING_PMD_SO") {
            Some(p) => PathBuf::from(p),
            None => built_binary("librte_net_vecring.so"),
        };
        let so = std::fs::canonicalize(&so)
            .unwrap_or_else(|e| panic!("PMD {}: {e} (build vecring-pmd)", so.display()));
        let free_huge = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("HugePages_Free:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0);
        let no_huge = std::env::var("VECRING_TEST_NO_HUGE").is_ok_and(|v| v == "1");
        // No files, in hugepages; without hugepages EAL refuses --in-memory
        // (--no-huge implies legacy memory), so --no-shconf instead.
        let mem_args: &[&str] = if no_huge || free_huge < 512 {
            &["--no-huge", "-m", "512", "--no-shconf"]
        } else {
            &["--in-memory"]
        };
        let mem_args = mem_args.iter().map(|a| a.to_string()).collect();
        let work =
            std::env::temp_dir().join(format!("vecring-interop-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let run = work.join("run");
        Env {
            so,
            testpmd: std::env::var("TESTPMD").unwrap_or_else(|_| "dpdk-testpmd".into()),
            mem_args,
            work,
            run,
        }
    }

    /// This environment with another DPDK line's testpmd and driver: the
    /// install at `prefix` (`scripts/dpdk.sh` prints one; `/usr` for the
    /// distribution's), its driver where `scripts/build-pmd.sh` put it.
    pub fn with_dpdk(&self, prefix: &std::path::Path) -> Env {
        let testpmd = prefix.join("bin/dpdk-testpmd");
        assert!(testpmd.is_file(), "no {}", testpmd.display());
        let so = ["lib", "lib/x86_64-linux-gnu"]
            .iter()
            .filter_map(|l| std::fs::read_dir(prefix.join(l).join("dpdk")).ok())
            .flatten()
            .filter_map(|e| Some(e.ok()?.path().join("librte_net_vecring.so")))
            .find(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "no librte_net_vecring.so in {}'s driver directory (scripts/build-pmd.sh {})",
                    prefix.display(),
                    prefix.display()
                )
            });
        Env {
            so: std::fs::canonicalize(so).unwrap(),
            testpmd: testpmd.display().to_string(),
            ..self.clone()
        }
    }

    /// The devargs of a port on link `interop/<link>` in this test's run dir.
    pub fn vdev(&self, link: &str, master: bool) -> String {
        format!(
            "domain=interop,link={link},run_dir={},master={master},mac={}",
            self.run.display(),
            mac_str(&PMD_MAC)
        )
    }

    /// The Rust end of link `interop/<link>`.
    pub fn open(&self, link: &str, role: Role) -> Link {
        Link::builder("interop", link)
            .role(role)
            .run_dir(&self.run)
            .open()
            .unwrap_or_else(|e| panic!("open interop/{link} as {role}: {e}"))
    }
}

/// Builds `tests/c/<name>.c` against DPDK (`pkg-config libdpdk`: the line
/// the driver under test was built for) into the test's work directory.
pub fn build_dpdk_program(env: &Env, name: &str) -> PathBuf {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("c")
        .join(format!("{name}.c"));
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "libdpdk"])
        .output()
        .expect("pkg-config");
    assert!(
        flags.status.success(),
        "pkg-config libdpdk: {}",
        String::from_utf8_lossy(&flags.stderr)
    );
    let mut flags = String::from_utf8(flags.stdout).unwrap();
    // A DPDK outside the loader's directories (another line, built into a
    // prefix of its own: `PKG_CONFIG_PATH` points at it): the program finds
    // its libraries there.
    let libdir = Command::new("pkg-config")
        .args(["--variable=libdir", "libdpdk"])
        .output()
        .expect("pkg-config");
    let libdir = String::from_utf8(libdir.stdout).unwrap();
    let libdir = libdir.trim();
    if !libdir.is_empty() && !libdir.starts_with("/usr/lib") {
        flags.push_str(&format!(" -Wl,-rpath,{libdir}"));
    }
    let exe = env.work.join(name);
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O2", "-g", "-Wall", "-Werror"])
        .arg(&src)
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("C compiler");
    assert!(
        out.status.success(),
        "compiling {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// An interactive `dpdk-testpmd` under a `timeout` watchdog, fed commands on
/// stdin, its output in `<work>/<name>.log`.
pub struct Testpmd {
    /// Names the log file and failure messages.
    pub name: String,
    /// The `timeout` process; testpmd is its child.
    pub child: Child,
    /// testpmd's command input, until `quit`.
    pub stdin: Option<ChildStdin>,
    /// Where testpmd's output goes.
    pub log: PathBuf,
}

impl Testpmd {
    /// Starts testpmd (interactive) on `cpu` with port `eth_vecring0,<vdev>`
    /// and the application arguments `app_args`.
    pub fn start(env: &Env, name: &str, cpu: usize, vdev: &str, app_args: &[&str]) -> Testpmd {
        Testpmd::start_ports(env, name, cpu, &[vdev], app_args)
    }

    /// As [`Testpmd::start`], with one port per entry of `vdevs`:
    /// `eth_vecring<i>,<vdevs[i]>`.
    pub fn start_ports(
        env: &Env,
        name: &str,
        cpu: usize,
        vdevs: &[&str],
        app_args: &[&str],
    ) -> Testpmd {
        let log = env.work.join(format!("{name}.log"));
        let out = File::create(&log).unwrap();
        let child = Command::new("timeout")
            .args(["--kill-after=5", PMD_WATCHDOG, "stdbuf", "-oL", "-eL"])
            .arg(&env.testpmd)
            .arg("-d")
            .arg(&env.so)
            .arg("--no-pci")
            .arg(format!("--file-prefix={}", file_prefix(name)))
            .arg(format!("--lcores=(0,1)@{cpu}"))
            .args(&env.mem_args)
            .args(
                vdevs
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("--vdev=eth_vecring{i},{v}")),
            )
            .args(["--", "-i", "--total-num-mbufs=8192"])
            .args(app_args)
            .stdin(Stdio::piped())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", env.testpmd));
        let mut t = Testpmd {
            name: name.into(),
            stdin: None,
            child,
            log,
        };
        t.stdin = t.child.stdin.take();
        t
    }

    /// The testpmd process's id: the only child of its `timeout` watchdog
    /// (`stdbuf` runs testpmd in its own place).
    pub fn pid(&self) -> u32 {
        let t = self.child.id();
        std::fs::read_to_string(format!("/proc/{t}/task/{t}/children"))
            .ok()
            .and_then(|c| c.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("{}: no testpmd process under {t}", self.name))
    }

    /// Everything testpmd printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The end of the log, for failure messages.
    pub fn tail(&self) -> String {
        let out = self.output();
        let lines: Vec<&str> = out.lines().collect();
        let from = lines.len().saturating_sub(40);
        format!(
            "--- {} ({}), last lines:\n{}",
            self.name,
            self.log.display(),
            lines[from..].join("\n")
        )
    }

    /// Lines of the output that satisfy `pred`.
    pub fn count(&self, pred: impl Fn(&str) -> bool) -> usize {
        self.output().lines().filter(|l| pred(l)).count()
    }

    /// Waits until `count` lines satisfy `pred`.
    pub fn wait_for(&self, what: &str, count: usize, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + STALL;
        while self.count(&pred) < count {
            assert!(
                Instant::now() < deadline,
                "timeout waiting for {what} x{count}\n{}",
                self.tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for testpmd's first prompt.
    pub fn wait_prompt(&self) {
        self.wait_for("testpmd prompt", 1, |l| l.contains("testpmd> "));
    }

    /// Sends one command line.
    pub fn cmd(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("testpmd stdin open");
        if let Err(e) = writeln!(stdin, "{line}").and_then(|()| stdin.flush()) {
            panic!("{}: command '{line}': {e}\n{}", self.name, self.tail());
        }
    }

    /// `stop`s forwarding; returns the port's (RX-dropped, TX-dropped) of
    /// the forwarding run.
    pub fn stop(&mut self) -> (u64, u64) {
        let done = |l: &str| l.trim_end() == "Done.";
        let before = self.count(done);
        self.cmd("stop");
        self.wait_for("Done.", before + 1, done);
        let out = self.output();
        let block = out
            .rsplit("Forward statistics for port 0")
            .next()
            .unwrap_or("");
        let field = |key: &str| -> u64 {
            block
                .split(key)
                .nth(1)
                .and_then(|s| s.split_whitespace().next()?.parse().ok())
                .unwrap_or_else(|| panic!("no '{key}' in forward statistics\n{}", self.tail()))
        };
        (field("RX-dropped:"), field("TX-dropped:"))
    }

    /// The port's current extended statistics.
    pub fn xstats(&mut self) -> HashMap<String, u64> {
        let last = |l: &str| l.starts_with("rejected_peers: ");
        let before = self.count(last);
        self.cmd("show port xstats 0");
        self.wait_for("xstats", before + 1, last);
        let out = self.output();
        let block = out
            .rsplit("NIC extended statistics for port 0")
            .next()
            .unwrap_or("");
        block
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(": ")?;
                Some((k.trim().to_string(), v.trim().parse().ok()?))
            })
            .collect()
    }

    /// Waits until `link` (the Rust end) is up; fails at once if testpmd
    /// exits first.
    pub fn wait_link_up(&mut self, link: &Link) {
        let deadline = Instant::now() + STALL;
        loop {
            match link.wait_up(Duration::from_millis(100)) {
                Ok(_) => return,
                Err(LinkError::Timeout(_)) => {}
                Err(e) => panic!("link: {e}\n{}", self.tail()),
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!(
                    "testpmd exited ({st}) before the link came up\n{}",
                    self.tail()
                );
            }
            assert!(
                Instant::now() < deadline,
                "link not up after {STALL:?}\n{}",
                self.tail()
            );
        }
    }

    /// Quits testpmd; returns its exit status.
    pub fn quit(mut self) -> ExitStatus {
        self.cmd("quit");
        self.stdin = None;
        let deadline = Instant::now() + STALL;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "testpmd did not quit\n{}",
                self.tail()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Testpmd {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // `timeout` passes SIGTERM on to testpmd and SIGKILLs it 5 s later
            // if it is still there.
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let _ = self.child.wait();
        }
    }
}

/// The length of frame `seq` of [`echo`]: every eighth a 9000-byte jumbo
/// frame, the others the mixed workload's (16..=9216 bytes, mostly up to
/// 1514).
pub fn echo_len(seq: u64) -> usize {
    if seq % 8 == 0 {
        9000
    } else {
        frame_len(seq)
    }
}

/// Frames [`echo`] keeps in flight at most: their slots (at most 144 per
/// frame with the default 64-byte slots) fit one ring, so a forwarding
/// testpmd never finds the return ring full and never drops.
pub const ECHO_WINDOW: u64 = 128;

/// Sends `frames` self-checking frames ([`echo_len`] bytes each) on `link`
/// to whatever sends them back, and checks that every one returns complete,
/// intact and in order, and nothing more; returns the bytes sent. `tail`
/// describes the far side for failure messages.
pub fn echo(link: &Link, frames: u64, tail: &dyn Fn() -> String) -> u64 {
    let mut tx = link.sender().unwrap();
    let mut rx = link.receiver().unwrap();
    let mut sbuf = vec![0u8; 9216];
    let mut rbuf = vec![0u8; 9216];
    let (mut sent, mut received, mut bytes) = (0u64, 0u64, 0u64);
    let mut progress = Instant::now();
    while received < frames {
        while sent < frames && sent - received < ECHO_WINDOW {
            let len = echo_len(sent);
            fill_frame(&mut sbuf[..len], sent);
            match tx.send(&sbuf[..len]) {
                Ok(()) => {
                    sent += 1;
                    bytes += len as u64;
                }
                Err(LinkSendError::Push(PushError::Full)) => break,
                Err(e) => panic!("send frame {sent}: {e}\n{}", tail()),
            }
        }
        match rx.recv(&mut rbuf) {
            Ok(n) => {
                let seq = check_frame(&rbuf[..n])
                    .unwrap_or_else(|e| panic!("returned frame {received}: {e}\n{}", tail()));
                assert_eq!(
                    (seq, n),
                    (received, echo_len(received)),
                    "returned frame {received}: got frame {seq} of {n} bytes\n{}",
                    tail()
                );
                received += 1;
                progress = Instant::now();
            }
            Err(LinkRecvError::Empty) => {
                assert!(
                    progress.elapsed() < STALL,
                    "no frame back for {STALL:?}: sent {sent}, received {received}\n{}",
                    tail()
                );
                std::hint::spin_loop();
            }
            Err(e) => panic!("receive after {received} frames: {e}\n{}", tail()),
        }
    }
    tx.flush_counters();
    rx.flush_counters();
    // Nothing more comes back.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        rx.recv(&mut rbuf),
        Err(LinkRecvError::Empty),
        "an extra frame came back\n{}",
        tail()
    );
    bytes
}

/// Extended statistic `key` of [`Testpmd::xstats`]; panics if missing.
pub fn stat(x: &HashMap<String, u64>, key: &str) -> u64 {
    *x.get(key)
        .unwrap_or_else(|| panic!("xstat '{key}' missing in {x:?}"))
}
