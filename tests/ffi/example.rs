//! The documented example, `vecring-ffi/examples/c/hello.c`, built through
//! the installed pkg-config file (dynamically and statically) and from the
//! build tree, and run.

use super::{c_compiler, finish, lib_dir, root, run, scratch, show};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use vecring_tests::Watchdog;

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
                .arg(format!(
                    "-I{}",
                    root().join("vecring-ffi/include").display()
                ))
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
