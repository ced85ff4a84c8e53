//! Build script of `librte_net_vecring.so`.
//!
//! 1. Finds DPDK (>= 22.11) with `pkg-config` and takes its compiler flags
//!    verbatim (they carry `-include rte_config.h` and the `-march` DPDK was
//!    built for, which the headers' inline functions assume).
//! 2. Finds DPDK's driver-SDK headers (`ethdev_driver.h`, `bus_vdev_driver.h`,
//!    ...): beside the public headers when the distribution installs them,
//!    else in `$VECRING_DPDK_SDK/include` (default `/opt/vecring/dpdk-sdk`),
//!    where `scripts/setup.sh` puts them.
//! 3. Compiles `src/sys/glue.c` (registration macros and wrappers of DPDK's
//!    `static inline` helpers) and links it whole, so that its constructors
//!    (driver and log-type registration) are kept in the cdylib.
//! 4. Generates Rust bindings for the few DPDK types and functions the driver
//!    uses with `bindgen`.
//! 5. Turns the DPDK version into the `cfg`s of `src/sys/compat.rs`, the one
//!    module where the lines differ (see [`LINE_CFGS`]).
//! 6. Links the cdylib against the DPDK shared libraries it calls. They have
//!    the same sonames as those `dpdk-testpmd` already has loaded, so the
//!    dynamic loader reuses them: there is one EAL in the process.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Oldest DPDK whose ethdev driver ABI this driver is written against.
const MIN_DPDK: &str = "22.11";
/// Default location of the driver-SDK headers installed by `scripts/setup.sh`.
const DEFAULT_SDK: &str = "/opt/vecring/dpdk-sdk";
/// The `cfg`s of `src/sys/compat.rs` and the DPDK release (year, month) from
/// which each holds.
const LINE_CFGS: &[(&str, (u32, u32))] = &[
    // rte_mbuf's RTE_MARKER fields became unions of anonymous structs.
    ("dpdk_mbuf_unions", (24, 7)),
    // Per-queue counters left rte_eth_stats for stats_get's third argument.
    ("dpdk_queue_stats", (25, 11)),
];
/// DPDK libraries whose symbols the driver calls (others are pulled in by these).
const DPDK_LIBS: &[&str] = &[
    "rte_ethdev",
    "rte_mbuf",
    "rte_mempool",
    "rte_eal",
    "rte_bus_vdev",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/sys/glue.c");
    println!("cargo:rerun-if-changed=src/sys/wrapper.h");
    println!("cargo:rerun-if-env-changed=VECRING_DPDK_SDK");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    let dpdk = pkg_config::Config::new()
        .atleast_version(MIN_DPDK)
        .cargo_metadata(false)
        .probe("libdpdk")
        .unwrap_or_else(|e| {
            panic!(
                "vecring-pmd: DPDK >= {MIN_DPDK} not found with pkg-config ({e}).\n\
                 Install it with `sudo scripts/setup.sh` (Debian 12: packages dpdk-dev, libdpdk-dev)."
            )
        });
    let line = release(&dpdk.version);
    for (cfg, since) in LINE_CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if line >= *since {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
    println!("cargo:rustc-env=VECRING_DPDK_VERSION={}", dpdk.version);
    let cflags = dpdk_cflags();
    let sdk = find_sdk_headers(&dpdk.include_paths);

    // --- C glue -----------------------------------------------------------
    let mut build = cc::Build::new();
    build
        .file("src/sys/glue.c")
        .define("ALLOW_INTERNAL_API", None)
        // `rte_intr_instance_alloc` and `rte_intr_type_set` (Rx interrupts,
        // src/port/intr_handle.rs) are experimental in 22.11.
        .define("ALLOW_EXPERIMENTAL_API", None)
        .include(&sdk)
        .opt_level(3)
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-Wno-unused-parameter")
        // Keep the glue's constructors (driver + log-type registration).
        .link_lib_modifier("+whole-archive");
    for f in &cflags {
        build.flag(f);
    }
    build.compile("vecring_glue");

    // --- bindings -----------------------------------------------------------
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let mut bg = bindgen::Builder::default()
        .header("src/sys/wrapper.h")
        .clang_arg("-DALLOW_INTERNAL_API")
        .clang_arg("-DALLOW_EXPERIMENTAL_API")
        .clang_arg(format!("-I{}", sdk.display()))
        .clang_args(&cflags)
        .use_core()
        .derive_default(true)
        .default_enum_style(bindgen::EnumVariation::ModuleConsts)
        .layout_tests(true)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for t in [
        "rte_eth_dev",
        "rte_eth_dev_data",
        "eth_dev_ops",
        "rte_mbuf",
        "rte_mempool",
        "rte_eth_dev_info",
        "rte_eth_stats",
        "rte_eth_xstat",
        "rte_eth_xstat_name",
        "rte_eth_link",
        "rte_ether_addr",
        "rte_eth_rxconf",
        "rte_eth_txconf",
        "rte_vdev_device",
        "rte_eth_event_type",
        "rte_proc_type_t",
        "rte_mbuf_ext_shared_info",
        "rte_mp_msg",
        "rte_mp_reply",
        "rte_intr_handle_type",
        // 25.11 and newer (src/sys/compat.rs).
        "eth_queue_stats",
    ] {
        bg = bg.allowlist_type(t);
    }
    for f in [
        "rte_eth_dev_callback_process",
        "rte_eth_dev_probing_finish",
        "rte_eth_dev_allocated",
        "rte_eth_dev_release_port",
        "rte_pktmbuf_free_bulk",
        "rte_eal_process_type",
        "rte_socket_id",
        "rte_log_get_level",
        "rte_eth_dev_attach_secondary",
        "rte_mp_action_register",
        "rte_mp_request_sync",
        "rte_mp_reply",
        "rte_intr_instance_alloc",
        "rte_intr_instance_free",
        "rte_intr_type_set",
        "rte_intr_efds_index_set",
        "rte_intr_nb_efd_set",
        "rte_intr_max_intr_set",
        "rte_intr_efd_counter_size_set",
        "rte_intr_vec_list_alloc",
        "rte_intr_vec_list_free",
        "rte_intr_vec_list_index_set",
        "rte_intr_free_epoll_fd",
        "rte_get_tsc_hz",
        "vecring_.*",
    ] {
        bg = bg.allowlist_function(f);
    }
    bg = bg
        .allowlist_var("rte_eth_devices")
        .allowlist_var("vecring_logtype")
        .allowlist_var("RTE_INTR_VEC_RXTX_OFFSET");
    let bindings = bg
        .generate()
        .unwrap_or_else(|e| panic!("vecring-pmd: bindgen over src/sys/wrapper.h failed: {e}"));
    bindings
        .write_to_file(out.join("dpdk_bindings.rs"))
        .expect("write dpdk_bindings.rs");

    // --- linking ------------------------------------------------------------
    for p in &dpdk.link_paths {
        println!("cargo:rustc-link-search=native={}", p.display());
        // A DPDK outside the loader's default directories (a release built
        // into its own prefix): the driver finds its libraries there itself
        // when EAL loads it with `-d` (the application's RUNPATH does not
        // apply to a dlopen()ed object's own dependencies).
        if !p.starts_with("/usr/lib") && !p.starts_with("/lib") {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,{}", p.display());
        }
    }
    for lib in DPDK_LIBS {
        println!("cargo:rustc-link-lib=dylib={lib}");
    }
}

/// (year, month) of a DPDK version such as `24.11.6`.
fn release(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>());
    match (parts.next(), parts.next()) {
        (Some(Ok(y)), Some(Ok(m))) => (y, m),
        _ => panic!("vecring-pmd: pkg-config gives DPDK version {version:?}, not YY.MM[.N]"),
    }
}

