# shellcheck shell=bash
# Case "pktgen", sourced by tests/containers/docker.sh: pktgen-dpdk on both
# ends of a link, the host's pktgen (scripts/pktgen.sh's build for the
# packaged DPDK 22.11) the master, the slave a pktgen in a Docker container
# of scripts/image.sh's image of pktgen (imported), run confined as the
# testpmd cases' containers are (--network none, --cap-drop ALL,
# no-new-privileges, the domain directory bound in read-only) but as the
# container's root: the control directory of driver.lua is bound in too.
# Frames of 64 and 1514 bytes host -> container, then container -> host,
# pktgen's counts checked against eth_vecring's xstats on both ends as
# tests/dpdk/cases/pktgen.sh checks them (tests/dpdk/pktgen/lib.sh).

# shellcheck source=tests/dpdk/pktgen/lib.sh
. "$ROOT/tests/dpdk/pktgen/lib.sh"

test_pktgen() {
	PG_EXE=$(pktgen_bin) || { fail "pktgen: no pktgen for DPDK 22.11 (scripts/pktgen.sh; VECRING_PKTGEN_SOURCES names pktgen's release tarballs)"; return; }
	local img=$WORK/pktgen-image ctl_h=$WORK/pg-ctl-h ctl_c=$WORK/pg-ctl-c ctr=vrtest-pgc-$$
	if ! pg_image "$img" || ! tar -C "$img" --numeric-owner -cf "$WORK/pktgen.tar" . ||
		! dk import "$WORK/pktgen.tar" vecring-pktgen:test >"$WORK/pktgen-import.log" 2>&1; then
		fail "pktgen: no image of pktgen (scripts/image.sh, docker import)"
		return
	fi
	mkdir -p "$ctl_h" "$ctl_c"
	prepare_domain dkpg
	# The container's memory: pktgen's --no-huge -m 1600 (of which about
	# 0.7 GB is touched) with room to spare.
	start_pktgen pgc 1 "domain=dkpg,link=pg,mac=$PG_CTR_MAC" "$ctl_c" \
		timeout --foreground --kill-after=5 "$((WATCHDOG + 15))" "$DOCKER_CLI" -H "unix://$DOCKER_DIR/docker.sock" \
		run -i -t --rm --name "$ctr" --network none --cap-drop ALL --security-opt no-new-privileges \
		--memory 2g -v "$RUN_DIR/dkpg:/run/vecring/dkpg:ro" -v "$ctl_c:/ctl" vecring-pktgen:test
	start_pktgen pgh 0 "domain=dkpg,link=pg,run_dir=$RUN_DIR,master=true,mac=$PG_HOST_MAC" "$ctl_h"
	if ! pg_link_up pktgen; then
		pg_docker_end "$ctr"
		return
	fi
	# The container's pktgen is below the container's first process, not
	# below the docker client.
	TREE_pgc=$(dk inspect -f '{{.State.Pid}}' "$ctr" 2>/dev/null)
	local p
	if p=$(pg_pid pgc) && [ "$(readlink "/proc/$p/ns/mnt")" != "$(readlink /proc/$$/ns/mnt)" ] &&
		[ "$(readlink "/proc/$p/ns/net")" != "$(readlink /proc/$$/ns/net)" ] &&
		[ -x "/proc/$p/root/bin/pktgen" ] && [ ! -e "/proc/$p/root/usr/bin/dpdk-testpmd" ] &&
		[ "$(status_field "$p" CapEff)" = 0000000000000000 ] && [ "$(status_field "$p" NoNewPrivs)" = 1 ]; then
		pass "pktgen: the slave pktgen (host pid $p) runs in the container (its own mount and network namespaces, the image's root, no capability, no_new_privs)"
	else
		fail "pktgen: the slave pktgen is not in the confined container (pid ${p:-none})"
	fi
	pg_rounds pktgen 64 1514
	quit_pktgens pktgen pgh pgc
	pg_docker_end "$ctr"
}

# pg_docker_end CONTAINER: the case's container (gone already when its
# pktgen left: --rm) and image removed.
pg_docker_end() {
	dk rm -f "$1" >/dev/null 2>&1
	dk rmi vecring-pktgen:test >/dev/null 2>&1
	if dk image inspect vecring-pktgen:test >/dev/null 2>&1 || dk inspect "$1" >/dev/null 2>&1; then
		fail "pktgen: the case's container or image is left"
	else
		pass "pktgen: the case's container and image are removed"
	fi
}
