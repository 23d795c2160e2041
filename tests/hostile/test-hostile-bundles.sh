#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Hostile input: >= 200 corrupted bundles generated from one good signed
# bundle (make-hostile.py: bit flips across header, manifest, signature
# and payload; truncations at every section boundary and +/-1; oversized
# lengths; duplicated images; path-like and invalid names; wrong
# compatible; newer major version; re-signed where the corruption has to
# reach the parser). Every one must be refused
#   (a) offline by `flashctl bundle verify --keyring` with exit 3 and a
#       message naming the file and the reason, and
#   (b) by flashd on a simulated board (one daemon for all of them):
#       `flashctl install` fails with a message, the daemon keeps running,
#       and the U-Boot env is unchanged -- except for corruptions that can
#       only be found while the payload streams (hash, gzip, truncation),
#       after which the target slot B is legitimately marked bad: then only
#       BOOT_ORDER, BOOT_B_LEFT, FLASHD_B_VERSION and FLASHD_B_STATE (failed) may differ, B must be
#       out of BOOT_ORDER with 0 tries, and the booted slot A untouched.
# At the end the same daemon still answers status and installs the good
# bundle. Exit 77 when a tool is missing.
. "$(dirname "$0")/../lib/sim-board.sh"
GEN=$top_srcdir/tests/hostile/make-hostile.py
need openssl
env_json() { fctl --json env list --layout "$LAYOUT" --target "$TARGET"; }

# ---- board, keys, the good bundles ----
setup_board
fctl -q bundle keygen --out "$T/other" >/dev/null || fail "bundle keygen (other)"
mkdir -p "$T/root/etc"
echo "VERSION=2.0" > "$T/root/etc/os-release"
head -c 65536 /dev/urandom > "$T/root/data"
mksquashfs "$T/root" "$T/root.sqfs" -noappend -quiet -no-progress >/dev/null || fail "mksquashfs"
# format 1.0 (--no-index): make-hostile.py frames 1.0 bundles; the 2.0 block
# index has its own refusals in test-bundle-index (corrupt, truncated, not matching)
fctl -q bundle create --layout "$LAYOUT" --version 2.0 --no-index --image "rootfs=$T/root.sqfs" \
	--key "$T/rel.key" -o "$T/good.fbd" >/dev/null || fail "bundle create"
fctl -q bundle create --layout "$LAYOUT" --version 2.0 --no-index --gzip \
	--image "rootfs=$T/root.sqfs" --key "$T/rel.key" -o "$T/good-gzip.fbd" >/dev/null ||
	fail "bundle create --gzip"
# the refusals below mean something only if the originals are accepted
for g in good good-gzip; do
	fctl bundle verify --keyring "$T/keyring" --layout "$LAYOUT" "$T/$g.fbd" >/dev/null 2>&1 ||
		fail "the unmodified $g.fbd does not verify"
done

