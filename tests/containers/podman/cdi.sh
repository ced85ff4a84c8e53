# shellcheck shell=bash
# Group "cdi", sourced by tests/containers/podman.sh: the link reaches the
# container as a CDI device (`vecring cdi write`, `podman run --device
# vecring.dev/link=NAME`), with no -v flag and no link option on the
# container's command line (the device's VECRING_DOMAIN, VECRING_LINK and
# VECRING_RUN_DIR are the tool's defaults):
#   cdi_rootful   a root master, a rootful container; the container's
#                 process has the device's environment and the domain
#                 directory mounted read-only
#   cdi_rootless  the test's user's own master and rootless container
#                 (rootless Podman reads the same spec directories), the
#                 spec in /etc/cdi (the static directory; the others use
#                 /var/run/cdi, the dynamic one)
#   cdi_owner     a root master with --owner for the user, the user's
#                 rootless container
#   cdi_testpmd   Debian's dpdk-testpmd in a rootful container, its port
#                 --vdev=eth_vecring0,env=1: the driver takes domain, link
#                 and run directory from the device's variables
#   cdi_netns_rootful   a device of network-namespace mode (cdi write
#                 --netns): nothing mounted, VECRING_NETNS=self; the root
#                 master listens in the container's network namespace
#   cdi_netns_rootless  the same in the user's rootless container
#   cdi_unknown   a device name no spec defines: podman's error, nothing
#                 started, no container left
#   cdi_missing   a device whose domain directory does not exist (never
#                 prepared, or gone at a reboot): the runtime's error naming
#                 it, no container left
#   cdi_spec      the spec file in /var/run/cdi: mode 0644, `cdi list
#                 --json` finds the devices, `cdi remove` takes them out and
#                 removes the file with the last one
# The spec files are this run's own (vecring-test-PID*.json in /var/run/cdi
# and /etc/cdi), its devices' domains too (no clash with a host's
# devices); the files, and the directories the group made, go at the end.

group cdi cdi_rootful cdi_rootless cdi_owner cdi_testpmd cdi_netns_rootful cdi_netns_rootless cdi_unknown cdi_missing cdi_spec

CDI_DIR=/var/run/cdi
CDI_SPEC=$CDI_DIR/vecring-test-$$.json
CDI_SPEC_2=$CDI_DIR/vecring-test-$$-2.json
CDI_ETC=/etc/cdi
CDI_SPEC_ETC=$CDI_ETC/vecring-test-$$.json
CDI_MADE_DIRS=()
for d in "$CDI_DIR" "$CDI_ETC"; do
	[ -e "$d" ] || CDI_MADE_DIRS+=("$d")
done

# cdi_cleanup: the run's spec files, and the directories the run made if
# they are empty (called by the runner's cleanup).
cdi_cleanup() {
	local d
	rm -f "$CDI_SPEC" "$CDI_SPEC_2" "$CDI_SPEC_ETC"
	for d in "${CDI_MADE_DIRS[@]}"; do
		rmdir "$d" 2>/dev/null
	done
}

# cdi_write ARGS...: `vecring cdi write ARGS --out ${CDI_OUT:-$CDI_SPEC}`,
# its output in $WORK/cdi-write.log.
cdi_write() {
	"$VECRING" cdi write "$@" --out "${CDI_OUT:-$CDI_SPEC}" >"$WORK/cdi-write.log" 2>&1 ||
		{ sed 's/^/    /' "$WORK/cdi-write.log"; return 1; }
}

# cdi_slave_cmd: the container's command: no domain, link or run directory.
cdi_slave_cmd() {
	echo /bin/vecring rxonly --interval 0 --up-timeout 60
}

