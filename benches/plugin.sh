# Sourced by the DPDK benchmark scripts: installs the built PMD where EAL's
# -d accepts it (EAL refuses plugins under a world-writable directory) and
# sets SO to its path. VECRING_PMD_SO overrides the file installed.
SO_SRC=${VECRING_PMD_SO:-$ROOT/target/release/librte_net_vecring.so}
[ -f "$SO_SRC" ] || { echo "missing $SO_SRC: cargo build --release -p vecring-pmd" >&2; exit 1; }
PLUGIN_DIR=/usr/local/lib/vecring
install -d -m 0755 "$PLUGIN_DIR"
install -m 0644 "$SO_SRC" "$PLUGIN_DIR/librte_net_vecring.so"
SO=$PLUGIN_DIR/librte_net_vecring.so
