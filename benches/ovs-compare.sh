#!/usr/bin/env bash
# The three ways a container gets a port on Open vSwitch with DPDK, in one
# harness: eth_vecring, dpdkvhostuserclient with virtio-user (net_virtio_user)
# in the container, and net_memif, in two shapes; the port kinds alternate
# within each round.
#
# shape "oneway": container A (a testpmd txonly) sends through OVS (flow
# A -> B) to container B (a testpmd rxonly).
# shape "loop": one container's testpmd forwards between its two ports
# (io), OVS forwards each port's frames to the other; the frames in flight
# (seeded by `start tx_first N`, N bursts of 32 per port) circulate. Two
# polling processes, one per CPU (OVS's PMD thread on CPU 1, the container
# on CPU 0): neither waits for a descheduled peer, so its rates and the
# zero-loss check (no frame dropped anywhere in the loop) mean something
# on two CPUs, at every size.
#
# In "oneway" on a 2-CPU machine three polling processes share two CPUs (OVS's PMD
# thread on CPU 1; A, B and OVS's main thread on CPU 0: placement tag
# "pmd1/ctr0"), so rates say little. What does not depend on that is
# reported first: OVS's processing cycles per packet (`pmd-stats-show`'s
# "avg processing cycles per packet", cleared at the start of each
# measured interval) and each container's cycles per packet (testpmd
# --record-core-cycles: "CPU cycles/packet" of its forwarding lcore).
#
# The containers are real ones: each testpmd runs under lxc-execute in
# PID, mount, UTS, IPC and network namespaces of its own (no interface),
# on the host's root file system with the host's /dev (its hugepages), as
# a container's DPDK application does (docs/lxc.md);
# VECRING_BENCH_NO_LXC=1 runs them as plain host processes instead.
#
# Usage: benches/ovs-compare.sh [ROUNDS] [SECONDS] [SIZES] [SHAPE]
#        (as root, after scripts/build-pmd.sh /usr and, for the placement
#        tags, cargo build --release -p vecring-benches; default 3 rounds of
#        5 s, sizes "64 1514", shape oneway)
# Prints one line per run and a table of medians with ranges.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-3}
SECS=${2:-5}
SIZES=${3:-64 1514}
SHAPE=${4:-oneway}
case $SHAPE in oneway | loop) ;; *) echo "ovs-compare: unknown shape '$SHAPE' (oneway, loop)" >&2; exit 2 ;; esac
# shellcheck disable=SC2206
KINDS=(${OVS_COMPARE_KINDS:-vecring vhost memif})
MEMIF_RSIZE=${MEMIF_RSIZE:-14}
VIRTIO_QSIZE=${VIRTIO_QSIZE:-4096}
WORK=$(mktemp -d /run/vecring-ovsbench.XXXXXX)
OVS=$WORK/ovs
PREFIX=vrovsb$$
# shellcheck source=tests/ovs/lib.sh
. "$ROOT/tests/ovs/lib.sh"

