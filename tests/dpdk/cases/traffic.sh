# shellcheck shell=bash
# Group "traffic", sourced by tests/dpdk/run.sh: a slave testpmd (rxonly)
# and a master testpmd (txonly) exchange frames over a vecring link, with
# exact counters: 64-byte frames with TX fast free on and off (every mbuf
# back in its pool), 7168-byte and 9000-byte multi-segment frames scattered
# into small mbufs, the drops counted when the slave does not scatter, and
# the MAC filter with promiscuous mode off.

group traffic small_frames small_frames_no_fast_free jumbo_scatter jumbo_no_scatter jumbo_9000 mac_filter

# traffic NAME MASTER_ARGS SLAVE_ARGS: slave (rxonly) starts first and waits
# for the master (txonly); after a few seconds the master stops, the slave
# drains, and both print their xstats.
traffic() {
	local t=$1 margs=$2 sargs=$3 link=$1
	local vdev="domain=vrtest,link=$link,run_dir=$RUN_DIR"
	# shellcheck disable=SC2086
	start_pmd "${t}_s" 1 "$vdev,master=false" --forward-mode=rxonly $sargs
	wait_for "${t}_s" "testpmd> " 1 30 || return 1
	cmd "${t}_s" start
	# shellcheck disable=SC2086
	start_pmd "${t}_m" 0 "$vdev,master=true" --forward-mode=txonly $margs
	wait_for "${t}_m" "VECRING: eth_vecring0: link up" 1 30 || return 1
	wait_for "${t}_s" "VECRING: eth_vecring0: link up" 1 30 || return 1
	wait_for "${t}_m" "testpmd> " 1 30 || return 1
	cmd "${t}_m" start
	sleep 3
	cmd "${t}_m" stop
	wait_for "${t}_m" "^Done\.$" 1 20
	show_xstats "${t}_m"
	drain "${t}_s" "$(xstat "${t}_m" tx_good_packets)"
	cmd "${t}_s" stop
	wait_for "${t}_s" "^Done\.$" 1 20
	show_xstats "${t}_s"
	return 0
}

test_small_frames() {
	if ! traffic small "--txpkts=64" ""; then
		fail "small frames: link did not come up"
	fi
	local tx rx
	tx=$(xstat small_m tx_good_packets)
	rx=$(xstat small_s rx_good_packets)
	expect_gt "small: master sent" "$tx" 0
	expect_eq "small: slave received every frame sent" "$rx" "$tx"
	expect_eq "small: byte count" "$(xstat small_s rx_good_bytes)" "$((tx * 64))"
	expect_eq "small: master tx_errors" "$(xstat small_m tx_errors)" 0
	expect_eq "small: testpmd enabled fast free on the master's TX" "$(tx_fast_free small_m)" on
	expect_eq "small: every sent mbuf is back in the master's pool" "$(mbufs_in_use small_m)" 0
	grep -q "Port 0: link state change event" "$WORK/small_s.log" &&
		pass "small: slave got an LSC event" || fail "small: slave got no LSC event"
	expect_no_corruption small small_m small_s
	quit_pmd small_m
	quit_pmd small_s
}

# As test_small_frames, with fast free off (testpmd's default turns it on):
# the master frees sent mbufs through rte_pktmbuf_free_bulk.
test_small_frames_no_fast_free() {
	if ! traffic nofast "--txpkts=64 --tx-offloads=0x8000" ""; then
		fail "no fast free: link did not come up"
	fi
	local tx
	tx=$(xstat nofast_m tx_good_packets)
	expect_gt "no fast free: master sent" "$tx" 0
	expect_eq "no fast free: slave received every frame sent" "$(xstat nofast_s rx_good_packets)" "$tx"
	expect_eq "no fast free: testpmd left fast free off" "$(tx_fast_free nofast_m)" off
	expect_eq "no fast free: every sent mbuf is back in the master's pool" "$(mbufs_in_use nofast_m)" 0
	expect_no_corruption "no fast free" nofast_m nofast_s
	quit_pmd nofast_m
	quit_pmd nofast_s
}

# 7168-byte frames in 4 mbuf segments; the slave scatters them into 2 KiB mbufs.
test_jumbo_scatter() {
	if ! traffic jumbo "--txpkts=2048,2048,2048,1024 --max-pkt-len=9216" \
		"--enable-scatter --max-pkt-len=9216"; then
		fail "jumbo: link did not come up"
	fi
	local tx rx
	tx=$(xstat jumbo_m tx_good_packets)
	rx=$(xstat jumbo_s rx_good_packets)
	expect_gt "jumbo: master sent" "$tx" 0
	expect_eq "jumbo: slave received every frame sent" "$rx" "$tx"
	expect_eq "jumbo: byte count" "$(xstat jumbo_s rx_good_bytes)" "$((tx * 7168))"
	# Scatter allocation failures would count here.
	expect_eq "jumbo: slave rx_errors" "$(xstat jumbo_s rx_errors)" 0
	# Chains are freed segment by segment even with fast free on.
	expect_eq "jumbo: every sent chain is back in the master's pool" "$(mbufs_in_use jumbo_m)" 0
	expect_eq "jumbo: every received chain is back in the slave's pool" "$(mbufs_in_use jumbo_s)" 0
	expect_no_corruption jumbo jumbo_m jumbo_s
	quit_pmd jumbo_m
	quit_pmd jumbo_s
}

