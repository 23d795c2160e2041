#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon's status shows every overlay layer flashd boot recorded and
# whether any is degraded (issue 14.6): a boot.json (/run/flashd/, the
# build's runtime directory: flashd --paths) with a "/"
# layer on its tmpfs fallback and a /var layer, read by a real flashd on
# the simulator. Runs in a private mount namespace (a tmpfs on
# the runtime directory), so needs root and unshare; exits 77 without them.
if [ -z "${BOOT_STATUS_NS:-}" ]; then
	[ "$(id -u)" = 0 ] && command -v unshare >/dev/null ||
		{ echo "SKIP: needs root and unshare"; exit 77; }
	BOOT_STATUS_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "$(dirname "$0")/../lib/sim-board.sh"
RUN_DIR=$(flashd_path run-dir)
mkdir -p "$RUN_DIR" && mount -t tmpfs -o mode=0755 flashd-test "$RUN_DIR" || exit 1

setup_board
cat >"$(flashd_path boot-state)" <<'EOT'
{
  "result": "degraded", "degraded": true,
  "overlay": { "path": "/", "state": "tmpfs", "fstype": "tmpfs", "size": 1024, "used": 0,
               "fallback": true, "rename_whiteout": true },
  "overlays": [
    { "path": "/", "state": "tmpfs", "fstype": "tmpfs", "partition": "rootfs_data",
      "persistent": false, "fallback": true,
      "fallback_reason": "generation gen-A-1: No space left on device",
      "generation_error": "No space left on device" },
    { "path": "/var", "state": "mounted", "fstype": "ubifs", "partition": "ubi",
      "persistent": true, "fallback": false, "generation": { "name": "gen-A-1" } }
  ]
}
EOT
start_daemon
fctl --json status >"$T/st.json" || fail "flashctl --json status: exit $?"
expect_fields "$T/st.json" <<EOT
overlay.state tmpfs
overlay.degraded true
#overlay.layers 2
overlay.layers.0.path /
overlay.layers.0.fallback true
overlay.layers.0.fallback_reason generation gen-A-1: No space left on device
overlay.layers.0.persistent false
overlay.layers.1.path /var
overlay.layers.1.state mounted
overlay.layers.1.generation gen-A-1
overlay.layers.1.persistent true
EOT
# the human views name every layer and the fallback's reason
for cmd in status "overlay status"; do
	fctl $cmd >"$T/human.txt" || fail "flashctl $cmd: exit $?"
	grep -q '/var .*mounted (ubifs on ubi)' "$T/human.txt" ||
		fail "flashctl $cmd does not show the /var layer: $(cat "$T/human.txt")"
	grep -q 'FALLBACK: generation gen-A-1: No space left on device' "$T/human.txt" ||
		fail "flashctl $cmd does not show the / fallback: $(cat "$T/human.txt")"
	grep -q DEGRADED "$T/human.txt" || fail "flashctl $cmd does not say degraded"
done
say "ok"