PIDS=()
cleanup() {
	local p
	# The containers' testpmds first (they are host processes too), then
	# whatever started them.
	pkill -9 -f -- "--file-prefix=$PREFIX" 2>/dev/null || true
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	for p in a b; do
		lxc-stop -k -n "$PREFIX$p" >/dev/null 2>&1 || true
	done
	ovs_stop
	rm -rf /var/run/dpdk/"$PREFIX"a* /var/run/dpdk/"$PREFIX"b*
	[ "${VECRING_BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# The containers' LXC configuration: no network interface, the host's root
# file system (the rendezvous and socket paths under $WORK are the same
# inside), and the host's /dev for the hugepages (lxc.autodev = 0).
cat >"$WORK/ctr.conf" <<EOF
lxc.uts.name = vecring-bench
lxc.rootfs.path =
lxc.net.0.type = empty
lxc.console.path = none
lxc.mount.auto = proc:rw sys:rw
lxc.autodev = 0
EOF

# in_ctr NAME CMD...: CMD in container NAME (on the host with
# VECRING_BENCH_NO_LXC=1); its stdin, stdout and stderr are the caller's.
in_ctr() {
	local name=$1
	shift
	if [ "${VECRING_BENCH_NO_LXC:-0}" = 1 ]; then
		"$@"
	else
		lxc-execute -n "$name" -f "$WORK/ctr.conf" -- "$@"
	fi
}

# stop_ctr PREFIX: SIGINT to the container's testpmd (a host process too,
# found by its EAL file prefix), which prints its statistics and exits.
stop_ctr() { pkill -INT -f -- "--file-prefix=$1( |$)" 2>/dev/null || true; }

# Placement: the two vCPUs' cache-line round trip (benches' core-latency,
# ns), measured before and after every run. On a VM the host places the
# two CPUs on cores that share a cache or not, and may move them during a
# run; a 1514-byte frame crosses between the CPUs as 24 lines, so a far
# placement (about 4x the near round trip here) multiplies the cycles per
# packet of every kind by up to 3.6. Each run is tagged: near (both
# measurements under C2C_FAR ns), far (both at or over) or moved; the
# tables take near and far runs apart and leave moved runs out.
C2C=$ROOT/target/release/core-latency
C2C_FAR=${C2C_FAR:-100}
c2c() { if [ -x "$C2C" ]; then "$C2C" 2>/dev/null || echo 0; else echo 0; fi; }
# placement BEFORE AFTER: the tag of a run.
placement() {
	if [ "$1" -eq 0 ] || [ "$2" -eq 0 ]; then echo unknown
	elif [ "$1" -lt "$C2C_FAR" ] && [ "$2" -lt "$C2C_FAR" ]; then echo near
	elif [ "$1" -ge "$C2C_FAR" ] && [ "$2" -ge "$C2C_FAR" ]; then echo far
	else echo moved; fi
}

# testpmd_opts SIZE: mbufs that hold a SIZE-byte frame in one segment.
testpmd_opts() {
	local o="--stats-period=1 --record-core-cycles --txd=1024 --rxd=1024"
	[ "$1" -gt 1518 ] && o="$o --mbuf-size=10240 --total-num-mbufs=32768 --max-pkt-len=$(($1 + 4))"
	echo "$o"
}

# ports KIND N: OVS ports a$N and b$N of KIND (ofport 1 and 2); sets
# A_VDEV and B_VDEV, the containers' vdevs, A_EAL/B_EAL, their extra EAL
# options, and B_APP, the receiver's. OVS gives a port as many TX queues
# as it has threads (2: main and PMD) when the driver offers them, and its
# PMD thread sends on queue 1 (static_tx_qid): a memif server learns its
# rings from the client, so B has two queues (testpmd polls min(rxq, txq)
# of them) and OVS two receive queues on pb, or the server rejects B's
# second ring and drops every frame. virtio-user needs no such help (OVS
# maps its TX queues onto the guest's). eth_vecring offers one TX queue
# per link queue, so OVS shares queue 0 (its XPS).
#
# Ring depth decides how much of A's burst survives while B is
# descheduled (A and B share CPU 0): every kind gets its deepest ring
# (memif 2^14 slots, virtio 4096 descriptors, eth_vecring its default
# 32768 64-byte slots), and the report gives the delivered fraction.
#
# In the loop shape the container has both ports (B's becomes its second
# device, index 1) and both directions carry frames: both OVS ports get
# what the receiving side needs.
ports() {
	local kind=$1 n=$2 size=$3 a b bi=0 rxq=
	[ "$SHAPE" = loop ] && bi=1 && rxq="options:n_rxq=2"
	case $kind in
	vecring | vecring-zc)
		a="eth_vecring0,domain=bench,link=a$n,master=true,run_dir=$WORK/run"
		b="eth_vecring1,domain=bench,link=b$n,master=true,run_dir=$WORK/run"
		vsctl add-port br0 pa -- set Interface pa type=dpdk options:dpdk-devargs="$a" ofport_request=1
		vsctl add-port br0 pb -- set Interface pb type=dpdk options:dpdk-devargs="$b" ofport_request=2
		A_VDEV="eth_vecring0,domain=bench,link=a$n,run_dir=$WORK/run"
		B_VDEV="eth_vecring$bi,domain=bench,link=b$n,run_dir=$WORK/run"
		# vecring-zc: the container receives zero-copy (mbufs attached
		# to the ring's slots); OVS, the master, always copies (it must
		# not classify bytes the container can rewrite).
		if [ "$kind" = vecring-zc ]; then
			A_VDEV="$A_VDEV,zero_copy=true"
			B_VDEV="$B_VDEV,zero_copy=true"
		fi
		A_EAL="--in-memory"
		B_EAL="--in-memory"
		B_APP=""
		;;
	vhost)
		vsctl add-port br0 pa -- set Interface pa type=dpdkvhostuserclient \
			options:vhost-server-path="$WORK/va$n.sock" ofport_request=1
		vsctl add-port br0 pb -- set Interface pb type=dpdkvhostuserclient \
			options:vhost-server-path="$WORK/vb$n.sock" ofport_request=2
		A_VDEV="net_virtio_user0,path=$WORK/va$n.sock,server=1,queues=1,queue_size=$VIRTIO_QSIZE"
		B_VDEV="net_virtio_user$bi,path=$WORK/vb$n.sock,server=1,queues=1,queue_size=$VIRTIO_QSIZE"
		# virtio-user shares its memory with vhost as few regions.
		A_EAL="--in-memory --single-file-segments"
		B_EAL="--in-memory --single-file-segments"
		B_APP="--total-num-mbufs=65536"
		;;
	memif)
		# shellcheck disable=SC2086
		vsctl add-port br0 pa -- set Interface pa type=dpdk $rxq \
			options:dpdk-devargs="net_memif$((2 * n)),role=server,socket=$WORK/ma$n.sock,socket-abstract=no" ofport_request=1
		vsctl add-port br0 pb -- set Interface pb type=dpdk options:n_rxq=2 \
			options:dpdk-devargs="net_memif$((2 * n + 1)),role=server,socket=$WORK/mb$n.sock,socket-abstract=no" ofport_request=2
		A_VDEV="net_memif0,role=client,socket=$WORK/ma$n.sock,socket-abstract=no,rsize=$MEMIF_RSIZE"
		B_VDEV="net_memif$bi,role=client,socket=$WORK/mb$n.sock,socket-abstract=no,rsize=$MEMIF_RSIZE"
		# memif needs EAL's multi-process support: no --in-memory. Its
		# socket is a file (socket-abstract=no): DPDK's default, an
		# abstract socket, belongs to a network namespace, and the
		# container has one of its own.
		A_EAL=""
		B_EAL=""
		B_APP="--rxq=2 --txq=2"
		;;
	esac
	if [ "$size" -gt 1518 ]; then
		vsctl set Interface pa mtu_request=9000 -- set Interface pb mtu_request=9000
	fi
	ovs-ofctl del-flows br0
	ovs-ofctl add-flow br0 in_port=1,actions=output:2
	if [ "$SHAPE" = loop ]; then
		ovs-ofctl add-flow br0 in_port=2,actions=output:1
	else
		ovs-ofctl add-flow br0 in_port=2,actions=drop
	fi
}

