#!/usr/bin/env bash
# eth_vecring between a dpdk-testpmd on the host and one in a Docker
# container, with a private dockerd (tests/containers/dockerd.sh: its own
# data root, socket and containerd, no bridge, no iptables rules; stopped
# and removed at the end). The container's image is made by
# scripts/image.sh, as docs/containers.md says: once imported (`docker
# import` of its tarball) and once built (`docker build` of its
# Containerfile, FROM scratch).
#
# The container's testpmd reaches the link only through the domain
# directory bound in with -v, and needs nothing else for it: it runs with
# --network none, --cap-drop ALL, a non-root --user (the uid the master's
# owner= names), --security-opt no-new-privileges and Docker's default
# seccomp profile, without hugepages (--no-huge: no /dev/hugepages and no
# hugetlbfs in the container), while the host's master uses hugepages.
#   image        the builder's image imports and builds offline; both hold
#                the testpmd, the mempool driver and eth_vecring
#   host_to_ctr  host master txonly -> container slave rxonly, counts exact
#                (the sender's tx_good_packets = the receiver's
#                rx_good_packets), and what the container's testpmd is
#                (its uid, no capability, no_new_privs, seccomp, no
#                hugetlbfs, its own network namespace), read from the host
#   ctr_to_host  the other way: the container (the built image) sends,
#                the host's master receives, counts exact
#   wrong_owner  a container of another uid than the master's owner= (in
#                its group, so that it reaches the socket): the master
#                refuses it (rejected_peers), the link stays down
#   ovs          Docker -> Open vSwitch -> Docker: two such containers on
#                two eth_vecring ports of a private OVS, frames both ways,
#                counts exact (docker_ovs.sh)
#   userns       a dockerd with --userns-remap: the master's owner= for the
#                container's user as the host numbers it, and what each
#                side sees of the other (docker_userns.sh)
#
# Usage: tests/containers/docker.sh [CASE...]   (as root, after
#        scripts/test.sh's build: the vecring tool, the driver installed in
#        DPDK's driver directory; hugepages for the master)
# Env:   VECRING_TEST_KEEP=1   keep the work directory (logs)
# Every testpmd runs under a watchdog, inside the container too; the last
# line is "N passed, N failed".
set -uo pipefail

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
# shellcheck source=tests/containers/docker_ovs.sh
. "$ROOT/tests/containers/docker_ovs.sh"
# shellcheck source=tests/containers/docker_userns.sh
. "$ROOT/tests/containers/docker_userns.sh"

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill9 "$p"
	done
	docker_stop
	[ "$OVS_STARTED" = 0 ] || ovs_stop
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

CASES=(image host_to_ctr ctr_to_host wrong_owner ovs userns)
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=("${CASES[@]}")
for t in "${TESTS[@]}"; do
	[[ " ${CASES[*]} " == *" $t "* ]] || die "unknown case '$t' (cases: ${CASES[*]})"
done

[ "$(id -u)" = 0 ] || die "needs root (a private dockerd, hugepages for the master)"
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
		-v "$RUN_DIR/$dom:/run/vecring/$dom"
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

# --- cases ---------------------------------------------------------------------

# The two images every case uses: the tarball imported, the Containerfile
# built.
T0=$SECONDS
IMPORTED=0 BUILT=0
dk import "$IMG/testpmd.tar" vecring-testpmd:import >"$WORK/import.log" 2>&1 && IMPORTED=1
dk build -q -f "$IMG/Containerfile" -t vecring-testpmd:build "$IMG" >"$WORK/build.log" 2>&1 && BUILT=1
log "images imported and built in $((SECONDS - T0)) s"

