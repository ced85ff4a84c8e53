# shellcheck shell=bash
# Case "userns", sourced by tests/containers/docker.sh: a dockerd with
# --userns-remap (tests/containers/dockerd.sh, docker_start_userns), which
# maps its containers' uids and gids 0-65535 to 100000-165535 on the host:
# the container's user 4242 is uid 104242 there. The daemon of the other
# cases stops, this one starts on the same roots (its data in a
# subdirectory of its own, the image imported again), and stops at the
# end. Checked, as docs/containers.md says: the master's owner= is the
# host's number for the container's user (base + 4242), and the master
# sees the container's testpmd as that uid; the slave sees the host's root
# master as the overflow uid (65534), which its default accepts (pinned
# here with master_uid=65534, which refuses any other); frames host ->
# container, counts exact.

test_userns() {
	local base=100000
	local host_uid=$((base + CTR_UID))
	docker_stop
	if ! docker_start_userns "$base"; then
		fail "userns: dockerd --userns-remap did not start"
		return
	fi
	if ! dk import "$IMG/testpmd.tar" vecring-testpmd:import >"$WORK/import-userns.log" 2>&1; then
		fail "userns: docker import in the remapped daemon"
		sed 's/^/    /' "$WORK/import-userns.log"
		return
	fi
	prepare_domain dku
	PMD_EAL=--log-level=pmd.net.vecring:debug start_ctr_pmd dku_s vecring-testpmd:import 1 "domain=dku,link=l0,master_uid=65534" "$(confined dku)" \
		--forward-mode=rxonly
	wait_for dku_s "testpmd> " 1 30 || { fail "userns: container testpmd did not start"; sed 's/^/    /' "$WORK/dku_s.log"; return; }
	cmd dku_s start
	start_master dku_m dku l0 "$host_uid" --forward-mode=txonly --txpkts=64
	if wait_for dku_s "VECRING: eth_vecring0: link up" 1 30; then
		pass "userns: link up between the host's master (owner=$host_uid) and the remapped container (master_uid=65534)"
	else
		fail "userns: link did not come up"
		ls -ln "$RUN_DIR/dku" | sed 's/^/    /'
		grep "VECRING: dku" "$WORK/dku_s.log" | sort -u | sed 's/^/    /'
		return
	fi
	local p map v
	if p=$(ctr_pmd_pid dku_s) && [ -n "$p" ]; then
		map=$(awk '{ print $1, $2, $3 }' "/proc/$p/uid_map")
		expect_eq "userns: the container's uids 0-65535 are the host's $base-$((base + 65535))" "$map" "0 $base 65536"
		v=$(status_field "$p" Uid)
		expect_eq "userns: the container's user $CTR_UID is uid $host_uid on the host" "${v%%[[:space:]]*}" "$host_uid"
		if grep -q "slave attached: pid $p uid $host_uid gid $host_uid" "$WORK/dku_m.log"; then
			pass "userns: the master saw the container's testpmd as uid and gid $host_uid"
		else
			fail "userns: the master did not log pid $p uid $host_uid attaching"
			grep "slave attached" "$WORK/dku_m.log" | sed 's/^/    /'
		fi
	else
		fail "userns: no testpmd process in the container"
	fi
	wait_for dku_m "testpmd> " 1 30 || { fail "userns: master did not start"; return; }
	cmd dku_m start
	sleep 2
	stop_fwd dku_m
	show_xstats dku_m
	local tx
	tx=$(xstat dku_m tx_good_packets)
	drain dku_s "$tx"
	stop_fwd dku_s
	show_xstats dku_s
	expect_gt "userns: the host's master sent" "$tx" 0
	expect_eq "userns: the remapped container received every frame sent" "$(xstat dku_s rx_good_packets)" "$tx"
	quit_pmd dku_m
	quit_pmd dku_s
}
