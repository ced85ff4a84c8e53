# shellcheck shell=bash
# Helpers of tests/containers/podman.sh: rootful and rootless Podman with
# their own storage, the vecring tool as a host master (txonly) and as a
# container's slave (rxonly) answering counts on request, and the checks
# the cases share. The runner sets WORK, VECRING, IMAGE, RT (the OCI
# runtime), PODMAN_CG (the rootful containers' cgroup parent) and the
# pass/fail/log functions.

# pm ARGS...: rootful podman whose images, containers, run state and events
# all live in $WORK (nothing in /var/lib/containers or /run/libpod). Each
# container gets limits no higher than this shell's (podman's defaults,
# nofile 1048576, need CAP_SYS_RESOURCE to raise to, which a root inside
# a sandbox may lack) and its cgroups under $PODMAN_CG.
# PM is the same command as an array, for `timeout`; pm, upm and as_user
# give up after 2 minutes.
PM=(podman --root "$WORK/storage" --runroot "$WORK/runroot" --tmpdir "$WORK/libpod"
	--cgroup-manager=cgroupfs --events-backend=file)
pm() { timeout --kill-after=5 120 "${PM[@]}" "$@"; }
PM_RUN=(--network none --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

# as_user COMMAND...: COMMAND as the test's user $USR (home $USR_HOME),
# with a clean environment; AS_USER is the same as an array, for
# `timeout`. upm ARGS... (UPM): rootless podman as that user. Without
# systemd or a login session nobody makes the user's runtime directory, so
# XDG_RUNTIME_DIR names one in the home; without systemd there is no
# cgroup manager to delegate to (cgroupfs) nor a journal (events to a
# file). user_env sets the arrays once USR is known.
user_env() {
	AS_USER=(runuser -u "$USR" -- env -i HOME="$USR_HOME" USER="$USR" LOGNAME="$USR"
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		XDG_RUNTIME_DIR="$USR_HOME/xdg")
	UPM=("${AS_USER[@]}" podman --cgroup-manager=cgroupfs --events-backend=file)
}
as_user() { timeout --kill-after=5 120 "${AS_USER[@]}" "$@"; }
upm() { timeout --kill-after=5 120 "${UPM[@]}" "$@"; }

# pick_runtime PM|UPM: the first OCI runtime (crun, runc) that starts the
# image's vecring under that podman command. crun refuses every container on a
# hybrid cgroup layout whose v2 hierarchy holds a controller ("cgroups in
# hybrid mode not supported"; here hugetlb); runc runs them.
pick_runtime() {
	local arr=$1[@] rt opts=(--network none)
	[ "$1" = PM ] && opts=("${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG")
	for rt in crun runc; do
		if timeout 60 "${!arr}" run --rm --runtime "$rt" "${opts[@]}" "$IMAGE" \
			/bin/vecring --version >"$WORK/probe-$1-$rt.log" 2>&1; then
			echo "$rt"
			return 0
		fi
	done
	return 1
}

# --- the container's slave ---------------------------------------------------

# slave_start NAME COMMAND...: COMMAND (a `podman run -i ... vecring rxonly`)
# in the background under a watchdog, its stdin a FIFO: each line written
# to it is answered by "rx <frames> <bytes>" in $WORK/NAME.out.
slave_start() {
	local name=$1 fd
	shift
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	timeout --kill-after=5 "$WATCHDOG" "$@" <"$WORK/$name.in" >"$WORK/$name.out" 2>"$WORK/$name.err" &
	PIDS+=($!)
	printf -v "SLAVE_PID_$name" '%s' "$!"
	exec {fd}>"$WORK/$name.in"
	printf -v "SLAVE_FD_$name" '%s' "$fd"
}

# slave_count NAME: the frames slave NAME counted so far (empty if it did
# not answer within 10 s).
slave_count() {
	local fdvar=SLAVE_FD_$1 before i
	before=$(grep -c '^rx ' "$WORK/$1.out")
	echo >&"${!fdvar}" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '^rx ' "$WORK/$1.out")" -gt "$before" ] && break
		sleep 0.1
	done
	grep '^rx ' "$WORK/$1.out" | tail -n1 | cut -d' ' -f2
}

# slave_stop NAME: closes the slave's input: it prints its summary and
# exits, and the container (run with --rm) goes.
slave_stop() {
	local fdvar=SLAVE_FD_$1 pidvar=SLAVE_PID_$1
	eval "exec ${!fdvar}>&-"
	wait "${!pidvar}" 2>/dev/null
}

# slave_cmd RUN_DIR DOMAIN: the slave's command line inside the container.
slave_cmd() {
	echo /bin/vecring rxonly --domain "$2" --link l0 --run-dir "$1" --interval 0 --up-timeout 60
}

