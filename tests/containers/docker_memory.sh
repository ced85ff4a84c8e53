# shellcheck shell=bash
# Case "memory", sourced by tests/containers/docker.sh: whose memory the
# link is. The `vecring` tool's image (scripts/image.sh vecring) runs
# `vecring rxonly` as the slave in a container confined as the other
# cases' and, besides, with a memory limit of 64 MiB (--memory, no swap)
# and a hugetlb limit of 0 on the cgroup above every container of the
# private dockerd (as Kubernetes sets for pods that request no hugepages).
# Two host masters in turn (`vecring txonly`), one with hugepages
# (--hugepages require), one with ordinary pages (--hugepages never), each
# make a link of 128 MiB or more, twice the container's limit, and send
# 1500-byte frames through every slot of it for 2 s. Checked: every frame sent
# arrived; the regions were what was asked; the container's memory cgroup
# never came near a region (its peak stays below the region's size, its
# limit was never hit) and its hugetlb usage stayed 0 (read from the
# cgroup files before and after): the master's first touch charged the
# region to the host.
#
# This machine's layout: cgroup v1 controllers (memory among them) and a v2
# hierarchy at /sys/fs/cgroup/unified holding hugetlb. The hugetlb
# controller is turned on for the v2 root's children while the case runs
# (and off again at the end if it was off).

HUGETLB_ROOT=/sys/fs/cgroup/unified
HUGETLB_TURNED_ON=0

# hugetlb_off: undo what the case turned on (called by the cleanup too).
hugetlb_off() {
	[ "$HUGETLB_TURNED_ON" = 1 ] || return 0
	rmdir "$HUGETLB_ROOT/$DOCKER_CGROUP" 2>/dev/null
	echo -hugetlb >"$HUGETLB_ROOT/cgroup.subtree_control" 2>/dev/null
	HUGETLB_TURNED_ON=0
}

# cgroup_dir PID CONTROLLER: the v1 directory of PID's cgroup for CONTROLLER.
cgroup_dir() {
	local path
	path=$(awk -F: -v c="$2" '$2 == c { print $3 }' "/proc/$1/cgroup")
	[ -n "$path" ] && echo "/sys/fs/cgroup/$2$path"
}

