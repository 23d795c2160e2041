#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Paths that agree (issue 34.3, 34.4): a build configured with the default
# prefix (/usr/local) is installed as configured, then with make's
# directories given at install time, as a device's (`make install
# prefix=/usr sysconfdir=/etc localstatedir=/var`, README.md) and into a
# prefix of its own (prefix=/opt/flash_d: scdoc takes _ for markup). In each, the installed flashd
# (--paths, --help), the systemd units, the initramfs hook, flashd's
# keep-list and the man pages name the same paths, those of that install,
# and no file lands outside DESTDIR's prefix (and sysconfdir). And `make
# dist` (make distcheck's tarball) leaves no tracked file out. The build is
# a copy of the tracked files (tools/device-build.sh): the tree's own stays.
# In make check it is the one test-device-build made and passed (am/cli.am
# runs that first), newer than this tree's flashd; else one of its own.
. "$(dirname "$0")/../lib/common.sh"

need git tar
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
B=$top_builddir/build/device
if [ -x "$B/flashd" ] && [ "$B/flashd" -nt "$top_builddir/flashd" ] &&
	grep -qx ':test-result: PASS' "$top_builddir/tests/cli/test-device-build.sh.trs" 2>/dev/null; then
	say "installing test-device-build's build ($B)"
else
	B=$top_builddir/build/paths
	"$top_srcdir/tools/device-build.sh" "$B" >/dev/null 2>"$T/build.err"
	rc=$?
	# exit 3: not the top of a git checkout (run-tests' ASan copy, make distcheck)
	[ $rc = 3 ] && skip "$(cat "$T/build.err")"
	[ $rc = 0 ] || { cat "$T/build.err" >&2; fail "the build failed (above)"; }
fi

# has FILE TEXT: FILE names TEXT (a fixed string)
has() {
	grep -qF -- "$2" "$1" && return 0
	check_fail "${1#"$T"/}: does not name '$2'"
	return 1
}
# hasnt FILE PATH: FILE does not name PATH (other than inside a longer path)
hasnt() {
	local re="(^|[^[:alnum:]_./-])$2"
	grep -qE -- "$re" "$1" || return 0
	check_fail "${1#"$T"/}: names '$2': $(grep -E -- "$re" "$1" | head -n 2)"
	return 1
}
# man_text PAGE: its text without roff's escapes (scdoc writes "flashd.\&conf")
man_text() { sed -e 's/\\&//g; s/\\-/-/g; s/\\f[BIRP]//g' "$1"; }

