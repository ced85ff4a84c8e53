#!/usr/bin/env bash
# The files of packaging/ under a real systemd: a container whose PID 1 is
# the host's systemd (rootful Podman, --systemd=always; not privileged:
# CAP_SYS_ADMIN for the units' namespaces, CAP_NET_ADMIN and /dev/net/tun
# for the bridges, /sys and /proc/sys read-only, so that nothing it boots
# acts on the host), booted twice from a root file system made of the
# host's own /usr (an overlay, so that the tool, the unit template and the
# tmpfiles entry are installed where the packages install them) and an
# /etc of its own:
#   boot 1  packaging/tmpfiles/vecring.conf made /run/vecring (0755 root);
#           `vecring prepare --domain web --persist` writes its entry;
#           `systemctl enable --now` of two instances of
#           vecring-tap@.service, the master and the slave of link web/eth0
#           (/etc/vecring/tap/NAME.conf): both TAP interfaces appear with
#           carrier on; the sandbox holds (systemctl show, and
#           /proc/PID/status: CapEff and CapBnd are CAP_NET_ADMIN alone, no
#           new privileges, a seccomp filter; the file system read-only
#           but /run/vecring, root's home hidden, a /dev of its own with
#           /dev/net/tun); `systemctl stop` ends each cleanly (exit 0,
#           interface and socket gone)
#   boot 2  (the master's instance disabled): the domain directory is
#           there again with the owner and mode prepare gave it, made by
#           systemd-tmpfiles-setup.service before the slave's instance
#           started, which waits with its carrier off; the master started
#           by hand brings it on.
# systemd-analyze verify of the unit runs in vecring-cli/tests/tap_unit.rs.
#
# Usage: tests/systemd/run.sh   (as root)
# Env:   VECRING              the tool (default target/release/vecring)
#        VECRING_TEST_KEEP=1  keep the work directory's logs
# Podman keeps its storage and run state in the work directory and the
# container's cgroups under vecring-systemd-<pid>; what it makes outside
# them (/run/runc, /run/crun, ...) goes when it was not there before. The
# last line is "N passed, N failed"; the exit status is non-zero if
# anything failed.
set -uo pipefail

if [ "$(id -u)" != 0 ]; then
	echo "skipped: the systemd test needs root (rootful Podman, an overlay mount)"
	exit 0
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VECRING=${VECRING:-$ROOT/target/release/vecring}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vecring-systemd.XXXXXX")
CTR=vecring-systemd-$$
CG=/vecring-systemd-$$
RT=runc
PASSED=0
FAILED=0

