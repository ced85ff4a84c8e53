//! Every command that `README.md`, `docs/` and the READMEs of the
//! repository's directories show is run here, as their reader would run
//! it, so that a guide cannot go stale.
//!
//! A document shows commands in `sh` and `console` blocks
//! (`tests/support/markdown.rs` says how they are read). Each such block is either
//! run, by the plan [`PLANS`] gives it (`tests/support/doc_runner.rs` runs them), or
//! left out with the reason: a whole document in [`EXCLUDED_DOCS`], a
//! command in [`SKIPPED`], a block by a plan of [`How::Excluded`]. A
//! command block that is none of these fails
//! [`every_command_block_is_run_or_excluded`], as do a plan that finds no
//! block, a fence without a language and an indented code block: a new
//! command in a document cannot go untested.
//!
//! Each document runs in order, top to bottom, in a sandbox of its own
//! (`tests/support/sandbox.rs`: new mount, PID and network namespaces, in which the
//! repository, `/usr/local`, `/opt` and `/etc` are overlays and `/run`,
//! `/tmp`, `/var/lib/lxc` and `/dev/hugepages` are empty), so the commands
//! keep their default paths and names (`/run/vecring`, a container named
//! `web`, DPDK's default file prefix) and change nothing on the host. The
//! working directory is the repository. `vecring` and the DPDK driver are
//! installed first as `README.md` says ([`PREAMBLE`]).
//!
//! Commands a document shows in two shells (a master here, a slave there)
//! run in terminals of their own, started and ended as the document says
//! (Ctrl-D, Ctrl-C, `quit`). A command must exit with status 0, and the
//! output a `console` block shows must appear, in order, in what the
//! command printed (numbers aside: `markdown::shape`); a document's own
//! check compares the numbers that must agree (frames sent and received).
//!
//! Needs root, LXC, DPDK 22.11 (`dpdk-testpmd`, `dpdk-proc-info`,
//! `dpdk-dumpcap`) and hugepages (`scripts/setup.sh`), and the workspace
//! built (`cargo build --release --workspace`, as `scripts/test.sh` does).
//! The documents run one at a time; their containers and DPDK processes
//! busy-poll both CPUs of a small machine. A failed run keeps its sandbox's
//! scratch directory (outputs, scripts, the steps taken), as does every
//! run with `VECRING_TEST_KEEP=1`.

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;
use vecring_tests::doc_runner::{
    number_after, run, run_in, steps, steps_in, Event, Event::*, How, Plan, Policy, Record, Step::*,
};

/// Documents not run, with the reason (a path, or a directory ending in
/// `/`). To run one, remove it here and give its blocks plans.
const EXCLUDED_DOCS: &[(&str, &str)] = &[(
    "docs/benchmarks/",
    "benchmark commands take minutes; run by hand",
)];

/// Commands never run, by how they start, with the reason. A block whose
/// commands are all skipped needs no plan.
const SKIPPED: &[(&str, &str)] = &[
    (
        "scripts/setup.sh",
        "installs distribution packages (apt), DPDK's driver-SDK headers and hugepages; scripts/test.sh runs it before the tests",
    ),
    (
        "scripts/build-pmd.sh /usr",
        "scripts/test.sh runs it before the tests (the same build and install); in a sandbox it would rewrite the host's DPDK driver directory, which is no overlay",
    ),
    (
        "scripts/deb.sh",
        "builds the Debian packages: tests/packages.sh builds them, installs them in a clean Debian 12 root file system and checks what they hold and do (in a sandbox the build would only repeat it)",
    ),
    (
        "apt install ./target/debian/",
        "installs the Debian packages on the host, whose /usr and package database are no overlay in a sandbox: tests/packages.sh installs them in a clean Debian 12 root file system, checks them and purges them",
    ),
    (
        "cargo build --release -p ",
        "scripts/test.sh builds the workspace (cargo build --release --workspace) before the tests, the same artifacts; a build of one package resolves its dependencies' features differently and relinks it for up to a minute",
    ),
];

/// What a sandbox has before a document's first command: the tool installed
/// as `README.md` says. The driver is already where `scripts/build-pmd.sh
/// /usr` installed it (`scripts/test.sh` runs it before the tests): in
/// DPDK's driver directory, and as `/usr/local/lib/vecring/` (the overlay
/// shows the host's).
const PREAMBLE: &str = "install -m 0755 target/release/vecring /usr/local/bin/
test -e /usr/local/lib/vecring/librte_net_vecring.so
";

