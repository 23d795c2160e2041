/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Board layouts: one JSON file describes the flash devices, partitions and
 * their roles (bootloader, U-Boot env, A/B slot groups, overlays, extra
 * lower images). Format: man/flashd-layout.5 and layouts/README.md.
 *
 * layout_load() parses and validates; on failure it returns -errno and
 * fills err with "FILE: JSON.PATH: reason" (library code never prints). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "error.h"
#include "flash.h"
#include "paths.h"

/* The board's layout, where flashd boot (in an initramfs, before any
 * prefix exists) and the daemon both look: one path for both. */
#define LAYOUT_DEFAULT_PATH paths_layout

#define LAYOUT_STORAGE_LIST(X)                                  \
	/* raw NOR partition */                                 \
	X(LAYOUT_STORAGE_NOR, "nor")                            \
	/* raw NAND partition (bad-block skipping) */           \
	X(LAYOUT_STORAGE_NAND, "nand")                          \
	/* UBI volume */                                        \
	X(LAYOUT_STORAGE_UBI, "ubi")                            \
	/* image file on a mounted filesystem */                \
	X(LAYOUT_STORAGE_FILE, "file")

enum layout_storage {
	LAYOUT_STORAGE_LIST(STRING_TABLE_ENUM)
	_LAYOUT_STORAGE_MAX,
};

#define LAYOUT_OVERLAY_TYPE_LIST(X)                             \
	/* JFFS2 on a raw partition */                          \
	X(LAYOUT_OVERLAY_JFFS2, "jffs2")                        \
	/* UBIFS on a UBI volume */                             \
	X(LAYOUT_OVERLAY_UBIFS, "ubifs")                        \
	/* volatile */                                          \
	X(LAYOUT_OVERLAY_TMPFS, "tmpfs")

enum layout_overlay_type {
	LAYOUT_OVERLAY_TYPE_LIST(STRING_TABLE_ENUM)
	_LAYOUT_OVERLAY_MAX,
};

#define LAYOUT_UBI_VOL_TYPE_LIST(X) X(LAYOUT_UBI_DYNAMIC, "dynamic") X(LAYOUT_UBI_STATIC, "static")

enum layout_ubi_vol_type {
	LAYOUT_UBI_VOL_TYPE_LIST(STRING_TABLE_ENUM)
	_LAYOUT_UBI_MAX,
};

struct layout_device {
	char *name;
	enum flash_type type;
	uint64_t size;
	uint32_t erasesize;
	uint32_t writesize;   /* page size; 1 for NOR */
	uint32_t oobsize;
	uint32_t subpage;     /* smallest NAND write (UBI's VID header offset); page when unset */
	char *nandsim_id;     /* optional "0x20,0xaa,0x00,0x15" (kernel nandsim id_bytes) */
	char *mtd_id;         /* kernel MTD name of the chip (mtdparts= mtd-id); NULL = derived,
			       * see layout_device_mtd_id() */
};

struct layout_partition {
	char *name;
	struct layout_device *dev;
	uint64_t offset;      /* from the start of dev */
	uint64_t size;
	bool readonly;
};

struct layout_ubi_volume {
	char *name;
	uint64_t size;
	enum layout_ubi_vol_type type;
	bool autoresize;      /* factory images: grows to the free LEBs at the first attach */
};

/* A partition formatted as UBI, with its volumes. */
struct layout_ubi {
	struct layout_partition *part;
	struct layout_ubi_volume *volumes;
	size_t n_volumes;
};

/* One U-Boot env copy (two = redundant env). */
struct layout_env_copy {
	struct layout_partition *part;
	uint64_t offset;      /* inside part */
	uint64_t size;        /* env size (CONFIG_ENV_SIZE) */
	uint64_t sector_size; /* erase unit to use, normally part's erasesize */
};

struct layout_env {
	struct layout_env_copy copies[2];
	size_t n_copies;      /* 0 when the layout has no env (then /etc/fw_env.config) */
};

/* An image to place in a slot (rootfs or kernel), on one storage. */
struct layout_image_target {
	enum layout_storage storage;
	struct layout_partition *part;   /* NOR/NAND: the partition; UBI: the UBI partition */
	char *ubi_volume;                /* UBI only */
	char *file;                      /* FILE only: absolute path of the image file */
};

struct layout_slot {
	char *name;                      /* "A", "B": the name used in BOOT_ORDER */
	struct layout_image_target rootfs;
	struct layout_image_target kernel; /* kernel.storage valid when has_kernel */
	bool has_kernel;
};

