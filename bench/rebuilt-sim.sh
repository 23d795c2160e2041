#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Rebuilt images (issue 33): an update whose squashfs was rebuilt, so that
# unchanged content sits at shifted offsets, installed over HTTP on the
# host's userspace simulator (no VM: fetched bytes do not depend on the
# flash driver). Workloads:
#   appliance  the reference appliance's v1 -> v2 (nandsim/appliance/mkrootfs
#              -v 1 / -v 2: three small files differ, the version among them)
#   one-byte   a ~60 MiB tree of real files (/usr/share/doc, /usr/bin) with one
#              byte changed in its first file
#   package    the appliance v1 with a package added in the middle of the tree
#              (/usr/lib/bench-pkg: the host's /usr/share/doc/{systemd,...})
# Contenders: flashd with a plain bundle (both slots hold the old image, as
# after a factory provision of both, A runs: bytes lighttpd sent, erases in
# B, time), the same
# with a format 2.0 bundle (--no-chunks: what flashd did before), flashd with
# `bundle create --base` when this flashctl has it, casync with the old
# image as seed (an HTTP store: the bytes lighttpd sent for the index and
# chunks), RAUC and SWUpdate plain/full (no delta: they fetch the whole
# bundle, the image size plus their few KiB of manifest; not run here).
#
#   bench/rebuilt-sim.sh WORK [RESULTS.jsonl] [WORKLOADS]
#
# Prints one row per workload and contender; with RESULTS, appends JSON lines.
set -euo pipefail
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
TEST_NAME=rebuilt-sim TEST_LIB=$top_srcdir/tests/lib
W=$(mkdir -p "$1" && cd "$1" && pwd -P)
JSONL=${2:-}
WORKLOADS=${3:-appliance,one-byte,package}
. "$top_srcdir/tests/lib/sim-board.sh"
. "$TEST_LIB/http.sh"
need casync
need lighttpd

# ---- images (cached in WORK) ---------------------------------------------------
mksq() { mksquashfs "$1" "$2" -noappend -quiet -no-progress -comp xz -all-root \
	-mkfs-time 1700000000 -all-time 1700000000 >/dev/null; }
app() { # VERSION OUT [EXTRA-SCRIPT]
	[ -f "$2" ] && return 0
	top_builddir=${top_builddir:-$top_srcdir} "$top_srcdir/nandsim/appliance/mkrootfs" -v "$1" \
		${3:+-x "$3"} "$2" >"$W/mkrootfs.log" 2>&1 || fail "mkrootfs: $(tail -n 3 "$W/mkrootfs.log")"
}
tree() { # ~60 MiB of real files, in name order
	[ -f "$W/tree-v1.sqfs" ] && return 0
	rm -rf "$W/tree"
	mkdir -p "$W/tree"
	find /usr/share/doc /usr/bin -type f -size -4M -printf '%s %p\n' 2>/dev/null | sort -k2 |
		awk '{ n += $1; if (n > 60 * 1024 * 1024) exit; print $2 }' |
		xargs -d '\n' cp --parents -t "$W/tree/" 2>/dev/null || true
	mksq "$W/tree" "$W/tree-v1.sqfs"
	first=$(find "$W/tree" -type f -size +1k | sort | head -n 1)
	"$PY" -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[100] ^= 0x5a; open(p, "wb").write(b)' "$first"
	mksq "$W/tree" "$W/tree-v2.sqfs"
	rm -rf "$W/tree"
}
cat > "$W/addpkg.sh" <<'EOS'
#!/bin/sh
# a package's files in the middle of the tree (usr/lib)
mkdir -p "$1/usr/lib/bench-pkg"
for d in /usr/share/doc/systemd /usr/share/doc/libc6 /usr/share/doc/coreutils /usr/share/doc/util-linux; do
	[ -d "$d" ] && cp -r "$d" "$1/usr/lib/bench-pkg/"
done
cp /usr/bin/ls /usr/bin/cp /usr/bin/find "$1/usr/lib/bench-pkg/" 2>/dev/null || true
EOS
chmod +x "$W/addpkg.sh"