const LXC: &str = "docs/lxc.md";
const OVS: &str = "docs/ovs.md";
const DPC: &str = "docs/dpdk-container.md";
const CTR: &str = "docs/containers.md";

/// The cgroup under which the sandbox's dockerd puts its containers'
/// cgroups (cgroups are the host's: removed after the run).
const DOCKER_CGROUP: &str = "vecring-doc-docker";
/// Starts the sandbox's dockerd: Debian's, with its data in the sandbox's
/// /tmp, no bridge and no iptables rules, and waits until it answers.
const DOCKERD_START: &str = "rm -f /usr/local/bin/docker
dockerd --data-root /tmp/docker --bridge=none --iptables=false --ip6tables=false --cgroup-parent=vecring-doc-docker >/tmp/dockerd.log 2>&1 &
for i in $(seq 300); do docker version >/dev/null 2>&1 && exit 0; sleep 0.1; done
cat /tmp/dockerd.log; exit 1
";
/// Why docs/containers.md's Podman section is not run here.
const PODMAN_EXCLUDED: &str = "Podman keeps its storage in /var/lib/containers and a rootless user's in its home, both the host's in the sandbox; tests/containers/podman.sh runs these arrangements and flags (each with traffic and exact counts) with a storage, a user and cgroups of its own, and removes them";
/// Why docs/operations.md's unit commands are not run here.
const SYSTEMD_EXCLUDED: &str = "systemctl needs systemd as PID 1, which the sandbox has not; tests/systemd/run.sh boots systemd in a container with the unit and its configuration installed as this section says, enables and starts two instances (systemctl enable --now), and checks them";
/// Stops the sandbox's dockerd (which stops its containerd).
const DOCKERD_STOP: &str = "kill \"$(cat /var/run/docker.pid)\"
for i in $(seq 200); do [ -e /var/run/docker.pid ] || exit 0; sleep 0.1; done
exit 1
";

/// What the reader of `docs/dpdk-container.md` types once both testpmds
/// are up and the link is: `start` in both, `stop` in the sender, then
/// (once its last frames are read) in the receiver, and `quit` in both.
/// The pauses are the reader's: traffic for two seconds, and the time it
/// takes to move to the other shell.
const fn testpmd_traffic(sender: &'static str, receiver: &'static str) -> [Event; 11] {
    [
        WaitFor(receiver, "link up", 1),
        Type(receiver, "start"),
        Type(sender, "start"),
        Shell("sleep 2"),
        Type(sender, "stop"),
        Shell("sleep 1"),
        Type(receiver, "stop"),
        Type(sender, "quit"),
        Type(receiver, "quit"),
        Exit(sender),
        Exit(receiver),
    ]
}
const HOST_SENDS: [Event; 11] = testpmd_traffic("host", "container");
const CONTAINER_SENDS: [Event; 11] = testpmd_traffic("container", "host");

