#!/usr/bin/env bash
# `vecring tap` against a veth pair, the kernel's own way to join two
# network namespaces, in the same run: iperf3 TCP with 1 and 4 streams,
# UDP with 64-byte frames (18 bytes of payload; 60 bytes on the link, 64
# with a wire's FCS) at the rate the sender manages, and ping's round
# trip. Each kind gets two namespaces of its own, set up once:
#   veth         a veth pair (MTU 1500, the kernel's defaults: TSO, GRO)
#   veth-9202    the same with the tap's MTU
#   tap          a tap at each end of a link (MTU 9202, plain Ethernet),
#                sleeping as soon as it finds nothing (--poll-us 0)
#   tap-offload  the same with --offload (virtio-net header: checksums and
#                TCP super-frames of up to 9206 bytes cross whole)
#   tap-poll     tap looking for frames 200 us before sleeping (--poll-us 200,
#                the default; TAP_POLL_US sets another)
#   tap-offload-q2  tap-offload with 2 queue pairs (a thread each per end;
#                not in the default list)
#   KIND-b       any tap kind run by another build of the tool, $VECRING_B
#                (an A/B of two builds in one run; not in the default list)
# and the kinds alternate within each round, so that whatever else the
# machine does falls on all of them alike.
#
# Usage: benches/tap-compare.sh [ROUNDS] [SECONDS]
#        (as root, after cargo build --release -p vecring-cli and
#        scripts/setup.sh for iperf3; default 3 rounds of 5 s)
# Environment: TAP_COMPARE_KINDS (default "veth veth-9202 tap tap-offload
# tap-poll"), TAP_MTU (every tap's --mtu; by default the largest the
# link's frames carry, which another build may set otherwise),
# VECRING (the tool; default target/release/vecring), VECRING_B (the
# tool of the -b kinds), TAP_POLL_US (tap-poll's --poll-us; TAP_POLL_US_B
# that of tap-poll-b), TAP_COMPARE_OUT
# (where the logs go; default benches/results/runs/<date>-tap),
# TAP_COMPARE_PERF=1 (profile both CPUs with perf during each TCP 1-stream
# run and print where their time went: benches/cpu-split.sh).
# Prints each run's iperf3 interval lines and totals, one line per run,
# and a table of medians with ranges (min-max) and the ratio to veth's.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-3}
SECS=${2:-5}
TOOL=${VECRING:-$ROOT/target/release/vecring}
# shellcheck disable=SC2206
KINDS=(${TAP_COMPARE_KINDS:-veth veth-9202 tap tap-offload tap-poll})
OUT=${TAP_COMPARE_OUT:-$ROOT/benches/results/runs/$(date -u +%Y-%m-%d-%H%M)-tap}
P=vrcmp$$
RUN=$(mktemp -d /tmp/vecring-tapcmp.XXXXXX)

[ "$(id -u)" = 0 ] || { echo "tap-compare: run as root" >&2; exit 1; }
for t in iperf3 ping ip; do
	command -v "$t" >/dev/null || { echo "tap-compare: $t missing (scripts/setup.sh)" >&2; exit 1; }
done
[ -x "$TOOL" ] || { echo "tap-compare: $TOOL missing (cargo build --release -p vecring-cli)" >&2; exit 1; }
mkdir -p "$OUT"

PIDS=()
NSS=()
cleanup() {
	local p n
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for n in "${NSS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
	rm -rf "$RUN"
}
trap cleanup EXIT

netns() {
	ip netns add "$1"
	NSS+=("$1")
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ip netns exec "$1" ip link set lo up
}