test_image() {
	if [ "$IMPORTED" = 1 ]; then
		pass "image: docker import of the builder's tarball"
	else
		fail "image: docker import of $IMG/testpmd.tar"
		sed 's/^/    /' "$WORK/import.log"
	fi
	if [ "$BUILT" = 1 ]; then
		pass "image: docker build of the builder's Containerfile (FROM scratch), offline"
	else
		fail "image: docker build of $IMG/Containerfile"
		sed 's/^/    /' "$WORK/build.log"
	fi
	local img pmds
	pmds=$(dirname "$SO")
	for img in import build; do
		# testpmd starts in the container (no hugepages, no capability, not
		# root) and EAL loads the two plugins from the image's driver
		# directory by itself (no -d).
		dk run --rm --network none --cap-drop ALL --user "$CTR_UID:$CTR_UID" "vecring-testpmd:$img" \
			timeout 30 dpdk-testpmd --no-pci --no-huge -m 64 --no-shconf -l 0 --log-level=lib.eal:debug \
			>"$WORK/eal-$img.log" 2>&1
		if grep -q "open shared lib $pmds/librte_mempool_ring.so.23.0" "$WORK/eal-$img.log" &&
			grep -q "open shared lib $pmds/librte_net_vecring.so" "$WORK/eal-$img.log"; then
			pass "image ($img): EAL in the container loads the mempool driver and eth_vecring from its driver directory"
		else
			fail "image ($img): EAL in the container did not load both plugins"
			grep -E "shared lib|Error|Cause" "$WORK/eal-$img.log" | sed 's/^/    /'
		fi
		# What the driver directory holds, from the image's files.
		if dk create --name "vrtest-ls-$img" "vecring-testpmd:$img" /bin/sleep 1 >/dev/null &&
			dk export "vrtest-ls-$img" | tar -t | grep -E "^(\./)?${pmds#/}/[^/]+$" | sed 's#.*/##' | sort |
			tr '\n' ' ' | grep -qx 'librte_mempool_ring.so.23.0 librte_net_vecring.so '; then
			pass "image ($img): EAL's driver directory holds the mempool driver and eth_vecring only"
		else
			fail "image ($img): EAL's driver directory ($pmds) is not the mempool driver and eth_vecring"
		fi
		dk rm -f "vrtest-ls-$img" >/dev/null 2>&1
	done
}

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

# What the container's testpmd is, read from the host.
check_confined() {
	local what=$1 name=$2 master=$3 p v
	if ! p=$(ctr_pmd_pid "$name") || [ -z "$p" ]; then
		fail "$what: no testpmd process in the container"
		return
	fi
	v=$(status_field "$p" Uid)
	expect_eq "$what: the container's testpmd runs as uid $CTR_UID" "${v%%[[:space:]]*}" "$CTR_UID"
	expect_eq "$what: ... with no effective capability" "$(status_field "$p" CapEff)" 0000000000000000
	expect_eq "$what: ... no bounding capability" "$(status_field "$p" CapBnd)" 0000000000000000
	expect_eq "$what: ... no_new_privs" "$(status_field "$p" NoNewPrivs)" 1
	expect_eq "$what: ... a seccomp filter (Docker's default profile)" "$(status_field "$p" Seccomp)" 2
	if grep -q " - hugetlbfs " "/proc/$p/mountinfo"; then
		fail "$what: a hugetlbfs is mounted in the container"
	else
		pass "$what: no hugetlbfs mounted in the container"
	fi
	if [ -e "/proc/$p/root/dev/hugepages" ]; then
		fail "$what: the container has /dev/hugepages"
	else
		pass "$what: the container has no /dev/hugepages"
	fi
	if [ "$(readlink "/proc/$p/ns/net")" != "$(readlink /proc/$$/ns/net)" ] &&
		[ "$(readlink "/proc/$p/ns/mnt")" != "$(readlink /proc/$$/ns/mnt)" ]; then
		pass "$what: the container's testpmd runs in its own network and mount namespaces"
	else
		fail "$what: the container's testpmd shares the host's network or mount namespace"
	fi
	if grep -q "slave attached: pid $p uid $CTR_UID " "$WORK/$master.log"; then
		pass "$what: the master saw the container's testpmd (pid $p, uid $CTR_UID) attach"
	else
		fail "$what: the master did not log pid $p uid $CTR_UID attaching"
		grep "slave attached" "$WORK/$master.log" | sed 's/^/    /'
	fi
	if grep -qE "slave attached: .*, hugepages" "$WORK/$master.log"; then
		pass "$what: the link's region is in the host's hugepages"
	else
		fail "$what: the master did not report a hugepage region"
		grep "region" "$WORK/$master.log" | sed 's/^/    /'
	fi
}

