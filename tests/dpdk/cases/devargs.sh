# shellcheck shell=bash
# Group "devargs", sourced by tests/dpdk/run.sh: probe-only testpmd runs
# (no forwarding): every bad devargs row is refused with a message naming
# the key, a valid set is probed, and a second master of one link in the
# same process is refused while the first port works.

group devargs bad_devargs second_master

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
		"domain=d,link=l,master=1,queues=17|invalid value '17' for key 'queues': expected a queue pair count from 1 to 16"
		"domain=d,link=l,master=1,queues=0|invalid value '0' for key 'queues': expected a queue pair count from 1 to 16"
		"domain=d,link=l,queues=x|invalid value 'x' for key 'queues': expected a decimal number"
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
