#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_record.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "env.h"
#include "flashio.h"
#include "hash.h"
#include "install.h"
#include "install_index.h"
#include "slot.h"
#include "slot_boot.h"
#include "slot_change.h"
#include "ubi_image.h"
#include "util.h"

/* How payloads are written: unchanged erase blocks are left alone, blocks
 * failing erase/program are marked bad and the data moves on, and every
 * programmed block is read back once, right away, and compared with the
 * bytes it was programmed from (which the bundle's sha256 covers). */
#define WRITE_FLAGS (FLASHIO_CHANGED_ONLY | FLASHIO_MARK_BAD | FLASHIO_VERIFY)

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

struct install;

/* How an image reaches its storage: raw partitions through the flash
 * layer (erase blocks, bad blocks, unchanged blocks skipped), UBI volumes
 * through one volume update. Each op reports through fail(). */
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
	struct block_record *recs[BUNDLE_MAX_IMAGES]; /* trusted block records of the targets */
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

static const char *const install_phase_table[] = { INSTALL_PHASE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(install_phase, enum install_phase)

static int env_change(struct install *in, enum slot_op op, const char *version);

/* Once the target is marked bad, the end of the install is recorded in
 * one more store: failed or cancelled, and (again) out of BOOT_ORDER,
 * whatever another writer did to the env in between. */
static void record_end(struct install *in, int r)
{
	char msg[sizeof(in->err.msg)];

	if (!in->marked_bad || in->recorded)
		return;
	in->recorded = true;
	snprintf(msg, sizeof(msg), "%s", in->err.msg);
	in->error = 0; /* env_change reports through fail() */
	if (env_change(in, r == -ECANCELED ? SLOT_OP_INSTALL_CANCELLED : SLOT_OP_INSTALL_FAILED,
		       NULL) < 0) {
		size_t len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, " (and recording it failed: %.160s)",
			 in->err.msg);
	}
	snprintf(in->err.msg, sizeof(in->err.msg), "%s", msg);
	in->error = r;
}

/* The install failed with r, in->err says why (set by the caller, or by
 * the part that failed writing into in->err directly). */
static int failed(struct install *in, int r)
{
	if (in->error)
		return in->error;
	in->error = r;
	in->phase = INSTALL_PHASE_FAILED;
	in->stats.finished = time(NULL);
	record_end(in, r);
	return r;
}

static _printf_(3, 4) int fail(struct install *in, int r, const char *fmt, ...)
{
	va_list ap;

	if (in->error)
		return in->error;
	va_start(ap, fmt);
	error_setv(&in->err, r, fmt, ap);
	va_end(ap);
	return failed(in, r);
}

static int report(struct install *in, int r, struct error *err)
{
	if (r < 0 && err)
		*err = in->err;
	return r;
}

static const char *slot_name(const struct install *in)
{
	return in->slot >= 0 ? in->group->slots[in->slot].name : NULL;
}

static void progress(struct install *in, const char *image)
{
	struct install_progress pr = {
		.phase = in->phase,
		.done = in->stats.bytes_written + in->stats.bytes_verified,
		.total = in->total,
		.image = image,
		.slot = slot_name(in),
	};

	if (!in->p.progress)
		return;
	/* an adaptive install's ticks count blocks skipped as done too */
	pr.done = in->done_shown = MAX(pr.done, in->done_shown);
	pr.percent = in->phase == INSTALL_PHASE_DONE ? 100 :
		     pr.total ? (unsigned)(pr.done * 99 / pr.total) : 0;
	in->p.progress(in->p.userdata, &pr);
}

/* ---- env transactions: exactly one store each ---- */

static int env_change(struct install *in, enum slot_op op, const char *version)
{
	_cleanup_env_ struct env *e = NULL;
	struct slot_change_result res;
	char var[64];
	int r;

	if (in->error)
		return in->error;
	/* the parts below write their message into in->err directly */
	error_clear(&in->err);
	r = env_open_layout(in->layout, in->p.target, NULL, 0, &e, &in->err);
	if (r < 0)
		return failed(in, error_prefix(&in->err, r, "cannot open the U-Boot env"));
	/* the version goes with the content: forgotten when writing starts,
	 * set when the read-back verified */
	slot_version_var(in->group->slots[in->slot].name, var, sizeof(var));
	r = slot_change(e, in->group, &(struct slot_change) {
			.op = op, .slot = in->slot, .booted = -1,
			.flags = op == SLOT_OP_INSTALL_FAILED || op == SLOT_OP_INSTALL_CANCELLED ?
				 SLOT_FORCE : 0,
			.extra_name = op == SLOT_OP_INSTALL_BEGIN || version ? var : NULL,
			.extra_value = version }, &res, &in->err);
	if (r < 0 && res.fail == SLOT_CHANGE_ENV && res.before.n_slots)
		return failed(in, error_prefix(&in->err, r, "writing the U-Boot env (%s)",
					       env_describe(e)));
	if (r < 0)
		return failed(in, error_prefix(&in->err, r, "slot state"));
	return 0;
}

/* ---- manifest: pick the target, check room, mark it bad ---- */

