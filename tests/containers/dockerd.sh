# shellcheck shell=bash
# A private Docker daemon for tests/containers/docker.sh: Debian's dockerd
# (docker.io 20.10) with its own data root, exec root, socket, pid file,
# configuration and trust key in $DOCKER_DIR (set by the caller), its own
# containerd (which dockerd starts under its exec root, in a namespace of
# its own), no bridge and no iptables or ip6tables rules (containers here
# run with --network none), and its containers' cgroups under
# vecring-docker-$$ rather than docker. docker_stop stops it and removes
# what it made outside $DOCKER_DIR: the cgroups, and /run/docker and
# /run/containerd (plugin and shim socket directories dockerd and
# containerd place there whatever their roots) when they were not there
# before it started.
#
# The client is Debian's /usr/bin/docker, by path: another `docker` may
# come first in PATH.

DOCKER_CLI=/usr/bin/docker
DOCKERD=/usr/sbin/dockerd
DOCKER_CGROUP=vecring-docker-$$
DOCKER_RUN_DIRS=()   # /run directories dockerd created, removed at the end

# dk ARGS...: the client, talking to the private daemon.
dk() { "$DOCKER_CLI" -H "unix://$DOCKER_DIR/docker.sock" "$@"; }

# docker_start [DOCKERD ARGS...]: start the daemon (overlay2, else vfs) and
# wait until it answers. Fails with the daemon's last log lines. The
# daemon runs as the command DOCKERD_WRAP (an array, empty by default)
# runs it.
DOCKERD_WRAP=()
docker_start() {
	local d i driver
	mkdir -p "$DOCKER_DIR"
	# The trust key goes to /etc/docker unless the configuration names a
	# path (it has no command-line option).
	printf '{ "deprecated-key-path": "%s" }\n' "$DOCKER_DIR/key.json" >"$DOCKER_DIR/daemon.json"
	for driver in overlay2 vfs; do
		for d in /run/docker /run/containerd; do
			[ -e "$d" ] || DOCKER_RUN_DIRS+=("$d")
		done
		"${DOCKERD_WRAP[@]}" "$DOCKERD" --config-file "$DOCKER_DIR/daemon.json" \
			--data-root "$DOCKER_DIR/data" --exec-root "$DOCKER_DIR/exec" \
			-H "unix://$DOCKER_DIR/docker.sock" --pidfile "$DOCKER_DIR/dockerd.pid" \
			--bridge=none --iptables=false --ip6tables=false --ip-masq=false \
			--storage-driver="$driver" --cgroup-parent="$DOCKER_CGROUP" \
			--containerd-namespace "vecring-$$" --containerd-plugins-namespace "vecring-plugins-$$" \
			"$@" >"$DOCKER_DIR/dockerd.log" 2>&1 &
		DOCKERD_PID=$!
		for ((i = 0; i < 300; i++)); do
			kill -0 "$DOCKERD_PID" 2>/dev/null || break
			if dk version >/dev/null 2>&1; then
				log "dockerd $(dk version -f '{{.Server.Version}}') up (pid $DOCKERD_PID, storage $driver, data root $DOCKER_DIR/data)"
				return 0
			fi
			sleep 0.1
		done
		log "dockerd with storage $driver did not come up:"
		tail -n 5 "$DOCKER_DIR/dockerd.log" | sed 's/^/    /'
		docker_stop
	done
	return 1
}

# docker_stop: remove every container, stop the daemon (which stops its
# containerd), then remove what it left outside $DOCKER_DIR.
docker_stop() {
	local i d c
	[ -n "${DOCKERD_PID:-}" ] || return 0
	if kill -0 "$DOCKERD_PID" 2>/dev/null; then
		c=$(dk ps -aq 2>/dev/null)
		# shellcheck disable=SC2086
		[ -z "$c" ] || dk rm -f $c >/dev/null 2>&1
		kill -TERM "$DOCKERD_PID"
		for ((i = 0; i < 200; i++)); do
			kill -0 "$DOCKERD_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$DOCKERD_PID" 2>/dev/null; then
			log "dockerd did not stop in 20 s: killed"
			kill9 "$DOCKERD_PID"
		fi
	fi
	wait "$DOCKERD_PID" 2>/dev/null
	DOCKERD_PID=
	# A containerd or shim that outlived its daemon (a daemon killed above).
	for i in $(pgrep -f "$DOCKER_DIR/" 2>/dev/null); do
		kill -9 "$i" 2>/dev/null
	done
	# Mounts left below the data or exec root, deepest first.
	awk -v dir="$DOCKER_DIR/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
		while read -r d; do umount -l "$d" 2>/dev/null; done
	# The cgroups, in every hierarchy, below the cgroup this script runs
	# in (which need not be a hierarchy's root).
	find /sys/fs/cgroup -maxdepth 8 -type d -name "$DOCKER_CGROUP" 2>/dev/null |
		while read -r d; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
	for d in "${DOCKER_RUN_DIRS[@]}"; do
		rm -rf "$d"
	done
	DOCKER_RUN_DIRS=()
}

# docker_start_userns BASE: docker_start with --userns-remap, the
# containers' uids and gids 0-65535 mapped to BASE-(BASE+65535) on the
# host. dockerd takes the range from /etc/subuid and /etc/subgid for a
# user of the host (nobody here); it runs in a mount namespace of its own
# where those two files name that range (bind mounts over them), so the
# host's files stay as they are and no user is added. The directories
# above the data root become searchable by others (o+x), as the remapped
# root needs.
docker_start_userns() {
	# The remapped root must reach its layers below the data root.
	mkdir -p "$DOCKER_DIR/data"
	chmod o+x "$(dirname "$DOCKER_DIR")" "$DOCKER_DIR" "$DOCKER_DIR/data"
	echo "nobody:$1:65536" >"$DOCKER_DIR/subuid"
	echo "nobody:$1:65536" >"$DOCKER_DIR/subgid"
	DOCKERD_WRAP=(unshare --mount --propagation private -- bash -c \
		'mount --bind "$1" /etc/subuid && mount --bind "$2" /etc/subgid && shift 2 && exec "$@"' \
		wrap "$DOCKER_DIR/subuid" "$DOCKER_DIR/subgid")
	docker_start --userns-remap=nobody:nogroup
	local rc=$?
	DOCKERD_WRAP=()
	return "$rc"
}