# field TEXT LABEL: the number after LABEL in TEXT.
field() { sed -n "s/.*$2 *\([0-9.]*\).*/\1/p" <<<"$1" | head -n1; }

# run KIND SIZE N: one measured run; prints
# "KIND SIZE ovs_cycles ovs_mpps gen_cycles rx_cycles rx_mpps".
run() {
	local kind=$1 size=$2 n=$3 t0 t1
	ports "$kind" "$n" "$size"
	t0=$(c2c)
	# shellcheck disable=SC2086,SC2046
	in_ctr "${PREFIX}b" timeout $((SECS + 60)) dpdk-testpmd --no-pci --lcores='(0,1)@0' --file-prefix="${PREFIX}b$n" $B_EAL \
		--vdev="$B_VDEV" -- --forward-mode=rxonly $B_APP $(testpmd_opts "$size") </dev/null >"$WORK/b.log" 2>&1 &
	local b=$!
	PIDS+=("$b")
	# shellcheck disable=SC2086,SC2046
	in_ctr "${PREFIX}a" timeout $((SECS + 60)) dpdk-testpmd --no-pci --lcores='(0,1)@0' --file-prefix="${PREFIX}a$n" $A_EAL \
		--vdev="$A_VDEV" -- --forward-mode=txonly $(testpmd_opts "$size") --txpkts="$size" </dev/null >"$WORK/a.log" 2>&1 &
	local a=$!
	PIDS+=("$a")
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "packet forwarding - ports" "$WORK/a.log" 2>/dev/null &&
			grep -q "packet forwarding - ports" "$WORK/b.log" 2>/dev/null && break
		sleep 0.1
	done
	sleep 2
	appctl dpif-netdev/pmd-stats-clear >/dev/null
	local rx0
	rx0=$(appctl dpctl/show -s | awk '/: pb \(/ {f=1} f && /TX packets/ {sub("packets:", "", $2); print $2; exit}')
	sleep "$SECS"
	local stats rx1
	stats=$(appctl dpif-netdev/pmd-stats-show)
	appctl dpctl/show -s >"$WORK/dpctl-$n.txt"
	rx1=$(awk '/: pb \(/ {f=1} f && /TX packets/ {sub("packets:", "", $2); print $2; exit}' "$WORK/dpctl-$n.txt")
	stop_ctr "${PREFIX}a$n"
	stop_ctr "${PREFIX}b$n"
	wait "$a" "$b" 2>/dev/null || true
	t1=$(c2c)
	local ovs_cyc ovs_pkts
	ovs_cyc=$(field "$stats" "avg processing cycles per packet:")
	ovs_pkts=$(field "$stats" "packets received:")
	local gen_cyc rx_cyc
	gen_cyc=$(grep -o "CPU cycles/packet=[0-9.]*" "$WORK/a.log" | tail -n1 | cut -d= -f2)
	rx_cyc=$(grep -o "CPU cycles/packet=[0-9.]*" "$WORK/b.log" | tail -n1 | cut -d= -f2)
	grep -q "packet len=$size " "$WORK/a.log" || { echo "ovs-compare: $kind: testpmd did not send $size-byte frames" >&2; ovs_cyc=ERR; }
	vsctl del-port br0 pa -- del-port br0 pb
	awk -v k="$kind" -v s="$size" -v oc="${ovs_cyc:-ERR}" -v op="${ovs_pkts:-0}" -v gc="${gen_cyc:-ERR}" \
		-v rc="${rx_cyc:-ERR}" -v r0="${rx0:-0}" -v r1="${rx1:-0}" -v secs="$SECS" \
		-v t0="$t0" -v t1="$t1" -v pl="$(placement "$t0" "$t1")" \
		'BEGIN { printf "%s %s %s %.2f %s %s %.2f %d %d %s\n", k, s, oc, op / secs / 1e6, gc, rc, (r1 - r0) / secs / 1e6, t0, t1, pl }'
}

