//! `vecring prepare --persist` and `--forget`: the systemd-tmpfiles entry
//! that makes a domain directory again at boot. The entry's lines are
//! checked, then the directories are deleted and `systemd-tmpfiles
//! --create` makes them from the entry alone, as at boot: owner and mode
//! must be what `prepare` gave them, and a link must come up in the domain
//! (its master accepts the directory, its slave reaches the socket through
//! it). Names and run directories that would put tmpfiles syntax into the
//! entry are refused before anything is written.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;

use common::{Proc, Watchdog, TOOL};

/// A scratch directory of this test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("vecring-persist-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn tool(args: &[&str]) -> Output {
    Command::new(TOOL)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("start vecring")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Owner and mode of a directory (not followed).
fn owner_mode(p: &Path) -> (u32, u32, u32) {
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(m.is_dir(), "{} is no directory", p.display());
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

/// One way of preparing a domain, and the mode it must give.
struct Case {
    domain: &'static str,
    args: &'static [&'static str],
    mode: u32,
}

const CASES: &[Case] = &[
    // Nobody else but the master's group: 0710.
    Case {
        domain: "plain",
        args: &[],
        mode: 0o710,
    },
    // An unprivileged LXC container's root: searchable by others, 0711.
    Case {
        domain: "lxc-owner",
        args: &["--owner", "100000:100000"],
        mode: 0o711,
    },
    // Rootless Podman as `nobody`, its container's root being nobody's
    // own uid (no subordinate ids needed).
    Case {
        domain: "podman.rootless",
        args: &["--runtime", "podman", "--rootless=nobody", "--user", "0:0"],
        mode: 0o711,
    },
];

/// The master's `--owner` that `prepare` printed, if any.
fn owner_said(stdout: &str) -> Option<String> {
    if let Some(i) = stdout.find("--owner ") {
        let rest = &stdout[i + "--owner ".len()..];
        return Some(rest.split_whitespace().next().unwrap().to_string());
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("lxc.idmap = u 0 "))
        .map(|l| {
            let uid = l.split_whitespace().next().unwrap();
            format!("{uid}:{uid}")
        })
}

#[test]
fn the_entry_makes_again_what_prepare_made() {
    if !is_root() {
        eprintln!("skipped: the_entry_makes_again_what_prepare_made needs root (systemd-tmpfiles gives directories to other uids)");
        return;
    }
    let _w = Watchdog::new("tmpfiles", Duration::from_secs(240));
    let tmpfiles = which("systemd-tmpfiles").expect("systemd-tmpfiles not found: install systemd");
    let scratch = Scratch::new("remake");
    let run = scratch.0.join("run");
    let etc = scratch.0.join("tmpfiles.d");
    let r = run.to_str().unwrap();
    for case in CASES {
        // The run directory as /run/vecring is (packaging/tmpfiles).
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut args = vec![
            "prepare",
            "--domain",
            case.domain,
            "--run-dir",
            r,
            "--persist",
            "--tmpfiles-dir",
            etc.to_str().unwrap(),
        ];
        args.extend(case.args);
        let out = tool(&args);
        assert!(out.status.success(), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let file = etc.join(format!("vecring-{}.conf", case.domain));
        assert!(
            stdout.contains(&format!(
                "# {} makes it again at every boot (systemd-tmpfiles); undo: vecring prepare --domain {} --forget --tmpfiles-dir ",
                file.display(),
                case.domain
            )),
            "{}",
            text(&out)
        );
        let dir = run.join(case.domain);
        let made_run = owner_mode(&run);
        let made = owner_mode(&dir);
        assert_eq!(made_run, (0, 0, 0o755), "{r}");
        assert_eq!(made, (0, 0, case.mode), "{}", dir.display());

        // The entry: comments, then exactly the two directories.
        let entry = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = entry.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                format!("d {r} 0755 0 0 -"),
                format!("d {} {:04o} 0 0 -", dir.display(), case.mode)
            ],
            "{entry}"
        );
        assert_eq!(
            std::fs::metadata(&file).unwrap().mode() & 0o7777,
            0o644,
            "the entry's mode"
        );

        // As after a reboot: nothing left, then the entry alone.
        std::fs::remove_dir_all(&run).unwrap();
        let made_again = Command::new(&tmpfiles)
            .arg("--create")
            .arg(&file)
            .output()
            .unwrap();
        assert!(made_again.status.success(), "{}", text(&made_again));
        assert!(
            made_again.stderr.is_empty(),
            "systemd-tmpfiles complained: {}",
            text(&made_again)
        );
        assert_eq!(owner_mode(&run), made_run, "{r} made again");
        assert_eq!(owner_mode(&dir), made, "{} made again", dir.display());

        // The doctor accepts the run directory, and a link comes up in
        // the domain: the master accepts the directory as it is, the
        // slave (the container's user when prepare named one) reaches the
        // socket through it.
        let doctor = tool(&["doctor", "--run-dir", r, "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&doctor.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", text(&doctor)));
        let run_findings: Vec<&serde_json::Value> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "run-dir")
            .collect();
        assert!(!run_findings.is_empty(), "{v}");
        for f in run_findings {
            assert_eq!(f["level"], "ok", "{f}");
        }
        link_comes_up(r, case.domain, owner_said(&stdout));
        assert_eq!(
            owner_mode(&dir),
            made,
            "the link left the directory as it was"
        );
        std::fs::remove_dir_all(&run).unwrap();
    }
}

