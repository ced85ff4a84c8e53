#!/usr/bin/env bash
# Side-by-side ratios between near vCPUs only. On this VM the two vCPUs
# change placement every few seconds (core-to-core ~40-75 ns near, ~200 ns
# far), and a pair split across placements compares the machine, not the
# code. So every measurement here is bracketed by the core-to-core latency
# (`core-latency`), and kept only when both readings are under NEAR_NS
# (default 100 ns); the others are counted and dropped.
#
#   bash benches/near-pairs.sh ring [-a CAND] [-b CAND] [-l LEN] [-k PAIRS]
#       A/B pairs of `ring-compare --only` (0.3 s each), the order swapped
#       every other pair; prints each kept pair and the median A/B ratio.
#       Defaults: -a vecring-copy -b rtrb-copy -l 1514 -k 10.
#       With -o OTHER (another build's ring-compare, e.g. a copy of the
#       last commit's), each pair also runs CAND A of that build, and the
#       median this/other build ratio is printed too.
#   bash benches/near-pairs.sh link [-k RUNS]
#       whole `link-compare 5` runs; prints each kept run's 64 B and 1514 B
#       link/rtrb and link/rtrb-bytes medians and latency ratio, and the
#       median of each.
#
# Gives up after 6 x the wanted count of attempts. Needs the release build
# of the benches (cargo build --release -p vecring-benches).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release
NEAR_NS=${NEAR_NS:-100}
MODE=${1:-}
[ $# -gt 0 ] && shift
A=vecring-copy
B=rtrb-copy
LEN=1514
WANT=10
OTHER=
while getopts "a:b:l:k:o:" o; do
	case $o in
	a) A=$OPTARG ;;
	b) B=$OPTARG ;;
	l) LEN=$OPTARG ;;
	k) WANT=$OPTARG ;;
	o) OTHER=$OPTARG ;;
	*) sed -n '2,22p' "$0"; exit 2 ;;
	esac
done
case $MODE in
ring | link) ;;
*) sed -n '2,22p' "$0"; exit 2 ;;
esac
[ -z "$OTHER" ] || [ -x "$OTHER" ] || { echo "near-pairs: -o $OTHER is not an executable" >&2; exit 1; }
for b in core-latency ring-compare link-compare; do
	[ -x "$BIN/$b" ] || { echo "near-pairs: missing $BIN/$b: cargo build --release -p vecring-benches" >&2; exit 1; }
done

latency() { "$BIN/core-latency" | tail -1; }
# Frames per second, in millions, of one `ring-compare --only` run.
rate() { "${2:-$BIN/ring-compare}" --only "$1" --len "$LEN" --secs 0.3 | sed -n 's/.*: \([0-9.]*\) Mfps.*/\1/p'; }
median() { python3 -c 'import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:]), 3))' "$@"; }

kept=()
kept_builds=()
kept_64=()
kept_1514=()
kept_lat=()
kept_b64=()
kept_b1514=()
dropped=0
tries=0
while [ ${#kept[@]} -lt "$WANT" ] && [ "$tries" -lt $((6 * WANT)) ]; do
	tries=$((tries + 1))
	before=$(latency)
	if [ "$before" -ge "$NEAR_NS" ]; then
		dropped=$((dropped + 1))
		sleep 2
		continue
	fi
	if [ "$MODE" = ring ]; then
		o=
		if [ $((tries % 2)) -eq 0 ]; then
			a=$(rate "$A"); b=$(rate "$B")
			[ -z "$OTHER" ] || o=$(rate "$A" "$OTHER")
		else
			[ -z "$OTHER" ] || o=$(rate "$A" "$OTHER")
			b=$(rate "$B"); a=$(rate "$A")
		fi
		after=$(latency)
		if [ "$after" -ge "$NEAR_NS" ]; then
			dropped=$((dropped + 1))
			continue
		fi
		r=$(python3 -c "print(round($a / $b, 3))")
		kept+=("$r")
		echo "core-to-core ${before}/${after} ns: $A $a, $B $b Mfps, ratio $r"
		if [ -n "$OTHER" ]; then
			rb=$(python3 -c "print(round($a / $o, 3))")
			kept_builds+=("$rb")
			echo "    other build: $A $o Mfps; this/other $rb, other/$B $(python3 -c "print(round($o / $b, 3))")"
		fi
	else
		out=$("$BIN/link-compare" 5)
		after=$(latency)
		if [ "$after" -ge "$NEAR_NS" ]; then
			dropped=$((dropped + 1))
			continue
		fi
		r64=$(echo "$out" | awk -F'|' '$2 ~ /^ 64 $/ {gsub(/ /, "", $7); print $7}')
		r1514=$(echo "$out" | awk -F'|' '$2 ~ /^ 1514 $/ {gsub(/ /, "", $7); print $7}')
		b64=$(echo "$out" | awk -F'|' '$2 ~ /^ 64 $/ {gsub(/ /, "", $11); print $11}')
		b1514=$(echo "$out" | awk -F'|' '$2 ~ /^ 1514 $/ {gsub(/ /, "", $11); print $11}')
		rlat=$(echo "$out" | sed -n 's/.*ratio median \([0-9.]*\).*/\1/p')
		kept+=("$r64")
		kept_64+=("$r64")
		kept_1514+=("$r1514")
		kept_lat+=("$rlat")
		kept_b64+=("$b64")
		kept_b1514+=("$b1514")
		echo "core-to-core ${before}/${after} ns: link/rtrb 64 B $r64, 1514 B $r1514; link/rtrb-bytes 64 B $b64, 1514 B $b1514; latency ratio $rlat"
	fi
done
echo "kept ${#kept[@]}, dropped $dropped (placement far before or after)"
[ ${#kept[@]} -gt 0 ] || exit 1
if [ "$MODE" = ring ]; then
	echo "$A/$B, $LEN B: median $(median "${kept[@]}")"
	[ -z "$OTHER" ] || echo "$A, this build / other build: median $(median "${kept_builds[@]}")"
else
	echo "link/rtrb 64 B: median $(median "${kept_64[@]}"); 1514 B: median $(median "${kept_1514[@]}"); latency ratio: median $(median "${kept_lat[@]}")"
	echo "link/rtrb-bytes 64 B: median $(median "${kept_b64[@]}"); 1514 B: median $(median "${kept_b1514[@]}")"
fi
