# shellcheck shell=bash
# The CNI plugin (vecring-cni) against tests/ovs/run.sh's switch, sourced
# by it: a bridge of its own (brc, netdev, the NORMAL action), containers
# as `ip netns` namespaces (what a runtime hands a plugin as CNI_NETNS),
# the plugin run as a runtime runs it (environment, configuration on
# stdin, result or CNI error on stdout):
#   cni_dpdk     mode dpdk: ADD gives the container's link (the result
#                names @vecring/1/cni/net1), a `vecring txonly --netns
#                self` inside sends, the switch's port counts every frame;
#                CHECK; DEL removes the port and the record, DEL again and
#                CHECK after it behave as the spec says
#   cni_tap      mode tap: two containers get net1 (the MAC the result
#                says), ping through the switch 5/5; CHECK fails once the
#                bridge process is killed; DEL leaves no port, process,
#                interface or record
#   cni_errors   an unknown mode, a bridge the switch lacks, a switch that
#                does not answer, a tap that cannot start, a namespace
#                path that is no namespace: each a CNI error with its code,
#                nothing left behind; DEL after the failed ADD succeeds
#   cni_restart  ovs-vswitchd restarted under a container's port: CHECK
#                passes again once it is back, DEL removes the port
#   cni_ctr      containerd's `ctr run --cni` (a private containerd, the
#                plugin chained twice in /etc/cni/net.d and /opt/cni/bin,
#                removed after): two containers get net1 (mode dpdk) and
#                net2 (mode tap), net2 pings 5/5, the switch counts every
#                frame a `ctr task exec`'d txonly sends on net1, and the
#                containers' ends (CNI DEL) leave nothing

CNI=$ROOT/target/release/vecring-cni
CNI_STATE=$WORK/cni-state
CNI_NS=()

# cni_conf MODE [JSON-MEMBERS]: the plugin's configuration.
cni_conf() {
	printf '{"cniVersion":"1.0.0","name":"vecnet","type":"vecring-cni","mode":"%s","bridge":"brc","ovsdb":"unix:%s/db.sock","runDir":"%s","stateDir":"%s","vecring":"%s"%s}' \
		"$1" "$OVS" "$RUN_DIR" "$CNI_STATE" "$VECRING" "${2:-}"
}

# cni COMMAND ID NETNS IFNAME CONFIG: runs the plugin; its stdout in
# CNI_OUT, its exit status in CNI_RC.
cni() {
	CNI_OUT=$(printf '%s' "$5" | env CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_NETNS="$3" \
		CNI_IFNAME="$4" CNI_PATH=/usr/lib/cni timeout --kill-after=5 60 "$CNI" 2>>"$WORK/cni.err")
	CNI_RC=$?
}

# cni_field KEY: a value of CNI_OUT's JSON (a Python expression on `r`).
cni_field() { python3 -c "import json,sys; r=json.loads(sys.argv[1]); print($1)" "$CNI_OUT" 2>/dev/null; }

# cni_ns NAME: a container's network namespace, /run/netns/NAME.
cni_ns() {
	ip netns add "$1" && CNI_NS+=("$1") && ip netns exec "$1" ip link set lo up
}

cni_ports() { vsctl list-ports brc | tr '\n' ' '; }

# cni_clean WHAT: nothing of the plugin is left: no port on brc, no
# record, no bridge process.
cni_clean() {
	local ports records
	ports=$(cni_ports)
	records=$(find "$CNI_STATE" -type f 2>/dev/null | wc -l)
	if [ -z "${ports// /}" ] && [ "$records" = 0 ] && ! pgrep -f -- "--if-netns /run/netns/vrcni" >/dev/null; then
		pass "$1: nothing left (no port, record or bridge process)"
	else
		fail "$1: left behind: ports [$ports], $records records, bridge pids [$(pgrep -f -- "--if-netns /run/netns/vrcni" | tr '\n' ' ')]"
	fi
}

