#!/usr/bin/env bash
# The vecring tool's links into Podman containers (docs/containers.md,
# "Podman"), and pktgen-dpdk in a rootless one. The image is scripts/image.sh's vecring image, imported with
# `podman import`; every container runs with --network none and reaches its
# link only through the domain directory bound in with -v, or (group
# netns) with no volume, inside its network namespace. Checked, each
# with traffic (host master txonly -> container slave rxonly) and exact
# counts (what the master's peer took is what the slave received):
#   rootful   rootful_traffic   a root master, a rootful container
#             rootful_build     the same, the image made by `podman build`
#                               of scripts/image.sh's Containerfile
#   rootless  rootless_user     an unprivileged user the group creates (with
#                               subordinate uids and gids) runs rootless
#                               Podman and the master, in its own run
#                               directory
#             rootless_owner    a root master with --owner for that user
#             rootless_keepid   --userns=keep-id, the user's master
#             rootless_keepid_owner  --userns=keep-id, a root master with
#                               --owner
#   minimal   minimal_tool      a container with no capability, a non-root
#                               user, no new privileges, the default seccomp
#                               profile, no hugepages, a hugetlb limit of 0
#                               and a memory limit below the region's size
#                               takes every frame of a hugepage-backed link,
#                               and its cgroups' memory and hugetlb usage do
#                               not grow by the region's size
#             minimal_testpmd   the same with Debian's dpdk-testpmd
#                               (--no-huge; scripts/image.sh's DPDK image)
#                               as the slave
#             minimal_limits    the control: a master inside such a
#                               container gets no hugepages (hugetlb limit
#                               0) and is killed making the region on
#                               ordinary pages (memory limit)
#   mistakes  mistake_owner     a root master's --owner not the rootless
#                               container's uid: the slave may not open
#                               the socket (Permission denied), or, with
#                               the socket open to others, is told which
#                               uid may attach; the master keeps waiting
#             mistake_mount     a container without the -v: the slave says
#                               it found no master at the socket's path
#   cdi       cdi_rootful       the link as a CDI device (`vecring cdi
#                               write`, podman run --device
#                               vecring.dev/link=NAME): no -v, no link
#                               option in the container; a rootful
#                               container and a root master
#             cdi_rootless      the same in the user's rootless container,
#                               the user's master
#             cdi_owner         a root master with --owner, the user's
#                               rootless container
#             cdi_testpmd       dpdk-testpmd in a rootful container, its
#                               port's devargs env=1 (names from the
#                               device's variables)
#             cdi_netns_rootful  a device of network-namespace mode
#                               (nothing mounted, VECRING_NETNS=self), the
#                               root master in the container's namespace
#             cdi_netns_rootless  the same, the user's rootless container
#             cdi_unknown       a device no spec defines: podman's error,
#                               no container left
#             cdi_missing       a device whose domain directory is missing:
#                               the error names it, no container left
#             cdi_spec          the spec file: mode 0644, cdi list --json,
#                               cdi remove (the file goes with its last
#                               device)
#   pktgen    pktgen_rootless   pktgen-dpdk on both ends: the host's pktgen
#                               a root master with owner= the user, the
#                               slave a pktgen in the user's rootless
#                               container; 64 and 1514 bytes both ways,
#                               pktgen's counts against both drivers' xstats
#   netns     netns_rootful     no volume: the slave `--netns self` in a
#                               rootful container, the root master in its
#                               network namespace (--netns /proc/PID/ns/net)
#             netns_rootless    the same in the user's rootless container
#   cni       cni_podman        Podman's CNI backend running vecring-cni
#                               twice in a chain (mode dpdk, mode tap) on a
#                               private Open vSwitch: net2 pings between
#                               two containers, net1's frames counted by the
#                               switch, podman rm leaves nothing
#   criu      criu_control      CRIU (scripts/criu.sh) checkpoints and
#                               restores a container holding no link
#             criu_link         and refuses one whose slave is receiving,
#                               naming the link's socket; the link carries
#                               on, every frame counted
#
# Usage: tests/containers/podman.sh [GROUP|CASE...]   (as root; none: all)
# Env:   VECRING              the tool (default target/release/vecring)
#        VECRING_TEST_KEEP=1  keep the work directory's logs
#        VECRING_TEST_NO_HUGE=1  the minimal group, about hugepage links,
#                             says SKIPPED
#        PKTGEN               pktgen for DPDK 22.11 (default: what
#                             scripts/pktgen.sh builds or built for it)
# Rootful Podman keeps its storage, run state and events in the work
# directory and its containers' cgroups under vecring-podman-<pid>; the
# test's user, its processes and its home go at the end; every process runs
# under a watchdog. What Podman itself creates outside those (its blob cache
# in /var/lib/containers, /run/runc, /run/crun, /etc/cni/net.d/cni.lock) is
# removed when it was not there before. The last line is "N passed, N
# failed"; the exit status is non-zero if anything failed.
set -uo pipefail