test_memory() {
	local vecring=$ROOT/target/release/vecring
	if [ ! -x "$vecring" ]; then
		fail "memory: $vecring missing (cargo build --release --workspace, as scripts/test.sh does)"
		return
	fi
	if ! grep -qw hugetlb "$HUGETLB_ROOT/cgroup.controllers" 2>/dev/null; then
		fail "memory: no hugetlb controller in the cgroup v2 hierarchy at $HUGETLB_ROOT"
		return
	fi
	if ! grep -qw hugetlb "$HUGETLB_ROOT/cgroup.subtree_control"; then
		echo +hugetlb >"$HUGETLB_ROOT/cgroup.subtree_control" || { fail "memory: cannot turn on hugetlb"; return; }
		HUGETLB_TURNED_ON=1
	fi
	local top=$HUGETLB_ROOT/$DOCKER_CGROUP
	mkdir -p "$top" && echo 0 >"$top/hugetlb.2MB.max" ||
		{ fail "memory: cannot set the containers' hugetlb limit to 0 ($top)"; hugetlb_off; return; }
	[ ! -e "$top/hugetlb.1GB.max" ] || echo 0 >"$top/hugetlb.1GB.max"
	expect_eq "memory: the containers' hugetlb limit (2 MiB pages)" "$(cat "$top/hugetlb.2MB.max")" 0

	local img=$WORK/img-vecring
	if ! bash "$ROOT/scripts/image.sh" vecring "$img/rootfs" --tool "$vecring" --add timeout --tar "$img/vecring.tar" \
		>/dev/null 2>"$WORK/image-vecring.log" ||
		! dk import "$img/vecring.tar" vecring-tool >/dev/null; then
		fail "memory: the vecring tool's image"
		sed 's/^/    /' "$WORK/image-vecring.log"
		hugetlb_off
		return
	fi
	prepare_domain dkm
	local fd
	rm -f "$WORK/mem_s.in"
	mkfifo "$WORK/mem_s.in"
	# shellcheck disable=SC2046
	timeout --kill-after=5 "$WATCHDOG" "$DOCKER_CLI" -H "unix://$DOCKER_DIR/docker.sock" run -i --rm \
		--name vrtest-mem $(confined dkm) --memory 64m --memory-swap 64m vecring-tool \
		timeout --kill-after=5 60 vecring rxonly --domain dkm --link l0 --interval 0 \
		<"$WORK/mem_s.in" >"$WORK/mem_s.log" 2>"$WORK/mem_s.err" &
	PIDS+=($!)
	local client=$!
	exec {fd}>"$WORK/mem_s.in"
	local init p i
	for ((i = 0; i < 100; i++)); do
		init=$(dk inspect -f '{{.State.Pid}}' vrtest-mem 2>/dev/null)
		[ "${init:-0}" -gt 0 ] && p=$(pgrep -P "$init" | head -n1) && [ -n "$p" ] && break
		sleep 0.1
	done
	if [ -z "${p:-}" ]; then
		fail "memory: the container's vecring did not start"
		sed 's/^/    /' "$WORK/mem_s.err"
		eval "exec $fd>&-"
		hugetlb_off
		return
	fi
	local mem before
	mem=$(cgroup_dir "$p" memory)
	expect_eq "memory: the container's memory limit" "$(cat "$mem/memory.limit_in_bytes")" $((64 << 20))
	before=$(cat "$mem/memory.usage_in_bytes")
	local h0
	h0=$(cat "$top/hugetlb.2MB.current")

	# Two masters in turn, one link generation each: hugepages, then
	# ordinary (4 KiB) pages, which the master's first touch charges to
	# the host's memory cgroup.
	local pages kind region taken left total=0 mb
	for pages in require never; do
		"$vecring" txonly --role master --domain dkm --link l0 --run-dir "$RUN_DIR" --owner "$CTR_UID:$CTR_UID" \
			--hugepages "$pages" --slots 32768 --slot-size 2048 --size 1500 --seconds 2 \
			>"$WORK/mem_m_$pages.log" 2>&1
		expect_eq "memory ($pages): the host's master ran to its end" "$?" 0
		kind=hugepages
		[ "$pages" = require ] || kind="4 KiB pages"
		region=$(sed -n "s/.*slave attached: .*; \([0-9]*\) MiB region, $kind.*/\1/p" "$WORK/mem_m_$pages.log" | head -n1)
		taken=$(sed -n 's/^txonly: sent .* taken by the peer \([0-9]*\);.*/\1/p' "$WORK/mem_m_$pages.log")
		left=$(sed -n 's/^txonly: .* still in the ring \([0-9]*\).*/\1/p' "$WORK/mem_m_$pages.log")
		if [ -n "$region" ]; then
			pass "memory ($pages): the link's region is $region MiB of $kind"
		else
			fail "memory ($pages): the master did not report a region of $kind"
			grep -E "region|attached" "$WORK/mem_m_$pages.log" | sed 's/^/    /'
			region=0
		fi
		expect_gt "memory ($pages): the region is larger than the container's memory limit (MiB)" "$region" 64
		expect_gt "memory ($pages): the host's master sent" "$taken" 0
		expect_eq "memory ($pages): ... and nothing was left unread in the ring" "$left" 0
		total=$((total + ${taken:-0}))
		mb=$(($(cat "$mem/memory.max_usage_in_bytes") >> 20))
		if [ "$region" -gt 0 ] && [ "$mb" -lt "$region" ]; then
			pass "memory ($pages): the container's memory peak so far ($mb MiB) stayed below the region's size ($region MiB)"
		else
			fail "memory ($pages): the container's memory peak so far ($mb MiB) reached the region's size ($region MiB)"
		fi
	done
	echo >&"$fd"
	local got
	for ((i = 0; i < 50; i++)); do
		grep -q '^rx ' "$WORK/mem_s.log" && break
		sleep 0.1
	done
	got=$(grep '^rx ' "$WORK/mem_s.log" | tail -n1 | cut -d' ' -f2)
	local peak usage failcnt h1 hmax
	peak=$(cat "$mem/memory.max_usage_in_bytes")
	usage=$(cat "$mem/memory.usage_in_bytes")
	failcnt=$(cat "$mem/memory.failcnt")
	h1=$(cat "$top/hugetlb.2MB.current")
	hmax=$(awk '$1 == "max" { print $2 }' "$top/hugetlb.2MB.events")
	eval "exec $fd>&-"
	wait "$client"
	log "memory: container memory before $((before >> 10)) KiB, after $((usage >> 10)) KiB, peak $((peak >> 10)) KiB; hugetlb before $h0, after $h1"
	expect_eq "memory: the container received every frame of both masters" "$got" "$total"
	expect_eq "memory: the container never hit its memory limit (memory.failcnt)" "$failcnt" 0
	expect_eq "memory: the containers' hugetlb usage stayed 0 (hugetlb.2MB.current)" "$h1" 0
	expect_eq "memory: ... and no hugepage was refused to them (hugetlb.2MB.events max)" "$hmax" 0
	hugetlb_off
}