cni_setup() {
	vsctl --may-exist add-br brc -- set bridge brc datapath_type=netdev
}

test_cni_dpdk() {
	local ns=vrcni-d-$$ port taken rx
	cni_setup && cni_ns "$ns" || { fail "cni_dpdk: setup"; return; }
	cni VERSION "" "" "" '{"cniVersion":"1.0.0"}'
	[ "$CNI_RC" = 0 ] && [ "$(cni_field '",".join(r["supportedVersions"])')" = "0.3.0,0.3.1,0.4.0,1.0.0" ] &&
		pass "cni_dpdk: VERSION lists 0.3.0, 0.3.1, 0.4.0, 1.0.0" || fail "cni_dpdk: VERSION: $CNI_OUT"
	cni ADD ctr-d "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	if [ "$CNI_RC" != 0 ]; then
		fail "cni_dpdk: ADD: $CNI_OUT"
		tail -n 5 "$WORK/cni.err" | sed 's/^/    /'
		return
	fi
	expect_eq "cni_dpdk: ADD's result names the link's socket in the container" \
		"$(cni_field 'r["interfaces"][-1]["socketPath"] + " " + r["interfaces"][-1]["sandbox"]')" "@vecring/1/cni/net1 /run/netns/$ns"
	port=$(cni_ports | tr -d ' ')
	cni CHECK ctr-d "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	expect_eq "cni_dpdk: CHECK after ADD" "$CNI_RC" 0
	timeout --kill-after=5 60 ip netns exec "$ns" "$VECRING" txonly --domain cni --link net1 --netns self \
		--seconds 1 --up-timeout 30 >"$WORK/cni-tx.out" 2>"$WORK/cni-tx.err"
	taken=$(sed -n 's/^txonly: sent .* taken by the peer \([0-9]*\);.*/\1/p' "$WORK/cni-tx.out")
	[[ "${taken:-0}" -gt 0 ]] || { fail "cni_dpdk: the container's txonly sent nothing"; tail -n 3 "$WORK/cni-tx.err" | sed 's/^/    /'; }
	rx=$(port_stat "$port" rx_packets)
	expect_eq "cni_dpdk: the switch's port $port received every frame the container's application sent" "$rx" "$taken"
	cni DEL ctr-d "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	expect_eq "cni_dpdk: DEL" "$CNI_RC" 0
	cni_clean "cni_dpdk: after DEL"
	cni DEL ctr-d "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	expect_eq "cni_dpdk: DEL again (nothing to remove)" "$CNI_RC" 0
	cni CHECK ctr-d "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	expect_eq "cni_dpdk: CHECK after DEL: error code" "$(cni_field 'r["code"]')" 3
}

