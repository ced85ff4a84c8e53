#!/usr/bin/env bash
# The four-link smoke test vecring was first measured with, scripted: one
# pktgen-dpdk on the host, the masters of four eth_vecring links, and one in
# an LXC container, their slaves; frames of 64 and 1514 bytes (pktgen's
# sizes, with the FCS: 60 and 1510 bytes on the link), host -> container
# first, then both ways at once. The same runs with dpdk-testpmd (txonly ->
# rxonly one way, flowgen on both ends both ways, one forwarding lcore a
# link) follow, the two generators alternating in one invocation. Per run:
# each link's rate and the total (frames received, Mpps and Gbit/s of frame
# bytes without FCS), and what the generators cost: the CPU time both
# processes used over the run, per frame received (both generators poll,
# so this is the machine's CPUs divided by the rate).
#
#   benches/pktgen-smoke.sh [--seconds N] [--rounds R]
#
# N: seconds each run sends (default 5); R: rounds of pktgen then testpmd
# (default 1). Run as root after scripts/test.sh (or scripts/setup.sh,
# scripts/build-pmd.sh /usr and scripts/pktgen.sh /usr, with
# VECRING_PKTGEN_SOURCES naming pktgen's tarballs).
#
# Placement: pktgen takes two lcores a link (`-m "[1:2].0,[3:4].1,[5:6].2,[7:8].3"`,
# receive and transmit apart) and its main lcore, nine on each side; testpmd
# one forwarding lcore a link and its main lcore. EAL maps every lcore of
# the host's generator onto CPU 0 and every lcore of the container's onto
# CPU 1 (`--lcores`): the machine this was written on has two CPUs and one
# NUMA node, so all four links share one CPU on each side and `socket=0`.
# On a machine with two NUMA nodes and more CPUs, set VECRING_SMOKE_LCORES_HOST
# and VECRING_SMOKE_LCORES_CTR (EAL --lcores values for 9 lcores, 0-8) and
# VECRING_SMOKE_SOCKETS (four socket= values, e.g. "0 0 1 1": two links a
# node).
#
# Both generators run with a terminal (script(1)), as the tests run
# pktgen: without one pktgen 23.03 does not refresh its port counters, and
# a pktgen that only receives reported a run's frames a run late.
#
# Memory: pktgen 23.03 makes five pools of 24,576 10-KiB mbufs a port
# (1.25 GB a port): both generators run in ordinary pages (--no-huge), about
# 2.8 GB resident each for four ports; the links' rings are in hugepages.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

SECONDS_RUN=5 ROUNDS=1
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECONDS_RUN=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	*) echo "usage: benches/pktgen-smoke.sh [--seconds N] [--rounds R]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "pktgen-smoke: needs root (LXC, EAL)" >&2; exit 1; }

LC_HOST=${VECRING_SMOKE_LCORES_HOST:-(0-8)@0}
LC_CTR=${VECRING_SMOKE_LCORES_CTR:-(0-8)@1}
read -ra SOCKETS <<<"${VECRING_SMOKE_SOCKETS:-0 0 0 0}"
PG_MAP=${VECRING_SMOKE_PKTGEN_MAP:-[1:2].0,[3:4].1,[5:6].2,[7:8].3}
PKTGEN=${PKTGEN:-$(bash "$ROOT/scripts/pktgen.sh" /usr)}
TESTPMD=$(command -v dpdk-testpmd)
WORK=$(mktemp -d /tmp/vecring-smoke.XXXXXX)
RUN_DIR=$WORK/run
DOM=smoke
PIDS=()