const PLANS: &[Plan] = &[
    // docs/lxc.md: an unprivileged container with a root file system of
    // its own, started before the master and after it, then privileged.
    run_in(
        LXC,
        "1.",
        "$ vecring prepare --domain web --owner 100000:100000",
    ),
    run_in(LXC, "2.", "scripts/image.sh vecring"),
    run_in(LXC, "3.", "cat > /var/lib/lxc/web/config"),
    run_in(LXC, "3.", "$ vecring doctor --domain web --lxc web"),
    steps_in(
        LXC,
        "4.",
        "$ lxc-start -n web",
        &[Fg, Term("container", Some("waiting for the master"))],
        &[],
    ),
    Plan {
        after: &[EndInput("container")],
        ..run_in(LXC, "4.", "$ vecring txonly --role master")
    },
    run_in(LXC, "5.", "$ lxc-stop -n web -k"),
    steps_in(
        LXC,
        "5.",
        "$ vecring txonly --role master",
        &[Term("host", Some("waiting for the slave"))],
        &[],
    ),
    steps_in(
        LXC,
        "5.",
        "$ lxc-start -n web",
        &[Fg, Term("container", None)],
        &[Exit("host"), EndInput("container")],
    ),
    // Section 6: a tap in the container and one on the host.
    run_in(LXC, "6.", "echo 'lxc.mount.entry = /dev/net/tun"),
    steps_in(
        LXC,
        "6.",
        "$ lxc-attach -n web -- vecring tap",
        &[Fg, Term("container tap", Some("bridging link"))],
        &[],
    ),
    steps_in(
        LXC,
        "6.",
        "$ vecring tap --role master --domain web",
        &[Term("host tap", Some("carrier on"))],
        &[WaitFor("container tap", "carrier on", 1)],
    ),
    Plan {
        after: &[Interrupt("container tap"), Interrupt("host tap")],
        ..run_in(LXC, "6.", "$ ip addr add 10.0.3.1/24 dev web0")
    },
    run_in(LXC, "7.", "sed -i -e '/^lxc.idmap/d'"),
    steps_in(
        LXC,
        "7.",
        "$ lxc-start -n web",
        &[Fg, Term("container", Some("waiting for the master"))],
        &[],
    ),
    Plan {
        after: &[EndInput("container")],
        ..run_in(LXC, "7.", "$ vecring txonly --role master")
    },
    run_in(LXC, "7.", "lxc-destroy -n web"),
    // docs/dpdk-container.md: testpmd in a container with a root file
    // system of its own, unprivileged without hugepages, then privileged
    // with them, joined to a testpmd on the host.
    run_in(DPC, "1.", "$ vecring prepare --domain dp --owner 100000:100000"),
    run_in(DPC, "1.", "scripts/image.sh dpdk"),
    run_in(DPC, "2.", "cat > /var/lib/lxc/dp/config"),
    run_in(DPC, "2.", "$ vecring doctor --domain dp --lxc dp"),
    steps_in(
        DPC,
        "3.",
        "$ dpdk-testpmd",
        &[Term("host", Some("testpmd> "))],
        &[],
    ),
    steps_in(
        DPC,
        "3.",
        "$ lxc-attach -n dp",
        &[Term("container", Some("testpmd> "))],
        &HOST_SENDS,
    ),
    steps_in(
        DPC,
        "4.",
        "$ lxc-attach -n dp",
        &[Term("container", Some("testpmd> "))],
        &[],
    ),
    steps_in(
        DPC,
        "4.",
        "$ dpdk-testpmd",
        &[Term("host", Some("testpmd> "))],
        &CONTAINER_SENDS,
    ),
    run_in(DPC, "5.", "lxc.mount.entry = hugetlbfs"),
    run_in(DPC, "5.", "$ vecring doctor --domain dp --lxc dp"),
    steps_in(
        DPC,
        "5.",
        "$ lxc-attach -n dp",
        &[Term("container", Some("testpmd> "))],
        &[],
    ),
    steps_in(
        DPC,
        "5.",
        "$ dpdk-testpmd",
        &[Term("host", Some("testpmd> "))],
        &CONTAINER_SENDS,
    ),
    // Section 6: pktgen on both ends, each driven by a Lua script that
    // ends it; the container's waits for the frames.
    run_in(DPC, "6.", "pktgen=$(scripts/pktgen.sh /usr)"),
    steps_in(
        DPC,
        "6.",
        "$ lxc-attach -n dp -- pktgen",
        &[Term("container", Some("waiting for peer"))],
        &[],
    ),
    steps_in(
        DPC,
        "6.",
        "$ /opt/vecring/pktgen-22.11/bin/pktgen",
        &[Fg],
        &[Exit("container")],
    ),
    run_in(DPC, "6.", "lxc-destroy -n dp"),
    // docs/containers.md: testpmd in a Docker container of the image
    // scripts/image.sh makes, joined to a testpmd on the host. The daemon
    // is the reader's (`service docker start`); here one of the sandbox's
    // own, its data in the sandbox's /tmp and its containers' cgroups
    // under DOCKER_CGROUP, and Debian's client (the sandbox's /usr/local
    // may hold another `docker`).
    Plan {
        before: &[Shell(DOCKERD_START)],
        ..run(CTR, "scripts/image.sh dpdk target/images/testpmd --tar")
    },
    run(CTR, "docker build -q"),
    run(CTR, "vecring prepare --domain dk"),
    steps_in(
        CTR,
        "3.",
        "$ dpdk-testpmd",
        &[Term("host", Some("testpmd> "))],
        &[],
    ),
    steps_in(
        CTR,
        "3.",
        "$ docker run -i",
        &[Term("container", Some("testpmd> "))],
        &HOST_SENDS,
    ),
    Plan {
        after: &[Shell(DOCKERD_STOP)],
        ..run(CTR, "docker rmi vecring-testpmd")
    },
    Plan {
        how: How::Excluded(
            "a benchmark: it busy-polls both CPUs, and the container's image is made from the build tree; tests/containers/docker.sh (case forward_table) runs this command with a private dockerd and checks the table and every count",
        ),
        ..run(CTR, "bash benches/dpdk-agent/build.sh\ntarget/release/vecring-bench host-container --forward --container docker")
    },
    // docs/containers.md, "Podman": the same commands and flags run in
    // tests/containers/podman.sh (scripts/test.sh), with Podman's storage
    // in that test's own directory.
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "podman import target/images/vecring.tar")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "podman run -i --rm --network none -v /run/vecring/pd")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring txonly --role master --domain pd ")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "su - alice")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "--run-dir $HOME/vecring-run")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring prepare --domain pu")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring cdi write --domain pc --link eth0")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "--device vecring.dev/link=pc-eth0 vecring-tool")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring txonly --role master --domain pc ")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring prepare --domain pg --owner 1001:1001")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "-v /run/vecring/pg:/run/vecring/pg -v $HOME/lua:/lua pktgen-image")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "--cap-drop=ALL --user 4242:4242")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring txonly --role master --domain pm")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "--name ns1 --network none vecring-tool")
    },
    Plan {
        how: How::Excluded(PODMAN_EXCLUDED),
        ..run(CTR, "vecring txonly --role master --domain ns --link l0 --netns")
    },
    // docs/kubernetes.md: a pod's application and the device plugin.
    Plan {
        how: How::Excluded(
            "runs inside a pod whose network namespace has a master listening in it; tests/containers/podman.sh runs testpmd on eth_vecring in a container (group cdi, case cdi_testpmd), and the tool's slave with netns=self in containers with no volume (group netns, tests/attacks_netns.rs)",
        ),
        ..run("docs/kubernetes.md", "dpdk-testpmd --no-huge -m 64 --no-pci --iova-mode=va --in-memory")
    },
    Plan {
        how: How::Excluded(
            "needs a kubelet; vecring-device-plugin/tests/kubelet.rs runs the plugin against a fake kubelet speaking the device-plugin API",
        ),
        ..run("docs/kubernetes.md", "vecring-device-plugin --domain cni")
    },
    Plan {
        how: How::Excluded(
            "writes /etc/criu/runc.conf and checkpoints a container with a CRIU newer than Debian 12's; tests/containers/podman.sh (group criu) does the same with the container's org.criu.config annotation and scripts/criu.sh's CRIU",
        ),
        ..run("docs/kubernetes.md", "echo \"libdir /usr/lib/vecring/criu\"")
    },
    // README.md
    Plan {
        how: How::Excluded(
            "scripts/demo.sh is the demonstration: it installs packages, builds, and benchmarks a host<->container link for minutes (its parts are tested: tests/lxc.rs, benches/tests/host_container.rs); scripts/test.sh is the test suite, which runs this test",
        ),
        ..run("README.md", "scripts/demo.sh")
    },
    Plan {
        how: How::Excluded(
            "the developer loop without root builds the default members in debug for minutes; scripts/test.sh builds the whole workspace and runs the same tests as root, where none is skipped",
        ),
        ..run("README.md", "cargo test                                     #")
    },
    Plan {
        how: How::Excluded(
            "each root-only part of the suite alone: scripts/test.sh runs every one of them in full",
        ),
        ..run("README.md", "bash tests/dpdk/run.sh traffic rust_interop")
    },
    Plan {
        how: How::Excluded(
            "the ring's loom models, their weakening and Miri: scripts/test.sh runs each of these commands as its own step",
        ),
        ..run("README.md", "RUSTFLAGS=\"--cfg loom\" CARGO_TARGET_DIR=target/loom cargo test")
    },
    steps(
        "README.md",
        "dpdk-testpmd --no-pci \\\n    --vdev=eth_vecring0,domain=testcontainer,link=tap456,master=true",
        &[Term("testpmd", Some("testpmd> "))],
        &[
            Type("testpmd", "show port info 0"),
            Type("testpmd", "quit"),
            Exit("testpmd"),
        ],
    ),
    // Another DPDK line: the one scripts/test.sh built (the sandbox's /opt
    // shows the host's), the driver built and installed for it for real.
    run("README.md", "scripts/build-pmd.sh \"$(scripts/dpdk.sh 24.11)\""),
    steps(
        "README.md",
        "/opt/vecring/dpdk-24.11/bin/dpdk-testpmd",
        &[Term("testpmd 24.11", Some("testpmd> "))],
        &[
            Type("testpmd 24.11", "show port info 0"),
            Type("testpmd 24.11", "quit"),
            Exit("testpmd 24.11"),
        ],
    ),
    run(
        "README.md",
        "install -m 0755 target/release/vecring /usr/local/bin/",
    ),
    // pktgen: the build scripts/test.sh made (the sandbox's /opt shows
    // the host's; no tarball in the reader's ~/pktgen here).
    run("README.md", "export VECRING_PKTGEN_SOURCES=~/pktgen"),
    // The image builder: an LXC root file system, another line's image as
    // a tarball, the tool's with a Containerfile (docs/containers.md runs
    // them in Docker).
    run("README.md", "scripts/image.sh dpdk /var/lib/lxc/dp/rootfs"),
    // docs/c-api.md
    run(
        "docs/c-api.md",
        "vecring-ffi/install.sh --no-build           # as root",
    ),
    Plan {
        before: &[Shell("cp vecring-ffi/examples/c/hello.c app.c")],
        ..run(
            "docs/c-api.md",
            "cc app.c -o app $(pkg-config --cflags --libs vecring)",
        )
    },
    run("docs/c-api.md", "./hello /tmp/vecring-demo"),
    run("docs/c-api.md", "-o master -Ivecring-ffi/include -Ltarget/release"),
    run(
        "docs/c-api.md",
        "cc vecring-ffi/examples/c/master.c -o master $(pkg-config",
    ),
    steps(
        "docs/c-api.md",
        "./slave /tmp/vecring-demo 1000",
        &[Fg, Term("slave", None), Fg],
        &[Exit("slave")],
    ),
    // docs/operations.md
    steps(
        "docs/operations.md",
        "vecring txonly --role master --domain web --link eth0 --seconds 600",
        &[
            Term("web master", Some("waiting for the slave")),
            Term("web slave", Some("link up")),
            Term("db master", Some("waiting for the slave")),
        ],
        &[],
    ),
    run("docs/operations.md", "$ vecring list"),
    steps(
        "docs/operations.md",
        "$ vecring stats web --watch 1",
        &[Term("stats", None)],
        &[WaitFor("stats", "web/eth0: up", 3), Interrupt("stats")],
    ),
    run("docs/operations.md", "$ vecring prepare --domain app --runtime docker"),
    // "Surviving a reboot": the entry is written to the sandbox's /etc.
    run(
        "docs/operations.md",
        "$ vecring prepare --domain app --owner 100000:100000 --persist",
    ),
    run("docs/operations.md", "$ vecring prepare --domain app --forget"),
    // The spec goes to the sandbox's /run (/var/run/cdi).
    run("docs/operations.md", "$ vecring cdi write --domain app --link eth0"),
    Plan {
        after: &[
            Interrupt("web master"),
            Interrupt("db master"),
            EndInput("web slave"),
        ],
        ..run("docs/operations.md", "$ vecring doctor")
    },
    run(
        "docs/operations.md",
        "mkdir -p /etc/bash_completion.d && vecring completions bash",
    ),
    // docs/operations.md, `vecring tap`: the host and a namespace c1.
    run("docs/operations.md", "ip netns add c1"),
    steps(
        "docs/operations.md",
        "$ vecring tap --role master --domain lab",
        &[Term("lab master", Some("bridging link"))],
        &[],
    ),
    steps(
        "docs/operations.md",
        "$ ip netns exec c1 vecring tap --domain lab",
        &[Term("lab slave", Some("carrier on"))],
        &[WaitFor("lab master", "carrier on", 1)],
    ),
    Plan {
        after: &[Interrupt("lab slave"), Interrupt("lab master")],
        ..run("docs/operations.md", "$ ip addr add 10.0.9.1/24 dev lab0")
    },
    // docs/operations.md, "Running a TAP bridge as a service".
    Plan {
        how: How::Excluded(SYSTEMD_EXCLUDED),
        ..run("docs/operations.md", "systemctl enable --now vecring-tap@web0")
    },
    Plan {
        how: How::Excluded(SYSTEMD_EXCLUDED),
        ..run("docs/operations.md", "sed 's|/usr/bin/vecring|/usr/local/bin/vecring|'")
    },
    // docs/ovs.md: OVS's database and run directory in the sandbox's /run.
    run(OVS, "ovsdb-tool create /var/run/openvswitch/conf.db"),
    run(OVS, "ovs-vsctl add-br br0"),
    steps_in(
        OVS,
        "4.",
        "vecring rxonly --role slave --domain c2",
        &[Term("c2", Some("link up"))],
        &[],
    ),
    Plan {
        after: &[EndInput("c2")],
        ..run_in(OVS, "4.", "vecring txonly --role slave --domain c1")
    },
    run(OVS, "ovs-vsctl get Interface c1 statistics:rx_packets"),
    run(OVS, "mtu_request=9000"),
    run(OVS, "ovs-vsctl del-port br0 c1"),
    run(OVS, "exit --cleanup"),
    // vecring-pmd/README.md
    run("vecring-pmd/README.md", "socket=63 -- -i"),
    run("vecring-pmd/README.md", "Number of available ports: 2"),
    steps(
        "vecring-pmd/README.md",
        "--file-prefix=vr_master --lcores=0@0,1@0",
        &[
            Term("master", Some("testpmd> ")),
            Term("slave", Some("testpmd> ")),
        ],
        &[
            WaitFor("master", "link up", 1),
            WaitFor("slave", "link up", 1),
        ],
    ),
    run("vecring-pmd/README.md", "dpdk-proc-info -d"),
    // The line scripts/test.sh built (the sandbox's /opt shows the host's).
    run("vecring-pmd/README.md", "scripts/build-pmd.sh \"$(scripts/dpdk.sh 25.11)\""),
    steps(
        "vecring-pmd/README.md",
        "dpdk-dumpcap --file-prefix vr_master",
        &[Term("dumpcap", Some("Packets captured"))],
        &[
            Interrupt("dumpcap"),
            Type("master", "quit"),
            Type("slave", "quit"),
            Exit("master"),
            Exit("slave"),
        ],
    ),
];

