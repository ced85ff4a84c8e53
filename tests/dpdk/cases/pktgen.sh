# shellcheck shell=bash
# Group "pktgen", sourced by tests/dpdk/run.sh: pktgen-dpdk on both ends of
# a link, the host's pktgen the master, the slave a pktgen in an LXC
# container whose root file system is scripts/image.sh's image holding only
# pktgen, its libraries and DPDK's driver directory (eth_vecring found there,
# no -d). Both pktgens run a Lua script (tests/dpdk/pktgen/driver.lua, -f)
# and no person: frames of 64, 1514 and 9000 bytes host -> container, then
# container -> host, pktgen's own counts (pktgen.portStats) checked against
# eth_vecring's xstats on both ends, read through each pktgen's DPDK
# telemetry socket: what the sending pktgen counts sent is what its driver
# counts sent, and every such frame is received by the other end or counted
# there as the ring's drop, none missing.
#
# pktgen is scripts/pktgen.sh's build for the DPDK under test (PKTGEN
# overrides it).

group pktgen pktgen_lxc

# shellcheck source=tests/dpdk/pktgen/lib.sh
. "$ROOT/tests/dpdk/pktgen/lib.sh"

# The container: pg_image's image (made once a run), the link's domain
# directory and the control directory bind-mounted.
pg_lxc_conf() {
	local dom=$1 ctl=$2 img=$WORK/pktgen-image conf=$WORK/lxc-pktgen-$1.conf
	pg_image "$img" || return 1
	mkdir -p "$RUN_DIR/$dom"
	cat >"$conf" <<-EOF
		lxc.uts.name = vecring-pktgen
		lxc.rootfs.path = dir:$img
		lxc.net.0.type = empty
		lxc.console.path = none
		lxc.mount.auto = proc:rw sys:rw
		lxc.autodev = 1
		lxc.mount.entry = $RUN_DIR/$dom run/vecring/$dom none bind,create=dir 0 0
		lxc.mount.entry = $ctl ctl none bind,create=dir 0 0
	EOF
	echo "$conf"
}

test_pktgen_lxc() {
	require_lxc "pktgen lxc" || return
	PG_EXE=$(pktgen_bin) || { fail "pktgen lxc: no pktgen for this DPDK (scripts/pktgen.sh; VECRING_PKTGEN_SOURCES names pktgen's release tarballs)"; return; }
	local ctl_h=$WORK/pg-ctl-h ctl_c=$WORK/pg-ctl-c conf
	mkdir -p "$ctl_h" "$ctl_c"
	conf=$(pg_lxc_conf vrpg "$ctl_c") || { fail "pktgen lxc: scripts/image.sh could not make the container's image"; return; }
	start_pktgen pgc 1 "domain=vrpg,link=pg,mac=$PG_CTR_MAC" "$ctl_c" \
		timeout --foreground --kill-after=5 "$((WATCHDOG + 15))" lxc-execute -n "vrtest-pgc-$$" -f "$conf" -o "$WORK/pgc.lxc.log" -l INFO --
	start_pktgen pgh 0 "domain=vrpg,link=pg,run_dir=$RUN_DIR,master=true,mac=$PG_HOST_MAC" "$ctl_h"
	pg_link_up "pktgen lxc" || return
	local p
	if p=$(pg_pid pgc) && [ "$(readlink "/proc/$p/ns/mnt")" != "$(readlink /proc/$$/ns/mnt)" ] &&
		[ -x "/proc/$p/root/bin/pktgen" ] && [ ! -e "/proc/$p/root/usr/bin/dpdk-testpmd" ]; then
		pass "pktgen lxc: the slave pktgen (host pid $p) runs in its own mount namespace, on the image's root"
	else
		fail "pktgen lxc: the slave pktgen is not in the container (pid ${p:-none})"
	fi
	local sizes="64 1514 9000"
	if [ "$TESTPMD_LINE" = 24.11 ]; then
		# pktgen 24.10 (single_set_pkt_size) takes a size above 1518 only
		# when it is above its jumbo maximum, 16128, even with -j; 26.02
		# takes any size up to that maximum.
		log "pktgen lxc: no 9000-byte rounds: pktgen 24.10 cuts \`set 0 size 9000\` to 1518"
		sizes="64 1514"
	fi
	# 9000 bytes: pktgen's jumbo mode (-j, on both) asks the port for an
	# MTU of 9216 and takes the driver's largest, 9198.
	# shellcheck disable=SC2086
	pg_rounds "pktgen lxc" $sizes
	quit_pktgens "pktgen lxc" pgh pgc
}
