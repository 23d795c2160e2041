/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Flash I/O: one ops table per backend (mtd = Linux MTD char devices,
 * sim = the userspace simulator in nandsim/), chosen from a data table by
 * the device spec. A struct flash may also be a window (partition) onto
 * a parent device; offsets passed to flash_* are relative to the window.
 *
 * Return conventions for every op and wrapper: 0 (or a positive count)
 * on success, -errno on failure. Special codes:
 *   -EUCLEAN  read succeeded, bitflips were corrected (data is valid)
 *   -EBADMSG  read returned uncorrectable data
 *   -EIO      program/erase failure (the block should be marked bad)
 *   -EROFS    the device or window is read-only
 *   -ENOTSUP  the backend lacks this op (see the inline wrappers) */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

#define FLASH_TYPE_LIST(X) X(FLASH_NOR, "nor") X(FLASH_NAND, "nand")

enum flash_type {
	FLASH_TYPE_LIST(STRING_TABLE_ENUM)
	_FLASH_TYPE_MAX,
};

struct flash_info {
	enum flash_type type;
	uint64_t size;       /* bytes in this device/window */
	uint32_t erasesize;  /* bytes per erase block */
	uint32_t writesize;  /* program unit: NAND page, 1 on NOR */
	uint32_t oobsize;    /* OOB bytes per page (0 on NOR) */
	uint32_t oobavail;   /* free OOB bytes per page in the AUTO layout */
	char name[64];       /* MTD name, or the simulator/partition name */
};

/* Kernel ECCGETSTATS-alike plus flashd's own operation counters. */
struct flash_stats {
	uint64_t corrected;    /* bitflips corrected on read */
	uint64_t failed;       /* uncorrectable reads */
	uint64_t badblocks;    /* bad blocks in the device/window */
	uint64_t erases;       /* erase ops issued through this handle */
	uint64_t writes;       /* bytes programmed through this handle */
	uint64_t reads;        /* bytes read through this handle */
	uint64_t read_corrected; /* reads through this handle that returned -EUCLEAN */
	uint64_t read_failed;    /* reads through this handle that returned -EBADMSG */
};

struct flash;

struct flash_ops {
	const char *name;
	/* Open spec (backend-specific part, prefix already stripped). */
	int (*open)(struct flash *f, const char *spec, bool writable);
	void (*close)(struct flash *f);
	/* Absolute offsets on the whole device; callers go through flash_*. */
	int (*read)(struct flash *f, uint64_t off, void *buf, size_t len);
	int (*write)(struct flash *f, uint64_t off, const void *buf, size_t len);
	int (*erase)(struct flash *f, uint64_t off); /* one erase block */
	int (*block_isbad)(struct flash *f, uint64_t off); /* 1 bad, 0 good */
	int (*block_markbad)(struct flash *f, uint64_t off);
	/* OOB of the page at off (free bytes, AUTO layout like MTD_OPS_AUTO_OOB). */
	int (*read_oob)(struct flash *f, uint64_t off, void *buf, size_t len);
	int (*write_oob)(struct flash *f, uint64_t off, const void *buf, size_t len);
	int (*get_ecc)(struct flash *f, struct flash_stats *st); /* fills corrected/failed/badblocks */
	int (*unlock)(struct flash *f, uint64_t off, uint64_t len);
};

struct flash {
	const struct flash_ops *ops;
	struct flash_info info;
	uint64_t base;         /* window start on the root device */
	bool writable;
	struct flash *root;    /* device owning the backend state (self for roots) */
	unsigned refs;         /* on roots: windows alive + 1 */
	void *priv;            /* backend state (roots only) */
	struct flash_stats stats; /* counters for ops through this handle */
};

/* Open a device. spec: "sim:PATH" (simulator board file), "/dev/mtdN" or
 * "mtd:NAME" (kernel MTD, looked up by name in sysfs). */
int flash_open(const char *spec, bool writable, struct flash **ret);
/* A window [off, off+size) of parent, erase-block aligned. */
int flash_open_window(struct flash *parent, const char *name, uint64_t off,
		      uint64_t size, struct flash **ret);
void flash_close(struct flash *f);
static inline void flash_closep(struct flash **f) { if (*f) flash_close(*f); }
#define _cleanup_flash_ __attribute__((cleanup(flash_closep)))

const char *flash_type_to_string(enum flash_type t);
int flash_type_from_string(const char *s); /* -EINVAL if unknown */
/* The names, indexed by the enum (for the layout parser). */
extern const char *const flash_type_table[_FLASH_TYPE_MAX];