/// The repository root.
fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

static POLICY: LazyLock<Policy> = LazyLock::new(|| Policy {
    root: root(),
    excluded_docs: EXCLUDED_DOCS,
    skipped: SKIPPED,
    plans: PLANS,
    preamble: PREAMBLE,
});

#[test]
fn a_plugin_inside_the_checkout_is_refused() {
    use vecring_tests::doc_runner::plugin_in_checkout;
    for bad in [
        "dpdk-testpmd -d target/release/librte_net_vecring.so --no-pci -- -i",
        "dpdk-testpmd -d ./librte_net_vecring.so",
        "dpdk-proc-info -d /tmp/vecring/target/release/librte_net_vecring.so -- --stats",
        "dpdk-testpmd -dtarget/release/librte_net_vecring.so",
        "dpdk-testpmd -d \"target/release/librte_net_vecring.so\"",
    ] {
        assert!(plugin_in_checkout(bad).is_some(), "not refused: {bad}");
    }
    for good in [
        "dpdk-testpmd -d /usr/local/lib/vecring/librte_net_vecring.so --no-pci",
        "dpdk-testpmd --no-pci --vdev=eth_vecring0,domain=d,link=l -- -i",
        "\"$prefix/bin/dpdk-testpmd\" -d \"$prefix/lib/dpdk/pmds-25.0/librte_net_vecring.so\"",
        "install -d -m 0755 /usr/local/lib/vecring",
    ] {
        assert_eq!(plugin_in_checkout(good), None, "refused: {good}");
    }
}

