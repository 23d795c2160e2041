#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bundle create --base PREVIOUS.bundle (issue 33 item 2): the rebuilt
# squashfs laid out against the previous bundle's image.
# - the laid-out image extracts (unsquashfs) to exactly the plain build's
#   tree: contents, modes, owners, mtimes, symlinks, hard links, a device
#   node, xattrs, files in fragments and in many blocks, a removed, a
#   changed and an added file;
# - one byte changed in an early file of a multi-MiB tree: >= 95 % of the
#   128 KiB blocks equal the old image's at the same offset (the plain
#   build: almost none), the image <= 1.05 x the plain build;
# - 10 chained --base updates (small files changed, added, removed; a
#   big file every 5th) stay <= 1.10 x the plain build (or compact, and
#   say so);
# - refused bases (not a bundle, a damaged bundle, a member that is not
#   squashfs) name the file and write nothing; another compressor or block
#   size falls back to the plain image with a warning.
# The numbers measured are printed (bench/sqfs-layout.py compare).
. "$(dirname "$0")/../lib/common.sh"
fc=$FLASHCTL
need mksquashfs unsquashfs
grep -q 'define HAVE_LIBSQUASHFS 1' "$top_builddir/config.h" ||
	skip "flashctl built without libsquashfs (configure --with-libsquashfs)"
[ -n "$PY" ] || skip "python3 is not installed"
T=$(mktemp -d "${TMPDIR:-/var/tmp}/test-bundle-base.XXXXXX"); trap 'rm -rf "$T"' EXIT
export TMPDIR=$T FLASHCTL=$fc
LAYOUT=$top_srcdir/bench/sqfs-layout.py

sqfs() { # DIR OUT [mksquashfs options]: the image as a build system makes it
	local d=$1 o=$2; shift 2
	mksquashfs "$d" "$o" -comp xz -noappend -quiet -p "dev/null0 c 666 0 0 1 3" "$@" >/dev/null ||
		fail "mksquashfs $d"
}
bundle() { # OUT IMAGE [create options]
	local o=$1 i=$2; shift 2
	$fc -q bundle create -o "$o" --compatible t --version 1 --image rootfs="$i" --no-sign "$@"
}
extract() { "$PY" "$LAYOUT" extract "$1" rootfs "$2" || fail "extract $1"; }

# unsquashfs's listing; a directory's size is the size of its on-disk
# listing, which libsquashfs's directory writer splits into headers
# differently from mksquashfs for large directories: left out
listing() { unsquashfs -lln -d r "$1" | tail -n +4 | awk '/^d/ { $3 = "-" } { print }'; }
# the tree as unsquashfs lists it (modes, owners, sizes/devices, mtimes,
# link targets), its contents, its xattrs: all must be equal
same_tree() { # A.sqfs B.sqfs
	rm -rf "$T/xa" "$T/xb"
	unsquashfs -q -n -d "$T/xa" "$1" >/dev/null 2>&1 || return 1
	unsquashfs -q -n -d "$T/xb" "$2" >/dev/null 2>&1 || return 1
	cmp -s <(listing "$1") <(listing "$2") ||
		{ say "listings differ"; diff <(listing "$1") <(listing "$2") | head >&2; return 1; }
	diff -r --no-dereference "$T/xa" "$T/xb" >&2 || return 1
	"$PY" - "$T/xa" "$T/xb" <<'EOF'
import os, sys
def walk(top):
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            try:
                out[os.path.relpath(p, top)] = {k: os.getxattr(p, k, follow_symlinks=False)
                                                for k in os.listxattr(p, follow_symlinks=False)}
            except OSError:
                pass
    return out
sys.exit(walk(sys.argv[1]) != walk(sys.argv[2]))
EOF
}

# ---- a small tree with everything a root has ----
mkdir -p "$T/v1/a" "$T/v1/b" "$T/v1/c"
head -c 3000000 /dev/urandom >"$T/v1/a/big.bin"                      # many blocks
base64 /dev/urandom | head -c 1000000 >"$T/v1/a/text.txt"           # many blocks + tail
for i in $(seq 1 120); do seq 1 "$i" >"$T/v1/b/small$i"; done         # fragments
ln -s ../a/text.txt "$T/v1/b/link"
ln "$T/v1/b/small7" "$T/v1/c/hardlink"
base64 /dev/urandom | head -c 400000 >"$T/v1/c/removed.txt"
base64 /dev/urandom | head -c 600000 >"$T/v1/c/changed.txt"
head -c 300000 /dev/urandom >"$T/v1/c/zz.bin"
chmod 0750 "$T/v1/b/small3"; chown 12:34 "$T/v1/b/small4"
"$PY" -c "import os,sys; os.setxattr(sys.argv[1], 'user.flashd', b'kept')" "$T/v1/b/small5" 2>/dev/null ||
	say "no user xattrs on $T: xattrs not compared"