if [ "$(id -u)" != 0 ]; then
	echo "skipped: the Podman tests need root (rootful Podman, creating a user)"
	exit 0
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/containers/podman
VECRING=${VECRING:-$ROOT/target/release/vecring}
WATCHDOG=120
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vecring-podman.XXXXXX")
# The test's user must search it (its home and the root master's run
# directory are inside).
chmod 0711 "$WORK"
# conmon writes a file named "oom" into its working directory when the
# kernel kills a container's process for memory (minimal_limits does).
cd "$WORK" || exit 1
IMAGE=localhost/vecring-test:podman
PODMAN_CG=/vecring-podman-$$
PASSED=0
FAILED=0
PIDS=()

log() { echo "podman-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }

# The DPDK tests' helpers first (processes, waits, checks), for the
# pktgen group; Podman's own checks replace those of the same name.
# shellcheck source=tests/dpdk/lib.sh
. "$ROOT/tests/dpdk/lib.sh"
# shellcheck source=podman/lib.sh
. "$HERE/lib.sh"

GROUP_NAMES=()
declare -A GROUP_CASES=()
group() {
	GROUP_NAMES+=("$1")
	GROUP_CASES[$1]="${*:2}"
}
# shellcheck source=podman/rootful.sh
. "$HERE/rootful.sh"
# shellcheck source=podman/rootless.sh
. "$HERE/rootless.sh"
# shellcheck source=podman/minimal.sh
. "$HERE/minimal.sh"
# shellcheck source=podman/mistakes.sh
. "$HERE/mistakes.sh"
# shellcheck source=podman/cdi.sh
. "$HERE/cdi.sh"
# shellcheck source=podman/pktgen.sh
. "$HERE/pktgen.sh"
# shellcheck source=podman/netns.sh
. "$HERE/netns.sh"
# shellcheck source=podman/cni.sh
. "$HERE/cni.sh"
# shellcheck source=podman/criu.sh
. "$HERE/criu.sh"

# What rootful Podman makes outside its --root, --runroot and --tmpdir.
PODMAN_GLOBAL=(/var/lib/containers /run/containers /run/libpod /run/runc /run/crun /etc/cni/net.d/cni.lock)
CREATED_GLOBAL=()
for p in "${PODMAN_GLOBAL[@]}"; do
	[ -e "$p" ] || CREATED_GLOBAL+=("$p")
done
# Podman's default cgroup parent, which no container of this run may use.
CREATED_CG=()
for p in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 "/libpod_parent" }' /proc/mounts); do
	[ -e "$p" ] || CREATED_CG+=("$p")
done

# kill_tree PID: SIGKILL PID (a watchdog) and everything it started.
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do
		kill_tree "$c"
	done
	kill -9 "$1" 2>/dev/null
}