/* Bounds- and alignment-checked wrappers; offsets relative to the window.
 * Reads of any length; writes must be writesize-aligned on NAND. */
int flash_read(struct flash *f, uint64_t off, void *buf, size_t len);
int flash_write(struct flash *f, uint64_t off, const void *buf, size_t len);
int flash_erase_block(struct flash *f, uint64_t off);
int flash_block_isbad(struct flash *f, uint64_t off);
int flash_block_markbad(struct flash *f, uint64_t off);
int flash_read_oob(struct flash *f, uint64_t off, void *buf, size_t len);
int flash_write_oob(struct flash *f, uint64_t off, const void *buf, size_t len);
int flash_unlock(struct flash *f);
/* ECC/bad-block counters of the window plus this handle's op counters. */
int flash_get_stats(struct flash *f, struct flash_stats *ret);
/* Number of bad blocks in the window (scans with block_isbad). */
int flash_count_bad(struct flash *f);

static inline uint64_t flash_blocks(const struct flash *f)
{
	return f->info.size / f->info.erasesize;
}

/* ---- backends (flash_sim.c, flash_mtd.c) ------------------------------- */

extern const struct flash_ops flash_sim_ops;
extern const struct flash_ops flash_mtd_ops;

/* Parse a window suffix "@OFFSET+SIZE" or "@OFFSET" (to the end) off a
 * device spec: fills ret_base (a copy of the spec without the suffix, to
 * be freed), ret_off, ret_size (0 = to the end) and returns 1 when the spec
 * had one, 0 when not, -EINVAL on a malformed suffix. */
int flash_spec_split(const char *spec, char **ret_base, uint64_t *ret_off, uint64_t *ret_size);

/* The simulator behind a sim: device (or a window on one), NULL otherwise. */
struct nsim;
/* nsim_set_lock_wait() for every simulator this process opens (the
 * daemon's event loop bounds its waits; its install worker does not). */
#if FLASHD_HOST_TOOLS
struct nsim *flash_sim_nsim(struct flash *f);
void flash_sim_set_lock_wait(uint64_t usec);
#else
/* a device build has no simulator backend (configure --disable-host-tools) */
static inline struct nsim *flash_sim_nsim(struct flash *f) { return NULL; }
static inline void flash_sim_set_lock_wait(uint64_t usec) { (void)usec; }
#endif

#define FLASH_MTD_SYSFS "/sys/class/mtd"

/* What /sys/class/mtd/mtdN says; fields a kernel lacks are left 0/"" and
 * their have_* flag false. */
struct flash_mtd_sysfs {
	unsigned index;
	char name[64];
	char type[16];        /* "nand", "nor", "mlc-nand", "ram", ... */
	uint64_t size;
	uint64_t offset;      /* of a partition on its master */
	uint32_t erasesize;
	uint32_t writesize;
	uint32_t oobsize;
	uint32_t oobavail;    /* 0 when the kernel lacks the attribute */
	uint32_t flags;
	bool have_ecc;        /* the ECC/bad-block attributes below exist */
	uint64_t bad_blocks;
	uint64_t bbt_blocks;
	uint64_t corrected_bits;
	uint64_t ecc_failures;
	uint32_t ecc_strength;
	uint32_t bitflip_threshold;
};

/* Find mtdN by name under sysroot (normally FLASH_MTD_SYSFS); fills the
 * /dev path. -ENODEV when no MTD device has that name. */
int flash_mtd_find_by_name(const char *sysroot, const char *name, char *ret_dev, size_t len);
/* The same, the path in a new string. */
int flash_mtd_find_by_name_dup(const char *sysroot, const char *name, char **ret_dev);
/* The same for a partition of the layout, with N of mtdN (ret_index may be
 * NULL) and the message when it is missing. */
struct error;
int flash_mtd_find_partition(const char *sysroot, const char *name, char *ret_dev, size_t len,
			     unsigned *ret_index, struct error *err);
/* Index N of a sysfs entry "mtdN" (-EINVAL for anything else, "mtdNro" too). */
int flash_mtd_parse_dirname(const char *n, unsigned *ret);
int flash_mtd_read_sysfs(const char *sysroot, unsigned index, struct flash_mtd_sysfs *ret);
/* sysfs "type" string -> FLASH_NOR/FLASH_NAND; -EMEDIUMTYPE for UBI,
 * absent and unknown types. */
int flash_mtd_type_from_sysfs(const char *type);
/* sysfs view of the MTD device behind f; -ENOTTY if f is not an MTD device. */
int flash_mtd_get_sysfs(struct flash *f, struct flash_mtd_sysfs *ret);
