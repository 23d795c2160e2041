/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The image targets of an install, by storage (struct target_ops,
 * install-internal.h): raw NOR/NAND partitions through flashio, UBI
 * volumes through ubi_image.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "flashio.h"
#include "install-internal.h"
#include "slot_seal.h"
#include "ubi_image.h"
#include "util.h"

/* How payloads are written: unchanged erase blocks are left alone, blocks
 * failing erase/program are marked bad and the data moves on, and every
 * programmed block is read back once, right away, and compared with the
 * bytes it was programmed from (which the bundle's sha256 covers). */
#define WRITE_FLAGS (FLASHIO_CHANGED_ONLY | FLASHIO_MARK_BAD | FLASHIO_VERIFY)

/* ---- raw partitions: through flashio, erase block by erase block ---- */

static int raw_open(struct install *in, struct install_target *t)
{
	const struct layout_partition *part = t->lt->part;
	int r;

	snprintf(t->where, sizeof(t->where), "partition '%s'", part->name);
	r = board_open_partition(in->p.board, part, &t->flash);
	if (r < 0)
		return install_fail(in, r, "cannot open partition '%s' for image '%s': %s",
				    part->name, t->img->slot, strerror(-r));
	if (!t->flash->writable)
		return install_fail(in, -EROFS, "partition '%s' for image '%s' is read-only",
				    part->name, t->img->slot);
	return 0;
}

/* A writer holds one erase block, and its compare copy for CHANGED_ONLY. */
static size_t writer_mem(const struct install_target *t)
{
	return (size_t)t->flash->info.erasesize *
	       ((WRITE_FLAGS & (FLASHIO_CHANGED_ONLY | FLASHIO_VERIFY)) ? 2 : 1);
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
		return install_fail(in, r, "partition '%s' for image '%s': %s", t->lt->part->name,
				    t->img->slot, strerror(-r));
	in->buf_peak = MAX(in->buf_peak, writer_mem(t));
	return 0;
}

/* The writer failed at the block at flashio_writer_offset(): in the write,
 * or in the read-back of a block it programmed, erased and programmed
 * again and could not mark bad. The bytes matched what the bundle signs:
 * a read-back that fails is the flash's fault (-EIO), not the bundle's. */
static int raw_write_failed(struct install *in, struct install_target *t, int r)
{
	uint64_t at = flashio_writer_offset(t->writer);

	if (r == -EBADMSG || r == -EILSEQ)
		return install_fail(in, -EIO, "flash I/O error: read-back of image '%s' from "
				    "partition '%s' at 0x%" PRIx64 " failed twice (%s) and the block "
				    "could not be marked bad; slot %s stays marked bad", t->img->slot,
				    t->lt->part->name, at,
				    r == -EBADMSG ? "uncorrectable ECC error" :
				    "the flash did not keep what was written",
				    install_slot_name(in));
	return install_fail(in, r, "writing image '%s' to partition '%s' at offset 0x%" PRIx64
			    ": %s", t->img->slot, t->lt->part->name, at,
			    r == -ENOSPC ? "no good erase block left (too many bad blocks)" :
			    strerror(-r));
}

static int raw_data(struct install *in, struct install_target *t, const void *buf, size_t len)
{
	int r = flashio_writer_write_all(t->writer, buf, len);

	sync_writer_stats(in, t);
	return r < 0 ? raw_write_failed(in, t, r) : 0;
}

bool install_target_sealed(const struct install *in, const struct install_target *t)
{
	return in->group->seal && t->lt == &in->group->slots[in->slot].rootfs;
}

uint64_t install_target_room(const struct install *in, const struct install_target *t)
{
	return install_target_sealed(in, t) ? slot_seal_offset(&in->group->slots[in->slot]) :
	       t->lt->part->size;
}

static int raw_end(struct install *in, struct install_target *t)
{
	t->written = flashio_writer_finish(t->writer);
	sync_writer_stats(in, t);
	if (t->written < 0)
		return raw_write_failed(in, t, (int)t->written);
	/* bad blocks stepped over can push the image into the seal block */
	if (flashio_writer_offset(t->writer) > install_target_room(in, t))
		return install_fail(in, -ENOSPC, "image '%s' reaches the seal block of partition "
				    "'%s' (bad blocks stepped over): no room for the seal; slot "
				    "%s stays marked bad", t->img->slot, t->lt->part->name,
				    install_slot_name(in));
	flashio_writer_free(t->writer);
	t->writer = NULL;
	return 0;
}