cp -a "$T/v1" "$T/v2"
rm "$T/v2/c/removed.txt"
echo changed >>"$T/v2/c/changed.txt"
echo changed >"$T/v2/b/small50"                                       # a fragment member
base64 /dev/urandom | head -c 300000 >"$T/v2/c/added.txt"
touch -d @1700000000 "$T/v2/b/small9"                                 # metadata only
sqfs "$T/v1" "$T/v1.sqfs"
sqfs "$T/v2" "$T/v2.sqfs"
bundle "$T/v1.bundle" "$T/v1.sqfs" || fail "bundle v1"
bundle "$T/v2.bundle" "$T/v2.sqfs" --base "$T/v1.bundle" 2>"$T/err" || { cat "$T/err" >&2; fail "--base"; }
extract "$T/v2.bundle" "$T/v2r.sqfs"
differ() { ! cmp -s "$1" "$2"; }
check "the laid-out image is not the plain one" differ "$T/v2.sqfs" "$T/v2r.sqfs"
check "the laid-out image extracts to the plain build's tree" same_tree "$T/v2.sqfs" "$T/v2r.sqfs"
say "small tree: $("$PY" "$LAYOUT" compare "$T/v1.sqfs" "$T/v2r.sqfs" "$T/v2.sqfs")"
# unchanged data where it was: c/zz.bin (random, stored as it is) comes
# after the changed files in the data; the plain build moves it
offset() { "$PY" -c 'import sys; print(open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read(65536)))' "$1" "$2"; }
o1=$(offset "$T/v1.sqfs" "$T/v1/c/zz.bin"); o2=$(offset "$T/v2r.sqfs" "$T/v1/c/zz.bin")
say "c/zz.bin at $o1 in v1, $o2 laid out, $(offset "$T/v2.sqfs" "$T/v1/c/zz.bin") in the plain v2"
check "an unchanged file's data keeps its offset" [ "$o1" -gt 0 ] && [ "$o1" = "$o2" ]
# the same input gives the same image
bundle "$T/v2b.bundle" "$T/v2.sqfs" --base "$T/v1.bundle" 2>/dev/null || fail "--base again"
extract "$T/v2b.bundle" "$T/v2rb.sqfs"
check "the layout is reproducible" cmp -s "$T/v2r.sqfs" "$T/v2rb.sqfs"

# ---- one byte in an early file of a multi-MiB tree ----
"$PY" "$LAYOUT" tree "$T/big1" 1 500 || fail "tree"
cp -a "$T/big1" "$T/big2"
printf 'X' | dd of="$T/big2/d00/f0000" bs=1 seek=10 conv=notrunc status=none
sqfs "$T/big1" "$T/big1.sqfs"
sqfs "$T/big2" "$T/big2.sqfs"
bundle "$T/big1.bundle" "$T/big1.sqfs" || fail "bundle big1"
bundle "$T/big2.bundle" "$T/big2.sqfs" --base "$T/big1.bundle" || fail "--base big2"
extract "$T/big2.bundle" "$T/big2r.sqfs"
m=$("$PY" "$LAYOUT" compare "$T/big1.sqfs" "$T/big2r.sqfs" "$T/big2.sqfs")
say "one byte in an early file: $m"
eq=$(echo "$m" | sed -n 's|^blocks_equal=\([0-9]*\)/\([0-9]*\).*|\1 \2|p')
ratio=$(echo "$m" | sed -n 's|.*size_ratio=\([0-9.]*\).*|\1|p')
check ">= 95 % of the blocks in place ($m)" awk -v e="$eq" 'BEGIN { split(e, a, " "); exit !(a[1] >= 0.95 * a[2]) }'
check "the image <= 1.05 x the plain build" awk -v r="$ratio" 'BEGIN { exit !(r <= 1.05) }'
check "one byte: the tree is the plain build's" same_tree "$T/big2.sqfs" "$T/big2r.sqfs"

