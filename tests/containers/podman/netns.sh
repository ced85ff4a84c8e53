# shellcheck shell=bash
# Group "netns", sourced by tests/containers/podman.sh: a link without a
# volume. The container (--network none: a network namespace of its own)
# runs `vecring rxonly --netns self` with no -v at all; the host's root
# master enters that namespace (--netns /proc/PID/ns/net) and listens on
# @vecring/1/<domain>/l0 there. Traffic with exact counts:
#   netns_rootful   a rootful container
#   netns_rootless  the test user's rootless container (a user namespace
#                   that does not map the host's root: the slave sees the
#                   master as the overflow uid and accepts it)

group netns netns_rootful netns_rootless

# netns_link WHAT NAME PODMAN-ARRAY RUNTIME WANT_UID: the container NAME
# started by that podman with no volume, the root master in its network
# namespace, traffic.
netns_link() {
	local what=$1 name=$2 arr=$3[@] rt=$4 want=$5 pid i extra=()
	[ "$3" = PM ] && extra=("${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG")
	[ "$3" = UPM ] && extra=(--network none)
	slave_start "$name" timeout 100 "${!arr}" run --rm -i --name "$name" --runtime "$rt" "${extra[@]}" \
		"$IMAGE" /bin/vecring rxonly --domain ns --link l0 --netns self --interval 0 --up-timeout 60
	if ! pid=$(container_pid "$name" "${!arr}"); then
		fail "$what: the container did not start"
		sed 's/^/    /' "$WORK/$name.err" | tail -n 5
		slave_stop "$name"
		return
	fi
	# Nothing of vecring's is mounted in it (the image's /run/vecring is an
	# empty directory, a mount point left unused).
	if [ ! -r "/proc/$pid/mountinfo" ]; then
		fail "$what: cannot read the container's mounts"
	elif awk '$5 ~ /vecring/ { f = 1 } END { exit !f }' "/proc/$pid/mountinfo"; then
		fail "$what: something is mounted on a vecring path in the container"
	else
		pass "$what: nothing is mounted on a vecring path in the container"
	fi
	master_start "${name}_m" "" "$WORK/run-ns" ns --netns "/proc/$pid/ns/net"
	link_traffic "$what" "$name" "${name}_m" "$want"
	grep -q "@vecring/1/ns/l0" "$WORK/$name.err" &&
		pass "$what: the slave waited at @vecring/1/ns/l0" ||
		fail "$what: the slave did not say where it waited"
}

test_netns_rootful() {
	netns_link "netns rootful" nsroot PM "$RT" 0
}

test_netns_rootless() {
	user_setup || return
	netns_link "netns rootless" nsuser UPM "$URT" "$USR_UID"
}