# loop_bursts SIZE: the bursts of 32 frames each port seeds the loop with:
# 1024 frames per direction, fewer for jumbo frames so that every frame in
# flight fits the shallowest ring of a direction (eth_vecring's default
# 2 MiB ring holds 1365 frames of 1514 bytes, 232 of 9000).
loop_bursts() { if [ "$1" -gt 1518 ]; then echo 4; else echo 32; fi; }

# port_counts FILE PORT: "rx tx tx_dropped rx_bytes" of OVS's PORT in a
# `dpctl/show -s` dump.
port_counts() {
	awk -v port="$2" '
		$1 == "port" { here = ($3 == port); next }
		here && $1 == "RX" && $2 ~ /^packets:/ { split($2, a, ":"); rx = a[2] }
		here && $1 == "TX" && $2 ~ /^packets:/ { split($2, a, ":"); tx = a[2]; split($4, d, ":"); dr = d[2] }
		here && $1 == "RX" && $2 ~ /^bytes:/ { split($2, a, ":"); rb = a[2] }
		END { printf "%.0f %.0f %.0f %.0f\n", rx, tx, dr, rb }' "$1"
}

# run_loop KIND SIZE N: one measured run of the loop shape; prints
# "KIND SIZE ovs_cycles ovs_mpps ctr_cycles dropped".
run_loop() {
	local kind=$1 size=$2 n=$3 app="" t0 t1
	ports "$kind" "$n" "$size"
	t0=$(c2c)
	case $kind in
	vhost) app="--total-num-mbufs=65536" ;;
	memif) app="--rxq=2 --txq=2" ;;
	esac
	rm -f "$WORK/a.in"
	mkfifo "$WORK/a.in"
	# shellcheck disable=SC2086,SC2046
	in_ctr "${PREFIX}a" timeout $((SECS + 60)) dpdk-testpmd --no-pci --lcores='(0,1)@0' --file-prefix="${PREFIX}a$n" $A_EAL \
		--vdev="$A_VDEV" --vdev="$B_VDEV" -- -i --forward-mode=io $app \
		$(testpmd_opts "$size" | sed 's/--stats-period=1 //') --txpkts="$size" <"$WORK/a.in" >"$WORK/a.log" 2>&1 &
	local a=$! fd i
	PIDS+=("$a")
	exec {fd}>"$WORK/a.in"
	for ((i = 0; i < 300; i++)); do
		[ "$(vsctl get Interface pa link_state)" = up ] && [ "$(vsctl get Interface pb link_state)" = up ] && break
		sleep 0.1
	done
	echo "start tx_first $(loop_bursts "$size")" >&"$fd"
	sleep 2
	appctl dpctl/show -s >"$WORK/dpctl0-$n.txt"
	appctl dpif-netdev/pmd-stats-clear >/dev/null
	sleep "$SECS"
	local stats
	stats=$(appctl dpif-netdev/pmd-stats-show)
	appctl dpctl/show -s >"$WORK/dpctl-$n.txt"
	printf 'stop\nquit\n' >&"$fd"
	eval "exec $fd>&-"
	wait "$a" 2>/dev/null || true
	t1=$(c2c)
	local ovs_cyc ovs_pkts ctr_cyc drops=0 p c0 c1 rxp=0 rxb=0
	ovs_cyc=$(field "$stats" "avg processing cycles per packet:")
	ovs_pkts=$(field "$stats" "packets received:")
	ctr_cyc=$(grep -o "CPU cycles/packet=[0-9.]*" "$WORK/a.log" | tail -n1 | cut -d= -f2)
	# Frames lost in the loop while it was measured: OVS's drops on
	# either port and the container's (testpmd's TX-dropped, whole run).
	for p in pa pb; do
		read -r -a c0 <<<"$(port_counts "$WORK/dpctl0-$n.txt" "$p")"
		read -r -a c1 <<<"$(port_counts "$WORK/dpctl-$n.txt" "$p")"
		drops=$((drops + c1[2] - c0[2]))
		rxp=$((rxp + c1[0] - c0[0]))
		rxb=$((rxb + c1[3] - c0[3]))
	done
	# Rounded: a port's byte and packet counters are read a moment apart.
	if [ "$rxp" -eq 0 ] || [ $(((rxb + rxp / 2) / rxp)) -ne "$size" ]; then
		echo "ovs-compare: $kind: OVS received ${rxp} frames, not of $size bytes (${rxb} bytes)" >&2
		ovs_cyc=ERR
	fi
	local tpd
	tpd=$(sed -n 's/.*TX-dropped: *\([0-9]*\).*/\1/p' "$WORK/a.log" | tail -n1)
	drops=$((drops + ${tpd:-0}))
	vsctl del-port br0 pa -- del-port br0 pb
	awk -v k="$kind" -v s="$size" -v oc="${ovs_cyc:-ERR}" -v op="${ovs_pkts:-0}" -v cc="${ctr_cyc:-ERR}" \
		-v d="$drops" -v secs="$SECS" -v t0="$t0" -v t1="$t1" -v pl="$(placement "$t0" "$t1")" \
		'BEGIN { printf "%s %s %s %.2f %s %d %d %d %s\n", k, s, oc, op / secs / 1e6, cc, d, t0, t1, pl }'
}

