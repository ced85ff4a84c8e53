//! `vecring cdi` from a separate process: the command in `--help` and the
//! man pages, a spec file written, listed and removed, and the link
//! options taking their defaults from the variables a CDI device sets
//! (`VECRING_DOMAIN`, `VECRING_LINK`, `VECRING_RUN_DIR`), the command line
//! still winning. `tests/containers/podman.sh` (group `cdi`) runs the
//! devices in Podman.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `vecring ARGS` with the `VECRING_*` variables `env` (and none
/// other of them) under a watchdog; returns its exit code, stdout and
/// stderr.
fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vecring"));
    for v in [
        "VECRING_DOMAIN",
        "VECRING_LINK",
        "VECRING_RUN_DIR",
        "VECRING_NETNS",
    ] {
        cmd.env_remove(v);
    }
    let mut child = cmd
        .envs(env.iter().copied())
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
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vecring {args:?} still running after 20 s: killed");
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
    let d = std::env::temp_dir().join(format!("vecring-cdi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn the_command_is_in_the_help_and_the_man_pages() {
    let (code, out, _) = run(&["--help"], &[]);
    assert_eq!(code, 0);
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("cdi "))
        .unwrap_or_else(|| panic!("cdi not in --help:\n{out}"));
    assert!(line.len() <= 100, "a long line: {line}");
    let dir = scratch("man");
    std::fs::create_dir_all(&dir).unwrap();
    let (code, out, err) = run(&["manpages", dir.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    for page in [
        "vecring-cdi.1",
        "vecring-cdi-write.1",
        "vecring-cdi-remove.1",
        "vecring-cdi-list.1",
    ] {
        assert!(
            out.contains(page) && dir.join(page).is_file(),
            "{page}: {out}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_spec_written_listed_and_removed() {
    let dir = scratch("spec");
    let spec = dir.join("cdi/vecring.json");
    let (s, d) = (spec.to_str().unwrap(), dir.to_str().unwrap());
    let run_dir = dir.join("run");
    std::fs::create_dir_all(run_dir.join("pd")).unwrap();
    let r = run_dir.to_str().unwrap();
    let (code, out, err) = run(
        &[
            "cdi",
            "write",
            "--domain",
            "pd",
            "--link",
            "eth0",
            "--run-dir",
            r,
            "--out",
            s,
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("--device vecring.dev/link=pd-eth0"), "{out}");
    assert!(!err.contains("does not exist"), "{err}");
    let (code, _, err) = run(
        &["cdi", "write", "--domain", "db", "--run-dir", r, "--out", s],
        &[],
    );
    assert_eq!(code, 0);
    assert!(err.contains("does not exist yet"), "db's directory: {err}");
    let (code, _, err) = run(
        &[
            "cdi", "write", "--domain", "ns", "--link", "l0", "--netns", "--out", s,
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        !err.contains("does not exist"),
        "no directory in netns mode: {err}"
    );
    let cdi_dir = dir.join("cdi");
    let (code, out, err) = run(
        &[
            "cdi",
            "list",
            "--json",
            "--spec-dir",
            cdi_dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["schema"], "vecring-cdi-list");
    let devices = doc["devices"].as_array().unwrap();
    let seen: Vec<_> = devices
        .iter()
        .map(|d| {
            (
                d["device"].as_str().unwrap(),
                d["link"].as_str(),
                d["mode"].as_str().unwrap(),
                d["domain_dir_exists"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("vecring.dev/link=pd-eth0", Some("eth0"), "directory", true),
            ("vecring.dev/link=db", None, "directory", false),
            ("vecring.dev/link=ns-l0", Some("l0"), "netns", false),
        ]
    );
    // Another kind's file is refused, and left as it is.
    let foreign = dir.join("cdi/other.json");
    let text = r#"{"cdiVersion":"0.3.0","kind":"vendor.com/gpu","devices":[]}"#;
    std::fs::write(&foreign, text).unwrap();
    let (code, _, err) = run(
        &[
            "cdi",
            "write",
            "--domain",
            "pd",
            "--out",
            foreign.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1);
    assert!(err.contains("of kind 'vendor.com/gpu'"), "{err}");
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), text);
    for domain in ["pd", "db", "ns"] {
        let (code, _, err) = run(&["cdi", "remove", "--domain", domain, "--out", s], &[]);
        assert_eq!(code, 0, "{err}");
    }
    assert!(!spec.exists(), "the file goes with its last device");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn link_options_default_to_the_device_environment() {
    let dir = scratch("env");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let env = [
        ("VECRING_DOMAIN", "envd"),
        ("VECRING_LINK", "envl"),
        ("VECRING_RUN_DIR", d),
    ];
    // No master: the slave names the socket it waits on (and ends when
    // its stdin, empty, closes).
    let (_, _, err) = run(&["rxonly", "--up-timeout", "0.2", "--interval", "0"], &env);
    assert!(err.contains(&format!("{d}/envd/envl.sock")), "{err}");
    let (_, _, err) = run(&["rxonly", "--up-timeout", "0.2", "--domain", "cli"], &env);
    assert!(
        err.contains(&format!("{d}/cli/envl.sock")),
        "the command line wins: {err}"
    );
    // A device of network-namespace mode: the abstract name in this
    // process's own network namespace.
    let ns = [
        ("VECRING_DOMAIN", "envd"),
        ("VECRING_LINK", "envl"),
        ("VECRING_NETNS", "self"),
    ];
    let (_, _, err) = run(&["rxonly", "--up-timeout", "0.2", "--interval", "0"], &ns);
    assert!(err.contains("@vecring/1/envd/envl"), "{err}");
    let (code, out, _) = run(&["txonly", "--help"], &env);
    assert_eq!(code, 0);
    assert!(out.contains("[env: VECRING_DOMAIN=envd]"), "{out}");
    // Without them, as before: --domain and --link are required.
    let (code, _, err) = run(&["rxonly"], &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--domain <DOMAIN>") && err.contains("--link <LINK>"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
