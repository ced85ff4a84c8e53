//! The C API (`vecring-ffi`: `libvecring.so`, `libvecring.a`,
//! `vecring-ffi/include/vecring.h`) from real C programs, compiled with the system C
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
//!
//! This file holds the helpers, the header's checks and the API's contract;
//! the close under attack, the exchanges across languages and the example
//! are in `tests/ffi/close.rs`, `interop.rs` and `example.rs`.

use std::ffi::c_int;
use std::fmt::Write as _;
use std::io::Read;
use std::mem::{align_of, size_of, MaybeUninit};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use vecring::{vecring_buf_t, vecring_counters_t, vecring_frame_t, vecring_options_t};
use vecring_core::test_support::pattern;
use vecring_tests::Watchdog;

// A test target's root resolves `mod` beside itself (tests/wait.rs is the
// wait test binary): this module's file is in tests/ffi/.
#[path = "ffi/wait.rs"]
mod wait;
// The other groups of tests, each in its own file there.
#[path = "ffi/close.rs"]
mod close;
#[path = "ffi/example.rs"]
mod example;
#[path = "ffi/interop.rs"]
mod interop;

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

/// Compiles C sources into `dir/name`, against `vecring-ffi/include/vecring.h` and the
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
    .arg(root().join("vecring-ffi/include"))
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
            master_uids,
            master_uid_count,
            netns,
        ]
    );
    assert_eq!(n, 21, "every field of vecring_options_t is checked");
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
            let mut name = l[..open].rsplit([' ', '*']).next()?;
            if name.is_empty() {
                // `void (name)(...)`: a function the header also defines
                // as a macro, declared with its name in parentheses.
                let rest = &l[open + 1..];
                name = &rest[..rest.find(')')?];
            }
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
            .arg(root().join("vecring-ffi/include"))
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
    let header = std::fs::read_to_string(root().join("vecring-ffi/include/vecring.h")).unwrap();
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
