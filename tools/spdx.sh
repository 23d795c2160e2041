#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The licence line of every source file (COPYING: LGPL-2.1-or-later).
#   tools/spdx.sh check   list the source files without an SPDX line (exit 1 if any)
#   tools/spdx.sh add     give them one, in the comment syntax of their type
# A source file is a tracked file of a type that carries comments (C, shell,
# Python, automake/autoconf, scdoc, systemd units, the Varlink IDL, scripts
# with a #! line). Not: data (JSON layouts, the fuzz corpus, test keys),
# the documentation pages, and the boot scripts in layouts/, which are the
# output of `flashctl slot bootscript` (tests/cli/test-bootscripts.sh).
# Exit 3: not the top of a git checkout (the list comes from git).
set -u
ID="SPDX-License-Identifier: LGPL-2.1-or-later"
cd "$(dirname "$0")/.." || exit 2
[ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$PWD" ] || {
	echo "spdx.sh: $PWD is not the top of a git checkout" >&2
	exit 3
}

# the comment that carries the line: c, hash, scd, roff, or nothing (not a source file)
# kind FILE: K = the comment style of FILE's licence line, empty when it
# needs none. Builtins only, as is has_id: the tree has about 1,500 files,
# and a process or two for each cost 16 s of CPU.
kind() {
	local s=""
	K=""
	case "$1" in
	tests/fuzz/corpus/* | layouts/*.bootscr) ;;
	*.c | *.h) K=c ;;
	man/*.[1-8].in) K=roff ;;
	*.sh | *.py | *.am | *.ac | *.in | *.service | *.socket | *.varlink | *.supp | \
	completion/*) K=hash ;;
	*.scd) K=scd ;;
	man/*.[1-8]) K=roff ;;
	*.json | *.md | *.pub | *.key | .gitignore) ;;
	*) { IFS= read -r -n 2 s || :; } <"$1" 2>/dev/null; [ "$s" = '#!' ] && K=hash ;;
	esac
	return 0
}

# has_id FILE: the licence line is in its first 3 lines
has_id() {
	local i l
	for i in 1 2 3; do
		IFS= read -r l || return 1
		case $l in *SPDX-License-Identifier:*) return 0 ;; esac
	done <"$1" 2>/dev/null
	return 1
}

missing() {
	local f K
	git ls-files -co --exclude-standard | while read -r f; do
		[ -f "$f" ] || continue
		kind "$f"
		[ -n "$K" ] || continue
		has_id "$f" || echo "$K $f"
	done
}

add() {
	local k=$1 f=$2 line after=0
	case $k in
	c) line="/* $ID */" ;;
	hash) line="# $ID"; head -c 2 "$f" | grep -q '^#!' && after=1 ;;
	scd) line="; $ID"; after=1 ;;
	roff) line='.\\" '"$ID" ;;
	esac
	if [ $after = 1 ]; then
		sed -i "1a $line" "$f"
	else
		sed -i "1i $line" "$f"
	fi
}

case "${1:-check}" in
check)
	list=$(missing)
	[ -z "$list" ] && { echo "spdx.sh: every source file has an SPDX line"; exit 0; }
	echo "spdx.sh: no SPDX-License-Identifier line in the first 3 lines of:" >&2
	echo "$list" | cut -d' ' -f2- | sed 's/^/  /' >&2
	exit 1 ;;
add)
	missing | while read -r k f; do add "$k" "$f"; echo "added: $f"; done ;;
*) echo "usage: $0 check|add" >&2; exit 2 ;;
esac
