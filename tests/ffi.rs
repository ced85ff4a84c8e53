//! The C API (`vecring-ffi`: `libvecring.so`, `libvecring.a`,
//! `include/vecring.h`) from real C programs, compiled with the system C
//! compiler against the header and linked against the built library:
//!
//! - the header agrees with the library: struct sizes, alignments and field
//!   offsets and every constant, as static assertions compiled in C, and the
//!   same set of functions declared, implemented and exported;
//! - the C test helper makes the same frames as `vecring_core::test_support::pattern`;
//! - `tests/c/api.c` checks the API's contract call by call;
//! - `tests/c/close_race.c` closes handles that other threads are using;
//! - `tests/c/close_attack.c` closes a link whose hostile slave planted
//!   descriptors that block their last close on its doorbells: within a
//!   second, with `SO_PASSRIGHTS` and on the fallback of older kernels;
//! - the waits (sleeping instead of polling): `tests/c/wait_api.c` and
//!   `tests/c/wait.c`, a C receiver in its own `epoll` set with a Rust
//!   peer (module `wait`, `tests/ffi/wait.rs`);
//! - a C master exchanges self-checking frames both ways with a Rust slave,
//!   and a C slave with a `dpdk-testpmd` master (vecring PMD, io forwarding),
//!   every byte checked;
//! - the documented example `vecring-ffi/examples/c/hello.c` builds through
//!   the installed pkg-config file, dynamically and statically, and runs.

use std::ffi::c_int;
use std::fmt::Write as _;
use std::io::Read;
use std::mem::{align_of, size_of, MaybeUninit};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vecring::{vecring_buf_t, vecring_counters_t, vecring_frame_t, vecring_options_t};
use vecring_core::{test_support::pattern, Link, LinkRecvError, LinkSendError, PushError, Role};
use vecring_tests::Watchdog;

// A test target's root resolves `mod` beside itself (tests/wait.rs is the
// wait test binary): this module's file is in tests/ffi/.
#[path = "ffi/wait.rs"]
mod wait;

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// `target/<profile>/deps`, where cargo put the `libvecring.so` and
/// `libvecring.a` it built for this test (it depends on `vecring-ffi`; only
/// `cargo build -p vecring-ffi` copies them up to `target/<profile>`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target/<profile>/deps").to_path_buf();
    for lib in ["libvecring.so", "libvecring.a"] {
        assert!(
            deps.join(lib).exists(),
            "{} is missing: build the tests with `cargo test -p vecring-tests` (which builds vecring-ffi)",
            deps.join(lib).display()
        );
    }
    deps
}

/// A scratch directory for one test's C programs.
/// Removed when the test passes, kept (for its logs) when it fails.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch files kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn scratch(test: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("vecring-ffi-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn c_compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Runs a command to completion within `limit`, returning its output; the
/// command is killed at the limit.
fn run(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    finish(child, limit, &format!("{cmd:?}"))
}

