# shellcheck shell=bash
# Case "ovs", sourced by tests/containers/docker.sh: Docker -> Open vSwitch
# -> Docker. The private OVS of tests/ovs/lib.sh (its own database and
# ovs-vswitchd-dpdk in $OVS, stopped at the end) has a bridge with two
# eth_vecring ports, the masters of links ovs/c1 and ovs/c2 (owner= the
# containers' uid), and flows vr0 <-> vr1. Two Docker containers, confined
# as the other cases' (no capability, not root, no hugepages, no network),
# run testpmd as the slaves of c1 and c2, both receiving; each in turn
# sends for two seconds (`set fwd txonly`) while the other receives, and
# the counts agree exactly: what the sender sent is what OVS received on
# its port, what OVS sent on the other port (plus what it dropped there)
# is what it received, and what the receiver received is what OVS sent.

# ovs_one_way FROM FROM_PORT TO TO_PORT WHAT: session FROM sends through
# OVS to session TO (receiving).
ovs_one_way() {
	local from=$1 fport=$2 to=$3 tport=$4 what=$5
	local rx0 tx0 drop0 rxc0 txc0 sent rx tx drop rxc i
	rx0=$(port_stat "$fport" rx_packets)
	tx0=$(port_stat "$tport" tx_packets)
	drop0=$(port_stat "$tport" tx_dropped)
	show_xstats "$to"
	rxc0=$(xstat "$to" rx_good_packets)
	stop_fwd "$from"
	show_xstats "$from"
	txc0=$(xstat "$from" tx_good_packets)
	cmd "$from" "set fwd txonly"
	cmd "$from" start
	sleep 2
	stop_fwd "$from"
	show_xstats "$from"
	sent=$(($(xstat "$from" tx_good_packets) - txc0))
	for ((i = 0; i < 50; i++)); do
		rx=$(($(port_stat "$fport" rx_packets) - rx0))
		tx=$(($(port_stat "$tport" tx_packets) - tx0))
		drop=$(($(port_stat "$tport" tx_dropped) - ${drop0:-0}))
		show_xstats "$to"
		rxc=$(($(xstat "$to" rx_good_packets) - rxc0))
		[ "$rx" = "$sent" ] && [ "$((tx + drop))" = "$rx" ] && [ "$rxc" = "$tx" ] && break
		sleep 0.2
	done
	expect_gt "$what: the sending container sent" "$sent" 0
	expect_eq "$what: OVS received on $fport every frame the container sent" "$rx" "$sent"
	expect_eq "$what: OVS sent on $tport (or dropped there, $drop) every frame it received" "$((tx + drop))" "$rx"
	expect_eq "$what: the other container received every frame OVS sent on $tport" "$rxc" "$tx"
	expect_gt "$what: OVS sent on $tport" "$tx" 0
	cmd "$from" "set fwd rxonly"
	cmd "$from" start
}

test_ovs() {
	if [ ! -x "$VSWITCHD" ]; then
		fail "ovs: $VSWITCHD missing (run scripts/setup.sh)"
		return
	fi
	OVS_STARTED=1
	ovs_start || { fail "ovs: the private OVS did not start (see $OVS)"; return; }
	pass "ovs: a private OVS with DPDK is up"
	prepare_domain ovs
	local i devargs="domain=ovs,master=true,run_dir=$RUN_DIR,owner=$CTR_UID:$CTR_UID"
	vsctl add-br br0 -- set bridge br0 datapath_type=netdev &&
		vsctl add-port br0 vr0 -- set Interface vr0 type=dpdk \
			"options:dpdk-devargs=eth_vecring0,link=c1,$devargs" ofport_request=1 &&
		vsctl add-port br0 vr1 -- set Interface vr1 type=dpdk \
			"options:dpdk-devargs=eth_vecring1,link=c2,$devargs" ofport_request=2 &&
		ovs-ofctl add-flow br0 in_port=1,actions=output:2 &&
		ovs-ofctl add-flow br0 in_port=2,actions=output:1 ||
		{ fail "ovs: bridge br0 with two eth_vecring ports"; return; }
	for i in 1 2; do
		start_ctr_pmd "ovs$i" vecring-testpmd:import 0 "domain=ovs,link=c$i" "$(confined ovs)" \
			--forward-mode=rxonly
	done
	for i in 1 2; do
		wait_for "ovs$i" "testpmd> " 1 30 || { fail "ovs: container c$i's testpmd did not start"; return; }
		if wait_for "ovs$i" "VECRING: eth_vecring0: link up" 1 30; then
			pass "ovs: container c$i's link to OVS is up"
		else
			fail "ovs: container c$i's link to OVS did not come up"
			return
		fi
		cmd "ovs$i" start
	done
	ovs_one_way ovs1 vr0 ovs2 vr1 "ovs c1 -> c2"
	ovs_one_way ovs2 vr1 ovs1 vr0 "ovs c2 -> c1"
	expect_no_corruption "ovs" ovs1 ovs2
	quit_pmd ovs1
	quit_pmd ovs2
	ovs_stop
	OVS_STARTED=0
}