slot_size=$("$PY" -c 'import json,sys
l=json.load(open(sys.argv[1]))
p={x["name"]:x for x in l["partitions"]}
s=p["rootfs-b"]["size"]
m={"KiB":1<<10,"MiB":1<<20,"GiB":1<<30}
print(int(s[:-3])*m[s[-3:]] if s[-3:] in m else int(s,0))' "$LAYOUT") || fail "slot size"
"$PY" "$GEN" "$T/good.fbd" "$T/good-gzip.fbd" "$T/rel.key" "$T/other.key" "$slot_size" \
	"$T/hostile" >&2 || fail "make-hostile.py failed"
N=$(wc -l < "$T/hostile/index.tsv")
[ "$N" -ge 200 ] || fail "only $N corrupted bundles generated, want >= 200"

# ---- (a) offline ----
off_ok=0
while IFS=$'\t' read -r name cat stage; do
	f=$T/hostile/$name
	fctl bundle verify --keyring "$T/keyring" --layout "$LAYOUT" "$f" > "$T/out" 2> "$T/err"
	rc=$?
	if [ $rc -ne 3 ]; then
		check_fail "verify $name: exit $rc, expected 3 (refused): $(head -c 300 "$T/err")"
	elif ! grep -q "^flashctl: .*$name: refused: ..*" "$T/err"; then
		check_fail "verify $name: no 'FILE: refused: REASON' message: $(head -c 300 "$T/err")"
	else
		off_ok=$((off_ok + 1))
	fi
done < "$T/hostile/index.tsv"
say "offline: $off_ok of $N corrupted bundles refused by 'flashctl bundle verify' (exit 3, reason given)"

# ---- (b) through the daemon ----
start_daemon

env_json > "$T/env.0" || fail "env list"
i=0
while IFS=$'\t' read -r name cat stage; do
	i=$((i + 1))
	timeout 120 "$FLASHCTL" install "$T/hostile/$name" > "$T/inst.$i.out" 2> "$T/inst.$i.err" < /dev/null
	echo "$name	$stage	$?" >> "$T/results.tsv"
	kill -0 "$DAEMON_PID" 2>/dev/null || fail "flashd died on $name"
	env_json > "$T/env.$i" || fail "env list after $name"
done < "$T/hostile/index.tsv"

# One pass over the results: exit codes, messages, env differences.
"$PY" - "$T" <<'PY' || CHECK_FAILS=$((CHECK_FAILS + 1))
import json, os, sys
T = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(T, "results.tsv"))]
bad = 0
refused = untouched = marked_bad = 0
allowed = {"BOOT_ORDER", "BOOT_B_LEFT", "FLASHD_B_VERSION", "FLASHD_B_STATE"}
for i, (name, stage, rc) in enumerate(rows, 1):
    err = open(os.path.join(T, f"inst.{i}.err"), errors="replace").read().strip()
    before = json.load(open(os.path.join(T, f"env.{i - 1}")))["variables"]
    after = json.load(open(os.path.join(T, f"env.{i}")))["variables"]
    if rc == "0":
        print(f"FAIL: install {name}: accepted (exit 0)"); bad += 1; continue
    if rc == "124":
        print(f"FAIL: install {name}: no answer within 120 s"); bad += 1; continue
    if not err:
        print(f"FAIL: install {name}: refused (exit {rc}) without a message"); bad += 1; continue
    refused += 1
    diff = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    if not diff:
        untouched += 1
        continue
    if stage == "pre":
        print(f"FAIL: install {name}: refused before writing, but the env changed: "
              + ", ".join(f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in sorted(diff)))
        bad += 1
        continue
    order = after.get("BOOT_ORDER", "").split()
    # the install record says failed (docs/boot-contract.md)
    if not diff <= allowed or "B" in order or after.get("BOOT_B_LEFT") != "0" or \
       "A" not in order or after.get("FLASHD_B_STATE") != "failed":
        print(f"FAIL: install {name}: env after a payload refusal is not 'B marked bad': "
              + ", ".join(f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in sorted(diff)))
        bad += 1
        continue
    marked_bad += 1
print(f"daemon: {refused} of {len(rows)} refused with a message; env untouched after "
      f"{untouched}, slot B marked bad (and nothing else changed) after {marked_bad}",
      file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# messages: a sample of what a user sees
say "examples of the daemon's refusals:"
for k in 1 40 75 120 160 200; do
	[ -f "$T/inst.$k.err" ] && sed -n '$p' "$T/inst.$k.err" | sed 's/^/    /' >&2
done

# ---- the daemon still serves: status, then the good bundle installs ----
fctl --json status > "$T/status.json" || fail "flashctl status after the corpus: exit $?"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["operation"] is None, d["operation"]; assert d["booted"] == "A"' \
	"$T/status.json" || fail "status after the corpus: not idle or not booted from A"
fctl install "$T/good.fbd" > "$T/good.out" 2>&1 < /dev/null ||
	fail "the good bundle does not install after the corpus: $(tail -n 3 "$T/good.out")"
env_json > "$T/env.good"
"$PY" -c 'import json,sys; v=json.load(open(sys.argv[1]))["variables"]; assert v["BOOT_ORDER"].split()[0] == "B", v' \
	"$T/env.good" || fail "after the good install B is not first in BOOT_ORDER"
kill -0 "$DAEMON_PID" 2>/dev/null || fail "flashd is gone at the end"
say "daemon still serving: status answered, the good bundle installed and B activated"

check_done
say "PASS: $N corrupted bundles, all refused offline and through flashd"
