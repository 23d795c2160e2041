#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Real U-Boot agrees with the C mirror (issue 13): the shipped boot script
# for the exploration board (tests/explore/tiny-ab.json), run by Debian's
# qemu_arm64 U-Boot, must pick the same slot and leave the same counters as
# slot_boot_select (through 'flashctl slot boot-select') on every env state
# of the slot variables: the states test-abstate reaches (its samples) and
# every combination of BOOT_ORDER x BOOT_A_LEFT x BOOT_B_LEFT (unset and
# 0..max tries).
#
# Many states per U-Boot boot: each case is a variable that sets the slot
# variables and names the next case; flashd_boot_cmd prints the choice and
# runs the next case instead of booting. A state whose slots have no tries
# left ends in the script's 'reset' (qemu exits), so each such state is the
# last case of its own boot.
# Exit 77 (skip) only when the packages cannot be installed.
. "$(dirname "$0")/../lib/common.sh"
. "$TEST_LIB/uboot.sh"
skip_in_san_pass "its time is U-Boot's (qemu-system-aarch64 boots); flashd's part (flashctl env init/get, slot boot-select, slot bootscript) runs under the sanitizers in tests/cli/test-bootscripts.sh, tests/daemon/test-ab-policy.sh and the env fuzzer"
EXPLORE="$top_builddir/tests/explore/test-abstate"
LAYOUT="$top_srcdir/tests/explore/tiny-ab.json"
[ -n "$PY" ] || skip "python3 missing"
command -v qemu-system-aarch64 >/dev/null && command -v mkimage >/dev/null && [ -f "$UBOOT" ] ||
	skip "u-boot-qemu/qemu-system-arm/u-boot-tools missing (tests/uboot/test-uboot.sh installs them)"
[ -x "$FLASHCTL" ] || fail "$FLASHCTL not built"

w=$(mktemp -d /tmp/flashd-test-uboot-agree-XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$w"' EXIT
MAX=2 # tiny-ab.json's max_tries

# ---- the states: test-abstate's samples and the whole grid ----
# make check runs test-abstate first (am/bootenv.am) with its samples in
# the build tree: taken when that run passed with this binary, so the
# exploration runs once per suite; alone, the test explores itself
S=$top_builddir/tests/explore/abstate-samples
if [ -s "$S" ] && [ "$S" -nt "$EXPLORE" ] &&
	grep -qx ':test-result: PASS' "$top_builddir/tests/explore/test-abstate.trs" 2>/dev/null; then
	cp "$S" "$w/samples"
	say "the env samples of this suite's test-abstate run ($(wc -l < "$S") lines)"
elif [ -x "$EXPLORE" ]; then
	FLASHD_EXPLORE_SAMPLES="$w/samples" "$EXPLORE" >/dev/null 2>&1
fi
[ -s "$w/samples" ] || fail "test-abstate wrote no env samples"
"$PY" - "$w/samples" "$MAX" > "$w/states" <<'EOF'
import re, sys
states = []
for line in open(sys.argv[1]):
    vals = re.findall(r"(BOOT_\w+)=(?:'([^']*)'|-)", line)
    sealed = re.search(r" sealed=(\S+)", line).group(1)
    states.append((tuple((k, v if ("%s='" % k) in line else None) for k, v in vals), sealed))
n_samples = len(states)
orders = [None, "", "A", "B", "A B", "B A", "C B", "B C", "A B A"]
lefts = [None] + [str(i) for i in range(int(sys.argv[2]) + 1)]
for o in orders:
    # the seals matter only to a lost env's default order
    for sealed in (["A,B", "A", "B", "-"] if not o else ["A,B"]):
        for a in lefts:
            for b in lefts:
                # nothing sealed resets whatever the counters (a boot each)
                if sealed == "-" and (a, b) != (None, None):
                    continue
                states.append(((("BOOT_ORDER", o), ("BOOT_A_LEFT", a), ("BOOT_B_LEFT", b)),
                               sealed))
seen = set()
for s in states:
    if s in seen:
        continue
    seen.add(s)
    print("%s|%s" % (";".join("%s=%s" % (k, v) for k, v in s[0] if v is not None) or "-", s[1]))
print("# %d samples, %d distinct states" % (n_samples, len(seen)), file=sys.stderr)
EOF

# ---- the C mirror: flashctl slot boot-select on a file env ----
echo "$w/m.bin 0x0 0x1000 0x1000" > "$w/m.config"
: > "$w/mirror"
n=0 skipped=0
while IFS='|' read -r st sealed; do
	rm -f "$w/m.bin"; truncate -s 64K "$w/m.bin"
	oldifs=$IFS; IFS=';'
	# shellcheck disable=SC2086
	[ "$st" = - ] && set -- || set -- $st
	IFS=$oldifs
	if ! "$FLASHCTL" -q env init --env-config "$w/m.config" "$@" 2>/dev/null; then
		skipped=$((skipped + 1)) # a value flashd never writes (env init refuses it)
		continue
	fi
	sel=$("$FLASHCTL" slot boot-select --layout "$LAYOUT" --env-config "$w/m.config" \
		--sealed "$sealed" 2>&1)
	a=$("$FLASHCTL" env get -n --env-config "$w/m.config" BOOT_A_LEFT 2>/dev/null || echo $MAX)
	b=$("$FLASHCTL" env get -n --env-config "$w/m.config" BOOT_B_LEFT 2>/dev/null || echo $MAX)
	case "$sel" in
	*flashd.slot=A*) c=A ;;
	*flashd.slot=B*) c=B ;;
	*) c=reset ;;
	esac
	echo "c$n|$st|$c|${a:-$MAX},${b:-$MAX}|$sealed" >> "$w/mirror"
	n=$((n + 1))