/// Waits for `child` up to `limit` (killing it then), collecting its
/// piped output.
fn finish(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_end(&mut o);
        }
        o
    });
    let err_reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_end(&mut e);
        }
        e
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} still running after {limit:?}; killed\n--- stdout\n{}--- stderr\n{}",
                String::from_utf8_lossy(&reader.join().unwrap()),
                String::from_utf8_lossy(&err_reader.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

fn show(out: &std::process::Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Compiles C sources into `dir/name`, against `include/vecring.h` and the
/// built shared library (found at run time through an rpath).
///
/// The rpath is an old-style `DT_RPATH`, which the loader searches before
/// `LD_LIBRARY_PATH`: `cargo test` puts `target/<profile>` on that path,
/// where an older `libvecring.so` from a `cargo build -p vecring-ffi` may
/// lie, and a test must run the library it was built with.
fn compile(dir: &Path, name: &str, sources: &[PathBuf]) -> PathBuf {
    let libs = lib_dir();
    let exe = dir.join(name);
    let mut cmd = Command::new(c_compiler());
    cmd.args([
        "-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
    ])
    .arg("-I")
    .arg(root().join("include"))
    .arg("-I")
    .arg(root().join("tests/c"))
    .args(sources)
    .arg("-o")
    .arg(&exe)
    .arg("-L")
    .arg(&libs)
    .arg("-lvecring")
    .arg(format!("-Wl,-rpath,{}", libs.display()))
    .arg("-Wl,--disable-new-dtags");
    let out = run(&mut cmd, Duration::from_secs(120));
    assert!(out.status.success(), "compiling {name}: {}", show(&out));
    exe
}

fn c_source(name: &str) -> PathBuf {
    root().join("tests/c").join(name)
}

// ---- the header agrees with the library -----------------------------------

/// Byte offset of a field, without `offset_of!` (Rust 1.77; MSRV is 1.75).
macro_rules! offset {
    ($t:ty, $field:ident) => {{
        let u = MaybeUninit::<$t>::uninit();
        let base = u.as_ptr();
        // SAFETY: `addr_of!` takes the field's address without reading or
        // making a reference to the uninitialized value; both pointers are
        // into the same local.
        let field = unsafe { std::ptr::addr_of!((*base).$field) };
        field as usize - base as usize
    }};
}

/// `_Static_assert`s of one struct's size, alignment and field offsets.
macro_rules! layout {
    ($out:ident, $c:literal, $t:ty, [$($field:ident),* $(,)?]) => {{
        let _ = writeln!(
            $out,
            "_Static_assert(sizeof({c}) == {s}, \"sizeof({c})\");\n\
             _Static_assert(_Alignof({c}) == {a}, \"_Alignof({c})\");",
            c = $c,
            s = size_of::<$t>(),
            a = align_of::<$t>()
        );
        let mut covered = 0;
        $(
            let _ = writeln!(
                $out,
                "_Static_assert(offsetof({c}, {f}) == {o}, \"offsetof({c}, {f})\");",
                c = $c,
                f = stringify!($field),
                o = offset!($t, $field)
            );
            covered += 1;
        )*
        // Every Rust field is listed (a struct literal with `..` would
        // not catch a missing one; counting does, with the size check).
        covered
    }};
}

/// The error codes as Rust defines them, by their C names.
fn rust_error_codes() -> Vec<(&'static str, c_int)> {
    vec![
        ("VECRING_OK", vecring::VECRING_OK),
        ("VECRING_E_INVAL", vecring::VECRING_E_INVAL),
        ("VECRING_E_LINK_DOWN", vecring::VECRING_E_LINK_DOWN),
        ("VECRING_E_AGAIN", vecring::VECRING_E_AGAIN),
        ("VECRING_E_TOOBIG", vecring::VECRING_E_TOOBIG),
        ("VECRING_E_NOBUFS", vecring::VECRING_E_NOBUFS),
        ("VECRING_E_CORRUPT", vecring::VECRING_E_CORRUPT),
        ("VECRING_E_TIMEDOUT", vecring::VECRING_E_TIMEDOUT),
        ("VECRING_E_REFUSED", vecring::VECRING_E_REFUSED),
        ("VECRING_E_EXISTS", vecring::VECRING_E_EXISTS),
        ("VECRING_E_NAME", vecring::VECRING_E_NAME),
        ("VECRING_E_NUMA", vecring::VECRING_E_NUMA),
        ("VECRING_E_NOMEM", vecring::VECRING_E_NOMEM),
        ("VECRING_E_IO", vecring::VECRING_E_IO),
        ("VECRING_E_BUSY", vecring::VECRING_E_BUSY),
        ("VECRING_E_PANIC", vecring::VECRING_E_PANIC),
        ("VECRING_E_PROTO", vecring::VECRING_E_PROTO),
        ("VECRING_E_CLOSED", vecring::VECRING_E_CLOSED),
    ]
}

/// A C file that compiles only if the header's layouts and constants are
/// the library's.
fn layout_checks() -> String {
    let mut c = String::from("#include <stddef.h>\n#include \"vecring.h\"\n\n");
    let n = layout!(
        c,
        "vecring_options_t",
        vecring_options_t,
        [
            size,
            role,
            domain,
            link,
            run_dir,
            numa_node,
            hugepages,
            slot_count,
            slot_size,
            max_frame_len,
            socket_mode,
            owner_uid,
            owner_gid,
            allowed_uids,
            allowed_uid_count,
            retry_interval_ms,
            on_state_change,
            user_data,
        ]
    );
    assert_eq!(n, 18, "every field of vecring_options_t is checked");
    let n = layout!(
        c,
        "vecring_counters_t",
        vecring_counters_t,
        [
            generation,
            link_ups,
            link_downs,
            peer_corruptions,
            rejected_peers,
            tx_frames,
            tx_bytes,
            tx_lost_on_link_down,
            rx_frames,
            rx_bytes,
        ]
    );
    assert_eq!(
        n * 8,
        size_of::<vecring_counters_t>(),
        "every counter is checked"
    );
    layout!(c, "vecring_frame_t", vecring_frame_t, [data, len, flags]);
    layout!(c, "vecring_buf_t", vecring_buf_t, [data, cap, len]);
    let _ = writeln!(
        c,
        "_Static_assert(sizeof(vecring_state_cb_t) == {}, \"vecring_state_cb_t\");",
        size_of::<vecring::vecring_state_cb_t>()
    );
    let mut constants: Vec<(&str, i64)> = rust_error_codes()
        .into_iter()
        .map(|(n, v)| (n, i64::from(v)))
        .collect();
    constants.extend([
        ("VECRING_ROLE_SLAVE", i64::from(vecring::VECRING_ROLE_SLAVE)),
        (
            "VECRING_ROLE_MASTER",
            i64::from(vecring::VECRING_ROLE_MASTER),
        ),
        (
            "VECRING_HUGEPAGES_PREFER",
            i64::from(vecring::VECRING_HUGEPAGES_PREFER),
        ),
        (
            "VECRING_HUGEPAGES_REQUIRE",
            i64::from(vecring::VECRING_HUGEPAGES_REQUIRE),
        ),
        (
            "VECRING_HUGEPAGES_NEVER",
            i64::from(vecring::VECRING_HUGEPAGES_NEVER),
        ),
        (
            "VECRING_FRAME_COPIED",
            i64::from(vecring::VECRING_FRAME_COPIED),
        ),
    ]);
    for (name, value) in constants {
        let _ = writeln!(c, "_Static_assert({name} == {value}, \"{name}\");");
    }
    c
}

/// The functions `vecring.h` declares: `vecring_*` names followed by `(`
/// at the start of a declaration line.
fn header_functions(header: &str) -> Vec<String> {
    header
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '/', '*', '#']) && !l.starts_with("typedef"))
        .filter_map(|l| {
            let open = l.find('(')?;
            let name = l[..open].rsplit([' ', '*']).next()?;
            name.starts_with("vecring_").then(|| name.to_string())
        })
        .collect()
}

