#!/usr/bin/env bash
# End-to-end tests of librte_net_vecring.so inside Debian's unmodified
# dpdk-testpmd: bad devargs are refused with a message naming the key, and
# two testpmd processes (master txonly, slave rxonly) exchange frames over a
# vecring link with exact counters, multi-segment jumbo frames, drops counted,
# and reconnection after the peer is killed.
#
# Usage: tests/dpdk/run.sh [test-name...]      (run as root; needs hugepages
#        or VECRING_TEST_NO_HUGE=1)
# Env:   VECRING_PMD_SO   use this .so instead of building one
#        TESTPMD          testpmd binary (default dpdk-testpmd)
#        VECRING_TEST_NO_HUGE=1   run testpmd with --no-huge -m 512
#        VECRING_TEST_KEEP=1      keep the work directory (logs)
#
# Every testpmd runs under `timeout` (watchdog), every wait has a deadline,
# and the script kills what it started on exit. The last line is
# "N passed, N failed"; the exit status is non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TESTPMD=${TESTPMD:-dpdk-testpmd}
WATCHDOG=${VECRING_TEST_WATCHDOG:-90}   # seconds one testpmd may live
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vecring-dpdk.XXXXXX")
RUN_DIR=$WORK/run                       # vecring rendezvous (may be in /tmp)
PASSED=0
FAILED=0
PIDS=()

log() { echo "dpdk-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }

# kill9 PID: SIGKILL the `timeout` watchdog PID and the testpmd it runs
# (killing `timeout` alone would leave its child running).
kill9() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		kill -9 "$c" 2>/dev/null
	done
	kill -9 "$1" 2>/dev/null
}

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill9 "$p"
	done
	wait 2>/dev/null
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ] || [ "$FAILED" -gt 0 ]; then
		log "logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

# --- the plugin ------------------------------------------------------------

# EAL refuses `-d` plugins under a world-writable directory (such as /tmp).
world_writable_dir() {
	local d
	d=$(dirname "$(readlink -f "$1")")
	while [ -n "$d" ]; do
		if [ -n "$(find "$d" -maxdepth 0 -perm -o+w 2>/dev/null)" ]; then
			echo "$d"
			return 0
		fi
		[ "$d" = / ] && break
		d=$(dirname "$d")
	done
	return 1
}

if [ -z "${VECRING_PMD_SO:-}" ]; then
	target=${CARGO_TARGET_DIR:-$ROOT/target}
	log "building vecring-pmd (release) into $target"
	(cd "$ROOT" && CARGO_TARGET_DIR=$target cargo build --release -p vecring-pmd) || {
		echo "FAIL: cargo build -p vecring-pmd"
		echo "0 passed, 1 failed"
		exit 1
	}
	VECRING_PMD_SO=$target/release/librte_net_vecring.so
fi
SO=$(readlink -f "$VECRING_PMD_SO")
if bad=$(world_writable_dir "$SO"); then
	echo "FAIL: $SO lies under world-writable $bad; EAL would refuse it (set VECRING_PMD_SO)"
	echo "0 passed, 1 failed"
	exit 1
fi
command -v "$TESTPMD" >/dev/null || {
	echo "FAIL: $TESTPMD not found (run scripts/setup.sh)"
	echo "0 passed, 1 failed"
	exit 1
}

MEM_ARGS=()
free_huge=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${VECRING_TEST_NO_HUGE:-0}" = 1 ] || [ "${free_huge:-0}" -lt 512 ]; then
	log "running testpmd without hugepages (--no-huge -m 512)"
	MEM_ARGS=(--no-huge -m 512)
fi
log "plugin $SO, testpmd $(command -v "$TESTPMD"), work dir $WORK"

# --- testpmd sessions --------------------------------------------------------
# A session is an interactive testpmd reading commands from a FIFO.