# cdi_seen_in DIR LINK PID: the slave (host pid PID) has the device's
# environment and DIR mounted read-only.
cdi_seen_in() {
	local dir=$1 link=$2 pid=$3 env
	env=$(tr '\0' '\n' <"/proc/$pid/environ")
	grep -qx "VECRING_DOMAIN=$(basename "$dir")" <<<"$env" && grep -qx "VECRING_LINK=$link" <<<"$env" &&
		grep -qx "VECRING_RUN_DIR=$(dirname "$dir")" <<<"$env" &&
		pass "cdi: the container's process has the device's VECRING_DOMAIN, VECRING_LINK and VECRING_RUN_DIR" ||
		fail "cdi: the container's environment: $(grep VECRING_ <<<"$env" | tr '\n' ' ')"
	awk -v d="$dir" '$5 == d { split($6, o, ","); ro = (o[1] == "ro") } END { exit !ro }' "/proc/$pid/mountinfo" &&
		pass "cdi: $dir is mounted read-only in the container" ||
		fail "cdi: $dir in the container's mounts: $(awk -v d="$dir" '$5 == d' "/proc/$pid/mountinfo")"
}

test_cdi_rootful() {
	local run=$WORK/run dom=cdir$$
	"$VECRING" prepare --domain "$dom" --run-dir "$run" >/dev/null 2>&1 ||
		{ fail "cdi rootful: vecring prepare"; return; }
	cdi_write --domain "$dom" --link l0 --run-dir "$run" || { fail "cdi rootful: vecring cdi write"; return; }
	# shellcheck disable=SC2046
	slave_start cdi_rf "${PM[@]}" run --rm -i --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" \
		--device "vecring.dev/link=$dom-l0" "$IMAGE" $(cdi_slave_cmd)
	master_start cdi_rf_m "" "$run" "$dom"
	cdi_hook() { cdi_seen_in "$run/$dom" l0 "$1"; }
	link_traffic "cdi rootful, --device vecring.dev/link=$dom-l0" cdi_rf cdi_rf_m 0 cdi_hook
}

test_cdi_rootless() {
	user_setup || { fail "cdi rootless: the test user could not be set up"; return; }
	local run=$USR_HOME/run dom=cdiu$$
	user_domain "$dom" || { fail "cdi rootless: vecring prepare as $USR"; return; }
	CDI_OUT=$CDI_SPEC_ETC cdi_write --domain "$dom" --link l0 --run-dir "$run" ||
		{ fail "cdi rootless: vecring cdi write --out $CDI_SPEC_ETC"; return; }
	# shellcheck disable=SC2046
	slave_start cdi_rl "${UPM[@]}" run --rm -i --runtime "$URT" --network none \
		--device "vecring.dev/link=$dom-l0" "$IMAGE" $(cdi_slave_cmd)
	master_start cdi_rl_m "$USR" "$run" "$dom"
	cdi_hook() {
		cdi_seen_in "$run/$dom" l0 "$1"
		map_root "$1"
	}
	link_traffic "cdi rootless, the user's master, --device vecring.dev/link=$dom-l0 (spec in $CDI_ETC)" cdi_rl cdi_rl_m "$USR_UID" cdi_hook
}

test_cdi_owner() {
	user_setup || { fail "cdi owner: the test user could not be set up"; return; }
	local run=$WORK/run dom=cdio$$
	"$VECRING" prepare --domain "$dom" --run-dir "$run" --owner "$USR_UID:$USR_GID" >/dev/null 2>&1 ||
		{ fail "cdi owner: vecring prepare --owner"; return; }
	cdi_write --domain "$dom" --link l0 --run-dir "$run" || { fail "cdi owner: vecring cdi write"; return; }
	# shellcheck disable=SC2046
	slave_start cdi_ow "${UPM[@]}" run --rm -i --runtime "$URT" --network none \
		--device "vecring.dev/link=$dom-l0" "$IMAGE" $(cdi_slave_cmd)
	master_start cdi_ow_m "" "$run" "$dom" --owner "$USR_UID:$USR_GID"
	link_traffic "cdi rootless, a root master with --owner $USR_UID:$USR_GID" cdi_ow cdi_ow_m "$USR_UID" map_root
}

