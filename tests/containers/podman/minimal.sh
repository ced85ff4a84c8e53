# shellcheck shell=bash
# Group "minimal", sourced by tests/containers/podman.sh: a container that
# needs nothing but the link. Its slave (the vecring tool; Debian's
# dpdk-testpmd with --no-huge in minimal_testpmd) runs with
# --cap-drop=ALL, a non-root --user, --security-opt no-new-privileges, the
# runtime's default seccomp profile (and AppArmor's when the host has it
# on), no hugetlbfs and no /dev/hugepages, a memory limit smaller than the
# link's region (64 MiB; testpmd 192 MiB, its EAL memory on ordinary
# pages; the region 262 MiB of 2 MiB hugepages, --hugepages require on
# the master) and a hugetlb limit of 0 in its cgroup. It attaches and
# takes every frame, and neither its memory nor its hugetlb usage grows by
# the region's size: the master created and first touched the region, so
# the pages are charged to the host side.
#
# Podman has no option for a hugetlb limit (and --cgroup-conf works on
# cgroup v2 alone), so the group writes it itself: between `podman init`
# (the container's process exists, stopped before the program) and
# `podman start`, into the container's hugetlb cgroup. On a hybrid layout
# whose v2 hierarchy holds hugetlb (this machine), the runtime (runc) puts
# the container in the v2 hierarchy at its v1 path too; the group enables
# hugetlb in the subtree_control of the v2 root (for the test's time) and of
# the containers' parent, $PODMAN_CG.
#
# minimal_limits is the control: the same container made the link's
# creator (a vecring master inside it, a slave on the host) cannot get the
# region, so the limits hold and the readings above would show a region
# charged to the container: with hugepages required the hugetlb limit
# refuses them (the host's slave is told "hugepages required but
# unavailable"; the cgroup counts the refusal), on ordinary pages the
# memory limit kills the master (SIGKILL, status 137).

group minimal minimal_tool minimal_testpmd minimal_limits

MIN_UID=4242
MIN_MEM=$((64 << 20))
HUGETLB_ENABLED=()   # v2 cgroups whose subtree_control the group enabled hugetlb in

# no_huge CASE: with VECRING_TEST_NO_HUGE=1 the group's cases, which are
# about a hugepage link, say so and pass.
no_huge() {
	[ "${VECRING_TEST_NO_HUGE:-0}" = 1 ] || return 1
	echo "SKIPPED: $1 needs 2 MiB hugepages on the host (VECRING_TEST_NO_HUGE=1)"
}

