# Sourced by the DPDK benchmark scripts: sets SO to the driver EAL loads.
# Without VECRING_PMD_SO, scripts/build-pmd.sh builds and installs it into
# DPDK's driver directory (EAL refuses plugins under a world-writable
# directory such as /tmp, where a checkout may be).
if [ -n "${VECRING_PMD_SO:-}" ]; then
	SO=$VECRING_PMD_SO
else
	SO=$(bash "$ROOT/scripts/build-pmd.sh" /usr) || { echo "scripts/build-pmd.sh /usr failed" >&2; exit 1; }
fi
