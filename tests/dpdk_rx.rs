//! The receive modes of the DPDK driver, seen by a DPDK application: small
//! C programs built against DPDK (`tests/c/zero_copy.c`,
//! `tests/c/hold_back.c`) hold one port, this test process is the peer
//! through vecring-core and drives them step by step (one command a line
//! on their stdin, one answer a line on their stdout).
//!
//! - Zero-copy receive (`zero_copy=true`): frames of 512 bytes or more
//!   arrive as mbufs attached to their ring slots. The application frees
//!   them out of order (last, middle, first): the peer gets ring room back
//!   only when the oldest is freed, all of it at once (slots go back in
//!   ring order); while they are held the peer fills every free slot, and
//!   the held frames' bytes stay intact. Frames under 512 bytes, copied,
//!   give their slots back in the burst that copied them unless an
//!   attached frame still held lies before them. Held mbufs also outlive the link
//!   (the peer leaves) and the port (`rte_eth_dev_stop` and
//!   `rte_eth_dev_close`): their bytes stay readable and intact, the region
//!   stays mapped until the last one is freed and not after, and every mbuf
//!   goes back to its pool. With the program's port as slave and as master.
//! - Hold-back (`hold_back=true`): the peer publishes bursts of 1, 2 and 3
//!   one-slot frames, each with one index store, and only then asks the
//!   program to poll. With hold-back, the first polls after a burst of 2 or
//!   3 find nothing (the frames are held back), then one burst returns them
//!   all; a single frame comes at the first poll. Without hold-back every
//!   burst comes at the first poll. The port's `rx_held_back_bursts` xstat
//!   (and queue 0's) counts exactly the polls the hold-back emptied.
//!
//! They need root, a C compiler, DPDK's `pkg-config` file and the built
//! PMD, so they are `#[ignore]`d and run by `tests/dpdk/run.sh` (group
//! `rust`, case `rust_rx`), or by hand:
//!
//! ```sh
//! install -D -m0644 target/release/librte_net_vecring.so /usr/local/lib/vecring-test/librte_net_vecring.so
//! VECRING_PMD_SO=/usr/local/lib/vecring-test/librte_net_vecring.so \
//!   cargo test --release -p vecring-tests --test dpdk_rx -- --ignored --test-threads=1
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use vecring_core::{Geometry, Link, LinkSendError, PushError, Role, Sender};
use vecring_tests::testpmd::{build_dpdk_program, Env, STALL};
use vecring_tests::{fill_frame, Watchdog};

/// How long one test may run.
const LIMIT: Duration = Duration::from_secs(120);
/// Slots of the zero-copy tests' ring: few, so that the peer's room is
/// counted exactly and filled quickly.
const ZC_SLOTS: u32 = 64;
/// Bytes per slot of the zero-copy tests' ring.
const ZC_SLOT_SIZE: u32 = 512;
/// The zero-copy tests' frames: attached (512 bytes or more), two slots
/// each, so that the ring's slot count (even) never splits one at its end.
const ZC_FRAME_LEN: usize = 1000;
/// Slots one zero-copy frame takes.
const ZC_FRAME_SLOTS: usize = ZC_FRAME_LEN.div_ceil(ZC_SLOT_SIZE as usize);
/// The hold-back test's frames: one 64-byte slot each.
const HB_FRAME_LEN: usize = 60;

/// A C DPDK program holding port `eth_vecring0`, driven line by line.
struct Program {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
    err: PathBuf,
}

