/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The blocking runs of an install (install.h): install_run_fd() streams
 * an fd into the engine, install_run_source() a source, adaptive (block by
 * block against the signed index, install_index.c) when the source and the
 * bundle allow; both step the engine to its end, polling cancel. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_record.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "install_index.h"
#include "install-internal.h"
#include "source.h"
#include "util.h"

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
			return install_report(in, in->error, err);
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
			return install_report(in, in->error, err);
		}
		if (n < 0)
			return install_report(in, install_fail(in, (int)n,
							       "reading the bundle: %s",
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
			return install_failed(in, error_prefix(&in->err, (int)n,
							       "reading the bundle"));
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
		if (!t->flash || !t->ops->program_block ||
		    t->img->compression != BUNDLE_COMPRESSION_NONE ||
		    t->flash->info.erasesize != m->block_size)
			return false;
	}
	return true;
}

/* The record of member of slot, or NULL: where to look first. One made
 * for another erase size or bad-block map places the blocks elsewhere and
 * is not used; any other is, block by block against the signed index, and
 * every block it says holds the right bytes is read before it is kept
 * (install_index.h): neither the env nor a version string vouches for
 * what is on the flash. */
static struct block_record *slot_record(struct install *in, const char *slot, const char *member,
					struct flash *f)
{
	struct block_record *rec = NULL;

	if (block_record_load(in->p.state_dir, in->group->name, slot, member, &rec) < 0)
		return NULL;
	if (block_record_matches_flash(rec, f))
		return rec;
	block_record_free(rec);
	return NULL;
}

/* The other slot's partition for target i (the running one in A/B), and
 * its record: blocks to copy instead of fetch, chunks to assemble blocks
 * from (each block checked against the index when read). Only read. */
static void load_other(struct install *in, size_t i)
{
	const struct layout_slot *o;
	const struct layout_image_target *lt;
	struct flash *f = NULL;

	if (in->group->n_slots != 2)
		return;
	o = &in->group->slots[1 - in->slot];
	lt = install_member_target(o, in->targets[i].img->slot);
	if (!lt || !lt->part || (lt->storage != LAYOUT_STORAGE_NOR &&
				 lt->storage != LAYOUT_STORAGE_NAND) ||
	    board_open_partition(in->p.board, lt->part, &f) < 0)
		return;
	if (in->p.state_dir)
		in->other_recs[i] = slot_record(in, o->name, in->targets[i].img->slot, f);
	/* without a record it is still read for chunks (format 3) */
	in->other_flash[i] = f;
}

/* A second handle onto each target's partition, through a board of its
 * own (a simulator's handle is shared by the windows of one board): the
 * fetch-ahead thread reads the blocks to keep through it. Only read;
 * opened writable as the install's board is, so that a simulator counts
 * the ECC failures those reads meet in its file, as the kernel counts
 * them for an MTD device (status shows them). Without one the blocks are
 * read on the main thread. */
static void open_verify(struct install *in)
{
	if (board_open(in->layout, in->p.target, true, &in->verify_board) < 0)
		return;
	for (size_t i = 0; i < in->n_targets; i++)
		if (board_open_partition(in->verify_board, in->targets[i].lt->part,
					 &in->verify_flash[i]) < 0)
			in->verify_flash[i] = NULL;
}

/* Before anything is written: the records of the target slot (dropped
 * by the mark-bad store) and of the other one. */
static void load_records(struct install *in)
{
	open_verify(in);
	for (size_t i = 0; i < in->n_targets; i++) {
		if (in->p.state_dir)
			in->recs[i] = slot_record(in, install_slot_name(in),
						  in->targets[i].img->slot, in->targets[i].flash);
		load_other(in, i);
	}
}

static void add_index_stats(struct install *in, const struct install_index_stats *st)
{
	in->stats.blocks_read += st->blocks_read;
	in->stats.blocks_erased += st->blocks_erased;
	in->stats.blocks_recorded += st->blocks_recorded;
	in->stats.blocks_stale += st->blocks_stale;
	in->stats.blocks_skipped += st->blocks_same;
	in->stats.blocks_written += st->blocks_written;
	in->stats.blocks_copied += st->blocks_copied;
	in->stats.blocks_assembled += st->blocks_assembled;
	in->stats.blocks_assembly_failed += st->blocks_assembly_failed;
	in->stats.bytes_local += st->bytes_local;
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
	return install_failed(in, error_set(&in->err, -EBADMSG, "the bundle is %" PRIu64
					    " bytes, its manifest describes %" PRIu64 " (%s); "
					    "nothing was written", src->size, m->total_size,
					    src->size > m->total_size ?
					    "trailing data after the last image" : "truncated"));
}

struct adaptive_tick {
	struct install *in;
	struct install_target *t;
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
	/* written + read back, as a stream counts them */
	install_progress_at(in, a->t->img->slot, 2 * a->before + MIN(twice, 2 * a->t->img->size));
	return 0;
}

/* Every block the adaptive path writes goes through the target's storage
 * handler (install_target.c), as the stream path's bytes do. */
static int adaptive_program(void *userdata, uint64_t at, const void *buf, size_t len,
			    struct flashio_stats *ret)
{
	struct adaptive_tick *a = userdata;
	struct install_target *t = a->t;

	return t->ops->program_block(t, at, buf, len, ret);
}

static int write_adaptive(struct install *in, struct source *src, volatile int *cancel)
{
	struct adaptive_tick at = { .in = in, .cancel = cancel };
	const struct bundle_manifest *m = bundle_reader_manifest(in->reader);
	int r = install_mark_bad_once(in, NULL);

	for (size_t i = 0; r >= 0 && i < in->n_targets; i++) {
		struct install_target *t = &in->targets[i];
		struct install_index_stats st = { 0 };
		struct install_index_image ii = {
			.flash = t->flash, .img = t->img, .block_size = m->block_size,
			.index = bundle_reader_index(in->reader), .rec = in->recs[i],
			.verify = in->verify_flash[i], .other = in->other_flash[i],
			.other_rec = in->other_recs[i], .tick = adaptive_tick,
			.program = adaptive_program, .userdata = &at,
			.m = m->format_major >= 3 ? m : NULL,
		};

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
			return install_failed(in, error_prefix(&in->err, r, "image '%s' on %s; "
							       "slot %s stays marked bad",
							       t->img->slot, t->where,
							       install_slot_name(in)));
		install_progress(in, t->img->slot);
	}
	return r < 0 ? r : install_finish_adaptive(in);
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
			return install_report(in, install_failed(in, error_prefix(&in->err, (int)n,
					"reading the bundle")), err);
		if (n == 0)
			return install_report(in, install_finish_input(in, NULL), err);
		r = install_feed(in, h + got, n, NULL);
		if (r < 0)
			return install_report(in, r, err);
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
		return install_report(in, in->error ? in->error : r, err);
	return run_steps(in, cancel, err);
}
