//! The tool's messages and exit codes: every option checked before the
//! link opens, a waiting side naming its socket path, `prepare` making a
//! domain directory the master accepts, and a txonly → rxonly pair that
//! reports what was sent, taken and received.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `vecring ARGS` under a watchdog (killed after `limit`); returns its
/// exit code, stdout and stderr.
fn run(args: &[&str], limit: Duration) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecring"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vecring");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vecring {args:?} still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code().unwrap_or(-1), out, err)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const QUICK: Duration = Duration::from_secs(20);

/// An option error: exit 1, the message naming the option, no link opened.
fn refused(args: &[&str], want: &str) {
    let (code, _, err) = run(args, QUICK);
    assert_eq!(code, 1, "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: want '{want}' in:\n{err}");
    assert!(
        !err.contains("waiting for"),
        "{args:?} opened the link:\n{err}"
    );
}

#[test]
fn options_are_checked_before_the_link_opens() {
    let run_dir = scratch("opts");
    let rd = run_dir.to_str().unwrap();
    let base = ["--domain", "d", "--link", "l", "--run-dir", rd];
    let with = |extra: &[&'static str], mode: &'static str| -> Vec<String> {
        let mut v = vec![mode.to_string()];
        v.extend(base.iter().map(|s| s.to_string()));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "txonly",
            &["--size", "13"],
            "--size 13: a frame is 14 (an Ethernet header) to 9216 bytes",
        ),
        ("txonly", &["--size", "9217"], "--size 9217"),
        ("rxonly", &["--cpu", "4000"], "--cpu 4000: no such CPU"),
        ("rxonly", &["--owner", "1:1"], "--owner is a master option"),
        (
            "rxonly",
            &["--allow-uid", "5"],
            "--allow-uid is a master option",
        ),
        ("rxonly", &["--slots", "1024"], "--slots is a master option"),
        (
            "rxonly",
            &["--role", "master", "--master-uid", "0"],
            "--master-uid is a slave option",
        ),
        (
            "rxonly",
            &["--role", "master", "--slots", "1000"],
            "slot count 1000 is not a power of two",
        ),
        (
            "rxonly",
            &["--role", "master", "--slot-size", "32"],
            "slot size 32",
        ),
    ];
    for (mode, extra, want) in cases {
        let args = with(extra, mode);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, want);
    }
    refused(
        &[
            "rxonly",
            "--domain",
            "d",
            "--link",
            "l",
            "--run-dir",
            "relative/run",
        ],
        "--run-dir relative/run: must be an absolute path",
    );
}

#[test]
fn help_states_limits_and_logging() {
    let (code, out, _) = run(&["rxonly", "--help"], QUICK);
    assert_eq!(code, 0);
    assert!(out.contains("2..=1048576"), "{out}");
    assert!(out.contains("64..=32768"), "{out}");
    let (_, out, _) = run(&["--help"], QUICK);
    assert!(out.contains("RUST_LOG"), "{out}");
    assert!(
        out.contains("rxonly ends when its stdin closes or on Ctrl-C"),
        "{out}"
    );
}

/// (txonly: an rxonly whose stdin is closed, as here, ends its wait at
/// once.)
#[test]
fn waiting_side_names_its_socket_path() {
    let run_dir = scratch("wait");
    let rd = run_dir.to_str().unwrap();
    let args = [
        "txonly",
        "--domain",
        "dom",
        "--link",
        "l0",
        "--run-dir",
        rd,
        "--up-timeout",
        "1",
    ];
    let (code, _, err) = run(&args, QUICK);
    let sock = format!("{rd}/dom/l0.sock");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!("waiting for the master on {sock}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("no master on {sock} after 1 s")),
        "{err}"
    );
    // -q silences the info line, not the error.
    let mut quiet = vec!["-q"];
    quiet.extend_from_slice(&args);
    let (code, _, err) = run(&quiet, QUICK);
    assert_eq!(code, 1);
    assert!(!err.contains("waiting for"), "{err}");
    assert!(err.contains("no master on"), "{err}");
}

