#!/usr/bin/env bash
# vecring's Debian packages (scripts/deb.sh), installed for real: on a clean
# Debian 12 root file system that mmdebstrap makes (the essential packages,
# DPDK 22.11 with dpdk-testpmd, which Debian 12 ships in dpdk-dev, pkgconf
# and a C compiler; nothing of vecring; about a minute), in a container of
# it with no network, the packages install with dpkg -i and
#   - dpkg says each is installed at the workspace's version, and lists the
#     files each must hold;
#   - dpdk-testpmd finds eth_vecring with no -d (the driver's log says its
#     port was made), and receives the frames the packaged vecring tool
#     sends it over a link;
#   - vecring --version, its man pages and its bash completion work; the
#     CRIU plugin exports its descriptor and finds its libraries;
#   - vecring doctor is happy: exit status 0, no FAIL, DPDK and the driver
#     found where EAL loads it by itself, also as on a host of DPDK's
#     runtime alone (no libdpdk.pc);
#   - pkg-config vecring gives -lvecring, and the C example the -dev package
#     ships builds with it, links libvecring.so.0 and runs;
# then dpkg --purge removes them all and leaves no file behind (the root's
# file list, with types, modes and owners, is what it was before the
# install). lintian, when installed, checks the packages too (errors fail).
#
# The container is unshare(1) and chroot: new mount, PID, network, IPC and
# UTS namespaces (no network device but lo, which stays down), /proc, a
# read-only /sys, a /dev of a few nodes, and empty /run and /tmp. Docker or
# Podman would first import the root as an image into their storage (Docker
# with its daemon running) and the test would have to remove it again; the
# namespaces end with their first process, taking every mount with them.
#
# Usage: tests/packages.sh          (root; scripts/setup.sh first; the Debian
#        mirror of /etc/apt/sources.list.d/debian.sources must be reachable)
# Env:   VECRING_TEST_KEEP=1        keep the work directory (root, packages,
#                                   logs)
#        VECRING_PACKAGES_MIRROR    the Debian mirror to make the root from
#
# Every command runs under a timeout; the work directory (under /var/tmp) is
# removed at the end. The last line is "N passed, N failed"; the exit
# status is non-zero if anything failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "$(id -u)" != 0 ]; then
	echo "skipped: tests/packages.sh needs root (dpkg, mmdebstrap, namespaces)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

PASSED=0
FAILED=0
log() { echo "packages-test: $*"; }
pass() { echo "PASS: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $*"; FAILED=$((FAILED + 1)); }
finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
	exit
}

WORK=$(mktemp -d /var/tmp/vecring-packages.XXXXXX)
chmod 0755 "$WORK"
ROOTFS=$WORK/root
SHARE=$WORK/share   # the container's /mnt: the packages, the test's files
mkdir -p "$SHARE/debs"

cleanup() {
	# Every mount of the test lives in a namespace that is gone by now;
	# should one remain (mmdebstrap killed by its timeout), it is unmounted
	# before anything is removed, and removal never crosses into it.
	local m
	findmnt -rn -o TARGET | grep -F "$WORK/" | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null
	done
	if [ "${VECRING_TEST_KEEP:-0}" = 1 ]; then
		log "work directory kept: $WORK"
	elif [ "$FAILED" -gt 0 ]; then
		# The logs, not the root file system (some hundred MiB).
		rm -rf --one-file-system "$ROOTFS"
		log "logs kept in $WORK"
	else
		rm -rf --one-file-system "$WORK"
	fi
}
trap cleanup EXIT

# in_root SECONDS CMD...: CMD, as root, in a container of $ROOTFS.
in_root() {
	local t=$1
	shift
	timeout --kill-after=5 "$t" unshare --mount --pid --fork --kill-child --net --ipc --uts \
		--propagation private /bin/sh -euc '
r=$1; s=$2; shift 2
mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$r/sys"
mount -t tmpfs -o mode=0755,nosuid tmpfs "$r/dev"
for n in null zero full random urandom tty; do
	: >"$r/dev/$n"
	mount --bind "/dev/$n" "$r/dev/$n"
done
mkdir "$r/dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/dev/shm"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$r/run"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/tmp"
mount --bind "$s" "$r/mnt"
exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"
' sh "$ROOTFS" "$SHARE" "$@" </dev/null
}

# The root's files, with type, mode and owner; not the container's mounts,
# nor the log of dpkg and the cache of ldconfig, which any install writes
# (and mmdebstrap removes at its end). What dpkg and the loader rewrite in
# place (its status, the loader's cache) keeps its name.
listing() {
	(cd "$ROOTFS" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
		-o -path ./tmp -o -path ./mnt -o -path ./var/log/dpkg.log \
		-o -path ./var/cache/ldconfig/aux-cache \) -prune -o -printf '%p %y %m %U:%G\n' | sort)
}