#[test]
fn every_command_block_is_run_or_excluded() {
    match POLICY.coverage() {
        // What is not run, and why (shown with --nocapture).
        Ok(not_run) => not_run.iter().for_each(|n| eprintln!("not run: {n}")),
        Err(problems) => panic!("\n{}", problems.join("\n")),
    }
}

fn no_check(_: &Record) -> Result<(), String> {
    Ok(())
}

/// testpmd probed the port the README's devargs describe, and shows it
/// (its output to a pipe arrives when it quits).
fn readme_check(r: &Record) -> Result<(), String> {
    let out = r.outputs("dpdk-testpmd").concat();
    for want in [
        "VECRING: eth_vecring0: port 0, master of link testcontainer/tap456, mac 00:ec:f4:bb:d9:7f",
        "Driver name: net_vecring",
        "Link status: down",
    ] {
        if !out.contains(want) {
            return Err(format!("testpmd did not print '{want}':\n{out}"));
        }
    }
    Ok(())
}

/// Each master's frames all reached the container's slave (the k-th
/// master is the k-th slave's peer), and the master saw the slave's uid as
/// the host sees the container's root: 100000 when it gave the socket to
/// that uid, 0 in the privileged container.
fn lxc_check(r: &Record) -> Result<(), String> {
    let masters = r.ran("vecring txonly --role master");
    let slaves = r.outputs("vecring rxonly");
    if masters.len() != 3 || slaves.len() != 3 {
        return Err(format!(
            "{} masters and {} slaves, not 3 each",
            masters.len(),
            slaves.len()
        ));
    }
    for ((cmd, master), slave) in masters.into_iter().zip(slaves) {
        let what = format!("line {}", cmd.line);
        let sent = number_after(master, "txonly: sent ");
        let taken = number_after(master, "taken by the peer ");
        let left = number_after(master, "still in the ring ");
        let summary = slave.find("rxonly: summary").map(|at| &slave[at..]);
        let got = summary.and_then(|s| number_after(s, "frames "));
        let bytes = summary.and_then(|s| number_after(s, "bytes "));
        if !(sent > Some(0) && taken == sent && left == Some(0)) {
            return Err(format!(
                "{what}: sent {sent:?}, taken {taken:?}, left {left:?}:\n{master}"
            ));
        }
        if got != sent || bytes != sent.map(|n| n * 64) {
            return Err(format!(
                "{what}: the master sent {sent:?} frames of 64 bytes, the slave received {got:?} frames, {bytes:?} bytes:\n{slave}"
            ));
        }
        let uid = if cmd.text.contains("--owner 100000:100000") {
            100_000
        } else {
            0
        };
        let attached = master.find("slave attached: ").map(|at| &master[at..]);
        let seen = (
            attached.and_then(|a| number_after(a, " uid ")),
            attached.and_then(|a| number_after(a, " gid ")),
        );
        if seen != (Some(uid), Some(uid)) {
            return Err(format!(
                "{what}: the master saw the slave as uid/gid {seen:?}, not {uid}:\n{master}"
            ));
        }
    }
    Ok(())
}

