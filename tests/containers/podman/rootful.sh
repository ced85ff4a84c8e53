# shellcheck shell=bash
# Group "rootful", sourced by tests/containers/podman.sh: a root master on
# the host, the slave in a rootful Podman container (--network none) that
# reaches the link only through the domain directory bound in with -v.

group rootful rootful_traffic

test_rootful_traffic() {
	local run=$WORK/run dom=pod
	"$VECRING" prepare --domain "$dom" --run-dir "$run" >/dev/null 2>&1 ||
		{ fail "rootful: vecring prepare"; return; }
	# shellcheck disable=SC2046
	slave_start rootful "${PM[@]}" run --rm -i --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" \
		-v "$run/$dom:$run/$dom" "$IMAGE" $(slave_cmd "$run" "$dom")
	master_start rootful_m "" "$run" "$dom"
	link_traffic "rootful" rootful rootful_m 0
}