# cg_v1 CONTROLLER PID: PID's cgroup directory of a v1 CONTROLLER, if the
# controller is mounted on its own.
cg_v1() {
	local path mnt
	path=$(awk -F: -v c="$1" '$1 != 0 { n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$2/cgroup")
	mnt=$(awk -v c="$1" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") { print $2; exit }' /proc/mounts)
	[ -n "$path" ] && [ -n "$mnt" ] && echo "$mnt$path"
}

# cg_v2 PID: PID's directory in the v2 hierarchy.
cg_v2() {
	local mnt
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$mnt" ] && echo "$mnt$(sed -n 's/^0:://p' "/proc/$1/cgroup")"
}

# hugetlb_zero PID: sets PID's cgroup's hugetlb limits (every page size) to
# 0; HDIR is the directory, HSCHEME its files' scheme ("v1" or "v2").
hugetlb_zero() {
	local dir v2 d f rel
	if dir=$(cg_v1 hugetlb "$1"); then
		for f in "$dir"/hugetlb.*.limit_in_bytes; do echo 0 >"$f" || return 1; done
		HDIR=$dir HSCHEME=v1
		return 0
	fi
	grep -qw hugetlb "$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)/cgroup.controllers" 2>/dev/null || return 1
	dir=$(cg_v2 "$1")
	v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	# Every ancestor passes hugetlb down.
	rel=${dir#"$v2"}
	d=$v2
	local parts
	IFS=/ read -ra parts <<<"${rel#/}"
	for f in "${parts[@]}"; do
		if ! grep -qw hugetlb "$d/cgroup.subtree_control"; then
			echo +hugetlb >"$d/cgroup.subtree_control" || return 1
			HUGETLB_ENABLED+=("$d")
		fi
		d=$d/$f
	done
	for f in "$dir"/hugetlb.*.max; do echo 0 >"$f" || return 1; done
	HDIR=$dir HSCHEME=v2
}

# hugetlb_restore: hugetlb off again where the group turned it on (deepest
# first; the containers' parent is gone by then).
hugetlb_restore() {
	local i d
	for ((i = ${#HUGETLB_ENABLED[@]} - 1; i >= 0; i--)); do
		d=${HUGETLB_ENABLED[$i]}
		[ -d "$d" ] && { echo -hugetlb >"$d/cgroup.subtree_control" 2>/dev/null ||
			log "could not turn hugetlb off again in $d/cgroup.subtree_control"; }
	done
	HUGETLB_ENABLED=()
}

# hugetlb_usage DIR SCHEME: the 2 MiB pages' usage in bytes; and
# hugetlb_hits: how often the limit refused a page.
hugetlb_usage() {
	if [ "$2" = v1 ]; then cat "$1/hugetlb.2MB.usage_in_bytes"; else cat "$1/hugetlb.2MB.current"; fi
}
hugetlb_hits() {
	if [ "$2" = v1 ]; then cat "$1/hugetlb.2MB.failcnt"; else awk '$1 == "max" { print $2 }' "$1/hugetlb.2MB.events"; fi
}

# mem_usage DIR: the memory cgroup's usage now, its peak, how often it hit
# its limit (v1 memory.* or v2 memory.*), as "NOW PEAK HITS".
mem_usage() {
	if [ -e "$1/memory.usage_in_bytes" ]; then
		echo "$(cat "$1/memory.usage_in_bytes") $(cat "$1/memory.max_usage_in_bytes") $(cat "$1/memory.failcnt")"
	else
		echo "$(cat "$1/memory.current") $(cat "$1/memory.peak" 2>/dev/null || cat "$1/memory.current") $(awk '$1 == "max" { print $2 }' "$1/memory.events")"
	fi
}

# The slave's process as the host sees it: no capability at all, no new
# privileges, a seccomp filter, the non-root uid, no hugetlbfs mount and
# no /dev/hugepages; AppArmor's profile when the host has AppArmor on.
min_process() {
	local pid=$1 st
	st=/proc/$pid/status
	expect_eq "minimal: the slave's effective, permitted and bounding capabilities" \
		"$(awk '/^Cap(Eff|Prm|Bnd):/ { printf "%s ", $2 }' "$st")" \
		"0000000000000000 0000000000000000 0000000000000000 "
	expect_eq "minimal: the slave's NoNewPrivs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")" 1
	expect_eq "minimal: the slave runs under a seccomp filter (mode 2, the runtime's default profile)" \
		"$(awk '/^Seccomp:/ { print $2 }' "$st")" 2
	expect_eq "minimal: the slave's uid" "$(awk '/^Uid:/ { print $3 }' "$st")" "$MIN_UID"
	expect_eq "minimal: hugetlbfs mounts in the container" "$(grep -c ' - hugetlbfs ' "/proc/$pid/mountinfo")" 0
	[ -e "/proc/$pid/root/dev/hugepages" ] && fail "minimal: the container has /dev/hugepages" ||
		pass "minimal: the container has no /dev/hugepages"
	if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ]; then
		local prof
		prof=$(cat "/proc/$pid/attr/current" 2>/dev/null)
		[ -n "$prof" ] && [ "$prof" != unconfined ] &&
			pass "minimal: the slave is confined by AppArmor's profile $prof" ||
			fail "minimal: the slave is not confined by AppArmor ('$prof')"
	else
		log "minimal: AppArmor is not enabled on this host: no profile to apply"
	fi
	# The region is in the slave's address space, all of it on hugepages.
	MIN_MAPPED=$(awk '/^Shared_Hugetlb:/ { print $2 * 1024 }' "/proc/$pid/smaps_rollup")
}

test_minimal_tool() {
	no_huge minimal_tool && return
	local RUN=$WORK/run DOM=min free ID PID mdir mem0 mem1 h0 h1
	free=$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)
	[ "${free:-0}" -ge 140 ] || { fail "minimal: $free free 2 MiB hugepages, 140 needed for the 262 MiB region"; return; }
	"$VECRING" prepare --domain "$DOM" --run-dir "$RUN" --owner "$MIN_UID:$MIN_UID" >/dev/null 2>&1 ||
		{ fail "minimal: vecring prepare --owner"; return; }
	# shellcheck disable=SC2046
	if ! min_container minimal $(slave_cmd "$RUN" "$DOM"); then
		fail "minimal: the container could not be made with its limits (a hugetlb controller in v1 or v2 is needed)"
		[ -z "${ID:-}" ] || pm rm -f "$ID" >/dev/null 2>&1
		return
	fi
	log "minimal: hugetlb limit 0 set in $HDIR ($HSCHEME), by the test: podman has no option for it here"
	mdir=$(cg_v1 memory "$PID") || mdir=$(cg_v2 "$PID")
	expect_eq "minimal: the container's memory limit ($mdir)" \
		"$(cat "$mdir/memory.limit_in_bytes" 2>/dev/null || cat "$mdir/memory.max")" "$MIN_MEM"
	mem0=$(mem_usage "$mdir")
	h0=$(hugetlb_usage "$HDIR" "$HSCHEME")
	slave_start minimal "${PM[@]}" start -a -i "$ID"
	master_start minimal_m "" "$RUN" "$DOM" --owner "$MIN_UID:$MIN_UID" --hugepages require \
		--slots 262144 --slot-size 512
	AFTER_HOOK=min_after link_traffic "minimal" minimal minimal_m "$MIN_UID" min_process
	pm rm -f "$ID" >/dev/null 2>&1
	min_verdict minimal minimal_m
}

# min_after PID: the cgroups' readings after the traffic, the container
# still up.
min_after() {
	mem1=$(mem_usage "$mdir")
	h1=$(hugetlb_usage "$HDIR" "$HSCHEME")
	HUGE_HITS=$(hugetlb_hits "$HDIR" "$HSCHEME")
}

# min_container NAME COMMAND...: a container of IMAGE (CTR_IMAGE) with no
# capability, uid MIN_UID, no new privileges, MIN_MEM (CTR_MEM) of memory,
# the domain directory DOM of $RUN bound in, created and initialised, its
# hugetlb limit 0; ID and PID set.
min_container() {
	local log=$WORK/$1-create.log
	shift
	ID=$(pm create -i --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" \
		--cap-drop=ALL --user "$MIN_UID:$MIN_UID" --security-opt no-new-privileges \
		--memory "${CTR_MEM:-$MIN_MEM}" -v "$RUN/$DOM:$RUN/$DOM" "${CTR_IMAGE:-$IMAGE}" "$@" 2>"$log") &&
		timeout 60 "${PM[@]}" init "$ID" >/dev/null 2>>"$log" || { sed 's/^/    /' "$log"; return 1; }
	PID=$(pm inspect -f '{{.State.Pid}}' "$ID")
	hugetlb_zero "$PID"
}

test_minimal_limits() {
	no_huge minimal_limits && return
	local RUN=$WORK/run-bite DOM=bite ID PID hp i status
	mkdir -p "$RUN/$DOM"
	chmod 0755 "$RUN"
	# The domain directory the container's master writes.
	chown "$MIN_UID:$MIN_UID" "$RUN/$DOM"
	chmod 0700 "$RUN/$DOM"
	for hp in require never; do
		min_container "bite_$hp" /bin/vecring txonly --role master --domain "$DOM" --link l0 \
			--run-dir "$RUN" --hugepages "$hp" --slots 262144 --slot-size 512 --allow-uid 0 \
			--seconds 1 --up-timeout 30 ||
			{ fail "minimal limits ($hp): the container could not be made with its limits"; continue; }
		timeout 60 "${PM[@]}" start "$ID" >/dev/null
		slave_start "bite_$hp" "$VECRING" rxonly --domain "$DOM" --link l0 --run-dir "$RUN" \
			--up-timeout 30 --interval 0
		if [ "$hp" = require ]; then
			for ((i = 0; i < 100; i++)); do
				grep -q 'hugepages required but unavailable' "$WORK/bite_$hp.err" && break
				sleep 0.1
			done
			grep -q 'hugepages required but unavailable' "$WORK/bite_$hp.err" &&
				pass "minimal limits: a master inside the container gets no hugepages for its region (hugetlb limit 0)" ||
				fail "minimal limits: the container's master was not refused hugepages: $(tail -n 1 "$WORK/bite_$hp.err")"
			local hits
			hits=$(hugetlb_hits "$HDIR" "$HSCHEME")
			[ "${hits:-0}" -ge 1 ] && pass "minimal limits: the container's hugetlb cgroup counted the refusal ($hits)" ||
				fail "minimal limits: the hugetlb cgroup counted no refusal ('$hits')"
		else
			status=$(timeout 60 "${PM[@]}" wait "$ID" 2>/dev/null)
			expect_eq "minimal limits: a master inside the container making the region on ordinary pages is killed by the memory limit (status)" "$status" 137
		fi
		pm rm -f -t 0 "$ID" >/dev/null 2>&1
		slave_stop "bite_$hp"
	done
}

# min_verdict WHAT MASTER: the region (from master MASTER's log) was on
# hugepages and larger than the container's memory limit, the slave had it
# mapped, and the container's memory (mem0, mem1) and hugetlb (h1,
# HUGE_HITS) readings did not grow by it.
min_verdict() {
	local region
	region=$(sed -n 's/.*slave attached: .*; \([0-9]*\) MiB region, hugepages.*/\1/p' "$WORK/$2.log")
	[ -n "$region" ] && region=$((region << 20))
	[ -n "$region" ] && pass "$1: the master's region is on hugepages ($((region >> 20)) MiB)" ||
		{ fail "$1: the master's region is not on hugepages: $(grep -m1 'slave attached' "$WORK/$2.log")"; return; }
	expect_lt "$1: the container's memory limit is below the region's size" "${CTR_MEM:-$MIN_MEM}" "$region"
	[ "${MIN_MAPPED:-0}" -ge "$region" ] &&
		pass "$1: the slave had the whole region mapped ($MIN_MAPPED bytes of hugepages)" ||
		fail "$1: the slave mapped ${MIN_MAPPED:-0} bytes of hugepages, the region is $region"
	local n0 p0 f0 n1 p1 f1
	read -r n0 p0 f0 <<<"$mem0"
	read -r n1 p1 f1 <<<"$mem1"
	log "$1: the container's memory before $n0, after $n1, peak $p1 bytes; hugetlb before $h0, after $h1"
	expect_lt "$1: the container's peak memory usage stays below the region's size" "$p1" "$region"
	expect_lt "$1: the container's memory grew by less than the region's size" "$((n1 - n0 < 0 ? 0 : n1 - n0))" "$region"
	expect_eq "$1: times the container hit its memory limit" "$f1" 0
	expect_eq "$1: the container's hugetlb usage after the traffic (limit 0)" "$h1" 0
	expect_eq "$1: times the hugetlb limit refused the container a page" "$HUGE_HITS" 0
}

# testpmd's counters: the RX-packets of its last "stop" (the accumulated
# forward statistics).
pmd_rx() {
	grep -A1 'Accumulated forward statistics' "$WORK/$1.out" | sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' | tail -n1
}

# wait_out NAME TEXT: until session NAME's output has TEXT (30 s).
wait_out() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -qF -- "$2" "$WORK/$1.out" && return 0
		sleep 0.1
	done
	return 1
}

# Debian's dpdk-testpmd (scripts/image.sh's DPDK image) as the slave, its
# EAL memory on ordinary pages (--no-huge -m 64, --no-shconf: no files;
# IOVA as virtual addresses, a process without privilege sees no physical
# ones; --no-mlockall), forwarding rxonly. The host's master sends for
# 2 s; testpmd's RX-packets is what the master's peer took.
test_minimal_testpmd() {
	no_huge minimal_testpmd && return
	[ "$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)" -ge 140 ] ||
		{ fail "minimal testpmd: 140 free 2 MiB hugepages needed for the 262 MiB region"; return; }
	local RUN=$WORK/run DOM=minpmd CTR_MEM=$((192 << 20)) CTR_IMAGE=$DPDK_IMAGE ID PID mdir mem0 mem1 h0 h1 seen pid uid taken= fdvar
	dpdk_image || { fail "minimal testpmd: the DPDK image (scripts/image.sh dpdk, podman import)"; sed 's/^/    /' "$WORK/dpdk-image.log"; return; }
	"$VECRING" prepare --domain "$DOM" --run-dir "$RUN" --owner "$MIN_UID:$MIN_UID" >/dev/null 2>&1 ||
		{ fail "minimal testpmd: vecring prepare --owner"; return; }
	if ! min_container minimal_pmd /bin/dpdk-testpmd --no-huge -m 64 --no-shconf --no-pci -l 0-1 \
		--iova-mode=va "--vdev=eth_vecring0,domain=$DOM,link=l0,run_dir=$RUN" -- \
		-i --forward-mode=rxonly --no-mlockall --total-num-mbufs=2048 --no-flush-rx; then
		fail "minimal testpmd: the container could not be made with its limits"
		[ -z "${ID:-}" ] || pm rm -f "$ID" >/dev/null 2>&1
		return
	fi
	mdir=$(cg_v1 memory "$PID") || mdir=$(cg_v2 "$PID")
	mem0=$(mem_usage "$mdir")
	h0=$(hugetlb_usage "$HDIR" "$HSCHEME")
	slave_start pmd "${PM[@]}" start -a -i "$ID"
	fdvar=SLAVE_FD_pmd
	wait_out pmd "testpmd> " || { fail "minimal testpmd: testpmd did not start"; tail -n 5 "$WORK/pmd.out" | sed 's/^/    /'; slave_stop pmd; pm rm -f "$ID" >/dev/null 2>&1; return; }
	echo start >&"${!fdvar}"
	master_start pmd_m "" "$RUN" "$DOM" --owner "$MIN_UID:$MIN_UID" --hugepages require \
		--slots 262144 --slot-size 512
	if ! seen=$(attached pmd_m); then
		fail "minimal testpmd: no slave attached"
		tail -n 3 "$WORK/pmd_m.log" "$WORK/pmd.out" | sed 's/^/    /'
	else
		read -r pid uid <<<"$seen"
		expect_eq "minimal testpmd: the master saw the container's testpmd attach as uid" "$uid" "$MIN_UID"
		in_container "minimal testpmd" "$pid"
		min_process "$pid"
		wait "$MASTER_PID" 2>/dev/null
		taken=$(master_taken pmd_m)
		min_after
		# testpmd's output is a pipe, block-buffered: its statistics show
		# once it quits.
		echo stop >&"${!fdvar}"
	fi
	echo quit >&"${!fdvar}"
	slave_stop pmd
	if [ -n "${taken:-}" ]; then
		[[ "$taken" -gt 0 ]] 2>/dev/null || fail "minimal testpmd: the master sent nothing"
		expect_eq "minimal testpmd: testpmd in the container received every frame the host's master sent" "$(pmd_rx pmd)" "$taken"
	fi
	pm rm -f "$ID" >/dev/null 2>&1
	min_verdict "minimal testpmd" pmd_m
}

# dpdk_image: scripts/image.sh's DPDK image (Debian's testpmd, the mempool
# driver and eth_vecring), imported once.
dpdk_image() {
	[ -z "${DPDK_IMAGE_DONE:-}" ] || return 0
	bash "$ROOT/scripts/image.sh" dpdk "$WORK/rootfs-dpdk" --tar "$WORK/image-dpdk.tar" >"$WORK/dpdk-image.log" 2>&1 &&
		timeout 120 "${PM[@]}" import -q "$WORK/image-dpdk.tar" "$DPDK_IMAGE" >>"$WORK/dpdk-image.log" 2>&1 &&
		DPDK_IMAGE_DONE=1
}
DPDK_IMAGE=localhost/vecring-test-dpdk:podman