#[test]
fn lxc_guide() {
    require_lxc();
    POLICY.run_doc(LXC, Duration::from_secs(240), lxc_check);
}

fn require_lxc() {
    assert!(
        Path::new("/usr/bin/lxc-start").exists(),
        "lxc-start missing: run scripts/setup.sh"
    );
}

/// In each of the guide's three runs, every frame testpmd's txonly sent
/// reached the other testpmd (the k-th sender is the k-th receiver's
/// peer), and the host's testpmd saw the container's testpmd as the host
/// sees the container's root: uid 100000 unprivileged, 0 privileged.
fn dpdk_container_check(r: &Record) -> Result<(), String> {
    let totals = |out: &str, label: &str| {
        out.find("Accumulated forward statistics")
            .and_then(|at| number_after(&out[at..], label))
    };
    let senders = r.ran("--forward-mode=txonly");
    let receivers = r.ran("--forward-mode=rxonly");
    if senders.len() != 3 || receivers.len() != 3 {
        return Err(format!(
            "{} senders and {} receivers, not 3 each",
            senders.len(),
            receivers.len()
        ));
    }
    for ((cmd, tx), (_, rx)) in senders.into_iter().zip(receivers) {
        let sent = totals(tx, "TX-packets: ");
        let got = totals(rx, "RX-packets: ");
        if !(sent > Some(0) && got == sent) {
            return Err(format!(
                "line {}: testpmd sent {sent:?} frames, its peer received {got:?}:\n{tx}\n{rx}",
                cmd.line
            ));
        }
    }
    // pktgen (section 6): what the host's pktgen counted sent, the
    // container's counted received.
    let sent = r.ran("-f /tmp/tx.lua");
    let got = r.ran("-f /rx.lua");
    match (sent.first(), got.first()) {
        (Some((cmd, tx)), Some((_, rx))) => {
            let sent = number_after(tx, "pktgen: port 0 sent ");
            let got = number_after(rx, "pktgen: port 0 received ");
            if !(sent > Some(0) && got == sent) {
                return Err(format!(
                    "line {}: pktgen sent {sent:?} frames, the container's pktgen received {got:?}",
                    cmd.line
                ));
            }
        }
        _ => return Err("the two pktgens did not run".to_string()),
    }
    for (cmd, out) in r.ran("--log-level=pmd.net.vecring:info") {
        let uid = if cmd.text.contains("owner=100000:100000") {
            100_000
        } else {
            0
        };
        let seen = out
            .find("slave attached: ")
            .and_then(|at| number_after(&out[at..], " uid "));
        if seen != Some(uid) {
            return Err(format!(
                "line {}: the host's testpmd saw the slave as uid {seen:?}, not {uid}:\n{out}",
                cmd.line
            ));
        }
    }
    Ok(())
}