# The client's namespace, the server's, and the server's address, per kind.
declare -A CLIENT SERVER ADDR TAPS
i=0
for kind in "${KINDS[@]}"; do
	i=$((i + 1))
	a=$P-${i}a b=$P-${i}b
	netns "$a"
	netns "$b"
	CLIENT[$kind]=$a SERVER[$kind]=$b ADDR[$kind]=10.91.$i.2
	case $kind in
	veth | veth-9202)
		ip link add "vtc${i}a" netns "$a" type veth peer name "vtc${i}b" netns "$b"
		ip -n "$a" link set "vtc${i}a" name eth0
		ip -n "$b" link set "vtc${i}b" name eth0
		if [ "$kind" = veth-9202 ]; then
			ip -n "$a" link set eth0 mtu 9202
			ip -n "$b" link set eth0 mtu 9202
		fi
		;;
	tap | tap-offload | tap-poll | tap-offload-q2 | tap-b | tap-offload-b | tap-poll-b | tap-offload-q2-b)
		base=${kind%-b} tool=$TOOL
		if [ "$base" != "$kind" ]; then
			tool=${VECRING_B:?"the -b kinds need VECRING_B, another build of the tool"}
		fi
		extra=(--poll-us 0)
		[ "$base" = tap-offload ] && extra=(--offload --poll-us 0)
		poll=${TAP_POLL_US:-200}
		[ "$base" != "$kind" ] && poll=${TAP_POLL_US_B:-$poll}
		[ "$base" = tap-poll ] && extra=(--poll-us "$poll")
		[ "$base" = tap-offload-q2 ] && extra=(--offload --poll-us 0 --queues 2)
		[ -z "${TAP_MTU:-}" ] || extra+=(--mtu "$TAP_MTU")
		ip netns exec "$a" "$tool" -q tap --role master --domain "$P" --link "l$i" --run-dir "$RUN" \
			--ifname eth0 "${extra[@]}" 2>"$OUT/$kind-master.log" &
		PIDS+=($!)
		TAPS[$kind]="$!"
		ip netns exec "$b" "$tool" -q tap --role slave --domain "$P" --link "l$i" --run-dir "$RUN" \
			--ifname eth0 "${extra[@]}" 2>"$OUT/$kind-slave.log" &
		PIDS+=($!)
		TAPS[$kind]+=" $!"
		for _ in $(seq 100); do
			[ "$(ip netns exec "$a" cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ] &&
				[ "$(ip netns exec "$b" cat /sys/class/net/eth0/carrier 2>/dev/null)" = 1 ] && break
			sleep 0.1
		done
		;;
	*) echo "tap-compare: unknown kind '$kind' (veth veth-9202 tap tap-offload tap-poll tap-offload-q2, each tap kind with -b)" >&2; exit 2 ;;
	esac
	ip -n "$a" addr add "10.91.$i.1/24" dev eth0
	ip -n "$b" addr add "10.91.$i.2/24" dev eth0
	ip -n "$a" link set eth0 up
	ip -n "$b" link set eth0 up
	ip netns exec "$b" iperf3 -s -B "10.91.$i.2" >/dev/null 2>&1 &
	PIDS+=($!)
done
sleep 1

# CPU seconds (user and system) the kind's tap processes used so far.
tap_cpu() {
	local p t=0
	for p in ${TAPS[$1]:-}; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f\n", t / hz }'
}

# iperf3 from the kind's client to its server; prints its text output
# (interval lines and totals) and keeps it.
iperf() {
	local kind=$1 name=$2
	shift 2
	timeout $((SECS + 30)) ip netns exec "${CLIENT[$kind]}" iperf3 -c "${ADDR[$kind]}" -t "$SECS" -i 1 -f g "$@" \
		| tee "$OUT/$name.txt"
}

# The receiver's bitrate (Gbit/s) of an iperf3 TCP run: its SUM line with
# several streams.
tcp_rate() {
	awk '/receiver/ { r = $0 } END { n = split(r, f, " "); for (i = 1; i <= n; i++) if (f[i] == "Gbits/sec") print f[i - 1] }' "$1"
}

# Datagrams per second the receiver got in an iperf3 UDP run, from its
# "lost/total" and seconds.
udp_pps() {
	awk '/receiver/ { r = $0 } END {
		n = split(r, f, " ")
		for (i = 1; i <= n; i++) {
			if (f[i] ~ /^[0-9.]+-[0-9.]+$/) { split(f[i], t, "-"); secs = t[2] - t[1] }
			if (f[i] ~ /^[0-9]+\/[0-9]+$/) { split(f[i], lt, "/"); got = lt[2] - lt[1] }
		}
		printf "%.0f\n", got / secs
	}' "$1"
}

