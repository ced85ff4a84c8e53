# shellcheck shell=bash
# Group "queues", sourced by tests/dpdk/run.sh: ports with several queue
# pairs. The master's `queues=` sets the link's count and the port's
# max_rx/tx_queues (testpmd refuses more, on either role); the slave takes
# the master's count, or refuses a master with another count when its own
# `queues=` requires one. testpmd with --rxq=4 --txq=4 on both roles moves
# frames on every queue, queue N of the master arriving on queue N of the
# slave, with per-queue stats. A queue the peer's link does not have, or
# has no receiver on, drops what is sent on it and counts it
# (tx_qN_peer_queue_absent_drops), every mbuf back in its pool: nothing is
# lost silently.

group queues queues_limits queues_four queues_beyond_link queues_slave_requires queues_unconfigured

# short_pmd NAME VDEV_ARGS [testpmd args...]: a non-interactive testpmd
# (the driver's INFO lines on) that parses its arguments (rte_exit on a
# refused one), or else sets the port up, forwards, and quits at once
# (stdin is empty); prints its output.
short_pmd() {
	local name=$1 vdev=$2
	shift 2
	timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci --log-level=pmd.net.vecring:info \
		--file-prefix="vrtest_${name}_$$" --lcores="(0,1)@0" "${MEM_ARGS[@]}" \
		--vdev="eth_vecring0,$vdev,run_dir=$RUN_DIR" -- --total-num-mbufs=2048 "$@" \
		</dev/null 2>&1
}

# The port's queue limit is what the application may configure: testpmd
# checks --rxq/--txq against max_rx/tx_queues and names the limit.
test_queues_limits() {
	local rows=(
		# vdev args | testpmd args | text
		"master=1|--rxq=2|rxq 2 invalid - must be >= 0 && <= 1"
		"master=1,queues=2|--rxq=3|rxq 3 invalid - must be >= 0 && <= 2"
		"master=1,queues=2|--txq=3|txq 3 invalid - must be >= 0 && <= 2"
		"master=1,queues=16|--rxq=17|rxq 17 invalid - must be >= 0 && <= 16"
		"queues=3|--txq=4|txq 4 invalid - must be >= 0 && <= 3"
		"master=0|--rxq=17|rxq 17 invalid - must be >= 0 && <= 16"
	)
	local row vdev app want out i=0
	for row in "${rows[@]}"; do
		IFS='|' read -r vdev app want <<<"$row"
		i=$((i + 1))
		out=$(short_pmd "qlim$i" "domain=qlim,link=l$i,$vdev" "$app")
		if grep -qF "$want" <<<"$out"; then
			pass "queue limit: '$vdev' with $app refused ('$want')"
		else
			fail "queue limit: '$vdev' with $app: no line '$want'"
			grep -E "VECRING|invalid|Fail" <<<"$out" | sed 's/^/    /'
		fi
	done
	# A slave that does not know its master's count says so.
	out=$(short_pmd qlim_guess "domain=qlim,link=guess" --rxq=2 --txq=2)
	if grep -q "VECRING: eth_vecring0: link down; the master decides the queue count: up to 16 queues" <<<"$out"; then
		pass "queue limit: a slave before its master offers 16 queues and says why"
	else
		fail "queue limit: no INFO line on the slave's guessed queue limit"
		grep -E "VECRING" <<<"$out" | sed 's/^/    /'
	fi
	# Within the limit, the port is set up and started.
	out=$(short_pmd qlim_ok "domain=qlim,link=ok,master=1,queues=16" --rxq=16 --txq=16)
	if grep -q "Press enter to exit" <<<"$out" && ! grep -q "invalid" <<<"$out"; then
		pass "queue limit: a master with queues=16 accepts --rxq=16 --txq=16"
	else
		fail "queue limit: --rxq=16 --txq=16 on queues=16 refused"
		grep -E "VECRING|invalid|Fail" <<<"$out" | sed 's/^/    /'
	fi
}

