#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bash completion (issue 34 item 10): the slot operand of flashctl slot
# mark-good|mark-bad|activate|... completes to the board's slot names, and
# env get|set to the env's variable names, read from the board the command
# line names; not to file names. Needs the bash-completion package.
. "$(dirname "$0")/../lib/common.sh"

BC=/usr/share/bash-completion/bash_completion
[ -r "$BC" ] || skip "bash-completion is not installed ($BC): apt-get install bash-completion"
T=$(mktemp -d "${TMPDIR:-/tmp}/flashd-$TEST_NAME.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
LAYOUT=$top_srcdir/layouts/nandsim-128m.json
TARGET=sim:$T/board.sim
"$FLASHCTL" -q flash sim-create "$T/board.sim" --type nand --size 128MiB --erase-block 128KiB \
	--page 2048 --oob 64 >/dev/null || fail "flash sim-create"
"$FLASHCTL" -q env init --layout "$LAYOUT" --target "$TARGET" "BOOT_ORDER=A B" \
	FLASHD_A_STATE=good FLASHD_B_STATE=good probe_var=1 >/dev/null || fail "env init"
# files that a file-name completion would offer
touch "$T/A.file" "$T/BOOT_file"
cd "$T" || fail "cd $T"

# complete WORDS...: COMPREPLY of flashctl's completion for the command
# line WORDS (the last one is the word being completed), one per line
complete_words() {
	PATH="$top_builddir:$PATH" bash -c '
		. "$1"; . "$2"; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_flashctl flashctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' sh "$BC" "$top_srcdir/completion/flashctl" "$@"
}
B=(--layout "$LAYOUT" --target "$TARGET")

expect() { # WHAT WANT GOT
	if [ "$2" = "$3" ]; then ok "$1: $(echo $3)"
	else check_fail "$1: got '$(echo $3)', expected '$(echo $2)'"; fi
}
expect "slot mark-good" "$(printf 'A\nB\nbooted')" "$(complete_words flashctl slot mark-good "${B[@]}" "" | sort)"
expect "slot activate A" "A" "$(complete_words flashctl slot activate "${B[@]}" A)"
expect "env get BOOT_" "$(printf 'BOOT_ORDER')" "$(complete_words flashctl env get "${B[@]}" BOOT_ | sort)"
expect "env get probe" "probe_var" "$(complete_words flashctl env get "${B[@]}" pro)"
expect "env set probe" "probe_var=" "$(complete_words flashctl env set "${B[@]}" pro)"
expect "env set VALUE" "" "$(complete_words flashctl env set "${B[@]}" probe_var=)"
expect "slot b" "$(printf 'boot-select\nbootscript')" "$(complete_words flashctl slot b | sort)"
check_done
