#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# flashctl provision on simulator boards: NAND with factory bad blocks in
# the slot, env and overlay partitions, and NOR; the boot selection picks
# slot A, fw_printenv reads the env, the overlay carries cleanmarkers, the
# bootloader is untouched, dry runs write nothing, bad targets are refused.
. "$(dirname "$0")/../lib/common.sh"
top=$top_srcdir
fc=$FLASHCTL
need mksquashfs fw_printenv
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT

mkdir -p "$T/root/etc" "$T/keyring"
echo "VERSION_ID=1.0" >"$T/root/etc/os-release"
head -c 300000 /dev/urandom >"$T/root/data"
mksquashfs "$T/root" "$T/root.sqfs" -noappend -quiet >/dev/null
$fc bundle keygen --out "$T/k" >/dev/null && cp "$T/k.pub" "$T/keyring/"

for board in nandsim-128m nor-router-16m; do
	L=$top/layouts/$board.json
	B=$T/$board.bundle
	S=$T/$board.sim
	$fc bundle create --layout "$L" --version 1.0 --image rootfs="$T/root.sqfs" \
		--key "$T/k.key" -o "$B" >/dev/null || { check_fail "$board: bundle create"; continue; }
	eb=$($fc --json layout show "$L" | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["erase_block"])')
	off() { $fc --json layout show "$L" | python3 -c "import json,sys; print([p['offset'] for p in json.load(sys.stdin)['partitions'] if p['name']=='$1'][0])"; }
	if [ "$board" = nandsim-128m ]; then
		g=(--type nand --size 128MiB --erase-block 128KiB --page 2048 --oob 64)
		# factory bad blocks: one in rootfs-a, one in the env copy 2... no: env
		# copies are one block each; put one in the overlay and two in the slot
		ra=$(( $(off rootfs-a) / eb )); od=$(( $(off rootfs_data) / eb ))
		$fc flash sim-create "$S" "${g[@]}" --bad-blocks "$((ra + 1)),$((ra + 2)),$((od + 3))" >/dev/null
	fi
	# the bootloader region holds something provisioning must keep
	if [ -f "$S" ]; then
		printf 'UBOOT' | dd of="$S" bs=1 seek=4096 conv=notrunc 2>/dev/null
		$fc flash sim-create "$T/x.sim" --type nor --size 16MiB --erase-block 64KiB >/dev/null
	fi

	# dry run: reports, writes nothing
	before=$( [ -f "$S" ] && sha256sum <"$S")
	$fc provision --dry-run --layout "$L" --bundle "$B" --keyring "$T/keyring" "sim:$S" >"$T/dry" 2>&1
	check "$board: dry run lists the slot image" grep -q "rootfs-a .*image" "$T/dry"
	check "$board: dry run keeps the bootloader" grep -qE "u-boot .*keep" "$T/dry"
	after=$( [ -f "$S" ] && sha256sum <"$S")
	check "$board: dry run wrote nothing" [ "$before" = "$after" ]

	$fc provision --layout "$L" --bundle "$B" --keyring "$T/keyring" "sim:$S" >"$T/out" 2>&1
	check "$board: provision succeeds" grep -q "^Done: slot A boots first" "$T/out" || cat "$T/out"
	if [ "$board" = nandsim-128m ]; then
		check "$board: bad blocks reported in the slot" grep -qE "rootfs-a .*\[2 bad\]" "$T/out"
		check "$board: bad block reported in the overlay" grep -qE "rootfs_data .*\[1 bad\]" "$T/out"
		check "$board: bootloader bytes kept" [ "$(dd if="$S" bs=1 skip=4096 count=5 2>/dev/null)" = UBOOT ]
	fi
	# the install records (issue 13): A verified, activated, never booted;
	# B never written
	$fc --json slot status --layout "$L" --target "sim:$S" > "$T/slots.json"
	check "$board: slot A is 'pending', B 'empty'" python3 -c 'import json,sys
s=json.load(open(sys.argv[1]))["slots"]
assert [x["state"] for x in s] == ["pending", "empty"], s' "$T/slots.json"
	# the boot script's choice
	sel=$($fc slot boot-select --layout "$L" --target "sim:$S")
	check "$board: boot selection picks A ($sel)" [ "$sel" = flashd.slot=A ]
	# slot A holds the image (bad blocks skipped)
	size=$(stat -c %s "$T/root.sqfs")
	$fc flash read --length "$size" "sim:$S@$(off rootfs-a)+$($fc --json layout show "$L" | python3 -c "import json,sys; print([p['size'] for p in json.load(sys.stdin)['partitions'] if p['name']=='rootfs-a'][0])")" "$T/readback" >/dev/null 2>&1
	check "$board: slot A reads back identical" cmp -s "$T/readback" "$T/root.sqfs"
	# fw_printenv (libubootenv's own tool) reads the redundant env
	e1=$(( $(off u-boot-env) + 4096 )); e2=$(( $(off u-boot-env-redund) + 4096 ))
	esize=$(python3 -c 'import json,sys; print(int(str(json.load(open(sys.argv[1]))["env"]["copies"][0]["size"]), 0))' "$L")
	printf '%s 0x%x 0x%x\n%s 0x%x 0x%x\n' "$S" "$e1" "$esize" "$S" "$e2" "$esize" >"$T/fw_env.config"
	check "$board: fw_printenv reads BOOT_ORDER=A" [ "$(fw_printenv -c "$T/fw_env.config" -n BOOT_ORDER 2>/dev/null)" = A ]
	check "$board: fw_printenv reads FLASHD_A_VERSION=1.0" [ "$(fw_printenv -c "$T/fw_env.config" -n FLASHD_A_VERSION 2>/dev/null)" = 1.0 ]