#[test]
fn dpdk_container_guide() {
    require_lxc();
    POLICY.run_doc(DPC, Duration::from_secs(300), dpdk_container_check);
}

/// testpmd's txonly on the host sent frames, and the container's testpmd
/// received every one, and the host's testpmd saw the container's as uid
/// 4242, the user `docker run --user` gave it.
fn containers_check(r: &Record) -> Result<(), String> {
    let totals = |out: &str, label: &str| {
        out.find("Accumulated forward statistics")
            .and_then(|at| number_after(&out[at..], label))
    };
    let (senders, receivers) = (
        r.ran("--forward-mode=txonly"),
        r.ran("--forward-mode=rxonly"),
    );
    let ([(_, tx)], [(_, rx)]) = (senders.as_slice(), receivers.as_slice()) else {
        return Err(format!(
            "{} senders and {} receivers, not 1 each",
            senders.len(),
            receivers.len()
        ));
    };
    let (sent, got) = (totals(tx, "TX-packets: "), totals(rx, "RX-packets: "));
    if !(sent > Some(0) && got == sent) {
        return Err(format!(
            "the host's testpmd sent {sent:?} frames, the container's received {got:?}:\n{tx}\n{rx}"
        ));
    }
    let seen = tx
        .find("slave attached: ")
        .map(|at| &tx[at..])
        .map(|a| (number_after(a, " uid "), number_after(a, " gid ")));
    if seen != Some((Some(4242), Some(4242))) {
        return Err(format!(
            "the host's testpmd saw the container's as uid/gid {seen:?}, not 4242:\n{tx}"
        ));
    }
    Ok(())
}

