//! The CRIU plugin (`vecring-criu`), loaded the way CRIU loads it
//! (`dlopen`, its `CR_PLUGIN_DESC`) and driven through its hooks against
//! real processes: `PAUSE_DEVICES` on a slave's tree pauses the link at
//! its master, and the process then holds nothing of it (no region
//! mapped or open, no doorbell); the end of the dump lets the slave attach
//! again. A master that is part of the dumped tree is never asked, and
//! for a link in the container's network namespace, look-alike host
//! sockets another user binds cannot stand in for the master's.
//! (`tests/containers/podman/criu.sh` checkpoints and restores real
//! containers with it.)

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vecring_tests::hostile::{mkdir, scratch, set_owner, tool, wait_for_path, Container, Proc};
use vecring_tests::{built_binary, Watchdog};

const LIMIT: Duration = Duration::from_secs(120);
const PROMPT: Duration = Duration::from_secs(30);
const HOOK_PAUSE_DEVICES: usize = 10;
const STAGE_DUMP: c_int = 0;

/// CRIU's `cr_plugin_desc_t`, as far as this plugin fills it.
#[repr(C)]
struct PluginDesc {
    name: *const c_char,
    init: Option<extern "C" fn(c_int) -> c_int>,
    exit: Option<extern "C" fn(c_int, c_int)>,
    version: c_uint,
    max_hooks: c_uint,
    hooks: [*const c_void; 11],
}

/// The plugin, loaded once per test process.
fn plugin() -> &'static PluginDesc {
    static DESC: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let addr = *DESC.get_or_init(|| {
        let path = built_binary("libvecring_criu.so");
        let c = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: dlopen of a path; the handle is kept for the process.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW) };
        assert!(!h.is_null(), "cannot load {}", path.display());
        // SAFETY: dlsym with a NUL-terminated name on a live handle.
        let d = unsafe { libc::dlsym(h, c"CR_PLUGIN_DESC".as_ptr()) };
        assert!(!d.is_null(), "no CR_PLUGIN_DESC in {}", path.display());
        d as usize
    });
    // SAFETY: the descriptor is a static of the loaded plugin, never
    // unloaded, laid out as `PluginDesc`.
    unsafe { &*(addr as *const PluginDesc) }
}

fn pause_devices(pid: u32) -> c_int {
    let hook = plugin().hooks[HOOK_PAUSE_DEVICES];
    assert!(!hook.is_null(), "no PAUSE_DEVICES hook");
    // SAFETY: CRIU's `int (*)(int pid)` for this hook.
    let f: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(hook) };
    f(pid as c_int)
}

fn end_of_dump() {
    (plugin().exit.expect("an exit function"))(STAGE_DUMP, 0);
}