static int pick_slot(struct install *in)
{
	int booted;

	if (in->p.slot) {
		booted = slot_booted(in->p.cmdline, in->layout, in->group, NULL, NULL);
		for (size_t i = 0; i < in->group->n_slots; i++) {
			if (strcmp(in->group->slots[i].name, in->p.slot))
				continue;
			/* the running root is never written (an unknown booted slot
			 * is a board being provisioned from outside) */
			if ((int)i == booted)
				return fail(in, -EBUSY, "refusing to install into slot %s: it is the "
					    "booted slot (the running root); the env is unchanged",
					    in->p.slot);
			return (int)i;
		}
		return fail(in, -ENOENT, "slot group '%s' has no slot '%s'", in->group->name,
			    in->p.slot);
	}
	booted = slot_booted(in->p.cmdline, in->layout, in->group, NULL, &in->err);
	if (booted == -ENOENT)
		return fail(in, -ENOENT, "cannot tell which slot is booted (no flashd.slot=, "
			    "rauc.slot= or matching root= in %s): refusing to guess the target",
			    in->p.cmdline ? in->p.cmdline : "/proc/cmdline");
	if (booted < 0)
		return failed(in, error_prefix(&in->err, booted, "booted slot"));
	/* A/B: the target is the one that is not running */
	return in->group->n_slots == 2 ? 1 - booted : fail(in, -EINVAL, "slot group '%s' "
			"has %zu slots; name the target", in->group->name, in->group->n_slots);
}

static const struct layout_image_target *member_target(const struct layout_slot *s,
						       const char *member)
{
	if (!strcmp(member, "rootfs"))
		return &s->rootfs;
	if (!strcmp(member, "kernel") && s->has_kernel)
		return &s->kernel;
	return NULL;
}

static int raw_open(struct install *in, struct install_target *t)
{
	const struct layout_partition *part = t->lt->part;
	int r;

	snprintf(t->where, sizeof(t->where), "partition '%s'", part->name);
	r = board_open_partition(in->p.board, part, &t->flash);
	if (r < 0)
		return fail(in, r, "cannot open partition '%s' for image '%s': %s", part->name,
			    t->img->slot, strerror(-r));
	if (!t->flash->writable)
		return fail(in, -EROFS, "partition '%s' for image '%s' is read-only", part->name,
			    t->img->slot);
	return 0;
}

static int ubi_open(struct install *in, struct install_target *t)
{
	const struct flash_ubi_volume *v;
	int r;

	snprintf(t->where, sizeof(t->where), "UBI volume '%s'", t->lt->ubi_volume);
	error_clear(&in->err);
	r = ubi_image_open(in->p.board, t->lt, &t->ubi, &in->err);
	if (r < 0)
		return failed(in, error_prefix(&in->err, r, "image '%s'", t->img->slot));
	v = ubi_image_volume(t->ubi);
	if (t->img->size > flash_ubi_volume_size(v))
		return fail(in, -EFBIG, "image '%s' (%" PRIu64 " bytes) is larger than UBI volume "
			    "'%s' (%" PRIu64 " bytes)", t->img->slot, t->img->size, v->name,
			    flash_ubi_volume_size(v));
	return 0;
}

static const struct target_ops *const target_ops_table[_LAYOUT_STORAGE_MAX];

static int open_target(struct install *in, struct install_target *t)
{
	t->ops = target_ops_table[t->lt->storage];
	if (!t->ops)
		return fail(in, -EOPNOTSUPP, "image '%s': %s slots are not written by this "
			    "version of flashd", t->img->slot,
			    layout_storage_to_string(t->lt->storage));
	return t->ops->open(in, t);
}

/* A writer holds one erase block, and its compare copy for CHANGED_ONLY. */
static size_t writer_mem(const struct install_target *t)
{
	return (size_t)t->flash->info.erasesize *
	       ((WRITE_FLAGS & (FLASHIO_CHANGED_ONLY | FLASHIO_VERIFY)) ? 2 : 1);
}

static int on_manifest(void *userdata, const struct bundle_manifest *m, struct error *err)
{
	struct install *in = userdata;
	const struct layout_slot *s;
	int r;

	r = pick_slot(in);
	if (r < 0)
		goto refuse;
	in->slot = r;
	s = &in->group->slots[in->slot];
	for (size_t i = 0; i < m->n_images; i++) {
		struct install_target *t = &in->targets[i];
		t->img = &m->images[i];
		t->lt = member_target(s, t->img->slot);
		if (!t->lt) {
			r = fail(in, -ENXIO, "bundle image '%s' has no place in slot %s of group "
				 "'%s'", t->img->slot, s->name, in->group->name);
			goto refuse;
		}
		/* the group's image type is the root filesystem's; the env is untouched yet */
		if (!strcmp(t->img->slot, "rootfs") && in->group->image_type &&
		    strcmp(bundle_image_type_to_string(t->img->type), in->group->image_type)) {
			r = fail(in, -EMEDIUMTYPE, "image 'rootfs' is of type %s; slot group '%s' "
				 "takes %s images", bundle_image_type_to_string(t->img->type),
				 in->group->name, in->group->image_type);
			goto refuse;
		}
		if (t->lt->storage != LAYOUT_STORAGE_UBI && t->lt->part &&
		    t->img->size > t->lt->part->size) {
			r = fail(in, -EFBIG, "image '%s' (%" PRIu64 " bytes) is larger than "
				 "partition '%s' (%" PRIu64 " bytes)", t->img->slot, t->img->size,
				 t->lt->part->name, t->lt->part->size);
			goto refuse;
		}
		in->total += 2 * t->img->size;
	}
	in->n_targets = m->n_images;
	for (size_t i = 0; i < in->n_targets; i++)
		if ((r = open_target(in, &in->targets[i])) < 0)
			goto refuse;
	/* The slot is marked bad right before its first byte is written
	 * (mark_bad_once), not here: a bundle refused for its first image's
	 * squashfs superblock, or cut short before any payload, leaves the env
	 * as it was. */
	in->phase = INSTALL_PHASE_WRITE;
	progress(in, NULL);
	return 0;
refuse:
	return r;
}