impl Program {
    /// Builds `tests/c/<name>.c` and starts it on a port with devargs
    /// `vdev`, its own arguments `args` after EAL's.
    fn start(env: &Env, name: &'static str, vdev: &str, args: &[&str]) -> Program {
        let exe = build_dpdk_program(env, name);
        let err = env.work.join(format!("{name}.err"));
        let mut child = Command::new("timeout")
            .args(["--kill-after=5", "100"])
            .arg(&exe)
            .arg("-d")
            .arg(&env.so)
            .arg("--no-pci")
            .arg(format!("--file-prefix=vr{name}_{}", std::process::id()))
            .arg("--lcores=0@0")
            .args(&env.mem_args)
            .arg(format!("--vdev=eth_vecring0,{vdev}"))
            .arg("--")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", exe.display()));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Program {
            name,
            child,
            stdin,
            lines,
            said: Vec::new(),
            err,
        }
    }

    /// What the program said so far, for failure messages.
    fn output(&self) -> String {
        format!(
            "--- {} stdout:\n{}\n--- stderr:\n{}",
            self.name,
            self.said.join("\n"),
            std::fs::read_to_string(&self.err).unwrap_or_default()
        )
    }

    /// Its next line of stdout, which must start with `want`.
    fn line(&mut self, want: &str) -> String {
        match self.lines.recv_timeout(STALL) {
            Ok(l) => {
                self.said.push(l.clone());
                assert!(l.starts_with(want), "expected '{want}'\n{}", self.output());
                l
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let st = self.child.wait().unwrap();
                panic!(
                    "the program exited ({st}) before '{want}'\n{}",
                    self.output()
                )
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no '{want}' line within {STALL:?}\n{}", self.output())
            }
        }
    }

    /// Sends command `cmd`; returns its answer, which starts with `want`.
    fn ask(&mut self, cmd: &str, want: &str) -> String {
        if let Err(e) = writeln!(self.stdin, "{cmd}").and_then(|()| self.stdin.flush()) {
            panic!("command '{cmd}': {e}\n{}", self.output());
        }
        self.line(want)
    }

    /// Sends `quit` and waits for a clean exit.
    fn quit(mut self, ok: &str) {
        self.ask("quit", ok);
        let deadline = Instant::now() + STALL;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "exit status {st}\n{}", self.output());
                return;
            }
            assert!(Instant::now() < deadline, "did not exit\n{}", self.output());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SIGTERM, which `timeout` passes on to the program; it SIGKILLs
            // the program 5 s later.
            // SAFETY: signalling our own child by pid, not yet reaped.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let _ = self.child.wait();
        }
    }
}

/// The numbers of an answer, in order (`zc: freed 2 polled 0 attached 0`
/// gives 2, 0, 0).
fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect()
}

/// The peer's end of the link `interop/<test>` in role `role`; a master
/// creates the zero-copy tests' ring when `zc`.
fn peer(env: &Env, test: &str, role: Role, zc: bool) -> Link {
    let mut b = Link::builder("interop", test).role(role).run_dir(&env.run);
    if zc && role == Role::Master {
        b = b.geometry(Geometry::new(ZC_SLOTS, ZC_SLOT_SIZE).unwrap());
    }
    b.open()
        .unwrap_or_else(|e| panic!("open interop/{test} as {role}: {e}"))
}

/// The free slots of the peer's ring, as its producer sees them now (a
/// chunk of every free slot, dropped unused).
fn free_slots(tx: &mut Sender) -> usize {
    tx.write_chunk(usize::MAX)
        .unwrap_or_else(|e| panic!("reserve: {e}"))
        .free_slots()
}

/// Frame `seq` of the self-checking pattern, `len` bytes.
fn frame(seq: u64, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    fill_frame(&mut f, seq);
    f
}

/// Sends frames `from..to` of `len` bytes with one index store; the ring
/// must take them all.
fn send_burst(tx: &mut Sender, from: u64, to: u64, len: usize, p: &Program) {
    let lens: Vec<usize> = (from..to).map(|_| len).collect();
    send_frames(tx, from, &lens, p);
}