# qtraffic NAME MASTER_VDEV MASTER_ARGS SLAVE_VDEV SLAVE_ARGS TX_ROLE:
# the slave starts first, then the master; the TX_ROLE side (m or s) runs
# txonly and the other rxonly. After a few seconds the sender stops, the
# receiver drains, both print their xstats. Returns 1 if the link did not
# come up or the receiver did not start forwarding.
qtraffic() {
	local t=$1 mvdev=$2 margs=$3 svdev=$4 sargs=$5 txr=$6
	local vdev="domain=vrtest,link=$t,run_dir=$RUN_DIR" rxr mmode smode before
	if [ "$txr" = m ]; then
		rxr=s mmode=txonly smode=rxonly
	else
		rxr=m mmode=rxonly smode=txonly
	fi
	# shellcheck disable=SC2086
	start_pmd "${t}_s" 1 "$vdev,master=false$svdev" --forward-mode=$smode $sargs
	wait_for "${t}_s" "testpmd> " 1 30 || return 1
	# shellcheck disable=SC2086
	start_pmd "${t}_m" 0 "$vdev,master=true$mvdev" --forward-mode=$mmode $margs
	wait_for "${t}_m" "VECRING: eth_vecring0: link up" 1 30 || return 1
	wait_for "${t}_s" "VECRING: eth_vecring0: link up" 1 30 || return 1
	wait_for "${t}_m" "testpmd> " 1 30 || return 1
	# A receiver attaches to its queue's ring at the queue's first poll;
	# until then the sender, once the ring is full, drops what it sends
	# there as sent to an absent queue. testpmd's `start` polls every RX
	# queue (it flushes them; these sessions do not pass --no-flush-rx)
	# before it prints the forwarding parameters ("... packets/burst=N"):
	# frames come once that line is out.
	before=$(grep -c "packets/burst=" "$WORK/${t}_$rxr.log")
	cmd "${t}_$rxr" start
	wait_for "${t}_$rxr" "packets/burst=" "$((before + 1))" 30 || return 1
	cmd "${t}_$txr" start
	sleep 3
	stop_fwd "${t}_$txr"
	show_xstats "${t}_$txr"
	drain "${t}_$rxr" "$(xstat "${t}_$txr" tx_good_packets)"
	stop_fwd "${t}_$rxr"
	show_xstats "${t}_$rxr"
	return 0
}

# port_info NAME KEY: the value of "KEY: N" from a fresh `show port info 0`.
port_info() {
	local before
	before=$(grep -c "^$2: " "$WORK/$1.log")
	cmd "$1" "show port info 0"
	wait_for "$1" "^$2: " "$((before + 1))" 10 || return
	grep "^$2: " "$WORK/$1.log" | tail -n1 | awk -F': ' '{print $2}'
}

# Master queues=4, slave without queues=: both run testpmd with 4 queues
# each way; the slave's limit becomes the master's 4 once the link is up.
# Every queue carries frames, queue N of the master lands on queue N of the
# slave, and the port totals are the sums.
test_queues_four() {
	if ! qtraffic q4 ",queues=4" "--rxq=4 --txq=4 --txpkts=64" "" "--rxq=4 --txq=4" m; then
		fail "four queues: no link, or the receiver did not start"
	fi
	expect_eq "four queues: master offers 4 rx queues" "$(port_info q4_m "Max possible RX queues")" 4
	expect_eq "four queues: master offers 4 tx queues" "$(port_info q4_m "Max possible TX queues")" 4
	expect_eq "four queues: slave learns 4 rx queues" "$(port_info q4_s "Max possible RX queues")" 4
	expect_eq "four queues: slave learns 4 tx queues" "$(port_info q4_s "Max possible TX queues")" 4
	local q tx rx total=0
	for q in 0 1 2 3; do
		tx=$(xstat q4_m "tx_q${q}_packets")
		rx=$(xstat q4_s "rx_q${q}_packets")
		expect_gt "four queues: master sent on queue $q" "$tx" 0
		expect_eq "four queues: slave's queue $q received master's queue $q" "$rx" "$tx"
		expect_eq "four queues: slave's queue $q bytes" "$(xstat q4_s "rx_q${q}_bytes")" "$((tx * 64))"
		expect_eq "four queues: no absent-queue drops on queue $q" \
			"$(xstat q4_m "tx_q${q}_peer_queue_absent_drops")" 0
		is_num "$rx" && total=$((total + rx))
	done
	expect_eq "four queues: slave's total is the queues' sum" "$(xstat q4_s rx_good_packets)" "$total"
	expect_eq "four queues: master's total is the queues' sum" "$(xstat q4_m tx_good_packets)" "$total"
	expect_eq "four queues: every sent mbuf is back in the master's pool" "$(mbufs_in_use q4_m)" 0
	expect_no_corruption "four queues" q4_m q4_s
	quit_pmd q4_m
	quit_pmd q4_s
}

