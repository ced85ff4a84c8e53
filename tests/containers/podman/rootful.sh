# shellcheck shell=bash
# Group "rootful", sourced by tests/containers/podman.sh: a root master on
# the host, the slave in a rootful Podman container (--network none) that
# reaches the link only through the domain directory bound in with -v;
# with the imported image, and with one `podman build` makes offline from
# scripts/image.sh's Containerfile (FROM scratch).

group rootful rootful_traffic rootful_build

test_rootful_traffic() {
	rootful_link pod "$IMAGE" "rootful"
}

test_rootful_build() {
	local built=localhost/vecring-test:podman-built
	if ! bash "$ROOT/scripts/image.sh" vecring "$WORK/build/rootfs" --tool "$VECRING" \
		--containerfile "$WORK/build/Containerfile" >"$WORK/build.log" 2>&1 ||
		! pm build -q -f "$WORK/build/Containerfile" -t "$built" "$WORK/build" >>"$WORK/build.log" 2>&1; then
		fail "rootful build: podman build of scripts/image.sh's Containerfile"
		sed 's/^/    /' "$WORK/build.log"
		return
	fi
	pass "rootful build: podman build made the image from scripts/image.sh's Containerfile (FROM scratch, no registry)"
	rootful_link podb "$built" "rootful, the built image"
}

# rootful_link DOMAIN IMAGE WHAT: a root master, the slave in a rootful
# container of IMAGE, traffic.
rootful_link() {
	local run=$WORK/run dom=$1 img=$2
	"$VECRING" prepare --domain "$dom" --run-dir "$run" >/dev/null 2>&1 ||
		{ fail "$3: vecring prepare"; return; }
	# shellcheck disable=SC2046
	slave_start "rf_$dom" "${PM[@]}" run --rm -i --runtime "$RT" "${PM_RUN[@]}" --cgroup-parent "$PODMAN_CG" \
		-v "$run/$dom:$run/$dom" "$img" $(slave_cmd "$run" "$dom")
	master_start "rf_${dom}_m" "" "$run" "$dom"
	link_traffic "$3" "rf_$dom" "rf_${dom}_m" 0
}