test_cdi_testpmd() {
	local run=$WORK/run dom=cdip$$ fdvar=SLAVE_FD_cdi_pmd seen pid uid taken=
	dpdk_image || { fail "cdi testpmd: the DPDK image (scripts/image.sh dpdk, podman import)"; sed 's/^/    /' "$WORK/dpdk-image.log"; return; }
	"$VECRING" prepare --domain "$dom" --run-dir "$run" >/dev/null 2>&1 ||
		{ fail "cdi testpmd: vecring prepare"; return; }
	cdi_write --domain "$dom" --link l0 --run-dir "$run" || { fail "cdi testpmd: vecring cdi write"; return; }
	# --no-flush-rx: `start` drains the RX queues before forwarding, and
	# the master may already be sending then: what it drained would be
	# received by the port (its rx_good_packets) but missing from the
	# forwarding statistics compared below.
	slave_start cdi_pmd "${PM[@]}" run --rm -i --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" \
		--device "vecring.dev/link=$dom-l0" "$DPDK_IMAGE" /bin/dpdk-testpmd --no-huge -m 64 --no-shconf \
		--no-pci -l 0-1 --iova-mode=va --vdev=eth_vecring0,env=1 -- \
		-i --forward-mode=rxonly --no-mlockall --total-num-mbufs=2048 --no-flush-rx
	wait_out cdi_pmd "testpmd> " ||
		{ fail "cdi testpmd: testpmd did not start"; tail -n 5 "$WORK/cdi_pmd.out" | sed 's/^/    /'; slave_stop cdi_pmd; return; }
	echo start >&"${!fdvar}"
	master_start cdi_pmd_m "" "$run" "$dom"
	if ! seen=$(attached cdi_pmd_m); then
		fail "cdi testpmd: no slave attached"
		tail -n 3 "$WORK/cdi_pmd_m.log" "$WORK/cdi_pmd.out" | sed 's/^/    /'
	else
		read -r pid uid <<<"$seen"
		in_container "cdi testpmd" "$pid"
		wait "$MASTER_PID" 2>/dev/null
		taken=$(master_taken cdi_pmd_m)
		# testpmd's output is a pipe, block-buffered: its statistics show
		# once it quits.
		echo stop >&"${!fdvar}"
	fi
	echo quit >&"${!fdvar}"
	slave_stop cdi_pmd
	if [ -n "$taken" ]; then
		[[ "$taken" -gt 0 ]] 2>/dev/null || fail "cdi testpmd: the master sent nothing"
		expect_eq "cdi testpmd: testpmd (env=1) in the container received every frame the host's master sent" "$(pmd_rx cdi_pmd)" "$taken"
	fi
}

# cdi_netns_link WHAT NAME PODMAN-ARRAY RUNTIME WANT_UID: a device of
# network-namespace mode; the container NAME started by that podman with
# it alone, the root master in its network namespace, traffic.
cdi_netns_link() {
	local what=$1 name=$2 arr=$3[@] rt=$4 want=$5 dom=$2$$ pid i env extra=()
	[ "$3" = PM ] && extra=("${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG")
	[ "$3" = UPM ] && extra=(--network none)
	cdi_write --domain "$dom" --link l0 --netns || { fail "$what: vecring cdi write --netns"; return; }
	# shellcheck disable=SC2046
	slave_start "$name" timeout 100 "${!arr}" run --rm -i --name "$name" --runtime "$rt" "${extra[@]}" \
		--device "vecring.dev/link=$dom-l0" "$IMAGE" $(cdi_slave_cmd)
	if ! pid=$(container_pid "$name" "${!arr}"); then
		fail "$what: the container did not start"
		sed 's/^/    /' "$WORK/$name.err" | tail -n 5
		slave_stop "$name"
		return
	fi
	env=$(tr '\0' '\n' <"/proc/$pid/environ")
	grep -qx "VECRING_NETNS=self" <<<"$env" && grep -qx "VECRING_DOMAIN=$dom" <<<"$env" &&
		! grep -q "^VECRING_RUN_DIR=" <<<"$env" &&
		pass "$what: the container's process has VECRING_NETNS=self and the domain, no run directory" ||
		fail "$what: the container's environment: $(grep VECRING_ <<<"$env" | tr '\n' ' ')"
	awk '$5 ~ /vecring/ { f = 1 } END { exit !f }' "/proc/$pid/mountinfo" &&
		fail "$what: something is mounted on a vecring path in the container" ||
		pass "$what: nothing is mounted on a vecring path in the container"
	master_start "${name}_m" "" "$WORK/run-ns" "$dom" --netns "/proc/$pid/ns/net"
	link_traffic "$what" "$name" "${name}_m" "$want"
}