/* One erase block of the adaptive path, through a writer of its own on
 * a window of the block: FLASHIO_MARK_BAD | FLASHIO_VERIFY, no compare
 * (the block is known to differ). */
static int raw_program_block(struct install_target *t, uint64_t at, const void *buf, size_t len,
			     struct flashio_stats *ret)
{
	_cleanup_flash_ struct flash *w = NULL;
	_cleanup_flashio_writer_ struct flashio_writer *wr = NULL;
	int r;

	*ret = (struct flashio_stats){ 0 };
	r = flash_open_window(t->flash, NULL, at, t->flash->info.erasesize, &w);
	if (r >= 0)
		r = flashio_writer_new(w, FLASHIO_MARK_BAD | FLASHIO_VERIFY, &wr);
	if (r >= 0)
		r = flashio_writer_write_all(wr, buf, len);
	if (r >= 0)
		r = (int)MIN(flashio_writer_finish(wr), 0);
	if (wr)
		*ret = *flashio_writer_stats(wr);
	return r;
}

static void raw_close(struct install_target *t)
{
	flashio_writer_free(t->writer);
	t->writer = NULL;
	flash_close(t->flash);
	t->flash = NULL;
}

/* ---- UBI volumes: one volume update each, through ubi_image.c ---- */

static int ubi_open(struct install *in, struct install_target *t)
{
	const struct flash_ubi_volume *v;
	int r;

	snprintf(t->where, sizeof(t->where), "UBI volume '%s'", t->lt->ubi_volume);
	error_clear(&in->err);
	r = ubi_image_open(in->p.board, t->lt, &t->ubi, &in->err);
	if (r < 0)
		return install_failed(in, error_prefix(&in->err, r, "image '%s'", t->img->slot));
	v = ubi_image_volume(t->ubi);
	if (t->img->size > flash_ubi_volume_size(v))
		return install_fail(in, -EFBIG, "image '%s' (%" PRIu64 " bytes) is larger than "
				    "UBI volume '%s' (%" PRIu64 " bytes)", t->img->slot,
				    t->img->size, v->name, flash_ubi_volume_size(v));
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
		return install_failed(in, error_prefix(&in->err, r, "writing image '%s'",
						       t->img->slot));
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
		return install_failed(in, error_prefix(&in->err, r, "finishing image '%s'",
						       t->img->slot));
	ubi_stats(in, t, t->img->size);
	return 0;
}

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
	/* uncorrectable: the flash's fault, not the bundle's */
	if (n == -EBADMSG)
		return install_fail(in, -EIO, "flash I/O error: read-back of image '%s' from UBI "
				    "volume '%s' at %" PRIu64 ": uncorrectable ECC error; slot %s "
				    "stays marked bad", t->img->slot, t->lt->ubi_volume, off,
				    install_slot_name(in));
	if (n < 0)
		return install_fail(in, (int)n, "read-back of image '%s' from UBI volume '%s' "
				    "at %" PRIu64 ": %s; slot %s stays marked bad", t->img->slot,
				    t->lt->ubi_volume, off, n == -ENOSPC ?
				    "the volume holds less than the image" : strerror((int)-n),
				    install_slot_name(in));
	return n;
}

static void ubi_close(struct install_target *t)
{
	ubi_image_free(t->ubi);
	t->ubi = NULL;
}

static const struct target_ops raw_ops = {
	.open = raw_open, .begin = raw_begin, .data = raw_data, .end = raw_end,
	.program_block = raw_program_block, .close = raw_close, /* verified while written */
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

int install_target_open(struct install *in, struct install_target *t)
{
	t->ops = target_ops_table[t->lt->storage];
	if (!t->ops)
		return install_fail(in, -EOPNOTSUPP, "image '%s': %s slots are not written by "
				    "this version of flashd", t->img->slot,
				    layout_storage_to_string(t->lt->storage));
	return t->ops->open(in, t);
}
