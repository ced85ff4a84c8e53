//! Docker and Podman for the tests, on a scratch directory of their own: a
//! private `dockerd` (its own data root, exec root, pid file and socket, no
//! bridge, no iptables) or a Podman store and configuration, an image of
//! the `vecring` tool's `ldd` closure (plus `sleep` as the container's
//! first process), and a guard that removes the containers, stops the
//! daemon and removes everything it made, also when the test fails.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Debian's docker client (`/usr/local/bin/docker` may be another).
pub const DOCKER: &str = "/usr/bin/docker";
const DOCKERD: &str = "/usr/sbin/dockerd";

/// Runs `cmd`, killed (and the test failed) after `limit`; its output.
pub fn bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    // Read as it runs: a full pipe must not stall the command.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|o| Box::new(o) as _));
    let err = drain(child.stderr.take().map(|o| Box::new(o) as _));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?}: still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// `out` shown for an assertion message.
pub fn show(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `bash -c script` (bounded), which must succeed; its stdout.
pub fn sh(script: &str, envs: &[(&str, &str)]) -> String {
    let out = bounded(
        Command::new("bash")
            .arg("-c")
            .arg(script)
            .envs(envs.iter().copied()),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "{script}: {}", show(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scratch directory under the temporary directory, mode 0755 (the
/// container's users reach the run directory in it).
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A root file system at `root` with `tool` and `/bin/sleep` and the
/// libraries they load (their `ldd` closure and the dynamic loader), and,
/// with `dpdk`, an (empty) `librte_eal` that makes it a DPDK image to
/// doctor.
pub fn rootfs(root: &Path, tool: &str, dpdk: bool) {
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::copy(tool, root.join("bin/vecring")).unwrap();
    std::fs::copy("/bin/sleep", root.join("bin/sleep")).unwrap();
    sh(
        &format!(
            "cd {} && cp --parents -L $(ldd bin/* | awk '/=> \\// {{ print $3 }} /^\\t\\// {{ print $1 }}' | sort -u) .",
            root.display()
        ),
        &[],
    );
    if dpdk {
        let lib = root.join("usr/lib/x86_64-linux-gnu");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("librte_eal.so.23"), "").unwrap();
    }
}

/// Mount points under `dir` (deepest first), from /proc/mounts.
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let mut m: Vec<PathBuf> = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(1))
        .map(|p| PathBuf::from(p.replace("\\040", " ")))
        .filter(|p| p.starts_with(dir))
        .collect();
    m.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    m
}

/// Unmounts what is mounted under `dir` and removes it.
pub fn remove_tree(dir: &Path) {
    for m in mounts_under(dir) {
        let _ = Command::new("umount").arg("-l").arg(&m).status();
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Processes whose command line names `dir` (the daemon's helpers:
/// containerd, shims): each of them was started for this scratch
/// directory.
fn processes_naming(dir: &Path) -> Vec<i32> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}

/// Host directories `dockerd` makes outside its own roots, which it
/// leaves behind: removed after, when this test made them (and they are
/// empty but for what dockerd put there).
const DOCKER_LEFTOVERS: &[&str] = &[
    "/run/containerd/s",
    "/run/containerd",
    "/run/docker/plugins",
    "/run/docker",
];

/// A private `dockerd` on a scratch directory; stopped and removed, with
/// its containers, when dropped.
pub struct Dockerd {
    pub dir: PathBuf,
    /// `unix://<dir>/docker.sock`, for DOCKER_HOST.
    pub host: String,
    child: Option<Child>,
    made_key: bool,
    made: Vec<&'static str>,
}

impl Dockerd {
    /// Starts one with `extra` options; the first storage driver that works
    /// of overlay2 and vfs. None when dockerd is not installed.
    pub fn start(name: &str, extra: &[&str]) -> Option<Dockerd> {
        if !Path::new(DOCKERD).exists() || !Path::new(DOCKER).exists() {
            return None;
        }
        let dir = scratch(name);
        let made: Vec<&'static str> = DOCKER_LEFTOVERS
            .iter()
            .copied()
            .filter(|d| !Path::new(d).exists())
            .collect();
        let made_key = !Path::new("/etc/docker/key.json").exists();
        let mut d = Dockerd {
            host: format!("unix://{}/docker.sock", dir.display()),
            dir,
            child: None,
            made_key,
            made,
        };
        for driver in ["overlay2", "vfs"] {
            let log = std::fs::File::create(d.dir.join(format!("dockerd-{driver}.log"))).unwrap();
            let child = Command::new(DOCKERD)
                .arg("--data-root")
                .arg(d.dir.join("data"))
                .arg("--exec-root")
                .arg(d.dir.join("exec"))
                .arg("--pidfile")
                .arg(d.dir.join("dockerd.pid"))
                .arg("-H")
                .arg(&d.host)
                .args(["--bridge=none", "--iptables=false", "--ip6tables=false"])
                .args(["--storage-driver", driver])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .expect("start dockerd");
            d.child = Some(child);
            if d.wait_ready() {
                return Some(d);
            }
            d.stop();
        }
        panic!(
            "dockerd started with neither overlay2 nor vfs: see {}",
            d.dir.display()
        );
    }

    fn wait_ready(&mut self) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                return false;
            }
            let ok = bounded(
                Command::new(DOCKER)
                    .args(["info"])
                    .env("DOCKER_HOST", &self.host),
                Duration::from_secs(20),
            );
            if ok.status.success() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    }

    /// `docker ARGS` against this daemon (bounded).
    pub fn docker(&self, args: &[&str]) -> Output {
        bounded(
            Command::new(DOCKER)
                .args(args)
                .env("DOCKER_HOST", &self.host),
            Duration::from_secs(120),
        )
    }

    /// `bash -c script` with DOCKER_HOST set to this daemon; must succeed.
    pub fn sh(&self, script: &str) -> String {
        sh(script, &[("DOCKER_HOST", &self.host)])
    }

    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let ids = self.docker(&["ps", "-aq"]);
        for id in String::from_utf8_lossy(&ids.stdout).split_whitespace() {
            let _ = self.docker(&["rm", "-f", id]);
        }
        // SAFETY: SIGTERM to the daemon this guard started (not reaped).
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        for pid in processes_naming(&self.dir) {
            // SAFETY: a helper process started for this scratch directory.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        self.stop();
        remove_tree(&self.dir);
        if self.made_key {
            let _ = std::fs::remove_file("/etc/docker/key.json");
            let _ = std::fs::remove_dir("/etc/docker");
        }
        // Only when empty: another daemon may use them meanwhile. A shim
        // removes its socket in /run/containerd/s just after it ends: a
        // few tries.
        for _ in 0..30 {
            self.made
                .retain(|d| std::fs::remove_dir(d).is_err() && Path::new(d).exists());
            if self.made.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A system user with subordinate ids, made for one test and removed
/// (with its ranges) when dropped.
pub struct TempUser {
    pub name: String,
    range: String,
}

impl TempUser {
    /// `name` with the 65536 subordinate uids and gids from `first`.
    pub fn new(name: &str, first: u32) -> TempUser {
        let range = format!("{first}-{}", first + 65535);
        let _ = bounded(Command::new("userdel").arg(name), Duration::from_secs(20));
        let out = bounded(
            Command::new("useradd")
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                ])
                .arg(name),
            Duration::from_secs(20),
        );
        assert!(out.status.success(), "useradd {name}: {}", show(&out));
        let user = TempUser {
            name: name.to_string(),
            range,
        };
        let out = bounded(
            Command::new("usermod")
                .args(["--add-subuids", &user.range, "--add-subgids", &user.range])
                .arg(name),
            Duration::from_secs(20),
        );
        assert!(out.status.success(), "usermod {name}: {}", show(&out));
        user
    }
}

impl Drop for TempUser {
    fn drop(&mut self) {
        let _ = bounded(
            Command::new("usermod")
                .args(["--del-subuids", &self.range, "--del-subgids", &self.range])
                .arg(&self.name),
            Duration::from_secs(20),
        );
        let _ = bounded(
            Command::new("userdel").arg(&self.name),
            Duration::from_secs(20),
        );
    }
}

/// What rootful Podman writes outside the store its configuration names
/// (the blob-info cache of `podman import`): removed after when this test
/// made it, directories only when empty.
const PODMAN_LEFTOVERS: &[&str] = &[
    "/var/lib/containers/cache/blob-info-cache-v1.boltdb",
    "/var/lib/containers/cache",
    "/var/lib/containers",
];

/// Podman on a scratch store and configuration of its own
/// (CONTAINERS_STORAGE_CONF, CONTAINERS_CONF: cgroupfs, file events, runc,
/// ulimits the test's own); its containers, images and files removed when
/// dropped.
pub struct Podman {
    pub dir: PathBuf,
    pub envs: Vec<(String, String)>,
    made: Vec<&'static str>,
}

impl Podman {
    /// None when podman is not installed.
    pub fn new(name: &str) -> Option<Podman> {
        if !Path::new("/usr/bin/podman").exists() {
            return None;
        }
        let dir = scratch(name);
        let made = PODMAN_LEFTOVERS
            .iter()
            .copied()
            .filter(|p| !Path::new(p).exists())
            .collect();
        let d = dir.display();
        std::fs::write(
            dir.join("storage.conf"),
            format!("[storage]\ndriver = \"overlay\"\ngraphroot = \"{d}/root\"\nrunroot = \"{d}/runroot\"\n"),
        )
        .unwrap();
        // runc: crun refuses this host's hybrid cgroup layout. The
        // ulimits: rootful Podman's defaults exceed what a process
        // without CAP_SYS_RESOURCE may set.
        std::fs::write(
            dir.join("containers.conf"),
            format!(
                "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=4096:4096\"]\n\
                 [engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n\
                 events_logfile_path = \"{d}/events.log\"\nruntime = \"runc\"\n\
                 tmp_dir = \"{d}/tmp\"\nvolume_path = \"{d}/volumes\"\nstatic_dir = \"{d}/libpod\"\n"
            ),
        )
        .unwrap();
        let envs = vec![
            (
                "CONTAINERS_STORAGE_CONF".to_string(),
                dir.join("storage.conf").display().to_string(),
            ),
            (
                "CONTAINERS_CONF".to_string(),
                dir.join("containers.conf").display().to_string(),
            ),
        ];
        Some(Podman { dir, envs, made })
    }

    /// `bash -c script` with this Podman's configuration; must succeed.
    pub fn sh(&self, script: &str) -> String {
        let envs: Vec<(&str, &str)> = self
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        sh(script, &envs)
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let envs = self.envs.clone();
        for args in [&["rm", "-a", "-f", "-t", "0"][..], &["rmi", "-a", "-f"][..]] {
            let _ = bounded(
                Command::new("podman").args(args).envs(envs.iter().cloned()),
                Duration::from_secs(60),
            );
        }
        for pid in processes_naming(&self.dir) {
            // SAFETY: a helper process (conmon) started for this store.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        remove_tree(&self.dir);
        for p in &self.made {
            let p = Path::new(p);
            let _ = if p.is_dir() {
                std::fs::remove_dir(p)
            } else {
                std::fs::remove_file(p)
            };
        }
    }
}

impl TempUser {
    /// Its uid and primary gid.
    pub fn ids(&self) -> (u32, u32) {
        let id = |flag: &str| -> u32 {
            let out = bounded(
                Command::new("id").args([flag, &self.name]),
                Duration::from_secs(10),
            );
            String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
        };
        (id("-u"), id("-g"))
    }
}

/// Rootless Podman as a user the test makes (with subordinate ids), on a
/// home and runtime directory of its own under a scratch directory; its
/// containers, processes, files and the user removed when dropped.
pub struct RootlessPodman {
    pub dir: PathBuf,
    envs: Vec<String>,
    // Dropped last: the user goes once nothing of it runs.
    pub user: TempUser,
}

impl RootlessPodman {
    /// None when podman is not installed.
    pub fn new(name: &str, user: &str, first: u32) -> Option<RootlessPodman> {
        if !Path::new("/usr/bin/podman").exists() {
            return None;
        }
        let user = TempUser::new(user, first);
        let dir = scratch(name);
        let (home, xdg) = (dir.join("home"), dir.join("xdg"));
        for d in [&home, &xdg] {
            std::fs::create_dir(d).unwrap();
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        sh(
            &format!(
                "chown {0}: {1} {2}",
                user.name,
                home.display(),
                xdg.display()
            ),
            &[],
        );
        let d = dir.display();
        std::fs::write(
            dir.join("storage.conf"),
            format!("[storage]\ndriver = \"overlay\"\nrunroot = \"{d}/xdg/runroot\"\nrootless_storage_path = \"{d}/home/storage\"\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("containers.conf"),
            "[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\nruntime = \"runc\"\n",
        )
        .unwrap();
        let envs = vec![
            format!("HOME={d}/home"),
            format!("XDG_RUNTIME_DIR={d}/xdg"),
            format!("CONTAINERS_CONF={d}/containers.conf"),
            format!("CONTAINERS_STORAGE_CONF={d}/storage.conf"),
        ];
        Some(RootlessPodman { dir, envs, user })
    }

    /// `bash -c script` as the user, with this Podman's environment.
    pub fn output(&self, script: &str) -> Output {
        bounded(
            Command::new("runuser")
                .args(["-u", &self.user.name, "--", "env"])
                .args(&self.envs)
                .args(["bash", "-c", script])
                .current_dir(&self.dir),
            Duration::from_secs(120),
        )
    }

    /// [`RootlessPodman::output`], which must succeed; its stdout.
    pub fn sh(&self, script: &str) -> String {
        let out = self.output(script);
        assert!(out.status.success(), "{script}: {}", show(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for RootlessPodman {
    fn drop(&mut self) {
        let _ = bounded(
            Command::new("runuser")
                .args(["-u", &self.user.name, "--", "env"])
                .args(&self.envs)
                .args(["podman", "rm", "-a", "-f", "-t", "0"])
                .current_dir(&self.dir),
            Duration::from_secs(60),
        );
        // Its pause process and conmons: every process of the user, which
        // exists for this test only.
        let (uid, _) = self.user.ids();
        let mine = |pid: &i32| {
            std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|v| v.split_whitespace().next())
                    .map(str::to_string)
                    == Some(uid.to_string())
            })
        };
        let pids: Vec<i32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .filter(mine)
            .collect();
        for pid in pids {
            // SAFETY: a process of the user this test made.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(200));
        remove_tree(&self.dir);
    }
}