ovs_start
vsctl add-br br0 -- set bridge br0 datapath_type=netdev
echo "ovs-compare: $($VSWITCHD --version | head -n1), ${ROUNDS} rounds of ${SECS} s, sizes $SIZES, placement pmd1/ctr0, containers $([ "${VECRING_BENCH_NO_LXC:-0}" = 1 ] && echo "on the host" || echo "in LXC")" >&2
if [ "$SHAPE" = loop ]; then
	echo "# kind size ovs_cycles/pkt ovs_rx_Mpps ctr_cycles/pkt dropped c2c_before_ns c2c_after_ns placement"
	HEAD="| size | port | OVS cycles/pkt | OVS rx M pps | container cycles/pkt | frames dropped | c2c ns before | c2c ns after |"
else
	echo "# kind size ovs_cycles/pkt ovs_rx_Mpps gen_cycles/pkt rx_cycles/pkt delivered_Mpps c2c_before_ns c2c_after_ns placement"
	HEAD="| size | port | OVS cycles/pkt | OVS rx M pps | generator cycles/pkt | receiver cycles/pkt | delivered M pps | c2c ns before | c2c ns after |"
fi
n=0
for ((r = 1; r <= ROUNDS; r++)); do
	for size in $SIZES; do
		for kind in "${KINDS[@]}"; do
			# OVS gives a memif port no MTU: "does not support MTU
			# configuration, max packet size supported is 1500".
			if [ "$kind" = memif ] && [ "$size" -gt 1518 ]; then
				[ "$r" = 1 ] && echo "ovs-compare: memif left out at $size bytes: OVS cannot raise a memif port's MTU" >&2
				continue
			fi
			n=$((n + 1))
			if [ "$SHAPE" = loop ]; then
				line=$(run_loop "$kind" "$size" "$n")
			else
				line=$(run "$kind" "$size" "$n")
			fi
			echo "$line" | tee -a "$WORK/results"
		done
	done