#[test]
fn header_matches_the_library() {
    let _w = Watchdog::new("header_matches_the_library", Duration::from_secs(120));
    let dir = scratch("header");

    // Layouts and constants, compiled as C11 and as C++ (extern "C").
    let check = dir.join("layout_check.c");
    std::fs::write(&check, layout_checks()).unwrap();
    let out = run(
        Command::new(c_compiler())
            .args([
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-c",
                "-o",
            ])
            .arg(dir.join("layout_check.o"))
            .arg("-I")
            .arg(root().join("include"))
            .arg(&check),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "the header disagrees with the library: {}",
        show(&out)
    );

    // Every function: declared in the header, implemented in Rust, exported
    // by the shared library, and nothing else exported.
    let header = std::fs::read_to_string(root().join("include/vecring.h")).unwrap();
    let mut declared = header_functions(&header);
    let mut rust: Vec<String> = vecring::EXPORTED_FUNCTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let nm = run(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(lib_dir().join("libvecring.so")),
        Duration::from_secs(60),
    );
    assert!(nm.status.success(), "nm: {}", show(&nm));
    let mut exported: Vec<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            (kind == "T").then(|| name.to_string())
        })
        .collect();
    declared.sort();
    rust.sort();
    exported.sort();
    assert_eq!(
        declared, rust,
        "functions declared in vecring.h vs vecring::EXPORTED_FUNCTIONS"
    );
    assert_eq!(
        exported, rust,
        "functions exported by libvecring.so vs vecring::EXPORTED_FUNCTIONS"
    );

    // Every error code of the library is in the header's enum, and no other.
    let mut header_codes: Vec<&str> = header
        .lines()
        .filter_map(|l| l.trim().strip_prefix("VECRING_"))
        .filter_map(|l| l.split_once(" = ").map(|(n, _)| n))
        .filter(|n| *n == "OK" || n.starts_with("E_"))
        .collect();
    header_codes.sort();
    let mut rust_codes: Vec<&str> = rust_error_codes().iter().map(|(n, _)| &n[8..]).collect();
    rust_codes.sort();
    assert_eq!(
        header_codes, rust_codes,
        "error codes in vecring.h vs the library"
    );
    assert_eq!(rust_error_codes().len(), vecring::ERROR_CODES.len());
}

#[test]
fn c_pattern_is_the_rust_pattern() {
    let _w = Watchdog::new("c_pattern_is_the_rust_pattern", Duration::from_secs(120));
    let dir = scratch("pattern");
    let exe = compile(&dir, "pattern_dump", &[c_source("pattern_dump.c")]);
    let out = run(&mut Command::new(&exe), Duration::from_secs(60));
    assert!(out.status.success(), "{}", show(&out));
    let mut at = &out.stdout[..];
    let mut expect = vec![0u8; 9216];
    let mut seq = 0u64;
    while !at.is_empty() {
        let len = u32::from_le_bytes(at[..4].try_into().unwrap()) as usize;
        assert_eq!(len, pattern::mixed_len(seq), "pattern_mixed_len({seq})");
        pattern::fill(&mut expect[..len], seq);
        let got = &at[4..4 + len];
        if let Some(i) = (0..len).find(|&i| got[i] != expect[i]) {
            panic!(
                "pattern_fill of frame {seq} ({len} bytes) differs from Rust's at byte {i}: {:?} vs {:?}",
                &got[i..len.min(i + 8)],
                &expect[i..len.min(i + 8)]
            );
        }
        assert_eq!(pattern::check(&at[4..4 + len]), Ok(seq));
        at = &at[4 + len..];
        seq += 1;
    }
    assert_eq!(seq, 2000, "frames dumped");
}