/// A slave whose uid the master's socket is not open to (a container
/// user the master's `--owner` does not name) is told so, and what to
/// give the master, instead of "is it running".
#[test]
fn a_slave_the_socket_is_closed_to_is_told_why() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a_slave_the_socket_is_closed_to_is_told_why needs root");
        return;
    }
    let run_dir = scratch("closed");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rd = run_dir.to_str().unwrap();
    for (domain, owner, why) in [
        (
            "d1",
            Some("4343:4343"),
            "its socket is not open to this process",
        ),
        ("d2", None, "its domain directory is closed to this process"),
    ] {
        let common = ["--domain", domain, "--link", "l0", "--run-dir", rd];
        let mut master = Command::new(env!("CARGO_BIN_EXE_vecring"));
        master
            .args(["rxonly", "--role", "master", "--hugepages", "never"])
            .args(common)
            .args(owner.map_or(vec![], |o| vec!["--owner", o]))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut master = master.spawn().unwrap();
        let sock = run_dir.join(domain).join("l0.sock");
        let start = Instant::now();
        while !sock.exists() && start.elapsed() < QUICK {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut slave = Command::new(env!("CARGO_BIN_EXE_vecring"));
        slave
            .args(["txonly", "--up-timeout", "1"])
            .args(common)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: the closure runs in the child before exec and calls only
        // async-signal-safe functions.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut slave, || {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = slave.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        drop(master.stdin.take());
        let _ = master.kill();
        let _ = master.wait();
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(why), "{why}: {err}");
        assert!(err.contains("--owner"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&run_dir);
}

/// `--help` lists each command in one line; the completion scripts and
/// man pages come from the same definitions and name every command. The
/// benchmark harness's commands are not the tool's (they are
/// `vecring-bench`'s).
#[test]
fn help_completions_and_man_pages_name_every_command() {
    let commands = [
        "stress", "txonly", "rxonly", "prepare", "tap", "list", "stats", "doctor",
    ];
    let (code, out, _) = run(&["--help"], QUICK);
    assert_eq!(code, 0);
    for lab in ["bench", "agent"] {
        assert!(
            !out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{lab} "))),
            "{lab} in --help:\n{out}"
        );
        let (code, _, err) = run(&[lab], QUICK);
        assert_eq!(code, 2, "vecring {lab}: {err}");
    }
    for c in commands {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{c} ")))
            .unwrap_or_else(|| panic!("{c} not in --help:\n{out}"));
        assert!(line.len() <= 100, "a long line for {c}: {line}");
    }
    for (shell, marker) in [
        ("bash", "complete -F _vecring"),
        ("zsh", "#compdef vecring"),
        ("fish", "complete -c vecring"),
    ] {
        let (code, out, err) = run(&["completions", shell], QUICK);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(marker), "{shell}: {out}");
        for c in commands {
            assert!(out.contains(c), "{shell} completion lacks {c}");
        }
    }
    let dir = scratch("man");
    std::fs::create_dir_all(&dir).unwrap();
    let (code, out, err) = run(&["manpages", dir.to_str().unwrap()], QUICK);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(dir.join("vecring.1")).unwrap();
    assert!(page.contains(".TH vecring"), "{page}");
    for c in commands {
        let name = format!("vecring-{c}.1");
        assert!(out.contains(&name), "{out}");
        assert!(dir.join(&name).is_file(), "{name}");
    }
    let (code, _, err) = run(&["manpages", "/nonexistent/dir"], QUICK);
    assert_eq!(code, 1);
    assert!(err.contains("not a directory"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prepare_makes_a_directory_the_master_accepts() {
    let run_dir = scratch("prep");
    let rd = run_dir.to_str().unwrap();
    let (code, out, err) = run(
        &[
            "prepare",
            "--domain",
            "web",
            "--run-dir",
            rd,
            "--owner",
            "100000:100000",
        ],
        QUICK,
    );
    assert_eq!(code, 0, "{err}");
    let dir = run_dir.join("web");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o711);
    let rel = dir.strip_prefix("/").unwrap().display().to_string();
    assert!(
        out.contains(&format!(
            "lxc.mount.entry = {} {rel} none bind,create=dir 0 0",
            dir.display()
        )),
        "{out}"
    );
    assert!(out.contains("lxc.idmap = u 0 100000 65536"), "{out}");
    assert!(out.contains("lxc.idmap = g 0 100000 65536"), "{out}");
    let (code, out, err) = run(&["prepare", "--domain", "plain", "--run-dir", rd], QUICK);
    assert_eq!(code, 0, "{err}");
    let mode = std::fs::metadata(run_dir.join("plain"))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o710);
    assert!(!out.contains("lxc.idmap"), "{out}");
    // The master accepts the prepared directory.
    let link = vecring_core::Link::builder("web", "l0")
        .role(vecring_core::Role::Master)
        .run_dir(&run_dir)
        .owner(100000, 100000)
        .open();
    assert!(link.is_ok(), "{:?}", link.err());
    refused(
        &["prepare", "--domain", "x", "--run-dir", "rel"],
        "must be an absolute path",
    );
}

#[test]
fn prepare_for_a_container_runtime_refuses_what_it_cannot_map() {
    let run_dir = scratch("prep-rt");
    let rd = run_dir.to_str().unwrap();
    let base = ["prepare", "--domain", "web", "--run-dir", rd];
    let nobody_has_subids = std::fs::read_to_string("/etc/subuid")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("nobody:") || l.starts_with("65534:"));
    let mut cases = vec![
        (
            vec!["--runtime", "lxd"],
            2,
            "invalid value 'lxd' for '--runtime",
        ),
        (
            vec!["--runtime", "docker", "--owner", "1:1"],
            1,
            "--owner is what prepare works out for --runtime docker",
        ),
        (
            vec!["--user", "1:1"],
            1,
            "--user is for --runtime docker or podman",
        ),
        (
            vec!["--runtime", "docker", "--rootless=nobody", "--keep-id"],
            1,
            "--keep-id is podman's --userns=keep-id",
        ),
        (
            vec!["--runtime", "podman", "--userns-remap"],
            1,
            "--userns-remap is a dockerd setting",
        ),
        (
            vec!["--runtime", "docker", "--userns-remap=no-such-user-here"],
            1,
            "no user 'no-such-user-here' on this host",
        ),
    ];
    if !nobody_has_subids {
        // A rootless user without subordinate ids has only its root mapped.
        cases.push((
            vec!["--runtime", "podman", "--rootless=nobody"],
            1,
            "id 1000 in the container is not mapped: nobody has no subordinate ids in /etc/subuid",
        ));
    }
    for (args, want_code, want) in cases {
        let all: Vec<&str> = base.iter().copied().chain(args.iter().copied()).collect();
        let (code, _, err) = run(&all, QUICK);
        assert_eq!(code, want_code, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!run_dir.exists(), "{args:?} made {}", run_dir.display());
    }
    // Its root is the user: mapped without subordinate ids.
    let (code, out, err) = run(
        &[
            &base[..],
            &["--runtime", "podman", "--rootless=nobody", "--user", "0:0"],
        ]
        .concat(),
        QUICK,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the master: --owner 65534:"), "{out}");
    std::fs::remove_dir_all(&run_dir).unwrap();
}

#[test]
fn txonly_reports_what_the_peer_took() {
    let run_dir = scratch("pair");
    let rd = run_dir.to_str().unwrap();
    let mut rx = Command::new(env!("CARGO_BIN_EXE_vecring"))
        .args([
            "rxonly",
            "--role",
            "master",
            "--domain",
            "p",
            "--link",
            "l0",
            "--run-dir",
            rd,
        ])
        .args(["--interval", "0.2", "--hugepages", "never"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, out, err) = run(
        &[
            "txonly",
            "--domain",
            "p",
            "--link",
            "l0",
            "--run-dir",
            rd,
            "--seconds",
            "0.5",
            "--up-timeout",
            "10",
        ],
        QUICK,
    );
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("txonly: sent"))
        .expect(&out);
    let num = |key: &str| -> u64 {
        line.split(key)
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .trim_end_matches([',', ';'])
            .parse()
            .unwrap()
    };
    // The tool computes what is still in the ring from the other two:
    // what the peer took is checked against the peer's own count below.
    let (sent, taken) = (num("sent "), num("taken by the peer "));
    assert!(taken <= sent, "{line}");
    assert!(
        err.contains("waiting for the master") || err.contains("link up"),
        "{err}"
    );
    drop(rx.stdin.take()); // stdin closed: rxonly ends with a summary
    let start = Instant::now();
    while rx.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < QUICK, "rxonly did not end on stdin close");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut rx_err = String::new();
    rx.stderr
        .take()
        .unwrap()
        .read_to_string(&mut rx_err)
        .unwrap();
    let summary = rx_err
        .lines()
        .find(|l| l.contains("summary (stdin closed)"))
        .expect(&rx_err);
    let got: u64 = summary
        .split("frames ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(got, taken, "{summary} vs {line}");
    assert!(
        rx_err.contains("rxonly: link down") || rx_err.contains("rxonly: frames"),
        "{rx_err}"
    );
}
