# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
# Real U-Boot in qemu, shared by tests/uboot/*.sh and the appliance
# life-cycle runner (nandsim/appliance/uboot-pick). Debian's qemu_arm64
# U-Boot in qemu-system-aarch64: flash0 holds U-Boot at 0 and a mkimage'd
# boot script at 48 MiB (bootcmd 'source 0x3000000'); flash1 holds the env
# at its start (CONFIG_ENV_ADDR 0x4000000, 0x40000 bytes, one copy).
# qemu's loader puts them there, not pflash drives: a drive has qemu zero
# and read its whole 64 MiB bank at each start, half of a run's CPU; the
# rest of each bank reads as zeros, as a sparse drive file did.
# saveenv into qemu's pflash fails ("Flash buffer write timeout"): what the
# script saves is only seen in its own output.
UBOOT=${UBOOT:-/usr/lib/u-boot/qemu_arm64/u-boot.bin}
UBOOT_ENV_SIZE=0x40000

# uboot_available: the packages are there (installs them as root if not).
uboot_available() {
	uboot_have() {
		command -v qemu-system-aarch64 >/dev/null && command -v mkimage >/dev/null &&
			[ -f "$UBOOT" ]
	}
	uboot_have && return 0
	if [ "$(id -u)" = 0 ]; then
		echo "installing u-boot-qemu qemu-system-arm u-boot-tools" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q u-boot-qemu qemu-system-arm \
			u-boot-tools >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q u-boot-qemu \
			qemu-system-arm u-boot-tools >/dev/null 2>&1; }
	fi
	uboot_have
}

# uboot_script SCRIPT.txt OUT.scr: the boot script as U-Boot sources it.
uboot_script() {
	mkimage -A arm64 -T script -C none -n "flashd boot" -d "$1" "$2" >/dev/null ||
		{ echo "mkimage rejected $1" >&2; rm -f "$2"; return 1; }
}

# uboot_env_config ENV.bin CONFIG: the fw_env.config of U-Boot's env
uboot_env_config() {
	echo "$1 0x0 $UBOOT_ENV_SIZE $UBOOT_ENV_SIZE" >"$2"
}

# uboot_run SCRIPT.scr ENV.bin [TIMEOUT]: boot U-Boot with the script in
# flash0 and ENV.bin (at most a bank, 64 MiB) at the start of flash1; the
# serial output (no \r) on stdout.
uboot_run() {
	[ "$(stat -c %s "$2")" -le $((64 << 20)) ] || { echo "uboot_run: $2: larger than a flash bank" >&2; return 1; }
	timeout "${3:-60}" qemu-system-aarch64 -M virt -cpu cortex-a57 -m 256 -nographic -no-reboot \
		-bios "$UBOOT" -device loader,file="$1",addr=0x3000000,force-raw=on \
		-device loader,file="$2",addr=0x4000000,force-raw=on </dev/null 2>&1 | tr -d '\r'
}