static struct install_target *target_of(struct install *in, const struct bundle_image *img)
{
	return img->index < in->n_targets ? &in->targets[img->index] : NULL;
}

/* A block record never outlives the first write of what it describes:
 * each target's goes (durably) before the mark-bad store. */
static int drop_records(struct install *in)
{
	for (size_t i = 0; in->p.state_dir && i < in->n_targets; i++) {
		int r = block_record_drop(in->p.state_dir, in->group->name, slot_name(in),
					  in->targets[i].img->slot);
		if (r < 0)
			return fail(in, r, "cannot delete the block record of image '%s' in %s: %s; "
				    "nothing was written", in->targets[i].img->slot, in->p.state_dir,
				    strerror(-r));
	}
	return 0;
}

/* Nothing on flash changes before this single store. */
static int mark_bad_once(struct install *in, struct error *err)
{
	int r;

	if (in->marked_bad)
		return 0;
	r = drop_records(in);
	if (r < 0)
		return r;
	r = env_change(in, SLOT_OP_INSTALL_BEGIN, NULL);
	if (r < 0)
		return r;
	in->marked_bad = true;
	return 0;
}

/* One writer at a time: memory stays at one erase block (and its compare
 * copy) however many images the bundle has. */
static int on_image_begin(void *userdata, const struct bundle_image *img, struct error *err)
{
	struct install *in = userdata;
	struct install_target *t = target_of(in, img);
	int r;

	if (!t) {
		r = fail(in, -EINVAL, "image %u '%s' is not in the manifest the install planned for",
			 img->index, img->slot);
		return r;
	}
	/* the adaptive path reads no payload through the reader */
	if (in->adaptive)
		return 0;
	r = t->ops->begin(in, t);
	if (r < 0)
		return r;
	in->current = t;
	return 0;
}

/* The flash counters so far: finished images plus the one being written,
 * so a failed install reports what it did to the flash. */
static void sync_writer_stats(struct install *in, const struct install_target *t)
{
	const struct flashio_stats *st = flashio_writer_stats(t->writer);

	in->stats.erases = in->closed.erases + st->erases;
	in->stats.blocks_written = in->closed.blocks_written + st->blocks_written;
	in->stats.blocks_skipped = in->closed.blocks_skipped + st->blocks_identical;
	in->stats.blocks_bad = in->closed.blocks_bad + st->blocks_bad_skipped +
			       st->blocks_marked_bad;
	in->stats.bytes_verified = in->closed.bytes_verified + st->bytes_verified;
}

static int raw_begin(struct install *in, struct install_target *t)
{
	int r = flashio_writer_new(t->flash, WRITE_FLAGS, &t->writer);

	if (r < 0)
		return fail(in, r, "partition '%s' for image '%s': %s", t->lt->part->name,
			    t->img->slot, strerror(-r));
	in->buf_peak = MAX(in->buf_peak, writer_mem(t));
	return 0;
}

/* The writer failed at the block at flashio_writer_offset(): in the write,
 * or in the read-back of a block it programmed. */
static int raw_write_failed(struct install *in, struct install_target *t, int r)
{
	uint64_t at = flashio_writer_offset(t->writer);

	if (r == -EBADMSG || r == -EILSEQ)
		return fail(in, -EBADMSG, "read-back of image '%s' from partition '%s' at 0x%"
			    PRIx64 ": %s; slot %s stays marked bad", t->img->slot,
			    t->lt->part->name, at, r == -EBADMSG ? "uncorrectable ECC error" :
			    "the flash did not keep what was written", slot_name(in));
	return fail(in, r, "writing image '%s' to partition '%s' at offset 0x%" PRIx64 ": %s",
		    t->img->slot, t->lt->part->name, at,
		    r == -ENOSPC ? "no good erase block left (too many bad blocks)" : strerror(-r));
}

static int raw_data(struct install *in, struct install_target *t, const void *buf, size_t len)
{
	int r = flashio_writer_write_all(t->writer, buf, len);

	sync_writer_stats(in, t);
	return r < 0 ? raw_write_failed(in, t, r) : 0;
}

static int raw_end(struct install *in, struct install_target *t)
{
	t->written = flashio_writer_finish(t->writer);
	sync_writer_stats(in, t);
	if (t->written < 0)
		return raw_write_failed(in, t, (int)t->written);
	flashio_writer_free(t->writer);
	t->writer = NULL;
	return 0;
}

