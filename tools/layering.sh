#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The layering check (issue 36): reads the include graph of every .c/.h
# outside tests/ (its #include "..." lines), maps each file to its folder
# and fails, naming file:line, on an include of a folder that is not
# before the includer's in HACKING.md's order, on a folder cycle, on a
# folder that is not in the order and on a header in include/ that is
# private to a program folder. The order is read from HACKING.md's one
# `layering: ...` line, so that the map and the check cannot disagree.
#
#   tools/layering.sh [SRCDIR]    exit 0: clean, 1: violations, 2: no order
#
# Folders: lib/X is X, any other top-level folder is its own name. A header
# in include/ belongs to the folder of the .c file of its name (or of the
# longest prefix of it ending before a '_' or '-': env_backend.h ->
# env.c); one without any (cleanup.h, paths.h) belongs to base.
set -eu
top=${1:-$(dirname "$0")/..}
cd "$top"

order=$(sed -n 's/^`layering: \(.*\)`$/\1/p' HACKING.md)
if [ -z "$order" ]; then
	echo "layering: HACKING.md has no \`layering: ...\` line (the folder order)" >&2
	exit 2
fi

# the sources: every top-level folder but tests/ (which may use anything),
# hidden ones and build trees inside the source tree (make distcheck's _build/,
# run-tests' build/asan)
dirs=
for d in */; do
	d=${d%/}
	case $d in tests|build|_*) continue ;; esac
	find "$d" -maxdepth 2 -name config.status | grep -q . && continue
	dirs="$dirs $d"
done
# shellcheck disable=SC2086 # folder names without blanks
files=$(find $dirs -type f \( -name '*.c' -o -name '*.h' -o -name '*.h.in' \) | LC_ALL=C sort)

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

# shellcheck disable=SC2086 # one file name a line, none with blanks
printf '%s\n' $files | awk -v order="$order" -v edges="$edges" '
function folder_of(path,    n, p, stem, s) {
	n = split(path, p, "/")
	if (p[1] == "lib" && n > 2)
		return p[2]
	if (p[1] != "include")
		return p[1]
	stem = p[n]
	sub(/\.h(\.in)?$/, "", stem)
	for (s = stem; s != ""; ) {
		if (s in home)
			return home[s]
		if (!match(s, /[-_][^-_]*$/))
			break
		s = substr(s, 1, RSTART - 1)
	}
	return "base"
}
function dir_of(path) {
	sub(/\/[^\/]*$/, "", path)
	return path
}
# norm(PATH): PATH without "." and "dir/.." steps; "" when it leaves the tree
function norm(path,    n, p, out, k, i, s) {
	n = split(path, p, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (p[i] == "." || p[i] == "")
			continue
		if (p[i] == "..") {
			if (k == 0)
				return ""
			k--
			continue
		}
		out[++k] = p[i]
	}
	s = ""
	for (i = 1; i <= k; i++)
		s = s (i > 1 ? "/" : "") out[i]
	return s
}
# resolve(FROM, NAME): the file #include "NAME" in FROM reads, as the
# compiler looks: FROM'"'"'s folder, then include/ and the top (-I); a
# relative name ("../../daemon/log.h") included
function resolve(from, name,    c) {
	c = norm(dir_of(from) "/" name)
	if (c in exists) return c
	c = norm("include/" name)
	if (c in exists) return c
	c = norm(name)
	if (c in exists) return c
	if ((c = norm("include/" name ".in")) in exists) return c
	return ""       # a system or generated header: not ours to place
}
BEGIN {
	nlev = split(order, levels, /[ \t]*<-[ \t]*/)
	for (i = 1; i <= nlev; i++) {
		gsub(/[{} \t]/, "", levels[i])
		nf = split(levels[i], names, ",")
		for (j = 1; j <= nf; j++)
			level[names[j]] = i
	}
	bad = 0
	libfolder["base"] = 1
}
{ exists[$0] = 1; list[++nfiles] = $0 }
/\.c$/ && $0 !~ /^include\// {
	stem = $0
	sub(/.*\//, "", stem)
	sub(/\.c$/, "", stem)
	home[stem] = folder_of($0)
}
/^lib\// { libfolder[folder_of($0)] = 1 }
END {
	for (k = 1; k <= nfiles; k++) {
		f = list[k]
		from = folder_of(f)
		if (!(from in level)) {
			if (!(from in told))
				printf "%s: folder %s is not in HACKING.md'"'"'s order (%s)\n", f, from, order
			told[from] = 1
			bad++
			continue
		}
		if (f ~ /^include\// && !(from in libfolder)) {
			printf "%s: a header of %s/, not of the library: it lives beside its sources (%s/)\n", \
				f, from, from
			bad++
		}
		lineno = 0
		while ((getline line < f) > 0) {
			lineno++
			if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/)
				continue
			name = line
			sub(/^[^"]*"/, "", name)
			sub(/".*$/, "", name)
			t = resolve(f, name)
			if (t == "")
				continue
			to = folder_of(t)
			includes++
			if (to == from)
				continue
			print from, to > edges
			if (!(to in level)) {
				printf "%s:%d: #include \"%s\": folder %s is not in HACKING.md'"'"'s order\n", f, lineno, name, to
				bad++
			} else if (level[to] >= level[from]) {
				printf "%s:%d: #include \"%s\" of %s/ in %s/: %s is not before %s in the order\n", \
					f, lineno, name, to, from, to, from
				bad++
			}
		}
		close(f)
	}
	printf "layering: %d files, %d includes of our headers, %d violations\n", nfiles, includes, bad
	if (bad)
		printf "layering: a folder may use only the folders before it (HACKING.md): %s\n", order
	exit bad ? 1 : 0
}' || status=$?

# a folder cycle (one the order check also reports, said as a cycle)
if ! sort -u "$edges" | tsort >/dev/null 2>"$edges.err"; then
	echo "layering: folder cycle:" $(awk '/input contains a loop/ { if (n++) exit; next }
		{ sub(/^tsort: /, ""); print }' "$edges.err") >&2
	status=1
fi
rm -f "$edges.err"
exit "${status:-0}"
