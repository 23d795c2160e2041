/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Adaptive, resumable writes of an image onto a raw slot partition
 * (install_index.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "flashio.h"
#include "install_index.h"
#include "util.h"

enum block_state {
	BLOCK_KEEP,      /* the record names it: kept once read and hashed equal */
	BLOCK_SAME,      /* read, equal */
	BLOCK_CHANGED,   /* to fetch and write */
	BLOCK_COPY,      /* to write, from the other slot if it still holds it */
};

struct ix {
	const struct install_index_image *ii;
	struct source *src;
	struct install_index_stats *st;
	struct error *err;
	uint32_t es, part_blocks;
	uint64_t n;                  /* logical blocks */
	uint32_t *map;               /* physical block of each logical block */
	uint8_t *state;              /* enum block_state */
	uint8_t *buf;                /* one erase block */
	uint8_t *abuf;               /* the fetch-ahead's, swapped with buf */
	uint8_t ff_hash[32];         /* of a whole erased block, once computed */
	bool ff_hash_set;
};

static const uint8_t *want_hash(const struct ix *x, uint64_t k)
{
	return x->ii->index + (x->ii->img->index_first + k) * BUNDLE_HASH_SIZE;
}

static size_t block_len(const struct ix *x, uint64_t k)
{
	return (size_t)MIN((uint64_t)x->es, x->ii->img->size - k * x->es);
}

/* Logical blocks from k on go to the good blocks from physical p on. */
static int map_from(struct ix *x, uint64_t k, uint32_t p)
{
	for (; k < x->n; k++, p++) {
		int r;
		while (p < x->part_blocks &&
		       (r = flash_block_isbad(x->ii->flash, (uint64_t)p * x->es)) != 0) {
			if (r < 0)
				return error_set(x->err, r, "bad-block check of block %" PRIu32 ": %s", p,
						 strerror(-r));
			p++;
		}
		if (p == x->part_blocks)
			return error_set(x->err, -ENOSPC, "no good erase block left for block %" PRIu64
					 " of the image (too many bad blocks)", k);
		x->map[k] = p;
	}
	return 0;
}

static bool hash_is(const void *buf, size_t len, const uint8_t *want)
{
	uint8_t md[32];

	return bundle_index_sha256(buf, len, md) == 0 && !memcmp(md, want, 32);
}

static bool all_ff(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0xff && !memcmp(p, p + 1, n - 1));
}

/* 1: the first page of block k reads erased and the block must hold
 * something else (the image's data there is not all 0xFF); 0: look at the
 * whole block; -errno. A read error is left to the whole-block read. */
static int first_page_erased(struct ix *x, uint64_t k, size_t len)
{
	size_t page = MIN((size_t)MAX(x->ii->flash->info.writesize, 2048u), len);
	uint8_t ff[32], *h = len == x->es ? x->ff_hash : ff;
	int r;

	r = flash_read(x->ii->flash, (uint64_t)x->map[k] * x->es, x->buf, page);
	if (r < 0 || !all_ff(x->buf, page))
		return 0;
	if (h == ff || !x->ff_hash_set) {
		memset(x->buf, 0xff, len);
		if (bundle_index_sha256(x->buf, len, h) < 0)
			return -EIO;
		x->ff_hash_set |= h == x->ff_hash;
	}
	return memcmp(h, want_hash(x, k), 32) ? 1 : 0;
}

/* What block k needs: the record says where to look (a block it names is
 * read later, overlapping the writes), else read and compare. An ECC
 * correction or failure makes it "changed": rewriting it scrubs it. */