struct layout_slot_group {
	char *name;                      /* e.g. "rootfs" */
	char *image_type;                /* "squashfs" */
	unsigned max_tries;              /* BOOT_x_LEFT after activation; default 3 */
	bool seal;                       /* "seal": each slot's rootfs partition ends in a seal
					  * block (slot_seal.h) that the boot script checks */
	struct layout_slot *slots;
	size_t n_slots;                  /* 2 */
};

struct layout_overlay {
	char *path;                      /* mount point in the union: "/" or a subtree ("/etc") */
	enum layout_overlay_type type;
	struct layout_partition *part;   /* JFFS2: the partition; UBIFS: the UBI partition */
	char *ubi_volume;                /* UBIFS only */
	uint64_t tmpfs_size;             /* TMPFS only, 0 = kernel default */
};

/* Extra read-only lower layer stacked under the slot's root. */
struct layout_lower {
	char *name;
	struct layout_image_target target;
};

struct layout {
	char *path;                      /* file it was loaded from */
	char *board;                     /* human name */
	char *compatible;                /* matched against bundles */
	struct layout_device *devices;
	size_t n_devices;
	struct layout_partition *partitions;
	size_t n_partitions;
	struct layout_partition *bootloader; /* optional */
	struct layout_env env;
	struct layout_ubi *ubis;
	size_t n_ubis;
	struct layout_slot_group *groups;
	size_t n_groups;
	struct layout_overlay *overlays;
	size_t n_overlays;
	struct layout_lower *lowers;
	size_t n_lowers;
};

int layout_load(const char *path, struct layout **ret, struct error *err);
void layout_free(struct layout *l);
static inline void layout_freep(struct layout **l) { if (*l) layout_free(*l); }
#define _cleanup_layout_ __attribute__((cleanup(layout_freep)))

struct layout_partition *layout_find_partition(const struct layout *l, const char *name);
struct layout_device *layout_find_device(const struct layout *l, const char *name);
struct layout_slot_group *layout_find_group(const struct layout *l, const char *name);
struct layout_slot *layout_find_slot(struct layout_slot_group *g, const char *name);
/* MTD index of a partition in kernel order (devices in file order, then partitions in offset order). */
int layout_partition_index(const struct layout *l, const struct layout_partition *p);

const char *layout_storage_to_string(enum layout_storage s);
const char *layout_overlay_type_to_string(enum layout_overlay_type t);

/* Names the parser accepts, indexed by the enums. */
extern const char *const layout_storage_table[_LAYOUT_STORAGE_MAX];
extern const char *const layout_overlay_type_table[_LAYOUT_OVERLAY_MAX];
extern const char *const layout_ubi_vol_type_table[_LAYOUT_UBI_MAX];

struct layout_ubi *layout_find_ubi(const struct layout *l, const char *name);
struct layout_ubi_volume *layout_find_ubi_volume(const struct layout_ubi *u, const char *name);

const char *layout_ubi_vol_type_to_string(enum layout_ubi_vol_type t);

/* The MTD name the kernel gives the chip: d->mtd_id when set; else for a
 * NAND with nandsim_id the kernel's chip name ("NAND 128MiB 3,3V 8-bit");
 * else d->name. */
const char *layout_device_mtd_id(const struct layout_device *d);

/* Roles of a partition, comma separated, e.g. "slot rootfs.A rootfs",
 * "env", "bootloader", "ubi", "overlay /etc", "lower NAME"; "" when unused.
 * Returns the number of roles. */
int layout_partition_roles(const struct layout *l, const struct layout_partition *p,
			   char *buf, size_t len);

/* UBI capacity estimate of a UBI partition as validation uses it:
 * LEB size (PEB minus the EC and VID headers: 2 pages on NAND, 128 bytes
 * on NOR) and the LEBs available to volumes (PEBs minus 2 for the layout
 * volume, 4 reserved for wear-levelling/atomic change/fastmap, and on
 * NAND the kernel's default bad-block reserve of 20 per 1024 PEBs). */
#define LAYOUT_UBI_LAYOUT_PEBS 2
#define LAYOUT_UBI_RESERVED_PEBS 4
int layout_ubi_capacity(const struct layout_ubi *u, uint64_t *ret_leb_size, uint64_t *ret_lebs);

/* Size of the storage behind an image target (partition or UBI volume);
 * 0 for files (unknown until installed). */
uint64_t layout_target_size(const struct layout *l, const struct layout_image_target *t);