done < "$w/states"
[ "$n" -ge 100 ] || fail "only $n env states to compare (need >= 100)"

# ---- real U-Boot: the shipped script from flash, cases chained ----
"$FLASHCTL" slot bootscript --layout "$LAYOUT" > "$w/boot.txt" || exit 1
uboot_script "$w/boot.txt" "$w/boot.scr" || fail "mkimage rejected the boot script"
uboot_env_config "$w/env.bin" "$w/fw_env.config"

# boot LIST-FILE: one U-Boot run over the cases in the file (mirror lines)
boot() {
	"$PY" - "$1" > "$w/defaults" <<'EOF'
import sys
cases = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
# the slots' partitions as U-Boot sees them (mtdparts on the env's bank):
# over a sealed copy at 0x40000 (A) / 0x50000 (B) or an unsealed one at
# 0x60000 / 0x70000
def parts(sealed):
    s = sealed.split(",")
    return "mtdparts=nor1:8k@%s(rootfs-a),8k@%s(rootfs-b)" % (
        "0x40000" if "A" in s else "0x60000", "0x50000" if "B" in s else "0x70000")
print("bootdelay=0")
print("mtdids=nor1=nor1")
print("flashd_seal_addr=0x40400000")
print("bootcmd=setenv flashd_case %s; run flashd_next" % cases[0][0])
print('flashd_next=if test -n "${flashd_case}"; then setenv flashd_cur ${flashd_case}; '
      'echo "AGREE-CASE ${flashd_cur}"; run ${flashd_cur}; source 0x3000000; else poweroff; fi')
print('flashd_boot_cmd=echo "AGREE ${flashd_cur} ${flashd_slot} ${BOOT_A_LEFT},${BOOT_B_LEFT}"; '
      'run flashd_next')
for i, (name, st, _, _, sealed) in enumerate(cases):
    nxt = cases[i + 1][0] if i + 1 < len(cases) else ""
    sets = ["setenv flashd_case %s" % nxt, 'setenv mtdparts "%s"' % parts(sealed)]
    vals = dict(kv.split("=", 1) for kv in st.split(";") if "=" in kv)
    for k in ("BOOT_ORDER", "BOOT_A_LEFT", "BOOT_B_LEFT"):
        sets.append('setenv %s "%s"' % (k, vals[k]) if k in vals else "setenv %s" % k)
    print("%s=%s" % (name, "; ".join(sets)))
EOF
	rm -f "$w/env.bin"; truncate -s $((UBOOT_ENV_SIZE)) "$w/env.bin"
	"$FLASHCTL" -q env init --force --env-config "$w/fw_env.config" --defaults "$w/defaults" ||
		fail "flashctl env init of the case env"
	# the two sealed copies: the seal is 0x1000 into each 8 KiB slot partition
	for at in 0x41000 0x51000; do
		printf 'FLSHSEAL' | dd of="$w/env.bin" bs=1 seek=$((at)) conv=notrunc status=none
	done
	uboot_run "$w/boot.scr" "$w/env.bin" 120 >> "$w/serial"
}

# chunks of normal cases, each reset case last in its own boot
grep -v '|reset|' "$w/mirror" > "$w/normal"
grep '|reset|' "$w/mirror" > "$w/resets"
split -l 25 "$w/normal" "$w/chunk."
boots=0
for f in "$w"/chunk.*; do
	r=$(head -1 "$w/resets")
	[ -n "$r" ] && { echo "$r" >> "$f"; sed -i 1d "$w/resets"; }
	boot "$f" || exit 1
	boots=$((boots + 1))
done
while [ -s "$w/resets" ]; do
	head -1 "$w/resets" > "$w/one"; sed -i 1d "$w/resets"
	boot "$w/one" || exit 1
	boots=$((boots + 1))
done

# ---- compare ----
"$PY" - "$w/mirror" "$w/serial" "$boots" "$skipped" <<'EOF'
import re, sys
mirror = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
serial = open(sys.argv[2], errors="replace").read()
got = {}
for m in re.finditer(r"^AGREE (c\d+) (\S+) (\S*),(\S*)$", serial, re.M):
    got[m.group(1)] = (m.group(2), "%s,%s" % (m.group(3), m.group(4)))
# a reset case: its AGREE-CASE line followed by the script's reset message
resets = set(re.findall(r"^AGREE-CASE (c\d+)\n(?:(?!AGREE-CASE).*\n)*?flashd: no slot with tries left", serial, re.M))
bad = 0
for name, st, choice, left, sealed in mirror:
    if choice == "reset":
        ok = name in resets and name not in got
        what = "reset" if name in resets else got.get(name, ("nothing",))[0]
    else:
        ok = got.get(name) == (choice, left)
        what = "%s %s" % got[name] if name in got else "nothing (case not reached)"
    if not ok:
        bad += 1
        if bad <= 10:
            print("FAIL: %s (sealed %s): U-Boot %s, slot_boot_select %s %s" % (st, sealed, what,
                                                                           choice, left))
print("test-uboot-agree: %d env states (%s boots of real U-Boot, %s values flashd never writes "
      "skipped): %d agree, %d differ" % (len(mirror), sys.argv[3], sys.argv[4],
                                          len(mirror) - bad, bad))
if bad:
    tail = serial[-3000:]
    print("---- serial tail ----\n" + tail)
sys.exit(1 if bad else 0)
EOF