# ---- one install on a fresh simulated board ---------------------------------------
"$FLASHCTL" -q bundle keygen --out "$T/rel" >/dev/null || fail "bundle keygen"
mkdir -p "$T/keyring" "$T/state" "$T/www"
cp "$T/rel.pub" "$T/keyring/"
flashd_conf ""
start_httpd
base=0
"$FLASHCTL" bundle create --help 2>&1 | grep -q -- '--base' && base=1

fresh_board() {
	stop_daemon
	rm -f "$SIM"
	rm -rf "$T/state" && mkdir -p "$T/state"
	"$FLASHCTL" -q flash sim-create "$SIM" --type nand --size 128MiB --erase-block 128KiB \
		--page 2048 --oob 64 >/dev/null || fail "flash sim-create"
	"$FLASHCTL" -q env init --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=A B" \
		BOOT_A_LEFT=3 BOOT_B_LEFT=3 FLASHD_A_STATE=good FLASHD_B_STATE=good >/dev/null ||
		fail "env init"
}

row() { # WORKLOAD CONTENDER FETCHED ERASES SECONDS IMAGE BUNDLE [NOTE]
	printf '%-10s %-14s fetched %10s B (%5.1f%% of %10s B)  erases %5s  time %6s s  image %s B%s\n' \
		"$1" "$2" "$3" "$(echo "$3 $7" | awk '{ printf "%.1f", 100 * $1 / $2 }')" "$7" "$4" "$5" \
		"$6" "${8:+  ($8)}"
	[ -z "$JSONL" ] || printf '{"kind":"rebuilt","workload":"%s","contender":"%s","fetched":%s,"erases":%s,"seconds":%s,"image":%s,"bundle":%s,"note":"%s"}\n' \
		"$1" "$2" "$3" "${4/-/null}" "${5/-/null}" "$6" "$7" "${8:-}" >>"$JSONL"
}

# log_settled: lighttpd writes its access log about once a second, later on
# a loaded machine: wait until it has lines and did not grow for 2 s (at
# most 30 s)
log_settled() {
	local a b i
	sleep 2
	for i in $(seq 15); do
		a=$(stat -c %s "$T/access.log") && sleep 2 && b=$(stat -c %s "$T/access.log")
		[ "$a" = "$b" ] && [ "$b" -gt 0 ] && return 0
	done
	say "the access log did not settle in 30 s: the bytes below may be short"
}

# bundle_image BUNDLE OUT: the (uncompressed) rootfs image the bundle carries
bundle_image() {
	local off size
	"$FLASHCTL" --json bundle info "$1" > "$T/info.json" || fail "bundle info $1"
	off=$(jq -r '.images[0].offset' "$T/info.json") size=$(jq -r '.images[0].size' "$T/info.json")
	tail -c +$((off + 1)) "$1" | head -c "$size" > "$2"
}

# flashd WORKLOAD CONTENDER OLD.sqfs NEW.sqfs [bundle create options for NEW]
flashd_run() {
	local wl=$1 who=$2 old=$3 new=$4 t0 t1
	shift 4
	fresh_board
	"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version 1.0 --image "rootfs=$old" \
		--key "$T/rel.key" -o "$T/old.bundle" >/dev/null || fail "bundle create old"
	"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version 2.0 --image "rootfs=$new" \
		--key "$T/rel.key" "$@" -o "$T/www/$wl-$who.bundle" >/dev/null || fail "bundle create new"
	# the old image in both slots, as a factory provision of both leaves
	# them (the slot an update goes to holds an earlier image, not erased
	# flash), then A booted: the update goes to B
	echo "flashd.slot=B" > "$T/cmdline"
	start_daemon
	fctl -q install "$T/old.bundle" >"$T/old.out" 2>&1 || fail "install old: $(cat "$T/old.out")"
	slot_is A "$old" "$wl: the old image in A"
	echo "flashd.slot=A" > "$T/cmdline"
	reset_slots
	fctl -q install "$T/old.bundle" >"$T/old.out" 2>&1 || fail "install old into B: $(cat "$T/old.out")"
	slot_is B "$old" "$wl: the old image in B"
	reset_slots
	: > "$T/access.log"
	t0=$(date +%s.%N)
	fctl -q install "http://127.0.0.1:$HTTP_PORT/$wl-$who.bundle" >"$T/new.out" 2>&1 ||
		fail "install new: $(cat "$T/new.out")"
	t1=$(date +%s.%N)
	# B holds the bundle's image: the plain build, or with --base its
	# re-laid-out copy (the same tree), read from the bundle's payload
	bundle_image "$T/www/$wl-$who.bundle" "$T/want.img"
	[ "$who" != flashd-base ] || ! cmp -s "$T/want.img" "$new" || fail "$wl: --base laid nothing out"
	[ "$who" = flashd-base ] || cmp -s "$T/want.img" "$new" || fail "$wl: the bundle's image is not $new"
	slot_is B "$T/want.img" "$wl: B after the update"
	fctl --json status > "$T/st.json"
	log_settled
	[ "$(http_bytes "/$wl-$who.bundle")" = "$(jq -r '.last_install.bytes_fetched' "$T/st.json")" ] ||
		say "$wl $who: lighttpd sent $(http_bytes "/$wl-$who.bundle") B, flashd counted $(jq -r '.last_install.bytes_fetched' "$T/st.json")"
	row "$wl" "$who" "$(http_bytes "/$wl-$who.bundle")" \
		"$(jq -r '.last_install.erases' "$T/st.json")" \
		"$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')" \
		"$(stat -c %s "$new")" "$(stat -c %s "$T/www/$wl-$who.bundle")"
}