static int classify(struct ix *x, uint64_t k)
{
	const struct block_record *rec = x->ii->rec;
	size_t len = block_len(x, k);
	int r;

	/* the record says what was written there: another hash is fetched
	 * without a read; the same hash is read before it is kept */
	if (rec && k < rec->n_blocks && rec->phys[k] == x->map[k]) {
		bool same = !memcmp(rec->hashes + k * 32, want_hash(x, k), 32);
		x->state[k] = same ? BLOCK_KEEP : BLOCK_CHANGED;
		x->st->blocks_recorded += same;
		return 0;
	}
	/* an erased block (first page all 0xFF) cannot hold data the image
	 * needs, unless that data is all 0xFF too: one page, not the block */
	r = first_page_erased(x, k, len);
	if (r != 0) {
		if (r < 0)
			return r;
		x->state[k] = BLOCK_CHANGED;
		x->st->blocks_erased++;
		return 0;
	}
	r = flash_read(x->ii->flash, (uint64_t)x->map[k] * x->es, x->buf, len);
	x->st->blocks_read++;
	if (r < 0 && r != -EUCLEAN && r != -EBADMSG)
		return error_set(x->err, r, "reading block %" PRIu64 " (erase block %" PRIu32 "): %s",
				 k, x->map[k], strerror(-r));
	x->state[k] = r == 0 && hash_is(x->buf, len, want_hash(x, k)) ? BLOCK_SAME : BLOCK_CHANGED;
	if (x->state[k] == BLOCK_SAME)
		x->st->blocks_same++;
	return 0;
}

/* The erase block of the other slot that its record says holds what
 * block k needs, or -1. */
static int64_t other_has(const struct ix *x, uint64_t k)
{
	const struct block_record *o = x->ii->other_rec;

	for (uint32_t j = 0; o && x->ii->other && j < o->n_blocks; j++)
		/* equal hashes: equal bytes, of equal length */
		if (!memcmp(o->hashes + (uint64_t)j * 32, want_hash(x, k), 32))
			return o->phys[j];
	return -1;
}

/* One source_plan() for the blocks to fetch from k on, adjacent ones
 * coalesced: a network source fetches them in few requests. */
