#!/usr/bin/env bash
# Every measurement of the benchmark report (docs/benchmarks/README.md), in
# one run, then its tables and plots:
#
#   ring     ring-compare: the ring between two pinned threads against rtrb
#            (fixed elements and byte messages) and a single-thread memcpy,
#            64, 256, 1514 and 9000-byte frames, 7 alternated pairs each
#   link     link-compare (with iceoryx2): the link between two processes
#            against iceoryx2 between the same processes and rtrb between
#            two threads, 64 and 1514 bytes, 9 rounds; and the one-way
#            latency against the cache-line ping-pong floor
#   dpdk     dpdk-compare.sh: eth_vecring against net_memif in two
#            dpdk-testpmd processes, 64 and 1514 bytes, 5 alternated pairs
#   bench    vecring-bench host-container: the link alone, rates and
#            zero-loss throughput
#
# Each writes CSV into the results directory (ring.csv, link.csv, dpdk.csv,
# bench.csv) beside the tool's own table (*.txt); meta.txt records the
# commit, the machine and the core-to-core latency before and after; then
# benches/plot.py turns the CSV into docs/benchmarks/*.svg, prints the
# tables (tables.md) and, with -u, rewrites the report's tables in place.
#
#   bash benches/report.sh [-q] [-u] [-o DIR] [-x "STEP ..."]
#     -q  quick: every step in a few seconds, to check that the pipeline
#         runs end to end; the figures mean nothing, and nothing is drawn
#         into docs/ (plots go to DIR/svg)
#     -u  update docs/benchmarks/README.md's tables with this run's
#     -o  results directory (default benches/results/runs/DATE-TIME)
#     -x  skip these steps (ring link dpdk bench)
#
# About 10 minutes in full (a quiet machine, please: two other busy
# processes on these two CPUs decide every figure). Needs root, hugepages
# and dpdk-testpmd for the dpdk and bench steps (scripts/setup.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
QUICK=0
UPDATE=0
OUT=
SKIP=
while getopts "quo:x:" o; do
	case $o in
	q) QUICK=1 ;;
	u) UPDATE=1 ;;
	o) OUT=$OPTARG ;;
	x) SKIP=$OPTARG ;;
	*) sed -n '2,31p' "$0"; exit 2 ;;
	esac
done
OUT=${OUT:-benches/results/runs/$(date -u +%Y-%m-%d-%H%M)}
mkdir -p "$OUT"
skip() { [[ " $SKIP " == *" $1 "* ]]; }
step() { echo "== $* ($(date -u +%H:%M:%S))" >&2; }
BIN=target/release

step "build (sequential, -j 2)"
# One invocation: separate ones resolve features differently and rebuild
# vecring-core each time.
cargo build --release -j 2 -p vecring-benches -p vecring-pmd \
	--features vecring-benches/iceoryx2

{
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ' (with uncommitted changes)')"
	echo "mode: $([ "$QUICK" = 1 ] && echo 'quick (-q): a pipeline check, not a measurement' || echo full)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs"
	echo "hugepages: $(awk '/HugePages_Total/ {t=$2} /HugePages_Free/ {f=$2} END {print t " x 2 MiB, " f " free"}' /proc/meminfo)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "core-to-core before: $("$BIN/core-latency") ns"
} >"$OUT/meta.txt"

# measure NAME OUTFILE COMMAND...: runs a step with its stdout in OUTFILE; a
# step that fails is recorded in meta.txt and the others still run.
FAILED=
measure() {
	local name=$1 out=$2
	shift 2
	skip "$name" && return
	step "$name: $*"
	if ! "$@" >"$out"; then
		echo "failed: $name (see $out)" >>"$OUT/meta.txt"
		echo "report: step $name failed" >&2
		FAILED="$FAILED $name"
	fi
}
if [ "$QUICK" = 1 ]; then
	measure ring "$OUT/ring.txt" "$BIN/ring-compare" --pairs 2 --secs 0.02 --sizes 64,1514 --csv "$OUT/ring.csv"
	measure link "$OUT/link.txt" "$BIN/link-compare" 2 --quick --csv "$OUT/link.csv"
	measure dpdk "$OUT/dpdk.txt" bash benches/dpdk-compare.sh -s 64 -p 1 -t 8 -o "$OUT/dpdk.csv"
	measure bench "$OUT/bench.csv" "$BIN/vecring-bench" -q host-container --sizes 64 --seconds 0.2 --trial-seconds 0.02 --csv
else
	measure ring "$OUT/ring.txt" "$BIN/ring-compare" --pairs 7 --secs 0.3 --sizes 64,256,1514,9000 --csv "$OUT/ring.csv"
	measure link "$OUT/link.txt" "$BIN/link-compare" 9 --csv "$OUT/link.csv"
	measure dpdk "$OUT/dpdk.txt" bash benches/dpdk-compare.sh -s "64 1514" -p 5 -t 8 -o "$OUT/dpdk.csv"
	measure bench "$OUT/bench.csv" "$BIN/vecring-bench" -q host-container --csv
fi
{
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "core-to-core after: $("$BIN/core-latency") ns"
} >>"$OUT/meta.txt"

step "plots and tables: benches/plot.py"
SVG=docs/benchmarks
[ "$QUICK" = 1 ] && SVG=$OUT/svg
README=()
[ "$UPDATE" = 1 ] && [ "$QUICK" = 0 ] && README=(--readme docs/benchmarks/README.md)
python3 benches/plot.py "$OUT" --svg-dir "$SVG" "${README[@]}" >"$OUT/tables.md"
echo "report: results in $OUT (tables.md, *.csv, *.txt), plots in $SVG" >&2
[ -z "$FAILED" ] || { echo "report: failed steps:$FAILED" >&2; exit 1; }