test_cni_tap() {
	local a=vrcni-a-$$ b=vrcni-b-$$ mac got i pid
	cni_setup && cni_ns "$a" && cni_ns "$b" || { fail "cni_tap: setup"; return; }
	cni ADD ctr-a "/run/netns/$a" net1 "$(cni_conf tap)"
	[ "$CNI_RC" = 0 ] || { fail "cni_tap: ADD a: $CNI_OUT"; tail -n 5 "$WORK/cni.err" | sed 's/^/    /'; return; }
	mac=$(cni_field 'r["interfaces"][-1]["mac"]')
	got=$(ip netns exec "$a" cat /sys/class/net/net1/address 2>/dev/null)
	expect_eq "cni_tap: the container has net1 with the MAC the result says" "$got" "$mac"
	cni ADD ctr-b "/run/netns/$b" net1 "$(cni_conf tap)"
	[ "$CNI_RC" = 0 ] || { fail "cni_tap: ADD b: $CNI_OUT"; return; }
	ip netns exec "$a" ip addr add 10.98.0.1/24 dev net1
	ip netns exec "$b" ip addr add 10.98.0.2/24 dev net1
	for ((i = 0; i < 100; i++)); do
		[ "$(ip netns exec "$a" cat /sys/class/net/net1/carrier 2>/dev/null)" = 1 ] &&
			[ "$(ip netns exec "$b" cat /sys/class/net/net1/carrier 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	got=$(timeout 30 ip netns exec "$a" ping -c 5 -i 0.2 -W 2 10.98.0.2 2>&1 | sed -n 's/.* \([0-9]*\) received.*/\1/p')
	expect_eq "cni_tap: ping from one container's net1 to the other's through the switch" "$got" 5
	cni CHECK ctr-a "/run/netns/$a" net1 "$(cni_conf tap)"
	expect_eq "cni_tap: CHECK" "$CNI_RC" 0
	pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tapPid"])' "$CNI_STATE/ctr-a-net1.json")
	kill -9 "$pid"
	for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	cni CHECK ctr-a "/run/netns/$a" net1 "$(cni_conf tap)"
	expect_eq "cni_tap: CHECK once the bridge is killed: error code" "$(cni_field 'r["code"]')" 101
	cni DEL ctr-a "/run/netns/$a" net1 "$(cni_conf tap)"
	expect_eq "cni_tap: DEL a" "$CNI_RC" 0
	cni DEL ctr-b "/run/netns/$b" net1 "$(cni_conf tap)"
	expect_eq "cni_tap: DEL b" "$CNI_RC" 0
	ip netns exec "$b" ip link show net1 >/dev/null 2>&1 &&
		fail "cni_tap: net1 is still in the container after DEL" ||
		pass "cni_tap: net1 is gone from the container after DEL"
	cni_clean "cni_tap: after DEL"
}

# cni_refused WHAT CODE TEXT ID NETNS CONFIG: ADD fails with CODE, its
# message holding TEXT, and leaves nothing.
cni_refused() {
	cni ADD "$4" "$5" net1 "$6"
	if [ "$CNI_RC" != 0 ] && [ "$(cni_field 'r["code"]')" = "$2" ] && [[ "$(cni_field 'r["msg"]')" == *"$3"* ]]; then
		pass "cni_errors: $1: CNI error $2 ($(cni_field 'r["msg"]' | cut -c1-90))"
	else
		fail "cni_errors: $1: got status $CNI_RC, $CNI_OUT"
	fi
	cni_clean "cni_errors: $1"
}

test_cni_errors() {
	local ns=vrcni-e-$$
	cni_setup && cni_ns "$ns" || { fail "cni_errors: setup"; return; }
	cni_refused "unknown mode" 4 "unknown mode 'vhost'" ctr-e "/run/netns/$ns" "$(cni_conf vhost)"
	cni_refused "a bridge the switch lacks" 4 "no bridge 'nobr'" ctr-e "/run/netns/$ns" \
		"$(cni_conf dpdk | sed 's/"bridge":"brc"/"bridge":"nobr"/')"
	cni_refused "a switch that does not answer" 11 "database connection failed" ctr-e "/run/netns/$ns" \
		"$(cni_conf dpdk | sed "s#\"ovsdb\":\"unix:[^\"]*\"#\"ovsdb\":\"unix:$WORK/no-such-db.sock\"#")"
	cni_refused "a tap that cannot start" 101 "cannot start /nonexistent/vecring" ctr-e "/run/netns/$ns" \
		"$(cni_conf tap | sed 's#"vecring":"[^"]*"#"vecring":"/nonexistent/vecring"#')"
	cni DEL ctr-e "/run/netns/$ns" net1 "$(cni_conf tap)"
	expect_eq "cni_errors: DEL after the failed ADD" "$CNI_RC" 0
	touch "$WORK/not-a-netns"
	cni_refused "a CNI_NETNS that is no namespace" 7 "not a namespace file" ctr-e "$WORK/not-a-netns" "$(cni_conf dpdk)"
}

test_cni_restart() {
	local ns=vrcni-r-$$ i
	cni_setup && cni_ns "$ns" || { fail "cni_restart: setup"; return; }
	cni ADD ctr-r "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	[ "$CNI_RC" = 0 ] || { fail "cni_restart: ADD: $CNI_OUT"; return; }
	ovs_stop_vswitchd
	ovs_start || { fail "cni_restart: ovs-vswitchd did not start again"; return; }
	add_flows
	for ((i = 0; i < 100; i++)); do
		cni CHECK ctr-r "/run/netns/$ns" net1 "$(cni_conf dpdk)"
		[ "$CNI_RC" = 0 ] && break
		sleep 0.1
	done
	expect_eq "cni_restart: CHECK once the restarted switch runs the port again" "$CNI_RC" 0
	cni DEL ctr-r "/run/netns/$ns" net1 "$(cni_conf dpdk)"
	expect_eq "cni_restart: DEL after the restart" "$CNI_RC" 0
	cni_clean "cni_restart: after DEL"
}

CTD=$WORK/containerd
CTD_PID=
CNI_MADE=()
CNI_CONFLIST=/etc/cni/net.d/00-vecring-ovs-test-$$.conflist

# actr ARGS...: ctr against this run's containerd.
actr() { timeout --kill-after=5 60 ctr --address "$CTD/ctd.sock" "$@"; }

# ctr_setup: a containerd of this run (its root, state and socket in
# $CTD, no CRI), the image's root file system, and the plugin where ctr
# looks for it, chained: mode dpdk (net1), mode tap (net2).
ctr_setup() {
	local d
	mkdir -p "$CTD"
	cat >"$CTD/config.toml" <<-EOF2
		version = 2
		root = "$CTD/root"
		state = "$CTD/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$CTD/ctd.sock"
	EOF2
	containerd --config "$CTD/config.toml" >"$CTD/containerd.log" 2>&1 &
	CTD_PID=$!
	for ((d = 0; d < 100; d++)); do
		ctr --address "$CTD/ctd.sock" version >/dev/null 2>&1 && break
		sleep 0.1
	done
	bash "$ROOT/scripts/image.sh" vecring "$CTD/rootfs" --tool "$VECRING" >"$CTD/image.log" 2>&1 || return 1
	for d in /opt/cni /opt/cni/bin /etc/cni /etc/cni/net.d; do
		[ -d "$d" ] || { mkdir "$d" && CNI_MADE=("$d" "${CNI_MADE[@]}"); }
	done
	cp "$CNI" /opt/cni/bin/vecring-cni-test-$$ || return 1
	printf '{"cniVersion":"1.0.0","name":"vecctr","plugins":[%s,%s]}\n' \
		"$(cni_conf dpdk ',"link":"net1"' | sed "s/\"type\":\"vecring-cni\"/\"type\":\"vecring-cni-test-$$\"/")" \
		"$(cni_conf tap ',"ifname":"net2"' | sed "s/\"type\":\"vecring-cni\"/\"type\":\"vecring-cni-test-$$\"/")" \
		>"$CNI_CONFLIST"
}

ctr_stop() {
	local c d
	if [ -n "$CTD_PID" ]; then
		for c in $(ctr --address "$CTD/ctd.sock" task ls -q 2>/dev/null); do
			ctr --address "$CTD/ctd.sock" task kill -s SIGKILL "$c" >/dev/null 2>&1
			ctr --address "$CTD/ctd.sock" task rm -f "$c" >/dev/null 2>&1
		done
		for c in $(ctr --address "$CTD/ctd.sock" containers ls -q 2>/dev/null); do
			ctr --address "$CTD/ctd.sock" containers rm "$c" >/dev/null 2>&1
		done
		kill "$CTD_PID" 2>/dev/null
		wait "$CTD_PID" 2>/dev/null
		CTD_PID=
		awk -v w="$CTD/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
	fi
	rm -f "$CNI_CONFLIST" "/opt/cni/bin/vecring-cni-test-$$"
	for d in "${CNI_MADE[@]}"; do
		rmdir "$d" 2>/dev/null
	done
	CNI_MADE=()
}

test_cni_ctr() {
	local c pid pid1 pid2 i got taken rx port p
	cni_setup || { fail "cni_ctr: setup"; return; }
	if ! ctr_setup; then
		fail "cni_ctr: containerd, the image or the plugin's configuration"
		tail -n 5 "$CTD/containerd.log" "$CTD/image.log" 2>/dev/null | sed 's/^/    /'
		ctr_stop
		return
	fi
	for c in ctr1 ctr2; do
		timeout --kill-after=5 100 ctr --address "$CTD/ctd.sock" run --rm --cni --rootfs "$CTD/rootfs" "$c" \
			/bin/sleep 90 >"$WORK/$c.out" 2>"$WORK/$c.err" &
		PIDS+=($!)
		printf -v "run_$c" '%s' "$!"
	done
	for c in ctr1 ctr2; do
		pid=
		for ((i = 0; i < 300; i++)); do
			pid=$(actr task ls 2>/dev/null | awk -v c="$c" '$1 == c && $3 == "RUNNING" { print $2 }')
			[ -n "$pid" ] && break
			sleep 0.1
		done
		[ -n "$pid" ] || { fail "cni_ctr: $c did not run"; sed 's/^/    /' "$WORK/$c.err" | tail -n 3; }
		printf -v "pid_$c" '%s' "$pid"
	done
	pid1=${pid_ctr1:-}
	pid2=${pid_ctr2:-}
	if [ -z "$pid1" ] || [ -z "$pid2" ]; then
		ctr_stop
		return
	fi
	nsenter --net="/proc/$pid1/ns/net" ip link show net2 >/dev/null 2>&1 &&
		nsenter --net="/proc/$pid2/ns/net" ip link show net2 >/dev/null 2>&1 &&
		pass "cni_ctr: both containers have net2" || fail "cni_ctr: no net2 in a container"
	got=$(ping_pair "$pid1" "$pid2" net2 10.96.0)
	expect_eq "cni_ctr: ping between the two containers' net2 through the switch" "$got" 5
	port=$(netns_port brc "$pid1")
	actr task exec --exec-id tx ctr1 /bin/vecring txonly --domain cni --link net1 --netns self \
		--seconds 1 --up-timeout 30 >"$WORK/ctr-tx.out" 2>"$WORK/ctr-tx.err"
	taken=$(sed -n 's/^txonly: sent .* taken by the peer \([0-9]*\);.*/\1/p' "$WORK/ctr-tx.out")
	[[ "${taken:-0}" -gt 0 ]] || { fail "cni_ctr: txonly on net1 sent nothing"; tail -n 3 "$WORK/ctr-tx.err" | sed 's/^/    /'; }
	rx=$(port_stat "$port" rx_packets)
	expect_eq "cni_ctr: the switch's port ${port:-?} received every frame ctr1's txonly sent on net1" "$rx" "$taken"
	for c in ctr1 ctr2; do
		actr task kill -s SIGKILL "$c" >/dev/null 2>&1
	done
	for c in ctr1 ctr2; do
		p=run_$c
		wait "${!p}" 2>/dev/null
	done
	got="ports [$(cni_ports)], records $(find "$CNI_STATE" -name '*.json' | wc -l), bridges $(pgrep -f -- "--if-netns /proc/" | wc -l)"
	expect_eq "cni_ctr: after the containers ended (CNI DEL)" "$got" "ports [], records 0, bridges 0"
	ctr_stop
	[ -e "$CNI_CONFLIST" ] || [ -e "/opt/cni/bin/vecring-cni-test-$$" ] &&
		fail "cni_ctr: the plugin's files in /etc/cni or /opt/cni remain" ||
		pass "cni_ctr: containerd stopped, the plugin's files in /etc/cni and /opt/cni removed"
}

# cni_cleanup: the namespaces and the bridge (run.sh's cleanup calls it).
cni_cleanup() {
	local n
	ctr_stop
	pkill -9 -f -- "--if-netns /run/netns/vrcni" 2>/dev/null
	for n in "${CNI_NS[@]}"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
}