#[test]
fn c_api_contract() {
    let _w = Watchdog::new("c_api_contract", Duration::from_secs(180));
    let dir = scratch("api");
    let exe = compile(&dir, "api", &[c_source("api.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    let out = run(Command::new(&exe).arg(&run_at), Duration::from_secs(150));
    assert!(out.status.success(), "tests/c/api.c: {}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("api: all "),
        "{}",
        show(&out)
    );
}

/// `vecring_close` on one thread while others block in `vecring_wait_up`
/// and loop on link-level, TX and RX calls on the same handle: every round
/// each of them ends with `VECRING_E_CLOSED`, close succeeds within a
/// second, and nothing crashes. (Under valgrind, the same program reports
/// no invalid access; see `tests/c/close_race.c`.)
#[test]
fn c_close_races_calls_on_other_threads() {
    let _w = Watchdog::new(
        "c_close_races_calls_on_other_threads",
        Duration::from_secs(180),
    );
    let dir = scratch("close_race");
    let exe = compile(&dir, "close_race", &[c_source("close_race.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    let out = run(
        Command::new(&exe).arg(&run_at).arg("200"),
        Duration::from_secs(150),
    );
    assert!(out.status.success(), "tests/c/close_race.c: {}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("200 rounds passed"),
        "{}",
        show(&out)
    );
}

// ---- vecring_close under attack -------------------------------------------

/// What `vecring_close` may take whatever the peer holds (`docs/c-api.md`),
/// and the longest round of the receiving thread.
const CLOSE_BUDGET_MS: u64 = 1000;
/// The longest wait for the next progress line of the C master (it prints
/// one every 100 ms; a thread blocked in a planted close prints none for an
/// hour).
const REPORT_BOUND: Duration = Duration::from_secs(3);

/// A C master (`tests/c/close_attack.c`) receives, asleep in
/// `vecring_recv_timeout`, from a hostile slave in a separate process
/// running as `nobody` (`vecring-attack plant where=doorbell
/// then=frames`): it rings the doorbells for nothing until the sleeping
/// receiver mutes them, plants a socket whose last close sleeps for an
/// hour on each, publishes frames and stays. The frames arrive, the
/// receiving thread keeps returning, and `vecring_close` returns within a
/// second. `fallback`: the master runs with `VECRING_NO_PASSRIGHTS=1`, the
/// path of kernels without `SO_PASSRIGHTS` (before 6.16), where the
/// descriptors arrive; else this kernel refuses them if it can.
fn c_close_under_a_planted_doorbell(test: &str, fallback: bool) {
    use vecring_tests::hostile::{as_nobody, attacker, num, set_mode, Proc, NOBODY};
    vecring_tests::require_root!();
    let dir = scratch(test);
    let exe = compile(&dir, "close_attack", &[c_source("close_attack.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    // The attacker runs as nobody and must reach the socket.
    set_mode(&dir, 0o755);
    set_mode(&run_at, 0o755);
    let mut cmd = Command::new(&exe);
    cmd.arg(&run_at)
        .args(["dom", "l0", &NOBODY.to_string()])
        .env("RUST_LOG", "info");
    if fallback {
        cmd.env("VECRING_NO_PASSRIGHTS", "1");
    }
    let mut master = Proc::spawn("C master", &mut cmd);
    master
        .line("close_attack: listening", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    set_mode(&run_at.join("dom"), 0o711);
    let mut plant = Proc::spawn(
        "attacker",
        as_nobody(&mut attacker("plant")).args([
            "where=doorbell".to_string(),
            "then=frames".into(),
            format!("run-dir={}", run_at.display()),
            "domain=dom".into(),
            "link=l0".into(),
        ]),
    );
    let mut failures = Vec::new();
    let (sent, planted) = vecring_tests::hostile::muted_plant_steps(
        &mut plant,
        fallback,
        "master",
        &String::new,
        &mut failures,
    );
    // The frames arrive, and the receiving thread keeps returning after
    // that (each call sleeps 50 ms at most).
    let t0 = Instant::now();
    let mut rx = String::new();
    while t0.elapsed() < Duration::from_secs(5) {
        match master.line("close_attack: rx", REPORT_BOUND) {
            Ok(l) => rx = l,
            Err(e) => {
                failures.push(format!("the receiving thread stopped reporting: {e}"));
                break;
            }
        }
        if num(&rx, "frames") >= sent {
            break;
        }
    }
    let got = if rx.is_empty() { 0 } else { num(&rx, "frames") };
    if got < sent {
        failures.push(format!("{got} of the {sent} frames arrived within 5 s"));
    }
    let mut later = String::new();
    for _ in 0..10 {
        match master.line("close_attack: rx", REPORT_BOUND) {
            Ok(l) => later = l,
            Err(e) => {
                failures.push(format!("the receiving thread stopped returning: {e}"));
                break;
            }
        }
    }
    if !later.is_empty() && num(&later, "max_gap_ms") >= CLOSE_BUDGET_MS {
        failures.push(format!("a receive call took too long: {later}"));
    }
    // Stdin closed, the master closes its link while the attacker still
    // holds everything.
    master.close_stdin();
    match master.line("close_attack: closed", Duration::from_secs(10)) {
        Ok(l) => {
            let ms = num(&l, "ms");
            eprintln!("{test}: {planted}; {later}; vecring_close took {ms} ms");
            if ms >= CLOSE_BUDGET_MS {
                failures.push(format!("vecring_close took {ms} ms"));
            }
            if !l.contains("rc=0") {
                failures.push(format!("vecring_close failed: {l}"));
            }
        }
        Err(e) => failures.push(format!("vecring_close did not return: {e}")),
    }
    match master.wait(Duration::from_secs(5)) {
        Some(st) if st.success() => {}
        Some(st) => failures.push(format!("the C master exited with {st}")),
        None => failures.push("the C master did not exit after closing".into()),
    }
    plant.close_stdin();
    assert!(
        failures.is_empty(),
        "{}\nattacker: {}\nC master: {}",
        failures.join("\n"),
        plant.output(),
        master.output()
    );
}

#[test]
fn c_close_returns_within_a_second_under_a_planted_doorbell() {
    let _w = Watchdog::new("c close, planted doorbell", Duration::from_secs(120));
    c_close_under_a_planted_doorbell("close_attack", false);
}

#[test]
fn c_close_returns_within_a_second_under_a_planted_doorbell_without_so_passrights() {
    let _w = Watchdog::new(
        "c close, planted doorbell, fallback",
        Duration::from_secs(120),
    );
    c_close_under_a_planted_doorbell("close_attack_fb", true);
}

// ---- a C master and a Rust slave ------------------------------------------

const FRAMES: u64 = 100_000;
const STALL: Duration = Duration::from_secs(60);

/// Sends frames `0..n` of the mixed-size pattern.
fn rust_send(mut tx: vecring_core::Sender, n: u64) -> Result<(), String> {
    let mut buf = vec![0u8; 9216];
    for seq in 0..n {
        let len = pattern::mixed_len(seq);
        pattern::fill(&mut buf[..len], seq);
        let mut last = Instant::now();
        loop {
            match tx.send(&buf[..len]) {
                Ok(()) => break,
                Err(LinkSendError::Push(PushError::Full)) if last.elapsed() < STALL => {
                    std::thread::yield_now()
                }
                Err(LinkSendError::Push(PushError::Full)) => {
                    return Err(format!("the C peer stopped reading at frame {seq}"))
                }
                Err(e) => return Err(format!("send of frame {seq}: {e}")),
            }
            if last.elapsed() > STALL {
                last = Instant::now();
            }
        }
    }
    Ok(())
}

/// Receives and checks frames `0..n` of the mixed-size pattern.
fn rust_receive(rx: &mut vecring_core::Receiver, n: u64) -> Result<(), String> {
    let mut buf = vec![0u8; 9216];
    let mut expected = 0;
    let mut last = Instant::now();
    while expected < n {
        match rx.recv(&mut buf) {
            Ok(len) => {
                let seq = pattern::check(&buf[..len])?;
                if seq != expected || len != pattern::mixed_len(seq) {
                    return Err(format!(
                        "expected frame {expected}, got frame {seq} of {len} bytes"
                    ));
                }
                expected += 1;
                last = Instant::now();
            }
            Err(LinkRecvError::Empty) if last.elapsed() < STALL => std::thread::yield_now(),
            Err(e) => return Err(format!("receive of frame {expected}: {e:?}")),
        }
    }
    Ok(())
}

#[test]
fn c_master_talks_to_a_rust_slave() {
    let _w = Watchdog::new("c_master_talks_to_a_rust_slave", Duration::from_secs(300));
    let dir = scratch("master");
    let exe = compile(&dir, "peer", &[c_source("peer.c")]);
    let run_at = dir.join("run");
    let frames = FRAMES.to_string();
    // A small ring of small slots: most frames span several slots, and many
    // wrap around the end of the ring (the zero-copy paths' copies).
    let child = Command::new(&exe)
        .args([
            "--role", "master", "--domain", "ffi", "--link", "m0", "--frames", &frames,
        ])
        .args([
            "--slot-count",
            "256",
            "--slot-size",
            "512",
            "--hugepages",
            "never",
        ])
        .arg("--run-dir")
        .arg(&run_at)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the C master");
    let slave = Link::builder("ffi", "m0")
        .role(Role::Slave)
        .run_dir(&run_at)
        .retry_interval(Duration::from_millis(10))
        .open()
        .unwrap();
    let up = slave.wait_up(Duration::from_secs(60));
    let traffic = up.map_err(|e| e.to_string()).and_then(|_| {
        let tx = slave.sender().unwrap();
        let mut rx = slave.receiver().unwrap();
        let sender = std::thread::spawn(move || rust_send(tx, FRAMES));
        let received = rust_receive(&mut rx, FRAMES);
        let sent = sender.join().unwrap();
        received.and(sent)
    });
    // The C master exits once it has received everything and we have read
    // everything it sent; only then may the slave go.
    let out = finish(child, Duration::from_secs(200), "C master");
    assert!(
        traffic.is_ok(),
        "Rust slave: {}\nC master: {}",
        traffic.unwrap_err(),
        show(&out)
    );
    assert!(out.status.success(), "C master: {}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("peer: ok: sent {FRAMES}, received {FRAMES}")),
        "{}",
        show(&out)
    );
    assert!(stdout.contains("256 slots of 512 bytes"), "{}", show(&out));
    let c = slave.counters();
    assert_eq!((c.rx_frames, c.link_ups), (FRAMES, 1));
}

// ---- a C slave and a dpdk-testpmd master ----------------------------------

/// The vecring PMD: `$VECRING_PMD_SO`, or `target/<profile>`'s.
fn pmd_so() -> PathBuf {
    if let Some(p) = std::env::var_os("VECRING_PMD_SO") {
        return PathBuf::from(p);
    }
    let deps = lib_dir();
    let built = deps
        .parent()
        .expect("target/<profile>")
        .join("librte_net_vecring.so");
    if built.exists() {
        built
    } else {
        deps.join("librte_net_vecring.so")
    }
}

/// One testpmd at a time: each busy-polls a CPU.
static TESTPMD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A `dpdk-testpmd` master (vecring PMD, io forwarding: every frame goes
/// back unchanged) and a C slave that sends `frames` frames of up to
/// `max_len` bytes, at most `window` in flight, and checks each one when it
/// comes back. The window keeps testpmd from finding the slave's ring full:
/// io forwarding drops what it cannot send.
fn testpmd_echo(test: &str, testpmd_args: &[&str], frames: &str, max_len: &str, window: &str) {
    let _one = TESTPMD.lock().unwrap_or_else(|p| p.into_inner());
    let so = pmd_so();
    assert!(
        so.exists(),
        "{} is missing: build the PMD (cargo build --release -p vecring-pmd) or set VECRING_PMD_SO",
        so.display()
    );
    let testpmd = std::env::var("TESTPMD").unwrap_or_else(|_| "dpdk-testpmd".to_string());
    let dir = scratch(test);
    let exe = compile(&dir, "peer", &[c_source("peer.c")]);
    let run_at = dir.join("run");
    std::fs::create_dir_all(&run_at).unwrap();
    let log = dir.join("testpmd.log");
    let prefix = format!("vrffi_{}_{test}", std::process::id());
    let log_file = std::fs::File::create(&log).unwrap();
    // Non-interactive testpmd forwards from the moment it starts until its
    // stdin closes. stdbuf: its stdout is a file here; line-buffer it so
    // that the wait below sees each line when it is printed.
    let mut pmd = Command::new("stdbuf")
        .args(["-oL", "-eL"])
        .arg(&testpmd)
        .arg("-d")
        .arg(&so)
        // No hugepages (CI may have none; --in-memory would refuse
        // --no-huge), no shared config files.
        .args([
            "--no-pci",
            "--no-huge",
            "--no-shconf",
            "-m",
            "512",
            "-l",
            "0,1",
        ])
        .arg(format!("--file-prefix={prefix}"))
        .arg(format!(
            "--vdev=eth_vecring0,domain=ffi,link={test},master=true,hugepages=never,run_dir={}",
            run_at.display()
        ))
        // --no-flush-rx: testpmd would otherwise drop what is queued when
        // forwarding starts.
        .args([
            "--",
            "--forward-mode=io",
            "--no-flush-rx",
            "--total-num-mbufs=8192",
        ])
        .args(testpmd_args)
        .stdin(Stdio::piped())
        // One open file for both, so that neither overwrites the other.
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {testpmd}: {e} (run scripts/setup.sh)"));
    let testpmd_log = || std::fs::read_to_string(&log).unwrap_or_default();
    // Forwarding runs once testpmd waits for its input.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !testpmd_log().contains("Press enter to exit") {
        if pmd.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let _ = pmd.kill();
            let _ = pmd.wait();
            panic!("testpmd did not start forwarding:\n{}", testpmd_log());
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let out = run(
        Command::new(&exe)
            .args(["--role", "slave", "--domain", "ffi", "--link", test])
            .args(["--frames", frames, "--max-len", max_len, "--window", window])
            .args(["--timeout", "200", "--run-dir"])
            .arg(&run_at),
        Duration::from_secs(220),
    );
    // End of input stops testpmd.
    drop(pmd.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = pmd.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = pmd.kill();
            let _ = pmd.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // EAL leaves an empty runtime directory behind even without shared
    // config.
    let _ = std::fs::remove_dir(Path::new("/var/run/dpdk").join(&prefix));
    let log = testpmd_log();
    assert!(
        out.status.success(),
        "C slave: {}\n--- testpmd log\n{log}",
        show(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("peer: ok: sent {frames}, received {frames}")),
        "{}",
        show(&out)
    );
    assert!(
        log.contains("VECRING: eth_vecring0: link up"),
        "testpmd log:\n{log}"
    );
    assert!(
        status.is_some(),
        "testpmd did not exit when its input closed:\n{log}"
    );
    assert!(
        log.contains(&format!("RX-packets: {frames} "))
            && log.contains(&format!("TX-packets: {frames} ")),
        "testpmd forwarded every frame once:\n{log}"
    );
}

#[test]
fn c_slave_talks_to_a_testpmd_master() {
    let _w = Watchdog::new(
        "c_slave_talks_to_a_testpmd_master",
        Duration::from_secs(600),
    );
    // Frames of 16..1514 bytes: each fits one of testpmd's 2 KiB mbufs.
    testpmd_echo("pmd-std", &[], "20000", "1514", "256");
}

#[test]
fn c_slave_sends_jumbo_frames_through_testpmd() {
    let _w = Watchdog::new(
        "c_slave_sends_jumbo_frames_through_testpmd",
        Duration::from_secs(600),
    );
    // Frames up to 9216 bytes: testpmd scatters them into mbuf chains on RX
    // and the PMD gathers the chains on TX. Up to 5 slots a frame: a
    // smaller window keeps the in-flight frames within the ring.
    testpmd_echo(
        "pmd-jumbo",
        &[
            "--max-pkt-len=9216",
            "--enable-scatter",
            "--tx-offloads=0x8000",
        ],
        "10000",
        "9216",
        "64",
    );
}

// ---- the documented example, through pkg-config --------------------------

#[test]
fn c_example_builds_with_pkg_config_and_runs() {
    let _w = Watchdog::new(
        "c_example_builds_with_pkg_config_and_runs",
        Duration::from_secs(180),
    );
    let dir = scratch("example");
    let prefix = dir.join("prefix");
    let out = run(
        Command::new("bash")
            .arg(root().join("vecring-ffi/install.sh"))
            .arg("--no-build")
            .arg("--target-dir")
            .arg(lib_dir())
            .arg("--prefix")
            .arg(&prefix),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "install.sh: {}", show(&out));
    let pc_path = prefix.join("lib/pkgconfig");
    let pkg_config = |args: &[&str]| -> Vec<String> {
        let out = run(
            Command::new("pkg-config")
                .env("PKG_CONFIG_PATH", &pc_path)
                .args(args)
                .arg("vecring"),
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "pkg-config {args:?}: {}", show(&out));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let version = pkg_config(&["--modversion"]);
    assert_eq!(version, [env!("CARGO_PKG_VERSION")]);
    let cflags = pkg_config(&["--cflags"]);
    assert_eq!(cflags, [format!("-I{}", prefix.join("include").display())]);
    let libs = pkg_config(&["--libs"]);
    assert!(libs.contains(&"-lvecring".to_string()), "{libs:?}");

    let hello = root().join("vecring-ffi/examples/c/hello.c");
    let docs = std::fs::read_to_string(root().join("docs/c-api.md")).unwrap();
    assert!(
        docs.contains("vecring-ffi/examples/c/hello.c"),
        "docs/c-api.md shows the example"
    );

    // Dynamic: exactly the documented command, plus an rpath for the
    // uninstalled prefix.
    let dynamic = dir.join("hello");
    let out = run(
        Command::new(c_compiler())
            .args(["-Wall", "-Wextra", "-Werror"])
            .arg(&hello)
            .arg("-o")
            .arg(&dynamic)
            .args(&cflags)
            .args(&libs)
            .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display())),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "cc hello.c: {}", show(&out));
    // Static: libvecring.a and its private dependencies.
    let static_exe = dir.join("hello-static");
    let static_libs: Vec<String> = pkg_config(&["--static", "--libs"])
        .into_iter()
        .map(|a| {
            if a == "-lvecring" {
                "-l:libvecring.a".to_string()
            } else {
                a
            }
        })
        .collect();
    let out = run(
        Command::new(c_compiler())
            .args(["-Wall", "-Wextra", "-Werror"])
            .arg(&hello)
            .arg("-o")
            .arg(&static_exe)
            .args(&cflags)
            .args(&static_libs),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "cc hello.c (static): {}", show(&out));
    // ldd must run (exit 0) and see libvecring.so in the dynamic build, or
    // its silence about the static one proves nothing.
    let ldd = run(Command::new("ldd").arg(&dynamic), Duration::from_secs(30));
    assert!(ldd.status.success(), "ldd (dynamic): {}", show(&ldd));
    assert!(
        String::from_utf8_lossy(&ldd.stdout).contains("libvecring.so"),
        "the dynamic build needs libvecring.so: {}",
        show(&ldd)
    );
    let ldd = run(
        Command::new("ldd").arg(&static_exe),
        Duration::from_secs(30),
    );
    assert!(ldd.status.success(), "ldd (static): {}", show(&ldd));
    assert!(
        !String::from_utf8_lossy(&ldd.stdout).contains("libvecring"),
        "the static build does not need libvecring.so: {}",
        show(&ldd)
    );

    for (exe, name) in [(&dynamic, "dynamic"), (&static_exe, "static")] {
        let run_at = dir.join(format!("run-{name}"));
        std::fs::create_dir_all(&run_at).unwrap();
        let out = run(Command::new(exe).arg(&run_at), Duration::from_secs(60));
        assert!(out.status.success(), "hello ({name}): {}", show(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "slave received 15 bytes: hello, vecring\n",
            "hello ({name})"
        );
    }
}

/// The two-process example (`vecring-ffi/examples/c/master.c` and
/// `slave.c`), built against the build tree as `docs/c-api.md` says, runs
/// as two processes: the slave starts first, the master second, and every
/// frame arrives in order.
#[test]
fn two_process_c_example_builds_from_the_build_tree_and_runs() {
    let _w = Watchdog::new("two_process_c_example", Duration::from_secs(180));
    let dir = scratch("two-process");
    let docs = std::fs::read_to_string(root().join("docs/c-api.md")).unwrap();
    for f in ["master.c", "slave.c"] {
        assert!(
            docs.contains(&format!("vecring-ffi/examples/c/{f}")),
            "docs/c-api.md shows {f}"
        );
    }
    let lib = lib_dir();
    let mut exes = Vec::new();
    for name in ["master", "slave"] {
        let exe = dir.join(name);
        // The build-tree line of docs/c-api.md: the header from include/,
        // the library where cargo built it, an rpath to find it at run time.
        let out = run(
            Command::new(c_compiler())
                .args(["-Wall", "-Wextra", "-Werror"])
                .arg(root().join(format!("vecring-ffi/examples/c/{name}.c")))
                .arg("-o")
                .arg(&exe)
                .arg(format!("-I{}", root().join("include").display()))
                .arg(format!("-L{}", lib.display()))
                .arg("-lvecring")
                .arg(format!("-Wl,-rpath,{}", lib.display())),
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "cc {name}.c: {}", show(&out));
        exes.push(exe);
    }
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let spawn = |exe: &Path| {
        Command::new(exe)
            .arg(&run_dir)
            .arg("20000")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let slave = spawn(&exes[1]);
    std::thread::sleep(Duration::from_millis(100));
    let master = spawn(&exes[0]);
    let slave = finish(slave, Duration::from_secs(60), "slave");
    let master = finish(master, Duration::from_secs(60), "master");
    assert!(slave.status.success(), "slave: {}", show(&slave));
    assert!(master.status.success(), "master: {}", show(&master));
    assert!(
        String::from_utf8_lossy(&slave.stdout).contains("slave: received 20000 frames in order"),
        "{}",
        show(&slave)
    );
    assert!(
        String::from_utf8_lossy(&master.stdout).contains("master: sent 20000 frames"),
        "{}",
        show(&master)
    );
}
