#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# GetStatus answers from the state the daemon keeps (issue 16 "status as a
# view", issue 18 latency), and stays exact when the env changes behind
# its back:
# - a direct write of the env while flashd runs (fw_setenv on the
#   simulator file, flashctl --offline env set) shows in the next answer
#   (inotify; the bound is 2 s for what no event reports);
# - a slot operation made offline under the lock while flashd is stopped
#   shows once it runs again;
# - the daemon's own stores show at once (SetEnv, MarkBad);
# - a user without rights calling GetStatus as fast as it can does not
#   make the daemon read the flash once per call: the bytes it reads stay
#   within one load per 2 s (the old daemon read both env copies, 256 KiB,
#   on every call: this part failed on it with ~1000x the bound).
. "$(dirname "$0")/../lib/sim-board.sh"

setup_board
start_daemon -v

status() { vcall "$T/st" io.flashd.GetStatus || fail "GetStatus: $(cat "$T/st" "$T/st.err")"; }
# expect_status PATH VALUE WHAT: the next answer says so
expect_status() {
	status
	expect_json "$T/st.last" "parameters.$1" "$2" "$3"
}

expect_status next_boot A "a fresh board"
expect_status switch_pending false "a fresh board"

# ---- direct writes while the daemon runs ----
fctl -q env set --offline --force --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=B A" ||
	fail "flashctl --offline env set"
expect_status next_boot B "after an offline BOOT_ORDER=B A behind the daemon's back"
expect_status switch_pending true "after an offline BOOT_ORDER=B A"

if command -v fw_setenv >/dev/null 2>&1; then
	# libubootenv itself on the simulator file: the copies at the layout's
	# offsets past the simulator's header
	"$top_builddir/nsimctl" info "$SIM" --json > "$T/chip.json" || fail "nsimctl info"
	data=$(jget "$T/chip.json" data_offset)
	"$PY" - "$LAYOUT" "$SIM" "$data" > "$T/fw_env.config" <<'EOF' || fail "fw_env.config"
import json, sys
l = json.load(open(sys.argv[1]))
parts = {p["name"]: int(p["offset"], 0) for p in l["partitions"]}
for c in l["env"]["copies"]:
    print(f"{sys.argv[2]} {hex(int(sys.argv[3]) + parts[c['partition']] + int(c['offset'], 0))} "
          f"{c['size']} {c['size']}")
EOF
	fw_setenv -c "$T/fw_env.config" BOOT_ORDER "A B" || fail "fw_setenv on the simulator file"
	expect_status next_boot A "after fw_setenv BOOT_ORDER='A B' behind the daemon's back"
	fw_setenv -c "$T/fw_env.config" FLASHD_B_HEALTH "failed by hand" || fail "fw_setenv"
	expect_status slots.1.health "failed by hand" "after fw_setenv FLASHD_B_HEALTH"
else
	say "fw_setenv not installed: direct libubootenv write not checked"
	fctl -q env set --offline --force --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=A B" ||
		fail "flashctl --offline env set"
	expect_status next_boot A "after an offline BOOT_ORDER=A B"
fi

# ---- the daemon's own stores ----
vcall "$T/set" io.flashd.SetEnv '{"name":"bootdelay","value":"7"}' || fail "SetEnv"
vcall "$T/bad" io.flashd.MarkBad '{"slot":"B"}' || fail "MarkBad B: $(cat "$T/bad")"
expect_status slots.1.state bad "right after MarkBad B"

# ---- offline, daemon stopped, under the lock ----
# (B gets an image first: activate reads B before it boots it)
make_bundle v1 1.0 2
fctl -q install --no-activate "$T/v1.bundle" > "$T/i.out" 2>&1 || fail "install v1 into B: $(cat "$T/i.out")"
stop_daemon
fctl -q slot activate B --offline --config "$T/flashd.conf" --cmdline "$T/cmdline" ||
	fail "flashctl --offline slot activate B"
start_daemon -v
expect_status next_boot B "after an offline activate of B while flashd was stopped"
expect_status switch_pending true "after an offline activate of B"

# ---- a user without rights cannot make it read the flash per call ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 755 "$T"
	mkdir -m 1777 "$T/x"
	rchar() { sed -n 's/^rchar: //p' "/proc/$DAEMON_PID/io"; }
	# one load of everything: the first answer after a start
	stop_daemon
	start_daemon -v
	r0=$(rchar)
	status
	load=$(($(rchar) - r0))
	[ "$load" -gt 65536 ] || fail "one load read only $load bytes: the measure is wrong"
	r0=$(rchar)
	t0=$(date +%s)
	pids=
	for i in 1 2 3; do
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$PY" "$top_srcdir/bench/status-latency.py" "$SOCK" "$T/x/n$i.json" "$T/none" \
			idle "" 700 > /dev/null &
		pids="$pids $!"
	done
	BG_PIDS="$BG_PIDS $pids"
	for p in $pids; do wait "$p"; done
	calls=0
	for i in 1 2 3; do
		n=$(jget "$T/x/n$i.json" n) || fail "nobody's client $i did not finish"
		calls=$((calls + n))
	done
	t1=$(date +%s)
	read=$(($(rchar) - r0))
	bound=$(( (2 + (t1 - t0) / 2) * load + calls * 1024 ))
	say "nobody: $calls calls in $((t1 - t0)) s read $read bytes (one load $load, bound $bound)"
	[ "$calls" -ge 2100 ] || fail "nobody's clients made only $calls calls"
	[ "$read" -le "$bound" ] ||
		fail "$calls unprivileged GetStatus calls made the daemon read $read bytes (> $bound)"
	expect_status next_boot B "after the unprivileged calls"
else
	say "not root or no setpriv: the unprivileged part is not run"
fi
exit 0