/// A master (`txonly`, with `--owner` if given) and a slave (`rxonly`, as
/// that owner if given) in `run`/`domain`: the slave receives frames.
fn link_comes_up(run: &str, domain: &str, owner: Option<String>) {
    let link = ["--domain", domain, "--link", "l0", "--run-dir", run];
    let mut slave = match &owner {
        Some(o) => {
            let (u, g) = o.split_once(':').unwrap();
            let mut c = Command::new("setpriv");
            c.args(["--reuid", u, "--regid", g, "--clear-groups", TOOL]);
            c
        }
        None => Command::new(TOOL),
    };
    slave
        .args(["rxonly", "--interval", "0", "--up-timeout", "60"])
        .args(link)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut slave = Proc(slave.spawn().expect("start the slave"));
    let mut master_args = vec![
        "txonly",
        "--role",
        "master",
        "--seconds",
        "1",
        "--up-timeout",
        "60",
        "--hugepages",
        "never",
    ];
    master_args.extend(link);
    if let Some(o) = &owner {
        master_args.extend(["--owner", o.as_str()]);
    }
    let master = tool(&master_args);
    assert!(master.status.success(), "master: {}", text(&master));
    let mut input = slave.0.stdin.take().unwrap();
    writeln!(input).unwrap();
    let mut answer = String::new();
    BufReader::new(slave.0.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    drop(input);
    let frames: u64 = answer
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("slave answered {answer:?}"));
    assert!(frames > 0, "the slave received nothing: {answer:?}");
    assert!(slave.0.wait().unwrap().success(), "the slave failed");
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/bin".into(), "/bin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[test]
fn names_that_would_be_tmpfiles_syntax_are_refused_before_anything_is_written() {
    let _w = Watchdog::new("inject", Duration::from_secs(60));
    let scratch = Scratch::new("inject");
    let run = scratch.0.join("run");
    let etc = scratch.0.join("tmpfiles.d");
    let r = run.to_str().unwrap().to_string();
    let e = etc.to_str().unwrap().to_string();
    let bad_domains = [
        "a b",
        "a%b",
        "%H",
        "a\nd /etc 0777 0 0 -",
        "a\tb",
        "\"quoted\"",
        "a\\x20b",
        "../etc",
        "",
    ];
    // `prepare --persist` with DOMAIN and RUN_DIR fails, naming WHAT.
    let refused = |domain: &str, run_dir: &str, what: &str| {
        let out = tool(&[
            "prepare",
            "--domain",
            domain,
            "--run-dir",
            run_dir,
            "--persist",
            "--tmpfiles-dir",
            &e,
        ]);
        assert!(
            !out.status.success(),
            "--domain {domain:?} --run-dir {run_dir:?} accepted: {}",
            text(&out)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(what),
            "{}",
            text(&out)
        );
    };
    for d in bad_domains {
        refused(d, &r, "domain name");
    }
    let bad_runs = [
        format!("{r}/with space"),
        format!("{r}/%m"),
        format!("{r}/a\nd /etc 0777 0 0 -"),
        format!("{r}/q\"uote"),
        format!("{r}/back\\slash"),
        format!("{r}/../elsewhere"),
    ];
    for b in &bad_runs {
        refused("ok", b, "--run-dir");
    }
    // Nothing was made: no entry, no directory.
    assert!(!etc.exists(), "the tmpfiles directory was made");
    assert!(!run.exists(), "a run directory was made");
}

#[test]
fn forget_removes_the_entry_and_leaves_the_directory() {
    let _w = Watchdog::new("forget", Duration::from_secs(60));
    let scratch = Scratch::new("forget");
    let run = scratch.0.join("run");
    let etc = scratch.0.join("tmpfiles.d");
    let (r, e) = (run.to_str().unwrap(), etc.to_str().unwrap());
    let out = tool(&[
        "prepare",
        "--domain",
        "web",
        "--run-dir",
        r,
        "--persist",
        "--tmpfiles-dir",
        e,
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let file = etc.join("vecring-web.conf");
    assert!(file.is_file());
    // --forget takes nothing but the domain and where the entry is.
    let out = tool(&[
        "prepare",
        "--domain",
        "web",
        "--forget",
        "--owner",
        "1:1",
        "--tmpfiles-dir",
        e,
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(file.is_file());

    let forget = [
        "prepare",
        "--domain",
        "web",
        "--forget",
        "--tmpfiles-dir",
        e,
    ];
    let out = tool(&forget);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!file.exists(), "the entry stayed");
    assert!(run.join("web").is_dir(), "the directory went");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("removed"),
        "{}",
        text(&out)
    );
    // Again: nothing to remove, and no failure.
    let out = tool(&forget);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("does not exist"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_dir(&etc).unwrap().count(), 0, "leftovers");
}
