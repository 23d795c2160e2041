/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the parts of the update engine share (lib/update/install*.c): the
 * install itself, its image targets and the entry points one part calls
 * in another. Private to lib/update/, not a module of its own:
 * include/install.h is the engine's interface to the daemon, flashctl and
 * provisioning, and keeps struct install opaque to them. One part per
 * concern:
 *   install.c         the engine: plan (manifest, target slot), checks, the
 *                     reader's callbacks, read-back, env changes, result
 *   install_target.c  the image targets by storage: raw partitions through
 *                     flashio, UBI volumes through ubi_image.c
 *   install_run.c     the blocking runs: from an fd, from a source (adaptive
 *                     when the source and bundle allow) */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "block_record.h"
#include "bundle.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "error.h"
#include "flash.h"
#include "flashio.h"
#include "hash.h"
#include "install.h"
#include "layout.h"

struct install_target {
	const struct bundle_image *img;      /* from the manifest */
	const struct layout_image_target *lt;
	const struct target_ops *ops;        /* by lt->storage */
	char where[96];                      /* "partition 'rootfs-b'", "UBI volume 'rootfs_b'" */
	struct flash *flash;                 /* raw partitions */
	struct flashio_writer *writer;
	struct ubi_image *ubi;               /* UBI volumes */
	int64_t written;
};

/* How an image reaches its storage: raw partitions through the flash
 * layer (erase blocks, bad blocks, unchanged blocks skipped), UBI volumes
 * through one volume update. Each op reports through install_fail(). */
struct target_ops {
	int (*open)(struct install *in, struct install_target *t);
	int (*begin)(struct install *in, struct install_target *t);
	int (*data)(struct install *in, struct install_target *t, const void *buf, size_t len);
	int (*end)(struct install *in, struct install_target *t);
	/* read-back: buffer size, start, next bytes (0 at the end); NULL
	 * when the writer read each block back as it went */
	size_t (*read_unit)(const struct install_target *t);
	int (*verify_begin)(struct install *in, struct install_target *t);
	ssize_t (*read)(struct install *in, struct install_target *t, void *buf, size_t len);
	/* true when the storage itself read every written byte back and
	 * checked it at the end of the write: no second read */
	bool (*read_back_done)(const struct install_target *t);
	/* The adaptive path's write (install_index.c, through install_run.c):
	 * erase, program and read back the one erase block at byte at of
	 * the target (a block failing any of them, the read-back twice, is
	 * marked bad); *ret: what it did to the flash. 0 or -errno, no
	 * message (the caller names block and place). NULL: the storage is
	 * not written block by block (UBI: one volume update). */
	int (*program_block)(struct install_target *t, uint64_t at, const void *buf, size_t len,
			     struct flashio_stats *ret);
	void (*close)(struct install_target *t);
};

struct install {
	struct install_params p;
	const struct layout *layout;
	const struct layout_slot_group *group;
	struct bundle_policy policy;
	struct bundle_reader *reader;
	struct bundle_slot_limit limits[2];
	enum install_phase phase;
	int slot;                            /* target slot index in group */
	struct install_target targets[BUNDLE_MAX_IMAGES];
	size_t n_targets;
	struct install_target *current;      /* being written */
	bool adaptive;                       /* install_run_source writes block by block */
	struct block_record *recs[BUNDLE_MAX_IMAGES]; /* block records of the targets: hints */
	/* second read-only handles onto the targets, for the fetch-ahead
	 * thread's reads of the blocks to keep (NULL: read on the main one) */
	struct board *verify_board;
	struct flash *verify_flash[BUNDLE_MAX_IMAGES];
	/* the same members in the other (running) slot: read only */
	struct block_record *other_recs[BUNDLE_MAX_IMAGES];
	struct flash *other_flash[BUNDLE_MAX_IMAGES];
	bool marked_bad;                     /* the target slot's mark-bad store is done */
	bool recorded;                       /* its failed/cancelled store was tried */
	/* verify state */
	size_t verify_idx;
	bool verifying;                      /* verify_begin done for targets[verify_idx] */
	struct hash md;
	uint64_t vleft;
	uint8_t *vbuf;
	size_t vbuf_size;
	struct install_stats stats;
	struct install_stats closed;         /* flash counters of the images finished */
	uint64_t total;
	uint64_t done_shown;                 /* progress never steps back */
	int error;                           /* sticky */
	struct error err;
	size_t buf_peak;                     /* largest writer / read-back buffers held */
};

/* ---- install.c: helpers every part uses ---- */
/* The install failed with r, in->err says why (set by the caller, or by
 * the part that failed writing into in->err directly). */
int install_failed(struct install *in, int r);
/* The same with in->err set from fmt. */
_printf_(3, 4) int install_fail(struct install *in, int r, const char *fmt, ...);
/* r, and on failure the install's error copied into err (when not NULL). */
int install_report(struct install *in, int r, struct error *err);
/* The target slot's name, NULL before the manifest. */
const char *install_slot_name(const struct install *in);
/* Calls the progress callback (if any) with done bytes of work (written +
 * read back, 0..in->total); done never steps back. The one place of the
 * progress arithmetic, for the stream and the adaptive path alike. */
void install_progress_at(struct install *in, const char *image, uint64_t done);
/* The same with the bytes the stream path counted (written + verified). */
void install_progress(struct install *in, const char *image);
/* The place of bundle member "rootfs" or "kernel" in slot s, or NULL. */
const struct layout_image_target *install_member_target(const struct layout_slot *s,
							const char *member);
/* Nothing on flash changes before this single store. */
int install_mark_bad_once(struct install *in, struct error *err);
/* The adaptive path (install_run.c) wrote every image and read each
 * block back: the engine's transition to VERIFY with nothing left to read
 * back (then install_step() activates, as after a stream). */
int install_finish_adaptive(struct install *in);

/* ---- install_target.c ---- */
/* Opens t by its storage (lt->storage): t->ops, then the target's open. */
int install_target_open(struct install *in, struct install_target *t);
/* The target is the rootfs of a sealed slot (its partition ends in the seal
 * block, slot_seal.h); the bytes an image may take there. */
bool install_target_sealed(const struct install *in, const struct install_target *t);
uint64_t install_target_room(const struct install *in, const struct install_target *t);