/// Sends frames `from`, `from + 1`, ... of the lengths `lens` with one
/// index store; the ring must take them all.
fn send_frames(tx: &mut Sender, from: u64, lens: &[usize], p: &Program) {
    let frames: Vec<Vec<u8>> = (from..).zip(lens).map(|(s, &len)| frame(s, len)).collect();
    let deadline = Instant::now() + STALL;
    loop {
        match tx.send_batch(frames.iter().map(Vec::as_slice)) {
            Ok(n) if n == frames.len() => return,
            Ok(n) => panic!(
                "the ring took {n} of {} frames\n{}",
                frames.len(),
                p.output()
            ),
            // The program's receiver may not have attached yet.
            Err(LinkSendError::NoPeer) => {
                assert!(Instant::now() < deadline, "no peer\n{}", p.output());
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("send: {e}\n{}", p.output()),
        }
    }
}

/// The devargs of the program's port on `interop/<test>` in role
/// `program_role`, with `extra` devargs; a master creates the zero-copy
/// tests' ring when `zc`.
fn vdev(env: &Env, test: &str, program_role: Role, zc: bool, extra: &str) -> String {
    let mut v = format!("{},{extra}", env.vdev(test, program_role == Role::Master));
    if zc && program_role == Role::Master {
        v.push_str(&format!(",slots={ZC_SLOTS},slot_size={ZC_SLOT_SIZE}"));
    }
    v
}

fn other(role: Role) -> Role {
    match role {
        Role::Master => Role::Slave,
        Role::Slave => Role::Master,
    }
}

// ---- zero-copy: slots come back in ring order -----------------------------

/// The program (slave, `zero_copy=true`) holds three attached frames and
/// frees them last, middle, first; the peer's room comes back only with
/// the first, all of it. Meanwhile the peer fills every free slot, and the
/// held frame stays intact.
#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn zero_copy_slots_come_back_in_ring_order_and_held_frames_stay_intact() {
    let _w = Watchdog::new("zero-copy in ring order", LIMIT);
    let test = "zc-order";
    let env = Env::new(test);
    let link = peer(&env, test, Role::Master, true);
    let len = ZC_FRAME_LEN.to_string();
    let mut p = Program::start(
        &env,
        "zero_copy",
        &vdev(&env, test, Role::Slave, true, "zero_copy=true"),
        &[&len],
    );
    p.line("zc: up");
    let base = p.ask("count", "zc: in_use");
    let mut tx = link.sender().unwrap();
    let all = ZC_SLOTS as usize;
    let per = ZC_FRAME_SLOTS;
    assert_eq!(free_slots(&mut tx), all, "an empty ring\n{}", p.output());

    send_burst(&mut tx, 0, 3, ZC_FRAME_LEN, &p);
    assert_eq!(
        p.ask("recv 3", "zc: received"),
        "zc: received 3 attached 3",
        "three frames attached to their slots\n{}",
        p.output()
    );
    let held = all - 3 * per;
    assert_eq!(free_slots(&mut tx), held, "held frames hold their slots");

    // The last, then the middle one: nothing comes back (the oldest is
    // still held), though a burst ran after each.
    for (i, left) in [(2, 2), (1, 1)] {
        assert_eq!(
            p.ask(&format!("free {i}"), "zc: freed"),
            format!("zc: freed {i} polled 0 attached 0")
        );
        assert_eq!(
            free_slots(&mut tx),
            held,
            "room came back when frame {i} of 0..3 was freed, the oldest still held\n{}",
            p.output()
        );
        assert_eq!(p.ask("check", "zc: intact"), format!("zc: intact {left}"));
    }

    // The peer fills every free slot: none of the held frame's.
    let mut seq = 3u64;
    loop {
        match tx.send(&frame(seq, ZC_FRAME_LEN)) {
            Ok(()) => seq += 1,
            Err(LinkSendError::Push(PushError::Full)) => break,
            Err(e) => panic!("send: {e}\n{}", p.output()),
        }
    }
    let fillers = seq - 3;
    assert_eq!(
        fillers as usize,
        held / per,
        "the frames the free slots took"
    );
    assert_eq!(free_slots(&mut tx), 0);
    assert_eq!(
        p.ask("check", "zc: intact"),
        "zc: intact 1",
        "the held frame after the peer wrote every free slot"
    );

    // The oldest freed: its slots and the two freed before come back
    // together, in the burst that also takes the fillers.
    assert_eq!(
        p.ask("free 0", "zc: freed"),
        format!("zc: freed 0 polled {fillers} attached {fillers}"),
        "{}",
        p.output()
    );
    assert_eq!(
        free_slots(&mut tx),
        3 * per,
        "the three frames' slots, once the oldest was freed\n{}",
        p.output()
    );
    assert_eq!(
        p.ask("check", "zc: intact"),
        format!("zc: intact {fillers}")
    );
    assert_eq!(
        p.ask("free_all", "zc: freed all"),
        format!("zc: freed all {fillers} polled 0 attached 0")
    );
    assert_eq!(free_slots(&mut tx), all, "every slot back\n{}", p.output());
    assert_eq!(
        p.ask("count", "zc: in_use"),
        base,
        "every mbuf back in its pool, the region mapped once"
    );
    println!(
        "{test}: 3 attached frames freed last, middle, first: room {held}, {held}, {} of {all} slots; \
         {fillers} more frames filled the ring meanwhile, held bytes intact; {base}",
        3 * per
    );
    p.quit("zc: ok");
    drop(link);
    let _ = std::fs::remove_dir_all(&env.work);
}

// ---- zero-copy: copied frames go back at once ------------------------------