/* A volume update is started with the first byte (after the mark-bad
 * store, like any write) and needs no buffer of ours: UBI collects LEBs. */
static int ubi_begin(struct install *in, struct install_target *t)
{
	(void)in;
	(void)t;
	return 0;
}

/* UBI writes every LEB of the volume: no block is skipped as unchanged. */
static void ubi_stats(struct install *in, const struct install_target *t, uint64_t bytes)
{
	uint32_t leb = ubi_image_volume(t->ubi)->leb_size;

	in->stats.blocks_written = in->closed.blocks_written + (leb ? DIV_ROUND_UP(bytes, leb) : 0);
}

static int ubi_data(struct install *in, struct install_target *t, const void *buf, size_t len)
{
	int r;

	error_clear(&in->err);
	r = ubi_image_write(t->ubi, t->img->size, buf, len, &in->err);
	if (r < 0)
		return failed(in, error_prefix(&in->err, r, "writing image '%s'", t->img->slot));
	t->written += len;
	ubi_stats(in, t, t->written);
	return 0;
}

static int ubi_end(struct install *in, struct install_target *t)
{
	int r;

	error_clear(&in->err);
	r = ubi_image_finish(t->ubi, t->img->size, &in->err);
	if (r < 0)
		return failed(in, error_prefix(&in->err, r, "finishing image '%s'", t->img->slot));
	ubi_stats(in, t, t->img->size);
	return 0;
}

/* The image being written, once its slot is marked bad (mark_bad_once). */
static int current_target(struct install *in, struct install_target **ret, struct error *err)
{
	int r = mark_bad_once(in, err);

	if (r < 0)
		return r;
	*ret = in->current;
	return 0;
}

static int on_image_data(void *userdata, const struct bundle_image *img, const void *buf,
			 size_t len, struct error *err)
{
	struct install *in = userdata;
	struct install_target *t;
	int r = current_target(in, &t, err);

	if (r >= 0)
		r = t->ops->data(in, t, buf, len);
	if (r < 0)
		return r;
	in->stats.bytes_written += len;
	progress(in, img->slot);
	return 0;
}

static int on_image_end(void *userdata, const struct bundle_image *img, struct error *err)
{
	struct install *in = userdata;
	struct install_target *t;
	/* an empty image still changes the slot: never written unmarked */
	int r = current_target(in, &t, err);

	if (r >= 0)
		r = t->ops->end(in, t);
	if (r < 0)
		return r;
	in->closed = in->stats;
	in->current = NULL;
	return 0;
}

static const struct bundle_reader_ops reader_ops = {
	.manifest = on_manifest,
	.image_begin = on_image_begin,
	.image_data = on_image_data,
	.image_end = on_image_end,
};

/* ---- life cycle ---- */

int install_new(const struct install_params *p, struct install **ret)
{
	_cleanup_(install_freep) struct install *in = calloc(1, sizeof(*in));
	int r;

	if (!in)
		return -ENOMEM;
	in->p = *p;
	in->layout = board_layout(p->board);
	in->group = p->group ? p->group : in->layout->n_groups ? &in->layout->groups[0] : NULL;
	if (!in->group)
		return -ENOENT;
	in->slot = -1;
	in->policy = (struct bundle_policy){
		.keyring = p->keyring,
		.allow_unsigned = p->allow_unsigned,
		.compatible = in->layout->compatible,
	};
	r = bundle_reader_new(&in->policy, &reader_ops, in, &in->reader);
	if (r < 0)
		return r;
	in->stats.started = time(NULL);
	*ret = TAKE_PTR(in);
	return 0;
}

void install_free(struct install *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		if (in->targets[i].ops)
			in->targets[i].ops->close(&in->targets[i]);
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++) {
		block_record_free(in->recs[i]);
		block_record_free(in->other_recs[i]);
		flash_close(in->other_flash[i]);
	}
	free(in->vbuf);
	bundle_reader_free(in->reader);
	free(in);
}

int install_feed(struct install *in, const void *buf, size_t len, struct error *err)
{
	int r;

	if (in->error)
		return report(in, in->error, err);
	if (in->phase != INSTALL_PHASE_MANIFEST && in->phase != INSTALL_PHASE_WRITE)
		return report(in, fail(in, -EINVAL, "bundle data after the end of the bundle"), err);
	/* the reader and the callbacks below it write into in->err */
	r = bundle_reader_feed(in->reader, buf, len, &in->err);
	if (r < 0)
		return report(in, failed(in, r), err);
	return 0;
}

int install_finish_input(struct install *in, struct error *err)
{
	int r;

	if (in->error)
		return report(in, in->error, err);
	r = bundle_reader_finish(in->reader, &in->err);
	if (r < 0)
		return report(in, failed(in, r), err);
	if (in->phase != INSTALL_PHASE_WRITE)
		return report(in, fail(in, -ENODATA, "the bundle ended before its manifest"), err);
	in->phase = INSTALL_PHASE_VERIFY;
	progress(in, NULL);
	return 0;
}

