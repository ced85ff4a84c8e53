# shellcheck shell=bash
# Group "rootless", sourced by tests/containers/podman.sh: the slave in a
# rootless Podman container of an unprivileged host user the group creates
# (useradd, with /etc/subuid and /etc/subgid ranges) and removes, in the
# three arrangements docs/containers.md describes:
#   rootless_user    the master runs as that same user, under a run
#                    directory in its home
#   rootless_owner   a root master on the host opens the link to the user
#                    (--owner UID:GID) in a run directory the user can
#                    search
#   rootless_keepid  --userns=keep-id: the container's process has the
#                    user's own uid inside too; the user's master
#   rootless_keepid_owner  the same with a root master and --owner
# The user, its processes (podman's pause process holding the user
# namespace, conmon), its home (storage, images, run directories) and its
# subordinate ranges are gone after the group, also after a failure.

group rootless rootless_user rootless_owner rootless_keepid rootless_keepid_owner

USR=
USR_HOME=

# user_setup: the user (vrpod<pid>) with a home in $WORK, subordinate uid
# and gid ranges (useradd allocates them when login.defs asks for them;
# else the first free 65536 above every range in the files), the vecring
# tool and the image's tarball in its home, the image imported into its
# rootless storage, and the runtime picked for it.
user_setup() {
	[ -z "$USR" ] || return 0
	USR=vrpod$$
	USR_HOME=$WORK/home
	useradd -m -d "$USR_HOME" -s /bin/sh -c "vecring podman test" "$USR" || { USR=; return 1; }
	user_env
	USR_UID=$(id -u "$USR")
	USR_GID=$(id -g "$USR")
	local f next
	for f in /etc/subuid /etc/subgid; do
		grep -q "^$USR:" "$f" 2>/dev/null && continue
		next=$(awk -F: 'BEGIN { n = 100000 } $2 + $3 > n { n = $2 + $3 } END { print n }' "$f" 2>/dev/null)
		if [ "$f" = /etc/subuid ]; then
			usermod --add-subuids "$next-$((next + 65535))" "$USR"
		else
			usermod --add-subgids "$next-$((next + 65535))" "$USR"
		fi
	done
	log "user $USR (uid $USR_UID), subordinate uids $(grep "^$USR:" /etc/subuid | cut -d: -f2,3), gids $(grep "^$USR:" /etc/subgid | cut -d: -f2,3)"
	install -d -m 0700 -o "$USR" -g "$USR_GID" "$USR_HOME/xdg"
	install -m 0755 -o "$USR" -g "$USR_GID" "$VECRING" "$USR_HOME/vecring"
	install -m 0644 -o "$USR" -g "$USR_GID" "$WORK/image.tar" "$USR_HOME/image.tar"
	timeout 120 "${UPM[@]}" import -q "$USR_HOME/image.tar" "$IMAGE" >"$WORK/rootless-import.log" 2>&1 ||
		{ fail "rootless: podman import as $USR"; sed 's/^/    /' "$WORK/rootless-import.log"; return 1; }
	URT=$(pick_runtime UPM) || { fail "rootless: no OCI runtime runs a container as $USR"; return 1; }
	log "rootless podman as $USR: runtime $URT, storage $(upm info -f '{{.Store.GraphDriverName}}' 2>/dev/null)"
}

# user_cleanup: every process of the user (by pid), the user with its home
# and its subordinate ranges.
user_cleanup() {
	[ -n "$USR" ] || return 0
	local p
	for p in $(ps -o pid= -u "$USR" 2>/dev/null); do
		kill -9 "$p" 2>/dev/null
	done
	for ((p = 0; p < 50; p++)); do
		[ -z "$(ps -o pid= -u "$USR" 2>/dev/null)" ] && break
		sleep 0.1
	done
	userdel -r "$USR" >/dev/null 2>&1
	sed -i "/^$USR:/d" /etc/subuid /etc/subgid
	USR=
}

# the user's run directory and domain, made by the user's own tool.
user_domain() {
	as_user "$USR_HOME/vecring" prepare --domain "$1" --run-dir "$USR_HOME/run" >/dev/null 2>&1
}

