#!/usr/bin/env bash
# Assembles a container root file system from the host's own files, without
# a network, a registry or a distribution image: one for a DPDK application,
# one for the vecring tool. The same directory serves LXC
# (lxc.rootfs.path = dir:DIR), and, as a tarball, `docker import` and
# `podman import`, or through a Containerfile (FROM scratch, COPY) that
# `docker build` and `podman build` build offline.
#
#   scripts/image.sh dpdk DIR [--line LINE | --prefix PREFIX] [--program PATH]...
#   scripts/image.sh vecring DIR [--tool PATH]
#
# and, for either:
#
#   --add PATH            one more program in bin/, with its libraries
#   --owner UID:GID       the tree's owner (an unprivileged LXC container's
#                         root as the host sees it, e.g. 100000:100000)
#   --tar FILE            also a tarball of the tree (numeric owners), for
#                         `docker import FILE NAME` and `podman import FILE NAME`
#   --containerfile FILE  also a Containerfile, FROM scratch and COPY of DIR,
#                         which must lie below FILE's directory (the build
#                         context): `docker build -f FILE -t NAME $(dirname FILE)`
#
# DIR must be absent or empty. Every image has the directories a runtime
# mounts on (dev, proc, sys, run/vecring), a /tmp of mode 1777, and
# /bin/sleep (a first process that keeps a container up: LXC's
# lxc.init.cmd, `docker run -d NAME sleep infinity`). Each program goes to
# /bin, and beside it the shared libraries it links to (`ldd`), each at the
# path the host has it, with the dynamic loader and an /etc/ld.so.cache
# made for the tree.
#
# `dpdk` adds what a DPDK application needs and `ldd` never shows
# (docs/dpdk-container.md explains each):
#   - EAL's runtime directory, /var/run/dpdk: /var/run is a link to /run;
#   - EAL's driver directory, the path built into librte_eal (pmds-<ABI>),
#     holding the mempool driver (librte_mempool_ring, under a name EAL's
#     scan takes) and eth_vecring (librte_net_vecring.so), with their
#     libraries, and nothing else.
# The DPDK line: --prefix names its install (default /usr, Debian's 22.11);
# --line 22.11 is /usr, any other line /opt/vecring/dpdk-LINE, where
# scripts/dpdk.sh builds it (VECRING_DPDK_ROOT overrides /opt/vecring). The
# program is that prefix's bin/dpdk-testpmd unless --program names one or
# more (pktgen, an application of yours), each linked to that line's EAL.
# eth_vecring must be installed in that line's driver directory
# (scripts/build-pmd.sh PREFIX).
#
# `vecring` holds the vecring tool: --tool PATH, or the `vecring` in PATH.
#
# The image holds no configuration and no secret: the programs, their
# libraries and empty directories. Progress goes to stderr; stdout is DIR.
set -euo pipefail

die() { echo "vecring-image: $*" >&2; exit 1; }
log() { echo "vecring-image: $*" >&2; }
usage() {
  die "usage: scripts/image.sh dpdk|vecring DIR [--line LINE | --prefix PREFIX] [--program PATH]... [--tool PATH] [--add PATH]... [--owner UID:GID] [--tar FILE] [--containerfile FILE]"
}

[ $# -ge 2 ] || usage
kind=$1 root=$2
shift 2
case $kind in dpdk | vecring) ;; *) usage ;; esac

prefix= line= tool= owner= tar= containerfile=
programs=() extra=()
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --line) line=$2 ;;
    --prefix) prefix=${2%/} ;;
    --program) programs+=("$2") ;;
    --tool) tool=$2 ;;
    --add) extra+=("$2") ;;
    --owner) owner=$2 ;;
    --tar) tar=$2 ;;
    --containerfile) containerfile=$2 ;;
    *) usage ;;
  esac
  shift 2
done

