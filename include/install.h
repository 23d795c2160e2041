/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The update engine: a bundle stream goes in; either the target slot ends
 * up holding the verified image and activated (one env store), or it
 * stays marked bad and the env is otherwise unchanged.
 *
 * Order of work:
 *   1. manifest verified (signature, compatible, sizes); target = the
 *      slot of the group that is not booted
 *   2. right before the first payload byte goes to flash (so after the
 *      first image's squashfs superblock check), ONE env store marks the
 *      target bad (out of BOOT_ORDER, 0 tries, version forgotten); a
 *      bundle refused before that point leaves the env untouched
 *   3. each payload streams into its partition through a flashio writer
 *      (bad-block skipping, unchanged erase blocks skipped), hashed by the
 *      bundle reader on the way
 *   4. every written byte is read back and hashed against the manifest
 *      (the adaptive path of install_run_source() writes block by block
 *      against the signed index instead: install_index.h)
 *   5. ONE env store activates the slot (first in BOOT_ORDER, full tries,
 *      FLASHD_<slot>_VERSION set)
 *
 * The engine is incremental so the daemon can drive it in small steps:
 * install_feed() with bundle bytes (at most one erase block of flash I/O
 * per erase block of payload), install_finish_input() at EOF, then
 * install_step() until it returns 0. Memory is fixed: one writer at a time
 * (an erase block and its compare copy) or the read-back buffer, plus the
 * bundle reader's bounded window. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "board.h"
#include "bundle.h"
#include "error.h"
#include "keyring.h"
#include "layout.h"
#include "source.h"

/* The phases: the enum, their names (install_phase_to_string) and the
 * step the daemon reports for each (its "step" in the install progress). */
#define INSTALL_PHASE_LIST(X)                                          \
	/* waiting for the signed manifest */                          \
	X(INSTALL_PHASE_MANIFEST, "manifest", "verify")                \
	/* streaming payloads to flash */                              \
	X(INSTALL_PHASE_WRITE, "write", "write")                       \
	/* reading back */                                             \
	X(INSTALL_PHASE_VERIFY, "verify", "readback")                  \
	/* the env store */                                            \
	X(INSTALL_PHASE_ACTIVATE, "activate", "activate")              \
	X(INSTALL_PHASE_DONE, "done", "done")                          \
	X(INSTALL_PHASE_FAILED, "failed", "failed")

enum install_phase {
	INSTALL_PHASE_LIST(STRING_TABLE_ENUM)
	_INSTALL_PHASE_MAX,
};

/* What an install does with a bundle older than the running slot's
 * version (version_compare(), Debian's order): flashd.conf downgrade=. */
#define INSTALL_DOWNGRADE_POLICY_LIST(X)                               \
	/* installed, said in its record */                            \
	X(INSTALL_DOWNGRADE_POLICY_ALLOW, "allow")                     \
	/* installed, logged as a warning and said in its record */    \
	X(INSTALL_DOWNGRADE_POLICY_WARN, "warn")                       \
	/* refused before anything is written (-EPERM), unless the     \
	 * caller allows it (install_params.allow_downgrade) */        \
	X(INSTALL_DOWNGRADE_POLICY_REFUSE, "refuse")

enum install_downgrade_policy {
	INSTALL_DOWNGRADE_POLICY_LIST(STRING_TABLE_ENUM)
	_INSTALL_DOWNGRADE_POLICY_MAX,
};

/* What the policy did with this install's bundle. */
#define INSTALL_DOWNGRADE_LIST(X)                                       \
	/* not older than the running slot's version, or no version    \
	 * to compare with (no slot running, none recorded) */          \
	X(INSTALL_DOWNGRADE_NONE, "none")                              \
	X(INSTALL_DOWNGRADE_REFUSED, "refused")                        \
	X(INSTALL_DOWNGRADE_WARNED, "warned")                          \
	X(INSTALL_DOWNGRADE_ALLOWED, "allowed")                        \
	/* refused by the policy, installed by the caller's override */ \
	X(INSTALL_DOWNGRADE_OVERRIDDEN, "overridden")

enum install_downgrade {
	INSTALL_DOWNGRADE_LIST(STRING_TABLE_ENUM)
	_INSTALL_DOWNGRADE_MAX,
};

/* Where the running slot's version compared with came from. */
#define INSTALL_VERSION_FROM_LIST(X)                                    \
	/* none compared (no slot running, no version recorded) */      \
	X(INSTALL_VERSION_FROM_NONE, "none")                           \
	/* the signed manifest kept for the slot, verified again        \
	 * (block_record_manifest_load()) */                            \
	X(INSTALL_VERSION_FROM_MANIFEST, "manifest")                   \
	/* none kept (an older flashd's install, an unsigned bundle, a  \
	 * key retired since): the env's FLASHD_<x>_VERSION */         \
	X(INSTALL_VERSION_FROM_ENV, "env")                             \
	/* a kept manifest that does not verify: no version trusted,    \
	 * the install taken for a downgrade */                         \
	X(INSTALL_VERSION_FROM_UNVERIFIED, "unverified")

enum install_version_from {
	INSTALL_VERSION_FROM_LIST(STRING_TABLE_ENUM)
	_INSTALL_VERSION_FROM_MAX,
};

struct install_progress {
	enum install_phase phase;
	unsigned percent;         /* 0..100 over the whole install */
	uint64_t done;            /* bytes of work done: written + read back */
	uint64_t total;           /* 2 x the images' sizes, 0 before the manifest */
	const char *image;        /* slot member being written or verified */
	const char *slot;         /* target slot, NULL before the manifest */
};

struct install_stats {
	uint64_t bytes_written;   /* payload bytes streamed */
	uint64_t bytes_verified;
	uint64_t erases;          /* erase operations on the target */
	uint64_t blocks_written;
	uint64_t blocks_skipped;  /* unchanged erase blocks left as they were */
	uint64_t blocks_bad;      /* bad blocks skipped */
	/* adaptive installs (install_run_source on a random-access source): */
	uint64_t blocks_read;     /* flash blocks read to compare with the index */
	uint64_t blocks_erased;   /* found erased by their first page: not read whole */
	uint64_t blocks_recorded; /* the slot's block record named them (read all the same) */
	uint64_t blocks_stale;    /* of those, read otherwise (rot, ECC, a write): rewritten */
	uint64_t bytes_fetched;   /* bundle bytes read from the source */
	uint64_t blocks_copied;   /* written from the other slot instead of fetched */
	/* format 3: assembled from chunks on the board (missing ranges
	 * fetched), assemblies that did not match (fetched whole), bytes the
	 * board's chunks gave */
	uint64_t blocks_assembled, blocks_assembly_failed, bytes_local;
	bool adaptive;            /* the install took the adaptive path */
	time_t started, finished;
	enum install_downgrade downgrade;
	/* the running slot's version the bundle's was compared with ("":
	 * none compared) and where it came from */
	char running_version[BUNDLE_VERSION_MAX + 1];
	enum install_version_from running_version_from;
};

/* Which slot of the group an install writes, decided once, before the
 * bundle is read (the daemon, before its worker starts) and handed down
 * (install_params.decided): the named slot, or in A/B the one that is not
 * booted; never the running root. */
struct install_slot {
	int target;      /* index in the group; -1: none (error says why) */
	int booted;      /* the running slot; -1: the root is on no slot */
	int error;       /* 0, or -errno: no target. -EBUSY: it could be or is
			  * the running root (a refusal before anything starts);
			  * -ENOENT, -EINVAL: no slot named where none can be told */
	struct error err;
};

struct install_params {
	struct board *board;              /* where the slots are */
	const char *target;               /* board target for the env: "system" / "sim:PATH" */
	const struct layout_slot_group *group; /* NULL = the layout's first */
	const char *cmdline;              /* to find the booted slot; NULL = /proc/cmdline */
	const char *slot;                 /* force the target slot (provisioning); NULL = inactive */
	/* The decision install_slot_decide() made for this install (the
	 * daemon's, before its worker started), used as it is; NULL: the
	 * engine makes it when the manifest is read (slot above). */
	const struct install_slot *decided;
	const struct keyring *keyring;
	bool allow_unsigned;
	bool activate;                    /* step 5 (false: leave the slot written, marked bad) */
	/* A bundle older than the booted slot's version: refused, warned
	 * about or allowed (0: allowed, for callers with no policy, e.g.
	 * provisioning, where no slot runs); allow_downgrade: the caller
	 * (root or an authorized user of the daemon) overrides a refusal. */
	enum install_downgrade_policy downgrade;
	bool allow_downgrade;
	/* Where the slots' block records live (block_record.h): dropped
	 * before a slot member is written, saved after it verified, used by
	 * adaptive installs. NULL: none kept (an adaptive install then reads
	 * and compares every block). */
	const char *state_dir;
	/* Called on every phase change and about every erase block of work. */
	void (*progress)(void *userdata, const struct install_progress *p);
	void *userdata;
};

struct install;

/* The one decision of the target slot: slot named (NULL: the slot of an
 * A/B group that is not booted), the booted one found where w says.
 * Always fills *ret; returns ret->error. */
int install_slot_decide(const struct layout *l, const struct layout_slot_group *g,
			const char *cmdline, const char *target, const char *slot,
			struct install_slot *ret);

int install_new(const struct install_params *p, struct install **ret);
void install_free(struct install *in);
static inline void install_freep(struct install **in) { if (*in) install_free(*in); }
#define _cleanup_install_ __attribute__((cleanup(install_freep)))

/* Feed bundle bytes. -errno on failure (err says what); the target slot
 * stays marked bad and the engine refuses further input. */
int install_feed(struct install *in, const void *buf, size_t len, struct error *err);
/* End of the bundle stream: -ENODATA when it was cut short. */
int install_finish_input(struct install *in, struct error *err);
/* One bounded piece of the verify/activate work: 1 = call again, 0 = done. */
int install_step(struct install *in, struct error *err);
/* Stop: the slot stays marked bad (if it was marked already: the env is
 * untouched when nothing was written yet); later calls return -ECANCELED.
 * No effect on an install that is done (the slot is activated). */
void install_cancel(struct install *in);

/* Blocking: read fd to EOF in chunks, then step to the end. cancel, when
 * not NULL, is polled between chunks and every 200 ms while fd has no data
 * (a signal handler may set it; a stalled pipe cannot delay a cancel). The
 * daemon's install worker and flashctl provision both run installs so. */
int install_run_fd(struct install *in, int fd, volatile int *cancel, struct error *err);
/* The same from a source (source.h). A random-access source with a format
 * 2.0 bundle whose images are all uncompressed, for raw (NOR/NAND) slot
 * partitions whose erase size is the index's block size, takes the
 * adaptive path (install_index.h): only the blocks the slot does not
 * already hold are fetched (source_pread) and written, only written
 * blocks are read back, and an interrupted install resumes where it
 * stopped. Anything else streams as install_run_fd does. */
int install_run_source(struct install *in, struct source *src, volatile int *cancel,
		       struct error *err);

enum install_phase install_get_phase(const struct install *in);
const char *install_phase_to_string(enum install_phase p);
const char *install_downgrade_policy_to_string(enum install_downgrade_policy p);
int install_downgrade_policy_from_string(const char *s);
const char *install_downgrade_to_string(enum install_downgrade d);
const char *install_version_from_to_string(enum install_version_from f);
int install_version_from_from_string(const char *s);   /* enum or -EINVAL */
const struct install_stats *install_get_stats(const struct install *in);
/* NULL before the manifest. */
const struct bundle_manifest *install_get_manifest(const struct install *in);
const char *install_get_slot(const struct install *in);
/* Size in bytes of the reader's and writers' buffers (bounded memory check). */
size_t install_mem_peak(const struct install *in);
