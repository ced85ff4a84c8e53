# shellcheck shell=bash
# Shared helpers of the DPDK end-to-end tests, sourced by tests/dpdk/run.sh
# (which sets ROOT, TESTPMD, WATCHDOG, WORK, RUN_DIR, CTR_RUN, SO,
# MEM_ARGS, TESTPMD_EXE and PIDS, and defines log, pass and fail):
# killing process trees, testpmd sessions (start, commands, waits, quit,
# kill -9), reading testpmd's counters and mempools, the expect_* checks,
# and draining a receiving session.

# --- processes ---------------------------------------------------------------

# descendants PID: every PID below PID (each listed before its children).
descendants() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		echo "$c"
		descendants "$c"
	done
}

# kill9 PID: SIGKILL the `timeout` watchdog PID and everything it started
# (killing `timeout` alone would leave its child running; a container's
# processes are further down the tree).
kill9() {
	local p
	for p in $(descendants "$1") "$1"; do
		kill -9 "$p" 2>/dev/null
	done
}

# --- testpmd sessions --------------------------------------------------------
# A session is an interactive testpmd reading commands from a FIFO.

# start_pmd NAME CPU VDEV_ARGS [testpmd app args...]
# With PMD_LXC=<lxc config> set, testpmd runs inside an LXC container
# (lxc-execute), with a watchdog inside the container and one outside.
# PMD_EAL adds EAL options (word-split).
start_pmd() {
	local name=$1 cpu=$2 vdev=$3 fd
	# shellcheck disable=SC2206
	local eal=(${PMD_EAL:-})
	shift 3
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	# stdbuf: testpmd's stdout is a file here; line-buffer it so that the
	# waits below see each line when it is printed.
	local pmd=(timeout --kill-after=5 "$WATCHDOG" stdbuf -oL -eL "$TESTPMD" -d "$SO" --no-pci
		--file-prefix="vrtest_${name}_$$" --lcores="(0,1)@$cpu" "${MEM_ARGS[@]}" "${eal[@]}"
		--vdev="eth_vecring0,$vdev" -- -i --total-num-mbufs=8192 "$@")
	if [ -n "${PMD_LXC:-}" ]; then
		timeout --kill-after=5 "$((WATCHDOG + 15))" \
			lxc-execute -n "vrtest-$name-$$" -f "$PMD_LXC" -- "${pmd[@]}" \
			<"$WORK/$name.in" >"$WORK/$name.log" 2>&1 &
	else
		"${pmd[@]}" <"$WORK/$name.in" >"$WORK/$name.log" 2>&1 &
	fi
	PIDS+=($!)
	printf -v "PID_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "FD_$name" '%s' "$fd"
}

# cmd NAME "testpmd command" (in a subshell: if testpmd is gone, SIGPIPE
# ends the subshell, not this script)
cmd() {
	local fdvar=FD_$1
	(echo "$2" >&"${!fdvar}") 2>/dev/null
}

# wait_for NAME REGEX [COUNT] [SECONDS]: until REGEX matched COUNT lines.
wait_for() {
	local name=$1 re=$2 count=${3:-1} secs=${4:-20} i n
	for ((i = 0; i < secs * 10; i++)); do
		n=$(grep -cE -- "$re" "$WORK/$name.log" 2>/dev/null)
		[ "${n:-0}" -ge "$count" ] && return 0
		sleep 0.1
	done
	log "timeout waiting for /$re/ x$count in $name.log"
	return 1
}

# quit_pmd NAME: ask testpmd to exit, then wait for it (the watchdog bounds it).
quit_pmd() {
	local pidvar=PID_$1 fdvar=FD_$1
	[ -n "${!pidvar:-}" ] || return 0   # never started
	cmd "$1" quit
	eval "exec ${!fdvar}>&-"
	wait "${!pidvar}" 2>/dev/null
	local rc=$?
	# testpmd's `quit` exits 0; anything else (1: rte_exit on an error,
	# 124/137: the watchdog, 128+N: a signal) is a failure.
	if [ "$rc" -ne 0 ]; then
		fail "$1: testpmd exit status $rc after quit (0 expected), see $WORK/$1.log"
	fi
}

