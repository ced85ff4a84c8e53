# shellcheck shell=bash
# Case "forward_table", sourced by tests/containers/docker.sh: "forward
# traffic in Docker", the NFV platform guides' benchmark, by the project's
# benchmark tooling. `vecring-bench host-container --forward --container
# docker`: a generator on the host (vecring-dpdk-agent, the master,
# hugepages) sends to testpmd in a Docker container of the private dockerd
# (--network none, --cap-drop ALL, no-new-privileges, --no-huge), which
# forwards each frame back (macswap), for 1 s unthrottled, at 64 and 1514
# bytes.
#
# Run twice: with the image the harness makes for the run (scripts/image.sh)
# and its table (testpmd in macswap mode), which must have the guide's columns (generator TX and RX
# in pps and Mbit/s, container RX and TX in pps, throughput %) filled with
# numbers, the container's RX rate the generator's TX rate and the
# generator's RX rate the container's TX rate; then with the image
# docs/containers.md makes (--docker-image), testpmd in io mode (each
# frame back as received), as JSON: every count exact
# (the container received every frame the generator sent, the generator
# every frame the container sent back; what the generator lost is what
# the container's testpmd did not send back, nothing else), and nothing
# of either run left in the daemon. And without a daemon (DOCKER_HOST
# naming no socket): a message saying so, before anything starts.

# table_cell LINE N: the Nth |-separated cell of LINE, trimmed.
table_cell() { awk -F'|' -v n="$2" '{ gsub(/^ +| +$/, "", $n); print $n }' <<<"$1"; }

test_forward_table() {
	local harness=$ROOT/target/release/vecring-bench agent out json head rows r size
	agent=$ROOT/target/release/vecring-dpdk-agent
	[ -x "$agent" ] || { fail "forward_table: $agent missing (benches/dpdk-agent/build.sh)"; return; }
	out=$WORK/forward-table.out
	DOCKER_HOST=unix://$WORK/no-such.sock timeout 60 "$harness" host-container --forward --container docker \
		--ports vecring --sizes 64 --seconds 1 --trial-seconds 0 >"$out" 2>&1
	if [ $? -ne 0 ] && grep -q "no Docker daemon answers (DOCKER_HOST=unix://$WORK/no-such.sock)" "$out"; then
		pass "forward_table: without a daemon, the benchmark says so"
	else
		fail "forward_table: without a daemon, no clear message"
		sed 's/^/    /' "$out"
	fi
	DOCKER_HOST=unix://$DOCKER_DIR/docker.sock timeout --kill-after=5 120 \
		"$harness" host-container --forward --container docker --ports vecring --sizes 64,1514 \
		--seconds 1 --trial-seconds 0 >"$out" 2>&1
	if [ $? -ne 0 ]; then
		fail "forward_table: vecring-bench host-container --forward --container docker failed"
		sed 's/^/    /' "$out"
		return
	fi
	sed 's/^/    /' "$out"
	if grep -q "eth_vecring: host vecring-dpdk-agent on eth_vecring <-> dpdk-testpmd macswap on eth_vecring in a Docker container" "$out"; then
		pass "forward_table: the far side is testpmd (macswap) in a Docker container"
	else
		fail "forward_table: the heading does not name testpmd in a Docker container"
	fi
	head=$(grep -m1 '^port ' "$out")
	local col want=("gen TX pps" "TX Mbit/s" "gen RX pps" "RX Mbit/s" "ctr RX pps" "ctr TX pps" "thr %")
	for ((col = 5; col <= 11; col++)); do
		if [ "$(table_cell "$head" "$col")" != "${want[col - 5]}" ]; then
			fail "forward_table: column $col is '$(table_cell "$head" "$col")', not '${want[col - 5]}'"
			return
		fi
	done
	pass "forward_table: the table has the guide's columns (generator TX/RX pps and Mbit/s, container RX/TX pps, throughput %)"
	mapfile -t rows < <(grep -E '^eth_vecring +\| +both \|' "$out")
	expect_eq "forward_table: a row per frame size" "${#rows[@]}" 2
	for r in "${rows[@]}"; do
		size=$(table_cell "$r" 3)
		local c bad=0
		for ((col = 5; col <= 11; col++)); do
			c=$(table_cell "$r" "$col")
			[[ "$c" =~ ^[0-9][0-9,]*(\.[0-9]+)?$ ]] && [ "${c//[,.0]/}" != "" ] || bad=1
		done
		if [ "$bad" = 0 ]; then
			pass "forward_table: $size B: every column of the guide has a number above 0"
		else
			fail "forward_table: $size B: a column of the guide is not a positive number: $r"
		fi
		expect_eq "forward_table: $size B: the container's RX rate is the generator's TX rate" \
			"$(table_cell "$r" 9)" "$(table_cell "$r" 5)"
		expect_eq "forward_table: $size B: the generator's RX rate is the container's TX rate" \
			"$(table_cell "$r" 7)" "$(table_cell "$r" 10)"
	done

	# The counts, exact, with the image of docs/containers.md, in io mode.
	json=$WORK/forward-table.json
	DOCKER_HOST=unix://$DOCKER_DIR/docker.sock timeout --kill-after=5 120 \
		"$harness" host-container --forward --container docker --docker-image vecring-testpmd:import \
		--forward-mode io --ports vecring --sizes 64 --seconds 1 --trial-seconds 0 --json >"$json" 2>"$WORK/forward-table.err"
	if [ $? -ne 0 ]; then
		fail "forward_table: vecring-bench host-container --forward --docker-image vecring-testpmd:import failed"
		sed 's/^/    /' "$WORK/forward-table.err"
		return
	fi
	local counts
	counts=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rows"][0]
print(d["container_image"], d["forward_mode"], r["error"], r["offered"], r["gen_tx"], r["container_rx"], r["container_tx"], r["gen_rx"], r["lost"], r["duplicated"], r["bad"])
' "$json") || { fail "forward_table: unreadable JSON"; sed 's/^/    /' "$json"; return; }
	local image mode err offered gen_tx ctr_rx ctr_tx gen_rx lost dup badf
	read -r image mode err offered gen_tx ctr_rx ctr_tx gen_rx lost dup badf <<<"$counts"
	log "forward_table: offered $offered, generator TX $gen_tx RX $gen_rx, container RX $ctr_rx TX $ctr_tx, lost $lost"
	expect_eq "forward_table: --docker-image runs the image given" "$image" vecring-testpmd:import
	expect_eq "forward_table: --forward-mode io" "$mode" io
	expect_eq "forward_table: the row has figures" "$err" None
	expect_gt "forward_table: the generator sent" "$gen_tx" 0
	expect_eq "forward_table: the generator sent every frame it offered" "$gen_tx" "$offered"
	expect_eq "forward_table: the container received every frame the generator sent" "$ctr_rx" "$gen_tx"
	expect_eq "forward_table: the generator received every frame the container sent" "$gen_rx" "$ctr_tx"
	expect_eq "forward_table: lost = what the container's testpmd did not send back" "$lost" "$((ctr_rx - ctr_tx))"
	expect_eq "forward_table: no duplicate or bad frame" "$dup $badf" "0 0"
	if [ -z "$(dk ps -aq)" ] && ! dk images --format '{{.Repository}}' | grep -q '^vecring-fwd-'; then
		pass "forward_table: no container and no image of the runs left in the daemon"
	else
		fail "forward_table: the runs left a container or an image"
		dk ps -a | sed 's/^/    /'
		dk images | sed 's/^/    /'
	fi
}
