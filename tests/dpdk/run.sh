#!/usr/bin/env bash
# End-to-end tests of librte_net_vecring.so inside Debian's unmodified
# dpdk-testpmd: bad devargs are refused with a message naming the key, and
# two testpmd processes (master txonly, slave rxonly) exchange frames over a
# vecring link with exact counters, every mbuf back in its pool afterwards
# (TX fast free on and off), multi-segment jumbo frames (7168 and 9000
# bytes), drops counted, and reconnection after the master or the slave is
# killed. The slave also runs inside an LXC container (lxc-execute) that sees
# the link only through its bind-mounted domain directory, with txonly ->
# rxonly and io-forwarding traffic; testpmd interoperates with a Rust
# program using vecring-core (tests/dpdk_interop.rs, every byte checked);
# a hostile Rust peer cannot get frames past the MAC filter, and an
# application may close its port from the link-state callback
# (tests/dpdk_hostile.rs).
#
# The shell cases check counters, not payloads: testpmd's txonly and
# rxonly do not look at bytes. The bytes of the same kinds of traffic are
# checked frame by frame by tests/dpdk_interop.rs (run here as
# rust_interop): testpmd txonly frames (small_frames, mac_filter, lxc
# cases), 9000-byte chains both ways (jumbo_*), and io forwarding with
# scatter receive and multi-segment transmit, in copy, zero-copy and
# hold-back modes (lxc_io).
#
# Usage: tests/dpdk/run.sh [test-name...]      (run as root; needs hugepages
#        or VECRING_TEST_NO_HUGE=1)
# Env:   VECRING_PMD_SO   use this .so instead of building one (the Rust
#                         interop test is built with cargo either way)
#        TESTPMD          testpmd binary (default dpdk-testpmd)
#        VECRING_TEST_NO_HUGE=1   run testpmd with --no-huge -m 512 --no-shconf
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

# The shared helpers: processes, testpmd sessions, counters, checks.
# shellcheck source=lib.sh
. "$ROOT/tests/dpdk/lib.sh"

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

# EAL memory options of every testpmd: hugepages, no files (--in-memory);
# or without hugepages, where EAL refuses --in-memory (--no-huge implies
# legacy memory) and --no-shconf keeps the files away instead.
MEM_ARGS=(--in-memory)
free_huge=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "${VECRING_TEST_NO_HUGE:-0}" = 1 ] || [ "${free_huge:-0}" -lt 512 ]; then
	log "running testpmd without hugepages (--no-huge -m 512 --no-shconf)"
	MEM_ARGS=(--no-huge -m 512 --no-shconf)
	export VECRING_TEST_NO_HUGE=1   # for tests/dpdk_interop.rs
fi
TESTPMD_EXE=$(readlink -f "$(command -v "$TESTPMD")")
CTR_RUN=$WORK/ctr-run                   # the run dir as containers see it
log "plugin $SO, testpmd $TESTPMD_EXE, work dir $WORK"

# --- tests -------------------------------------------------------------------

# A testpmd run with `-l 0` and no -i probes the devices and then exits
# through rte_exit ("No cores defined for forwarding"): status 1, and only
# 1 (0 would mean it never got that far; 124 and above, the watchdog or a
# signal).
PROBE_ONLY_STATUS=1

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
		"domain=d,link=l,hold_back=maybe|invalid value 'maybe' for key 'hold_back'"
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
		out=$(timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci \
			--file-prefix="vrtest_bad${i}_$$" -l 0 "${MEM_ARGS[@]}" \
			--vdev="eth_vecring0,$args,run_dir=$RUN_DIR" -- --total-num-mbufs=2048 \
			</dev/null 2>&1)
		rc=$?
		if [ "$rc" -ne "$PROBE_ONLY_STATUS" ]; then
			fail "devargs '$args': testpmd exit status $rc, want $PROBE_ONLY_STATUS"
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
	out=$(timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci \
		--file-prefix="vrtest_good_$$" -l 0 "${MEM_ARGS[@]}" \
		--vdev="eth_vecring0,domain=d,link=l,mac=02:ec:f4:bb:d9:7f,run_dir=$RUN_DIR" \
		-- --total-num-mbufs=2048 </dev/null 2>&1)
	rc=$?
	if [ "$rc" -ne "$PROBE_ONLY_STATUS" ]; then
		fail "valid devargs: testpmd exit status $rc, want $PROBE_ONLY_STATUS"
	elif grep -q "VECRING: eth_vecring0: port 0, slave of link d/l, mac 02:ec:f4:bb:d9:7f" <<<"$out"; then
		pass "valid devargs probed"
	else
		fail "valid devargs not probed"
		grep -E "VECRING|vdev" <<<"$out" | sed 's/^/    /'
	fi
}