# --- the packages ----------------------------------------------------------
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n1)
debver=${version//-/\~}-1
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
pmds=$(find "$(pkg-config --variable=libdir libdpdk)/dpdk" -maxdepth 1 -type d -name 'pmds-*' 2>/dev/null | sort -V | tail -n1)
if [ -z "$pmds" ]; then
	fail "no DPDK driver directory (pkg-config libdpdk): run scripts/setup.sh"
	finish
fi
abi=${pmds##*/pmds-}
abi=${abi%%.*}
PMD=librte-net-vecring$abi
PACKAGES=(vecring libvecring0 libvecring-dev "$PMD")

start=$SECONDS
if timeout --kill-after=10 900 bash "$ROOT/scripts/deb.sh" "$SHARE/debs" >"$WORK/deb.log" 2>&1; then
	pass "scripts/deb.sh built the packages in $((SECONDS - start)) s: $(cd "$SHARE/debs" && echo *.deb)"
else
	fail "scripts/deb.sh: $(tail -n 30 "$WORK/deb.log")"
	finish
fi
for p in "${PACKAGES[@]}"; do
	[ -f "$SHARE/debs/${p}_${debver}_$(dpkg --print-architecture).deb" ] ||
		fail "no package $p $debver in $(ls "$SHARE/debs")"
done

if command -v lintian >/dev/null; then
	start=$SECONDS
	if timeout --kill-after=10 300 lintian --fail-on error \
		"$SHARE"/debs/*.deb >"$WORK/lintian.log" 2>&1; then
		pass "lintian: no error ($((SECONDS - start)) s; $(grep -c '^[WI]:' "$WORK/lintian.log") warnings and notes, in the log)"
	else
		fail "lintian: $(grep -v '^[IP]:' "$WORK/lintian.log" | head -n 30)"
	fi
else
	log "lintian is not installed: the packages are not linted (apt-get install lintian)"
fi

# --- a clean Debian 12 root --------------------------------------------------
mirror=${VECRING_PACKAGES_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)}
mirror=${mirror:-http://deb.debian.org/debian}
start=$SECONDS
# In a mount namespace of its own: its mounts in the root end with it.
if timeout --kill-after=10 600 unshare --mount --propagation private \
	mmdebstrap --mode=root --variant=essential --include=dpdk-dev,pkgconf,gcc,libc6-dev \
	--dpkgopt=force-unsafe-io \
	--aptopt='Acquire::Languages "none"' --aptopt='Acquire::Retries "3"' \
	bookworm "$ROOTFS" "deb $mirror bookworm main" </dev/null >"$WORK/mmdebstrap.log" 2>&1; then
	pass "mmdebstrap made a Debian 12 root with DPDK $(sed -n '/^Package: dpdk-dev$/,/^$/s/^Version: //p' "$ROOTFS/var/lib/dpkg/status") in $((SECONDS - start)) s ($(du -sm "$ROOTFS" | cut -f1) MiB)"
else
	fail "mmdebstrap: $(tail -n 30 "$WORK/mmdebstrap.log")"
	finish
fi
for p in "${PACKAGES[@]}"; do
	if in_root 30 dpkg -s "$p" >/dev/null 2>&1; then
		fail "the clean root already has $p"
	fi
done
listing >"$WORK/before"

# --- install ------------------------------------------------------------------
if in_root 120 sh -c 'dpkg -i /mnt/debs/*.deb' >"$WORK/install.log" 2>&1; then
	pass "dpkg -i of ${PACKAGES[*]} with no network"
else
	fail "dpkg -i: $(tail -n 30 "$WORK/install.log")"
	finish
fi
for p in "${PACKAGES[@]}"; do
	st=$(in_root 30 dpkg-query -W -f '${Status} ${Version}' "$p" 2>&1)
	if [ "$st" = "install ok installed $debver" ]; then
		pass "dpkg-query: $p $st"
	else
		fail "dpkg-query $p: '$st', not 'install ok installed $debver'"
	fi
done

# The files each package must hold (dpkg-query -L).
declare -A FILES=(
	[vecring]="/usr/bin/vecring /usr/share/man/man1/vecring.1.gz /usr/share/man/man1/vecring-tap.1.gz
		/usr/share/bash-completion/completions/vecring /usr/share/zsh/vendor-completions/_vecring
		/usr/share/fish/vendor_completions.d/vecring.fish /usr/share/doc/vecring/copyright
		/usr/share/doc/vecring/changelog.Debian.gz"
	[libvecring0]="/usr/lib/$multiarch/libvecring.so.0 /usr/lib/$multiarch/libvecring.so.${version//-/\~}
		/usr/share/doc/libvecring0/copyright"
	[libvecring-dev]="/usr/include/vecring.h /usr/lib/$multiarch/libvecring.so /usr/lib/$multiarch/libvecring.a
		/usr/lib/$multiarch/pkgconfig/vecring.pc /usr/share/doc/libvecring-dev/examples/hello.c"
	[$PMD]="$pmds/librte_net_vecring.so /usr/share/doc/$PMD/copyright"
)
FILES[vecring]+=" /usr/lib/systemd/system/vecring-tap@.service /usr/lib/tmpfiles.d/vecring.conf"
for p in "${PACKAGES[@]}"; do
	in_root 30 dpkg-query -L "$p" >"$WORK/$p.list" 2>&1
	missing=()
	for f in ${FILES[$p]}; do
		grep -qxF "$f" "$WORK/$p.list" && [ -e "$ROOTFS$f" ] || missing+=("$f")
	done
	if [ "${#missing[@]}" = 0 ]; then
		pass "dpkg-query -L $p: $(wc -l <"$WORK/$p.list") entries, among them" ${FILES[$p]}
	else
		fail "dpkg-query -L $p lacks ${missing[*]}: $(cat "$WORK/$p.list")"
	fi
done

# --- the driver ---------------------------------------------------------------
# testpmd, not told where the driver is (no -d), makes its port; then it
# receives, as the slave, what the packaged tool sends as the master.
out=$(in_root 60 sh -c '
vecring txonly --role master --domain pkgtest --link l0 --seconds 2 --up-timeout 30 >/tmp/tx.log 2>&1 &
tx=$!
timeout -s INT -k 5 8 dpdk-testpmd --no-pci --no-huge -m 256 --no-shconf -l 0-1 \
	--vdev=eth_vecring0,domain=pkgtest,link=l0 -- --forward-mode=rxonly --stats-period 1 \
	--total-num-mbufs=4096 2>&1
echo "testpmd status $?"
wait "$tx"
echo "vecring txonly status $?"
cat /tmp/tx.log' 2>&1)
echo "$out" >"$WORK/testpmd.log"
if echo "$out" | grep -q "eth_vecring0: port 0, slave of link pkgtest/l0"; then
	pass "dpdk-testpmd found eth_vecring in $pmds with no -d: $(echo "$out" | grep -m1 'eth_vecring0: port 0')"
else
	fail "dpdk-testpmd made no eth_vecring port: $(head -n 40 "$WORK/testpmd.log")"
fi
rx=$(echo "$out" | sed -n 's/.*RX-packets: *\([0-9]*\).*/\1/p' | sort -n | tail -n1)
if [ "${rx:-0}" -gt 0 ] && echo "$out" | grep -q "vecring txonly status 0"; then
	pass "dpdk-testpmd received $rx frames from the vecring tool over the link"
else
	fail "no frames from the vecring tool to testpmd (RX-packets ${rx:-none}): $(tail -n 30 "$WORK/testpmd.log")"
fi

# --- the tool ---------------------------------------------------------------------
v=$(in_root 30 vecring --version 2>&1)
if [ "$v" = "vecring $version" ]; then
	pass "vecring --version: $v"
else
	fail "vecring --version: '$v', not 'vecring $version'"
fi
# The page as man(1) on the host formats it (the clean root has no man-db).
MANWIDTH=80 timeout 30 man -l "$ROOTFS/usr/share/man/man1/vecring.1.gz" >"$WORK/man.txt" 2>"$WORK/man.err"
if [ "$(in_root 30 sh -c 'zcat /usr/share/man/man1/vecring.1.gz | grep -c "^\.TH"' 2>&1)" = 1 ] &&
	grep -q "vecring-doctor(1)" "$WORK/man.txt" && [ ! -s "$WORK/man.err" ]; then
	pass "man page vecring(1) and $(in_root 30 sh -c 'ls /usr/share/man/man1/vecring-*.1.gz | wc -l') pages of commands"
else
	fail "vecring(1) does not read: $(cat "$WORK/man.err"; head -n 20 "$WORK/man.txt")"
fi
c=$(in_root 30 sh -c 'echo "{\"cniVersion\":\"1.0.0\"}" | CNI_COMMAND=VERSION /usr/lib/cni/vecring-cni' 2>&1)
if echo "$c" | grep -q '"supportedVersions":\["0.3.0","0.3.1","0.4.0","1.0.0"\]'; then
	pass "the CNI plugin /usr/lib/cni/vecring-cni answers VERSION: $c"
else
	fail "the CNI plugin's VERSION: $c"
fi
c=$(nm -D --defined-only "$ROOTFS/usr/lib/vecring/criu/vecring.so" 2>&1 | grep -w CR_PLUGIN_DESC)
l=$(in_root 30 sh -c 'ldd /usr/lib/vecring/criu/vecring.so' 2>&1)
if echo "$c" | grep -q " D CR_PLUGIN_DESC$" && ! echo "$l" | grep -q "not found"; then
	pass "the CRIU plugin /usr/lib/vecring/criu/vecring.so: its descriptor exported, its libraries installed"
else
	fail "the CRIU plugin: $c; $l"
fi
c=$(in_root 30 bash -c '. /usr/share/bash-completion/completions/vecring && complete -p vecring' 2>&1)
if echo "$c" | grep -q "^complete .* vecring$"; then
	pass "bash completion: $c"
else
	fail "bash completion: $c"
fi

# doctor: what stops a link is a FAIL line and a non-zero exit status. In
# this container /sys is the host's (hugepages as the host reserved them),
# hugetlbfs is not mounted (a warning: vecring needs none) and /run/vecring
# does not exist yet. On a host without 2 MiB hugepages
# (VECRING_TEST_NO_HUGE=1) that one FAIL, and exit status 1, are right.
# Debian 12 ships dpdk-testpmd in dpdk-dev, with libdpdk.pc; doctor runs
# also as on a host of DPDK's runtime alone (an application's, Open
# vSwitch's), where pkg-config finds no libdpdk.
want_st=0 want_last="vecring doctor: nothing stops a link here"
if [ "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null || echo 0)" = 0 ]; then
	want_st=1 want_last="vecring doctor: something above (FAIL) stops a link from working"
fi
for host in "with DPDK's development files" "with DPDK's runtime only"; do
	if [ "$host" = "with DPDK's runtime only" ]; then
		out=$(in_root 30 env PKG_CONFIG_LIBDIR=/nonexistent vecring doctor 2>&1)
	else
		out=$(in_root 30 vecring doctor 2>&1)
	fi
	st=$?
	echo "$out" >>"$WORK/doctor.log"
	fails=$(echo "$out" | grep '^FAIL' | grep -v '^FAIL hugepages no 2 MiB hugepages reserved')
	if [ "$st" = "$want_st" ] && [ -z "$fails" ] &&
		echo "$out" | grep -qxF "ok   driver    $pmds/librte_net_vecring.so (loaded by EAL automatically)" &&
		echo "$out" | grep -q '^ok   dpdk ' &&
		[ "$(echo "$out" | tail -n1)" = "$want_last" ]; then
		pass "vecring doctor $host: exit $st, $(echo "$out" | grep -c '^ok') ok, $(echo "$out" | grep -c '^warn') warnings, $(echo "$out" | grep -c '^FAIL') FAIL; the driver found, and $(echo "$out" | grep '^ok   dpdk ')"
	else
		fail "vecring doctor $host (status $st, $want_st wanted): $out"
	fi
done

# --- the C library ------------------------------------------------------------
pc=$(in_root 30 pkg-config --cflags --libs vecring 2>&1)
mv=$(in_root 30 pkg-config --modversion vecring 2>&1)
if [ "$(echo $pc)" = "-lvecring" ] && [ "$mv" = "$version" ]; then
	pass "pkg-config vecring: '$(echo $pc)', version $mv"
else
	fail "pkg-config vecring: '$pc', version '$mv'"
fi
out=$(in_root 60 sh -c '
cc -Wall -Wextra -Werror -o /tmp/hello /usr/share/doc/libvecring-dev/examples/hello.c $(pkg-config --cflags --libs vecring)
ldd /tmp/hello | grep libvecring
mkdir /tmp/run
/tmp/hello /tmp/run' 2>&1)
if echo "$out" | grep -Eq "libvecring\.so\.0 => (/usr)?/lib/$multiarch/libvecring\.so\.0 " &&
	echo "$out" | grep -qxF "slave received 15 bytes: hello, vecring"; then
	pass "the -dev package's hello.c builds with pkg-config, needs libvecring.so.0 and runs"
else
	fail "hello.c against the packages: $out"
fi

# --- purge ----------------------------------------------------------------------
if in_root 120 dpkg --purge "${PACKAGES[@]}" >"$WORK/purge.log" 2>&1; then
	pass "dpkg --purge ${PACKAGES[*]}"
else
	fail "dpkg --purge: $(tail -n 30 "$WORK/purge.log")"
fi
listing >"$WORK/after"
if diff -u "$WORK/before" "$WORK/after" >"$WORK/left.diff"; then
	pass "after the purge the root holds exactly the files it had before the install ($(wc -l <"$WORK/after") entries)"
else
	fail "the purge left the root changed: $(head -n 40 "$WORK/left.diff")"
fi
finish
