//! DPDK's power-monitor hook on a vecring port: `tests/c/monitor.c`, a
//! small DPDK application, asks `rte_eth_get_monitor_addr` what
//! `rte_power_monitor` would watch for its RX queue (as power
//! management's `RTE_POWER_MGMT_TYPE_MONITOR` and l3fwd-power's
//! `--pmd-mgmt=monitor` do before every sleep) and calls the condition's
//! callback with the watched word, as the CPU's monitor reads it, at each
//! step; this test process is the peer, through vecring-core, and drives
//! the steps:
//!
//! 1. the link up, nothing sent: the callback says sleep;
//! 2. one frame sent: the condition taken before it, and a fresh one, say
//!    do not sleep (the word the CPU would watch changed);
//! 3. the frame received: a fresh condition says sleep again;
//! 4. the peer gone: the port reports the link down, and a condition
//!    taken then says sleep;
//! 5. the peer back: that condition says do not sleep once the link is up
//!    (the word it watches changes when the link comes up).
//!
//! Each with the program's port as master and as slave. This machine's
//! CPU need not have `UMWAIT` or `MONITORX`: nothing sleeps, the callback
//! decides as it would. Needs root, a C compiler, DPDK's `pkg-config`
//! file and the built PMD: `#[ignore]`d and run by `tests/dpdk/run.sh`
//! (group `rust`, case `rust_monitor`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use vecring_core::{Link, LinkSendError, PushError, Role};
use vecring_tests::testpmd::{build_dpdk_program, Env, PMD_MAC, STALL};
use vecring_tests::Watchdog;

/// The program's next line of stdout starting with `want`, or a panic
/// with what it said so far (its stderr is in `err`).
fn next_line(
    lines: &mpsc::Receiver<String>,
    said: &mut Vec<String>,
    want: &str,
    err: &std::path::Path,
) -> String {
    loop {
        let l = lines.recv_timeout(STALL).unwrap_or_else(|_| {
            panic!(
                "monitor: no '{want}' line; it said:\n{}\n--- stderr:\n{}",
                said.join("\n"),
                std::fs::read_to_string(err).unwrap_or_default()
            )
        });
        said.push(l.clone());
        if l.starts_with(want) {
            return l;
        }
    }
}

/// Opens this side of the link.
fn open(env: &Env, test: &str, role: Role) -> Link {
    Link::builder("interop", test)
        .role(role)
        .run_dir(&env.run)
        .open()
        .unwrap_or_else(|e| panic!("open interop/{test} as {role}: {e}"))
}

fn hook_follows_frames_and_the_link(test: &str, program_master: bool) {
    let _w = Watchdog::new("dpdk power-monitor hook", Duration::from_secs(120));
    let env = Env::new(test);
    let exe = build_dpdk_program(&env, "monitor");
    let our_role = if program_master {
        Role::Slave
    } else {
        Role::Master
    };
    let link = open(&env, test, our_role);
    let mut child = Command::new("timeout")
        .args(["--kill-after=5", "70"])
        .arg(&exe)
        .arg("-d")
        .arg(&env.so)
        .arg("--no-pci")
        .arg(format!("--file-prefix=vrmon_{test}_{}", std::process::id()))
        .arg("--lcores=0@0")
        .args(&env.mem_args)
        .arg(format!(
            "--vdev=eth_vecring0,{}",
            env.vdev(test, program_master)
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(env.work.join("monitor.err")).unwrap())
        .spawn()
        .expect("start monitor");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut said = Vec::new();
    let err = env.work.join("monitor.err");
    next_line(&lines, &mut said, "monitor: up", &err);
    let l = next_line(&lines, &mut said, "monitor: empty", &err);
    assert_eq!(l, "monitor: empty rc=0 size=8 sleep=1", "{test}");

    // One frame to the program's MAC.
    let mut frame = vec![0u8; 64];
    frame[..6].copy_from_slice(&PMD_MAC);
    frame[6..12].copy_from_slice(&[0x02, 0xec, 0xf4, 0x00, 0x00, 0x09]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    let mut sender = link.sender().expect("sender");
    let deadline = std::time::Instant::now() + STALL;
    loop {
        match sender.send(&frame) {
            Ok(()) => break,
            Err(LinkSendError::NoPeer | LinkSendError::Push(PushError::Full)) => {
                assert!(std::time::Instant::now() < deadline, "{test}: cannot send");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{test}: send: {e}"),
        }
    }
    writeln!(stdin, "sent").unwrap();
    let l = next_line(&lines, &mut said, "monitor: frame", &err);
    assert_eq!(
        l, "monitor: frame armed=0 fresh=0",
        "{test}: a frame is ready"
    );
    let l = next_line(&lines, &mut said, "monitor: received", &err);
    assert_eq!(l, "monitor: received 1", "{test}");
    let l = next_line(&lines, &mut said, "monitor: drained", &err);
    assert_eq!(l, "monitor: drained sleep=1", "{test}: read, empty again");

    // The peer leaves, then comes back.
    drop(sender);
    drop(link);
    writeln!(stdin, "left").unwrap();
    let l = next_line(&lines, &mut said, "monitor: down", &err);
    assert_eq!(l, "monitor: down rc=0 sleep=1", "{test}: link down");
    let link = open(&env, test, our_role);
    writeln!(stdin, "back").unwrap();
    let l = next_line(&lines, &mut said, "monitor: back", &err);
    assert_eq!(l, "monitor: back armed=0", "{test}: the link came up");
    next_line(&lines, &mut said, "monitor: ok", &err);
    let st = child.wait().unwrap();
    assert!(
        st.success(),
        "{test}: monitor exited {st}:\n{}",
        said.join("\n")
    );
    drop(link);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_monitor_hook_follows_frames_and_the_link() {
    hook_follows_frames_and_the_link("monmaster", true);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn slave_port_monitor_hook_follows_frames_and_the_link() {
    hook_follows_frames_and_the_link("monslave", false);
}