/// Removes the cgroups the sandbox's dockerd made (empty once its
/// containers are gone), however the run ended.
struct DockerCgroups;

impl Drop for DockerCgroups {
    fn drop(&mut self) {
        fn remove(dir: &Path) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    remove(&entry.path());
                }
            }
            let _ = std::fs::remove_dir(dir);
        }
        // In every hierarchy, below the cgroup the test runs in (which
        // need not be a hierarchy's root).
        fn find(dir: &Path, depth: u32) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                if entry.file_name() == DOCKER_CGROUP {
                    remove(&entry.path());
                } else if depth > 0 {
                    find(&entry.path(), depth - 1);
                }
            }
        }
        find(Path::new("/sys/fs/cgroup"), 8);
    }
}

#[test]
fn containers_guide() {
    assert!(
        Path::new("/usr/sbin/dockerd").exists() && Path::new("/usr/bin/docker").exists(),
        "Debian's docker.io missing: run scripts/setup.sh"
    );
    let _cgroups = DockerCgroups;
    POLICY.run_doc(CTR, Duration::from_secs(180), containers_check);
}

#[test]
fn readme() {
    POLICY.run_doc("README.md", Duration::from_secs(120), readme_check);
}

/// What c1 sent OVS received on port c1, what OVS sent on port c2 c2
/// received, and OVS sent or dropped on c2 every frame it received: the
/// three numbers the statistics block prints, against the two
/// containers' own counts.
fn ovs_check(r: &Record) -> Result<(), String> {
    let tx = r.outputs("vecring txonly").concat();
    let rx = r.outputs("vecring rxonly").concat();
    let stats = r.outputs("statistics:rx_packets").concat();
    let taken = number_after(&tx, "taken by the peer ");
    let received = rx
        .find("rxonly: summary")
        .and_then(|at| number_after(&rx[at..], "frames "));
    let numbers: Vec<u64> = stats
        .lines()
        .filter_map(|l| l.trim().trim_matches('"').parse().ok())
        .collect();
    match (taken, received, numbers.as_slice()) {
        (Some(t), Some(got), [ovs_rx, ovs_tx, dropped, ..])
            if t > 0 && *ovs_rx == t && *ovs_tx == got && ovs_tx + dropped == *ovs_rx =>
        {
            Ok(())
        }
        _ => Err(format!(
            "c1 sent {taken:?}, c2 received {received:?}, OVS counted {numbers:?} (rx on c1, tx and drops on c2):\n{tx}\n{rx}\n{stats}"
        )),
    }
}

#[test]
fn ovs_guide() {
    assert!(
        Path::new("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk").exists(),
        "ovs-vswitchd-dpdk missing: run scripts/setup.sh"
    );
    require_lxc();
    POLICY.run_doc(OVS, Duration::from_secs(180), ovs_check);
}

#[test]
fn c_api() {
    POLICY.run_doc("docs/c-api.md", Duration::from_secs(120), no_check);
}

#[test]
fn operations() {
    POLICY.run_doc("docs/operations.md", Duration::from_secs(120), no_check);
}

#[test]
fn pmd_readme() {
    POLICY.run_doc("vecring-pmd/README.md", Duration::from_secs(120), no_check);
}