# Two masters of one link in one process: the second probe fails, the first
# port works.
test_second_master() {
	local vd="domain=d,link=twice,run_dir=$RUN_DIR,master=true" out rc
	out=$(timeout --kill-after=5 30 "$TESTPMD" -d "$SO" --no-pci \
		--file-prefix="vrtest_2m_$$" -l 0 "${MEM_ARGS[@]}" \
		--vdev="eth_vecring0,$vd" --vdev="eth_vecring1,$vd" \
		-- --total-num-mbufs=2048 </dev/null 2>&1)
	rc=$?
	if [ "$rc" -ne "$PROBE_ONLY_STATUS" ]; then
		fail "second master: testpmd exit status $rc, want $PROBE_ONLY_STATUS"
	elif grep -q "VECRING: eth_vecring0: port 0, master of link d/twice" <<<"$out" &&
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

test_small_frames() {
	if ! traffic small "--txpkts=64" ""; then
		fail "small frames: link did not come up"
	fi
	local tx rx
	tx=$(xstat small_m tx_good_packets)
	rx=$(xstat small_s rx_good_packets)
	expect_gt "small: master sent" "$tx" 0
	expect_eq "small: slave received every frame sent" "$rx" "$tx"
	expect_eq "small: byte count" "$(xstat small_s rx_good_bytes)" "$((tx * 64))"
	expect_eq "small: master tx_errors" "$(xstat small_m tx_errors)" 0
	expect_eq "small: testpmd enabled fast free on the master's TX" "$(tx_fast_free small_m)" on
	expect_eq "small: every sent mbuf is back in the master's pool" "$(mbufs_in_use small_m)" 0
	grep -q "Port 0: link state change event" "$WORK/small_s.log" &&
		pass "small: slave got an LSC event" || fail "small: slave got no LSC event"
	expect_no_corruption small small_m small_s
	quit_pmd small_m
	quit_pmd small_s
}

# As test_small_frames, with fast free off (testpmd's default turns it on):
# the master frees sent mbufs through rte_pktmbuf_free_bulk.
test_small_frames_no_fast_free() {
	if ! traffic nofast "--txpkts=64 --tx-offloads=0x8000" ""; then
		fail "no fast free: link did not come up"
	fi
	local tx
	tx=$(xstat nofast_m tx_good_packets)
	expect_gt "no fast free: master sent" "$tx" 0
	expect_eq "no fast free: slave received every frame sent" "$(xstat nofast_s rx_good_packets)" "$tx"
	expect_eq "no fast free: testpmd left fast free off" "$(tx_fast_free nofast_m)" off
	expect_eq "no fast free: every sent mbuf is back in the master's pool" "$(mbufs_in_use nofast_m)" 0
	expect_no_corruption "no fast free" nofast_m nofast_s
	quit_pmd nofast_m
	quit_pmd nofast_s
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
	expect_eq "jumbo: byte count" "$(xstat jumbo_s rx_good_bytes)" "$((tx * 7168))"
	# Scatter allocation failures would count here.
	expect_eq "jumbo: slave rx_errors" "$(xstat jumbo_s rx_errors)" 0
	# Chains are freed segment by segment even with fast free on.
	expect_eq "jumbo: every sent chain is back in the master's pool" "$(mbufs_in_use jumbo_m)" 0
	expect_eq "jumbo: every received chain is back in the slave's pool" "$(mbufs_in_use jumbo_s)" 0
	expect_no_corruption jumbo jumbo_m jumbo_s
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
	expect_no_corruption no-scatter noscat_m noscat_s
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
	expect_no_corruption filter filt_m filt_s
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
	# The slave's counters are cumulative: what it has from the first
	# master is the baseline for the second.
	show_xstats recon_s
	local rx1
	rx1=$(xstat recon_s rx_good_packets)
	start_pmd recon_m2 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	if wait_for recon_s "VECRING: eth_vecring0: link up" 2 30; then
		pass "reconnect: link up again with a new master"
	else
		fail "reconnect: link did not come back"
	fi
	wait_for recon_m2 "testpmd> " 1 30 && cmd recon_m2 start
	sleep 1
	stop_fwd recon_m2
	show_xstats recon_m2
	local tx2
	tx2=$(xstat recon_m2 tx_good_packets)
	expect_gt "reconnect: second master sent" "$tx2" 0
	is_num "$rx1" && is_num "$tx2" && drain recon_s "$((rx1 + tx2))"
	show_xstats recon_s
	expect_eq "reconnect: slave received every frame of the second master" \
		"$(xsum recon_s rx_good_packets)" "$(is_num "$rx1" && is_num "$tx2" && echo $((rx1 + tx2)))"
	expect_eq "reconnect: link_up_count" "$(xstat recon_s link_up_count)" 2
	expect_eq "reconnect: link_down_count" "$(xstat recon_s link_down_count)" 1
	expect_no_corruption reconnect recon_m2 recon_s
	quit_pmd recon_m2
	quit_pmd recon_s
}

# 9000-byte frames in 5 mbuf segments; the slave scatters them into 1 KiB
# mbufs (9 segments each). (tests/dpdk_interop.rs checks their bytes.)
test_jumbo_9000() {
	if ! traffic j9000 "--txpkts=2048,2048,2048,2048,808 --max-pkt-len=9216" \
		"--enable-scatter --max-pkt-len=9216 --mbuf-size=1152"; then
		fail "jumbo 9000: link did not come up"
	fi
	local tx
	tx=$(xstat j9000_m tx_good_packets)
	expect_gt "jumbo 9000: master sent" "$tx" 0
	expect_eq "jumbo 9000: slave received every frame sent" "$(xstat j9000_s rx_good_packets)" "$tx"
	expect_eq "jumbo 9000: byte count" "$(xstat j9000_s rx_good_bytes)" "$((tx * 9000))"
	# rx_errors counts scatter allocation failures (and too-large drops).
	expect_eq "jumbo 9000: slave rx_errors" "$(xstat j9000_s rx_errors)" 0
	expect_eq "jumbo 9000: master tx_errors" "$(xstat j9000_m tx_errors)" 0
	expect_no_corruption "jumbo 9000" j9000_m j9000_s
	quit_pmd j9000_m
	quit_pmd j9000_s
}

# kill -9 the slave during traffic: the master keeps running (and keeps
# offering frames, counted as tx_link_down), reports the link down, and its
# traffic resumes, without any command, when a new slave attaches; the new
# slave receives exactly what the master sent after the reconnection (nothing
# of the dead generation).
test_slave_restart() {
	local vdev="domain=vrtest,link=srestart,run_dir=$RUN_DIR"
	start_pmd sr_m 0 "$vdev,master=true" --forward-mode=txonly --txpkts=64
	start_pmd sr_s1 1 "$vdev" --forward-mode=rxonly
	wait_for sr_m "VECRING: eth_vecring0: link up" 1 30 || { fail "slave restart: no link"; return; }
	wait_for sr_m "testpmd> " 1 30 && wait_for sr_s1 "testpmd> " 1 30 ||
		{ fail "slave restart: testpmd did not start"; return; }
	cmd sr_s1 start
	cmd sr_m start
	sleep 1
	show_xstats sr_s1
	expect_gt "slave restart: first slave receiving" "$(xstat sr_s1 rx_good_packets)" 0
	local lsc_before
	lsc_before=$(grep -c "Port 0: link state change event" "$WORK/sr_m.log")
	kill_pmd sr_s1
	if wait_for sr_m "VECRING: eth_vecring0: link down" 1 20; then
		pass "slave restart: master saw the slave die"
	else
		fail "slave restart: master did not see the link go down"
	fi
	sleep 0.5
	cmd sr_m "show port info 0"
	if wait_for sr_m "^Link status: down" 1 10; then
		pass "slave restart: master reports link down"
	else
		fail "slave restart: master does not report link down"
	fi
	if wait_for sr_m "Port 0: link state change event" "$((lsc_before + 1))" 10; then
		pass "slave restart: master got a link-down LSC event"
	else
		fail "slave restart: master got no LSC event for the link going down"
	fi
	show_xstats sr_m
	local t1 d1
	t1=$(xstat sr_m tx_good_packets)
	d1=$(xstat sr_m tx_link_down)
	sleep 1
	show_xstats sr_m
	expect_eq "slave restart: master sends nothing while down" "$(xstat sr_m tx_good_packets)" "$t1"
	expect_gt "slave restart: master still running (offers counted as tx_link_down)" \
		"$(xstat sr_m tx_link_down)" "$d1"
	kill -0 "$PID_sr_m" 2>/dev/null && pass "slave restart: master process alive" ||
		fail "slave restart: master process died"

	start_pmd sr_s2 1 "$vdev" --forward-mode=rxonly --no-flush-rx
	if wait_for sr_m "VECRING: eth_vecring0: link up" 2 30; then
		pass "slave restart: link up again with a new slave"
	else
		fail "slave restart: link did not come back"
	fi
	wait_for sr_s2 "testpmd> " 1 30 && cmd sr_s2 start
	sleep 1
	stop_fwd sr_m
	show_xstats sr_m
	local t2
	t2=$(xstat sr_m tx_good_packets)
	expect_gt "slave restart: master traffic resumed by itself" "$t2" "$t1"
	drain sr_s2 "$((t2 - t1))"
	stop_fwd sr_s2
	show_xstats sr_s2
	expect_eq "slave restart: new slave received exactly the frames sent since" \
		"$(xstat sr_s2 rx_good_packets)" "$((t2 - t1))"
	expect_eq "slave restart: master link_up_count" "$(xstat sr_m link_up_count)" 2
	expect_eq "slave restart: master link_down_count" "$(xstat sr_m link_down_count)" 1
	expect_eq "slave restart: master tx_errors" "$(xstat sr_m tx_errors)" 0
	expect_no_corruption "slave restart" sr_m sr_s2
	log "slave restart: $t1 frames sent to the killed slave ($(xstat sr_m tx_lost_on_link_down) of them unread when it died), $((t2 - t1)) to the new one"
	quit_pmd sr_m
	quit_pmd sr_s2
}

# --- LXC: the slave testpmd in a container ----------------------------------

# lxc_conf DOMAIN: an LXC config sharing the host's root file system (as
# docs/lxc.md describes) that bind-mounts the host's $RUN_DIR/DOMAIN at
# $CTR_RUN/DOMAIN, a path that is an empty directory on the host: the only
# way the container reaches the link is the bind mount. lxc.autodev = 0
# keeps the host's /dev, so /dev/hugepages is there for EAL.
lxc_conf() {
	local dom=$1 conf=$WORK/lxc-$1.conf
	mkdir -p "$RUN_DIR/$dom"
	cat >"$conf" <<-EOF
		lxc.uts.name = vecring-dpdk
		lxc.rootfs.path =
		lxc.net.0.type = empty
		lxc.console.path = none
		lxc.mount.auto = proc:rw sys:rw
		lxc.autodev = 0
		lxc.mount.entry = $RUN_DIR/$dom ${CTR_RUN#/}/$dom none bind,create=dir 0 0
	EOF
	echo "$conf"
}

# in_container NAME WHAT: check that session NAME's testpmd runs in other
# PID and mount namespaces than this script, and that the master (session
# MASTER, logging at info level) saw that very process attach.
in_container() {
	local name=$1 master=$2 what=$3 p
	if ! p=$(pmd_pid "$name"); then
		fail "$what: no testpmd process in the container"
		return
	fi
	if [ "$(readlink "/proc/$p/ns/pid")" != "$(readlink /proc/$$/ns/pid)" ] &&
		[ "$(readlink "/proc/$p/ns/mnt")" != "$(readlink /proc/$$/ns/mnt)" ]; then
		pass "$what: slave testpmd (host pid $p) runs in its own PID and mount namespaces"
	else
		fail "$what: slave testpmd (host pid $p) is not in a container"
	fi
	if grep -q "slave attached: pid $p uid 0 " "$WORK/$master.log"; then
		pass "$what: master saw the container's testpmd (pid $p) attach"
	else
		fail "$what: master did not log pid $p attaching"
		grep "slave attached" "$WORK/$master.log" | sed 's/^/    /'
	fi
}

require_lxc() {
	if command -v lxc-execute >/dev/null; then
		return 0
	fi
	fail "$1: lxc-execute not found (run scripts/setup.sh)"
	return 1
}

# Host master txonly -> container slave rxonly, exact counts.
test_lxc_txonly() {
	require_lxc "lxc txonly" || return
	local conf
	conf=$(lxc_conf vrlxc)
	PMD_LXC=$conf start_pmd lxtx_s 1 "domain=vrlxc,link=tx,run_dir=$CTR_RUN" --forward-mode=rxonly
	wait_for lxtx_s "testpmd> " 1 30 || { fail "lxc txonly: container testpmd did not start"; return; }
	cmd lxtx_s start
	PMD_EAL=--log-level=pmd.net.vecring:info start_pmd lxtx_m 0 \
		"domain=vrlxc,link=tx,run_dir=$RUN_DIR,master=true" --forward-mode=txonly --txpkts=64
	if wait_for lxtx_s "VECRING: eth_vecring0: link up" 1 30; then
		pass "lxc txonly: link up between host and container"
	else
		fail "lxc txonly: link did not come up"
		return
	fi
	in_container lxtx_s lxtx_m "lxc txonly"
	wait_for lxtx_m "testpmd> " 1 30 || { fail "lxc txonly: master did not start"; return; }
	cmd lxtx_m start
	sleep 3
	stop_fwd lxtx_m
	show_xstats lxtx_m
	local tx
	tx=$(xstat lxtx_m tx_good_packets)
	drain lxtx_s "$tx"
	stop_fwd lxtx_s
	show_xstats lxtx_s
	expect_gt "lxc txonly: host master sent" "$tx" 0
	expect_eq "lxc txonly: container slave received every frame sent" \
		"$(xstat lxtx_s rx_good_packets)" "$tx"
	expect_eq "lxc txonly: byte count" "$(xstat lxtx_s rx_good_bytes)" "$((tx * 64))"
	# txonly does not retry: what the full ring did not take testpmd freed
	# and counted as TX-dropped, and the PMD as tx_ring_full.
	expect_eq "lxc txonly: ring-full offers = testpmd's TX-dropped" \
		"$(xstat lxtx_m tx_ring_full)" "$(fwd_dropped lxtx_m TX)"
	expect_no_corruption "lxc txonly" lxtx_m lxtx_s
	quit_pmd lxtx_m
	quit_pmd lxtx_s
}

# io forwarding both ways: the host master injects 4 bursts of 32 frames
# (`start tx_first 4`) and both sides forward what they receive back
# (--forward-mode=io, frames unchanged), so the same 128 frames circle
# between host and container. Then the container stops first, the master
# forwards what is left back to it, and stops: every frame is accounted for
# (the 128 end up waiting in the master->slave ring) and nothing was dropped.
test_lxc_io() {
	require_lxc "lxc io" || return
	local conf
	conf=$(lxc_conf vrlxc)
	PMD_LXC=$conf start_pmd lxio_s 1 "domain=vrlxc,link=io,run_dir=$CTR_RUN" \
		--forward-mode=io --no-flush-rx
	wait_for lxio_s "testpmd> " 1 30 || { fail "lxc io: container testpmd did not start"; return; }
	cmd lxio_s start
	PMD_EAL=--log-level=pmd.net.vecring:info start_pmd lxio_m 0 \
		"domain=vrlxc,link=io,run_dir=$RUN_DIR,master=true" --forward-mode=io --no-flush-rx
	if wait_for lxio_s "VECRING: eth_vecring0: link up" 1 30 &&
		wait_for lxio_m "VECRING: eth_vecring0: link up" 1 30; then
		pass "lxc io: link up between host and container"
	else
		fail "lxc io: link did not come up"
		return
	fi
	in_container lxio_s lxio_m "lxc io"
	wait_for lxio_m "testpmd> " 1 30 || { fail "lxc io: master did not start"; return; }
	cmd lxio_m "start tx_first 4"
	sleep 3
	stop_fwd lxio_s
	# Let the master forward the frames still coming back to the slave.
	local rx last=-1 i
	for ((i = 0; i < 20; i++)); do
		show_xstats lxio_m
		rx=$(xstat lxio_m rx_good_packets)
		[ "$rx" = "$last" ] && break
		last=$rx
		sleep 0.3
	done
	stop_fwd lxio_m
	show_xstats lxio_m
	show_xstats lxio_s
	local m_rx m_tx s_rx s_tx
	m_rx=$(xstat lxio_m rx_good_packets)
	m_tx=$(xstat lxio_m tx_good_packets)
	s_rx=$(xstat lxio_s rx_good_packets)
	s_tx=$(xstat lxio_s tx_good_packets)
	log "lxc io: master rx $m_rx tx $m_tx, container rx $s_rx tx $s_tx"
	expect_gt "lxc io: frames went round more than once" "$s_rx" 128
	expect_eq "lxc io: container forwarded every frame it received" "$s_tx" "$s_rx"
	expect_eq "lxc io: container testpmd dropped nothing" "$(fwd_dropped lxio_s TX)" 0
	expect_eq "lxc io: master received every frame the container sent" "$m_rx" "$s_tx"
	expect_eq "lxc io: master sent the 128 injected frames plus every frame it received" \
		"$m_tx" "$((m_rx + 128))"
	expect_eq "lxc io: master testpmd dropped nothing" "$(fwd_dropped lxio_m TX)" 0
	# With the three equalities above, the 128 frames wait in the
	# master->slave ring after the container stopped (m_tx - s_rx = 128).
	expect_eq "lxc io: no ring-full offers (master)" "$(xstat lxio_m tx_ring_full)" 0
	expect_eq "lxc io: no ring-full offers (container)" "$(xstat lxio_s tx_ring_full)" 0
	expect_eq "lxc io: byte count container->host" "$(xstat lxio_m rx_good_bytes)" "$((m_rx * 64))"
	expect_eq "lxc io: byte count host->container" "$(xstat lxio_s rx_good_bytes)" "$((s_rx * 64))"
	expect_no_corruption "lxc io" lxio_m lxio_s
	quit_pmd lxio_m
	quit_pmd lxio_s
}

# The host master exits cleanly (quit) and comes back: the container's
# slave, which reaches the link only through its bind mount of the domain
# directory, must see the new master. (A master that removed the domain
# directory at exit, and a new one that created another, would leave the
# container's bind mount on the deleted directory, and the slave waiting
# forever.)
test_lxc_master_restart() {
	require_lxc "lxc master restart" || return
	local conf
	conf=$(lxc_conf vrlxr)
	PMD_LXC=$conf start_pmd lxmr_s 1 "domain=vrlxr,link=mr,run_dir=$CTR_RUN" --forward-mode=rxonly
	wait_for lxmr_s "testpmd> " 1 30 || { fail "lxc master restart: container testpmd did not start"; return; }
	cmd lxmr_s start
	local mvdev="domain=vrlxr,link=mr,run_dir=$RUN_DIR,master=true"
	start_pmd lxmr_m1 0 "$mvdev" --forward-mode=txonly --txpkts=64
	if ! wait_for lxmr_s "VECRING: eth_vecring0: link up" 1 30; then
		fail "lxc master restart: link did not come up"
		return
	fi
	wait_for lxmr_m1 "testpmd> " 1 30
	quit_pmd lxmr_m1
	if wait_for lxmr_s "VECRING: eth_vecring0: link down" 1 20; then
		pass "lxc master restart: container saw the master quit"
	else
		fail "lxc master restart: container did not see the master quit"
	fi
	start_pmd lxmr_m2 0 "$mvdev" --forward-mode=txonly --txpkts=64
	if wait_for lxmr_s "VECRING: eth_vecring0: link up" 2 20; then
		pass "lxc master restart: container slave attached to the new master"
	else
		fail "lxc master restart: container slave never saw the new master (domain directory replaced under its bind mount?)"
		local p
		p=$(pmd_pid lxmr_s) && grep " ${CTR_RUN}/vrlxr " "/proc/$p/mountinfo" | sed 's/^/    container mount: /'
		quit_pmd lxmr_m2
		quit_pmd lxmr_s
		return
	fi
	wait_for lxmr_m2 "testpmd> " 1 30 && cmd lxmr_m2 start
	sleep 1
	stop_fwd lxmr_m2
	show_xstats lxmr_m2
	local tx
	tx=$(xstat lxmr_m2 tx_good_packets)
	drain lxmr_s "$tx"
	show_xstats lxmr_s
	expect_gt "lxc master restart: new master sent" "$tx" 0
	expect_eq "lxc master restart: container received every frame of the new master" \
		"$(xstat lxmr_s rx_good_packets)" "$tx"
	expect_no_corruption "lxc master restart" lxmr_m2 lxmr_s
	quit_pmd lxmr_m2
	quit_pmd lxmr_s
}

# --- Rust tests against testpmd and C DPDK programs --------------------------

# rust_tests LABEL TEST COUNT: runs the ignored tests of tests/TEST.rs (each
# counts as one check here). The binary must list exactly COUNT ignored
# tests, exactly COUNT must run and pass, and each cargo invocation must
# exit 0: a test that is renamed away, un-ignored, never reached or lost to a
# crash of the binary is a failure, not a silent gap.
rust_tests() {
	local label=$1 test=$2 want=$3
	local target=${CARGO_TARGET_DIR:-$ROOT/target} out=$WORK/$test.log line n=0 listed rc
	log "building tests/$test.rs"
	if ! (cd "$ROOT" && CARGO_TARGET_DIR=$target cargo test --release -p vecring-tests \
		--test "$test" --no-run) >"$out" 2>&1; then
		fail "$label: cargo test --no-run failed"
		tail -n 20 "$out" | sed 's/^/    /'
		return
	fi
	(cd "$ROOT" && CARGO_TARGET_DIR=$target cargo test --release -p vecring-tests \
		--test "$test" -q -- --ignored --list) >"$WORK/$test.list" 2>>"$out"
	rc=$?
	listed=$(grep -c ': test$' "$WORK/$test.list")
	if [ "$rc" -ne 0 ] || [ "$listed" != "$want" ]; then
		fail "$label: tests/$test.rs lists $listed ignored tests (cargo exit status $rc), want exactly $want"
	fi
	(cd "$ROOT" && VECRING_PMD_SO=$SO TESTPMD=$TESTPMD CARGO_TARGET_DIR=$target \
		timeout --kill-after=10 300 cargo test --release -p vecring-tests --test "$test" \
		-- --ignored --test-threads=1 --show-output) >"$out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"test "*" ... ok")
			pass "$label: ${line#test }"
			n=$((n + 1))
			;;
		"test "*" ... FAILED")
			fail "$label: ${line#test }"
			;;
		esac
	done <"$out"
	grep -E "^(tx|io|iozc|iohb|flip|lsc)-[a-z0-9]+: " "$out" | sed 's/^/    /'
	if grep -q "^failures:" "$out"; then
		sed -n '/^failures:/,$p' "$out" | head -n 60 | sed 's/^/    /'
	fi
	[ "$rc" -eq 0 ] || fail "$label: cargo test exit status $rc, see $out"
	[ "$n" -eq "$want" ] || fail "$label: $n tests passed, want exactly $want, see $out"
}

# testpmd on one end, a Rust program using vecring-core on the other, both
# roles and both directions, every byte checked by the Rust side
# (tests/dpdk_interop.rs).
test_rust_interop() {
	rust_tests "rust interop" dpdk_interop 9
}

# A hostile Rust peer flips destination MACs in the ring under testpmd's
# MAC filter; a C DPDK program closes its port from its link-state callback
# when the peer leaves (tests/dpdk_hostile.rs, tests/c/lsc_close.c).
test_rust_hostile() {
	rust_tests "rust hostile" dpdk_hostile 5
}

ALL=(bad_devargs second_master small_frames small_frames_no_fast_free jumbo_scatter jumbo_no_scatter jumbo_9000 mac_filter
	reconnect slave_restart lxc_txonly lxc_io lxc_master_restart rust_interop rust_hostile)
ALL+=(rust_port); test_rust_port() { rust_tests "rust port" dpdk_port 6; } # tests/dpdk_port.rs
ALL+=(rust_tools); test_rust_tools() { rust_tests "rust tools" dpdk_tools 3; } # tests/dpdk_tools.rs
TESTS=("$@")
[ ${#TESTS[@]} -eq 0 ] && TESTS=("${ALL[@]}")
for t in "${TESTS[@]}"; do
	log "--- $t"
	"test_$t"
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