void install_cancel(struct install *in)
{
	/* done means activated: there is nothing left to stop */
	if (in->phase == INSTALL_PHASE_DONE)
		return;
	if (in->marked_bad)
		fail(in, -ECANCELED, "cancelled; slot %s stays marked bad", slot_name(in));
	else if (slot_name(in))
		fail(in, -ECANCELED, "cancelled before anything was written to slot %s; the env "
		     "is unchanged", slot_name(in));
	else
		fail(in, -ECANCELED, "cancelled before the manifest (no slot chosen yet); the env "
		     "is unchanged");
}

/* ---- verify: read every written byte back, one erase block per step ----
 * Raw partitions need no step here: their writer read each programmed block
 * back as it went (WRITE_FLAGS). UBI volumes are read back and hashed. */

static size_t ubi_read_unit(const struct install_target *t)
{
	return ubi_image_volume(t->ubi)->leb_size;
}

/* At the end of a static volume's update the kernel reads every LEB back
 * and checks it against the data CRC it computed from the bytes we wrote
 * (vol_cdev_write -> ubi_check_volume, regardless of skip_check), and
 * ubi_image_finish() refused a volume it found corrupted, still marked
 * updating or of another size. The bytes we wrote matched the signed
 * sha256 as they streamed, so reading the volume a second time would only
 * repeat that check (issue 18: it made flashd the slowest of the three on
 * the UBI board). Dynamic volumes get no such check: read back. */
static bool ubi_read_back_done(const struct install_target *t)
{
	return ubi_image_volume(t->ubi)->is_static;
}

static int ubi_verify_begin(struct install *in, struct install_target *t)
{
	(void)in;
	(void)t;
	return 0;
}

/* Through the volume: UBI has corrected what it could (and scrubs the PEB);
 * an uncorrectable LEB reads as -EBADMSG. */
static ssize_t ubi_read(struct install *in, struct install_target *t, void *buf, size_t len)
{
	uint64_t off = t->img->size - in->vleft;
	ssize_t n = ubi_image_read(t->ubi, off, buf, len);

	if (n == 0)
		n = -ENOSPC;
	if (n < 0)
		return fail(in, (int)n, "read-back of image '%s' from UBI volume '%s' at %" PRIu64
			    ": %s; slot %s stays marked bad", t->img->slot, t->lt->ubi_volume, off,
			    n == -ENOSPC ? "the volume holds less than the image" : strerror((int)-n),
			    slot_name(in));
	return n;
}

static void raw_close(struct install_target *t)
{
	flashio_writer_free(t->writer);
	t->writer = NULL;
	flash_close(t->flash);
	t->flash = NULL;
}

static void ubi_close(struct install_target *t)
{
	ubi_image_free(t->ubi);
	t->ubi = NULL;
}

static const struct target_ops raw_ops = {
	.open = raw_open, .begin = raw_begin, .data = raw_data, .end = raw_end,
	.close = raw_close, /* verified while written */
};

static const struct target_ops ubi_ops = {
	.open = ubi_open, .begin = ubi_begin, .data = ubi_data, .end = ubi_end,
	.read_unit = ubi_read_unit, .verify_begin = ubi_verify_begin, .read = ubi_read,
	.read_back_done = ubi_read_back_done, .close = ubi_close,
};

static const struct target_ops *const target_ops_table[_LAYOUT_STORAGE_MAX] = {
	[LAYOUT_STORAGE_NOR] = &raw_ops,
	[LAYOUT_STORAGE_NAND] = &raw_ops,
	[LAYOUT_STORAGE_UBI] = &ubi_ops,
};

static int verify_begin(struct install *in, struct install_target *t)
{
	size_t unit = t->ops->read_unit(t);
	int r;

	if (in->vbuf_size < unit) {
		free(in->vbuf);
		in->vbuf = malloc(unit);
		if (!in->vbuf)
			return -ENOMEM;
		in->vbuf_size = unit;
	}
	in->buf_peak = MAX(in->buf_peak, in->vbuf_size);
	r = t->ops->verify_begin(in, t);
	if (r < 0)
		return r;
	hash_init(&in->md);
	in->vleft = t->img->size;
	in->verifying = true;
	return 0;
}

static int verify_end(struct install *in, struct install_target *t)
{
	uint8_t md[HASH_SIZE];

	hash_final(&in->md, md);
	if (memcmp(md, t->img->sha256, sizeof(md)))
		return fail(in, -EBADMSG, "read-back of image '%s' from %s does not "
			    "match its sha256: the flash did not keep what was written; slot %s "
			    "stays marked bad", t->img->slot, t->where, slot_name(in));
	in->verifying = false;
	in->verify_idx++;
	return 0;
}

static int verify_step(struct install *in)
{
	struct install_target *t = &in->targets[in->verify_idx];
	ssize_t n;
	int r;

	if (!t->ops->read || (t->ops->read_back_done && t->ops->read_back_done(t))) {
		in->verify_idx++;
		return 0;
	}
	if (!in->verifying && (r = verify_begin(in, t)) < 0)
		return fail(in, r, "verify of image '%s': %s", t->img->slot, strerror(-r));
	if (in->vleft == 0)
		return verify_end(in, t);
	n = t->ops->read(in, t, in->vbuf, MIN(in->vleft, in->vbuf_size));
	if (n < 0)
		return (int)n;
	hash_update(&in->md, in->vbuf, n);
	in->vleft -= n;
	in->stats.bytes_verified += n;
	progress(in, t->img->slot);
	return 0;
}

