#!/usr/bin/env bash
# Open vSwitch with DPDK carrying two LXC containers over eth_vecring ports.
#
# A private OVS (Debian's openvswitch-switch-dpdk: its own database,
# ovsdb-server and ovs-vswitchd-dpdk in this run's directory, stopped at the
# end) has a bridge `datapath_type=netdev` with two eth_vecring ports, the
# masters of links ovs/c1 and ovs/c2. Two real containers (lxc-execute,
# each reaching its link only through its bind-mounted domain directory)
# run the `vecring` tool as the slaves. Flows forward vr0 <-> vr1. Checked:
#   traffic      c1 -> OVS -> c2 and back, counts exact: what a container
#                sent is what OVS received on its port, what OVS sent on the
#                other port (plus what it dropped there) is what it
#                received, and what the other container received is what
#                OVS sent
#   peer_kill    the container's peer killed with kill -9 and restarted:
#                OVS logs the link down and up, traffic resumes, nothing on
#                the host restarts
#   ovs_restart  ovs-vswitchd restarted while the containers stay up: the
#                links come back by themselves and carry traffic
#   jumbo        mtu_request=9000 on both ports (OVS sets it through the
#                driver), 9000-byte frames through OVS
#   queues       del-port, then add-port again with two queues
#                (queues=2, options:n_rxq=2): per-queue statistics
#                (rx_q0_packets, rx_q1_packets) sum to the port's total
#   tap          two network namespaces, each with `vecring tap` as the
#                slave of a link whose master is an OVS port (vt0, vt1):
#                carriers on with the ports, ping (8972-byte with -M do:
#                ports at mtu_request=9000, taps at --mtu 9000), a bounded
#                iperf3 TCP and UDP run, 16 MiB over TCP arriving whole
#                (SHA-256 at both ends), and each
#                interface's counters equal OVS's on its port, both ways
#   cni_*        the CNI plugin on a bridge of its own (tests/ovs/cni.sh)
#
# Usage: tests/ovs/run.sh [CASE...]     (as root, after scripts/test.sh's
#        build: the vecring tool, the driver in DPDK's driver directory)
# Env:   VECRING_TEST_KEEP=1   keep the work directory (logs)
# Every process runs under a watchdog; the machine is left as it was (no
# OVS process, bridge, hugepage or EAL directory of this run remains). The
# last line is "N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VECRING=$ROOT/target/release/vecring
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vecring-ovs.XXXXXX")
OVS=$WORK/ovs                 # database, sockets, logs, pid files
RUN_DIR=$WORK/run             # vecring rendezvous of OVS's ports
CTR_RUN=$WORK/ctr-run         # the same, as the containers see it
PREFIX=vrovs_$$               # OVS's EAL file prefix
WATCHDOG=120
PASSED=0
FAILED=0
PIDS=()

