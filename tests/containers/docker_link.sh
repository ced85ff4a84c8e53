# shellcheck shell=bash
# Cases "image", "host_to_ctr", "ctr_to_host", "forward" and "wrong_owner",
# sourced by tests/containers/docker.sh (which says what each checks):
# testpmd in a container of the builder's image, imported and built,
# against a testpmd on the host.

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

# The container forwards what the host sends back to it (testpmd macswap,
# as a container on a test harness's path would), the host forwards it
# back (io): the host injects 4 bursts of 32 frames (`start tx_first 4`)
# that circle between the two. Then the container stops first, the host
# forwards what is left back to it and stops: every frame is accounted for
# (the 128 end up waiting in the host->container ring), nothing dropped.
test_forward() {
	prepare_domain dk4
	start_ctr_pmd dk4_s vecring-testpmd:import 1 "domain=dk4,link=l0" "$(confined dk4)" \
		--forward-mode=macswap --no-flush-rx
	wait_for dk4_s "testpmd> " 1 30 || { fail "forward: container testpmd did not start"; return; }
	cmd dk4_s start
	start_master dk4_m dk4 l0 "" --forward-mode=io --no-flush-rx
	if wait_for dk4_s "VECRING: eth_vecring0: link up" 1 30 &&
		wait_for dk4_m "VECRING: eth_vecring0: link up" 1 30; then
		pass "forward: link up between the host and the container"
	else
		fail "forward: link did not come up"
		return
	fi
	wait_for dk4_m "testpmd> " 1 30 || { fail "forward: master did not start"; return; }
	cmd dk4_m "start tx_first 4"
	sleep 3
	stop_fwd dk4_s
	local rx last=-1 i
	for ((i = 0; i < 20; i++)); do
		show_xstats dk4_m
		rx=$(xstat dk4_m rx_good_packets)
		[ "$rx" = "$last" ] && break
		last=$rx
		sleep 0.3
	done
	stop_fwd dk4_m
	show_xstats dk4_m
	show_xstats dk4_s
	local m_rx m_tx s_rx s_tx
	m_rx=$(xstat dk4_m rx_good_packets)
	m_tx=$(xstat dk4_m tx_good_packets)
	s_rx=$(xstat dk4_s rx_good_packets)
	s_tx=$(xstat dk4_s tx_good_packets)
	log "forward: host rx $m_rx tx $m_tx, container rx $s_rx tx $s_tx"
	expect_gt "forward: frames went round more than once" "$s_rx" 128
	expect_eq "forward: the container forwarded every frame it received" "$s_tx" "$s_rx"
	expect_eq "forward: the container's testpmd dropped nothing" "$(fwd_dropped dk4_s TX)" 0
	expect_eq "forward: the host received every frame the container sent" "$m_rx" "$s_tx"
	expect_eq "forward: the host sent the 128 injected frames plus every frame it received" \
		"$m_tx" "$((m_rx + 128))"
	expect_eq "forward: the host's testpmd dropped nothing" "$(fwd_dropped dk4_m TX)" 0
	expect_no_corruption "forward" dk4_m dk4_s
	quit_pmd dk4_m
	quit_pmd dk4_s
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
