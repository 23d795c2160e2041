# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# Checks on JSON documents (flashctl --json, varlink-call.py replies,
# flashd boot's state file), through python3. Needs tests/lib/common.sh.

# jget FILE PATH: the value at PATH ("slots.1.state", "last_install.result")
# in the JSON file: strings raw, everything else as JSON (null, true, 3).
# PATH "." is the whole document; "#PATH" is the length of an array/object.
jget() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
path = sys.argv[2]
count = path.startswith("#")
path = path.lstrip("#")
v = doc
for k in ([] if path in (".", "") else path.split(".")):
    if isinstance(v, list):
        v = v[int(k)]
    elif isinstance(v, dict):
        if k not in v:
            print(f"jget: no key {k!r} in {sys.argv[2]!r}", file=sys.stderr)
            sys.exit(3)
        v = v[k]
    else:
        print(f"jget: {k!r}: not an object or array in {sys.argv[2]!r}", file=sys.stderr)
        sys.exit(3)
if count:
    v = len(v)
try:
    print(v if isinstance(v, str) else json.dumps(v))
except BrokenPipeError:
    pass
EOF
}

# expect_json FILE PATH EXPECTED [WHAT]: fail unless the value at PATH is EXPECTED.
expect_json() {
	local got
	got=$(jget "$1" "$2") || fail "${4:-$1}: cannot read '$2' from $(head -c 600 "$1")"
	[ "$got" = "$3" ] || fail "${4:-$1}: '$2' is '$got', expected '$3'"
}

# expect_fields FILE [WHAT] < LINES: each stdin line is "PATH EXPECTED" (EXPECTED
# is the rest of the line, compared as jget prints it), or "PATH {KEYS} K1 K2..."
# (the object at PATH has exactly these keys); all checked in one python run.
expect_fields() {
	"$PY" -c '
import json, os, sys
doc = json.load(open(sys.argv[1]))
bad = 0
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    path, _, want = line.partition(" ")
    count = path.startswith("#")
    v = doc
    try:
        for k in ([] if path.lstrip("#") == "." else path.lstrip("#").split(".")):
            v = v[int(k)] if isinstance(v, list) else v[k]
        if count:
            v = len(v)
        got = v if isinstance(v, str) else json.dumps(v)
    except (KeyError, IndexError, TypeError, ValueError):
        got = "<missing>"
    if want.startswith("{KEYS} "):
        want = " ".join(sorted(want.split()[1:]))
        got = " ".join(sorted(v)) if isinstance(v, dict) else "<not an object>"
    if got != want:
        print(f"{sys.argv[2]}: \"{path}\" is \"{got}\", expected \"{want}\"", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
' "$1" "${2:-$1}" || fail "${2:-$1}: unexpected field values (above)"
}

# expect_json_keys FILE PATH KEY...: the object at PATH has exactly these keys.
expect_json_keys() {
	local f=$1 p=$2 got want
	shift 2
	got=$("$PY" -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in ([] if sys.argv[2]=="." else sys.argv[2].split(".")):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(" ".join(sorted(d)))' "$f" "$p") || fail "$f: no object at '$p'"
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$want" ] || fail "$f: keys of '$p' are '$got', expected '$want'"
}