/// `pkg-config --cflags libdpdk`, split into arguments.
fn dpdk_cflags() -> Vec<String> {
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&pc)
        .args(["--cflags", "libdpdk"])
        .output()
        .unwrap_or_else(|e| panic!("vecring-pmd: cannot run {pc}: {e}"));
    assert!(
        out.status.success(),
        "vecring-pmd: `{pc} --cflags libdpdk` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("pkg-config output is UTF-8");
    // `-include rte_config.h` is two words that must stay together in order;
    // plain whitespace splitting keeps that order.
    text.split_whitespace().map(str::to_owned).collect()
}

/// Directory holding `ethdev_driver.h` and the other driver-SDK headers.
fn find_sdk_headers(include_paths: &[PathBuf]) -> PathBuf {
    let mut candidates: Vec<PathBuf> = include_paths.to_vec();
    candidates.push("/usr/include/dpdk".into());
    candidates.push("/usr/include/x86_64-linux-gnu/dpdk".into());
    let installed = candidates
        .into_iter()
        .find(|d| has_sdk(d) && d.join("bus_vdev_driver.h").is_file());
    if let Some(dir) = installed {
        return dir;
    }
    let sdk = env::var_os("VECRING_DPDK_SDK")
        .map(PathBuf::from)
        .unwrap_or_else(|| DEFAULT_SDK.into())
        .join("include");
    if has_sdk(&sdk) {
        return sdk;
    }
    panic!(
        "vecring-pmd: DPDK's driver-SDK headers (ethdev_driver.h, ethdev_vdev.h, bus_vdev_driver.h, \
         bus_driver.h, dev_driver.h, rte_ethdev_core.h) were not found: not installed with libdpdk-dev \
         and not in {} (override with VECRING_DPDK_SDK=<dir containing include/>).\n\
         Run `sudo scripts/setup.sh`: it extracts them from the distribution's DPDK source package \
         of the installed version.",
        sdk.display()
    );
}

fn has_sdk(dir: &Path) -> bool {
    ["ethdev_driver.h", "ethdev_vdev.h", "bus_vdev_driver.h"]
        .iter()
        .all(|h| dir.join(h).is_file())
}