done

# Medians and ranges per placement, kind and size; moved runs are left out.
for pl in near far; do
	grep -q " $pl\$" "$WORK/results" || continue
	echo
	echo "placement $pl (c2c round trip $([ $pl = near ] && echo "under" || echo "at least") $C2C_FAR ns before and after), runs: $(grep -c " $pl\$" "$WORK/results")"
	echo "$HEAD"
	echo "$HEAD" | sed 's/[^|]*|/---|/g; s/^---//'
	for size in $SIZES; do
		for kind in "${KINDS[@]}"; do
			awk -v k="$kind" -v s="$size" -v pl="$pl" '
				# A run that failed a check (ERR) is left out.
				$1 == k && $2 == s && $3 != "ERR" && $NF == pl { r = n + 0; for (c = 3; c < NF; c++) v[c, r] = $c; nf = NF - 1; n = r + 1 }
				function med(c,   i, j, t, a) {
					for (i = 0; i < n; i++) a[i] = v[c, i] + 0
					for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
					return sprintf("%.1f (%.1f-%.1f)", (n % 2) ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2, a[0], a[n - 1])
				}
				END { if (n) { printf "| %s | %s |", s, k; for (c = 3; c <= nf; c++) printf " %s |", med(c); printf "\n" } }
			' "$WORK/results"
		done
	done
done
moved=$(grep -c -E " (moved|unknown)\$" "$WORK/results" || true)
[ "$moved" -eq 0 ] || echo "ovs-compare: $moved runs left out: the placement moved during the run (or core-latency is not built)" >&2