# container_pid NAME COMMAND...: the host pid of container NAME's process,
# asking `COMMAND inspect` (a podman command line) for up to 30 s; empty
# if it did not start, as soon as slave session NAME's process has ended.
container_pid() {
	local name=$1 pid i pidvar=SLAVE_PID_$1
	shift
	for ((i = 0; i < 300; i++)); do
		pid=$(timeout 10 "$@" inspect -f '{{.State.Pid}}' "$name" 2>/dev/null)
		[[ "$pid" =~ ^[1-9][0-9]*$ ]] && { echo "$pid"; return 0; }
		[ -n "${!pidvar:-}" ] && ! kill -0 "${!pidvar}" 2>/dev/null && return 1
		sleep 0.1
	done
	return 1
}

# --- the host's master -------------------------------------------------------

# master_start NAME USER RUN_DIR DOMAIN [ARGS...]: `vecring txonly` as the
# master of DOMAIN/l0 for 2 s of link up, as USER ("" for root; then the
# tool is $VECRING, else the user's copy), in the background, logging at
# info level to $WORK/NAME.log; its watchdog's PID in MASTER_PID.
master_start() {
	local name=$1 user=$2 run=$3 dom=$4
	shift 4
	local cmd=("$VECRING")
	[ -z "$user" ] || cmd=("${AS_USER[@]}" "$USR_HOME/vecring")
	timeout --kill-after=5 "$WATCHDOG" "${cmd[@]}" txonly --role master --domain "$dom" --link l0 \
		--run-dir "$run" --seconds 2 --up-timeout 60 "$@" >"$WORK/$name.log" 2>&1 &
	MASTER_PID=$!
	PIDS+=("$MASTER_PID")
}

# attached NAME: "PID UID" of the slave master NAME saw attach (its log's
# "slave attached: pid P uid U"), waiting up to 60 s; fails if none.
attached() {
	local i line
	for ((i = 0; i < 600; i++)); do
		line=$(grep -m1 'slave attached: pid ' "$WORK/$1.log" 2>/dev/null) && break
		sleep 0.1
	done
	[ -n "$line" ] || return 1
	sed -n 's/.*slave attached: pid \([0-9]*\) uid \([0-9]*\) .*/\1 \2/p' <<<"$line"
}

# master_taken NAME: the frames master NAME's peer took (once it ended:
# wait for $MASTER_PID first, in this shell).
master_taken() {
	sed -n 's/^txonly: sent .* taken by the peer \([0-9]*\);.*/\1/p' "$WORK/$1.log"
}

# --- checks ------------------------------------------------------------------

expect_eq() {
	if [ -n "$2" ] && [ "$2" = "$3" ]; then
		pass "$1: $2"
	else
		fail "$1: got '$2', want '$3'"
	fi
}

# expect_lt WHAT GOT BOUND: GOT is a number below BOUND.
expect_lt() {
	if [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -lt "$3" ]; then
		pass "$1: $2 < $3"
	else
		fail "$1: got '$2', want below $3"
	fi
}

# in_container WHAT PID: PID runs in other PID, mount and network
# namespaces than this script.
in_container() {
	local ns ok=1
	for ns in pid mnt net; do
		[ "$(readlink "/proc/$2/ns/$ns")" != "$(readlink "/proc/$$/ns/$ns")" ] || ok=0
	done
	[ "$ok" = 1 ] && pass "$1: the slave (host pid $2) runs in the container's own PID, mount and network namespaces" ||
		fail "$1: the slave (host pid $2) is not in a container"
}

# link_traffic WHAT SLAVE MASTER WANT_UID [HOOK]: with slave session SLAVE
# and master NAME MASTER started, the master saw a slave of uid WANT_UID
# attach from a container (HOOK PID runs then, while the link is up), and
# the slave received exactly the frames the master's peer took. Stops the
# slave.
link_traffic() {
	local what=$1 slave=$2 master=$3 want_uid=$4 hook=${5:-} seen pid uid taken got i
	if ! seen=$(attached "$master"); then
		fail "$what: no slave attached"
		tail -n 3 "$WORK/$master.log" "$WORK/$slave.err" 2>/dev/null | sed 's/^/    /'
		slave_stop "$slave"
		return 1
	fi
	read -r pid uid <<<"$seen"
	expect_eq "$what: the master saw the container's slave attach as uid" "$uid" "$want_uid"
	in_container "$what" "$pid"
	[ -z "$hook" ] || "$hook" "$pid"
	wait "$MASTER_PID" 2>/dev/null
	taken=$(master_taken "$master")
	for ((i = 0; i < 50; i++)); do
		got=$(slave_count "$slave")
		[ "$got" = "$taken" ] && break
		sleep 0.2
	done
	[[ "${taken:-0}" -gt 0 ]] 2>/dev/null || fail "$what: the master sent nothing"
	expect_eq "$what: the container's slave received every frame the host's master sent" "$got" "$taken"
	[ -z "${AFTER_HOOK:-}" ] || "$AFTER_HOOK" "$pid"
	slave_stop "$slave"
}