# pmd_pid NAME: the PID (in our namespace) of session NAME's testpmd
# process, which may be inside a container.
pmd_pid() {
	local pidvar=PID_$1 p
	for p in $(descendants "${!pidvar}"); do
		if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$TESTPMD_EXE" ]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# kill_pmd NAME: kill -9 testpmd, as a crash would (its stdin stays open
# until it is dead, so that it cannot see EOF and quit cleanly instead).
kill_pmd() {
	local pidvar=PID_$1 fdvar=FD_$1 p
	[ -n "${!pidvar:-}" ] || return 0   # never started
	if p=$(pmd_pid "$1"); then
		kill -9 "$p"
	else
		fail "$1: no testpmd process to kill"
		kill9 "${!pidvar}"
	fi
	wait "${!pidvar}" 2>/dev/null
	eval "exec ${!fdvar}>&-"
}

# xstat NAME STAT: the last value of STAT printed by `show port xstats 0`.
xstat() {
	grep -E "^ *$2: [0-9]+$" "$WORK/$1.log" | tail -n1 | awk '{print $2}'
}

# show_xstats NAME: print the port's xstats and wait until they are out.
show_xstats() {
	local before
	before=$(grep -c "NIC extended statistics for port 0" "$WORK/$1.log")
	cmd "$1" "show port xstats 0"
	wait_for "$1" "^ *rejected_peers: [0-9]+" "$((before + 1))" 10
}

# mbufs_in_use NAME: mbufs of testpmd's pool (mb_pool_0) neither in the pool
# nor in a per-lcore cache, from a fresh `dump_mempool` (`dump mempool
# mb_pool_0` from 25.11, where the old spelling is gone).
mbufs_in_use() {
	local before
	before=$(grep -c "^mempool <mb_pool_0>" "$WORK/$1.log")
	if [ "$TESTPMD_LINE" \< 25.11 ]; then
		cmd "$1" dump_mempool
	else
		cmd "$1" "dump mempool mb_pool_0"
	fi
	wait_for "$1" "^mempool <mb_pool_0>" "$((before + 1))" 10 || return
	# Read the last dump's section of mb_pool_0 (wait_for saw its header;
	# give the rest of it a moment to arrive).
	sleep 0.2
	awk -v last="$((before + 1))" '
		/^mempool </ { in_pool = ($2 ~ /^<mb_pool_0>/) && (++seen == last) }
		in_pool && /^ *populated_size=/ { split($0, a, "="); size = a[2] }
		in_pool && /^ *total_cache_count=/ { split($0, a, "="); cached = a[2] }
		in_pool && /^ *common_pool_count=/ { split($0, a, "="); print size - cached - a[2]; exit }
	' "$WORK/$1.log"
}

# tx_fast_free NAME: whether testpmd enabled MBUF_FAST_FREE on port 0's TX.
tx_fast_free() {
	local before
	before=$(grep -c "Tx Offloading Configuration of port 0" "$WORK/$1.log")
	cmd "$1" "show port 0 tx_offload configuration"
	wait_for "$1" "Tx Offloading Configuration of port 0" "$((before + 1))" 10 || return
	sleep 0.2
	if tac "$WORK/$1.log" | awk '/Tx Offloading Configuration of port 0/ { exit } { print }' |
		grep -q "^ *Port :.*MBUF_FAST_FREE"; then
		echo on
	else
		echo off
	fi
}

# is_num VALUE: VALUE is a non-negative decimal number (a value read from
# testpmd's output that is missing reads as empty, which is never a number).
is_num() { [[ $1 =~ ^[0-9]+$ ]]; }

# expect_eq WHAT GOT WANT: both are numbers (or, for WANT not a number, GOT
# is exactly that word), and equal. An empty GOT or WANT is a failure: two
# values that could not be read are not equal.
expect_eq() {
	if [ -z "$2" ] || [ -z "$3" ]; then
		fail "$1: got '$2', want '$3' (a value could not be read)"
	elif is_num "$3" && ! is_num "$2"; then
		fail "$1: got '$2', want the number $3"
	elif [ "$2" = "$3" ]; then
		pass "$1 ($2)"
	else
		fail "$1: got '$2', want '$3'"
	fi
}
expect_gt() { # what got min
	if is_num "$2" && is_num "$3" && [ "$2" -gt "$3" ]; then
		pass "$1 ($2 > $3)"
	else
		fail "$1: got '$2', want > '$3'"
	fi
}

# xsum NAME STAT...: the sum of the last values of STATs, or empty if any
# of them could not be read.
xsum() {
	local name=$1 stat v sum=0
	shift
	for stat in "$@"; do
		v=$(xstat "$name" "$stat")
		is_num "$v" || return 0
		sum=$((sum + v))
	done
	echo "$sum"
}

# expect_no_corruption WHAT NAME...: each session NAME detected no
# corruption of the shared memory by its peer (read from fresh xstats).
expect_no_corruption() {
	local what=$1 name
	shift
	for name in "$@"; do
		show_xstats "$name"
		expect_eq "$what: $name detected no peer corruption" "$(xstat "$name" peer_corruptions)" 0
	done
}

# --- forwarding: draining and stopping ---------------------------------------

# drain NAME SENT: let a receiving session run until it has accounted for SENT
# frames (delivered, too large or filtered), or the counts stop moving.
drain() {
	local name=$1 sent=$2 seen last=-1 i
	for ((i = 0; i < 40; i++)); do
		show_xstats "$name" || return
		seen=$(xsum "$name" rx_good_packets rx_too_large_drops rx_filtered_drops)
		# Unreadable counts or an unknown SENT: the checks that follow fail.
		is_num "$seen" && is_num "$sent" || return
		[ "$seen" -ge "$sent" ] && return
		[ "$seen" -eq "$last" ] && [ "$i" -ge 4 ] && return
		last=$seen
		sleep 0.5
	done
}

# fwd_dropped NAME RX|TX: the last forward statistics' RX-/TX-dropped
# (testpmd's own drops, printed by `stop`).
fwd_dropped() {
	grep -oE "$2-dropped: +[0-9]+" "$WORK/$1.log" | tail -n1 | awk '{print $2}'
}

# stop_fwd NAME: `stop` forwarding and wait for the statistics.
stop_fwd() {
	local before
	before=$(grep -c "^Done\.$" "$WORK/$1.log")
	cmd "$1" stop
	wait_for "$1" "^Done\.$" "$((before + 1))" 20
}