# Same frames, slave without scatter: every frame is dropped and counted.
test_jumbo_no_scatter() {
	if ! traffic noscat "--txpkts=2048,2048,2048,1024 --max-pkt-len=9216" \
		"--max-pkt-len=9216"; then
		fail "no-scatter: link did not come up"
	fi
	local tx
	tx=$(xstat noscat_m tx_good_packets)
	expect_gt "no-scatter: master sent" "$tx" 0
	expect_eq "no-scatter: slave delivered nothing" "$(xstat noscat_s rx_good_packets)" 0
	expect_eq "no-scatter: every frame counted as too large" \
		"$(xstat noscat_s rx_too_large_drops)" "$tx"
	expect_eq "no-scatter: counted in rx_errors" "$(xstat noscat_s rx_errors)" "$tx"
	expect_no_corruption no-scatter noscat_m noscat_s
	quit_pmd noscat_m
	quit_pmd noscat_s
}

# Promiscuous mode off on the slave: frames to its MAC pass, frames to
# another MAC are counted as filtered (this also checks that destination MACs
# cross the link intact).
test_mac_filter() {
	local vdev="domain=vrtest,link=filter,run_dir=$RUN_DIR"
	start_pmd filt_s 1 "$vdev,mac=02:00:00:00:00:aa" --forward-mode=rxonly
	wait_for filt_s "testpmd> " 1 30 || { fail "filter: slave did not start"; return; }
	cmd filt_s "set promisc 0 off"
	cmd filt_s start
	start_pmd filt_m 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64 \
		--eth-peer=0,02:00:00:00:00:aa
	wait_for filt_s "VECRING: eth_vecring0: link up" 1 30 || { fail "filter: no link"; return; }
	wait_for filt_m "testpmd> " 1 30 || { fail "filter: master did not start"; return; }
	cmd filt_m start
	sleep 2
	cmd filt_m stop
	wait_for filt_m "^Done\.$" 1 20
	local rx1 tx1
	show_xstats filt_m
	tx1=$(xstat filt_m tx_good_packets)
	drain filt_s "$tx1"
	rx1=$(xstat filt_s rx_good_packets)
	expect_gt "filter: frames to our MAC sent" "$tx1" 0
	expect_eq "filter: frames to our MAC delivered" "$rx1" "$tx1"
	expect_eq "filter: none filtered" "$(xstat filt_s rx_filtered_drops)" 0
	cmd filt_m "set eth-peer 0 02:00:00:00:00:bb"
	cmd filt_m start
	sleep 2
	cmd filt_m stop
	wait_for filt_m "^Done\.$" 2 20
	show_xstats filt_m
	drain filt_s "$(xstat filt_m tx_good_packets)"
	local tx2=$(($(xstat filt_m tx_good_packets) - tx1))
	expect_gt "filter: frames to another MAC sent" "$tx2" 0
	expect_eq "filter: frames to another MAC filtered" "$(xstat filt_s rx_filtered_drops)" "$tx2"
	expect_eq "filter: nothing more delivered" "$(xstat filt_s rx_good_packets)" "$rx1"
	expect_eq "filter: filtered frames are not errors" "$(xstat filt_s rx_errors)" 0
	expect_no_corruption filter filt_m filt_s
	quit_pmd filt_m
	quit_pmd filt_s
}

# 9000-byte frames in 5 mbuf segments; the slave scatters them into 1 KiB
# mbufs (9 segments each). (tests/dpdk_interop.rs checks their bytes.)
test_jumbo_9000() {
	if ! traffic j9000 "--txpkts=2048,2048,2048,2048,808 --max-pkt-len=9216" \
		"--enable-scatter --max-pkt-len=9216 --mbuf-size=1152"; then
		fail "jumbo 9000: link did not come up"
	fi
	local tx
	tx=$(xstat j9000_m tx_good_packets)
	expect_gt "jumbo 9000: master sent" "$tx" 0
	expect_eq "jumbo 9000: slave received every frame sent" "$(xstat j9000_s rx_good_packets)" "$tx"
	expect_eq "jumbo 9000: byte count" "$(xstat j9000_s rx_good_bytes)" "$((tx * 9000))"
	# rx_errors counts scatter allocation failures (and too-large drops).
	expect_eq "jumbo 9000: slave rx_errors" "$(xstat j9000_s rx_errors)" 0
	expect_eq "jumbo 9000: master tx_errors" "$(xstat j9000_m tx_errors)" 0
	expect_no_corruption "jumbo 9000" j9000_m j9000_s
	quit_pmd j9000_m
	quit_pmd j9000_s
}