test_rootless_user() {
	user_setup || { fail "rootless: the test user could not be set up"; return; }
	local run=$USR_HOME/run dom=u1
	user_domain "$dom" || { fail "rootless user: vecring prepare as $USR"; return; }
	# shellcheck disable=SC2046
	slave_start rl_user "${UPM[@]}" run --rm -i --runtime "$URT" --network none \
		-v "$run/$dom:$run/$dom" "$IMAGE" $(slave_cmd "$run" "$dom")
	master_start rl_user_m "$USR" "$run" "$dom"
	link_traffic "rootless, the user's master" rl_user rl_user_m "$USR_UID" map_root
}

# map_root PID: the container's root is the user (uid_map "0 UID 1").
map_root() {
	awk -v u="$USR_UID" '$1 == 0 && $2 == u && $3 == 1 { ok = 1 } END { exit !ok }' "/proc/$1/uid_map" &&
		pass "rootless: the container's root is $USR on the host (uid_map 0 -> $USR_UID)" ||
		fail "rootless: uid_map of the slave: $(tr '\n' ';' <"/proc/$1/uid_map")"
}

# map_keep PID: the user's uid is the same inside and out (uid_map
# "UID UID 1").
map_keep() {
	awk -v u="$USR_UID" '$1 == u && $2 == u && $3 == 1 { ok = 1 } END { exit !ok }' "/proc/$1/uid_map" &&
		pass "rootless keep-id: the slave's uid $USR_UID is the same inside the container" ||
		fail "rootless keep-id: uid_map of the slave: $(tr '\n' ';' <"/proc/$1/uid_map")"
}

test_rootless_owner() {
	user_setup || { fail "rootless: the test user could not be set up"; return; }
	# The root master's run directory: searchable by the user (podman
	# resolves the -v source as the user), the domain directory the user's
	# (the socket's group), mode 0711.
	local run=$WORK/run dom=u2
	"$VECRING" prepare --domain "$dom" --run-dir "$run" --owner "$USR_UID:$USR_GID" >/dev/null 2>&1 ||
		{ fail "rootless owner: vecring prepare --owner"; return; }
	# shellcheck disable=SC2046
	slave_start rl_owner "${UPM[@]}" run --rm -i --runtime "$URT" --network none \
		-v "$run/$dom:$run/$dom" "$IMAGE" $(slave_cmd "$run" "$dom")
	master_start rl_owner_m "" "$run" "$dom" --owner "$USR_UID:$USR_GID"
	link_traffic "rootless, a root master with --owner $USR_UID:$USR_GID" rl_owner rl_owner_m "$USR_UID" map_root
}

test_rootless_keepid() {
	user_setup || { fail "rootless: the test user could not be set up"; return; }
	local run=$USR_HOME/run dom=u3
	user_domain "$dom" || { fail "rootless keep-id: vecring prepare as $USR"; return; }
	# shellcheck disable=SC2046
	slave_start rl_keep "${UPM[@]}" run --rm -i --runtime "$URT" --network none --userns=keep-id \
		-v "$run/$dom:$run/$dom" "$IMAGE" $(slave_cmd "$run" "$dom")
	master_start rl_keep_m "$USR" "$run" "$dom"
	link_traffic "rootless --userns=keep-id, the user's master" rl_keep rl_keep_m "$USR_UID" map_keep
}

test_rootless_keepid_owner() {
	user_setup || { fail "rootless: the test user could not be set up"; return; }
	local run=$WORK/run dom=u4
	"$VECRING" prepare --domain "$dom" --run-dir "$run" --owner "$USR_UID:$USR_GID" >/dev/null 2>&1 ||
		{ fail "rootless keep-id owner: vecring prepare --owner"; return; }
	# shellcheck disable=SC2046
	slave_start rl_keep_owner "${UPM[@]}" run --rm -i --runtime "$URT" --network none --userns=keep-id \
		-v "$run/$dom:$run/$dom" "$IMAGE" $(slave_cmd "$run" "$dom")
	master_start rl_keep_owner_m "" "$run" "$dom" --owner "$USR_UID:$USR_GID"
	link_traffic "rootless --userns=keep-id, a root master with --owner $USR_UID:$USR_GID" rl_keep_owner rl_keep_owner_m "$USR_UID" map_keep
}
