#!/bin/bash
# flashd under valgrind (memcheck, full leak check, fork-following) for a
# full install on a simulated board: start, status, install of a signed
# gzip bundle into slot B with progress, a refused corrupt bundle, status,
# SIGTERM. Fails on any memcheck error or definite/indirect/possible leak
# in the daemon or its install worker. Exit 77 without valgrind.
#   tests/faults/valgrind-install.sh        (top_builddir: where flashd is)
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
FLASHD=$top_builddir/flashd
FLASHCTL=$top_builddir/flashctl
LAYOUT=$top_srcdir/layouts/nandsim-128m.json
say() { printf 'valgrind-install: %s\n' "$*" >&2; }
command -v valgrind >/dev/null || { say "SKIP: valgrind is not installed"; exit 77; }
command -v mksquashfs >/dev/null || { say "SKIP: mksquashfs is not installed"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/flashd-vg.XXXXXX")
PID=
cleanup() { rc=$?; [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; [ $rc = 0 ] && rm -rf "$T" || say "kept $T"; exit $rc; }
trap cleanup EXIT
die() { say "FAIL: $*"; exit 1; }
export FLASHD_SOCKET=$T/flashd.sock
SIM=$T/board.sim

"$FLASHCTL" -q bundle keygen --out "$T/rel" >/dev/null || die keygen
mkdir -p "$T/keyring" "$T/state" "$T/root/etc"
cp "$T/rel.pub" "$T/keyring/"
"$FLASHCTL" -q flash sim-create "$SIM" --type nand --size 128MiB --erase-block 128KiB \
	--page 2048 --oob 64 >/dev/null || die sim-create
"$FLASHCTL" -q env init --layout "$LAYOUT" --target "sim:$SIM" >/dev/null || die "env init"
"$FLASHCTL" -q slot init --layout "$LAYOUT" --target "sim:$SIM" >/dev/null || die "slot init"
echo flashd.slot=A > "$T/cmdline"
echo VERSION=2.0 > "$T/root/etc/os-release"
head -c $((3 * 1024 * 1024)) /dev/urandom > "$T/root/payload"
mksquashfs "$T/root" "$T/r.sqfs" -noappend -quiet -no-progress >/dev/null || die mksquashfs
"$FLASHCTL" -q bundle create --layout "$LAYOUT" --version 2.0 --gzip --image "rootfs=$T/r.sqfs" \
	--key "$T/rel.key" -o "$T/good.fbd" >/dev/null || die "bundle create"
python3 -c 'import sys;b=bytearray(open(sys.argv[1],"rb").read());b[len(b)//2]^=4;open(sys.argv[2],"wb").write(b)' \
	"$T/good.fbd" "$T/bad.fbd"
cat > "$T/flashd.conf" <<CONF
[flashd]
layout=$LAYOUT
target=sim:$SIM
keyring=$T/keyring
socket=$FLASHD_SOCKET
state-dir=$T/state
cmdline=$T/cmdline
[health]
timeout=60
reboot-on-failure=no
CONF

valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible --track-fds=no --error-exitcode=99 \
	--child-silent-after-fork=no --log-file="$T/vg.%p.log" \
	--suppressions="$top_srcdir/tests/faults/valgrind.supp" \
	"$FLASHD" -c "$T/flashd.conf" > "$T/flashd.log" 2>&1 &
PID=$!
for _ in $(seq 300); do "$FLASHCTL" status >/dev/null 2>&1 && break; sleep 0.2; done
"$FLASHCTL" status >/dev/null || die "flashd under valgrind does not answer"
t0=$(date +%s)
"$FLASHCTL" install "$T/good.fbd" > "$T/install.log" 2>&1 < /dev/null ||
	die "install under valgrind failed: $(tail -n 3 "$T/install.log")"
"$FLASHCTL" install "$T/bad.fbd" > "$T/bad.log" 2>&1 < /dev/null && die "the corrupt bundle was accepted"
"$FLASHCTL" --json status > "$T/status.json" || die "status after the installs"
say "install of $(stat -c %s "$T/good.fbd") bytes under valgrind: $(( $(date +%s) - t0 )) s"
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=
logs=$(ls "$T"/vg.*.log | wc -l)
errs=$(cat "$T"/vg.*.log | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' | awk '{s+=$1} END {print s+0}')
leaks=$(grep -hE "(definitely|indirectly|possibly) lost: [1-9]" "$T"/vg.*.log | head -n 5)
say "valgrind: $logs process(es) (daemon and install workers), $errs error(s), daemon exit $rc"
[ -z "$leaks" ] || { grep -h -B2 -A25 "lost in loss record" "$T"/vg.*.log | head -n 80; die "leaks: $leaks"; }
[ "$errs" = 0 ] || { cat "$T"/vg.*.log | grep -A20 "^==[0-9]*== [A-Z]" | head -n 80; die "$errs memcheck error(s)"; }
[ $rc = 0 ] || die "flashd exited $rc after SIGTERM under valgrind"
say "PASS: no memcheck errors, no leaks"
