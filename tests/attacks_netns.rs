//! A link without a volume (`--netns`): the master on the host listens on
//! `@vecring/1/<domain>/<link>` inside a container's network namespace,
//! the container's slave connects from inside with nothing mounted. Each
//! test stands a container up as the kernel sees one (a network and a pid
//! namespace of its own, held by `unshare`), runs the peers as separate
//! processes (the `vecring` tool, the attacker helper), and checks:
//!
//! - traffic flows with exact counts, and a slave re-attaches to a master
//!   restarted after `kill -9`;
//! - a process outside the namespace is refused even with a socket made
//!   inside it (the master judges the connecting process, by its pidfd,
//!   and by `/proc/PID/ns/net` on kernels without one), with a log line
//!   naming both namespaces; root outside may still read the status;
//! - a process inside with a uid the master does not admit is refused;
//! - a squatter bound to the name first makes the master fail naming it,
//!   and a slave never attaches to the squatter posing as master from the
//!   container's own pid namespace, then attaches to the real master;
//! - a slave in a user namespace (the host's uids unmapped) accepts the
//!   host's master, which it sees as the overflow uid.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use vecring_tests::hostile::{attacker, scratch, Container, Proc};
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(90);
const NAME: &str = "vecring/1/k8s/net1";

/// The `vecring` tool.
fn built_tool() -> PathBuf {
    vecring_tests::built_binary("vecring")
}

