/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The U-Boot env's backend interface: what env.c (the common part:
 * opening, the lock, transactions, defaults) shares with its two backends,
 * env_uboot.c (libubootenv) and env_flash.c (U-Boot's format over struct
 * flash, for simulators). Only lib/bootenv includes this. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "error.h"
#include "flash.h"
#include "layout.h"

#define ENV_MAX_COPIES 2

struct uboot_ctx;

/* What a backend does; the common code (transactions, defaults, checks)
 * works through these only. */
struct env_backend {
	const char *name;
	/* (Re)load the variables from storage: 0, -ENODATA when no copy is
	 * valid (the env is then empty), -errno. */
	int (*load)(struct env *e);
	void (*close)(struct env *e);
	char *(*get)(struct env *e, const char *name);
	void *(*next)(struct env *e, void *it, const char **ret_name, const char **ret_value);
	int (*set)(struct env *e, const char *name, const char *value);
	/* fw_setenv's "name=value" script format; an empty value deletes */
	int (*import)(struct env *e, const char *path);
	/* Write the variables in memory with one store. */
	int (*store)(struct env *e);
};

/* One copy on flash (flash backend). */
struct env_copy {
	char *part_name;      /* the partition, on the chip ... */
	uint64_t part_offset, part_size;
	struct flash_info chip; /* ... the layout describes (type, size, erasesize) */
	struct flash *dev;    /* the simulated chip */
	struct flash *f;      /* the partition's window */
	uint64_t offset;      /* of the copy in the window */
	uint64_t span;        /* bytes reserved for the copy (erase units) */
	enum env_copy_state state;
	int error;            /* read error, -errno, when state is ENV_COPY_UNREADABLE */
	uint8_t flags;        /* redundant envs: the serial U-Boot compares */
};

struct env_pair {
	char *name, *value;
};

struct env {
	const struct env_backend *be;
	struct env_device devs[ENV_MAX_COPIES];
	char *paths[ENV_MAX_COPIES];
	size_t n_devs;
	bool blank;
	int lock_fd;
	char *lock_path;      /* NULL: ENV_LOCK_FILE, libubootenv's */
	char desc[600];
	/* libubootenv */
	struct uboot_ctx *ctx;
	bool opened;          /* libuboot_open() done: lock held, vars loaded */
	/* flash */
	bool writable;        /* board opened for writing (only to store) */
	struct env_copy copies[ENV_MAX_COPIES];
	size_t current;       /* copy the variables came from */
	struct env_pair *vars; /* sorted by name */
	size_t n_vars;
};

/* env.c: bytes before the variables: crc32 [+ flags of a redundant env]. */
size_t env_header_size(const struct env *e);
/* env.c: the fw_printenv lock (shared by every env of this process). */
/* Take the env's lock (e->lock_path, else ENV_LOCK_FILE; env_set_lock()
 * overrides both) within the bounded wait. */
int env_lock_take(const struct env *e, int *ret_fd, struct error *err);
void env_lock_release(int *fd);

/* env_uboot.c */
extern const struct env_backend env_uboot_backend;
/* Check e's devices and configure libubootenv for them. */
int env_uboot_configure(struct env *e, struct error *err);

/* env_flash.c */
extern const struct env_backend env_flash_backend;
/* Locate the layout's env copies on target's simulator files and attach
 * them read-only. */
int env_flash_locate(struct env *e, const struct layout *l, const char *target, struct error *err);
/* Copy i's state (valid/erased/bad CRC) from its bytes. */
void env_flash_copy_classify(struct env *e, size_t i, const uint8_t *buf);
