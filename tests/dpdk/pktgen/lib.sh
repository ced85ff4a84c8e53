# shellcheck shell=bash
# pktgen-dpdk on both ends of a link, driven by driver.lua (-f) through a
# control directory: the sessions, their rounds, and pktgen's counts
# checked against eth_vecring's xstats read through DPDK telemetry.
# Sourced by tests/dpdk/cases/pktgen.sh (LXC),
# tests/containers/docker_pktgen.sh (Docker) and
# tests/containers/podman/pktgen.sh (rootless Podman), after
# tests/dpdk/lib.sh; the sourcing script sets ROOT, WORK, WATCHDOG, PIDS and
# log/pass/fail.

# EAL memory of each pktgen: pktgen 23.03 makes five pools of 24,576
# mbufs of 10 KiB for each port (1.25 GB; 625 of the 1,024 hugepages
# scripts/setup.sh reserves), so both ends run in ordinary pages, as a
# container without hugepages does (docs/dpdk-container.md); about 0.7 GB
# of it is touched. The link itself is in hugepages either way.
PG_MEM=(--no-huge -m 1600 --no-shconf)
# More EAL options of the next start_pktgen (a case sets and clears it).
PG_EAL=()

PG_HOST_MAC=02:00:00:00:50:01
PG_CTR_MAC=02:00:00:00:50:02

# pktgen_bin: the pktgen for this DPDK (scripts/pktgen.sh builds it once).
pktgen_bin() {
	if [ -n "${PKTGEN:-}" ]; then
		echo "$PKTGEN"
		return
	fi
	bash "$ROOT/scripts/pktgen.sh" "${VECRING_DPDK:-/usr}"
}

