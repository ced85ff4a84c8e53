# shellcheck shell=bash
# Group "criu", sourced by tests/containers/podman.sh: checkpointing a
# rootful container (`podman container checkpoint`, runc) with the CRIU
# scripts/criu.sh builds (Debian 12's 3.17.1 fails `criu check` on this
# kernel). What CRIU does today with a container holding a link:
#   criu_control  a container holding no link is checkpointed and
#                 restored: CRIU works here
#   criu_link     a container whose `vecring rxonly --netns self` is
#                 receiving from the host's master: the checkpoint fails,
#                 CRIU's log naming the link's Unix socket (its peer is the
#                 master, outside the container); the container keeps
#                 running and its slave receives every frame the master
#                 sends, before, during and after the attempt

group criu criu_control criu_link

CRIU_BIN=

# criu_setup: the CRIU to use, built once; `criu check` says it works.
criu_setup() {
	[ -n "$CRIU_BIN" ] && return 0
	CRIU_BIN=$(bash "$ROOT/scripts/criu.sh" 2>"$WORK/criu-build.log") ||
		{ fail "criu: scripts/criu.sh did not build CRIU"; tail -n 5 "$WORK/criu-build.log" | sed 's/^/    /'; CRIU_BIN=; return 1; }
	rm -f /run/criu.kdat
	if "$CRIU_BIN" check >"$WORK/criu-check.log" 2>&1 && grep -q "Looks good" "$WORK/criu-check.log"; then
		pass "criu: $("$CRIU_BIN" --version | head -n1) from scripts/criu.sh: criu check looks good"
	else
		fail "criu: criu check: $(tail -n 3 "$WORK/criu-check.log")"
		return 1
	fi
}

# cpt ARGS...: rootful podman with the built CRIU first on the PATH (runc
# runs `criu` from it).
cpt() { PATH=$(dirname "$CRIU_BIN"):$PATH pm "$@"; }

test_criu_control() {
	criu_setup || return
	pm run -d --runtime runc "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" --name crctl "$IMAGE" /bin/sleep 120 >/dev/null ||
		{ fail "criu_control: the container did not start"; return; }
	if cpt container checkpoint crctl >"$WORK/criu-ctl.log" 2>&1 && cpt container restore crctl >>"$WORK/criu-ctl.log" 2>&1 &&
		[ "$(pm inspect -f '{{.State.Status}}' crctl 2>/dev/null)" = running ]; then
		pass "criu_control: a container holding no link is checkpointed and restored (running again)"
	else
		fail "criu_control: checkpoint and restore: $(tail -n 3 "$WORK/criu-ctl.log")"
	fi
	pm rm -f -t 0 crctl >/dev/null 2>&1
}

test_criu_link() {
	local pid i dump taken got
	criu_setup || return
	slave_start crlink timeout 100 "${PM[@]}" run -i --name crlink --runtime runc "${PM_RUN[@]}" \
		--cgroup-parent "$PODMAN_CG" "$IMAGE" /bin/vecring rxonly --domain cr --link l0 --netns self --interval 0 --up-timeout 60
	pid=$(container_pid crlink "${PM[@]}") || { fail "criu_link: the container did not start"; slave_stop crlink; return; }
	# Five seconds of link up: the checkpoint is tried while it is.
	timeout --kill-after=5 "$WATCHDOG" "$VECRING" txonly --role master --domain cr --link l0 --run-dir "$WORK/run-cr" \
		--netns "/proc/$pid/ns/net" --seconds 5 --up-timeout 60 >"$WORK/crlink_m.log" 2>&1 &
	MASTER_PID=$!
	PIDS+=("$MASTER_PID")
	attached crlink_m >/dev/null || { fail "criu_link: no slave attached"; slave_stop crlink; return; }
	if cpt container checkpoint crlink >"$WORK/criu-link.log" 2>&1; then
		fail "criu_link: the checkpoint of a container holding a link succeeded (this test expects CRIU to refuse it)"
	else
		dump=$(find "$WORK/storage" -name dump.log -path "*userdata*" 2>/dev/null | head -n1)
		if [ -n "$dump" ] && grep -q "Dumping FAILED" "$dump" && grep -qE "Error \(criu/sk-unix" "$dump"; then
			pass "criu_link: the checkpoint fails: $(grep -m1 -E 'Error \(criu/sk-unix' "$dump" | sed 's/^([^)]*) //')"
		else
			fail "criu_link: the checkpoint failed, not on the link's socket: $(tail -n 3 "$WORK/criu-link.log")"
		fi
	fi
	[ "$(pm inspect -f '{{.State.Status}}' crlink 2>/dev/null)" = running ] &&
		pass "criu_link: the container keeps running after the failed checkpoint" ||
		fail "criu_link: the container is $(pm inspect -f '{{.State.Status}}' crlink 2>&1)"
	wait "$MASTER_PID" 2>/dev/null
	taken=$(master_taken crlink_m)
	for ((i = 0; i < 50; i++)); do
		got=$(slave_count crlink)
		[ "$got" = "$taken" ] && break
		sleep 0.2
	done
	[[ "${taken:-0}" -gt 0 ]] 2>/dev/null || fail "criu_link: the master sent nothing"
	expect_eq "criu_link: the slave received every frame the master sent, across the attempt" "$got" "$taken"
	pm rm -f -t 0 crlink >/dev/null 2>&1
	slave_stop crlink
}
