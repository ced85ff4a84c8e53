#!/usr/bin/env bash
# vecring links into Docker containers: eth_vecring between a dpdk-testpmd
# on the host and one in a container, and the `vecring` tool, with a
# private dockerd (tests/containers/dockerd.sh: its own
# data root, socket and containerd, no bridge, no iptables rules; stopped
# and removed at the end). The container's image is made by
# scripts/image.sh, as docs/containers.md says: once imported (`docker
# import` of its tarball) and once built (`docker build` of its
# Containerfile, FROM scratch).
#
# The container's testpmd reaches the link only through the domain
# directory bound in with -v, read-only, and needs nothing else for it: it runs with
# --network none, --cap-drop ALL, a non-root --user (the uid the master's
# owner= names), --security-opt no-new-privileges and Docker's default
# seccomp profile, without hugepages (--no-huge: no /dev/hugepages and no
# hugetlbfs in the container), while the host's master uses hugepages.
# The cases, run in this order (image to wrong_owner in docker_link.sh):
#   image        the builder's image imports and builds offline; both hold
#                the testpmd, the mempool driver and eth_vecring
#   host_to_ctr  host master txonly -> container slave rxonly, counts exact
#                (the sender's tx_good_packets = the receiver's
#                rx_good_packets), and what the container's testpmd is
#                (its uid, no capability, no_new_privs, seccomp, no
#                hugetlbfs, its own network namespace), read from the host
#   ctr_to_host  the other way: the container (the built image) sends,
#                the host's master receives, counts exact
#   forward      the container forwards (macswap) what the host's testpmd
#                sends it back to the host (io): every frame accounted for
#   wrong_owner  a container of another uid than the master's owner= (in
#                its group, so that it reaches the socket): the master
#                refuses it (rejected_peers), the link stays down
#   memory       the `vecring` tool's image, its slave in a container with a
#                64 MiB memory limit and a hugetlb limit of 0, on links of
#                128 MiB and more, in hugepages and in ordinary pages: every
#                frame arrives, and the container's memory and hugetlb
#                usage do not grow by the region (docker_memory.sh)
#   ovs          Docker -> Open vSwitch -> Docker: two such containers on
#                two eth_vecring ports of a private OVS, frames both ways,
#                counts exact (docker_ovs.sh)
#   forward_table  "forward traffic in Docker": `vecring-bench
#                host-container --forward --container docker`, a generator on the host, testpmd
#                forwarding in a container; its table has the guide's
#                columns with numbers, and every count adds up
#                (docker_forward.sh)
#   pktgen       pktgen-dpdk on both ends: the host's pktgen the master, a
#                pktgen in a confined container of scripts/image.sh's image
#                of pktgen; 64 and 1514 bytes each way, pktgen's counts
#                against both drivers' xstats (docker_pktgen.sh)
#   userns       a dockerd with --userns-remap: the master's owner= for the
#                container's user as the host numbers it, and what each
#                side sees of the other (docker_userns.sh; last: it
#                replaces the daemon of the other cases)
#
# Usage: tests/containers/docker.sh [CASE...]   (as root, after
#        scripts/test.sh's build: the vecring tool, the driver installed in
#        DPDK's driver directory; hugepages for the master)
# Env:   VECRING_TEST_KEEP=1   keep the work directory (logs)
# Every testpmd runs under a watchdog, inside the container too; the last
# line is "N passed, N failed".
set -uo pipefail

if [ "$(id -u)" != 0 ]; then
	echo "skipped: tests/containers/docker.sh needs root (a private dockerd, hugepages for the master)"
	echo "0 passed, 0 failed"
	exit 0
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TESTPMD=dpdk-testpmd
WATCHDOG=90
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vecring-docker.XXXXXX")
RUN_DIR=$WORK/run             # vecring rendezvous of the host's masters
DOCKER_DIR=$WORK/docker       # the private dockerd's roots and socket
OVS=$WORK/ovs                 # the private OVS of the ovs case
PREFIX=vrdkovs_$$             # its EAL file prefix
OVS_STARTED=0
CTR_UID=4242                  # the containers' user (no such user on the host)
PASSED=0
FAILED=0
PIDS=()