/// Frames under 512 bytes are copied in zero-copy mode too; with no
/// attached frame held before them, their slots go back to the peer in the
/// burst that copied them, as in copy mode. Behind an attached frame the
/// application still holds, they wait for it; the copied frame before it
/// does not.
#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn zero_copy_copied_frames_go_back_in_their_burst_unless_behind_a_held_one() {
    let _w = Watchdog::new("zero-copy copied frames", LIMIT);
    let test = "zc-copied";
    let env = Env::new(test);
    let link = peer(&env, test, Role::Master, true);
    // Frames of any length (the program checks each by its own).
    let mut p = Program::start(
        &env,
        "zero_copy",
        &vdev(&env, test, Role::Slave, true, "zero_copy=true"),
        &["0"],
    );
    p.line("zc: up");
    let base = p.ask("count", "zc: in_use");
    let mut tx = link.sender().unwrap();
    let all = ZC_SLOTS as usize;
    // One slot, copied.
    let small = 100;
    assert_eq!(free_slots(&mut tx), all, "an empty ring\n{}", p.output());

    send_frames(&mut tx, 0, &[small; 3], &p);
    assert_eq!(
        p.ask("recv 3", "zc: received"),
        "zc: received 3 attached 0",
        "three small frames, copied\n{}",
        p.output()
    );
    assert_eq!(
        free_slots(&mut tx),
        all,
        "the copied frames' slots, back in the burst that copied them\n{}",
        p.output()
    );

    // Copied, attached, copied: the first one's slot comes back now, the
    // other two's when the attached one is freed.
    send_frames(&mut tx, 3, &[small, ZC_FRAME_LEN, small], &p);
    assert_eq!(
        p.ask("recv 3", "zc: received"),
        "zc: received 3 attached 1",
        "the middle frame attached\n{}",
        p.output()
    );
    assert_eq!(
        free_slots(&mut tx),
        all - ZC_FRAME_SLOTS - 1,
        "the attached frame and the copied one behind it still hold their slots\n{}",
        p.output()
    );
    assert_eq!(p.ask("check", "zc: intact"), "zc: intact 6");
    assert_eq!(
        p.ask("free 4", "zc: freed"),
        "zc: freed 4 polled 0 attached 0"
    );
    assert_eq!(
        free_slots(&mut tx),
        all,
        "every slot back once the attached frame was freed\n{}",
        p.output()
    );
    assert_eq!(
        p.ask("free_all", "zc: freed all"),
        "zc: freed all 5 polled 0 attached 0"
    );
    assert_eq!(
        p.ask("count", "zc: in_use"),
        base,
        "every mbuf back in its pool"
    );
    println!(
        "{test}: 3 copied frames gave their {all} slots back in their own burst; \
         copied, attached, copied: {} slots held until the attached one was freed",
        ZC_FRAME_SLOTS + 1
    );
    p.quit("zc: ok");
    drop(link);
    let _ = std::fs::remove_dir_all(&env.work);
}

// ---- zero-copy: held mbufs outlive the link and the port --------------------