static int plan(struct ix *x, uint64_t k)
{
	_cleanup_free_ struct source_range *rs = NULL;
	size_t n = 0;

	rs = calloc(x->n - k + 1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	for (; k < x->n; k++) {
		uint64_t off = x->ii->img->offset + k * x->es;
		if (x->state[k] == BLOCK_CHANGED && other_has(x, k) >= 0)
			x->state[k] = BLOCK_COPY;
		if (x->state[k] != BLOCK_CHANGED)
			continue;
		if (n && rs[n - 1].off + rs[n - 1].len == off)
			rs[n - 1].len += block_len(x, k);
		else
			rs[n++] = (struct source_range){ off, block_len(x, k) };
	}
	return n ? source_plan(x->src, rs, n, x->err) : 0;
}

/* From the other slot, when it still holds what its record says (a
 * block that reads otherwise is fetched after all). 1: copied. */
static int copy_local(struct ix *x, uint64_t k)
{
	int64_t p = other_has(x, k);
	size_t len = block_len(x, k);
	int r;

	if (p < 0)
		return 0;
	r = flash_read(x->ii->other, (uint64_t)p * x->es, x->buf, len);
	if ((r < 0 && r != -EUCLEAN) || !hash_is(x->buf, len, want_hash(x, k)))
		return 0;
	x->st->blocks_copied++;
	return 1;
}

/* Into buf: only the source and the (read-only) index are touched, so
 * it may run on the fetch-ahead thread while block k-1 is programmed. */
static int fetch(const struct ix *x, uint64_t k, uint8_t *buf, struct error *err)
{
	size_t len = block_len(x, k);
	uint64_t off = x->ii->img->offset + k * x->es;
	ssize_t n = source_pread(x->src, buf, len, off, err);

	if (n < 0)
		return error_prefix(err, (int)n, "fetching block %" PRIu64, k);
	if ((size_t)n != len)
		return error_set(err, -ENODATA, "fetching block %" PRIu64 ": the bundle ends at "
				 "byte %" PRIu64 " (truncated)", k, off + n);
	/* what the source sent must be what was signed, before it is written */
	if (!hash_is(buf, len, want_hash(x, k)))
		return error_set(err, -EBADMSG, "block %" PRIu64 " (bundle bytes %" PRIu64 "..%"
				 PRIu64 ") does not match its sha256 in the signed index: the source "
				 "sent other bytes", k, off, off + len - 1);
	return 0;
}

/* Erase, program and read back block k at its place (flashio: a block
 * failing any of them, the read-back twice, is marked bad). 1: the block
 * went bad (marked), nothing written. A block that cannot be retired is a
 * flash fault, -EIO: the bytes matched the signed index when fetched. */
static int program(struct ix *x, uint64_t k)
{
	_cleanup_flash_ struct flash *w = NULL;
	_cleanup_flashio_writer_ struct flashio_writer *wr = NULL;
	uint64_t at = (uint64_t)x->map[k] * x->es;
	size_t len = block_len(x, k);
	const struct flashio_stats *fs;
	int r;

	r = flash_open_window(x->ii->flash, NULL, at, x->es, &w);
	if (r >= 0)
		r = flashio_writer_new(w, FLASHIO_MARK_BAD | FLASHIO_VERIFY, &wr);
	if (r >= 0)
		r = flashio_writer_write_all(wr, x->buf, len);
	if (r >= 0)
		r = (int)MIN(flashio_writer_finish(wr), 0);
	if (wr) {
		fs = flashio_writer_stats(wr);
		x->st->erases += fs->erases;
		x->st->blocks_bad += fs->blocks_marked_bad;
		if (fs->blocks_marked_bad)
			return 1;
	}
	if (r == -EBADMSG || r == -EILSEQ)
		return error_set(x->err, -EIO, "flash I/O error: read-back of block %" PRIu64
				 " (erase block %" PRIu32 ") failed twice (%s) and the block could "
				 "not be marked bad", k, x->map[k], r == -EBADMSG ?
				 "uncorrectable ECC error" : "the flash did not keep what was written");
	if (r < 0)
		return error_set(x->err, r, "writing block %" PRIu64 " to erase block %" PRIu32 ": %s",
				 k, x->map[k], strerror(-r));
	x->st->blocks_written++;
	x->st->bytes_written += len;
	return 0;
}

static int tick(struct ix *x, uint64_t done)
{
	return x->ii->tick ? x->ii->tick(x->ii->userdata, done, x->st) : 0;
}

/* The next block from k on still to settle (to keep once read, or to
 * write), or n. */
static uint64_t next_pending(const struct ix *x, uint64_t k)
{
	while (k < x->n && x->state[k] == BLOCK_SAME)
		k++;
	return k;
}

/* Block k, which the record names, read through f and hashed against the
 * signed index: true, it holds the block (kept); false, it is to rewrite
 * (another hash, an ECC correction or failure, a read error: whatever
 * the read says, never the record). Only f, buf and st are written: it
 * may run on the fetch-ahead thread. */
static bool kept_holds(const struct ix *x, struct flash *f, uint64_t k, uint8_t *buf,
		       struct install_index_stats *st)
{
	size_t len = block_len(x, k);
	int r = flash_read(f, (uint64_t)x->map[k] * x->es, buf, len);

	st->blocks_read++;
	if (r == 0 && hash_is(buf, len, want_hash(x, k))) {
		st->blocks_same++;
		return true;
	}
	st->blocks_stale++;
	return false;
}

/* Fetch-ahead: while block k is erased, programmed and read back (the
 * worker waits on the flash), a second thread settles what follows: it
 * reads and hashes the blocks to keep (through ii->verify, at most
 * AHEAD_KEEP_MAX), then fetches and hashes the next block to write, so
 * flash reads, network/file and SHA-256 time hide behind flash writes.
 * It stops before a block copied from the other slot (that flash is the
 * main thread's) and, without a verify handle, before a block to keep.
 * The source sees one reader at a time, in order. */
struct ahead {
	const struct ix *x;
	pthread_t th;
	bool running;
	uint64_t k;          /* the first block it settles */
	uint64_t upto;       /* it settled k..upto-1 (kept, verified) */
	bool fetched;        /* and abuf holds block upto, to write */
	struct install_index_stats st; /* its counts, added at the join */
	struct error err;    /* the thread's, handed to x->err on failure */
	int r;
};

/* Nice steps below the worker's main thread: hashing may wait for the
 * daemon's answers and for the thread that drives the flash (on a
 * 2-core board with busy-waiting flash it took the daemon's core:
 * GetStatus p99 during an install 4.5 -> 9.4 ms). Ahead is not on the
 * critical path while the flash is slower than the hash. */
#define AHEAD_NICE 5
/* Blocks to keep it reads per start: about what one block's program
 * hides; the main thread reads the rest of a longer run itself, ticking
 * progress and polling cancel between blocks. */
#define AHEAD_KEEP_MAX 8

static int ahead_settle(struct ahead *a)
{
	const struct ix *x = a->x;
	uint64_t j = a->k;
	unsigned kept = 0;

	for (; j < x->n; j = next_pending(x, j + 1)) {
		if (x->state[j] == BLOCK_KEEP) {
			if (!x->ii->verify || kept++ == AHEAD_KEEP_MAX)
				break;
			if (kept_holds(x, x->ii->verify, j, x->abuf, &a->st))
				continue;
			/* the main thread looks at blocks from k on only after the join */
			x->state[j] = BLOCK_CHANGED;
		}
		if (x->state[j] == BLOCK_CHANGED) {
			int r = fetch(x, j, x->abuf, &a->err);
			if (r < 0)
				return r;
			a->fetched = true;
		}
		break;
	}
	a->upto = j;
	return 0;
}

static void *ahead_main(void *p)
{
	struct ahead *a = p;

	/* this thread only; failing leaves the priority as it was */
	(void)util_lower_priority(AHEAD_NICE);
	a->r = ahead_settle(a);
	return NULL;
}

static void ahead_start(struct ahead *a, uint64_t k)
{
	sigset_t all, old;

	a->k = a->upto = k;
	a->fetched = false;
	a->st = (struct install_index_stats){ 0 };
	error_clear(&a->err);
	/* signals (the worker's SIGTERM = cancel) stay with the main thread:
	 * the new one inherits a full mask. No thread: settled on the main
	 * thread when its turn comes. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	a->running = pthread_create(&a->th, NULL, ahead_main, a) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void add_stats(struct install_index_stats *to, const struct install_index_stats *st)
{
	to->blocks_read += st->blocks_read;
	to->blocks_same += st->blocks_same;
	to->blocks_stale += st->blocks_stale;
}

/* Wait for the fetch-ahead; true if it started at block k (what it
 * settled in a, its error in *r). */
static bool ahead_join(struct ix *x, struct ahead *a, uint64_t k, int *r)
{
	if (!a->running)
		return false;
	pthread_join(a->th, NULL);
	a->running = false;
	add_stats(x->st, &a->st);
	if (a->k != k)
		return false;
	*r = a->r;
	return true;
}

/* Block k, the next to settle, on the main thread: 1 a block to keep,
 * read and found equal; 0 its data in x->buf (from the other slot or
 * the source), to write; -errno. */
static int settle_here(struct ix *x, uint64_t k)
{
	if (x->state[k] == BLOCK_KEEP) {
		if (kept_holds(x, x->ii->flash, k, x->buf, x->st))
			return 1;
		x->state[k] = BLOCK_CHANGED;
	}
	if (x->state[k] == BLOCK_COPY && copy_local(x, k))
		return 0;
	return fetch(x, k, x->buf, x->err);
}

/* The next block to write from *k on, its data in x->buf, the blocks to
 * keep before it read and found equal: from the fetch-ahead when it
 * started at *k, else on this thread. *k = n: none left. */
static int take(struct ix *x, struct ahead *a, uint64_t *k)
{
	int r = 0;

	if (ahead_join(x, a, *k, &r)) {
		if (r < 0) {
			if (x->err)
				error_copy(x->err, &a->err);
			return r;
		}
		*k = a->upto;
		if (a->fetched) {
			uint8_t *t = x->buf;
			x->buf = x->abuf;
			x->abuf = t;
			return 0;
		}
	}
	for (; *k < x->n; *k = next_pending(x, *k + 1)) {
		if ((r = tick(x, x->n + *k)) < 0 || (r = settle_here(x, *k)) <= 0)
			return r;
	}
	return 0;
}

/* Settle the blocks from k0 on: keep the ones that read equal, write the
 * others. Returns the block that went bad (its successors must be placed
 * again), n, or -errno. */
static int64_t settle(struct ix *x, uint64_t k0, struct ahead *a)
{
	for (uint64_t k = next_pending(x, k0), kn; k < x->n; k = kn) {
		int r = tick(x, x->n + k);
		if (r >= 0)
			r = take(x, a, &k);
		if (r < 0)
			return r;
		if (k == x->n)
			break;
		kn = next_pending(x, k + 1);
		/* not for a block it would leave to this thread anyway */
		if (kn < x->n && (x->state[kn] == BLOCK_CHANGED ||
				  (x->state[kn] == BLOCK_KEEP && x->ii->verify)))
			ahead_start(a, kn);
		r = program(x, k);
		if (r != 0)
			return r < 0 ? r : (int64_t)k;
	}
	return (int64_t)x->n;
}

/* Classify, plan, fetch and write from logical block k0 on: the block
 * that went bad, n, or -errno. */
static int64_t pass(struct ix *x, uint64_t k0)
{
	struct ahead a = { .x = x };
	int64_t w;
	int r;

	/* progress in half blocks: blocks before k0 are settled (2 each),
	 * then one for each block classified, one for each settled (a slot
	 * without a record is read to classify it: that is real work too) */
	for (uint64_t k = k0; k < x->n; k++)
		if ((r = classify(x, k)) < 0 || (r = tick(x, k0 + k + 1)) < 0)
			return r;
	if ((r = plan(x, k0)) < 0)
		return r;
	w = settle(x, k0, &a);
	/* a fetch-ahead still running on an error, a cancel or a bad block */
	(void)ahead_join(x, &a, UINT64_MAX, &r);
	if (w != (int64_t)x->n)
		return w;
	r = tick(x, 2 * x->n);
	return r < 0 ? r : (int64_t)x->n;
}

static int run(struct ix *x)
{
	uint64_t k = 0;
	int r = map_from(x, 0, 0);

	while (r >= 0 && k < x->n) {
		int64_t bad = pass(x, k);
		if (bad < 0)
			return (int)bad;
		if ((uint64_t)bad == x->n)
			break;
		/* block `bad` found its erase block failing: it and all after
		 * it move on to the next good blocks */
		k = bad;
		r = map_from(x, k, x->map[k] + 1);
	}
	return r;
}

int install_index_write(const struct install_index_image *ii, struct source *src,
			struct install_index_stats *st, struct block_record **ret_rec,
			struct error *err)
{
	_cleanup_block_record_ struct block_record *rec = NULL;
	struct ix x = {
		.ii = ii, .src = src, .st = st, .err = err, .es = ii->flash->info.erasesize,
		.part_blocks = flash_blocks(ii->flash), .n = ii->img->n_blocks,
	};
	int r;

	if (ii->block_size != x.es)
		return error_set(err, -EINVAL, "index block size %" PRIu32 " is not the erase size %"
				 PRIu32, ii->block_size, x.es);
	if (x.n > x.part_blocks)
		return error_set(err, -EFBIG, "%" PRIu64 " blocks do not fit %" PRIu32 " erase blocks",
				 x.n, x.part_blocks);
	x.map = calloc(x.n + 1, sizeof(*x.map));
	x.state = calloc(x.n + 1, 1);
	x.buf = malloc(x.es);
	x.abuf = malloc(x.es);
	r = x.map && x.state && x.buf && x.abuf ? run(&x) : -ENOMEM;
	if (r >= 0 && ret_rec && (r = block_record_new(ii->flash, x.n, &rec)) >= 0) {
		rec->size = ii->img->size;
		memcpy(rec->image_sha256, ii->img->sha256, 32);
		memcpy(rec->phys, x.map, x.n * sizeof(*x.map));
		memcpy(rec->hashes, want_hash(&x, 0), x.n * BUNDLE_HASH_SIZE);
		*ret_rec = TAKE_PTR(rec);
	}
	free(x.map);
	free(x.state);
	free(x.buf);
	free(x.abuf);
	return r;
}

int install_index_record(struct flash *f, const struct bundle_image *img, const uint8_t *index,
			 struct block_record **ret)
{
	_cleanup_block_record_ struct block_record *rec = NULL;
	struct error err = {};
	struct install_index_image ii = { .flash = f, .img = img, .index = index };
	struct ix x = { .ii = &ii, .err = &err, .es = f->info.erasesize,
			.part_blocks = flash_blocks(f), .n = img->n_blocks };
	int r;

	if (x.n > x.part_blocks)
		return -EFBIG;
	r = block_record_new(f, x.n, &rec);
	if (r < 0)
		return r;
	x.map = rec->phys;
	r = map_from(&x, 0, 0);
	if (r < 0)
		return r;
	rec->size = img->size;
	memcpy(rec->image_sha256, img->sha256, 32);
	memcpy(rec->hashes, index + img->index_first * BUNDLE_HASH_SIZE, x.n * BUNDLE_HASH_SIZE);
	*ret = TAKE_PTR(rec);
	return 0;
}
