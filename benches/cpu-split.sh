#!/usr/bin/env bash
# Where both CPUs' time went in a `perf record -a -e cpu-clock` profile:
# idle, copying bytes (the kernel's copies to and from user space and
# between buffers, libc's memcpy/memmove), checksums, and the rest, each
# as a share of all samples, then the busiest commands. Used by
# benches/tap-compare.sh (TAP_COMPARE_PERF=1) to show what a TCP stream
# costs through a veth pair and through `vecring tap`.
#
# Usage: benches/cpu-split.sh PERF_DATA
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,9p' "$0"; exit 2; }
report=$(perf report -i "$1" --no-children --sort comm,sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$')
echo "$report" | awk '
	{
		pct = $1; sub(/%/, "", pct); comm = $2; sym = $NF
		if (comm == "swapper" || sym ~ /halt|idle|mwait|poll_idle/) idle += pct
		else if (sym ~ /copy_user|copy_to_user|copy_from_user|_copy_to_iter|_copy_from_iter|memmove|memcpy|rep_movs|copy_page|skb_copy_bits/) copy += pct
		else if (sym ~ /csum/) csum += pct
		else other += pct
	}
	END { printf "  idle %.1f%%, copying bytes %.1f%%, checksums %.1f%%, the rest %.1f%% (of both CPUs)\n", idle, copy, csum, other }'
printf '  busiest:'
echo "$report" | awk '$2 != "swapper" { pct = $1; sub(/%/, "", pct); by[$2] += pct } END { for (c in by) printf "%.1f %s\n", by[c], c }' |
	sort -rn | head -5 | awk '{ printf " %s %s%%", $2, $1 }'
echo
