# shellcheck shell=bash
# Group "mistakes", sourced by tests/containers/podman.sh: what a user sees
# after the two commonest mistakes, and that the host's side survives them.
#   mistake_owner  a root master opened to another uid (--owner 4242:4242)
#                  than the rootless container's (the test's user): the
#                  container's slave cannot open the socket (Permission
#                  denied); with the socket opened to others, the master
#                  refuses it, naming the uid it takes; it keeps waiting
#   mistake_mount  a rootful container started without the domain
#                  directory's -v: its slave says it found no master at
#                  the socket's path, and asks whether it runs with the
#                  same --domain, --link and --run-dir

group mistakes mistake_owner mistake_mount

test_mistake_owner() {
	user_setup || { fail "mistakes: the test user could not be set up"; return; }
	local run=$WORK/run dom=wrong i status pidvar
	"$VECRING" prepare --domain "$dom" --run-dir "$run" --owner 4242:4242 >/dev/null 2>&1 ||
		{ fail "mistake owner: vecring prepare --owner"; return; }
	master_start wrong_m "" "$run" "$dom" --owner 4242:4242
	for ((i = 0; i < 100; i++)); do
		[ -S "$run/$dom/l0.sock" ] && break
		sleep 0.1
	done
	# The socket is 4242's group's: the user's container cannot open it.
	slave_start wrong "${UPM[@]}" run --rm -i --runtime "$URT" --network none \
		-v "$run/$dom:$run/$dom" "$IMAGE" /bin/vecring rxonly --domain "$dom" --link l0 --run-dir "$run" --up-timeout 3
	pidvar=SLAVE_PID_wrong
	wait "${!pidvar}" 2>/dev/null
	status=$?
	grep -qF "cannot connect to $run/$dom/l0.sock: Permission denied" "$WORK/wrong.err" &&
		pass "mistake owner: the container's slave is told it may not open the socket (Permission denied)" ||
		fail "mistake owner: the slave's messages: $(grep -m1 -i 'cannot\|error' "$WORK/wrong.err")"
	[ "$status" != 0 ] && pass "mistake owner: the slave exits with an error ($status)" ||
		fail "mistake owner: the slave exited with status 0"
	slave_stop wrong
	# With the socket open to others, the master itself refuses the uid,
	# and says which one it takes.
	chmod o+rw "$run/$dom/l0.sock"
	slave_start wrong2 "${UPM[@]}" run --rm -i --runtime "$URT" --network none \
		-v "$run/$dom:$run/$dom" "$IMAGE" /bin/vecring rxonly --domain "$dom" --link l0 --run-dir "$run" --up-timeout 10
	pidvar=SLAVE_PID_wrong2
	wait "${!pidvar}" 2>/dev/null
	status=$?
	grep -q "uid $USR_UID is not allowed to attach (allowed: \[4242\])" "$WORK/wrong2.err" &&
		pass "mistake owner: a slave that reaches the socket is told its uid $USR_UID may not attach, and that 4242 may" ||
		fail "mistake owner: the slave's message: $(tail -n 1 "$WORK/wrong2.err")"
	[ "$status" != 0 ] && pass "mistake owner: that slave exits with an error ($status)" ||
		fail "mistake owner: that slave exited with status 0"
	slave_stop wrong2
	kill -0 "$MASTER_PID" 2>/dev/null && pass "mistake owner: the master keeps waiting for an allowed slave" ||
		fail "mistake owner: the master exited"
	grep -q "refus" "$WORK/wrong_m.log" && pass "mistake owner: the master logs the refusal" ||
		fail "mistake owner: no refusal in the master's log"
	kill_tree "$MASTER_PID"
	wait "$MASTER_PID" 2>/dev/null
}

test_mistake_mount() {
	local run=$WORK/run dom=nomount
	"$VECRING" prepare --domain "$dom" --run-dir "$run" >/dev/null 2>&1 ||
		{ fail "mistake mount: vecring prepare"; return; }
	master_start nomount_m "" "$run" "$dom"
	slave_start nomount "${PM[@]}" run --rm -i --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" "$IMAGE" \
		/bin/vecring rxonly --domain "$dom" --link l0 --run-dir "$run" --up-timeout 2
	local pidvar=SLAVE_PID_nomount status
	wait "${!pidvar}" 2>/dev/null
	status=$?
	grep -qF "no master on $run/$dom/l0.sock after 2 s (--up-timeout): is it running, with the same --domain, --link and --run-dir?" "$WORK/nomount.err" &&
		pass "mistake mount: without the -v the container's slave finds no master at $run/$dom/l0.sock, and says what to check" ||
		fail "mistake mount: the slave's message: $(tail -n 1 "$WORK/nomount.err")"
	[ "$status" != 0 ] && pass "mistake mount: the slave exits with an error ($status)" ||
		fail "mistake mount: the slave exited with status 0"
	slave_stop nomount
	kill -0 "$MASTER_PID" 2>/dev/null && pass "mistake mount: the host's master is still waiting" ||
		fail "mistake mount: the master exited"
	kill_tree "$MASTER_PID"
	wait "$MASTER_PID" 2>/dev/null
}
