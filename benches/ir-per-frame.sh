#!/bin/bash
# Instructions per frame (producer + consumer), counted by valgrind's
# callgrind with producer and consumer on one thread (`ring-compare --only
# NAME --same-thread --frames N`): the ring code's CPU cost, free of the
# cross-core timing noise of this VM, and the same on every run. It is not
# a speed (cache misses and line transfers are not in it); it is the figure
# that tells whether a change to a hot loop made it cheaper.
#
#   bash benches/ir-per-frame.sh [-l "64 1514"] [-c "vecring-copy rtrb-copy ..."] [-b BATCH]
#
# With -b 1, vecring-copy goes through `send` and `recv`, one frame a call.
#
# Needs valgrind (apt-get install valgrind) and the release build of the
# benches (cargo build --release -p vecring-benches).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LENS="64 1514"
CANDIDATES="vecring-copy rtrb-copy vecring-zc rtrb-zc"
FRAMES=200000
BATCH=32
while getopts "l:c:n:b:" o; do
	case $o in
	l) LENS=$OPTARG ;;
	c) CANDIDATES=$OPTARG ;;
	n) FRAMES=$OPTARG ;;
	b) BATCH=$OPTARG ;;
	*) sed -n '2,14p' "$0"; exit 2 ;;
	esac
done
command -v valgrind >/dev/null || { echo "ir-per-frame: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
BIN=$ROOT/target/release/ring-compare
[ -x "$BIN" ] || { echo "ir-per-frame: missing $BIN: cargo build --release -p vecring-benches" >&2; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "| candidate | frame | instructions per frame (producer + consumer, batch $BATCH) |"
echo "|---|---|---|"
for len in $LENS; do
	for c in $CANDIDATES; do
		# Count only inside the measured run: set-up and the ring's first
		# touch stay out.
		valgrind --tool=callgrind --callgrind-out-file="$OUT/cg" \
			--toggle-collect='*pipeline::Link>::run' \
			"$BIN" --only "$c" --len "$len" --batch "$BATCH" --same-thread --frames "$FRAMES" >/dev/null 2>"$OUT/log"
		ir=$(awk '/^summary:/ {print $2}' "$OUT/cg")
		awk -v c="$c" -v l="$len" -v ir="$ir" -v n="$FRAMES" \
			'BEGIN {printf "| %s | %s | %.1f |\n", c, l, ir / n}'
	done
done