log() { echo "pktgen-smoke: $*" >&2; }
cleanup() {
	local p c
	for p in "${PIDS[@]}"; do
		for c in $(pgrep -P "$p" 2>/dev/null) "$p"; do kill -9 "$c" 2>/dev/null || true; done
	done
	wait 2>/dev/null || true
	rm -rf /var/run/dpdk/vrsmoke_*_$$
	[ "${VECRING_SMOKE_KEEP:-0}" = 1 ] && log "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

host_mac() { printf '02:00:00:00:61:%02x' "$1"; }
ctr_mac() { printf '02:00:00:00:62:%02x' "$1"; }
vdevs() { # SIDE: the four --vdev options of the host (m) or container (s)
	local i
	for i in 0 1 2 3; do
		if [ "$1" = m ]; then
			echo "--vdev=eth_vecring$i,domain=$DOM,link=l$i,run_dir=$RUN_DIR,master=true,mac=$(host_mac $i),socket=${SOCKETS[$i]}"
		else
			echo "--vdev=eth_vecring$i,domain=$DOM,link=l$i,mac=$(ctr_mac $i)"
		fi
	done
}

# The container: an image of pktgen and testpmd (scripts/image.sh; /bin/sh
# for pktgen's popen of lspci, timeout for the watchdog), the domain
# directory and a control directory bind-mounted.
mkdir -p "$RUN_DIR/$DOM" "$WORK/ctl"
bash "$ROOT/scripts/image.sh" dpdk "$WORK/image" --program "$PKTGEN" --program "$TESTPMD" \
	--add /bin/sh --add /usr/bin/timeout >/dev/null
ln -s "$(basename "$(readlink -f /bin/sh)")" "$WORK/image/bin/sh"
cat >"$WORK/lxc.conf" <<EOF
lxc.uts.name = vecring-smoke
lxc.rootfs.path = dir:$WORK/image
lxc.net.0.type = empty
lxc.console.path = none
lxc.mount.auto = proc:rw sys:rw
lxc.autodev = 1
lxc.mount.entry = $RUN_DIR/$DOM run/vecring/$DOM none bind,create=dir 0 0
lxc.mount.entry = $WORK/ctl ctl none bind,create=dir 0 0
EOF

# start SIDE NAME PROGRAM ARGS...: a generator on the host (m) or in the
# container (s), under a watchdog, stdin from WORK/NAME.in (a FIFO).
start() {
	local side=$1 name=$2 prog=$3 fd
	shift 3
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	local lc=$LC_HOST
	[ "$side" = s ] && lc=$LC_CTR
	local cmd=(timeout --foreground --kill-after=5 600 "$prog" --no-pci --no-huge -m "$MEM" --no-shconf
		--file-prefix="vrsmoke_${name}_$$" --lcores="$lc")
	mapfile -t vd < <(vdevs "$side")
	cmd+=("${vd[@]}" -- "$@")
	if [ "$side" = s ]; then
		cmd[4]=/bin/$(basename "$prog")
		cmd=(timeout --foreground --kill-after=5 660 lxc-execute -n "vrsmoke-$name-$$" -f "$WORK/lxc.conf" -- "${cmd[@]}")
	fi
	# A terminal for the generator (script(1)), as tests/dpdk/pktgen/lib.sh
	# gives pktgen; every timeout on the way in its foreground.
	script -qefc "$(printf '%q ' "${cmd[@]}")" /dev/null <"$WORK/$name.in" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "PID_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "FD_$name" '%s' "$fd"
}
send() { local fd=FD_$1; echo "$2" >&"${!fd}"; }
wait_log() { # NAME REGEX COUNT SECONDS
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		[ "$(grep -Eac -- "$2" "$WORK/$1.log" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.1
	done
	log "timeout waiting for /$2/ in $1.log"
	return 1
}
# cpu_ticks NAME: CPU time (clock ticks) of NAME's generator process.
cpu_ticks() {
	local p
	for p in $(pgrep -f "vrsmoke_${1}_$$"); do
		case $(cat "/proc/$p/comm" 2>/dev/null) in
		pktgen | dpdk-testpmd) awk '{print $14 + $15}' "/proc/$p/stat"; return ;;
		esac
	done
	echo 0
}
HZ=$(getconf CLK_TCK)

RESULTS=$WORK/results.txt
: >"$RESULTS"
# row GEN DIR SIZE R0 R1 R2 R3 BYTES CPU_TICKS: one result line (frames
# received per link, bytes received in all, CPU ticks of both generators).
row() { echo "$*" >>"$RESULTS"; }

# --- pktgen ---------------------------------------------------------------

PG_ROUND=0
pg_go() { # NAME COMMAND
	echo "$2" >"$WORK/ctl/$1.go.tmp"
	mv "$WORK/ctl/$1.go.tmp" "$WORK/ctl/$1/go.$PG_ROUND"
}
pg_wait() { # NAME
	local i
	for ((i = 0; i < 1200; i++)); do
		[ -f "$WORK/ctl/$1/done.$PG_ROUND" ] && return 0
		sleep 0.1
	done
	log "no report of round $PG_ROUND from $1"
	return 1
}
# pg_rx NAME ROUND PORT KEY
pg_val() { awk -v p="$3" -v k="$4" '$1 == "port" && $2 == p { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$WORK/ctl/$1/done.$2"; }

run_pktgen() {
	MEM=6000
	local n
	for n in pgh pgc; do
		mkdir -p "$WORK/ctl/$n"
		rm -f "$WORK/ctl/$n"/*
		local ctl=$WORK/ctl/$n
		[ "$n" = pgc ] && ctl=/ctl/$n
		{ echo "CTL = \"$ctl\""; cat "$ROOT/tests/dpdk/pktgen/driver.lua"; } >"$WORK/ctl/$n/driver.lua"
	done
	PG_ROUND=0
	start s pgc "$PKTGEN" -m "$PG_MAP" -f /ctl/pgc/driver.lua
	start m pgh "$PKTGEN" -m "$PG_MAP" -f "$WORK/ctl/pgh/driver.lua"
	wait_log pgh "link up" 4 90 && wait_log pgc "link up" 4 90 || { log "pktgen: links not up"; return 1; }
	# Round 1 warms both (tests/dpdk/pktgen/driver.lua: a pktgen's first
	# start prepares its frames, seconds, before it sends any); round 2,
	# idle, is the count before the measured rounds.
	PG_ROUND=1
	pg_go pgh "warm 0-3 64 $(ctr_mac 0) $(ctr_mac 1) $(ctr_mac 2) $(ctr_mac 3)"
	pg_go pgc "warm 0-3 64 $(host_mac 0) $(host_mac 1) $(host_mac 2) $(host_mac 3)"
	pg_wait pgh && pg_wait pgc || return 1
	PG_ROUND=2
	pg_go pgh idle
	pg_go pgc idle
	pg_wait pgh && pg_wait pgc || return 1
	local dir size ms=$((SECONDS_RUN * 1000)) h0 c0 h1 c1 t0 t1 p rx bytes
	for dir in one both; do
		for size in 64 1514; do
			PG_ROUND=$((PG_ROUND + 1))
			h0=$(cpu_ticks pgh) c0=$(cpu_ticks pgc) t0=$(date +%s%N)
			pg_go pgh "send 0-3 $size $ms $(ctr_mac 0) $(ctr_mac 1) $(ctr_mac 2) $(ctr_mac 3)"
			if [ "$dir" = both ]; then
				pg_go pgc "send 0-3 $size $ms $(host_mac 0) $(host_mac 1) $(host_mac 2) $(host_mac 3)"
			else
				pg_wait pgh
				pg_go pgc idle
			fi
			pg_wait pgh && pg_wait pgc || return 1
			h1=$(cpu_ticks pgh) c1=$(cpu_ticks pgc) t1=$(date +%s%N)
			local line=("pktgen" "$dir" "$size")
			bytes=0
			for p in 0 1 2 3; do
				rx=$(($(pg_val pgc $PG_ROUND $p ipackets) - $(pg_val pgc $((PG_ROUND - 1)) $p ipackets)))
				bytes=$((bytes + $(pg_val pgc $PG_ROUND $p ibytes) - $(pg_val pgc $((PG_ROUND - 1)) $p ibytes)))
				if [ "$dir" = both ]; then
					rx=$((rx + $(pg_val pgh $PG_ROUND $p ipackets) - $(pg_val pgh $((PG_ROUND - 1)) $p ipackets)))
					bytes=$((bytes + $(pg_val pgh $PG_ROUND $p ibytes) - $(pg_val pgh $((PG_ROUND - 1)) $p ibytes)))
				fi
				line+=("$rx")
			done
			# The CPU time of the whole round (sending, then pktgen's
			# settling), scaled to the sending time: both poll throughout.
			line+=("$bytes" "$(((h1 - h0 + c1 - c0) * ms * 1000000 / (t1 - t0)))" "$ms")
			row "${line[@]}"
		done
	done
	PG_ROUND=$((PG_ROUND + 1))
	pg_go pgh quit
	pg_go pgc quit
	wait "$PID_pgh" "$PID_pgc" 2>/dev/null || true
}

# --- testpmd --------------------------------------------------------------

# port_rx NAME: "frames bytes" received on each port (0-3), one line a
# port, from the generator's DPDK telemetry socket (testpmd's own output is
# block-buffered into its log).
port_rx() {
	local p
	p=$(pgrep -f "vrsmoke_${1}_$$" | while read -r q; do
		[ "$(cat "/proc/$q/comm" 2>/dev/null)" = dpdk-testpmd ] && echo "$q"
	done | head -n1)
	timeout 10 python3 - "/proc/$p/root/var/run/dpdk/vrsmoke_${1}_$$/dpdk_telemetry.v2" <<-'EOF'
		import json, socket, sys
		s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
		s.connect(sys.argv[1])
		s.recv(1024)
		for port in range(4):
		    s.send(b"/ethdev/stats,%d" % port)
		    st = json.loads(s.recv(1 << 20))["/ethdev/stats"]
		    print(st["ipackets"], st["ibytes"])
	EOF
}

run_testpmd() {
	MEM=1024
	start s tpc "$TESTPMD" -i --nb-cores=4 --port-topology=loop --total-num-mbufs=32768
	wait_log tpc "waiting for peer" 4 60 || return 1
	start m tph "$TESTPMD" -i --nb-cores=4 --port-topology=loop --total-num-mbufs=32768
	wait_log tpc "link up" 4 60 || { log "testpmd: links not up"; return 1; }
	sleep 1
	local i
	for i in 0 1 2 3; do
		send tph "set eth-peer $i $(ctr_mac $i)"
		send tpc "set eth-peer $i $(host_mac $i)"
	done
	local dir size h0 c0 h1 c1 p
	for dir in one both; do
		for size in 64 1514; do
			for n in tph tpc; do
				send $n "set txpkts $((size - 4))"
				send $n "clear port stats all"
			done
			if [ "$dir" = one ]; then
				send tph "set fwd txonly"
				send tpc "set fwd rxonly"
			else
				send tph "set fwd flowgen"
				send tpc "set fwd flowgen"
			fi
			send tpc start
			sleep 0.5
			h0=$(cpu_ticks tph) c0=$(cpu_ticks tpc)
			send tph start
			sleep "$SECONDS_RUN"
			send tph stop
			h1=$(cpu_ticks tph) c1=$(cpu_ticks tpc)
			sleep 0.5
			send tpc stop
			sleep 0.5
			local line=("testpmd" "$dir" "$size") bytes=0 f b fh bh
			mapfile -t rc < <(port_rx tpc)
			[ "$dir" = both ] && mapfile -t rh < <(port_rx tph)
			for p in 0 1 2 3; do
				read -r f b <<<"${rc[$p]}"
				if [ "$dir" = both ]; then
					read -r fh bh <<<"${rh[$p]}"
					f=$((f + fh)) b=$((b + bh))
				fi
				line+=("$f")
				bytes=$((bytes + b))
			done
			line+=("$bytes" "$((h1 - h0 + c1 - c0))" "$((SECONDS_RUN * 1000))")
			row "${line[@]}"
		done
	done
	send tph quit
	send tpc quit
	wait "$PID_tph" "$PID_tpc" 2>/dev/null || true
}

for ((r = 1; r <= ROUNDS; r++)); do
	log "round $r: pktgen"
	run_pktgen || log "pktgen run failed (logs: $WORK)"
	log "round $r: testpmd"
	run_testpmd || log "testpmd run failed (logs: $WORK)"
done

# The table: per run, each link's Mpps, the total Mpps and Gbit/s, and the
# CPU time of both generators per frame received.
echo "pktgen-smoke: $(nproc) CPUs, $(lscpu | awk -F: '/^NUMA node\(s\)/ {gsub(/ /, "", $2); print $2}') NUMA node(s), $SECONDS_RUN s a run, $ROUNDS round(s); $PKTGEN and $TESTPMD on DPDK $(pkg-config --modversion libdpdk)"
echo
echo "| generator | direction | frame | link 0 Mpps | link 1 Mpps | link 2 Mpps | link 3 Mpps | total Mpps | Gbit/s | CPU ns/frame |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -v hz="$HZ" '{
	ms = $10; t = 0
	for (i = 4; i <= 7; i++) t += $i
	mp = ""
	for (i = 4; i <= 7; i++) mp = mp sprintf(" %.2f |", $i / ms / 1000)
	dir = ($2 == "one") ? "host -> ctr" : "both ways"
	cpu = (t > 0) ? sprintf("%.0f", $9 / hz * 1e9 / t) : "-"
	printf "| %s | %s | %d |%s %.2f | %.2f | %s |\n", $1, dir, $3, mp, t / ms / 1000, $8 * 8 / ms / 1e6, cpu
}' "$RESULTS"