log() { echo "docker-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
die() {
	echo "FAIL: $*"
	echo "$PASSED passed, $((FAILED + 1)) failed"
	exit 1
}

# shellcheck source=tests/dpdk/lib.sh
. "$ROOT/tests/dpdk/lib.sh"
# shellcheck source=tests/containers/dockerd.sh
. "$ROOT/tests/containers/dockerd.sh"
# shellcheck source=tests/ovs/lib.sh
. "$ROOT/tests/ovs/lib.sh"
# shellcheck source=tests/containers/docker_link.sh
. "$ROOT/tests/containers/docker_link.sh"
# shellcheck source=tests/containers/docker_ovs.sh
. "$ROOT/tests/containers/docker_ovs.sh"
# shellcheck source=tests/containers/docker_userns.sh
. "$ROOT/tests/containers/docker_userns.sh"
# shellcheck source=tests/containers/docker_memory.sh
. "$ROOT/tests/containers/docker_memory.sh"
# shellcheck source=tests/containers/docker_forward.sh
. "$ROOT/tests/containers/docker_forward.sh"
# shellcheck source=tests/containers/docker_pktgen.sh
. "$ROOT/tests/containers/docker_pktgen.sh"

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill9 "$p"
	done
	docker_stop
	[ "$OVS_STARTED" = 0 ] || ovs_stop
	hugetlb_off
	wait 2>/dev/null
	# EAL makes its runtime directory even with --in-memory.
	rm -rf /var/run/dpdk/vrtest_*_"$$"
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

CASES=(image host_to_ctr ctr_to_host forward wrong_owner memory ovs forward_table pktgen userns)
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=("${CASES[@]}")
for t in "${TESTS[@]}"; do
	[[ " ${CASES[*]} " == *" $t "* ]] || die "unknown case '$t' (cases: ${CASES[*]})"
done

[ -x "$DOCKERD" ] && [ -x "$DOCKER_CLI" ] || die "Debian's docker.io is not installed ($DOCKERD, $DOCKER_CLI): run scripts/setup.sh"
command -v "$TESTPMD" >/dev/null || die "$TESTPMD not found (run scripts/setup.sh)"
free_huge=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
[ "${free_huge:-0}" -ge 64 ] || die "${free_huge:-0} free 2 MiB hugepages: the host's master needs some (scripts/setup.sh reserves them)"
# The master's driver: the one scripts/build-pmd.sh installed in DPDK's
# driver directory, the same file scripts/image.sh puts in the image.
SO=$(readlink -f /usr/local/lib/vecring/librte_net_vecring.so 2>/dev/null) ||
	die "eth_vecring is not installed (scripts/build-pmd.sh /usr)"
[ -f "$SO" ] || die "eth_vecring is not installed (scripts/build-pmd.sh /usr)"
TESTPMD_EXE=$(readlink -f "$(command -v "$TESTPMD")")
TESTPMD_LINE=22.11
# The host's master: hugepages, no files.
MEM_ARGS=(--in-memory)

# --- images ------------------------------------------------------------------

# The image, as docs/containers.md makes it, plus what the test's sessions
# use inside the container: `timeout` (the watchdog) and `stdbuf` with its
# preload library (testpmd's output line by line through a pipe).
IMG=$WORK/img
mkdir -p "$IMG"
bash "$ROOT/scripts/image.sh" dpdk "$IMG/rootfs" --add timeout --add stdbuf \
	--tar "$IMG/testpmd.tar" --containerfile "$IMG/Containerfile" >/dev/null 2>"$WORK/image.log" ||
	{ cat "$WORK/image.log"; die "scripts/image.sh failed"; }
cp --parents -L /usr/libexec/coreutils/libstdbuf.so "$IMG/rootfs"
tar -C "$IMG/rootfs" --numeric-owner -cf "$IMG/testpmd.tar" .

T0=$SECONDS
docker_start || die "no private dockerd (see $DOCKER_DIR/dockerd.log)"
log "dockerd started in $((SECONDS - T0)) s"

# --- container sessions --------------------------------------------------------

# Flags of every slave container: the link's domain directory bound in,
# and nothing else the link would need.
confined() {
	local dom=$1 user=${2:-$CTR_UID:$CTR_UID}
	echo --network none --cap-drop ALL --user "$user" --security-opt no-new-privileges \
		-v "$RUN_DIR/$dom:/run/vecring/$dom:ro"
}

# start_ctr_pmd NAME IMAGE CPU VDEV_ARGS FLAGS [testpmd app args...]: a
# testpmd session (tests/dpdk/lib.sh: cmd, wait_for, xstat, quit_pmd work on
# it) in a new container of IMAGE run with FLAGS (word-split), without
# hugepages; a watchdog inside the container and one around the client.
# PMD_EAL adds EAL options (word-split).
start_ctr_pmd() {
	local name=$1 image=$2 cpu=$3 vdev=$4 flags=$5 fd
	shift 5
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	# shellcheck disable=SC2086
	timeout --kill-after=5 "$((WATCHDOG + 15))" "$DOCKER_CLI" -H "unix://$DOCKER_DIR/docker.sock" run -i --rm --name "vrtest-$name" $flags "$image" \
		timeout --kill-after=5 "$WATCHDOG" stdbuf -oL -eL dpdk-testpmd --no-pci \
		--no-huge -m 256 --no-shconf --lcores="(0,1)@$cpu" ${PMD_EAL:-} \
		--vdev="eth_vecring0,$vdev" -- -i --total-num-mbufs=8192 --no-mlockall "$@" \
		<"$WORK/$name.in" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "PID_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "FD_$name" '%s' "$fd"
}

# ctr_pmd_pid NAME: the host PID of the container's testpmd (the child of
# the in-container watchdog, the container's first process).
ctr_pmd_pid() {
	local init
	init=$(dk inspect -f '{{.State.Pid}}' "vrtest-$1" 2>/dev/null) && [ "${init:-0}" -gt 0 ] || return 1
	pgrep -P "$init" | head -n1
}

# status_field PID FIELD: a line of /proc/PID/status, its value.
status_field() { awk -v f="$2:" '$1 == f { $1 = ""; print substr($0, 2) }' "/proc/$1/status"; }

# --- masters and domains ---------------------------------------------------

# The host's testpmd master (hugepages) for the link DOM/LINK, owner= the
# containers' uid unless OWNER is given.
start_master() {
	local name=$1 dom=$2 link=$3 owner=${4:-$CTR_UID}
	shift 4
	mkdir -p "$RUN_DIR"
	PMD_EAL=--log-level=pmd.net.vecring:info start_pmd "$name" 0 \
		"domain=$dom,link=$link,run_dir=$RUN_DIR,master=true,owner=$owner:$owner" "$@"
}

# The container needs the domain directory before it starts (-v binds an
# existing directory): root's, mode 0711, as `vecring prepare` makes it.
prepare_domain() {
	mkdir -p -m 0711 "$RUN_DIR/$1"
}

# --- run -----------------------------------------------------------------------

# The two images the testpmd cases use: the tarball imported, the Containerfile
# built.
T0=$SECONDS
IMPORTED=0 BUILT=0
dk import "$IMG/testpmd.tar" vecring-testpmd:import >"$WORK/import.log" 2>&1 && IMPORTED=1
dk build -q -f "$IMG/Containerfile" -t vecring-testpmd:build "$IMG" >"$WORK/build.log" 2>&1 && BUILT=1
log "images imported and built in $((SECONDS - T0)) s"

for t in "${TESTS[@]}"; do
	log "--- $t"
	t0=$SECONDS
	"test_$t"
	log "$t: $((SECONDS - t0)) s"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