# start_pktgen NAME CPU VDEV_ARGS CTL [LAUNCHER...]: pktgen with one port
# (eth_vecring0, VDEV_ARGS), its two lcores (the main one and the one of
# port 0) on CPU, running driver.lua with CTL/ as its control directory.
# With a LAUNCHER (a command that runs its arguments in a container of
# pg_image's image, CTL bound at /ctl), pktgen is the image's /bin/pktgen
# run through it. Stdout and stderr go to WORK/NAME.log.
start_pktgen() {
	local name=$1 cpu=$2 vdev=$3 ctl=$4 in_ctl=$4 exe=$PG_EXE
	shift 4
	[ $# -gt 0 ] && in_ctl=/ctl exe=/bin/pktgen
	{
		echo "CTL = \"$in_ctl\""
		cat "$ROOT/tests/dpdk/pktgen/driver.lua"
	} >"$ctl/driver.lua"
	local pg=("$@" timeout --foreground --kill-after=5 "$WATCHDOG" "$exe" --no-pci
		--file-prefix="vrtest_${name}_$$" --lcores="(0,1)@$cpu" "${PG_MEM[@]}" "${PG_EAL[@]}"
		--vdev="eth_vecring0,$vdev" -- -j -m 1.0 -f "$in_ctl/driver.lua")
	# pktgen from 24.10 on leaves at start (`scrn_constructor: tcgetattr
	# failed`) unless its standard input is a terminal: script(1) gives it
	# one (in a container too: LXC passes it on, Docker's -t makes one),
	# whose input is a FIFO this script holds open until pktgen has left.
	# Every `timeout` on the way to pktgen runs with --foreground: a plain
	# `timeout` puts its command in a process group of its own, in the
	# background of that terminal, and pktgen 23.03 without TERM set (as
	# under a CI runner) then stops at start on SIGTTOU before its ports
	# start.
	local fd
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	script -qefc "$(printf '%q ' "${pg[@]}")" /dev/null <"$WORK/$name.in" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "PID_$name" '%s' "$!"
	printf -v "TREE_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "FD_$name" '%s' "$fd"
	printf -v "CTL_$name" '%s' "$ctl"
}

# pg_link_up WHAT: wait (60 s each) for the link to come up in both
# sessions, the container's (pgc) and the host's (pgh); when it does not,
# each pktgen's process state, the start of its log and the container
# runtime's warnings go to the output, so that a run elsewhere says why.
pg_link_up() {
	local what=$1 s
	if wait_for pgc "VECRING: eth_vecring0: link up" 1 60 && wait_for pgh "VECRING: eth_vecring0: link up" 1 60; then
		pass "$what: link up between the host's pktgen and the container's"
		return 0
	fi
	fail "$what: link did not come up"
	local p
	for s in pgh pgc; do
		# A pktgen stopped by a signal (T) or waiting in the kernel says
		# more than its log.
		if p=$(pg_pid "$s"); then
			log "$what: $s's pktgen: $(ps -o pid=,stat=,wchan:32= -p "$p")"
		else
			log "$what: $s has no pktgen process"
		fi
		# Its log up to the screen, where EAL's and the driver's lines are.
		log "$what: $s.log:"
		tr -d '\r' <"$WORK/$s.log" | sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' |
			grep -aE 'EAL|VECRING|TELEMETRY|Lua|rror|anic|ailed|not found' | head -n 30 | sed 's/^/    /'
	done
	[ -s "$WORK/pgc.lxc.log" ] && { log "$what: pgc.lxc.log:"; grep -E 'ERROR|WARN' "$WORK/pgc.lxc.log" | tail -n 10 | sed 's/^/    /'; }
	return 1
}

# pg_pid NAME: the PID (in our namespace) of session NAME's pktgen, found
# below TREE_NAME (the session's script(1); a container's first process
# where the container is not started below it, as Docker's are).
pg_pid() {
	local treevar=TREE_$1 p
	for p in $(descendants "${!treevar}"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = pktgen ] && { echo "$p"; return 0; }
	done
	return 1
}

# pg_go NAME N COMMAND: give session NAME round N's command.
pg_go() {
	local ctlvar=CTL_$1
	echo "$3" >"${!ctlvar}/go.$2.tmp" && mv "${!ctlvar}/go.$2.tmp" "${!ctlvar}/go.$2"
}

# ctl_of NAME: session NAME's control directory.
ctl_of() {
	local ctlvar=CTL_$1
	echo "${!ctlvar}"
}

# pg_done NAME N: wait (at most 60 s) for session NAME's report of round N,
# CTL/done.N.
pg_done() {
	local ctlvar=CTL_$1 i
	for ((i = 0; i < 600; i++)); do
		[ -f "${!ctlvar}/done.$2" ] && return 0
		sleep 0.1
	done
	log "timeout waiting for $1's report of round $2"
	return 1
}

# pg_count NAME N KEY: pktgen's KEY of port 0 in session NAME's round N.
pg_count() {
	local ctlvar=CTL_$1
	awk -v k="$3" '$1 == "port" && $2 == 0 { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		"${!ctlvar}/done.$2" 2>/dev/null
}

# pg_xstats NAME: eth_vecring's xstats of session NAME's port 0 from its
# pktgen's telemetry socket, as "name value" lines, into WORK/NAME.xstats.N
# (N counting the reads).
pg_xstats() {
	local p sock
	p=$(pg_pid "$1") || { log "no pktgen process of $1"; return 1; }
	sock=/proc/$p/root/var/run/dpdk/vrtest_${1}_$$/dpdk_telemetry.v2
	timeout 10 python3 - "$sock" <<-'EOF'
		import json, socket, sys
		s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
		s.connect(sys.argv[1])
		s.recv(1024)
		s.send(b"/ethdev/xstats,0")
		for k, v in json.loads(s.recv(1 << 20))["/ethdev/xstats"].items():
		    print(k, v)
	EOF
}

# xs FILE STAT: STAT's value in an xstats file of pg_xstats.
xs() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# xs_delta NAME STAT: STAT's growth between session NAME's last two reads.
xs_delta() {
	local a b
	a=$(xs "$WORK/$1.xstats.prev" "$2")
	b=$(xs "$WORK/$1.xstats" "$2")
	is_num "$a" && is_num "$b" && echo $((b - a))
}

# xsum_delta NAME STAT...: the sum of the STATs' growths (empty if one is
# unreadable).
xsum_delta() {
	local name=$1 stat v sum=0
	shift
	for stat in "$@"; do
		v=$(xs_delta "$name" "$stat")
		is_num "$v" || return 0
		sum=$((sum + v))
	done
	echo "$sum"
}

# pg_read NAME: read session NAME's xstats, keeping the read before.
pg_read() {
	[ -f "$WORK/$1.xstats" ] && mv "$WORK/$1.xstats" "$WORK/$1.xstats.prev"
	pg_xstats "$1" >"$WORK/$1.xstats"
}

# pg_delta NAME N KEY: the growth of pktgen's KEY in session NAME's round N.
pg_delta() {
	local a b
	a=$(pg_count "$1" "$(($2 - 1))" "$3")
	b=$(pg_count "$1" "$2" "$3")
	is_num "$a" && is_num "$b" && echo $((b - a))
}

# pg_check WHAT TX RX N SIZE: round N of session TX sending frames of SIZE
# to session RX, pktgen's counts against both ends' xstats read after it.
pg_check() {
	local what=$1 tx=$2 rx=$3 n=$4 size=$5 sent bytes got drops
	sent=$(pg_delta "$tx" "$n" opackets)
	bytes=$(pg_delta "$tx" "$n" obytes)
	got=$(xs_delta "$rx" rx_good_packets)
	drops=$(xsum_delta "$rx" rx_too_large_drops rx_filtered_drops rx_scatter_nombuf_drops)
	log "$what: pktgen sent $sent frames ($bytes bytes); the receiver's driver received $got, dropped $drops"
	expect_gt "$what: pktgen sent frames" "$sent" 0
	expect_eq "$what: the sender's driver counts what pktgen counts sent" "$(xs_delta "$tx" tx_good_packets)" "$sent"
	expect_eq "$what: every frame sent received or dropped by the ring (none missing)" \
		"$( is_num "$got" && is_num "$drops" && echo $((got + drops)))" "$sent"
	expect_eq "$what: no frame dropped (MAC, size and buffers fit)" "$drops" 0
	expect_eq "$what: the receiving pktgen counts what its driver received" "$(pg_delta "$rx" "$n" ipackets)" "$got"
	expect_eq "$what: $((size - 4)) bytes a frame (pktgen's size counts the FCS)" "$bytes" "$( is_num "$sent" && echo $((sent * (size - 4))))"
	expect_eq "$what: the receiver's driver received every byte" "$(xs_delta "$rx" rx_good_bytes)" "$bytes"
}

# pg_rounds WHAT SIZE...: the rounds between session pgh (the host's
# pktgen) and pgc (the container's), whose links are up. Round 1: both
# warm (driver.lua: each pktgen's first start, which prepares its frames
# before it sends any, waited for). Round 2: both idle, the counts before
# the measured traffic (pktgen's report and the drivers' xstats). Then
# host -> container at each SIZE, then container -> host; the far end
# reports after the sender did, and pg_check checks each.
pg_rounds() {
	local what=$1 n=2 dir size tx rx mac s first
	shift
	pg_go pgh 1 "warm 0 64 $PG_CTR_MAC"
	pg_go pgc 1 "warm 0 64 $PG_HOST_MAC"
	if ! pg_done pgh 1 || ! pg_done pgc 1; then
		fail "$what: the first start of each pktgen got no report"
		return 1
	fi
	for s in pgh pgc; do
		first=$(awk '$1 == "first_frames_ms" { print $2 }' "$(ctl_of "$s")/done.1")
		if is_num "$(pg_count "$s" 1 opackets)" && [ "$(pg_count "$s" 1 opackets)" -gt 0 ]; then
			log "$what: $s's pktgen sent its first frames ${first} ms after its first start"
		else
			fail "$what: $s's pktgen sent nothing in ${first:-?} ms after its first start"
			return 1
		fi
	done
	pg_go pgh 2 idle
	pg_go pgc 2 idle
	if ! pg_done pgh 2 || ! pg_done pgc 2 || ! pg_read pgh || ! pg_read pgc; then
		fail "$what: no counts before the traffic"
		return 1
	fi
	for dir in h2c c2h; do
		for size in "$@"; do
			n=$((n + 1))
			if [ "$dir" = h2c ]; then tx=pgh rx=pgc mac=$PG_CTR_MAC; else tx=pgc rx=pgh mac=$PG_HOST_MAC; fi
			pg_go "$tx" "$n" "send 0 $size 2000 $mac"
			pg_done "$tx" "$n" && pg_go "$rx" "$n" idle && pg_done "$rx" "$n" || {
				fail "$what: round $n ($dir, $size bytes) got no report"
				return 1
			}
			pg_read pgh && pg_read pgc || { fail "$what: telemetry of round $n unreadable"; return 1; }
			pg_check "$what $dir $size" "$tx" "$rx" "$n" "$size"
		done
	done
}

# pg_image DIR: scripts/image.sh's image of pktgen in DIR (once).
pg_image() {
	local img=$1
	[ -d "$img/bin" ] && return 0
	# pktgen runs `lspci` through popen(3) at start, and panics when
	# there is no /bin/sh to run it (without lspci the list of PCI
	# ports is empty, as --no-pci wants); `timeout` is the watchdog
	# inside the container.
	bash "$ROOT/scripts/image.sh" dpdk "$img" --program "$PG_EXE" --add /bin/sh --add /usr/bin/timeout >/dev/null 2>"$WORK/pktgen-image.log" || {
		cat "$WORK/pktgen-image.log" >&2
		return 1
	}
	ln -s "$(basename "$(readlink -f /bin/sh)")" "$img/bin/sh"
}

# quit_pktgens WHAT NAME...: end the sessions' pktgens (the quit command
# of the round after their last), each to exit 0.
quit_pktgens() {
	local what=$1 s n pidvar ctlvar fdvar rc
	shift
	for s in "$@"; do
		ctlvar=CTL_$s
		n=1
		while [ -f "${!ctlvar}/go.$n" ]; do n=$((n + 1)); done
		pg_go "$s" "$n" quit
	done
	for s in "$@"; do
		pidvar=PID_$s fdvar=FD_$s
		wait "${!pidvar}" 2>/dev/null
		rc=$?
		eval "exec ${!fdvar}>&-"
		expect_eq "$what: $s pktgen left when asked (exit status)" "$rc" 0
	done
}
