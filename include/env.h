/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The U-Boot environment (never through fw_setenv).
 *
 * An env is opened from the layout's env copies (one or two; two = a
 * redundant env), from an fw_env.config file, or from an explicit device
 * list. Real devices and config files go through libubootenv; a layout's
 * env on simulator files ("sim:" targets) through flashd's own
 * implementation of U-Boot's env format on the flash layer, so that its
 * stores are erases and page programs of the simulated chip (power cuts,
 * tearing, counters). The bytes are the same either way.
 *
 * Opening takes the lock fw_printenv/fw_setenv use (flock on
 * ENV_LOCK_FILE) with a bounded wait (-EBUSY, "env busy", when someone
 * holds it longer) and loads the current copy; the lock is held until
 * env_close(), so keep env objects short-lived: open, read, change,
 * close. A read-modify-write under one open is therefore consistent with
 * fw_setenv and other flashd processes. (libubootenv 0.3.2 takes the same
 * lock itself, blocking; env.c checks it is free first, and as root makes
 * the lock file root-only so that users without rights cannot hold it.)
 *
 * Every change goes through a transaction: env_txn_set() only records,
 * env_txn_commit() applies all of them in memory and writes them with ONE
 * libuboot_env_store(). On a redundant env the store goes to the inactive
 * copy with an incremented flag, so a power cut during the store leaves
 * the previous state valid and the new state either complete or absent.
 *
 * Errors: -errno, with err->msg naming the env devices and the variable. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"
#include "layout.h"

struct env;
struct env_txn;

/* One env copy: file or /dev/mtdN, and where the env lives in it. */
struct env_device {
	const char *path;
	uint64_t offset;
	uint64_t size;        /* CONFIG_ENV_SIZE */
	uint64_t sector_size; /* erase unit (MTD); 0 = size */
	uint64_t sectors;     /* erase units reserved for the copy; 0 = size / sector_size */
};

struct env_var {
	const char *name;
	const char *value;    /* NULL = delete */
};

enum {
	/* Succeed on an env without a valid copy (erased flash): the env is
	 * then empty, env_is_blank() is true and only env_init_default() may
	 * write it. Without this flag such an env is -ENODATA. */
	ENV_OPEN_ALLOW_BLANK = 1 << 0,
};

/* fw_printenv's and libubootenv's file, fixed in their code (not our
 * sysconfdir): one file that flashd and the U-Boot tools read alike */
#define ENV_DEFAULT_CONFIG "/etc/fw_env.config"
#define ENV_DEFAULT_SYSFS "/sys/class/mtd"
#define ENV_LOCK_FILE "/var/lock/fw_printenv.lock" /* libubootenv's, fixed in 0.3.2 */
#define ENV_LOCK_TIMEOUT_MS 10000     /* tools, workers */
#define ENV_LOCK_TIMEOUT_LOOP_MS 1000 /* the daemon's event loop */

/* Where an env copy stands after the last load (env_copy_state()). */
#define ENV_COPY_STATE_LIST(X)                                    \
	/* not checked (the libubootenv backend does not tell) */ \
	X(ENV_COPY_UNKNOWN, "unknown")                            \
	/* CRC matches */                                         \
	X(ENV_COPY_VALID, "valid")                                \
	/* all 0xff: never written, or erased by a cut store */   \
	X(ENV_COPY_ERASED, "erased")                              \
	/* data that does not match its CRC: corrupt or torn */   \
	X(ENV_COPY_BAD_CRC, "bad-crc")                            \
	/* read error (uncorrectable ECC, bad blocks, I/O) */     \
	X(ENV_COPY_UNREADABLE, "unreadable")                      \
	/* no good block left to hold it, or its erase/program    \
	 * failed: stores go to the other copy, in place */       \
	X(ENV_COPY_DEAD, "dead")

enum env_copy_state {
	ENV_COPY_STATE_LIST(STRING_TABLE_ENUM)
	_ENV_COPY_STATE_MAX,
};

/* The longest wait for an env's lock, and a lock file that replaces every
 * env's own (path NULL: each env's own; tests use a private file). */
void env_set_lock(const char *path, unsigned timeout_ms);

