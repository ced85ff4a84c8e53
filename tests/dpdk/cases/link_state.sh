# shellcheck shell=bash
# Group "link_state", sourced by tests/dpdk/run.sh: link down and up again
# when a peer testpmd is killed (kill -9) and replaced: the slave sees the
# master die and reconnects to a new one (new generation, cumulative
# counters); the master sees the slave die, reports the link down (port
# info and an LSC event), counts its offers as tx_link_down, and resumes by
# itself when a new slave attaches.

group link_state reconnect slave_restart

# kill -9 the master: the slave sees the link go down, and up again (new
# generation) when a new master comes.
test_reconnect() {
	local vdev="domain=vrtest,link=recon,run_dir=$RUN_DIR"
	start_pmd recon_s 1 "$vdev" --forward-mode=rxonly
	wait_for recon_s "testpmd> " 1 30 || { fail "reconnect: slave did not start"; return; }
	cmd recon_s start
	start_pmd recon_m1 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	if wait_for recon_s "VECRING: eth_vecring0: link up" 1 30; then
		pass "reconnect: link up with first master"
	else
		fail "reconnect: link never came up"
	fi
	wait_for recon_m1 "testpmd> " 1 30 && cmd recon_m1 start
	sleep 1
	kill_pmd recon_m1
	if wait_for recon_s "VECRING: eth_vecring0: link down" 1 20; then
		pass "reconnect: slave saw the master die"
	else
		fail "reconnect: slave did not see the link go down"
	fi
	# The slave's counters are cumulative: what it has from the first
	# master is the baseline for the second.
	show_xstats recon_s
	local rx1
	rx1=$(xstat recon_s rx_good_packets)
	start_pmd recon_m2 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	if wait_for recon_s "VECRING: eth_vecring0: link up" 2 30; then
		pass "reconnect: link up again with a new master"
	else
		fail "reconnect: link did not come back"
	fi
	wait_for recon_m2 "testpmd> " 1 30 && cmd recon_m2 start
	sleep 1
	stop_fwd recon_m2
	show_xstats recon_m2
	local tx2
	tx2=$(xstat recon_m2 tx_good_packets)
	expect_gt "reconnect: second master sent" "$tx2" 0
	is_num "$rx1" && is_num "$tx2" && drain recon_s "$((rx1 + tx2))"
	show_xstats recon_s
	expect_eq "reconnect: slave received every frame of the second master" \
		"$(xsum recon_s rx_good_packets)" "$(is_num "$rx1" && is_num "$tx2" && echo $((rx1 + tx2)))"
	expect_eq "reconnect: link_up_count" "$(xstat recon_s link_up_count)" 2
	expect_eq "reconnect: link_down_count" "$(xstat recon_s link_down_count)" 1
	expect_no_corruption reconnect recon_m2 recon_s
	quit_pmd recon_m2
	quit_pmd recon_s
}

# kill -9 the slave during traffic: the master keeps running (and keeps
# offering frames, counted as tx_link_down), reports the link down, and its
# traffic resumes, without any command, when a new slave attaches; the new
# slave receives exactly what the master sent after the reconnection (nothing
# of the dead generation).
test_slave_restart() {
	local vdev="domain=vrtest,link=srestart,run_dir=$RUN_DIR"
	start_pmd sr_m 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	start_pmd sr_s1 1 "$vdev" --forward-mode=rxonly
	wait_for sr_m "VECRING: eth_vecring0: link up" 1 30 || { fail "slave restart: no link"; return; }
	wait_for sr_m "testpmd> " 1 30 && wait_for sr_s1 "testpmd> " 1 30 ||
		{ fail "slave restart: testpmd did not start"; return; }
	cmd sr_s1 start
	cmd sr_m start
	sleep 1
	show_xstats sr_s1
	expect_gt "slave restart: first slave receiving" "$(xstat sr_s1 rx_good_packets)" 0
	local lsc_before
	lsc_before=$(grep -c "Port 0: link state change event" "$WORK/sr_m.log")
	kill_pmd sr_s1
	if wait_for sr_m "VECRING: eth_vecring0: link down" 1 20; then
		pass "slave restart: master saw the slave die"
	else
		fail "slave restart: master did not see the link go down"
	fi
	sleep 0.5
	cmd sr_m "show port info 0"
	if wait_for sr_m "^Link status: down" 1 10; then
		pass "slave restart: master reports link down"
	else
		fail "slave restart: master does not report link down"
	fi
	if wait_for sr_m "Port 0: link state change event" "$((lsc_before + 1))" 10; then
		pass "slave restart: master got a link-down LSC event"
	else
		fail "slave restart: master got no LSC event for the link going down"
	fi
	show_xstats sr_m
	local t1 d1
	t1=$(xstat sr_m tx_good_packets)
	d1=$(xstat sr_m tx_link_down)
	sleep 1
	show_xstats sr_m
	expect_eq "slave restart: master sends nothing while down" "$(xstat sr_m tx_good_packets)" "$t1"
	expect_gt "slave restart: master still running (offers counted as tx_link_down)" \
		"$(xstat sr_m tx_link_down)" "$d1"
	kill -0 "$PID_sr_m" 2>/dev/null && pass "slave restart: master process alive" ||
		fail "slave restart: master process died"

	start_pmd sr_s2 1 "$vdev" --forward-mode=rxonly --no-flush-rx
	if wait_for sr_m "VECRING: eth_vecring0: link up" 2 30; then
		pass "slave restart: link up again with a new slave"
	else
		fail "slave restart: link did not come back"
	fi
	wait_for sr_s2 "testpmd> " 1 30 && cmd sr_s2 start
	sleep 1
	stop_fwd sr_m
	show_xstats sr_m
	local t2
	t2=$(xstat sr_m tx_good_packets)
	expect_gt "slave restart: master traffic resumed by itself" "$t2" "$t1"
	drain sr_s2 "$((t2 - t1))"
	stop_fwd sr_s2
	show_xstats sr_s2
	expect_eq "slave restart: new slave received exactly the frames sent since" \
		"$(xstat sr_s2 rx_good_packets)" "$((t2 - t1))"
	expect_eq "slave restart: master link_up_count" "$(xstat sr_m link_up_count)" 2
	expect_eq "slave restart: master link_down_count" "$(xstat sr_m link_down_count)" 1
	expect_eq "slave restart: master tx_errors" "$(xstat sr_m tx_errors)" 0
	expect_no_corruption "slave restart" sr_m sr_s2
	log "slave restart: $t1 frames sent to the killed slave ($(xstat sr_m tx_lost_on_link_down) of them unread when it died), $((t2 - t1)) to the new one"
	quit_pmd sr_m
	quit_pmd sr_s2
}
