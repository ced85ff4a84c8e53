# shellcheck shell=bash
# Group "pktgen", sourced by tests/containers/podman.sh: pktgen-dpdk on
# both ends of a link, the host's pktgen (scripts/pktgen.sh's build for the
# packaged DPDK 22.11) a root master with owner= the rootless group's user,
# the slave a pktgen in that user's rootless Podman container of
# scripts/image.sh's image of pktgen (imported by the user), --network none,
# the domain directory and driver.lua's control directory bound in; the
# container's root is the user on the host. Frames of 64 and 1514 bytes
# host -> container, then container -> host, pktgen's counts checked
# against eth_vecring's xstats on both ends as tests/dpdk/cases/pktgen.sh
# checks them (tests/dpdk/pktgen/lib.sh).

group pktgen pktgen_rootless

# shellcheck source=tests/dpdk/pktgen/lib.sh
. "$ROOT/tests/dpdk/pktgen/lib.sh"

test_pktgen_rootless() {
	user_setup || { fail "pktgen rootless: the test user could not be set up"; return; }
	PG_EXE=$(pktgen_bin) || { fail "pktgen rootless: no pktgen for DPDK 22.11 (scripts/pktgen.sh; VECRING_PKTGEN_SOURCES names pktgen's release tarballs)"; return; }
	local img=$WORK/pktgen-image ctl_h=$WORK/pg-ctl-h ctl_c=$WORK/pg-ctl-c run=$WORK/run dom=pgr
	local ctr=vrtest-pgc-$$ pimg=localhost/vecring-pktgen:test
	if ! pg_image "$img" || ! tar -C "$img" --numeric-owner -cf "$USR_HOME/pktgen.tar" . ||
		! chown "$USR:$USR_GID" "$USR_HOME/pktgen.tar" ||
		! upm import -q "$USR_HOME/pktgen.tar" "$pimg" >"$WORK/pktgen-import.log" 2>&1; then
		fail "pktgen rootless: no image of pktgen (scripts/image.sh, podman import as $USR)"
		sed 's/^/    /' "$WORK/pktgen-import.log" 2>/dev/null
		return
	fi
	rm -f "$USR_HOME/pktgen.tar"
	# The container's root (the user on the host) writes driver.lua's
	# reports into its control directory.
	mkdir -p "$ctl_h" "$ctl_c"
	chown "$USR:$USR_GID" "$ctl_c"
	"$VECRING" prepare --domain "$dom" --run-dir "$run" --owner "$USR_UID:$USR_GID" >/dev/null 2>&1 ||
		{ fail "pktgen rootless: vecring prepare --owner"; return; }
	# -t: pktgen wants a terminal (start_pktgen's script(1) gives podman
	# one to pass on).
	start_pktgen pgc 1 "domain=$dom,link=pg,mac=$PG_CTR_MAC" "$ctl_c" \
		timeout --foreground --kill-after=5 "$((WATCHDOG + 15))" "${UPM[@]}" run -i -t --rm --name "$ctr" \
		--runtime "$URT" --network none -v "$run/$dom:/run/vecring/$dom" -v "$ctl_c:/ctl" "$pimg"
	# The master's info lines say which process and uid attached.
	PG_EAL=(--log-level=pmd.net.vecring:info)
	start_pktgen pgh 0 "domain=$dom,link=pg,run_dir=$run,master=true,owner=$USR_UID:$USR_GID,mac=$PG_HOST_MAC" "$ctl_h"
	PG_EAL=()
	if ! pg_link_up "pktgen rootless"; then
		pg_podman_end "$ctr" "$pimg"
		return
	fi
	# The container's pktgen is below conmon, not below the podman client.
	TREE_pgc=$(upm inspect -f '{{.State.Pid}}' "$ctr" 2>/dev/null)
	local p seen
	if p=$(pg_pid pgc); then
		in_container "pktgen rootless" "$p"
		map_root "$p"
	else
		fail "pktgen rootless: no pktgen process in container $ctr"
	fi
	seen=$(tr -d '\r' <"$WORK/pgh.log" | sed -n 's/.*slave attached: pid \([0-9]*\) uid \([0-9]*\) .*/\1 \2/p' | head -n1)
	expect_eq "pktgen rootless: the root master's pktgen saw the container's pktgen attach (pid uid)" "$seen" "${p:-?} $USR_UID"
	pg_rounds "pktgen rootless" 64 1514
	quit_pktgens "pktgen rootless" pgh pgc
	pg_podman_end "$ctr" "$pimg"
}

# pg_podman_end CONTAINER IMAGE: the case's container (gone already when
# its pktgen left: --rm) and image removed from the user's storage.
pg_podman_end() {
	upm rm -f "$1" >/dev/null 2>&1
	upm rmi "$2" >/dev/null 2>&1
	if upm image exists "$2" 2>/dev/null || upm container exists "$1" 2>/dev/null; then
		fail "pktgen rootless: the case's container or image is left"
	else
		pass "pktgen rootless: the case's container and image are removed"
	fi
}
