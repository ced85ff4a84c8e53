# shellcheck shell=bash
# A private Open vSwitch with DPDK, for tests/ovs/run.sh and
# benches/ovs-compare.sh: Debian's ovsdb-server and ovs-vswitchd-dpdk with
# their database, sockets, logs and pid files in $OVS (set by the caller,
# with $PREFIX, the EAL file prefix), EAL's main thread on CPU 0 and one
# PMD thread on CPU 1, hugepages only while it runs (OVS passes
# --in-memory), stopped by ovs_stop without a trace; and its ports'
# counters (port_stat); the CNI tests' helpers (netns_port, ping_pair). Also
# sourced by tests/containers/docker.sh and tests/containers/podman.sh.

VSWITCHD=/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
export OVS_RUNDIR=$OVS OVS_DBDIR=$OVS OVS_LOGDIR=$OVS OVS_SYSCONFDIR=$OVS
vsctl() { ovs-vsctl --timeout=30 "$@"; }
appctl() { ovs-appctl --timeout=30 -t "$OVS/ovs-vswitchd.ctl" "$@"; }

# --- OVS ---------------------------------------------------------------------

# port_stat PORT KEY: a counter of OVS's port as the datapath has it now
# (`dpctl/show -s` asks the driver; the database is written only every
# 5 s). KEY: rx_packets, tx_packets or tx_dropped.
port_stat() {
	appctl dpctl/show -s | awk -v port="$1" -v key="$2" '
		$1 == "port" { here = ($3 == port) ; next }
		here && toupper(substr(key, 1, 2)) == $1 {
			want = (substr(key, 4) == "packets") ? "packets" : "dropped"
			for (i = 2; i <= NF; i++) { split($i, kv, ":"); if (kv[1] == want) { print kv[2]; exit } }
		}'
}

# netns_port BRIDGE PID: the port of BRIDGE whose eth_vecring master
# listens in PID's network namespace (its devargs' netns=).
netns_port() {
	local ino p ns
	ino=$(stat -L -c %i "/proc/$2/ns/net")
	for p in $(vsctl list-ports "$1"); do
		ns=$(vsctl get Interface "$p" options:dpdk-devargs | sed -n 's/.*netns=\([^,"]*\).*/\1/p')
		[ -n "$ns" ] && [ "$(stat -L -c %i "$ns" 2>/dev/null)" = "$ino" ] && echo "$p"
	done
}

# ping_pair PID1 PID2 IF NET: addresses NET.1 and NET.2 (/24) on interface
# IF of the two processes' network namespaces, both carriers waited for
# (10 s at most), then 5 pings from the first to the second: how many
# were answered.
ping_pair() {
	local i
	nsenter --net="/proc/$1/ns/net" ip addr add "$4.1/24" dev "$3"
	nsenter --net="/proc/$2/ns/net" ip addr add "$4.2/24" dev "$3"
	for ((i = 0; i < 100; i++)); do
		nsenter --net="/proc/$1/ns/net" ip -o link show "$3" 2>/dev/null | grep -q LOWER_UP &&
			nsenter --net="/proc/$2/ns/net" ip -o link show "$3" 2>/dev/null | grep -q LOWER_UP && break
		sleep 0.1
	done
	timeout 30 nsenter --net="/proc/$1/ns/net" ping -c 5 -i 0.2 -W 2 "$4.2" 2>&1 | sed -n 's/.* \([0-9]*\) received.*/\1/p'
}

# ovs_start: ovsdb-server (creating the database the first time) and
# ovs-vswitchd with DPDK: EAL on CPU 0, one PMD thread on CPU 1.
# OVS_DPDK_EXTRA adds EAL options.
ovs_start() {
	if [ ! -f "$OVS/conf.db" ]; then
		mkdir -p "$OVS"
		ovsdb-tool create "$OVS/conf.db" /usr/share/openvswitch/vswitch.ovsschema || return 1
	fi
	if [ ! -S "$OVS/db.sock" ]; then
		ovsdb-server "$OVS/conf.db" --remote="punix:$OVS/db.sock" \
			--pidfile="$OVS/ovsdb-server.pid" --unixctl="$OVS/ovsdb-server.ctl" \
			-vconsole:off --log-file="$OVS/ovsdb-server.log" --detach --no-chdir || return 1
		vsctl --no-wait init
		vsctl --no-wait set Open_vSwitch . other_config:dpdk-init=true \
			other_config:dpdk-socket-mem=1024 other_config:dpdk-socket-limit=1024 \
			other_config:per-port-memory=true \
			other_config:dpdk-lcore-mask=0x1 other_config:pmd-cpu-mask=0x2 \
			other_config:dpdk-extra="--no-pci --file-prefix=$PREFIX ${OVS_DPDK_EXTRA:-}"
	fi
	"$VSWITCHD" "unix:$OVS/db.sock" --pidfile="$OVS/ovs-vswitchd.pid" \
		--unixctl="$OVS/ovs-vswitchd.ctl" -vconsole:off --log-file="$OVS/ovs-vswitchd.log" \
		--detach --no-chdir || return 1
	vsctl wait-until Open_vSwitch . dpdk_initialized=true
}

# stop_pidfile NAME CTL_ARGS...: ask NAME (by its control socket) to exit,
# then make sure it did.
stop_pidfile() {
	local name=$1 pid i
	shift
	[ -f "$OVS/$name.pid" ] || return 0
	pid=$(cat "$OVS/$name.pid")
	ovs-appctl --timeout=10 -t "$OVS/$name.ctl" "$@" >/dev/null 2>&1
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	rm -f "$OVS/$name.pid"
}

ovs_stop_vswitchd() { stop_pidfile ovs-vswitchd exit --cleanup; }

ovs_stop() {
	ovs_stop_vswitchd
	stop_pidfile ovsdb-server exit
	rm -rf "/var/run/dpdk/$PREFIX"
}

