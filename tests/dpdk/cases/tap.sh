# shellcheck shell=bash
# Group "tap", sourced by tests/dpdk/run.sh: the kernel's own tools through
# testpmd. Two network namespaces (a container's network, as `vecring tap`
# serves it) each run `vecring tap` as the slave of a link whose master is
# a port of one testpmd forwarding between its two ports (io): ping, a
# full-sized ping with -M do and one byte more refused, 16 MiB over TCP
# arriving whole (SHA-256 at both ends), a bounded iperf3 TCP run, and
# each interface's counters equal to testpmd's on its port, both ways.

group tap tap_through_testpmd

# tap_ns NAME: this run's network namespace NAME.
tap_ns() { echo "vrtap-$1-$$"; }
# in_ns NAME COMMAND...: COMMAND inside namespace NAME.
in_ns() {
	local n
	n=$(tap_ns "$1")
	shift
	ip netns exec "$n" "$@"
}

# tap_up NAME LINK ADDR: namespace NAME with `vecring tap` (the slave of
# vrtest/LINK, interface vr0 at testpmd's MTU, 1500) and address ADDR/24
# once its carrier is on. The tap's watchdog PID in TAP_PID_<NAME>.
tap_up() {
	local name=$1 link=$2 addr=$3 n i
	n=$(tap_ns "$name")
	ip netns add "$n" || return 1
	# IPv6 off: only the case's own traffic crosses (the counts are exact).
	in_ns "$name" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	in_ns "$name" ip link set lo up
	timeout --kill-after=5 "$WATCHDOG" ip netns exec "$n" "$ROOT/target/release/vecring" tap \
		--role slave --domain vrtest --link "$link" --run-dir "$RUN_DIR" --ifname vr0 \
		--hugepages never --mtu 1500 >"$WORK/tap-$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "TAP_PID_$name" '%s' "$!"
	for ((i = 0; i < 200; i++)); do
		[ "$(in_ns "$name" cat /sys/class/net/vr0/carrier 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	[ "$(in_ns "$name" cat /sys/class/net/vr0/carrier 2>/dev/null)" = 1 ] || return 1
	in_ns "$name" ip addr add "$addr/24" dev vr0
}

# tap_down NAME: SIGTERM to the tap (status 0 expected), then the namespace.
tap_down() {
	local pidvar=TAP_PID_$1
	if [ -n "${!pidvar:-}" ]; then
		# The watchdog's child: `ip netns exec` became the tap.
		pkill -TERM -P "${!pidvar}" 2>/dev/null
		wait "${!pidvar}"
		expect_eq "tap: namespace $1's tap ends on SIGTERM with status 0" "$?" 0
	fi
	ip netns del "$(tap_ns "$1")" 2>/dev/null
}

# port_stats NAME PORT: "RX TX" packets of testpmd's PORT, asked now.
port_stats() {
	local before
	before=$(grep -c "NIC statistics for port $2 " "$WORK/$1.log")
	cmd "$1" "show port stats $2"
	wait_for "$1" "NIC statistics for port $2 " "$((before + 1))" 10 >/dev/null || return 1
	sleep 0.2
	awk -v port="$2" '
		/NIC statistics for port/ { here = ($6 == port) }
		here && /RX-packets:/ { rx = $2 }
		here && /TX-packets:/ { tx = $2 }
		END { print rx, tx }' "$WORK/$1.log"
}

test_tap_through_testpmd() {
	command -v iperf3 >/dev/null && command -v ping >/dev/null ||
		{ fail "tap: iperf3 or ping missing (scripts/setup.sh)"; return; }
	local base="domain=vrtest,run_dir=$RUN_DIR,master=true"
	# testpmd forwards port 0 <-> port 1 (io); promiscuous, as by default.
	# EAL probes the vdevs in the order given, PMD_EAL's first: port 0 is
	# eth_vecring1 on link tapa, port 1 eth_vecring0 on tapb.
	PMD_EAL="--vdev=eth_vecring1,$base,link=tapa" \
		start_pmd tap 0 "$base,link=tapb" --forward-mode=io
	wait_for tap "testpmd> " 1 30 || { fail "tap: testpmd did not start"; return; }
	cmd tap start
	if ! { tap_up a tapa 10.79.0.1 && tap_up b tapb 10.79.0.2; }; then
		fail "tap: a tap's carrier did not come on with testpmd's ports"
		tail -n 5 "$WORK"/tap-*.log | sed 's/^/    /'
		tap_down a
		tap_down b
		quit_pmd tap
		return
	fi
	pass "tap: both interfaces' carriers on with testpmd's ports as their masters"
	local out
	out=$(in_ns a ping -c 5 -i 0.2 -W 2 10.79.0.2 2>&1)
	[[ "$out" == *" 5 received"* ]] &&
		pass "tap: ping through testpmd, 5 of 5 answered" ||
		fail "tap: ping through testpmd: $(tail -n 2 <<<"$out")"
	out=$(in_ns b ping -c 3 -i 0.2 -W 2 -M do -s 1472 10.79.0.1 2>&1)
	[[ "$out" == *" 3 received"* ]] &&
		pass "tap: 1500-byte IP packets with -M do through testpmd" ||
		fail "tap: ping -M do -s 1472: $(tail -n 2 <<<"$out")"
	# 16 MiB over TCP from a to b: the digest at b is that of what a sent.
	in_ns b timeout 60 python3 -c '
import hashlib, socket
s = socket.create_server(("10.79.0.2", 5201))
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest())' >"$WORK/tap-tcp-recv.out" 2>&1 &
	local server=$! i sent
	for ((i = 0; i < 50; i++)); do
		in_ns b ss -ltn 2>/dev/null | grep -q ':5201 ' && break
		sleep 0.1
	done
	sent=$(in_ns a timeout 60 python3 -c '
import hashlib, os, socket
data = os.urandom(16 << 20)
c = socket.create_connection(("10.79.0.2", 5201))
c.sendall(data)
c.close()
print(len(data), hashlib.sha256(data).hexdigest())' 2>&1)
	wait "$server"
	expect_eq "tap: 16 MiB over TCP through testpmd arrive whole (length, SHA-256)" \
		"$(cat "$WORK/tap-tcp-recv.out")" "$sent"
	in_ns b timeout 60 iperf3 -s -1 -B 10.79.0.2 >"$WORK/tap-iperf3-server.log" 2>&1 &
	server=$!
	for ((i = 0; i < 50; i++)); do
		in_ns b ss -ltn 2>/dev/null | grep -q ':5201 ' && break
		sleep 0.1
	done
	for ((i = 0; i < 5; i++)); do
		in_ns a timeout 30 iperf3 -c 10.79.0.2 -t 2 -J >"$WORK/tap-iperf3.json" 2>&1 && break
		sleep 0.2
	done
	wait "$server"
	local tcp
	tcp=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["end"]; print(int(d["sum_sent"]["bytes"] > 0 and d["sum_received"]["bytes"] > 0))' "$WORK/tap-iperf3.json" 2>/dev/null)
	expect_eq "tap: iperf3 TCP through testpmd for 2 s, bytes sent and received" "$tcp" 1
	log "tap: iperf3 TCP through testpmd: $(python3 -c 'import json,sys; print("%.2f Gbit/s" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e9))' "$WORK/tap-iperf3.json" 2>/dev/null)"
	# Once nothing moves: each interface's counters are testpmd's on the
	# port at the other end of its link.
	local a_rx a_tx b_rx b_tx p0=() p1=()
	for ((i = 0; i < 20; i++)); do
		a_tx=$(in_ns a cat /sys/class/net/vr0/statistics/tx_packets)
		a_rx=$(in_ns a cat /sys/class/net/vr0/statistics/rx_packets)
		b_tx=$(in_ns b cat /sys/class/net/vr0/statistics/tx_packets)
		b_rx=$(in_ns b cat /sys/class/net/vr0/statistics/rx_packets)
		read -ra p0 <<<"$(port_stats tap 0)"
		read -ra p1 <<<"$(port_stats tap 1)"
		[ "${p0[0]:-}" = "$a_tx" ] && [ "${p1[1]:-}" = "$b_rx" ] &&
			[ "${p1[0]:-}" = "$b_tx" ] && [ "${p0[1]:-}" = "$a_rx" ] && break
		sleep 0.3
	done
	expect_eq "tap: testpmd received on port 0 every frame namespace a's vr0 sent" "${p0[0]:-}" "$a_tx"
	expect_eq "tap: namespace b's vr0 received every frame testpmd sent on port 1" "$b_rx" "${p1[1]:-}"
	expect_eq "tap: testpmd received on port 1 every frame namespace b's vr0 sent" "${p1[0]:-}" "$b_tx"
	expect_eq "tap: namespace a's vr0 received every frame testpmd sent on port 0" "$a_rx" "${p0[1]:-}"
	expect_gt "tap: frames through testpmd" "${p0[0]:-}" 10000
	tap_down a
	tap_down b
	cmd tap stop
	quit_pmd tap
}