if [ "$kind" = vecring ]; then
  { [ -z "$prefix$line" ] && [ ${#programs[@]} -eq 0 ]; } || die "--line, --prefix and --program are for a DPDK image"
else
  [ -z "$tool" ] || die "--tool is for a vecring image"
fi
[ -z "$owner" ] || [[ "$owner" =~ ^[0-9]+:[0-9]+$ ]] || die "--owner takes numeric UID:GID, not '$owner'"

# The tree: absent or empty, and never / or a host directory in use.
case $root in /* | ./* | ../*) ;; *) root=./$root ;; esac
[ "$(readlink -m "$root")" != / ] || die "DIR is /"
if [ -e "$root" ]; then
  [ -d "$root" ] || die "$root exists and is not a directory"
  [ -z "$(ls -A "$root")" ] || die "$root is not empty: give a new directory (the image is made from nothing)"
fi

# exe NAME_OR_PATH: the program's path, or die.
exe() {
  local p
  p=$(command -v "$1" 2>/dev/null) || die "no program $1 (give its path)"
  [ -f "$p" ] && [ -x "$p" ] || die "$1 is not an executable file"
  readlink -f "$p"
}

bins=()
if [ "$kind" = dpdk ]; then
  if [ -n "$line" ]; then
    [ -z "$prefix" ] || die "give --line or --prefix, not both"
    [[ "$line" =~ ^[0-9]{2}\.[0-9]{2}$ ]] || die "'$line' is not a DPDK line (YY.MM, e.g. 24.11)"
    if [ "$line" = 22.11 ]; then
      prefix=/usr
    else
      prefix=${VECRING_DPDK_ROOT:-/opt/vecring}/dpdk-$line
      [ -d "$prefix" ] || die "DPDK $line is not built: $prefix is missing (scripts/dpdk.sh $line, then scripts/build-pmd.sh $prefix)"
    fi
  fi
  prefix=${prefix:-/usr}
  [ ${#programs[@]} -gt 0 ] || programs=("$prefix/bin/dpdk-testpmd")
  for p in "${programs[@]}"; do bins+=("$(exe "$p")"); done
else
  bins+=("$(exe "${tool:-vecring}")")
fi
for p in "${extra[@]}"; do bins+=("$(exe "$p")"); done
bins+=("$(exe sleep)")

# libs FILE...: the absolute paths of the shared libraries the files load
# (ldd's "=> /path" lines and the loader's own line, never the header line
# ldd prints for each of several files). A library ldd cannot find stops the
# build: the image would not run.
libs() {
  local out
  out=$(LD_LIBRARY_PATH=${libpath:-} ldd "$@" 2>&1) || true
  if grep -q 'not found' <<<"$out"; then
    grep 'not found' <<<"$out" >&2
    die "ldd cannot find a library of $*"
  fi
  awk '/=> \// { print $3 } /^\t\// { print $1 }' <<<"$out" | sort -u
}

[ -z "$tar" ] || tar=$(readlink -m "$tar")
[ -z "$containerfile" ] || containerfile=$(readlink -m "$containerfile")
mkdir -p "$root"
root=$(readlink -f "$root")
cd "$root"
mkdir -p bin dev proc sys etc run/vecring var
install -d -m 1777 tmp
ln -s ../run var/run
files=()
for b in "${bins[@]}"; do
  name=${b##*/}
  [ ! -e "bin/$name" ] || die "two programs named $name"
  cp -L "$b" "bin/$name"
  files+=("bin/$name")
done

libpath=
if [ "$kind" = dpdk ]; then
  # EAL's driver directory: the path built into the programs' librte_eal.
  eal=$(libs "${files[@]}" | grep '/librte_eal\.so' || true)
  [ -n "$eal" ] || die "${programs[*]} do not link librte_eal: not DPDK programs"
  [ "$(wc -l <<<"$eal")" -eq 1 ] || die "the programs link more than one librte_eal (give programs of one DPDK line)"
  pmds=$(strings "$eal" | grep -E '^/.*/pmds-[0-9.]+$' || true)
  pmds=${pmds%%$'\n'*}
  [ -n "$pmds" ] || die "no driver directory (pmds-<ABI>) in $eal"
  abi=${pmds##*/pmds-}
  [ -d "$pmds" ] || die "EAL's driver directory $pmds is missing on the host"
  # The scan takes *.so and *.so.<ABI> (23.0 for 22.11), not the soname.
  mempool=
  for f in "$pmds/librte_mempool_ring.so.$abi" "$pmds/librte_mempool_ring.so"; do
    [ -e "$f" ] && { mempool=$f; break; }
  done
  [ -n "$mempool" ] || die "no mempool driver (librte_mempool_ring) in $pmds"
  vecring_pmd=$pmds/librte_net_vecring.so
  [ -e "$vecring_pmd" ] || die "eth_vecring is not installed in $pmds (scripts/build-pmd.sh $prefix)"
  mkdir -p ".$pmds"
  cp -L "$mempool" "$vecring_pmd" ".$pmds/"
  files+=(".$pmds/${mempool##*/}" ".$pmds/librte_net_vecring.so")
  # The plugins find the line's libraries through the program's rpath when
  # EAL loads them; ldd of a plugin alone needs them named.
  libpath=$(dirname "$eal")
  log "DPDK application: ${programs[*]}; driver directory $pmds (mempool ring, eth_vecring)"
fi

mapfile -t deps < <(libs "${files[@]}")
for d in "${deps[@]}"; do
  cp --parents -L "$d" .
done
# The loader's cache, for the tree: every directory a library was copied to.
printf '%s\n' "${deps[@]}" | xargs -n1 dirname | sort -u >etc/ld.so.conf
ldconfig -X -r "$root"

if [ -n "$owner" ]; then
  chown -R "$owner" "$root"
fi
log "$root: $(find . -type f | wc -l) files, $(du -sm . | cut -f1) MB"

if [ -n "$tar" ]; then
  tar -C "$root" --numeric-owner -cf "$tar" .
  log "tarball $tar (docker import $tar NAME; podman import $tar NAME)"
fi
if [ -n "$containerfile" ]; then
  ctx=$(readlink -f "$(dirname "$containerfile")")
  case $root in "$ctx"/*) ;; *) die "$root is not below $ctx, the Containerfile's directory (the build context)" ;; esac
  cat >"$containerfile" <<-EOF
	# Made by vecring's scripts/image.sh: the $kind image, from the host's files.
	FROM scratch
	COPY ${root#"$ctx"/}/ /
	CMD ["/bin/sleep", "infinity"]
	EOF
  log "Containerfile $containerfile (docker build -f $containerfile -t NAME $ctx)"
fi
echo "$root"