/* What each raw target now holds, for the next adaptive install: saved
 * after the read-back verified and before the activation store, so a
 * power cut in between leaves a record the env does not vouch for
 * (installing, no version): unsure, read and compared. A record that
 * cannot be saved only costs the next install reads. */
static void save_records(struct install *in)
{
	const struct bundle_manifest *m = bundle_reader_manifest(in->reader);
	const uint8_t *index = bundle_reader_index(in->reader);

	for (size_t i = 0; in->p.state_dir && index && i < in->n_targets; i++) {
		struct install_target *t = &in->targets[i];
		_cleanup_block_record_ struct block_record *rec = NULL;

		if (!t->flash || t->flash->info.erasesize != m->block_size ||
		    install_index_record(t->flash, t->img, index, &rec) < 0)
			continue;
		snprintf(rec->version, sizeof(rec->version), "%s", m->version);
		(void)block_record_save(in->p.state_dir, in->group->name, slot_name(in), t->img->slot,
					rec);
	}
}

int install_step(struct install *in, struct error *err)
{
	int r;

	if (in->error)
		return report(in, in->error, err);
	switch (in->phase) {
	case INSTALL_PHASE_VERIFY:
		r = in->verify_idx < in->n_targets ? verify_step(in) : 0;
		if (r < 0)
			return report(in, r, err);
		if (in->verify_idx == in->n_targets) {
			in->phase = INSTALL_PHASE_ACTIVATE;
			progress(in, NULL);
		}
		return 1;
	case INSTALL_PHASE_ACTIVATE:
		save_records(in);
		/* --no-activate still records the verified content and its version */
		r = env_change(in, in->p.activate ? SLOT_OP_INSTALL_ACTIVATE :
			       SLOT_OP_INSTALL_VERIFIED, bundle_reader_manifest(in->reader)->version);
		if (r < 0)
			return report(in, r, err);
		in->phase = INSTALL_PHASE_DONE;
		in->stats.finished = time(NULL);
		progress(in, NULL);
		return 0;
	case INSTALL_PHASE_DONE:
		return 0;
	case INSTALL_PHASE_MANIFEST:
	case INSTALL_PHASE_WRITE:
	case INSTALL_PHASE_FAILED:
	case _INSTALL_PHASE_MAX:
		break;
	}
	return report(in, fail(in, -EINVAL, "install_step in phase %s",
			       install_phase_to_string(in->phase)), err);
}

/* Some bundle bytes, or 0 at the end. poll() with a short timeout, and a
 * look at *cancel in between: a stalled stream (a pipe or socket whose
 * writer stopped sending) cannot make a cancel wait forever. */
static ssize_t read_some(int fd, uint8_t *buf, size_t len, volatile int *cancel)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r;

		if (util_cancelled(cancel))
			return -ECANCELED;
		r = poll(&p, 1, cancel ? 200 : -1);
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		n = read(fd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

/* After the input: verify and activate, polling cancel between steps. */
static int run_steps(struct install *in, volatile int *cancel, struct error *err)
{
	int r = 0;

	while (r >= 0) {
		if (util_cancelled(cancel)) {
			install_cancel(in);
			return report(in, in->error, err);
		}
		r = install_step(in, err);
		if (r == 0)
			break;
	}
	return r;
}

int install_run_fd(struct install *in, int fd, volatile int *cancel, struct error *err)
{
	_cleanup_free_ uint8_t *buf = malloc(BUNDLE_INFLATE_CHUNK);
	ssize_t n;
	int r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = read_some(fd, buf, BUNDLE_INFLATE_CHUNK, cancel);
		if (n == -ECANCELED) {
			install_cancel(in);
			return report(in, in->error, err);
		}
		if (n < 0)
			return report(in, fail(in, (int)n, "reading the bundle: %s",
					       strerror((int)-n)), err);
		if (n == 0)
			break;
		r = install_feed(in, buf, n, err);
		if (r < 0)
			return r;
	}
	r = install_finish_input(in, err);
	return r < 0 ? r : run_steps(in, cancel, err);
}

/* ---- install_run_source: adaptive when the source and bundle allow ---- */