/// The host's master of k8s/net1 in the container's namespace.
fn master(c: &Container, run: &std::path::Path, mode: &[&str], env: &[(&str, &str)]) -> Proc {
    let mut cmd = Command::new(built_tool());
    cmd.args(mode)
        .args(["--role", "master", "--domain", "k8s", "--link", "net1"])
        .arg("--netns")
        .arg(c.netns())
        .arg("--run-dir")
        .arg(run)
        .args(["--up-timeout", "30"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Proc::spawn("master", &mut cmd)
}

/// The container's slave of k8s/net1: `--netns self`, and a run directory
/// that does not exist (nothing is mounted).
fn slave(c: &Container, uid: Option<u32>, wrap: &[&str], up_timeout: &str) -> Proc {
    c.rxonly_slave(uid, wrap, &["--up-timeout", up_timeout])
}

/// Waits until `p`'s stderr holds `needle`; the stderr then.
fn stderr_says(p: &mut Proc, needle: &str, timeout: Duration) -> String {
    let end = Instant::now() + timeout;
    loop {
        let err = p.stderr();
        if err.contains(needle) {
            return err;
        }
        if Instant::now() >= end {
            panic!("no '{needle}' within {timeout:?}: {}", p.output());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The number after `key ` in the last line of `text` holding `line`.
fn count(text: &str, line: &str, key: &str) -> u64 {
    let l = text
        .lines()
        .rev()
        .find(|l| l.contains(line))
        .unwrap_or_else(|| panic!("no '{line}' line in {text}"));
    let at = l.find(key).unwrap_or_else(|| panic!("no '{key}' in {l}")) + key.len();
    l[at..]
        .trim_start()
        .split(|ch: char| !ch.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after '{key}' in {l}"))
}

/// `txonly`'s summary line (on stdout) of a master that has exited.
fn sent_line(p: &mut Proc) -> String {
    p.line("txonly: sent", Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Ends a slave (`rxonly` ends when its stdin closes) and returns its
/// stderr.
fn finish(mut p: Proc) -> String {
    p.close_stdin();
    if p.wait(Duration::from_secs(10)).is_none() {
        panic!("{} did not exit", p.output());
    }
    p.stderr()
}

#[test]
fn a_slave_with_nothing_mounted_meets_the_master_and_comes_back_after_kill_9() {
    let _w = Watchdog::new("netns: traffic and restart", LIMIT);
    vecring_tests::require_root!();
    let c = Container::start();
    let run = scratch("netns-traffic");
    let mut s = slave(&c, None, &[], "30");
    // A master that is killed while the link is up...
    let mut first = master(&c, &run, &["txonly", "--seconds", "60"], &[]);
    stderr_says(&mut s, "link up", Duration::from_secs(20));
    // Its claim is the run directory's, named by the namespace's inode.
    let ino = std::fs::metadata(c.netns())
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
        .unwrap();
    let host_sock = run.join(format!("k8s/net1@ns{ino}.sock"));
    assert!(host_sock.exists(), "no {}", host_sock.display());
    first.signal(libc::SIGKILL);
    first.wait(Duration::from_secs(5)).expect("master killed");
    stderr_says(&mut s, "link down", Duration::from_secs(10));
    // ...and the next one: the slave re-attaches by itself, and every
    // frame the second master sends arrives.
    let mut second = master(&c, &run, &["txonly", "--seconds", "1"], &[]);
    let status = second.wait(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{}", second.output());
    let summary = sent_line(&mut second);
    let sent = count(&summary, "txonly: sent", "sent");
    assert!(sent > 0, "{summary}");
    assert_eq!(count(&summary, "txonly: sent", "taken by the peer"), sent);
    let err = finish(s);
    // Two generations; the second one's frames are exactly those sent.
    assert_eq!(err.matches("rxonly: generation").count(), 2, "{err}");
    assert_eq!(count(&err, "rxonly: generation", "frames"), sent, "{err}");
    let _ = std::fs::remove_dir_all(&run);
}

/// A process of the host reaches the name with a socket made inside the
/// namespace: refused, by pidfd and by the older kernels' fallback.
#[test]
fn a_process_outside_the_namespace_is_refused_whatever_its_socket() {
    let _w = Watchdog::new("netns: outside", LIMIT);
    vecring_tests::require_root!();
    let c = Container::start();
    for fallback in [false, true] {
        let run = scratch(&format!("netns-outside-{fallback}"));
        let env: &[(&str, &str)] = if fallback {
            &[("VECRING_NO_PEERPIDFD", "1")]
        } else {
            &[]
        };
        let mut m = master(&c, &run, &["rxonly"], env);
        stderr_says(&mut m, "waiting for the slave", Duration::from_secs(20));
        let mut outside = Proc::spawn(
            "outside",
            attacker("outside-connect")
                .arg(format!("netns={}", c.netns().display()))
                .arg(format!("name={NAME}")),
        );
        let reply = outside
            .line("reply", Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("fallback {fallback}: {e}\n{}", m.output()));
        assert!(
            reply.contains("kind=Reject") && reply.contains("network namespace"),
            "fallback {fallback}: {reply}"
        );
        let log = stderr_says(&mut m, "is not the link's", Duration::from_secs(5));
        let line = log
            .lines()
            .find(|l| l.contains("is not the link's"))
            .unwrap();
        assert!(
            line.contains(&format!("pid {}", outside.pid())) && line.matches("net:[").count() == 2,
            "the refusal names the process and both namespaces: {line}"
        );
        // Root outside may still read the link's state.
        let list = Command::new(built_tool())
            .args(["list", "--json", "--run-dir"])
            .arg(&run)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&list.stdout);
        assert!(list.status.success() && out.contains("net1@ns"), "{out}");
        drop(outside);
        m.close_stdin();
        assert!(m.wait(Duration::from_secs(10)).is_some(), "{}", m.output());
        let _ = std::fs::remove_dir_all(&run);
    }
}

#[test]
fn a_process_inside_with_a_refused_uid_is_refused() {
    let _w = Watchdog::new("netns: refused uid", LIMIT);
    vecring_tests::require_root!();
    let c = Container::start();
    let run = scratch("netns-uid");
    let mut m = master(&c, &run, &["rxonly", "--allow-uid", "0"], &[]);
    stderr_says(&mut m, "waiting for the slave", Duration::from_secs(20));
    let mut s = slave(&c, Some(65534), &[], "10");
    let status = s.wait(Duration::from_secs(15));
    assert!(status.is_some_and(|st| !st.success()), "{}", s.output());
    assert!(
        s.stderr().contains("uid 65534 is not allowed to attach"),
        "{}",
        s.output()
    );
    stderr_says(
        &mut m,
        "uid 65534 is not allowed to attach",
        Duration::from_secs(5),
    );
    m.close_stdin();
    let _ = m.wait(Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn a_squatter_is_named_by_the_master_and_never_taken_for_it() {
    let _w = Watchdog::new("netns: squatter", LIMIT);
    vecring_tests::require_root!();
    let c = Container::start();
    let run = scratch("netns-squat");
    // A process of the container, as nobody, takes the name first and
    // serves a real region to whoever asks.
    let attack = vecring_tests::built_binary("vecring-attack")
        .display()
        .to_string();
    let mut fake = Proc::spawn(
        "squatter",
        &mut c.inside(
            Some(65534),
            &[
                &attack,
                "fake-master",
                &format!("socket=@{NAME}"),
                "mode=valid",
            ],
        ),
    );
    fake.line("listening", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    // The master refuses to start, naming who holds the name.
    let mut m = master(&c, &run, &["rxonly"], &[]);
    let status = m.wait(Duration::from_secs(20));
    assert!(
        status.is_some_and(|s| s.code() == Some(1)),
        "{}",
        m.output()
    );
    let err = m.stderr();
    assert!(
        err.contains(&format!("@{NAME}"))
            && err.contains("already bound by pid")
            && err.contains("uid 65534"),
        "{err}"
    );
    // The container's slave sees the squatter's pid: it refuses it.
    let mut s = slave(&c, None, &[], "10");
    let status = s.wait(Duration::from_secs(15));
    assert!(status.is_some_and(|st| !st.success()), "{}", s.output());
    assert!(
        s.stderr().contains("of this process's pid namespace"),
        "{}",
        s.output()
    );
    fake.close_stdin();
    let done = fake
        .line("done", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        done.contains("acks=0"),
        "the slave acknowledged the squatter: {done}"
    );
    assert!(fake.wait(Duration::from_secs(10)).is_some());
    // With the squatter gone, the real master starts and a slave attaches.
    let s = slave(&c, None, &[], "30");
    let mut m = master(&c, &run, &["txonly", "--seconds", "1"], &[]);
    assert!(
        m.wait(Duration::from_secs(30)).is_some_and(|s| s.success()),
        "{}",
        m.output()
    );
    let sent = count(&sent_line(&mut m), "txonly: sent", "sent");
    let err = finish(s);
    assert_eq!(count(&err, "rxonly: summary", "frames"), sent, "{err}");
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn a_slave_in_a_user_namespace_accepts_the_host_master() {
    let _w = Watchdog::new("netns: user namespace", LIMIT);
    vecring_tests::require_root!();
    let c = Container::start();
    let run = scratch("netns-userns");
    // Container root is host uid 100000; the host's uids are unmapped.
    // (A /proc of the container's pid namespace first: newuidmap finds
    // the process to map by its pid there.)
    let wrap = [
        "unshare",
        "--mount-proc",
        "--",
        "unshare",
        "--map-users=100000,0,65536",
        "--map-groups=100000,0,65536",
        "--setuid",
        "0",
        "--setgid",
        "0",
        "--",
    ];
    let s = slave(&c, None, &wrap, "30");
    let mut m = master(&c, &run, &["txonly", "--seconds", "1"], &[]);
    assert!(
        m.wait(Duration::from_secs(30))
            .is_some_and(|st| st.success()),
        "{}",
        m.output()
    );
    let merr = m.stderr();
    assert!(
        merr.contains("slave attached: pid") && merr.contains("uid 100000"),
        "{merr}"
    );
    let sent = count(&sent_line(&mut m), "txonly: sent", "sent");
    let err = finish(s);
    assert_eq!(count(&err, "rxonly: summary", "frames"), sent, "{err}");
    let _ = std::fs::remove_dir_all(&run);
}