# Host master txonly -> container slave rxonly.
test_host_to_ctr() {
	prepare_domain dk1
	start_ctr_pmd dk1_s vecring-testpmd:import 1 "domain=dk1,link=l0" "$(confined dk1)" --forward-mode=rxonly
	wait_for dk1_s "testpmd> " 1 30 || { fail "host_to_ctr: container testpmd did not start"; sed 's/^/    /' "$WORK/dk1_s.log"; return; }
	cmd dk1_s start
	start_master dk1_m dk1 l0 "" --forward-mode=txonly --txpkts=64
	if wait_for dk1_s "VECRING: eth_vecring0: link up" 1 30; then
		pass "host_to_ctr: link up between the host and the container"
	else
		fail "host_to_ctr: link did not come up"
		return
	fi
	check_confined "host_to_ctr" dk1_s dk1_m
	wait_for dk1_m "testpmd> " 1 30 || { fail "host_to_ctr: master did not start"; return; }
	cmd dk1_m start
	sleep 3
	stop_fwd dk1_m
	show_xstats dk1_m
	local tx
	tx=$(xstat dk1_m tx_good_packets)
	drain dk1_s "$tx"
	stop_fwd dk1_s
	show_xstats dk1_s
	expect_gt "host_to_ctr: the host's master sent" "$tx" 0
	expect_eq "host_to_ctr: the container received every frame sent" "$(xstat dk1_s rx_good_packets)" "$tx"
	expect_eq "host_to_ctr: byte count" "$(xstat dk1_s rx_good_bytes)" "$((tx * 64))"
	expect_no_corruption "host_to_ctr" dk1_m dk1_s
	quit_pmd dk1_m
	quit_pmd dk1_s
}

# Container slave txonly -> host master rxonly (the image docker build made).
test_ctr_to_host() {
	prepare_domain dk2
	start_ctr_pmd dk2_s vecring-testpmd:build 1 "domain=dk2,link=l0" "$(confined dk2)" \
		--forward-mode=txonly --txpkts=64
	wait_for dk2_s "testpmd> " 1 30 || { fail "ctr_to_host: container testpmd did not start"; sed 's/^/    /' "$WORK/dk2_s.log"; return; }
	start_master dk2_m dk2 l0 "" --forward-mode=rxonly
	if wait_for dk2_m "VECRING: eth_vecring0: link up" 1 30; then
		pass "ctr_to_host: link up between the container and the host"
	else
		fail "ctr_to_host: link did not come up"
		return
	fi
	wait_for dk2_m "testpmd> " 1 30 || { fail "ctr_to_host: master did not start"; return; }
	cmd dk2_m start
	cmd dk2_s start
	sleep 3
	stop_fwd dk2_s
	show_xstats dk2_s
	local tx
	tx=$(xstat dk2_s tx_good_packets)
	drain dk2_m "$tx"
	stop_fwd dk2_m
	show_xstats dk2_m
	expect_gt "ctr_to_host: the container sent" "$tx" 0
	expect_eq "ctr_to_host: the host's master received every frame sent" "$(xstat dk2_m rx_good_packets)" "$tx"
	expect_eq "ctr_to_host: byte count" "$(xstat dk2_m rx_good_bytes)" "$((tx * 64))"
	expect_no_corruption "ctr_to_host" dk2_m dk2_s
	quit_pmd dk2_s
	quit_pmd dk2_m
}

# A container whose user is not the master's owner=: refused.
test_wrong_owner() {
	prepare_domain dk3
	start_master dk3_m dk3 l0 "" --forward-mode=rxonly
	wait_for dk3_m "testpmd> " 1 30 || { fail "wrong_owner: master did not start"; return; }
	start_ctr_pmd dk3_s vecring-testpmd:import 1 "domain=dk3,link=l0" "$(confined dk3 "$((CTR_UID + 1)):$CTR_UID")" \
		--forward-mode=rxonly
	wait_for dk3_s "testpmd> " 1 30 || { fail "wrong_owner: container testpmd did not start"; return; }
	local i n=0
	for ((i = 0; i < 50; i++)); do
		show_xstats dk3_m
		n=$(xstat dk3_m rejected_peers)
		[ "${n:-0}" -gt 0 ] && break
		sleep 0.2
	done
	expect_gt "wrong_owner: the master refused the container of uid $((CTR_UID + 1)) (in owner='s group, which may reach the socket)" "$n" 0
	if grep -q "eth_vecring0: link up" "$WORK/dk3_m.log" "$WORK/dk3_s.log"; then
		fail "wrong_owner: the link came up for a uid owner= does not name"
	else
		pass "wrong_owner: the link stayed down"
	fi
	quit_pmd dk3_s
	quit_pmd dk3_m
}

for t in "${TESTS[@]}"; do
	log "--- $t"
	t0=$SECONDS
	"test_$t"
	log "$t: $((SECONDS - t0)) s"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