/* Feed the next len bytes of the source (len UINT64_MAX: to its end). */
static int feed_source(struct install *in, struct source *src, uint64_t len, uint8_t *buf,
		       volatile int *cancel)
{
	while (len > 0) {
		ssize_t n;
		int r;

		if (util_cancelled(cancel)) {
			install_cancel(in);
			return in->error;
		}
		error_clear(&in->err);
		n = source_read(src, buf, MIN(len, (uint64_t)BUNDLE_INFLATE_CHUNK), &in->err);
		if (n == -ECANCELED) {
			install_cancel(in);
			return in->error;
		}
		if (n < 0)
			return failed(in, error_prefix(&in->err, (int)n, "reading the bundle"));
		if (n == 0)
			return len == UINT64_MAX ? 0 : install_finish_input(in, NULL);
		if (len != UINT64_MAX)
			len -= n;
		r = install_feed(in, buf, n, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Feed a part of the bundle's head (manifest and signatures, index) whose
 * length is known: a network source fetches exactly it, so an unchanged
 * slot costs the head's bytes and no more. */
static int feed_head(struct install *in, struct source *src, uint64_t len, uint8_t *buf,
		     volatile int *cancel)
{
	source_expect(src, len);
	return feed_source(in, src, len, buf, cancel);
}

/* Adaptive: every image uncompressed, on a raw partition whose erase
 * block is the index's block. gzip images (a block cannot be fetched
 * without inflating all before it) and UBI volumes (written by one
 * volume update) take the stream path. */
static bool adaptive_fits(const struct install *in)
{
	const struct bundle_manifest *m = bundle_reader_manifest(in->reader);

	if (!m || !m->block_size || in->phase != INSTALL_PHASE_WRITE)
		return false;
	for (size_t i = 0; i < in->n_targets; i++) {
		const struct install_target *t = &in->targets[i];
		if (!t->flash || t->img->compression != BUNDLE_COMPRESSION_NONE ||
		    t->flash->info.erasesize != m->block_size)
			return false;
	}
	return true;
}

/* A record is trusted only while the env still says the slot holds the
 * verified content it describes, and the flash has the same bad blocks. */
static bool record_trusted(struct env *e, const char *slot, const struct block_record *rec,
			   struct flash *f)
{
	_cleanup_free_ char *ver = NULL, *state = NULL;
	char var[64];
	int st;

	if (!block_record_matches_flash(rec, f))
		return false;
	slot_version_var(slot, var, sizeof(var));
	if (env_get(e, var, &ver) < 0 || strcmp(ver, rec->version))
		return false;
	slot_record_var(slot, var, sizeof(var));
	if (env_get(e, var, &state) < 0)
		return false;
	st = slot_record_from_string(state);
	return st == SLOT_RECORD_VERIFIED || st == SLOT_RECORD_GOOD;
}

/* A trusted record of member of slot, or NULL. */
static struct block_record *trusted_record(struct install *in, struct env *e, const char *slot,
					   const char *member, struct flash *f)
{
	struct block_record *rec = NULL;

	if (block_record_load(in->p.state_dir, in->group->name, slot, member, &rec) < 0)
		return NULL;
	/* the env vouches for it; a few blocks read back confirm that
	 * nothing outside flashd rewrote the slot since */
	if (record_trusted(e, slot, rec, f) && block_record_spot_check(rec, f, 4) == 1)
		return rec;
	block_record_free(rec);
	return NULL;
}

/* The other slot's partition for target i (the running one in A/B), and
 * its trusted record: blocks to copy instead of fetch. */
static void load_other(struct install *in, struct env *e, size_t i)
{
	const struct layout_slot *o;
	const struct layout_image_target *lt;
	struct flash *f = NULL;

	if (in->group->n_slots != 2)
		return;
	o = &in->group->slots[1 - in->slot];
	lt = member_target(o, in->targets[i].img->slot);
	if (!lt || !lt->part || (lt->storage != LAYOUT_STORAGE_NOR &&
				 lt->storage != LAYOUT_STORAGE_NAND) ||
	    board_open_partition(in->p.board, lt->part, &f) < 0)
		return;
	in->other_recs[i] = trusted_record(in, e, o->name, in->targets[i].img->slot, f);
	if (in->other_recs[i])
		in->other_flash[i] = f;
	else
		flash_close(f);
}

/* Before the mark-bad store changes what the env says. */
static void load_records(struct install *in)
{
	_cleanup_env_ struct env *e = NULL;

	if (!in->p.state_dir || env_open_layout(in->layout, in->p.target, NULL, 0, &e, NULL) < 0)
		return;
	for (size_t i = 0; i < in->n_targets; i++) {
		in->recs[i] = trusted_record(in, e, slot_name(in), in->targets[i].img->slot,
					     in->targets[i].flash);
		load_other(in, e, i);
	}
}

static void add_index_stats(struct install *in, const struct install_index_stats *st)
{
	in->stats.blocks_read += st->blocks_read;
	in->stats.blocks_erased += st->blocks_erased;
	in->stats.blocks_trusted += st->blocks_trusted;
	in->stats.blocks_skipped += st->blocks_trusted + st->blocks_same;
	in->stats.blocks_written += st->blocks_written;
	in->stats.blocks_copied += st->blocks_copied;
	in->stats.blocks_bad += st->blocks_bad;
	in->stats.erases += st->erases;
	in->stats.bytes_written += st->bytes_written;
	in->stats.bytes_verified += st->bytes_written;
}

/* The adaptive path never reads the bundle to its end, so the stream
 * path's trailing-data and truncation checks are made here, from the
 * source's size, before anything is written. */
static int check_size(struct install *in, const struct source *src)
{
	const struct bundle_manifest *m = bundle_reader_manifest(in->reader);

	if (src->size == m->total_size)
		return 0;
	return failed(in, error_set(&in->err, -EBADMSG, "the bundle is %" PRIu64 " bytes, its "
				    "manifest describes %" PRIu64 " (%s); nothing was written",
				    src->size, m->total_size, src->size > m->total_size ?
				    "trailing data after the last image" : "truncated"));
}

struct adaptive_tick {
	struct install *in;
	const struct install_target *t;
	uint64_t before;          /* bytes of the images written before this one */
	volatile int *cancel;
};

/* Progress by blocks classified and settled (a skipped block counts as
 * done: it is already what the image needs), and the cancel between
 * blocks. */
static int adaptive_tick(void *userdata, uint64_t done, const struct install_index_stats *st)
{
	struct adaptive_tick *a = userdata;
	struct install *in = a->in;
	/* done is in half blocks: done x erase size = image bytes x 2 */
	uint64_t twice = done * a->t->flash->info.erasesize;

	(void)st;
	if (util_cancelled(a->cancel))
		return -ECANCELED;
	if (in->p.progress) {
		struct install_progress pr = {
			.phase = in->phase, .total = in->total,
			.image = a->t->img->slot, .slot = slot_name(in),
		};
		/* written + read back, as a stream counts them */
		pr.done = in->done_shown = MAX(2 * a->before + MIN(twice, 2 * a->t->img->size),
					       in->done_shown);
		pr.percent = pr.total ? (unsigned)(pr.done * 99 / pr.total) : 0;
		in->p.progress(in->p.userdata, &pr);
	}
	return 0;
}

static int write_adaptive(struct install *in, struct source *src, volatile int *cancel)
{
	struct adaptive_tick at = { .in = in, .cancel = cancel };
	const struct bundle_manifest *m = bundle_reader_manifest(in->reader);
	int r = mark_bad_once(in, NULL);

	for (size_t i = 0; r >= 0 && i < in->n_targets; i++) {
		struct install_target *t = &in->targets[i];
		struct install_index_stats st = { 0 };
		struct install_index_image ii = { t->flash, t->img, m->block_size,
						  bundle_reader_index(in->reader), in->recs[i],
						  in->other_flash[i], in->other_recs[i],
						  adaptive_tick, &at };

		if (util_cancelled(cancel)) {
			install_cancel(in);
			return in->error;
		}
		error_clear(&in->err);
		at.t = t;
		r = install_index_write(&ii, src, &st, NULL, &in->err);
		at.before += t->img->size;
		add_index_stats(in, &st);
		if (r == -ECANCELED) {
			install_cancel(in);
			return in->error;
		}
		in->stats.bytes_fetched = src->fetched;
		if (r < 0)
			return failed(in, error_prefix(&in->err, r, "image '%s' on %s; slot %s stays "
						       "marked bad", t->img->slot, t->where,
						       slot_name(in)));
		progress(in, t->img->slot);
	}
	if (r < 0)
		return r;
	/* every block was read back, compared or vouched for against the
	 * signed index: nothing is left to read back */
	in->verify_idx = in->n_targets;
	in->phase = INSTALL_PHASE_VERIFY;
	return 0;
}

int install_run_source(struct install *in, struct source *src, volatile int *cancel,
		       struct error *err)
{
	_cleanup_free_ uint8_t *buf = malloc(BUNDLE_INFLATE_CHUNK);
	uint8_t h[BUNDLE_HEADER_SIZE];
	unsigned major, minor, n_sigs;
	uint32_t msize;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	src->cancel = cancel;
	/* the framing up to the index: header, manifest, signatures */
	for (size_t got = 0; got < sizeof(h);) {
		ssize_t n = source_read(src, h + got, sizeof(h) - got, &in->err);
		if (n < 0)
			return report(in, failed(in, error_prefix(&in->err, (int)n,
								  "reading the bundle")), err);
		if (n == 0)
			return report(in, install_finish_input(in, NULL), err);
		r = install_feed(in, h + got, n, NULL);
		if (r < 0)
			return report(in, r, err);
		got += n;
	}
	if (bundle_header_parse(h, &major, &minor, &msize, &n_sigs, NULL) >= 0)
		r = feed_head(in, src, msize + (uint64_t)n_sigs * BUNDLE_SIG_ENTRY_SIZE, buf, cancel);
	if (r >= 0 && source_can_pread(src) && src->size && adaptive_fits(in)) {
		r = check_size(in, src);
		if (r >= 0)
			load_records(in);
		in->adaptive = in->stats.adaptive = true;
		if (r >= 0)
			r = feed_head(in, src, bundle_reader_manifest(in->reader)->index_size, buf,
				      cancel);
		if (r >= 0)
			r = write_adaptive(in, src, cancel);
	} else if (r >= 0) {
		r = feed_source(in, src, UINT64_MAX, buf, cancel);
		if (r >= 0)
			r = install_finish_input(in, NULL);
	}
	in->stats.bytes_fetched = src->fetched;
	if (r < 0)
		return report(in, in->error ? in->error : r, err);
	return run_steps(in, cancel, err);
}

enum install_phase install_get_phase(const struct install *in) { return in->phase; }
const struct install_stats *install_get_stats(const struct install *in) { return &in->stats; }
const struct bundle_manifest *install_get_manifest(const struct install *in)
{
	return bundle_reader_manifest(in->reader);
}
const char *install_get_slot(const struct install *in) { return slot_name(in); }
size_t install_mem_peak(const struct install *in)
{
	/* writers and the read-back buffer never coexist (writers are freed
	 * at their image's end, verify starts after the last one) */
	return in->buf_peak + bundle_reader_mem_peak(in->reader);
}