log() { echo "systemd-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }

PM=(podman --root "$WORK/storage" --runroot "$WORK/runroot" --tmpdir "$WORK/libpod"
	--cgroup-manager=cgroupfs --events-backend=file)
pm() { timeout --kill-after=5 120 "${PM[@]}" "$@"; }
# ct COMMAND...: COMMAND in the booted container (a minute at most).
ct() { timeout --kill-after=5 60 "${PM[@]}" exec "$CTR" "$@"; }

# What rootful Podman makes outside its --root, --runroot and --tmpdir.
PODMAN_GLOBAL=(/var/lib/containers /run/containers /run/libpod /run/runc /run/crun /etc/cni/net.d/cni.lock)
CREATED_GLOBAL=()
for p in "${PODMAN_GLOBAL[@]}"; do
	[ -e "$p" ] || CREATED_GLOBAL+=("$p")
done

cleanup() {
	local m d p
	if [ -d "$WORK/storage" ]; then
		pm rm --force --time 10 "$CTR" >/dev/null 2>&1
		pm rm --all --force --time 0 >/dev/null 2>&1
	fi
	mountpoint -q "$WORK/root/usr" && umount "$WORK/root/usr"
	awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
	for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
		d=$m$CG
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	for p in "${CREATED_GLOBAL[@]}"; do
		if [ -d "$p" ]; then
			rm -f "$p/cache/blob-info-cache-v1.boltdb"
			find "$p" -depth -type d -empty -delete 2>/dev/null
		else
			rm -f "$p"
		fi
	done
	rm -rf "$WORK/storage" "$WORK/runroot" "$WORK/libpod" "$WORK/root" "$WORK/usr.up" "$WORK/usr.work"
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'fail "interrupted"; exit 1' INT TERM HUP

finish() {
	echo "$PASSED passed, $FAILED failed in $SECONDS s"
	[ "$FAILED" -eq 0 ]
	exit
}

for c in podman runc systemctl nsenter; do
	command -v "$c" >/dev/null || { fail "$c not found (run scripts/setup.sh)"; finish; }
done
[ -x "$VECRING" ] || { fail "$VECRING missing (cargo build --release -p vecring-cli)"; finish; }
[ -c /dev/net/tun ] || { fail "/dev/net/tun missing"; finish; }
log "work dir $WORK, $(podman --version), $(systemctl --version | head -n1), tool $VECRING"

# --- the root file system ------------------------------------------------------

# The host's /usr under an overlay: the packages' files go where they
# install them, the host's /usr stays as it is.
R=$WORK/root
mkdir -p "$R"/{usr,etc,run,proc,sys,dev,root,home,var/tmp,var/log,tmp} "$WORK/usr.up" "$WORK/usr.work"
chmod 1777 "$R/tmp" "$R/var/tmp"
for l in bin sbin lib lib64; do ln -s "usr/$l" "$R/$l"; done
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$WORK/usr.up,workdir=$WORK/usr.work" "$R/usr" ||
	{ fail "the overlay of /usr"; finish; }
install -m 0755 "$VECRING" "$R/usr/bin/vecring"
install -m 0644 "$ROOT/packaging/systemd/vecring-tap@.service" "$R/usr/lib/systemd/system/"
install -m 0644 "$ROOT/packaging/tmpfiles/vecring.conf" "$R/usr/lib/tmpfiles.d/"

# An /etc of its own: root and nobody, an id, and the two bridges.
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$R/etc/group"
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$R/etc/machine-id"
echo >>"$R/etc/machine-id"
ln -s ../usr/lib/os-release "$R/etc/os-release"
# A file in root's home, which the bridges must not see.
touch "$R/root/.vecring-probe"
echo vecring-systemd >"$R/etc/hostname"
mkdir -p "$R/etc/vecring/tap"
printf 'DOMAIN=web\nLINK=eth0\nTAP_OPTIONS=--role master --ifname web-m\n' >"$R/etc/vecring/tap/web-m.conf"
printf 'DOMAIN=web\nLINK=eth0\nTAP_OPTIONS=--ifname web-s\n' >"$R/etc/vecring/tap/web-s.conf"

# --- booting -------------------------------------------------------------------

# boot: starts the container (or starts it again) and waits until systemd
# has booted it; its state and what failed go to the log.
boot() {
	local state i
	if [ "$1" = 1 ]; then
		pm run -d --name "$CTR" --runtime "$RT" --systemd=always --cap-add SYS_ADMIN,NET_ADMIN --device /dev/net/tun --network none \
			--ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
			--cgroup-parent "$CG" --rootfs "$R" /sbin/init >"$WORK/run.log" 2>&1 ||
			{ fail "boot $1: podman run of /sbin/init"; sed 's/^/    /' "$WORK/run.log"; return 1; }
	else
		pm start "$CTR" >"$WORK/start.log" 2>&1 ||
			{ fail "boot $1: podman start"; sed 's/^/    /' "$WORK/start.log"; return 1; }
	fi
	# systemctl answers once PID 1 listens on its private socket.
	for ((i = 0; i < 300; i++)); do
		ct test -S /run/systemd/private 2>/dev/null && break
		sleep 0.1
	done
	state=$(ct systemctl is-system-running --wait 2>&1)
	case $state in
	running | degraded) ;;
	*)
		fail "boot $1: systemd says '$state'"
		pm logs "$CTR" 2>&1 | tail -n 30 | sed 's/^/    /'
		return 1
		;;
	esac
	log "boot $1: $state; failed units: $(ct systemctl list-units --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')"
	if [ "$(ct cat /proc/1/comm)" = systemd ]; then
		pass "boot $1: systemd is PID 1 in the container"
	else
		fail "boot $1: PID 1 is $(ct cat /proc/1/comm)"
	fi
}

# unit_dump INSTANCE: the instance's status and journal, for a failure.
unit_dump() {
	ct systemctl status --no-pager "vecring-tap@$1" 2>&1 | sed 's/^/    /'
	ct journalctl --no-pager -n 30 -u "vecring-tap@$1" 2>&1 | sed 's/^/    /'
}