# ---- 10 chained updates: bounded growth ----
prev=$T/v2.bundle
prevdir=$T/v2
compactions=0
for k in $(seq 1 10); do
	cur=$T/c$k
	rm -rf "$cur"; cp -a "$prevdir" "$cur"
	base64 /dev/urandom | head -c $((20000 + k * 3000)) >>"$cur/b/small$((k + 10))"
	# a multi-block file every 5th update: its new blocks do not fit its
	# old place (they grew), the old place stays dead until compaction
	[ $((k % 5)) = 0 ] && echo "update $k" >>"$cur/a/text.txt"
	rm -f "$cur/b/small$((k + 60))"
	base64 /dev/urandom | head -c 50000 >"$cur/c/new$k"
	sqfs "$cur" "$cur.sqfs"
	$fc bundle create -o "$cur.bundle" --compatible t --version $k --image rootfs="$cur.sqfs" \
		--no-sign --base "$prev" 2>"$T/err" >/dev/null || { cat "$T/err" >&2; fail "chain $k"; }
	grep -q compacted "$T/err" && compactions=$((compactions + 1))
	extract "$cur.bundle" "$cur.r.sqfs"
	r=$(stat -c %s "$cur.r.sqfs"); p=$(stat -c %s "$cur.sqfs")
	say "chain $k: $(cat "$T/err")"
	awk -v r="$r" -v p="$p" 'BEGIN { exit !(r <= 1.10 * p) }' ||
		check_fail "chain $k: $r bytes > 1.10 x the plain $p"
	[ "$k" = 10 ] && check "chain 10: the tree is the plain build's" same_tree "$cur.sqfs" "$cur.r.sqfs"
	prev=$cur.bundle; prevdir=$cur
done
say "10 chained updates: last $("$PY" "$LAYOUT" compare "$T/c9.r.sqfs" "$T/c10.r.sqfs" "$T/c10.sqfs"), $compactions compaction(s)"

# ---- bases refused: named, nothing written ----
refused() { # EXPECTED-TEXT BASE
	rm -f "$T/out.bundle"
	bundle "$T/out.bundle" "$T/v2.sqfs" --base "$2" 2>"$T/err"
	local rc=$?
	say "refused: $(cat "$T/err")"
	[ $rc = 3 ] && grep -q -- "$1" "$T/err" && grep -q -- "$2" "$T/err" && [ ! -e "$T/out.bundle" ] ||
		{ say "exit $rc: $(cat "$T/err")"; return 1; }
}
echo "not a bundle" >"$T/notabundle"
check "a base that is not a bundle" refused "bundle" "$T/notabundle"
head -c 300000 /dev/urandom >"$T/raw.img"
$fc -q bundle create -o "$T/raw.bundle" --compatible t --version 1 --image rootfs:raw="$T/raw.img" \
	--no-sign || fail "raw bundle"
check "a base whose rootfs is not squashfs" refused "not a squashfs image" "$T/raw.bundle"
cp "$T/v1.bundle" "$T/damaged.bundle"
printf '\x55' | dd of="$T/damaged.bundle" bs=1 seek=200000 conv=notrunc status=none
check "a damaged base (image hash)" refused "sha256\|hash" "$T/damaged.bundle"
check "--base-keyring: an unsigned base is refused" bash -c \
	"! $fc -q bundle create -o '$T/k.bundle' --compatible t --version 1 --image rootfs='$T/v2.sqfs' \
	--no-sign --base '$T/v1.bundle' --base-keyring '$T' 2>/dev/null && [ ! -e '$T/k.bundle' ]"

# ---- another compressor or block size: a warning, the plain image ----
fallback() { # WHAT-IN-WARNING MKSQUASHFS-OPTIONS...
	local w=$1; shift
	mksquashfs "$T/v1" "$T/o.sqfs" -noappend -quiet "$@" >/dev/null || return 1
	bundle "$T/o.bundle" "$T/o.sqfs" || return 1
	bundle "$T/f.bundle" "$T/v2.sqfs" --base "$T/o.bundle" 2>"$T/err" || return 1
	extract "$T/f.bundle" "$T/f.sqfs"
	grep -q "warning:.*$w" "$T/err" && cmp -s "$T/f.sqfs" "$T/v2.sqfs" || { cat "$T/err" >&2; return 1; }
}
check "a gzip base: warning, plain image" fallback "gzip" -comp gzip
check "a base with 64 KiB blocks: warning, plain image" fallback "65536" -comp xz -b 65536
check_done
