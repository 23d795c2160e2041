#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build the libFuzzer targets (clang, ASan+UBSan) outside the autotools
# build and run each for a bounded time over its corpus.
#
#   tests/fuzz/run-fuzz.sh [--ci] [--time SECONDS] [--merge] [TARGET...]
#
#   --time N   seconds per target (default 20; FUZZ_TIME overrides too)
#   --ci       the CI hook (automake TEST): 8 s per target, exit 77 when
#              clang/libFuzzer is missing, 0 when nothing crashed, 1 otherwise
#   --merge    after the run, merge what was found into the kept corpus
#              tests/fuzz/corpus/TARGET (libFuzzer -merge=1 keeps only
#              inputs that add coverage); commit it by hand
#   TARGET     layout, proto, bundle, squashfs, env, keep (default: all)
#
# Binaries, objects and the corpus grown during the run go to
# $top_builddir/build/fuzz. A crash leaves its input in
# build/fuzz/crashes/; copy it into tests/fuzz/corpus/TARGET/ as a
# regression input once it is fixed (every run replays the corpus first).
. "$(dirname "$0")/../lib/common.sh"
CC=${FUZZ_CC:-clang}
TIME=${FUZZ_TIME:-20}
CI=0
MERGE=0
TARGETS=()

while [ $# -gt 0 ]; do
	case $1 in
	--ci) CI=1; TIME=${FUZZ_TIME:-8} ;;
	--time) TIME=$2; shift ;;
	--time=*) TIME=${1#--time=} ;;
	--merge) MERGE=1 ;;
	-h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "run-fuzz: unknown option $1" >&2; exit 2 ;;
	*) TARGETS+=("$1") ;;
	esac
	shift
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(layout proto bundle squashfs env keep)

# Sources (beyond the target itself) and pkg-config modules per target; @FILE
# is made here in $OUT, %FILE by make in the build tree (lib/base/paths.c).
declare -A SRCS=(
	[layout]="lib/layout/layout.c lib/layout/layout_parse.c lib/layout/layout_nand.c lib/layout/layout_kernel.c lib/base/util.c lib/base/error.c lib/flash/flash.c
		 lib/flash/flash_sim.c lib/flash/flash_mtd.c lib/sim/nsim.c lib/sim/nsim_op.c lib/sim/nsim_page.c lib/sim/nsim_block.c lib/sim/nsim_fault.c lib/sim/nsim_format.c"
	[proto]="lib/varlink/proto_frame.c lib/varlink/proto_call.c lib/varlink/proto_dispatch.c lib/varlink/proto_typed.c lib/varlink/proto_service.c lib/varlink/proto_conn.c lib/varlink/proto_sched.c lib/varlink/proto_auth.c lib/varlink/proto_server.c lib/varlink/proto_socket.c lib/varlink/proto_flashd.c lib/base/util.c lib/base/error.c @proto-idl.c"
	[bundle]="lib/bundle/bundle.c lib/bundle/bundle_reader.c lib/bundle/bundle_create.c lib/bundle/chunk.c lib/bundle/keyring.c lib/bundle/squashfs.c lib/base/util.c lib/base/error.c lib/base/hash.c lib/base/dl.c"
	[squashfs]="lib/bundle/squashfs.c lib/base/error.c"
	[env]="lib/bootenv/slot.c lib/bootenv/slot_env.c lib/bootenv/slot_boot.c lib/bootenv/slot_seal.c lib/bootenv/env.c lib/bootenv/env_uboot.c lib/bootenv/env_flash.c lib/layout/layout.c lib/layout/layout_parse.c lib/layout/layout_nand.c lib/layout/layout_kernel.c lib/base/util.c lib/base/error.c lib/board/board.c lib/flash/flash.c
	       lib/flash/flash_sim.c lib/flash/flash_mtd.c lib/flash/flash_blockdev.c lib/flash/flash_ubi.c lib/sim/nsim.c lib/sim/nsim_op.c lib/sim/nsim_page.c lib/sim/nsim_block.c lib/sim/nsim_fault.c lib/sim/nsim_format.c"
	[keep]="boot/boot_gen.c boot/boot_gen_migrate.c lib/base/util.c lib/base/error.c %lib/base/paths.c"
)
declare -A PKGS=(
	[layout]="json-c"
	[proto]="json-c libsystemd zlib"
	[bundle]="json-c libcrypto nettle hogweed zlib"
	[squashfs]=""
	[env]="json-c libubootenv zlib"
	[keep]=""
)
for t in "${TARGETS[@]}"; do
	[ -n "${SRCS[$t]+x}" ] || { say "unknown target '$t' (known: ${!SRCS[*]})"; exit 2; }
done

command -v "$CC" >/dev/null 2>&1 || skip "$CC is not installed (apt-get install clang)"
OUT=$top_builddir/build/fuzz
mkdir -p "$OUT/obj" "$OUT/crashes" || exit 1

# libFuzzer present? (Debian: clang-14 ships it in libclang-rt-14-dev)
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' \
	> "$OUT/probe.c"
"$CC" -fsanitize=fuzzer,address,undefined "$OUT/probe.c" -o "$OUT/probe" 2>"$OUT/probe.log" ||
	skip "$CC cannot link with -fsanitize=fuzzer ($(head -n 1 "$OUT/probe.log")); apt-get install libclang-rt-14-dev"