done

# refusals: wrong geometry, unknown target, unsigned without --allow-unsigned
$fc flash sim-create "$T/small.sim" --type nand --size 64MiB --erase-block 128KiB >/dev/null
$fc provision --layout "$top/layouts/nandsim-128m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" "sim:$T/small.sim" >"$T/out" 2>&1
check "geometry mismatch refused" grep -q "geometry does not match" "$T/out"
$fc provision --layout "$top/layouts/nandsim-128m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" "tape:/dev/st0" >"$T/out" 2>&1
check "unknown target refused" grep -q "unknown target 'tape:/dev/st0'" "$T/out"
$fc provision --layout "$top/layouts/nor-router-16m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" "sim:$T/other.sim" >"$T/out" 2>&1
check "bundle for another board refused before anything is created" \
	bash -c "grep -q 'this system is \"flashd,nor-router-16m\"' '$T/out' && [ ! -e '$T/other.sim' ]"

# factory images
$fc provision --layout "$top/layouts/nor-router-16m.json" --bundle "$T/nor-router-16m.bundle" \
	--keyring "$T/keyring" "image:$T/nor" >/dev/null 2>&1
check "NOR factory image is the whole chip" [ "$(stat -c %s "$T/nor.bin" 2>/dev/null)" = 16777216 ]
check "NOR report has a sha256 per region" python3 -c "
import json,hashlib; r=json.load(open('$T/nor.json')); d=open('$T/nor.bin','rb').read()
assert all(hashlib.sha256(d[p['offset']:p['offset']+p['size']]).hexdigest()==p['sha256'] for p in r['partitions'])"
$fc provision --layout "$top/layouts/nandsim-128m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" "image:$T/nand" >/dev/null 2>&1
check "NAND factory image: data + page/OOB interleaved" \
	[ "$(stat -c %s "$T/nand.bin" 2>/dev/null)" = 134217728 -a "$(stat -c %s "$T/nand.oob.bin" 2>/dev/null)" = 138412032 ]
check "NAND report lists blocks that must be good" python3 -c "
import json; r=json.load(open('$T/nand.json')); assert len(r['must_be_good']) > 10, r['must_be_good']"
check "no temporary simulator left" bash -c "! ls '$T'/*.sim.tmp 2>/dev/null"

# block records (issue 17): a record left from before describes the old
# content of the slots; provisioning must drop it before it erases, and
# write one for what it installs (the next adaptive install trusts it)
mkdir -p "$T/state"
printf 'stale' >"$T/state/blocks-rootfs-B-rootfs.bin"
printf 'stale' >"$T/state/blocks-rootfs-A-rootfs.bin"
$fc provision --layout "$top/layouts/nandsim-128m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" --state-dir "$T/state" "sim:$T/rec.sim" >"$T/rec.out" 2>&1
check "provision with --state-dir succeeds" grep -q "^Done: slot A boots first" "$T/rec.out"
check "a stale record of slot B is dropped" test ! -e "$T/state/blocks-rootfs-B-rootfs.bin"
check "slot A's record is what was installed" bash -c \
	"[ -s '$T/state/blocks-rootfs-A-rootfs.bin' ] && [ \"\$(cat '$T/state/blocks-rootfs-A-rootfs.bin')\" != stale ]"

# bitflips on reads (2 % of page reads, corrected): the cleanmarkers sit
# in OOB bytes no ECC covers, so a read may see one of them with a bit
# flipped; the read-back of the overlay must not call that block unformatted
$fc flash sim-create "$T/flip.sim" --type nand --size 128MiB --erase-block 128KiB --page 2048 --oob 64 >/dev/null
"$top_builddir/nsimctl" flip-rate "$T/flip.sim" --corrected 20000 --uncorrectable 0 --seed 11 >/dev/null
$fc provision --layout "$top/layouts/nandsim-128m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" "sim:$T/flip.sim" >"$T/flip.out" 2>&1
check "provision with bitflips on reads succeeds" grep -q "^Done: slot A boots first" "$T/flip.out" ||
	cat "$T/flip.out"
check "the reads did meet bitflips" bash -c \
	"'$top_builddir/nsimctl' info '$T/flip.sim' | grep -qE '[1-9][0-9]* corrected'"

# an overlay block that fails to erase is marked bad, as in the slots, and
# provisioning goes on (it once failed the whole provision: the eraser was
# given a flag it does not read)
$fc flash sim-create "$T/erf.sim" --type nand --size 128MiB --erase-block 128KiB --page 2048 --oob 64 >/dev/null
od=$(( $($fc --json layout show "$top/layouts/nandsim-128m.json" | python3 -c "import json,sys
print([p['offset'] for p in json.load(sys.stdin)['partitions'] if p['name']=='rootfs_data'][0])") / 131072 ))
"$top_builddir/nsimctl" fault "$T/erf.sim" --block $((od + 7)) --erase >/dev/null
$fc provision --layout "$top/layouts/nandsim-128m.json" --bundle "$T/nandsim-128m.bundle" \
	--keyring "$T/keyring" "sim:$T/erf.sim" >"$T/erf.out" 2>&1
check "an overlay block failing its erase: provision succeeds" grep -q "^Done: slot A boots first" "$T/erf.out" ||
	cat "$T/erf.out"
check "an overlay block failing its erase: marked bad" grep -qE "rootfs_data .*\[1 bad\]" "$T/erf.out"

check_done
say "all provisioning checks passed"