struct Setup {
    root: PathBuf,
    run: PathBuf,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let root = scratch(name);
        let run = root.join("run");
        mkdir(&run, 0o755);
        Setup { root, run }
    }

    fn args(&self, mode: &str, role: &str) -> Vec<String> {
        let mut v: Vec<String> = [mode, "--role", role, "--domain", "dom", "--link", "l0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(["--run-dir".into(), self.run.display().to_string()]);
        v.extend(["--up-timeout".into(), "60".into()]);
        if mode == "txonly" {
            v.extend(["--seconds".into(), "60".into()]);
        } else {
            v.extend(["--interval".into(), "0".into()]);
        }
        v
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What of a link process `pid` holds: region descriptors or mappings,
/// and sockets.
fn holds(pid: u32) -> (usize, usize) {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut region = maps.lines().filter(|l| l.contains("memfd:vecring")).count();
    let mut sockets = 0;
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        let l = std::fs::read_link(e.path()).unwrap_or_default();
        let l = l.to_string_lossy();
        region += usize::from(l.contains("memfd:vecring"));
        sockets += usize::from(l.starts_with("socket:"));
    }
    (region, sockets)
}

#[test]
fn the_plugin_pauses_a_slave_before_the_freeze_and_lets_it_back_after() {
    let _w = Watchdog::alone("criu plugin pause", LIMIT);
    let desc = plugin();
    // SAFETY: a NUL-terminated static string of the plugin.
    let name = unsafe { std::ffi::CStr::from_ptr(desc.name) };
    assert_eq!(name.to_str(), Ok("vecring"));
    assert_eq!((desc.version, desc.max_hooks), (2 << 8, 11));
    assert_eq!((desc.init.expect("init"))(STAGE_DUMP), 0);

    let s = Setup::new("criu-plugin");
    let mut master = Proc::spawn("master", tool().args(s.args("txonly", "master")));
    assert!(wait_for_path(&s.run.join("dom/l0.sock"), PROMPT));
    let mut slave = Proc::spawn("slave", tool().args(s.args("rxonly", "slave")));
    master.logged("slave attached", 1, PROMPT).unwrap();
    assert_ne!(holds(slave.pid()).0, 0, "the attached slave maps no region");

    assert_eq!(pause_devices(slave.pid()), -libc::ENOTSUP);
    master.logged("asked to detach", 1, PROMPT).unwrap();
    // What CRIU would now freeze: nothing of the link but, at most, the
    // next request's connection (its peer is the master's).
    // The old connection is shut down at once but closed by a closer
    // thread, a moment later.
    let settled = Instant::now() + Duration::from_secs(2);
    let (region, sockets) = loop {
        let (region, sockets) = holds(slave.pid());
        if sockets <= 1 || Instant::now() >= settled {
            break (region, sockets);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(region, 0, "the paused slave still holds its region");
    assert!(sockets <= 1, "the paused slave holds {sockets} sockets");
    // Held off while paused (the slave's own lines: the master's
    // "attached" lines are rate-limited).
    let ups = slave.stderr().matches("rxonly: link up").count();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(slave.stderr().matches("rxonly: link up").count(), ups);

    end_of_dump();
    master
        .logged("ended; serving requests again", 1, PROMPT)
        .unwrap();
    slave.logged("rxonly: link up", ups + 1, PROMPT).unwrap();
}

#[test]
fn a_master_in_the_dumped_tree_is_not_asked() {
    let _w = Watchdog::alone("criu plugin inside", LIMIT);
    let s = Setup::new("criu-inside");
    // The slave is the tree's root and the master its child: a link with
    // both ends in what is dumped.
    let script = format!(
        "{} {} & exec {} {}",
        built_binary("vecring").display(),
        s.args("txonly", "master").join(" "),
        built_binary("vecring").display(),
        s.args("rxonly", "slave").join(" ")
    );
    let mut both = Proc::spawn(
        "master and slave",
        std::process::Command::new("sh").args(["-c", &script]),
    );
    both.logged("slave attached", 1, PROMPT).unwrap();
    assert_eq!(pause_devices(both.pid()), -libc::ENOTSUP);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !both.stderr().contains("pause asked"),
        "the master in the tree was asked: {}",
        both.output()
    );
    assert_ne!(holds(both.pid()).0, 0, "the slave let go of its region");
    end_of_dump();
}

#[test]
fn look_alike_host_sockets_of_another_user_cannot_fail_a_netns_pause() {
    let _w = Watchdog::alone("criu plugin look-alikes", LIMIT);
    vecring_tests::require_root!();
    let s = Setup::new("criu-lookalike");
    let c = Container::start();
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(c.netns()).unwrap());
    let mut master = Proc::spawn(
        "master",
        tool()
            .args([
                "txonly", "--role", "master", "--domain", "k8s", "--link", "net1",
            ])
            .arg("--netns")
            .arg(c.netns())
            .arg("--run-dir")
            .arg(&s.run)
            .args(["--up-timeout", "60", "--seconds", "60"]),
    );
    let mut slave = c.rxonly_slave(None, &[], &["--up-timeout", "60", "--interval", "0"]);
    master.logged("slave attached", 1, PROMPT).unwrap();
    slave.logged("(slave): link up", 1, PROMPT).unwrap();
    // The tool's own lines: the link's are rate-limited.
    let ups = slave.stderr().matches("rxonly: link up").count();
    // `nobody`, on the host: 64 listeners named as the master's host
    // socket is, each in a directory called after the domain. They share
    // the host namespace's socket table with the master's.
    let evil = s.root.join("evil");
    mkdir(&evil, 0o755);
    set_owner(&evil, 65534, 65534);
    let script = format!(
        "use Socket; $| = 1; my @s; for my $i (1 .. 64) {{ \
         mkdir \"$ARGV[0]/$i\"; mkdir \"$ARGV[0]/$i/k8s\"; \
         socket(my $s, AF_UNIX, SOCK_SEQPACKET, 0) or die \"socket: $!\"; \
         bind($s, pack_sockaddr_un(\"$ARGV[0]/$i/k8s/net1\\@ns{ino}.sock\")) or die \"bind: $!\"; \
         listen($s, 64) or die \"listen: $!\"; push @s, $s }} \
         print \"ready\\n\"; sleep 100;"
    );
    let mut planted = Proc::spawn(
        "look-alikes",
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(["perl", "-e", &script])
            .arg(&evil),
    );
    planted
        .line("ready", PROMPT)
        .unwrap_or_else(|e| panic!("{e}: {}", planted.output()));
    let unix = std::fs::read_to_string("/proc/self/net/unix").unwrap();
    let named = format!("/k8s/net1@ns{ino}.sock");
    assert!(
        unix.lines().filter(|l| l.ends_with(&named)).count() >= 64,
        "the look-alikes are not in the table"
    );

    // The slave's tree (nsenter and its child) is paused at the master.
    assert_eq!(pause_devices(slave.pid()), -libc::ENOTSUP);
    master.logged("asked to detach", 1, PROMPT).unwrap();
    end_of_dump();
    master
        .logged("ended; serving requests again", 1, PROMPT)
        .unwrap();
    slave.logged("rxonly: link up", ups + 1, PROMPT).unwrap();
}
