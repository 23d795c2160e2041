# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
# Real U-Boot in qemu, shared by tests/uboot/*.sh and the appliance
# life-cycle runner (nandsim/appliance/uboot-pick). Debian's qemu_arm64
# U-Boot in qemu-system-aarch64: flash0 holds U-Boot at 0 and a mkimage'd
# boot script at 48 MiB (bootcmd 'source 0x3000000'); flash1 holds the env
# at its start (CONFIG_ENV_ADDR 0x4000000, 0x40000 bytes, one copy).
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

# uboot_flash0 SCRIPT.txt OUT.bin: U-Boot plus the boot script SCRIPT.txt.
uboot_flash0() {
	truncate -s 0 "$2"
	dd if="$UBOOT" of="$2" conv=notrunc status=none
	mkimage -A arm64 -T script -C none -n "flashd boot" -d "$1" "$2.scr" >/dev/null ||
		{ echo "mkimage rejected $1" >&2; rm -f "$2.scr"; return 1; }
	dd if="$2.scr" of="$2" bs=1M seek=48 conv=notrunc status=none
	rm -f "$2.scr"
	truncate -s 64M "$2"
}

# uboot_env_config ENV.bin CONFIG: the fw_env.config of U-Boot's env
uboot_env_config() {
	echo "$1 0x0 $UBOOT_ENV_SIZE $UBOOT_ENV_SIZE" >"$2"
}

# uboot_run FLASH0 ENV.bin [TIMEOUT]: boot it; the serial output (no \r)
# on stdout. The env file is made 64 MiB (a pflash bank).
uboot_run() {
	truncate -s 64M "$2"
	timeout "${3:-60}" qemu-system-aarch64 -M virt -cpu cortex-a57 -m 256 -nographic -no-reboot \
		-drive if=pflash,format=raw,file="$1",readonly=on \
		-drive if=pflash,format=raw,file="$2" </dev/null 2>&1 | tr -d '\r'
}
