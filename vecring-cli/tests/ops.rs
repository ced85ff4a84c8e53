//! `vecring list` and `vecring stats` from a separate process: on an empty
//! run directory, on a live link (master and slave in processes of their
//! own), after the master died, and among entries planted by others.

use serde_json::Value;
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{Proc, Watchdog, TOOL};

fn run_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-ops-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// Runs `vecring ARGS` to completion (it must not hang: the watchdog
/// aborts otherwise); returns success and stdout.
fn tool(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(TOOL)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start vecring");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (child.wait().unwrap().success(), out)
}

fn list_json(run: &Path) -> Value {
    let (ok, out) = tool(&["list", "--json", "--run-dir", run.to_str().unwrap()]);
    assert!(ok, "list failed: {out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["schema"], "vecring-list");
    assert_eq!(v["version"], 1);
    v
}

fn spawn(args: &[&str]) -> Proc {
    Proc(
        Command::new(TOOL)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start vecring"),
    )
}

/// Polls `vecring list --json` until `pred` holds for the link's entry.
fn wait_for(run: &Path, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let v = list_json(run);
        if let Some(e) = v["links"].as_array().unwrap().iter().find(|e| pred(e)) {
            return e.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never {what}: {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the Perl `script` by `perl` (a command that runs perl, perhaps as
/// another user) with `dir` as its argument, once it has printed "ready"
/// (its listeners are bound).
fn perl_listeners(mut perl: Command, script: &str, dir: &Path) -> Proc {
    let mut p = Proc(
        perl.args(["-e", script])
            .arg(dir)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start perl"),
    );
    let mut ready = [0u8; 6];
    p.0.stdout.take().unwrap().read_exact(&mut ready).unwrap();
    assert_eq!(&ready, b"ready\n");
    p
}

#[test]
fn an_empty_run_directory_lists_nothing() {
    let _w = Watchdog::new("empty", Duration::from_secs(60));
    let run = run_dir("empty");
    let (ok, out) = tool(&["list", "--run-dir", run.to_str().unwrap()]);
    assert!(ok);
    assert!(out.contains("no links under"), "{out}");
    let v = list_json(&run);
    assert_eq!(v["links"], Value::Array(vec![]));
    assert_eq!(v["problems"], Value::Array(vec![]));
    // A run directory that does not exist is empty too, not an error.
    let v = list_json(&run.join("absent"));
    assert_eq!(v["links"], Value::Array(vec![]));
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_live_link_then_a_dead_master() {
    let _w = Watchdog::new("live", Duration::from_secs(120));
    let run = run_dir("live");
    let r = run.to_str().unwrap();
    let link = [
        "--domain",
        "web",
        "--link",
        "eth0",
        "--run-dir",
        r,
        "--hugepages",
        "never",
    ];
    let mut master_args = vec!["rxonly", "--role", "master", "--up-timeout", "60"];
    master_args.extend(link);
    let mut master = spawn(&master_args);
    let waiting = wait_for(&run, "waiting", |e| e["state"] == "waiting");
    assert_eq!(waiting["master"]["pid"], master.0.id());
    assert_eq!(waiting["peer"], Value::Null);

    let mut slave_args = vec!["txonly", "--role", "slave", "--seconds", "30"];
    slave_args.extend(link);
    let slave = spawn(&slave_args);
    let up = wait_for(&run, "up", |e| e["state"] == "up");
    assert_eq!(up["peer"]["pid"], slave.0.id(), "{up}");
    assert_eq!(up["role"], "master");
    assert_eq!(up["queues"], 1);
    assert_eq!(up["region"]["hugepages"], false);
    assert!(up["region"]["size"].as_u64().unwrap() > 0);

    // Counters move, and a refreshed stats shows rates.
    let (ok, out) = tool(&[
        "stats",
        "web",
        "eth0",
        "--run-dir",
        r,
        "--json",
        "--watch",
        "0.3",
        "--count",
        "2",
    ]);
    assert!(ok, "{out}");
    let docs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(docs.len(), 2, "{out}");
    let (first, second) = (&docs[0]["links"][0], &docs[1]["links"][0]);
    assert_eq!(
        first["rx"]["pps"],
        Value::Null,
        "no rate before a second look"
    );
    assert!(
        second["rx"]["frames"].as_u64().unwrap() > first["rx"]["frames"].as_u64().unwrap(),
        "{out}"
    );
    assert!(second["rx"]["pps"].as_f64().unwrap() > 0.0, "{out}");
    assert_eq!(second["peer_corruptions"], 0);
    // The plain table names the link and both directions.
    let (ok, out) = tool(&["stats", "web", "--run-dir", r]);
    assert!(ok);
    assert!(
        out.contains("web/eth0: up") && out.contains("tx ") && out.contains("rx "),
        "{out}"
    );

    // kill -9 the master: its socket stays behind, and list says so.
    master.0.kill().unwrap();
    master.0.wait().unwrap();
    let stale = wait_for(&run, "stale", |e| e["state"] == "stale");
    assert_eq!(stale["link"], "eth0");
    let (ok, out) = tool(&["list", "--run-dir", r]);
    assert!(ok);
    assert!(out.contains("stale socket: no master"), "{out}");
    drop(slave);
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn planted_entries_are_reported_never_followed() {
    let _w = Watchdog::new("hostile", Duration::from_secs(60));
    let run = run_dir("hostile");
    // A symlinked domain, a domain others can write holding a symlink
    // named like a socket, and a foreign file.
    let outside = run_dir("hostile-outside");
    std::fs::create_dir(outside.join("x")).unwrap();
    symlink(&outside, run.join("linked")).unwrap();
    let open = run.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    symlink("/etc/passwd", open.join("l.sock")).unwrap();
    std::fs::write(open.join("junk"), b"x").unwrap();
    let c = std::ffi::CString::new(open.to_str().unwrap()).unwrap();
    // SAFETY: valid C string; the result is checked.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);

    let v = list_json(&run);
    let problems = v["problems"].to_string();
    for want in [
        "linked",
        "a symlink where a domain directory belongs",
        "writable by group or others",
        "l.sock",
        "a symlink named like a link's socket",
        "junk",
    ] {
        assert!(problems.contains(want), "'{want}' not reported: {problems}");
    }
    assert_eq!(v["links"], Value::Array(vec![]), "{v}");
    // The domain reached through the symlink was not listed.
    assert!(!v.to_string().contains("hostile-outside"), "{v}");
    std::fs::remove_dir_all(&run).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

/// Silent listeners planted by another uid in a domain directory it owns
/// (a separate process, as `nobody`): `vecring list` asks every socket at
/// once under one deadline, so they cost it about a second together, not a
/// second each, and it still lists the real link (a master as root in
/// another domain).
#[test]
fn silent_listeners_cost_a_list_one_deadline_together() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (a domain directory of another uid)");
        return;
    }
    const SILENT: usize = 8;
    let _w = Watchdog::new("silent", Duration::from_secs(120));
    let run = run_dir("silent");
    let r = run.to_str().unwrap();
    let mut master = spawn(&[
        "rxonly",
        "--role",
        "master",
        "--up-timeout",
        "60",
        "--domain",
        "web",
        "--link",
        "eth0",
        "--run-dir",
        r,
        "--hugepages",
        "never",
    ]);
    wait_for(&run, "waiting", |e| e["state"] == "waiting");

    // `nobody`'s domain directory, and its listeners that never accept.
    let planted = run.join("a-planted");
    std::fs::create_dir(&planted).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o700)).unwrap();
    let c = std::ffi::CString::new(planted.to_str().unwrap()).unwrap();
    // SAFETY: valid C string; the result is checked.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    let script = format!(
        "use Socket; $| = 1; my @s; for my $i (1 .. {SILENT}) {{ \
         socket(my $s, AF_UNIX, SOCK_SEQPACKET, 0) or die \"socket: $!\"; \
         bind($s, pack_sockaddr_un(\"$ARGV[0]/s$i.sock\")) or die \"bind: $!\"; \
         listen($s, 64) or die \"listen: $!\"; push @s, $s }} \
         print \"ready\\n\"; sleep 100;"
    );
    let mut nobody = Command::new("setpriv");
    nobody.args(["--reuid=65534", "--regid=65534", "--clear-groups", "perl"]);
    let listeners = perl_listeners(nobody, &script, &planted);

    let start = Instant::now();
    let v = list_json(&run);
    let took = start.elapsed();
    let links = v["links"].as_array().unwrap();
    let silent: Vec<&Value> = links
        .iter()
        .filter(|e| e["domain"] == "a-planted")
        .collect();
    assert_eq!(silent.len(), SILENT, "{v}");
    for e in silent {
        assert_eq!(e["state"], "unknown", "{e}");
    }
    let web = links
        .iter()
        .find(|e| e["domain"] == "web")
        .unwrap_or_else(|| panic!("the real link is not listed: {v}"));
    assert_eq!(web["state"], "waiting", "{web}");
    assert_eq!(web["master"]["pid"], master.0.id());
    // One deadline (1 s) for all; asked one by one they took 1 s each.
    assert!(
        took < Duration::from_secs(4),
        "{SILENT} silent listeners held list for {took:?}"
    );
    drop(listeners);
    master.0.kill().unwrap();
    master.0.wait().unwrap();
    std::fs::remove_dir_all(&run).unwrap();
}

/// A listener anyone could bind in a domain directory they can write,
/// named with a terminal escape and answering a well-formed status: both
/// `list` and `stats` print its name escaped, never the raw bytes.
#[test]
fn a_name_carrying_a_terminal_escape_is_printed_escaped() {
    let _w = Watchdog::new("escape", Duration::from_secs(60));
    let run = run_dir("escape");
    let dom = run.join("d");
    std::fs::create_dir(&dom).unwrap();
    std::fs::set_permissions(&dom, std::fs::Permissions::from_mode(0o700)).unwrap();
    let answer = "vecring-status 1\\nmaster_pid 0\\nmaster_uid 0\\nuptime_secs 1\\nqueues 1\\n\
                  generation 1\\nlink_ups 0\\nlink_downs 0\\npeer_corruptions 0\\n\
                  rejected_peers 0\\npinned_regions 0\\ntx_frames 0\\ntx_bytes 0\\n\
                  tx_lost_on_link_down 0\\ntx_ring_full 0\\nrx_frames 0\\nrx_bytes 0\\n";
    // Answers every question, for as long as the test runs.
    let script = format!(
        "use Socket; $| = 1; \
         socket(my $s, AF_UNIX, SOCK_SEQPACKET, 0) or die \"socket: $!\"; \
         bind($s, pack_sockaddr_un(\"$ARGV[0]/\\e[2Jx.sock\")) or die \"bind: $!\"; \
         listen($s, 64) or die \"listen: $!\"; print \"ready\\n\"; \
         while (accept(my $c, $s)) {{ my $q; recv($c, $q, 512, 0); send($c, \"{answer}\", 0); }}"
    );
    let server = perl_listeners(Command::new("perl"), &script, &dom);
    let r = run.to_str().unwrap();
    for cmd in ["list", "stats"] {
        let (ok, out) = tool(&[cmd, "--run-dir", r]);
        assert!(ok, "{cmd}: {out}");
        assert!(
            !out.contains('\x1b'),
            "{cmd} printed the raw escape: {out:?}"
        );
        assert!(out.contains("\\u{1b}[2Jx"), "{cmd}: {out:?}");
    }
    drop(server);
    std::fs::remove_dir_all(&run).unwrap();
}