# carrier IFNAME WANT: waits up to 20 s for the interface's carrier to be
# WANT (1 on, 0 off).
carrier() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(ct cat "/sys/class/net/$1/carrier" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# ns COMMAND...: COMMAND in the mount namespace of process $pid of the
# container.
ns() { ct nsenter -t "$pid" -m -- "$@"; }

# mainpid INSTANCE: the instance's main process (in the container).
mainpid() { ct systemctl show -p MainPID --value "vecring-tap@$1"; }

boot 1 || finish

d=$(ct stat -c '%u %g %a' /run/vecring)
[ "$d" = "0 0 755" ] && pass "boot 1: /run/vecring made by packaging/tmpfiles/vecring.conf (0755 root)" ||
	fail "boot 1: /run/vecring is '$d', not 0 0 755"

if out=$(ct vecring prepare --domain web --persist 2>&1) &&
	grep -q '^# /etc/tmpfiles.d/vecring-web.conf makes it again at every boot' <<<"$out"; then
	pass "boot 1: vecring prepare --domain web --persist wrote /etc/tmpfiles.d/vecring-web.conf"
else
	fail "boot 1: vecring prepare --domain web --persist"
	sed 's/^/    /' <<<"$out"
fi
PREPARED=$(ct stat -c '%u %g %a' /run/vecring/web)

if ct systemctl enable --now vecring-tap@web-m vecring-tap@web-s >"$WORK/enable.log" 2>&1; then
	pass "boot 1: systemctl enable --now vecring-tap@web-m vecring-tap@web-s"
else
	fail "boot 1: systemctl enable --now"
	sed 's/^/    /' "$WORK/enable.log"
fi
if carrier web-m 1 && carrier web-s 1; then
	pass "boot 1: both bridges' interfaces are up with carrier on (the link web/eth0 is up between the two units)"
else
	fail "boot 1: no carrier on web-m and web-s"
	unit_dump web-m
	unit_dump web-s
fi

# The sandbox, as systemd reports it and as the process has it.
for inst in web-m web-s; do
	props=$(ct systemctl show -p CapabilityBoundingSet -p AmbientCapabilities -p NoNewPrivileges \
		-p ProtectSystem -p ProtectHome -p PrivateTmp -p PrivateDevices -p RestrictNamespaces \
		-p MemoryDenyWriteExecute -p LockPersonality -p RestrictAddressFamilies -p DevicePolicy \
		"vecring-tap@$inst")
	log "$inst: $(tr '\n' ' ' <<<"$props")"
	missing=()
	for w in CapabilityBoundingSet=cap_net_admin AmbientCapabilities= NoNewPrivileges=yes ProtectSystem=strict \
		ProtectHome=yes PrivateTmp=yes PrivateDevices=yes DevicePolicy=closed RestrictNamespaces=yes \
		MemoryDenyWriteExecute=yes LockPersonality=yes 'RestrictAddressFamilies=AF_INET AF_UNIX'; do
		grep -qxF -- "$w" <<<"$props" || missing+=("$w")
	done
	[ ${#missing[@]} -eq 0 ] && pass "$inst: systemctl show gives the unit's sandbox" ||
		fail "$inst: systemctl show lacks ${missing[*]}"
	pid=$(mainpid "$inst")
	status=$(ct grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t ' ' ')
	log "$inst (pid $pid): $(tr '\n' ' ' <<<"$status")"
	if grep -qx 'CapEff: 0000000000001000' <<<"$status" && grep -qx 'CapBnd: 0000000000001000' <<<"$status" &&
		grep -qx 'NoNewPrivs: 1' <<<"$status" && grep -qx 'Seccomp: 2' <<<"$status"; then
		pass "$inst: the bridge runs with CAP_NET_ADMIN alone (effective and bounding), no new privileges, a seccomp filter"
	else
		fail "$inst: /proc/$pid/status: $status"
	fi
	# Its mount namespace: read-only but the run directory, no home, a
	# /dev of pseudo-devices and the TUN device.
	problems=()
	ns sh -c 'touch /usr/lib/vecring-probe' 2>/dev/null && problems+=("/usr writable")
	ns sh -c 'touch /etc/vecring-probe' 2>/dev/null && problems+=("/etc writable")
	ns sh -c 'touch /var/lib/vecring-probe' 2>/dev/null && problems+=("/var writable")
	ns sh -c 'touch /run/vecring/probe && rm /run/vecring/probe' || problems+=("/run/vecring not writable")
	ns test -e /root/.vecring-probe && problems+=("root's home visible")
	ns test -c /dev/net/tun || problems+=("no /dev/net/tun")
	[ "$(ns stat -c %d /dev)" != "$(ct stat -c %d /dev)" ] || problems+=("the container's /dev")
	[ ${#problems[@]} -eq 0 ] &&
		pass "$inst: its file system is read-only but /run/vecring, root's home hidden, a /dev of its own with /dev/net/tun" ||
		fail "$inst: sandbox: ${problems[*]}"
done
# systemd's own summary of the sandbox, for the log.
log "systemd-analyze security: $(ct systemd-analyze security --no-pager vecring-tap@web-m 2>&1 | tail -n1)"
list=$(ct vecring list)
grep -qE '^web +eth0 +master +up ' <<<"$list" && pass "boot 1: vecring list shows web/eth0 up" ||
	{ fail "boot 1: vecring list"; sed 's/^/    /' <<<"$list"; }

# A clean stop: exit 0, the interface and (the master's) socket gone.
for inst in web-s web-m; do
	ct systemctl stop "vecring-tap@$inst"
	res=$(ct systemctl show -p Result -p ExecMainStatus -p ActiveState "vecring-tap@$inst" | tr '\n' ' ')
	if [ "$res" = "Result=success ExecMainStatus=0 ActiveState=inactive " ] &&
		! ct test -e "/sys/class/net/$inst"; then
		pass "$inst: systemctl stop ends it cleanly ($res), its interface gone"
	else
		fail "$inst: stop: $res; interface $(ct test -e "/sys/class/net/$inst" && echo still there)"
		unit_dump "$inst"
	fi
	[ "$inst" = web-s ] && { carrier web-m 0 && pass "web-m: carrier off once the slave's bridge stopped" ||
		fail "web-m: carrier still on without the slave"; }
done
ct test -e /run/vecring/web/eth0.sock && fail "the master's socket remains after its stop" ||
	pass "web-m: the master's socket is gone after its stop"

# --- a reboot ------------------------------------------------------------------

ct systemctl disable vecring-tap@web-m >/dev/null 2>&1
ct journalctl --no-pager -b >"$WORK/journal-1.log" 2>&1
pm stop --time 60 "$CTR" >"$WORK/stop.log" 2>&1 || { fail "podman stop (systemd's shutdown)"; sed 's/^/    /' "$WORK/stop.log"; }
boot 2 || finish

d=$(ct stat -c '%u %g %a' /run/vecring/web 2>&1)
[ "$d" = "$PREPARED" ] &&
	pass "boot 2: /run/vecring/web is there again as prepare made it ($d), from its tmpfiles.d entry" ||
	fail "boot 2: /run/vecring/web is '$d', prepare made '$PREPARED'"
tmpfiles_done=$(ct systemctl show -p ExecMainExitTimestampMonotonic --value systemd-tmpfiles-setup.service)
slave_start=$(ct systemctl show -p ExecMainStartTimestampMonotonic --value vecring-tap@web-s)
if [ "$(ct systemctl is-active vecring-tap@web-s)" = active ] && [ "${tmpfiles_done:-0}" -gt 0 ] &&
	[ "${slave_start:-0}" -gt "$tmpfiles_done" ]; then
	pass "boot 2: the enabled slave's bridge started after systemd-tmpfiles-setup.service had made the directories"
else
	fail "boot 2: the slave's bridge: $(ct systemctl is-active vecring-tap@web-s), started at $slave_start, tmpfiles done at $tmpfiles_done"
	unit_dump web-s
fi
[ "$(ct systemctl is-active vecring-tap@web-m)" = inactive ] && carrier web-s 0 &&
	pass "boot 2: the slave's interface waits with its carrier off (its master disabled)" ||
	fail "boot 2: the slave's carrier is not off"
ct systemctl start vecring-tap@web-m
if carrier web-s 1 && carrier web-m 1; then
	pass "boot 2: the master's bridge started by hand brings both carriers on"
else
	fail "boot 2: no carrier after the master's start"
	unit_dump web-m
	unit_dump web-s
fi
ct journalctl --no-pager -b >"$WORK/journal-2.log" 2>&1
if pm stop --time 60 "$CTR" >"$WORK/stop.log" 2>&1; then
	pass "systemd shut the container down (exit status $(pm inspect -f '{{.State.ExitCode}}' "$CTR"))"
else
	fail "the last shutdown: $(cat "$WORK/stop.log")"
fi

trap - EXIT
cleanup
mountpoint -q "$WORK/root/usr" 2>/dev/null && fail "the overlay of /usr remains"
left=$(for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do [ -e "$m$CG" ] && echo "$m$CG"; done)
[ -z "$left" ] && pass "no cgroup of this run remains" || fail "cgroups remain: $left"
for p in "${CREATED_GLOBAL[@]}"; do
	[ -e "$p" ] && fail "$p (made by podman) remains"
done
finish