cleanup() {
	local p m d
	for p in "${PIDS[@]}"; do
		kill_tree "$p"
	done
	wait 2>/dev/null
	if [ -d "$WORK/storage" ]; then
		pm rm --all --force --time 0 >/dev/null 2>&1
		pm rmi --all --force >/dev/null 2>&1
	fi
	user_cleanup
	cni_podman_stop
	cdi_cleanup
	# Anything still mounted below the work directory (the rootful overlay).
	awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
	# The containers' cgroups, in every hierarchy; then hugetlb off where
	# the minimal group turned it on.
	for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
		d=$m$PODMAN_CG
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	hugetlb_restore
	# Of what podman made outside, only what this run can have put there:
	# its blob cache and empty directories (another podman on the host may
	# be using them by now).
	for p in "${CREATED_GLOBAL[@]}"; do
		if [ -d "$p" ]; then
			rm -f "$p/cache/blob-info-cache-v1.boltdb"
			find "$p" -depth -type d -empty -delete 2>/dev/null
		else
			rm -f "$p"
		fi
	done
	rm -rf "$WORK/storage" "$WORK/runroot" "$WORK/libpod" "$WORK/rootfs" "$WORK/image.tar" "$WORK/rootfs-dpdk" "$WORK/image-dpdk.tar" "$WORK/build" "$WORK/pktgen-image"
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'fail "interrupted"; exit 1' INT TERM HUP

is_one_of() {
	local w=$1 x
	shift
	for x in "$@"; do [ "$x" = "$w" ] && return 0; done
	return 1
}
ALL=()
for g in "${GROUP_NAMES[@]}"; do
	read -ra names <<<"${GROUP_CASES[$g]}"
	ALL+=("${names[@]}")
done
TESTS=()
for arg in "$@"; do
	if is_one_of "$arg" "${GROUP_NAMES[@]}"; then
		read -ra names <<<"${GROUP_CASES[$arg]}"
		TESTS+=("${names[@]}")
	elif is_one_of "$arg" "${ALL[@]}"; then
		TESTS+=("$arg")
	else
		echo "FAIL: unknown group or case '$arg' (groups: ${GROUP_NAMES[*]}; cases: ${ALL[*]})"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
[ ${#TESTS[@]} -gt 0 ] || TESTS=("${ALL[@]}")

for c in podman runuser useradd newuidmap; do
	command -v "$c" >/dev/null || { echo "FAIL: $c not found (run scripts/setup.sh)"; echo "0 passed, 1 failed"; exit 1; }
done
[ -x "$VECRING" ] || { echo "FAIL: $VECRING missing (cargo build --release -p vecring-cli)"; echo "0 passed, 1 failed"; exit 1; }

log "work dir $WORK, $(podman --version), tool $VECRING"
if ! bash "$ROOT/scripts/image.sh" vecring "$WORK/rootfs" --tool "$VECRING" --tar "$WORK/image.tar" >"$WORK/image.log" 2>&1 ||
	! timeout 120 "${PM[@]}" import -q "$WORK/image.tar" "$IMAGE" >>"$WORK/image.log" 2>&1; then
	fail "the vecring image (scripts/image.sh vecring, podman import)"
	sed 's/^/    /' "$WORK/image.log"
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi
if ! RT=$(pick_runtime PM); then
	fail "rootful podman runs no container with crun or runc"
	tail -n 3 "$WORK"/probe-PM-*.log | sed 's/^/    /'
	echo "$PASSED passed, $FAILED failed"
	exit 1
fi
log "image $IMAGE from scripts/image.sh; rootful runtime $RT"

for t in "${TESTS[@]}"; do
	log "--- $t"
	"test_$t"
done

# The machine as it was: no container, user, cgroup or hugetlb setting of
# this run remains, nor what podman made outside the work directory.
[ -z "$(pm ps -aq 2>/dev/null)" ] && pass "no rootful container of this run remains" ||
	fail "rootful containers remain: $(pm ps -a --format '{{.Names}}' | tr '\n' ' ')"
user_was=$USR
trap - EXIT
cleanup
if [ -n "$user_was" ]; then
	id "$user_was" >/dev/null 2>&1 && fail "the test's user $user_was remains" || pass "the test's user $user_was is gone"
	grep -qs "^$user_was:" /etc/subuid /etc/subgid && fail "$user_was's subordinate ranges remain" ||
		pass "no subordinate range of $user_was remains"
fi
left=$(for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do [ -e "$m$PODMAN_CG" ] && echo "$m$PODMAN_CG"; done)
[ -z "$left" ] && pass "no cgroup of this run remains" || fail "cgroups remain: $left"
[ "${#HUGETLB_ENABLED[@]}" -eq 0 ] && pass "hugetlb is off again wherever the test turned it on" ||
	fail "hugetlb still on in ${HUGETLB_ENABLED[*]}"
for p in "${CREATED_GLOBAL[@]}"; do
	[ -e "$p" ] && fail "$p (made by podman) remains"
done
for p in "$CDI_SPEC" "$CDI_SPEC_2" "$CDI_SPEC_ETC"; do
	[ -e "$p" ] && fail "$p (the cdi group's spec) remains"
done
for p in "${CDI_MADE_DIRS[@]}"; do
	[ -e "$p" ] && fail "$p (made by the cdi group) remains"
done
for m in "${CREATED_CG[@]}"; do
	[ -e "$m" ] && fail "$m (podman's default cgroup parent) appeared: a container ran outside $PODMAN_CG"
done
echo "$PASSED passed, $FAILED failed in $SECONDS s"
[ "$FAILED" -eq 0 ]
