#!/usr/bin/env bash
# Installs everything vecring needs on a fresh Debian 12 machine (run as root).
# Idempotent: a second run only checks.
#   - build tools, DPDK 22.11 (runtime, testpmd, dev headers), LXC, Open
#     vSwitch with DPDK (its ovs-vswitchd-dpdk; no system instance is
#     configured or started here), what building another DPDK line from
#     its release source needs (scripts/dpdk.sh) and pktgen-dpdk with Lua
#     (scripts/pktgen.sh), ethtool, and iperf3 and ping for
#     `vecring tap`'s tests and benches/tap-compare.sh (iperf3 without its
#     system-wide server), and Docker (docker.io) and Podman with what
#     rootless containers use (uidmap, slirp4netns, fuse-overlayfs, crun,
#     containernetworking-plugins) for the container tests, which start
#     their own daemon, and runc (crun refuses containers on a host whose
#     cgroup v2 hierarchy holds a controller beside v1 ones; the Podman
#     tests then run runc)
#   - what scripts/deb.sh builds the Debian packages with (dpkg-dev,
#     patchelf), and what tests/packages.sh checks them with (lintian) and
#     makes a clean Debian root with (mmdebstrap)
#   - DPDK's driver-SDK headers (ethdev_driver.h, bus_vdev_driver.h, ...),
#     taken from Debian's dpdk source package of the installed version
#   - 2 MiB hugepages and a hugetlbfs mount at /dev/hugepages
set -euo pipefail

log() { echo "vecring-setup: $*"; }

SDK_DIR="${VECRING_DPDK_SDK:-/opt/vecring/dpdk-sdk}"
HUGEPAGES="${VECRING_HUGEPAGES:-1024}"

need_pkgs=()
for p in build-essential pkg-config clang libclang-dev dpdk dpdk-dev libdpdk-dev lxc dpkg-dev numactl ethtool \
  openvswitch-switch-dpdk meson ninja-build python3-pyelftools libnuma-dev libpcap-dev liblua5.3-dev iperf3 iputils-ping \
  docker.io podman uidmap slirp4netns fuse-overlayfs crun runc containernetworking-plugins patchelf mmdebstrap lintian; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # iperf3's package asks whether to start a system-wide server: no.
  echo "iperf3 iperf3/start_daemon boolean false" | debconf-set-selections
  # No service is started by the install (docker.io's would start a
  # system dockerd with its bridge and iptables rules): the tests start
  # their own daemons. policy-rc.d answers "not allowed" while it runs.
  rc_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    rc_policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$rc_policy"
    chmod 0755 "$rc_policy"
    trap 'rm -f "$rc_policy"' EXIT
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
  if [ -n "$rc_policy" ]; then
    rm -f "$rc_policy"
    trap - EXIT
  fi
fi

# Driver-SDK headers: DPDK installs them under /usr/include/dpdk only on some
# distributions. Debian 12 does not; take them from the source package of the
# same version.
if [ -f /usr/include/dpdk/ethdev_driver.h ] || [ -f /usr/include/x86_64-linux-gnu/dpdk/ethdev_driver.h ]; then
  log "DPDK driver-SDK headers are installed"
elif [ -f "$SDK_DIR/include/ethdev_driver.h" ]; then
  log "DPDK driver-SDK headers present in $SDK_DIR"
else
  ver=$(dpkg-query -W -f='${Version}' libdpdk-dev)
  log "fetching Debian source of dpdk $ver for its driver-SDK headers"
  src_list=/etc/apt/sources.list.d/vecring-deb-src.sources
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    mirror=$(grep -rhs '^URIs:' /etc/apt/sources.list.d/debian.sources | head -n1 | awk '{print $2}')
    mirror=${mirror:-http://deb.debian.org/debian}
    cat > "$src_list" <<SRC
Types: deb-src
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
  fi
  work=$(mktemp -d)
  (cd "$work" && apt-get source -qq --download-only "dpdk=$ver" >/dev/null)
  (cd "$work" && dpkg-source -x --no-check ./*.dsc src >/dev/null)
  mkdir -p "$SDK_DIR/include"
  # The SDK headers live beside the public ones in lib/ and drivers/bus/.
  for h in ethdev_driver.h ethdev_vdev.h ethdev_pci.h rte_ethdev_core.h; do
    f=$(find "$work/src/lib" -name "$h" | head -n1)
    [ -n "$f" ] && cp "$f" "$SDK_DIR/include/"
  done
  for h in bus_vdev_driver.h bus_driver.h dev_driver.h; do
    f=$(find "$work/src" -name "$h" | head -n1)
    [ -n "$f" ] && cp "$f" "$SDK_DIR/include/"
  done
  echo "$ver" > "$SDK_DIR/VERSION"
  rm -rf "$work"
  log "driver-SDK headers installed in $SDK_DIR/include"
fi

# Hugepages: best effort. vecring falls back to ordinary pages without them.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$hp" ] && [ "$(cat "$hp")" -lt "$HUGEPAGES" ]; then
  echo "$HUGEPAGES" > "$hp" || true
fi
if ! mountpoint -q /dev/hugepages 2>/dev/null; then
  mkdir -p /dev/hugepages
  mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || log "warning: could not mount hugetlbfs at /dev/hugepages"
fi
log "hugepages: $(cat "$hp" 2>/dev/null || echo 0) x 2 MiB"

# Unprivileged LXC containers map root to 100000.
for f in /etc/subuid /etc/subgid; do
  grep -qs '^root:100000:65536' "$f" || echo 'root:100000:65536' >> "$f"
done
log "ready"