CFLAGS=(-g -O1 -std=gnu11 -fno-omit-frame-pointer -fno-strict-aliasing
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
	-I"$top_srcdir/include" -I"$top_srcdir" -I"$top_builddir"
	-DTOP_SRCDIR=\"$top_srcdir\")
if [ -f "$top_builddir/config.h" ]; then
	CFLAGS+=(-include "$top_builddir/config.h")
else
	CFLAGS+=(-D_GNU_SOURCE -D_FILE_OFFSET_BITS=64)
fi

# The io.flashd IDL as C (the rule of am/varlink.am).
idl=$top_srcdir/lib/varlink/io.flashd.varlink
if [ ! -f "$OUT/proto-idl.c" ] || [ "$idl" -nt "$OUT/proto-idl.c" ] ||
   [ "$top_srcdir/tools/idl2c.sh" -nt "$OUT/proto-idl.c" ]; then
	sh "$top_srcdir/tools/idl2c.sh" "$idl" > "$OUT/proto-idl.c" || exit 1
fi

newest_header=$(ls -t "$top_srcdir"/include/*.h | head -n 1)

# compile SRC OBJ [extra flags]: only when the object is out of date
compile() {
	local src=$1 obj=$2
	shift 2
	if [ -f "$obj" ] && [ "$obj" -nt "$src" ] && [ "$obj" -nt "$newest_header" ] &&
	   [ "$obj" -nt "$0" ]; then
		return 0
	fi
	"$CC" "${CFLAGS[@]}" "$@" -c "$src" -o "$obj"
}

build() {
	local t=$1 objs=() src obj pk=() libs=()
	for src in ${SRCS[$t]}; do
		case $src in
		@*) obj=$OUT/obj/${src#@}; obj=${obj%.c}.o; src=$OUT/${src#@} ;;
		%*) obj=$OUT/obj/$(basename "${src%.c}").o; src=$top_builddir/${src#%} ;;
		*) obj=$OUT/obj/$(basename "${src%.c}").o; src=$top_srcdir/$src ;;
		esac
		compile "$src" "$obj" -fsanitize=fuzzer-no-link $(pkg-config --cflags ${PKGS[$t]} 2>/dev/null) ||
			return 1
		objs+=("$obj")
	done
	# -Werror for our own targets only: clang warns about things gcc (which
	# builds the library with -Werror) does not, and that must not break CI
	compile "$top_srcdir/tests/fuzz/fuzz-$t.c" "$OUT/obj/fuzz-$t.o" -fsanitize=fuzzer -Werror \
		$(pkg-config --cflags ${PKGS[$t]} 2>/dev/null) || return 1
	if [ -n "${PKGS[$t]}" ]; then
		libs=($(pkg-config --libs ${PKGS[$t]})) || return 1
	fi
	"$CC" -fsanitize=fuzzer,address,undefined "$OUT/obj/fuzz-$t.o" "${objs[@]}" "${libs[@]}" \
		-o "$OUT/fuzz-$t"
}

rc=0
declare -A EXECS RESULT RATE
for t in "${TARGETS[@]}"; do
	if ! build "$t" > "$OUT/build-$t.log" 2>&1; then
		say "fuzz-$t: BUILD FAILED"
		cat "$OUT/build-$t.log"
		RESULT[$t]="build failed"
		rc=1
		continue
	fi
	seeds=$top_srcdir/tests/fuzz/corpus/$t
	work=$OUT/corpus/$t
	mkdir -p "$work" "$seeds"
	log=$OUT/fuzz-$t.log
	# The kept corpus (seeds and regression inputs) is replayed first, then
	# libFuzzer mutates for TIME seconds; new inputs go to $work.
	say "fuzz-$t: $TIME s over $(ls "$seeds" | wc -l) kept inputs"
	# CI: a fixed seed and a fixed number of runs (within the time cap), so
	# a CI result is reproducible; exploring goes on in `make fuzz`
	det=()
	[ "${CI:-0}" = 1 ] && det=(-seed=1 -runs="${FUZZ_RUNS:-20000}")
	(cd "$OUT" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$OUT/fuzz-$t" -max_total_time="$TIME" "${det[@]}" -print_final_stats=1 -timeout=10 \
		-rss_limit_mb=2048 -max_len=131072 -artifact_prefix="$OUT/crashes/$t-" \
		"$work" "$seeds") > "$log" 2>&1
	frc=$?
	EXECS[$t]=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	RATE[$t]=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	if [ $frc -ne 0 ]; then
		say "fuzz-$t: CRASH (exit $frc); input: $(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)"
		grep -E "ERROR: |SUMMARY: |runtime error|deadly signal|==[0-9]+==" "$log" | head -n 20
		tail -n 40 "$log"
		RESULT[$t]="CRASH"
		rc=1
	else
		RESULT[$t]=ok
	fi
	if [ $MERGE = 1 ] && [ $frc -eq 0 ]; then
		"$OUT/fuzz-$t" -merge=1 -max_len=131072 "$seeds" "$work" > "$OUT/merge-$t.log" 2>&1 ||
			say "fuzz-$t: merge failed (see $OUT/merge-$t.log)"
		say "fuzz-$t: kept corpus now $(ls "$seeds" | wc -l) inputs, $(du -sk "$seeds" | cut -f1) KiB"
	fi
done

echo
printf '%-14s %-12s %14s %10s\n' target result executions exec/s
for t in "${TARGETS[@]}"; do
	e=${EXECS[$t]:-0}
	printf '%-14s %-12s %14s %10s\n' "fuzz-$t" "${RESULT[$t]}" "$e" "${RATE[$t]:-?}"
done
exit $rc