# check_install NAME PREFIX SYSCONFDIR LOCALSTATEDIR [MAKE-ARGS...]
check_install() {
	local name=$1 p=$2 etc=$3 var=$4 d=$T/$1 f n
	shift 4
	make -s -C "$B" install DESTDIR="$d" prefix="$p" "$@" >"$T/$name.log" 2>&1 ||
		{ tail -n 20 "$T/$name.log" >&2; fail "$name: make install prefix=$p $* failed"; }
	local conf=$etc/flashd state=$var/lib/flashd

	# nothing outside the prefix (and the sysconfdir/localstatedir given)
	n=$(cd "$d" && find . ! -type d | sed 's|^\.||' |
		grep -v -e "^$p/" -e "^$etc/" -e "^$var/" | tee "$T/outside" | wc -l)
	[ "$n" = 0 ] && ok "$name: every file is below $p, $etc or $var" ||
		check_fail "$name: $n file(s) outside $p, $etc, $var: $(head -n 5 "$T/outside" | tr '\n' ' ')"

	# the program: what it reads and serves
	local fd=$d$p/sbin/flashd
	[ -x "$fd" ] || fail "$name: no $p/sbin/flashd"
	"$fd" --version >/dev/null || check_fail "$name: flashd --version fails"
	"$fd" --paths >"$T/$name.paths" || check_fail "$name: flashd --paths fails"
	local k v
	while read -r k v; do
		[ "$(awk -v k="$k" '$1 == k { print $2 }' "$T/$name.paths")" = "$v" ] ||
			check_fail "$name: flashd --paths: $k is not $v: $(cat "$T/$name.paths")"
	done <<-EOT
	config $conf/flashd.conf
	layout $conf/layout.json
	keyring $conf/keys
	keep-dir $conf/keep.d
	state-dir $state
	socket /run/flashd/flashd.sock
	boot-state /run/flashd/boot.json
	sbindir $p/sbin
	layouts $p/share/flashd/layouts
	EOT
	"$fd" --help >"$T/$name.help"
	has "$T/$name.help" "(default $conf/flashd.conf)"

	# the units, the hook and the keep-list
	local unit=$d$p/lib/systemd/system
	has "$unit/flashd.service" "ExecStart=$p/sbin/flashd"
	has "$unit/flashd.service" "ReadWritePaths=$state /var/lock /run/flashd"
	has "$unit/flashd.socket" "ListenStream=/run/flashd/flashd.sock"
	local hook=$d$p/share/initramfs-tools/hooks/flashd
	has "$hook" "FLASHD=$p/sbin/flashd" && has "$hook" "LAYOUT=$conf/layout.json"
	[ -x "$d$(sed -n 's/^FLASHD=//p' "$hook")" ] ||
		check_fail "$name: the hook's FLASHD is not the installed flashd"
	[ -f "$d$p/share/initramfs-tools/scripts/flashd" ] || check_fail "$name: no boot script"
	[ -f "$d$conf/keep.d/flashd" ] && has "$d$conf/keep.d/flashd" "$state/" ||
		check_fail "$name: flashd's keep-list is not in $conf/keep.d"
	[ -f "$d$p/share/bash-completion/completions/flashctl" ] ||
		check_fail "$name: no bash completion below $p/share"
	has "$d$p/share/dbus-1/system.d/flashd-rauc.conf" 'allow own="de.pengutronix.rauc"'

	# the man pages: this install's paths, not another's
	for f in man8/flashd.8 man5/flashd.conf.5 man1/flashctl.1 man5/flashd-layout.5; do
		[ -f "$d$p/share/man/$f" ] || { check_fail "$name: no man page $f"; continue; }
		man_text "$d$p/share/man/$f" >"$T/$name.${f#*/}"
		hasnt "$T/$name.${f#*/}" "@pkg"
		[ "$conf" = /etc/flashd ] || hasnt "$T/$name.${f#*/}" "/etc/flashd"
		[ "$state" = /var/lib/flashd ] || hasnt "$T/$name.${f#*/}" "/var/lib/flashd"
	done
	has "$T/$name.flashd.8" "$conf/flashd.conf"
	has "$T/$name.flashd.8" "$state/installs.json"
	has "$T/$name.flashd.conf.5" "$conf/keys"
	has "$T/$name.flashctl.1" "/run/flashd/flashd.sock"
	has "$T/$name.flashd-layout.5" "$conf/layout.json"
	ok "$name: installed with prefix=$p $*"
}

# as configured (/usr/local): nothing outside it
check_install default /usr/local /usr/local/etc /usr/local/var
# a device's paths, given to make install after that configure
check_install device /usr /etc /var sysconfdir=/etc localstatedir=/var
# a prefix of its own (sysconfdir and localstatedir follow it)
check_install opt /opt/flash_d /opt/flash_d/etc /opt/flash_d/var

# make dist takes every file git tracks (but .gitignore): make distcheck
# builds and tests from that tarball
make -s -C "$B" distdir distdir="$T/dist" >"$T/dist.log" 2>&1 ||
	{ tail -n 20 "$T/dist.log" >&2; fail "make distdir failed"; }
missing=$(comm -13 <(cd "$T/dist" && find . -type f | sed 's|^\./||' | sort) \
	<(cd "$top_srcdir" && git ls-files | grep -vx '.gitignore' | sort))
[ -z "$missing" ] && ok "make dist takes every tracked file" ||
	check_fail "make dist leaves out (EXTRA_DIST): $(echo $missing)"
check_done
