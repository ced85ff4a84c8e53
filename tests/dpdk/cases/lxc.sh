# shellcheck shell=bash
# Group "lxc", sourced by tests/dpdk/run.sh: the slave testpmd runs inside
# an LXC container (lxc-execute) that reaches the link only through its
# bind-mounted domain directory: txonly -> rxonly with exact counts, io
# forwarding both ways, and a host master that quits and comes back.

group lxc lxc_txonly lxc_io lxc_master_restart

# lxc_conf DOMAIN: an LXC config sharing the host's root file system (as
# docs/lxc.md describes) that bind-mounts the host's $RUN_DIR/DOMAIN at
# $CTR_RUN/DOMAIN, a path that is an empty directory on the host: the only
# way the container reaches the link is the bind mount. lxc.autodev = 0
# keeps the host's /dev, so /dev/hugepages is there for EAL.
lxc_conf() {
	local dom=$1 conf=$WORK/lxc-$1.conf
	mkdir -p "$RUN_DIR/$dom"
	cat >"$conf" <<-EOF
		lxc.uts.name = vecring-dpdk
		lxc.rootfs.path =
		lxc.net.0.type = empty
		lxc.console.path = none
		lxc.mount.auto = proc:rw sys:rw
		lxc.autodev = 0
		lxc.mount.entry = $RUN_DIR/$dom ${CTR_RUN#/}/$dom none bind,create=dir 0 0
	EOF
	echo "$conf"
}

# in_container NAME WHAT: check that session NAME's testpmd runs in other
# PID and mount namespaces than this script, and that the master (session
# MASTER, logging at info level) saw that very process attach.
in_container() {
	local name=$1 master=$2 what=$3 p
	if ! p=$(pmd_pid "$name"); then
		fail "$what: no testpmd process in the container"
		return
	fi
	if [ "$(readlink "/proc/$p/ns/pid")" != "$(readlink /proc/$$/ns/pid)" ] &&
		[ "$(readlink "/proc/$p/ns/mnt")" != "$(readlink /proc/$$/ns/mnt)" ]; then
		pass "$what: slave testpmd (host pid $p) runs in its own PID and mount namespaces"
	else
		fail "$what: slave testpmd (host pid $p) is not in a container"
	fi
	if grep -q "slave attached: pid $p uid 0 " "$WORK/$master.log"; then
		pass "$what: master saw the container's testpmd (pid $p) attach"
	else
		fail "$what: master did not log pid $p attaching"
		grep "slave attached" "$WORK/$master.log" | sed 's/^/    /'
	fi
}

require_lxc() {
	if command -v lxc-execute >/dev/null; then
		return 0
	fi
	fail "$1: lxc-execute not found (run scripts/setup.sh)"
	return 1
}

# Host master txonly -> container slave rxonly, exact counts.
test_lxc_txonly() {
	require_lxc "lxc txonly" || return
	local conf
	conf=$(lxc_conf vrlxc)
	PMD_LXC=$conf start_pmd lxtx_s 1 "domain=vrlxc,link=tx,run_dir=$CTR_RUN" --forward-mode=rxonly
	wait_for lxtx_s "testpmd> " 1 30 || { fail "lxc txonly: container testpmd did not start"; return; }
	cmd lxtx_s start
	PMD_EAL=--log-level=pmd.net.vecring:info start_pmd lxtx_m 0 \
		"domain=vrlxc,link=tx,run_dir=$RUN_DIR,master=true" --forward-mode=txonly --txpkts=64
	if wait_for lxtx_s "VECRING: eth_vecring0: link up" 1 30; then
		pass "lxc txonly: link up between host and container"
	else
		fail "lxc txonly: link did not come up"
		return
	fi
	in_container lxtx_s lxtx_m "lxc txonly"
	wait_for lxtx_m "testpmd> " 1 30 || { fail "lxc txonly: master did not start"; return; }
	cmd lxtx_m start
	sleep 3
	stop_fwd lxtx_m
	show_xstats lxtx_m
	local tx
	tx=$(xstat lxtx_m tx_good_packets)
	drain lxtx_s "$tx"
	stop_fwd lxtx_s
	show_xstats lxtx_s
	expect_gt "lxc txonly: host master sent" "$tx" 0
	expect_eq "lxc txonly: container slave received every frame sent" \
		"$(xstat lxtx_s rx_good_packets)" "$tx"
	expect_eq "lxc txonly: byte count" "$(xstat lxtx_s rx_good_bytes)" "$((tx * 64))"
	# txonly does not retry: what the full ring did not take testpmd freed
	# and counted as TX-dropped, and the PMD as tx_ring_full.
	expect_eq "lxc txonly: ring-full offers = testpmd's TX-dropped" \
		"$(xstat lxtx_m tx_ring_full)" "$(fwd_dropped lxtx_m TX)"
	expect_no_corruption "lxc txonly" lxtx_m lxtx_s
	quit_pmd lxtx_m
	quit_pmd lxtx_s
}

# io forwarding both ways: the host master injects 4 bursts of 32 frames
# (`start tx_first 4`) and both sides forward what they receive back
# (--forward-mode=io, frames unchanged), so the same 128 frames circle
# between host and container. Then the container stops first, the master
# forwards what is left back to it, and stops: every frame is accounted for
# (the 128 end up waiting in the master->slave ring) and nothing was dropped.
test_lxc_io() {
	require_lxc "lxc io" || return
	local conf
	conf=$(lxc_conf vrlxc)
	PMD_LXC=$conf start_pmd lxio_s 1 "domain=vrlxc,link=io,run_dir=$CTR_RUN" \
		--forward-mode=io --no-flush-rx
	wait_for lxio_s "testpmd> " 1 30 || { fail "lxc io: container testpmd did not start"; return; }
	cmd lxio_s start
	PMD_EAL=--log-level=pmd.net.vecring:info start_pmd lxio_m 0 \
		"domain=vrlxc,link=io,run_dir=$RUN_DIR,master=true" --forward-mode=io --no-flush-rx
	if wait_for lxio_s "VECRING: eth_vecring0: link up" 1 30 &&
		wait_for lxio_m "VECRING: eth_vecring0: link up" 1 30; then
		pass "lxc io: link up between host and container"
	else
		fail "lxc io: link did not come up"
		return
	fi
	in_container lxio_s lxio_m "lxc io"
	wait_for lxio_m "testpmd> " 1 30 || { fail "lxc io: master did not start"; return; }
	cmd lxio_m "start tx_first 4"
	sleep 3
	stop_fwd lxio_s
	# Let the master forward the frames still coming back to the slave.
	local rx last=-1 i
	for ((i = 0; i < 20; i++)); do
		show_xstats lxio_m
		rx=$(xstat lxio_m rx_good_packets)
		[ "$rx" = "$last" ] && break
		last=$rx
		sleep 0.3
	done
	stop_fwd lxio_m
	show_xstats lxio_m
	show_xstats lxio_s
	local m_rx m_tx s_rx s_tx
	m_rx=$(xstat lxio_m rx_good_packets)
	m_tx=$(xstat lxio_m tx_good_packets)
	s_rx=$(xstat lxio_s rx_good_packets)
	s_tx=$(xstat lxio_s tx_good_packets)
	log "lxc io: master rx $m_rx tx $m_tx, container rx $s_rx tx $s_tx"
	expect_gt "lxc io: frames went round more than once" "$s_rx" 128
	expect_eq "lxc io: container forwarded every frame it received" "$s_tx" "$s_rx"
	expect_eq "lxc io: container testpmd dropped nothing" "$(fwd_dropped lxio_s TX)" 0
	expect_eq "lxc io: master received every frame the container sent" "$m_rx" "$s_tx"
	expect_eq "lxc io: master sent the 128 injected frames plus every frame it received" \
		"$m_tx" "$((m_rx + 128))"
	expect_eq "lxc io: master testpmd dropped nothing" "$(fwd_dropped lxio_m TX)" 0
	# With the three equalities above, the 128 frames wait in the
	# master->slave ring after the container stopped (m_tx - s_rx = 128).
	expect_eq "lxc io: no ring-full offers (master)" "$(xstat lxio_m tx_ring_full)" 0
	expect_eq "lxc io: no ring-full offers (container)" "$(xstat lxio_s tx_ring_full)" 0
	expect_eq "lxc io: byte count container->host" "$(xstat lxio_m rx_good_bytes)" "$((m_rx * 64))"
	expect_eq "lxc io: byte count host->container" "$(xstat lxio_s rx_good_bytes)" "$((s_rx * 64))"
	expect_no_corruption "lxc io" lxio_m lxio_s
	quit_pmd lxio_m
	quit_pmd lxio_s
}

# The host master exits cleanly (quit) and comes back: the container's
# slave, which reaches the link only through its bind mount of the domain
# directory, must see the new master. (A master that removed the domain
# directory at exit, and a new one that created another, would leave the
# container's bind mount on the deleted directory, and the slave waiting
# forever.)
test_lxc_master_restart() {
	require_lxc "lxc master restart" || return
	local conf
	conf=$(lxc_conf vrlxr)
	PMD_LXC=$conf start_pmd lxmr_s 1 "domain=vrlxr,link=mr,run_dir=$CTR_RUN" --forward-mode=rxonly
	wait_for lxmr_s "testpmd> " 1 30 || { fail "lxc master restart: container testpmd did not start"; return; }
	cmd lxmr_s start
	local mvdev="domain=vrlxr,link=mr,run_dir=$RUN_DIR,master=true"
	start_pmd lxmr_m1 0 "$mvdev" --forward-mode=txonly --txpkts=64
	if ! wait_for lxmr_s "VECRING: eth_vecring0: link up" 1 30; then
		fail "lxc master restart: link did not come up"
		return
	fi
	wait_for lxmr_m1 "testpmd> " 1 30
	quit_pmd lxmr_m1
	if wait_for lxmr_s "VECRING: eth_vecring0: link down" 1 20; then
		pass "lxc master restart: container saw the master quit"
	else
		fail "lxc master restart: container did not see the master quit"
	fi
	start_pmd lxmr_m2 0 "$mvdev" --forward-mode=txonly --txpkts=64
	if wait_for lxmr_s "VECRING: eth_vecring0: link up" 2 20; then
		pass "lxc master restart: container slave attached to the new master"
	else
		fail "lxc master restart: container slave never saw the new master (domain directory replaced under its bind mount?)"
		local p
		p=$(pmd_pid lxmr_s) && grep " ${CTR_RUN}/vrlxr " "/proc/$p/mountinfo" | sed 's/^/    container mount: /'
		quit_pmd lxmr_m2
		quit_pmd lxmr_s
		return
	fi
	wait_for lxmr_m2 "testpmd> " 1 30 && cmd lxmr_m2 start
	sleep 1
	stop_fwd lxmr_m2
	show_xstats lxmr_m2
	local tx
	tx=$(xstat lxmr_m2 tx_good_packets)
	drain lxmr_s "$tx"
	show_xstats lxmr_s
	expect_gt "lxc master restart: new master sent" "$tx" 0
	expect_eq "lxc master restart: container received every frame of the new master" \
		"$(xstat lxmr_s rx_good_packets)" "$tx"
	expect_no_corruption "lxc master restart" lxmr_m2 lxmr_s
	quit_pmd lxmr_m2
	quit_pmd lxmr_s
}