# casync WORKLOAD OLD NEW: the new image's index and chunk store over HTTP,
# extracted with the old image as seed (what its update client does)
casync_run() {
	local wl=$1 old=$2 new=$3 d=$T/www/cs-$1 t0 t1 bytes
	rm -rf "$d" && mkdir -p "$d"
	casync make --store="$d/store" "$d/new.caibx" "$new" >/dev/null 2>&1 || fail "casync make"
	: > "$T/access.log"
	t0=$(date +%s.%N)
	casync extract --store="http://127.0.0.1:$HTTP_PORT/cs-$wl/store" --seed="$old" \
		"http://127.0.0.1:$HTTP_PORT/cs-$wl/new.caibx" "$T/cs-out.img" >"$T/cs.out" 2>&1 ||
		fail "casync extract: $(tail -n 3 "$T/cs.out")"
	t1=$(date +%s.%N)
	cmp -s "$T/cs-out.img" "$new" || fail "casync extracted another image"
	log_settled
	bytes=$(awk -v p="/cs-$wl/" 'index($2, p) == 1 { n += $NF } END { print n + 0 }' "$T/access.log")
	row "$wl" casync "$bytes" - "$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')" \
		"$(stat -c %s "$new")" "$(du -sb "$d" | cut -f1)" "seed: the old image; bundle = index + store"
	rm -rf "$d" "$T/cs-out.img"
}

workload() { # NAME OLD NEW
	local img
	flashd_run "$1" flashd "$2" "$3"
	# what a flashd before format 3.0 does with the same pair (block hashes only)
	flashd_run "$1" flashd-2.0 "$2" "$3" --no-chunks
	[ $base = 0 ] || flashd_run "$1" flashd-base "$2" "$3" --base "$T/old.bundle"
	casync_run "$1" "$2" "$3"
	img=$(stat -c %s "$3")
	row "$1" rauc/swupdate "$img" $(( (img + 131071) / 131072 )) - "$img" "$img" \
		"full install: the whole image fetched and every block erased (not run)"
}

for wl in ${WORKLOADS//,/ }; do
	case $wl in
	appliance) # v1 and v2 from one build of flashd (cached in WORK)
		app 1 "$W/app-v1.sqfs"; app 2 "$W/app-v2.sqfs"
		workload appliance "$W/app-v1.sqfs" "$W/app-v2.sqfs" ;;
	one-byte) tree; workload one-byte "$W/tree-v1.sqfs" "$W/tree-v2.sqfs" ;;
	package) # both from this build of flashd (the appliance carries it)
		app 1 "$W/app-pkg-v1.sqfs"; app 1 "$W/app-pkg.sqfs" "$W/addpkg.sh"
		workload package "$W/app-pkg-v1.sqfs" "$W/app-pkg.sqfs" ;;
	*) fail "unknown workload $wl (appliance, one-byte, package)" ;;
	esac
done