/// The program (in `program_role`) holds 8 attached frames while the peer
/// leaves and while its port is stopped and closed; it then reads and
/// frees them: bytes intact, the region mapped until the last one is freed
/// and not after, every mbuf back in its pool.
fn held_mbufs_outlive_link_and_port(test: &str, program_role: Role) {
    let _w = Watchdog::new("zero-copy mbufs outlive the port", LIMIT);
    const HELD: u64 = 8;
    let env = Env::new(test);
    let link = peer(&env, test, other(program_role), true);
    let len = ZC_FRAME_LEN.to_string();
    let mut p = Program::start(
        &env,
        "zero_copy",
        &vdev(&env, test, program_role, true, "zero_copy=true"),
        &[&len],
    );
    p.line("zc: up");
    let base = numbers(&p.ask("count", "zc: in_use"));
    let mut tx = link.sender().unwrap();
    send_burst(&mut tx, 0, HELD, ZC_FRAME_LEN, &p);
    assert_eq!(
        p.ask(&format!("recv {HELD}"), "zc: received"),
        format!("zc: received {HELD} attached {HELD}"),
        "{}",
        p.output()
    );

    // The peer leaves.
    drop(tx);
    drop(link);
    p.ask("down", "zc: down");
    assert_eq!(p.ask("check", "zc: intact"), format!("zc: intact {HELD}"));

    // The port goes.
    assert_eq!(
        p.ask("close", "zc: closed"),
        "zc: closed stop 0 close 0",
        "{}",
        p.output()
    );
    assert_eq!(p.ask("check", "zc: intact"), format!("zc: intact {HELD}"));
    let closed = numbers(&p.ask("count", "zc: in_use"));
    assert_eq!(closed[0], base[0] + HELD, "the held mbufs are in use");
    assert!(
        closed[1] >= 1,
        "the region is no longer mapped while mbufs attached to it are held\n{}",
        p.output()
    );

    assert_eq!(
        p.ask("free_all", "zc: freed all"),
        format!("zc: freed all {HELD} polled 0 attached 0")
    );
    let after = numbers(&p.ask("count", "zc: in_use"));
    assert_eq!(after[0], base[0], "every mbuf back in its pool");
    assert_eq!(
        after[1],
        0,
        "the region is still mapped after its last mbuf was freed\n{}",
        p.output()
    );
    println!(
        "{test}: {HELD} attached mbufs held across the peer's leaving and the port's stop and close: \
         intact; {} region mapping(s) while held, none once freed; mbufs in use {} -> {} -> {}",
        closed[1], base[0], closed[0], after[0]
    );
    p.quit("zc: ok");
    let _ = std::fs::remove_dir_all(&env.work);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn slave_port_zero_copy_mbufs_outlive_the_link_and_the_port() {
    held_mbufs_outlive_link_and_port("zc-outlive-s", Role::Slave);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn master_port_zero_copy_mbufs_outlive_the_link_and_the_port() {
    held_mbufs_outlive_link_and_port("zc-outlive-m", Role::Master);
}

// ---- hold-back -------------------------------------------------------------

/// Bursts of each size the peer publishes.
const HB_ROUNDS: u64 = 20;

/// The peer publishes bursts of 1, 2 and 3 one-slot frames in turn
/// ([`HB_ROUNDS`] of each), each with one index store, and only then asks
/// the program (slave, `hold_back=<hold_back>`) to poll until it has them.
/// Each burst's frames must come in one rx burst; with hold-back the first
/// polls after every burst of 2 or 3 find nothing, without it none does,
/// and a single frame is never held back.
fn held_back_polls(test: &str, hold_back: bool) {
    let _w = Watchdog::new("hold-back bursts", LIMIT);
    let env = Env::new(test);
    let link = peer(&env, test, Role::Master, false);
    let len = HB_FRAME_LEN.to_string();
    let mut p = Program::start(
        &env,
        "hold_back",
        &vdev(
            &env,
            test,
            Role::Slave,
            false,
            &format!("hold_back={hold_back}"),
        ),
        &[&len],
    );
    p.line("hb: up");
    let mut tx = link.sender().unwrap();
    // Per burst size 1, 2, 3: rounds whose first poll found nothing, and
    // empty polls in all.
    let (mut held_rounds, mut empty_polls) = ([0u64; 3], [0u64; 3]);
    let mut seq = 0;
    for round in 0..3 * HB_ROUNDS {
        let k = round % 3 + 1;
        send_burst(&mut tx, seq, seq + k, HB_FRAME_LEN, &p);
        seq += k;
        let l = p.ask(&format!("recv {k}"), "hb: received");
        let n = numbers(&l);
        assert_eq!(n[0], k, "{l}");
        assert_eq!(
            &n[2..],
            &[k],
            "round {round}: the {k} frames published together came in one burst: {l}\n{}",
            p.output()
        );
        let i = (k - 1) as usize;
        if n[1] > 0 {
            held_rounds[i] += 1;
            empty_polls[i] += n[1];
        }
    }
    println!(
        "{test}: hold_back={hold_back}: bursts of 1, 2, 3 frames ({HB_ROUNDS} each) held back at the \
         first poll in {held_rounds:?} rounds ({empty_polls:?} empty polls while frames were ready); \
         each burst's frames came in one rx burst"
    );
    // One frame alone is never held back.
    assert_eq!(held_rounds[0], 0, "a single frame was held back");
    if hold_back {
        assert_eq!(
            held_rounds[1..],
            [HB_ROUNDS, HB_ROUNDS],
            "with hold_back=true every burst of 2 and 3 frames is held back at first\n{}",
            p.output()
        );
    } else {
        assert_eq!(
            held_rounds[1..],
            [0, 0],
            "without hold_back a burst was held back\n{}",
            p.output()
        );
    }
    // The xstats count every poll the hold-back emptied, and nothing else.
    let l = p.ask("held", "hb: held_back_bursts");
    let total: u64 = empty_polls.iter().sum();
    assert_eq!(
        numbers(&l),
        [total, total],
        "rx_held_back_bursts and rx_q0_held_back_bursts against the {total} polls that found \
         ready frames held back: {l}"
    );
    p.quit("hb: ok");
    drop(link);
    let _ = std::fs::remove_dir_all(&env.work);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn hold_back_holds_bursts_of_two_and_three_small_frames_back() {
    held_back_polls("hb-on", true);
}

#[test]
#[ignore = "needs root, a C compiler, DPDK and the PMD: run by tests/dpdk/run.sh"]
fn without_hold_back_every_burst_comes_at_the_first_poll() {
    held_back_polls("hb-off", false);
}