# start_pmd NAME CPU VDEV_ARGS [testpmd app args...]
start_pmd() {
	local name=$1 cpu=$2 vdev=$3 fd
	shift 3
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	# stdbuf: testpmd's stdout is a file here; line-buffer it so that the
	# waits below see each line when it is printed.
	timeout --kill-after=5 "$WATCHDOG" stdbuf -oL -eL "$TESTPMD" -d "$SO" --no-pci --in-memory \
		--file-prefix="vrtest_${name}_$$" --lcores="(0,1)@$cpu" "${MEM_ARGS[@]}" \
		--vdev="eth_vecring0,$vdev" -- -i --total-num-mbufs=8192 "$@" \
		<"$WORK/$name.in" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	printf -v "PID_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "FD_$name" '%s' "$fd"
}

# cmd NAME "testpmd command"
cmd() {
	local fdvar=FD_$1
	echo "$2" >&"${!fdvar}"
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
	cmd "$1" quit
	eval "exec ${!fdvar}>&-"
	wait "${!pidvar}" 2>/dev/null
	local rc=$?
	if [ "$rc" -ge 124 ]; then
		fail "$1: testpmd exit status $rc (watchdog or crash), see $WORK/$1.log"
	fi
}

# kill_pmd NAME: kill -9 testpmd, as a crash would (its stdin stays open
# until it is dead, so that it cannot see EOF and quit cleanly instead).
kill_pmd() {
	local pidvar=PID_$1 fdvar=FD_$1 c
	for c in $(pgrep -P "${!pidvar}"); do
		kill -9 "$c"
	done
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

expect_eq() { # what got want
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}
expect_gt() { # what got min
	if [ -n "$2" ] && [ "$2" -gt "$3" ]; then pass "$1 ($2 > $3)"; else fail "$1: got '$2', want > $3"; fi
}

# --- tests -------------------------------------------------------------------

# One probe per row: devargs | text that must follow "VECRING: eth_vecring0: ".
test_bad_devargs() {
	local rows=(
		"link=l|missing required key 'domain'"
		"domain=d|missing required key 'link'"
		"domain=d,link=l,mac=zz|invalid value 'zz' for key 'mac': expected six hex bytes"
		"domain=d,link=l,mac=01:00:5e:00:00:01|invalid value '01:00:5e:00:00:01' for key 'mac': multicast"
		"domain=d,link=l,master=maybe|invalid value 'maybe' for key 'master'"
		"domain=d,link=l,speed=25G|unknown key 'speed'"
		"domain=.hidden,link=l|invalid value '.hidden' for key 'domain'"
		"domain=d,link=a..b/c|invalid value 'a..b/c' for key 'link'"
		"domain=d,link=l,slots=1000|invalid value '1000' for key 'slots'"
		"domain=d,link=l,slot_size=100|invalid value '100' for key 'slot_size'"
		"domain=d,link=l,socket=-1|invalid value '-1' for key 'socket'"
		"domain=d,link=l,hugepages=always|invalid value 'always' for key 'hugepages'"
		"domain=d,link=l,run_dir=relative|invalid value 'relative' for key 'run_dir'"
		"domain=d,link=l,link=m|key 'link' given more than once"
		"domain=d,link=l,master|malformed argument 'master'"
		"domain=d,link=l,zero_copy=2|invalid value '2' for key 'zero_copy'"
		"domain=d,link=l,slots=64,slot_size=64|invalid ring geometry (keys 'slots', 'slot_size'): "
		"domain=d,link=l,socket=99|cannot open link 'd/l' as slave: NUMA node 99 does not exist"
		"domain=d,link=l,owner=100000:100000|key 'owner' applies to the master only"
		"domain=d,link=l,master=1,owner=100000|invalid value '100000' for key 'owner'"
		"domain=d,link=l,master=1,allow_uid=x|invalid value 'x' for key 'allow_uid'"
		"domain=d,link=l,master=1,socket_mode=0680|invalid value '0680' for key 'socket_mode'"
	)
	local row args want out rc i=0
	for row in "${rows[@]}"; do
		args=${row%%|*}
		want=${row#*|}
		i=$((i + 1))
		out=$(timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci --in-memory \
			--file-prefix="vrtest_bad${i}_$$" -l 0 "${MEM_ARGS[@]}" \
			--vdev="eth_vecring0,$args,run_dir=$RUN_DIR" -- --total-num-mbufs=2048 \
			</dev/null 2>&1)
		rc=$?
		if [ "$rc" -ge 124 ]; then
			fail "devargs '$args': testpmd exit status $rc (watchdog or crash)"
		elif ! grep -qF "VECRING: eth_vecring0: $want" <<<"$out"; then
			fail "devargs '$args': no line 'VECRING: eth_vecring0: $want'"
			grep -E "VECRING|vdev" <<<"$out" | sed 's/^/    /'
		elif ! grep -q "failed to initialize eth_vecring0" <<<"$out"; then
			fail "devargs '$args': probe did not fail"
		else
			pass "devargs '$args' refused"
		fi
	done
	# (`run_dir` is appended to every row so that a row parsed by mistake
	# cannot touch /run/vecring; parsing stops at the row's own error first.)
	# A valid set is accepted.
	out=$(timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci --in-memory \
		--file-prefix="vrtest_good_$$" -l 0 "${MEM_ARGS[@]}" \
		--vdev="eth_vecring0,domain=d,link=l,mac=02:ec:f4:bb:d9:7f,run_dir=$RUN_DIR" \
		-- --total-num-mbufs=2048 </dev/null 2>&1)
	if grep -q "VECRING: eth_vecring0: port 0, slave of link d/l, mac 02:ec:f4:bb:d9:7f" <<<"$out"; then
		pass "valid devargs probed"
	else
		fail "valid devargs not probed"
		grep -E "VECRING|vdev" <<<"$out" | sed 's/^/    /'
	fi
}

# Two masters of one link in one process: the second probe fails, the first
# port works.
test_second_master() {
	local vd="domain=d,link=twice,run_dir=$RUN_DIR,master=true" out
	out=$(timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci --in-memory \
		--file-prefix="vrtest_2m_$$" -l 0 "${MEM_ARGS[@]}" \
		--vdev="eth_vecring0,$vd" --vdev="eth_vecring1,$vd" \
		-- --total-num-mbufs=2048 </dev/null 2>&1)
	if grep -q "VECRING: eth_vecring0: port 0, master of link d/twice" <<<"$out" &&
		grep -q "VECRING: eth_vecring1: cannot open link 'd/twice' as master: .*already has a live master" <<<"$out" &&
		grep -q "failed to initialize eth_vecring1" <<<"$out"; then
		pass "second master of a link refused"
	else
		fail "second master of a link not refused as expected"
		grep -E "VECRING|vdev" <<<"$out" | sed 's/^/    /'
	fi
}

# traffic NAME MASTER_ARGS SLAVE_ARGS: slave (rxonly) starts first and waits
# for the master (txonly); after a few seconds the master stops, the slave
# drains, and both print their xstats.
traffic() {
	local t=$1 margs=$2 sargs=$3 link=$1
	local vdev="domain=vrtest,link=$link,run_dir=$RUN_DIR"
	# shellcheck disable=SC2086
	start_pmd "${t}_s" 1 "$vdev,master=false" --forward-mode=rxonly $sargs
	wait_for "${t}_s" "testpmd> " 1 30 || return 1
	cmd "${t}_s" start
	# shellcheck disable=SC2086
	start_pmd "${t}_m" 0 "$vdev,master=true" --forward-mode=txonly $margs
	wait_for "${t}_m" "VECRING: eth_vecring0: link up" 1 30 || return 1
	wait_for "${t}_s" "VECRING: eth_vecring0: link up" 1 30 || return 1
	wait_for "${t}_m" "testpmd> " 1 30 || return 1
	cmd "${t}_m" start
	sleep 3
	cmd "${t}_m" stop
	wait_for "${t}_m" "^Done\.$" 1 20
	show_xstats "${t}_m"
	drain "${t}_s" "$(xstat "${t}_m" tx_good_packets)"
	cmd "${t}_s" stop
	wait_for "${t}_s" "^Done\.$" 1 20
	show_xstats "${t}_s"
	return 0
}

# drain NAME SENT: let a receiving session run until it has accounted for SENT
# frames (delivered, too large or filtered), or the counts stop moving.
drain() {
	local name=$1 sent=$2 seen last=-1 i
	for ((i = 0; i < 40; i++)); do
		show_xstats "$name" || return
		seen=$(($(xstat "$name" rx_good_packets) + $(xstat "$name" rx_too_large_drops) +
			$(xstat "$name" rx_filtered_drops)))
		[ "$seen" -ge "$sent" ] && return
		[ "$seen" -eq "$last" ] && [ "$i" -ge 4 ] && return
		last=$seen
		sleep 0.5
	done
}

test_small_frames() {
	if ! traffic small "--txpkts=64" ""; then
		fail "small frames: link did not come up"
	fi
	local tx rx
	tx=$(xstat small_m tx_good_packets)
	rx=$(xstat small_s rx_good_packets)
	expect_gt "small: master sent" "$tx" 0
	expect_eq "small: slave received every frame sent" "$rx" "$tx"
	expect_eq "small: bytes" "$(xstat small_s rx_good_bytes)" "$((tx * 64))"
	expect_eq "small: slave rx_errors" "$(xstat small_s rx_errors)" 0
	expect_eq "small: master tx_errors" "$(xstat small_m tx_errors)" 0
	grep -q "Port 0: link state change event" "$WORK/small_s.log" &&
		pass "small: slave got an LSC event" || fail "small: slave got no LSC event"
	quit_pmd small_m
	quit_pmd small_s
}

# 7168-byte frames in 4 mbuf segments; the slave scatters them into 2 KiB mbufs.
test_jumbo_scatter() {
	if ! traffic jumbo "--txpkts=2048,2048,2048,1024 --max-pkt-len=9216" \
		"--enable-scatter --max-pkt-len=9216"; then
		fail "jumbo: link did not come up"
	fi
	local tx rx
	tx=$(xstat jumbo_m tx_good_packets)
	rx=$(xstat jumbo_s rx_good_packets)
	expect_gt "jumbo: master sent" "$tx" 0
	expect_eq "jumbo: slave received every frame sent" "$rx" "$tx"
	expect_eq "jumbo: bytes" "$(xstat jumbo_s rx_good_bytes)" "$((tx * 7168))"
	expect_eq "jumbo: slave rx_errors" "$(xstat jumbo_s rx_errors)" 0
	quit_pmd jumbo_m
	quit_pmd jumbo_s
}

# Same frames, slave without scatter: every frame is dropped and counted.
test_jumbo_no_scatter() {
	if ! traffic noscat "--txpkts=2048,2048,2048,1024 --max-pkt-len=9216" \
		"--max-pkt-len=9216"; then
		fail "no-scatter: link did not come up"
	fi
	local tx
	tx=$(xstat noscat_m tx_good_packets)
	expect_gt "no-scatter: master sent" "$tx" 0
	expect_eq "no-scatter: slave delivered nothing" "$(xstat noscat_s rx_good_packets)" 0
	expect_eq "no-scatter: every frame counted as too large" \
		"$(xstat noscat_s rx_too_large_drops)" "$tx"
	expect_eq "no-scatter: counted in rx_errors" "$(xstat noscat_s rx_errors)" "$tx"
	quit_pmd noscat_m
	quit_pmd noscat_s
}

# Promiscuous mode off on the slave: frames to its MAC pass, frames to
# another MAC are counted as filtered (this also checks that destination MACs
# cross the link intact).
test_mac_filter() {
	local vdev="domain=vrtest,link=filter,run_dir=$RUN_DIR"
	start_pmd filt_s 1 "$vdev,mac=02:00:00:00:00:aa" --forward-mode=rxonly
	wait_for filt_s "testpmd> " 1 30 || { fail "filter: slave did not start"; return; }
	cmd filt_s "set promisc 0 off"
	cmd filt_s start
	start_pmd filt_m 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64 \
		--eth-peer=0,02:00:00:00:00:aa
	wait_for filt_s "VECRING: eth_vecring0: link up" 1 30 || { fail "filter: no link"; return; }
	wait_for filt_m "testpmd> " 1 30 || { fail "filter: master did not start"; return; }
	cmd filt_m start
	sleep 2
	cmd filt_m stop
	wait_for filt_m "^Done\.$" 1 20
	local rx1 tx1
	show_xstats filt_m
	tx1=$(xstat filt_m tx_good_packets)
	drain filt_s "$tx1"
	rx1=$(xstat filt_s rx_good_packets)
	expect_gt "filter: frames to our MAC sent" "$tx1" 0
	expect_eq "filter: frames to our MAC delivered" "$rx1" "$tx1"
	expect_eq "filter: none filtered" "$(xstat filt_s rx_filtered_drops)" 0
	cmd filt_m "set eth-peer 0 02:00:00:00:00:bb"
	cmd filt_m start
	sleep 2
	cmd filt_m stop
	wait_for filt_m "^Done\.$" 2 20
	show_xstats filt_m
	drain filt_s "$(xstat filt_m tx_good_packets)"
	local tx2=$(($(xstat filt_m tx_good_packets) - tx1))
	expect_gt "filter: frames to another MAC sent" "$tx2" 0
	expect_eq "filter: frames to another MAC filtered" "$(xstat filt_s rx_filtered_drops)" "$tx2"
	expect_eq "filter: nothing more delivered" "$(xstat filt_s rx_good_packets)" "$rx1"
	expect_eq "filter: filtered frames are not errors" "$(xstat filt_s rx_errors)" 0
	quit_pmd filt_m
	quit_pmd filt_s
}

# kill -9 the master: the slave sees the link go down, and up again (new
# generation) when a new master comes.
test_reconnect() {
	local vdev="domain=vrtest,link=recon,run_dir=$RUN_DIR"
	start_pmd recon_s 1 "$vdev" --forward-mode=rxonly
	wait_for recon_s "testpmd> " 1 30 || { fail "reconnect: slave did not start"; return; }
	cmd recon_s start
	start_pmd recon_m1 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	if wait_for recon_s "VECRING: eth_vecring0: link up" 1 30; then
		pass "reconnect: link up with first master"
	else
		fail "reconnect: link never came up"
	fi
	wait_for recon_m1 "testpmd> " 1 30 && cmd recon_m1 start
	sleep 1
	kill_pmd recon_m1
	if wait_for recon_s "VECRING: eth_vecring0: link down" 1 20; then
		pass "reconnect: slave saw the master die"
	else
		fail "reconnect: slave did not see the link go down"
	fi
	start_pmd recon_m2 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	if wait_for recon_s "VECRING: eth_vecring0: link up" 2 30; then
		pass "reconnect: link up again with a new master"
	else
		fail "reconnect: link did not come back"
	fi
	wait_for recon_m2 "testpmd> " 1 30 && cmd recon_m2 start
	sleep 1
	cmd recon_m2 stop
	wait_for recon_m2 "^Done\.$" 1 20
	sleep 1
	show_xstats recon_s
	expect_gt "reconnect: slave received from the second master" \
		"$(xstat recon_s rx_good_packets)" 0
	expect_eq "reconnect: link_up_count" "$(xstat recon_s link_up_count)" 2
	expect_eq "reconnect: link_down_count" "$(xstat recon_s link_down_count)" 1
	quit_pmd recon_m2
	quit_pmd recon_s
}

ALL=(bad_devargs second_master small_frames jumbo_scatter jumbo_no_scatter mac_filter reconnect)
TESTS=("$@")
[ ${#TESTS[@]} -eq 0 ] && TESTS=("${ALL[@]}")
for t in "${TESTS[@]}"; do
	log "--- $t"
	"test_$t"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