/* Copies from l->env. target: NULL or "system" = the kernel's MTD
 * partitions, found by name under sysfs_root (NULL = /sys/class/mtd),
 * through libubootenv; "sim:PATH" = the simulator file PATH (or
 * PATH/<device>.sim when PATH is a directory), through the flash layer
 * (env_device(): path = the simulator file, offset = on the simulated
 * chip). A layout without env copies is -ENOENT (use env_open_config).
 * -EBUSY when the env lock stays taken (see above). */
int env_open_layout(const struct layout *l, const char *target, const char *sysfs_root,
		    unsigned flags, struct env **ret, struct error *err);
/* An fw_env.config ("device offset size [sector-size [sectors]]" lines,
 * two lines = redundant). Checked for the traps of libubootenv 0.3.2:
 * sizes without 0x (parsed as hex there), /dev/mtdblockN (writes do
 * nothing there). */
int env_open_config(const char *path, unsigned flags, struct env **ret, struct error *err);
int env_open_devices(const struct env_device *devs, size_t n_devs, unsigned flags,
		     struct env **ret, struct error *err);
void env_close(struct env *e);
static inline void env_closep(struct env **e) { if (*e) env_close(*e); }
#define _cleanup_env_ __attribute__((cleanup(env_closep)))

/* "/dev/mtd3@0x0+0x20000, /dev/mtd4@0x0+0x20000 (redundant)". */
const char *env_describe(const struct env *e);
bool env_is_redundant(const struct env *e);
bool env_is_blank(const struct env *e);
size_t env_n_devices(const struct env *e);
const struct env_device *env_device(const struct env *e, size_t i);

/* Copy i's state after the last load, also when no copy is valid (open
 * with ENV_OPEN_ALLOW_BLANK to see which copy failed and why);
 * *ret_error = -errno for ENV_COPY_UNREADABLE and ENV_COPY_DEAD. */
enum env_copy_state env_copy_state(const struct env *e, size_t i, int *ret_error);
/* "valid", "erased", "bad-crc", "unreadable", "dead", "unknown". */
const char *env_copy_state_to_string(enum env_copy_state s);

/* Value of name (malloc'd) or -ENOENT. */
int env_get(struct env *e, const char *name, char **ret);
/* Same as env_get, NULL when unset or on error: the getter slot.h takes. */
char *env_get_dup(void *env, const char *name);
/* Iterate in name order: start with *it = NULL; returns 1 and fills
 * name/value (valid until the next change) while there are more, then 0. */
int env_next(struct env *e, void **it, const char **ret_name, const char **ret_value);

/* True when name is a valid U-Boot variable name (non-empty, printable,
 * no '=' or whitespace). */
bool env_name_valid(const char *name);

int env_txn_new(struct env *e, struct env_txn **ret);
/* Record name=value (NULL deletes); a later set of the same name wins. */
int env_txn_set(struct env_txn *t, const char *name, const char *value);
int env_txn_set_many(struct env_txn *t, const struct env_var *vars, size_t n);
size_t env_txn_size(const struct env_txn *t);
/* Apply and store once. On failure nothing is written (or the store was
 * torn, which the redundant copy/CRC makes invisible) and the env in
 * memory is reloaded from storage. -ENODATA on a blank env. */
int env_txn_commit(struct env_txn *t, struct error *err);
/* One variable in one store: a transaction of a single set (NULL deletes). */
int env_store_var(struct env *e, const char *name, const char *value, struct error *err);
void env_txn_free(struct env_txn *t);
static inline void env_txn_freep(struct env_txn **t) { if (*t) env_txn_free(*t); }
#define _cleanup_env_txn_ __attribute__((cleanup(env_txn_freep)))

/* Provision a blank (or, with force, any) env: the U-Boot default env from
 * initial_env (fw_setenv's "name=value" file, e.g. /etc/u-boot-initial-env;
 * NULL = none), then vars on top, written with one store. Refuses a valid
 * env without force (-EEXIST), so defaults never silently replace a
 * board's settings. */
int env_init_default(struct env *e, const char *initial_env, const struct env_var *vars,
		     size_t n_vars, bool force, struct error *err);