test_cdi_netns_rootful() {
	cdi_netns_link "cdi netns rootful" cdinr PM "$RT" 0
}

test_cdi_netns_rootless() {
	user_setup || { fail "cdi netns rootless: the test user could not be set up"; return; }
	cdi_netns_link "cdi netns rootless" cdinu UPM "$URT" "$USR_UID"
}

# cdi_refused WHAT DEVICE TEXT: a rootful `podman run --device DEVICE`
# fails, its error has TEXT, and it leaves no container.
cdi_refused() {
	local what=$1 before after status log=$WORK/cdi-refused-$1.log
	before=$(pm ps -aq | sort)
	# shellcheck disable=SC2046
	timeout --kill-after=5 "$WATCHDOG" "${PM[@]}" run --rm --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" \
		--device "$2" "$IMAGE" $(cdi_slave_cmd) </dev/null >"$log" 2>&1
	status=$?
	after=$(pm ps -aq | sort)
	[ "$status" != 0 ] && [ "$status" != 124 ] && pass "cdi $what: podman run fails ($status)" ||
		fail "cdi $what: podman run's status $status"
	grep -qF "$3" "$log" && pass "cdi $what: the error says: $(grep -m1 -F "$3" "$log")" ||
		fail "cdi $what: podman said: $(tail -n 2 "$log")"
	[ "$before" = "$after" ] && pass "cdi $what: no container was left" ||
		fail "cdi $what: containers before '$before', after '$after'"
}

test_cdi_unknown() {
	cdi_refused unknown "vecring.dev/link=nosuch$$" "unresolvable CDI devices vecring.dev/link=nosuch$$"
}

test_cdi_missing() {
	local run=$WORK/run dom=cdim$$
	cdi_write --domain "$dom" --run-dir "$run" || { fail "cdi missing: vecring cdi write"; return; }
	grep -qF "$run/$dom does not exist yet" "$WORK/cdi-write.log" &&
		pass "cdi missing: vecring cdi write warns that the domain directory does not exist" ||
		fail "cdi missing: cdi write said: $(cat "$WORK/cdi-write.log")"
	cdi_refused missing "vecring.dev/link=$dom" "$run/$dom"
}

test_cdi_spec() {
	local dom=cdis$$ spec=$CDI_SPEC_2 doc mode
	"$VECRING" cdi write --domain "$dom" --link a --link b --run-dir "$WORK/run" --out "$spec" >"$WORK/cdi-spec.log" 2>&1 &&
		"$VECRING" cdi write --domain "$dom" --run-dir "$WORK/run" --out "$spec" >>"$WORK/cdi-spec.log" 2>&1 ||
		{ fail "cdi spec: vecring cdi write"; sed 's/^/    /' "$WORK/cdi-spec.log"; return; }
	mode=$(stat -c %a "$spec")
	expect_eq "cdi spec: the spec file's mode (rootless Podman reads it as its user)" "$mode" 644
	doc=$("$VECRING" cdi list --json)
	expect_eq "cdi spec: cdi list --json finds the domain's devices in $CDI_DIR" \
		"$(grep -o "\"device\":\"vecring.dev/link=$dom[^\"]*\"" <<<"$doc" | LC_ALL=C sort | tr '\n' ' ')" \
		"\"device\":\"vecring.dev/link=$dom\" \"device\":\"vecring.dev/link=$dom-a\" \"device\":\"vecring.dev/link=$dom-b\" "
	"$VECRING" cdi remove --domain "$dom" --link a --out "$spec" >>"$WORK/cdi-spec.log" 2>&1
	expect_eq "cdi spec: cdi remove --link takes that link's device out" \
		"$(grep -o '"name": "[^"]*"' "$spec" | tr '\n' ' ')" "\"name\": \"$dom-b\" \"name\": \"$dom\" "
	"$VECRING" cdi remove --domain "$dom" --out "$spec" >>"$WORK/cdi-spec.log" 2>&1
	[ ! -e "$spec" ] && pass "cdi spec: cdi remove of the domain removes the file with its last device" ||
		fail "cdi spec: $spec remains: $(cat "$spec")"
}