# ping's median round trip in microseconds over 200 pings.
ping_median() {
	local kind=$1 name=$2
	ip netns exec "${CLIENT[$kind]}" ping -c 200 -i 0.01 -W 1 "${ADDR[$kind]}" > "$OUT/$name.txt"
	awk -F'time=' '/time=/ { split($2, t, " "); print t[1] * 1000 }' "$OUT/$name.txt" | sort -n \
		| awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

RESULTS=$OUT/runs.tsv
printf 'round\tkind\ttcp1_gbps\ttcp4_gbps\tudp64_pps\tping_med_us\ttap_cpu_s\n' > "$RESULTS"
echo "tap-compare: $ROUNDS rounds of ${SECS} s, kinds ${KINDS[*]}; load $(cut -d' ' -f1-3 /proc/loadavg); logs in $OUT"
for round in $(seq "$ROUNDS"); do
	for kind in "${KINDS[@]}"; do
		echo "=== round $round, $kind"
		c0=$(tap_cpu "$kind")
		echo "--- TCP, 1 stream"
		if [ "${TAP_COMPARE_PERF:-0}" = 1 ]; then
			perf record -q -a -e cpu-clock -F 997 -o "$OUT/r$round-$kind-tcp1.perf" -- sleep "$SECS" 2>/dev/null &
			perf_pid=$!
			iperf "$kind" "r$round-$kind-tcp1"
			wait "$perf_pid" || true
			echo "CPU, TCP 1 stream, $kind:"
			bash "$ROOT/benches/cpu-split.sh" "$OUT/r$round-$kind-tcp1.perf"
		else
			iperf "$kind" "r$round-$kind-tcp1"
		fi
		echo "--- TCP, 4 streams"
		iperf "$kind" "r$round-$kind-tcp4" -P 4
		echo "--- UDP, 18-byte payloads (64-byte frames)"
		iperf "$kind" "r$round-$kind-udp64" -u -l 18 -b 0
		c1=$(tap_cpu "$kind")
		rtt=$(ping_median "$kind" "r$round-$kind-ping")
		t1=$(tcp_rate "$OUT/r$round-$kind-tcp1.txt")
		t4=$(tcp_rate "$OUT/r$round-$kind-tcp4.txt")
		u=$(udp_pps "$OUT/r$round-$kind-udp64.txt")
		cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f\n", b - a }')
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$kind" "$t1" "$t4" "$u" "$rtt" "$cpu" >> "$RESULTS"
		echo "run: round $round $kind: TCP 1 stream $t1 Gbit/s, 4 streams $t4 Gbit/s, UDP 64 B $u pps, ping median $rtt us, taps' CPU ${cpu} s"
	done
done
echo "tap-compare: load after $(cut -d' ' -f1-3 /proc/loadavg)"

# Medians with ranges, and the ratio of each kind's median to veth's.
echo
echo "Medians over $ROUNDS rounds [min-max]; ratio to veth's median:"
awk -F'\t' '
	NR == 1 { for (i = 3; i <= NF; i++) name[i] = $i; next }
	{ kinds[$2] = 1; order[$2] = order[$2] ? order[$2] : NR; for (i = 3; i <= NF; i++) { n = ++cnt[$2, i]; val[$2, i, n] = $i } }
	function med(k, i,   n, a, j, t, x, y) {
		n = cnt[k, i]
		for (j = 1; j <= n; j++) a[j] = val[k, i, j]
		for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
		lo[k, i] = a[1]; hi[k, i] = a[n]
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		printf "%-12s", "kind"
		for (i = 3; i <= 7; i++) printf " %-30s", name[i]
		printf "\n"
		for (k in kinds) for (i = 3; i <= 7; i++) m[k, i] = med(k, i)
		for (k in kinds) {
			printf "%-12s", k
			for (i = 3; i <= 7; i++) {
				r = ("veth" in kinds && m["veth", i] > 0 && i < 7) ? sprintf(" x%.2f", m[k, i] / m["veth", i]) : ""
				printf " %-30s", sprintf("%g [%g-%g]%s", m[k, i], lo[k, i], hi[k, i], r)
			}
			printf "\n"
		}
	}' "$RESULTS" | sort