log() { echo "ovs-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }

# shellcheck source=tests/ovs/lib.sh
. "$ROOT/tests/ovs/lib.sh"
# shellcheck source=tests/ovs/cni.sh
. "$ROOT/tests/ovs/cni.sh"

# ovs_log_count TEXT: lines of ovs-vswitchd's log that contain TEXT.
ovs_log_count() { grep -cF -- "$1" "$OVS/ovs-vswitchd.log" 2>/dev/null; }

# wait_log TEXT COUNT [SECONDS]: until ovs-vswitchd's log has COUNT such lines.
wait_log() {
	local i
	for ((i = 0; i < ${3:-30} * 10; i++)); do
		[ "$(ovs_log_count "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# add_port NAME INDEX LINK [DEVARGS...] [-- OVS settings]: an eth_vecring
# master of ovs/LINK as bridge port NAME (ofport INDEX+1).
add_port() {
	local name=$1 idx=$2 link=$3 extra=${4:-}
	shift 4 2>/dev/null || shift $#
	vsctl add-port br0 "$name" -- set Interface "$name" type=dpdk \
		"options:dpdk-devargs=eth_vecring$idx,domain=ovs,link=$link,master=true,run_dir=$RUN_DIR$extra" \
		"ofport_request=$((idx + 1))" "$@"
}

# db_stat PORT KEY: a counter of OVS's port as its database has it (where
# OVS puts the driver's extended statistics, such as rx_q0_packets).
db_stat() {
	ovs-vsctl --timeout=30 get Interface "$1" "statistics:$2" 2>/dev/null | tr -d '"'
}

# db_caught_up PORT: until the database's rx_packets of PORT is the
# datapath's (OVS writes statistics every 5 s).
db_caught_up() {
	local i want
	want=$(port_stat "$1" rx_packets)
	for ((i = 0; i < 120; i++)); do
		[ "$(db_stat "$1" rx_packets)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# --- containers --------------------------------------------------------------

# ctr_conf NAME: an LXC config sharing the host's root file system that
# bind-mounts the host's $RUN_DIR/ovs at $CTR_RUN/ovs, an empty directory on
# the host: the only way the container reaches its link.
ctr_conf() {
	local conf=$WORK/lxc-$1.conf
	mkdir -p "$RUN_DIR/ovs" "$CTR_RUN"
	cat >"$conf" <<-EOF
		lxc.uts.name = vrovs-$1
		lxc.rootfs.path =
		lxc.net.0.type = empty
		lxc.console.path = none
		lxc.mount.auto = proc:rw sys:rw
		lxc.mount.entry = $RUN_DIR/ovs ${CTR_RUN#/}/ovs none bind,create=dir 0 0
	EOF
	echo "$conf"
}

# ctr NAME CPU LOG COMMAND...: `vecring COMMAND` as the slave of ovs/<link>
# inside container NAME, in the background, output in $WORK/LOG.log; its
# `timeout` watchdog's PID in CTR_PID.
ctr() {
	local name=$1 cpu=$2 out=$3
	shift 3
	timeout --kill-after=5 "$WATCHDOG" lxc-execute -n "vrovs-$name-$$" -f "$(ctr_conf "$name")" -- \
		"$VECRING" "$@" --role slave --domain ovs --run-dir "$CTR_RUN" --cpu "$cpu" \
		>"$WORK/$out.log" 2>&1 &
	CTR_PID=$!
	PIDS+=("$CTR_PID")
}

# rx_start NAME LINK [ARGS...]: a receiving container (`vecring rxonly`)
# answering "rx <frames> <bytes>" for each line written to its FIFO.
rx_start() {
	local name=$1 link=$2 fd
	shift 2
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	timeout --kill-after=5 "$WATCHDOG" lxc-execute -n "vrovs-$name-$$" -f "$(ctr_conf "$name")" -- \
		"$VECRING" rxonly --role slave --domain ovs --link "$link" --run-dir "$CTR_RUN" --cpu 0 "$@" \
		<"$WORK/$name.in" >"$WORK/$name.log" 2>"$WORK/$name.err" &
	PIDS+=($!)
	printf -v "RXPID_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "RXFD_$name" '%s' "$fd"
}

# rx_count NAME: the frames the receiving container counted so far.
rx_count() {
	local fdvar=RXFD_$1 before i
	before=$(grep -c '^rx ' "$WORK/$1.log")
	echo >&"${!fdvar}"
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '^rx ' "$WORK/$1.log")" -gt "$before" ] && break
		sleep 0.1
	done
	grep '^rx ' "$WORK/$1.log" | tail -n1 | cut -d' ' -f2
}

# rx_stop NAME: closes the receiving container's input; it exits.
rx_stop() {
	local fdvar=RXFD_$1 pidvar=RXPID_$1
	eval "exec ${!fdvar}>&-"
	wait "${!pidvar}" 2>/dev/null
}

# tx NAME LINK SECONDS SIZE [ARGS...]: a sending container (`vecring txonly`)
# for SECONDS; prints the frames the peer (OVS) took.
tx() {
	local name=$1 link=$2 secs=$3 size=$4
	shift 4
	ctr "$name" 1 "$name" txonly --link "$link" --seconds "$secs" --size "$size" "$@"
	wait "$CTR_PID"
	sed -n 's/^txonly: sent .* taken by the peer \([0-9]*\);.*/\1/p' "$WORK/$name.log"
}

# --- cases -------------------------------------------------------------------

# expect_eq WHAT GOT WANT
expect_eq() {
	if [ -n "$2" ] && [ "$2" = "$3" ]; then
		pass "$1: $2"
	else
		fail "$1: got '$2', want '$3'"
	fi
}

# one_way FROM_NAME FROM_LINK FROM_PORT TO_NAME TO_LINK TO_PORT SIZE WHAT:
# FROM sends for 2 s through OVS to TO (already receiving); the counts of
# both containers and of OVS's two ports agree exactly (frames still on
# their way are waited for, up to 10 s).
one_way() {
	local fname=$1 flink=$2 fport=$3 tname=$4 tport=$6 size=$7 what=$8
	local rx0 tx0 drop0 rxc0 taken rxc rx tx drop i
	rx0=$(port_stat "$fport" rx_packets)
	tx0=$(port_stat "$tport" tx_packets)
	drop0=$(port_stat "$tport" tx_dropped)
	rxc0=$(rx_count "$tname")
	taken=$(tx "$fname" "$flink" 2 "$size")
	if ! [ "${taken:-0}" -gt 0 ] 2>/dev/null; then
		fail "$what: the sending container sent nothing"
		sed 's/^/    /' "$WORK/$fname.log" | tail -n 5
		return 1
	fi
	for ((i = 0; i < 50; i++)); do
		rx=$(($(port_stat "$fport" rx_packets) - rx0))
		tx=$(($(port_stat "$tport" tx_packets) - tx0))
		drop=$(($(port_stat "$tport" tx_dropped) - ${drop0:-0}))
		rxc=$(($(rx_count "$tname") - rxc0))
		[ "$rx" = "$taken" ] && [ "$((tx + drop))" = "$rx" ] && [ "$rxc" = "$tx" ] && break
		sleep 0.2
	done
	expect_eq "$what: OVS received on $fport every frame the container sent" "$rx" "$taken"
	expect_eq "$what: OVS sent on $tport (or dropped there, $drop) every frame it received" "$((tx + drop))" "$rx"
	expect_eq "$what: the other container received every frame OVS sent on $tport" "$rxc" "$tx"
	[ "$tx" -gt 0 ] || fail "$what: OVS sent nothing on $tport"
}

setup_bridge() {
	vsctl add-br br0 -- set bridge br0 datapath_type=netdev || return 1
	add_port vr0 0 c1 || return 1
	add_port vr1 1 c2 || return 1
	add_flows
}

# add_flows: vr0 <-> vr1, and the tap case's vt0 <-> vt1 (OpenFlow tables
# live in ovs-vswitchd, not in its database: a restarted ovs-vswitchd
# needs them again, as a controller would give them).
add_flows() {
	ovs-ofctl del-flows br0 &&
		ovs-ofctl add-flow br0 in_port=1,actions=output:2 &&
		ovs-ofctl add-flow br0 in_port=2,actions=output:1 &&
		ovs-ofctl add-flow br0 in_port=3,actions=output:4 &&
		ovs-ofctl add-flow br0 in_port=4,actions=output:3
}

# A link has one slave, so a container either sends or receives at a
# time: c1 and c2 take turns.

test_traffic() {
	rx_start c2 c2
	wait_log "eth_vecring1: link up" 1 &&
		pass "traffic: c2's link up (OVS logs the driver's link up)" ||
		{ fail "traffic: c2's link did not come up"; return; }
	one_way c1tx c1 vr0 c2 c2 vr1 64 "traffic c1 -> c2, 64 B"
	rx_stop c2
	rx_start c1 c1
	one_way c2tx c2 vr1 c1 c1 vr0 1514 "traffic c2 -> c1, 1514 B"
	# c1 stays, receiving, for the next cases.
}

test_peer_kill() {
	local downs ups
	downs=$(ovs_log_count "eth_vecring0: link down")
	ups=$(ovs_log_count "eth_vecring0: link up")
	# The container's vecring itself (its command line starts with the
	# tool's path), not the watchdog or lxc-execute above it, whose
	# command lines hold the same words: killing the watchdog would leave
	# the container running, and its name taken for the restart.
	local peer
	peer=$(pgrep -f "^$VECRING rxonly --role slave --domain ovs --link c1 " | head -n1)
	if [ -n "$peer" ] && kill -9 "$peer"; then
		pass "peer_kill: kill -9 of the container's peer (host pid $peer)"
	else
		fail "peer_kill: no peer process of c1 to kill"
	fi
	rx_stop c1
	wait_log "eth_vecring0: link down" "$((downs + 1))" &&
		pass "peer_kill: OVS logged eth_vecring0's link down after kill -9 of the container's peer" ||
		fail "peer_kill: no link down in OVS's log"
	rx_start c1 c1
	wait_log "eth_vecring0: link up" "$((ups + 1))" &&
		pass "peer_kill: OVS logged the link up again when the peer came back" ||
		{ fail "peer_kill: no link up after the restart"; return; }
	one_way c2tx c2 vr1 c1 c1 vr0 64 "peer_kill: traffic after the restart"
}

test_ovs_restart() {
	local pid0 ups
	pid0=$(cat "$OVS/ovs-vswitchd.pid")
	ups=$(ovs_log_count "eth_vecring0: link up")
	ovs_stop_vswitchd
	sleep 1
	if kill -0 "$RXPID_c1" 2>/dev/null; then
		pass "ovs_restart: the container's peer stays up while ovs-vswitchd is away"
	else
		fail "ovs_restart: the container's peer exited when ovs-vswitchd went away"
		tail -n 3 "$WORK/c1.err" | sed 's/^/    /'
		# The cases after this one need the switch.
		ovs_start && add_flows
		return
	fi
	ovs_start || { fail "ovs_restart: ovs-vswitchd did not start again"; return; }
	[ "$(cat "$OVS/ovs-vswitchd.pid")" != "$pid0" ] && pass "ovs_restart: a new ovs-vswitchd, the ports from its database"
	wait_log "eth_vecring0: link up" "$((ups + 1))" &&
		pass "ovs_restart: the container's link came back by itself" ||
		{ fail "ovs_restart: the link did not come back"; return; }
	add_flows
	one_way c2tx c2 vr1 c1 c1 vr0 64 "ovs_restart: traffic after the restart"
}

test_jumbo() {
	vsctl set Interface vr0 mtu_request=9000 -- set Interface vr1 mtu_request=9000
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(vsctl get Interface vr0 mtu)" = 9000 ] && [ "$(vsctl get Interface vr1 mtu)" = 9000 ] && break
		sleep 0.2
	done
	expect_eq "jumbo: OVS set vr0's MTU through the driver" "$(vsctl get Interface vr0 mtu)" 9000
	expect_eq "jumbo: OVS set vr1's MTU through the driver" "$(vsctl get Interface vr1 mtu)" 9000
	one_way c2tx c2 vr1 c1 c1 vr0 9000 "jumbo: 9000-byte frames c2 -> c1"
	rx_stop c1
	rx_start c2 c2
	one_way c1tx c1 vr0 c2 c2 vr1 9000 "jumbo: 9000-byte frames c1 -> c2"
	# c2 stays, receiving.
}

test_queues() {
	vsctl del-port br0 vr0 && pass "queues: del-port vr0" || fail "queues: del-port vr0"
	add_port vr0 0 c1q ",queues=2" options:n_rxq=2 ||
		{ fail "queues: add-port vr0 with two queues"; return; }
	add_flows
	local i rxq=
	for ((i = 0; i < 50; i++)); do
		rxq=$(appctl dpctl/show | sed -n 's/.* vr0 (dpdk: .*configured_rx_queues=\([0-9]*\).*/\1/p')
		[ "$rxq" = 2 ] && break
		sleep 0.2
	done
	expect_eq "queues: OVS configured two receive queues on the re-added vr0" "$rxq" 2
	local rx0 taken
	rx0=$(port_stat vr0 rx_packets)
	taken=$(tx c1tx c1q 2 64 --queues 2)
	local rx q0 q1 i
	for ((i = 0; i < 50; i++)); do
		rx=$(($(port_stat vr0 rx_packets) - ${rx0:-0}))
		[ "$rx" = "$taken" ] && break
		sleep 0.2
	done
	db_caught_up vr0 || fail "queues: OVS's database did not catch up with vr0's counters"
	q0=$(db_stat vr0 rx_q0_packets)
	q1=$(db_stat vr0 rx_q1_packets)
	expect_eq "queues: OVS received every frame the two-queue container sent" "$rx" "$taken"
	[ "${q0:-0}" -gt 0 ] && [ "${q1:-0}" -gt 0 ] &&
		pass "queues: both receive queues carried frames ($q0, $q1)" ||
		fail "queues: rx_q0_packets '$q0', rx_q1_packets '$q1'"
	expect_eq "queues: rx_q0_packets + rx_q1_packets is the port's rx_packets" "$((q0 + q1))" "$(db_stat vr0 rx_packets)"
	rx_stop c2
}

# --- the tap case ------------------------------------------------------------

# A network namespace of this run per tap (`ip netns`: the container's
# network, which is what `vecring tap` serves), IPv6 off so that only the
# case's own traffic crosses (no router solicitations racing the counts).
TAP_NS=()
ns_name() { echo "vrovs-$1-$$"; }
ns() { local n; n=$(ns_name "$1"); shift; ip netns exec "$n" "$@"; }

# tap_start NAME LINK ADDR: namespace NAME with `vecring tap` as the slave
# of ovs/LINK, interface vr0 with address ADDR/24 once its carrier is on;
# its MTU is the ports' (set to 9000 first: OVS drops what exceeds a
# port's MTU, and the link's frames would allow 9202).
tap_start() {
	local name=$1 link=$2 addr=$3 n i
	n=$(ns_name "$name")
	ip netns add "$n" || return 1
	TAP_NS+=("$n")
	ns "$name" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ns "$name" ip link set lo up
	timeout --kill-after=5 "$WATCHDOG" ip netns exec "$n" "$VECRING" tap --role slave --domain ovs \
		--link "$link" --run-dir "$RUN_DIR" --ifname vr0 --hugepages never --mtu 9000 \
		>"$WORK/tap-$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "TAPPID_$name" '%s' "$!"
	for ((i = 0; i < 100; i++)); do
		[ "$(ns "$name" cat /sys/class/net/vr0/carrier 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	[ "$(ns "$name" cat /sys/class/net/vr0/carrier 2>/dev/null)" = 1 ] || return 1
	ns "$name" ip addr add "$addr/24" dev vr0
}

# if_stat NAME KEY: a counter of namespace NAME's vr0 (rx_packets, ...).
if_stat() { ns "$1" cat "/sys/class/net/vr0/statistics/$2"; }

# counts_agree WHAT: once nothing moves, vt0's and vt1's counters in OVS
# equal the interfaces' at the other end of each link, both ways.
counts_agree() {
	local what=$1 i a_tx a_rx b_tx b_rx o0_rx o0_tx o1_rx o1_tx
	for ((i = 0; i < 50; i++)); do
		a_tx=$(if_stat a tx_packets) a_rx=$(if_stat a rx_packets)
		b_tx=$(if_stat b tx_packets) b_rx=$(if_stat b rx_packets)
		o0_rx=$(port_stat vt0 rx_packets) o0_tx=$(port_stat vt0 tx_packets)
		o1_rx=$(port_stat vt1 rx_packets) o1_tx=$(port_stat vt1 tx_packets)
		[ "$a_tx" = "$o0_rx" ] && [ "$b_rx" = "$o1_tx" ] && [ "$b_tx" = "$o1_rx" ] && [ "$a_rx" = "$o0_tx" ] && break
		sleep 0.2
	done
	expect_eq "$what: OVS received on vt0 every frame namespace a's vr0 sent" "$o0_rx" "$a_tx"
	expect_eq "$what: namespace b's vr0 received every frame OVS sent on vt1" "$b_rx" "$o1_tx"
	expect_eq "$what: OVS received on vt1 every frame namespace b's vr0 sent" "$o1_rx" "$b_tx"
	expect_eq "$what: namespace a's vr0 received every frame OVS sent on vt0" "$a_rx" "$o0_tx"
}

test_tap() {
	command -v iperf3 >/dev/null && command -v ping >/dev/null ||
		{ fail "tap: iperf3 or ping missing (scripts/setup.sh)"; return; }
	add_port vt0 2 t1 "" mtu_request=9000 && add_port vt1 3 t2 "" mtu_request=9000 ||
		{ fail "tap: add-port vt0, vt1"; return; }
	add_flows
	tap_start a t1 10.78.0.1 && tap_start b t2 10.78.0.2 &&
		pass "tap: both interfaces' carriers on once OVS's ports are their masters" ||
		{ fail "tap: a tap's carrier did not come on"; tail -n 5 "$WORK"/tap-*.log | sed 's/^/    /'; return; }
	expect_eq "tap: OVS's vt0 at the tap's MTU" "$(vsctl get Interface vt0 mtu)" 9000
	local out
	out=$(ns a ping -c 5 -i 0.2 -W 2 10.78.0.2 2>&1)
	[[ "$out" == *" 5 received"* ]] &&
		pass "tap: ping through OVS, 5 of 5 answered" ||
		fail "tap: ping through OVS: $(tail -n 2 <<<"$out")"
	out=$(ns a ping -c 3 -i 0.2 -W 2 -M do -s 8972 10.78.0.2 2>&1)
	[[ "$out" == *" 3 received"* ]] &&
		pass "tap: 9000-byte IP packets with -M do through OVS" ||
		fail "tap: ping -M do -s 8972: $(tail -n 2 <<<"$out")"
	out=$(ns a ping -c 1 -W 1 -M do -s 8973 10.78.0.2 2>&1)
	[[ "$out" == *"message too long"* ]] &&
		pass "tap: one byte more is refused at the sender (MTU 9000)" ||
		fail "tap: ping -M do -s 8973: $(tail -n 2 <<<"$out")"
	# 16 MiB over TCP from a to b (Python at both ends): the digest at b
	# is the digest of what a sent.
	ns b timeout 60 python3 -c '
import hashlib, socket
s = socket.create_server(("10.78.0.2", 5201))
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest())' >"$WORK/tcp-recv.out" 2>&1 &
	local server=$!
	for ((i = 0; i < 50; i++)); do
		ns b ss -ltn 2>/dev/null | grep -q ':5201 ' && break
		sleep 0.1
	done
	local sent
	sent=$(ns a timeout 60 python3 -c '
import hashlib, os, socket
data = os.urandom(16 << 20)
c = socket.create_connection(("10.78.0.2", 5201))
c.sendall(data)
c.close()
print(len(data), hashlib.sha256(data).hexdigest())' 2>&1)
	wait "$server"
	expect_eq "tap: 16 MiB over TCP through OVS arrive whole (length, SHA-256)" "$(cat "$WORK/tcp-recv.out")" "$sent"
	# A bounded iperf3 run, TCP then UDP.
	ns b timeout 60 iperf3 -s -B 10.78.0.2 >"$WORK/iperf3-server.log" 2>&1 &
	server=$!
	local out tcp udp
	# The server listening first (it may start slowly next to OVS's busy
	# threads), then a few tries.
	for ((i = 0; i < 100; i++)); do
		ns b ss -ltn 2>/dev/null | grep -q '10.78.0.2:5201 ' && break
		sleep 0.1
	done
	for ((i = 0; i < 10; i++)); do
		ns a timeout 30 iperf3 -c 10.78.0.2 -t 2 -J >"$WORK/iperf3-tcp.json" 2>&1 && break
		sleep 0.5
	done
	tcp=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["end"]; print(int(d["sum_sent"]["bytes"] > 0 and d["sum_received"]["bytes"] > 0))' "$WORK/iperf3-tcp.json" 2>/dev/null)
	expect_eq "tap: iperf3 TCP through OVS for 2 s, bytes sent and received" "$tcp" 1
	[ "$tcp" = 1 ] || sed -n 's/.*"error":/    iperf3:/p' "$WORK/iperf3-tcp.json"
	log "tap: iperf3 TCP through OVS: $(python3 -c 'import json,sys; print("%.2f Gbit/s" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e9))' "$WORK/iperf3-tcp.json" 2>/dev/null)"
	ns a timeout 30 iperf3 -c 10.78.0.2 -u -b 100M -l 1400 -t 1 -J >"$WORK/iperf3-udp.json" 2>&1
	udp=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["end"]["sum"]; print(int(d["packets"] > 0 and d["lost_packets"] < d["packets"]))' "$WORK/iperf3-udp.json" 2>/dev/null)
	expect_eq "tap: iperf3 UDP through OVS for 1 s, datagrams arrive" "$udp" 1
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	counts_agree "tap"
	local p
	for p in a b; do
		local pidvar=TAPPID_$p
		kill -TERM "${!pidvar}" 2>/dev/null
		wait "${!pidvar}"
		expect_eq "tap: namespace $p's tap ends on SIGTERM with status 0" "$?" 0
	done
	for p in "${TAP_NS[@]}"; do ip netns del "$p"; done
	TAP_NS=()
}

# --- run ---------------------------------------------------------------------

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	pkill -9 -f "vecring .* --domain ovs --run-dir $CTR_RUN" 2>/dev/null
	cni_cleanup
	for p in "${TAP_NS[@]}"; do
		ip netns pids "$p" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$p" 2>/dev/null
	done
	ovs_stop
	wait 2>/dev/null
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

ALL=(traffic peer_kill ovs_restart jumbo queues tap cni_dpdk cni_tap cni_errors cni_restart cni_ctr)
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=("${ALL[@]}")
for t in "${TESTS[@]}"; do
	[[ " ${ALL[*]} " == *" $t "* ]] || { echo "FAIL: unknown case '$t' (cases: ${ALL[*]})"; echo "0 passed, 1 failed"; exit 1; }
done
[ -x "$VSWITCHD" ] || { echo "FAIL: $VSWITCHD missing (apt-get install openvswitch-switch-dpdk)"; echo "0 passed, 1 failed"; exit 1; }
[ -x "$VECRING" ] || { echo "FAIL: $VECRING missing (cargo build --release -p vecring-cli)"; echo "0 passed, 1 failed"; exit 1; }
free0=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
log "work dir $WORK, $($VSWITCHD --version | head -n1)"
if ovs_start && setup_bridge; then
	pass "OVS with DPDK started privately, bridge br0 (netdev) with eth_vecring ports vr0, vr1"
	for t in "${TESTS[@]}"; do
		log "--- $t"
		"test_$t"
	done
else
	fail "OVS did not start (log: $OVS/ovs-vswitchd.log)"
	tail -n 20 "$OVS/ovs-vswitchd.log" 2>/dev/null | sed 's/^/    /'
fi
# The machine as it was: no OVS process of this run, no EAL directory, the
# hugepages back.
for p in "${PIDS[@]}"; do
	kill -9 "$p" 2>/dev/null
done
ovs_stop
if pgrep -f "$OVS/" >/dev/null; then
	fail "a process of this run's OVS is still there"
else
	pass "no OVS process of this run remains"
fi
[ -e "/var/run/dpdk/$PREFIX" ] && fail "EAL's /var/run/dpdk/$PREFIX remains" || pass "no EAL directory of this run remains"
free1=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
expect_eq "every hugepage OVS took is free again" "$free1" "$free0"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
