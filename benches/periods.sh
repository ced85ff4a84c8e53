# Medians of testpmd's per-period rates, for the benchmark scripts that run
# testpmd (sourced by dpdk-compare.sh and dpdk-queues.sh).

# median_periods FIELD LOG: the median of the non-zero per-period figures of
# FIELD (e.g. Rx-pps) in testpmd's LOG, the first and last period dropped
# (the link comes up during the first; the last is cut by the stop).
median_periods() {
	{ grep -o "$1: *[0-9]*" "$2" || true; } | awk '{print $2}' | awk '$1 > 0' |
		sed '1d;$d' | sort -n | awk '{v[NR]=$1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'
}

# median: the median of the numbers on stdin (0 for none).
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'; }

# min_max: "MIN-MAX" of the numbers on stdin, to 3 significant digits ("-"
# for none).
min_max() { tr ' ' '\n' | grep -v '^$' | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR == 0) print "-"; else printf "%.3g-%.3g\n", lo, hi}'; }