# The slave's application configures 4 queues before it meets its master,
# which has 2: the slave's queues 2 and 3 carry nothing. What it sends on
# them is dropped and counted per queue, every mbuf back in its pool, and
# the master receives everything sent on queues 0 and 1.
test_queues_beyond_link() {
	if ! qtraffic qb ",queues=2" "--rxq=2 --txq=2" "" "--rxq=4 --txq=4 --txpkts=64" s; then
		fail "beyond the link: no link, or the receiver did not start"
	fi
	expect_eq "beyond the link: slave learns 2 queues" "$(port_info qb_s "Max possible TX queues")" 2
	local q v absent=0
	for q in 2 3; do
		v=$(xstat qb_s "tx_q${q}_peer_queue_absent_drops")
		expect_gt "beyond the link: slave's queue $q drops counted" "$v" 0
		expect_eq "beyond the link: nothing sent on slave's queue $q" "$(xstat qb_s "tx_q${q}_packets")" 0
		is_num "$v" && absent=$((absent + v))
	done
	for q in 0 1; do
		expect_gt "beyond the link: slave sent on queue $q" "$(xstat qb_s "tx_q${q}_packets")" 0
		expect_eq "beyond the link: no drops on slave's queue $q" \
			"$(xstat qb_s "tx_q${q}_peer_queue_absent_drops")" 0
		expect_eq "beyond the link: master's queue $q received slave's queue $q" \
			"$(xstat qb_m "rx_q${q}_packets")" "$(xstat qb_s "tx_q${q}_packets")"
	done
	expect_eq "beyond the link: port total of the drops" "$(xstat qb_s tx_peer_queue_absent_drops)" "$absent"
	expect_eq "beyond the link: the peer's absence is no tx error of this side" "$(xstat qb_s tx_errors)" 0
	expect_eq "beyond the link: master received all the slave sent" \
		"$(xstat qb_m rx_good_packets)" "$(xstat qb_s tx_good_packets)"
	expect_eq "beyond the link: every mbuf is back in the slave's pool" "$(mbufs_in_use qb_s)" 0
	expect_no_corruption "beyond the link" qb_m qb_s
	quit_pmd qb_m
	quit_pmd qb_s
}

# A slave whose queues= differs from the master's refuses it, naming both
# counts; the link stays down on both sides.
test_queues_slave_requires() {
	local vdev="domain=vrtest,link=qreq,run_dir=$RUN_DIR"
	start_pmd qreq_m 0 "$vdev,master=true,queues=2" --rxq=2 --txq=2
	wait_for qreq_m "testpmd> " 1 30 || { fail "slave requires: master did not start"; return; }
	start_pmd qreq_s 1 "$vdev,queues=4" --rxq=4 --txq=4
	if wait_for qreq_s "queue count mismatch: ours 4, theirs 2" 1 30; then
		pass "slave requires: a master with another queue count refused, naming both"
	else
		fail "slave requires: no 'queue count mismatch: ours 4, theirs 2' in the slave's log"
	fi
	if grep -q "VECRING: eth_vecring0: link up" "$WORK/qreq_s.log" "$WORK/qreq_m.log"; then
		fail "slave requires: the link came up"
	else
		pass "slave requires: the link stays down"
	fi
	quit_pmd qreq_s
	quit_pmd qreq_m
}

# Master queues=4 and 4 queues each way; the slave's application configures
# only 2. The master's queues 2 and 3 have no receiver on the slave: the
# master fills their rings once (the frames wait there, as for a receiver
# that has not polled yet: 32768 one-slot frames), then drops what it sends
# there and counts it in its xstats (tx_qN_peer_queue_absent_drops) rather
# than leaving it to the application, which would retry it forever.
test_queues_unconfigured() {
	if ! qtraffic qu ",queues=4" "--rxq=4 --txq=4 --txpkts=64" "" "--rxq=2 --txq=2" m; then
		fail "unconfigured: no link, or the receiver did not start"
	fi
	local q
	for q in 2 3; do
		expect_gt "unconfigured: master's queue $q drops counted" \
			"$(xstat qu_m "tx_q${q}_peer_queue_absent_drops")" 0
		expect_eq "unconfigured: master's queue $q filled its ring once" "$(xstat qu_m "tx_q${q}_packets")" 32768
		expect_eq "unconfigured: master's queue $q never found its ring full" "$(xstat qu_m "tx_q${q}_ring_full")" 0
	done
	for q in 0 1; do
		expect_eq "unconfigured: slave's queue $q received master's queue $q" \
			"$(xstat qu_s "rx_q${q}_packets")" "$(xstat qu_m "tx_q${q}_packets")"
	done
	expect_eq "unconfigured: every mbuf is back in the master's pool" "$(mbufs_in_use qu_m)" 0
	expect_no_corruption unconfigured qu_m qu_s
	quit_pmd qu_m
	quit_pmd qu_s
}
