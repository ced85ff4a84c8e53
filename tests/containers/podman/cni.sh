# shellcheck shell=bash
# Group "cni", sourced by tests/containers/podman.sh: Podman's CNI backend
# running vecring-cni. A private Open vSwitch with DPDK (tests/ovs/lib.sh:
# its own database and ovs-vswitchd in $WORK/ovs) has a bridge brc; a
# containers.conf of this run puts Podman on CNI with the plugin's
# directory first, and `podman network create vecnet` makes the network,
# whose plugin chain the case sets to two vecring-cni entries: mode dpdk
# (the link net1, for a DPDK application) and then mode tap (a kernel
# interface net2), so the second passes the first's result on. Nothing of
# the host's network is touched (no bridge plugin, no iptables).
#   cni_podman  two containers on vecnet: each has net2, ping between
#               them through the switch 5/5;
#               the first's `vecring txonly --netns self` on net1 sends,
#               the switch's port counts every frame; `podman rm` runs DEL:
#               no port, bridge process or record remains

group cni cni_podman

OVS=$WORK/ovs
PREFIX=vrpmovs_$$
CNI_CONF=$WORK/containers.conf
OVS_STARTED=0
# shellcheck source=tests/ovs/lib.sh
. "$ROOT/tests/ovs/lib.sh"

# cpm ARGS...: rootful podman (pm) on the CNI backend of this run.
cpm() { CONTAINERS_CONF=$CNI_CONF pm --network-config-dir "$WORK/cni-net" "$@"; }

cni_podman_setup() {
	mkdir -p "$WORK/cni-bin" "$WORK/cni-net" "$WORK/cni-state" "$WORK/run-cni"
	cp "$ROOT/target/release/vecring-cni" "$WORK/cni-bin/" || return 1
	cat >"$CNI_CONF" <<-EOF2
		[network]
		network_backend = "cni"
		cni_plugin_dirs = ["$WORK/cni-bin", "/usr/lib/cni"]
	EOF2
	ovs_start || return 1
	OVS_STARTED=1
	vsctl add-br brc -- set bridge brc datapath_type=netdev || return 1
	cpm network create vecnet >"$WORK/cni-create.log" 2>&1 || return 1
	# The chain: the plugin twice, mode dpdk then mode tap.
	python3 - "$WORK/cni-net/vecnet.conflist" "$OVS" "$WORK" "$VECRING" <<-'EOF2'
		import json, sys
		path, ovs, work, tool = sys.argv[1:]
		net = json.load(open(path))
		common = {"type": "vecring-cni", "bridge": "brc", "ovsdb": f"unix:{ovs}/db.sock",
		          "runDir": f"{work}/run-cni", "stateDir": f"{work}/cni-state", "vecring": tool}
		net["plugins"] = [dict(common, mode="dpdk", link="net1"), dict(common, mode="tap", ifname="net2")]
		json.dump(net, open(path, "w"), indent=1)
	EOF2
}

cni_podman_stop() {
	[ "$OVS_STARTED" = 1 ] || return 0
	ovs_stop
	OVS_STARTED=0
}

test_cni_podman() {
	local c pid pid1 pid2 mac got taken rx port
	if ! cni_podman_setup; then
		fail "cni_podman: setup (OVS, podman network create)"
		tail -n 5 "$WORK/cni-create.log" "$OVS/ovs-vswitchd.log" 2>/dev/null | sed 's/^/    /'
		cni_podman_stop
		return
	fi
	pass "cni_podman: podman network create vecnet (CNI), its chain: vecring-cni dpdk, vecring-cni tap"
	for c in cni1 cni2; do
		slave_start "$c" env CONTAINERS_CONF="$CNI_CONF" timeout 100 "${PM[@]}" --network-config-dir "$WORK/cni-net" run --rm -i --name "$c" \
			--runtime "$RT" --network vecnet --cgroup-parent "$PODMAN_CG" \
			--ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
			"$IMAGE" /bin/vecring rxonly --domain idle --link idle --netns self --interval 0 --up-timeout 90
	done
	for c in cni1 cni2; do
		pid=$(container_pid "$c" env CONTAINERS_CONF="$CNI_CONF" "${PM[@]}") || { fail "cni_podman: container $c did not start"; tail -n 5 "$WORK/$c.err" | sed 's/^/    /'; }
		printf -v "pid_$c" '%s' "$pid"
	done
	pid1=${pid_cni1:-}
	pid2=${pid_cni2:-}
	if [ -z "$pid1" ] || [ -z "$pid2" ]; then
		cpm rm -f -t 0 cni1 cni2 >/dev/null 2>&1
		cni_podman_stop
		return
	fi
	# (ip, not /sys: nsenter --net keeps this shell's /sys, the host's.)
	mac=$(nsenter --net="/proc/$pid1/ns/net" ip -o link show net2 2>/dev/null | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
	[ -n "$mac" ] && pass "cni_podman: the container has net2 ($mac)" || fail "cni_podman: no net2 in the container"
	got=$(ping_pair "$pid1" "$pid2" net2 10.97.0)
	expect_eq "cni_podman: ping between the two containers' net2 through the switch" "$got" 5
	# net1: the first container's link; its application runs in it by
	# podman exec.
	port=$(netns_port brc "$pid1")
	timeout --kill-after=5 60 env CONTAINERS_CONF="$CNI_CONF" "${PM[@]}" --network-config-dir "$WORK/cni-net" \
		exec cni1 /bin/vecring txonly --domain cni --link net1 --netns self --seconds 1 --up-timeout 30 \
		>"$WORK/cni-tx.out" 2>"$WORK/cni-tx.err"
	taken=$(sed -n 's/^txonly: sent .* taken by the peer \([0-9]*\);.*/\1/p' "$WORK/cni-tx.out")
	[[ "${taken:-0}" -gt 0 ]] || { fail "cni_podman: txonly on net1 sent nothing"; tail -n 3 "$WORK/cni-tx.err" | sed 's/^/    /'; }
	rx=$(port_stat "$port" rx_packets)
	expect_eq "cni_podman: the switch's port ${port:-?} received every frame sent on the first container's net1" "$rx" "$taken"
	# podman rm, not the end of their input: a container that had a
	# `podman exec` keeps its `podman run -i` attached after stdin closes.
	cpm rm -f -t 0 cni1 cni2 >/dev/null 2>&1
	slave_stop cni1
	slave_stop cni2
	for ((i = 0; i < 100; i++)); do
		[ -z "$(vsctl list-ports brc)" ] && break
		sleep 0.1
	done
	got="ports [$(vsctl list-ports brc | tr '\n' ' ')], records $(find "$WORK/cni-state" -name '*.json' | wc -l), bridges $(pgrep -f -- "--if-netns /run/netns/" | wc -l)"
	expect_eq "cni_podman: after podman rm (CNI DEL)" "$got" "ports [], records 0, bridges 0"
	cpm network rm vecnet >/dev/null 2>&1
	cni_podman_stop
}
