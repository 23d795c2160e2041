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

#include "chunk_seed.h"
#include "cleanup.h"
#include "flashio.h"
#include "install_index.h"
#include "util.h"

enum block_state {
	BLOCK_KEEP,      /* the record names it: kept once read and hashed equal */
	BLOCK_SAME,      /* read, equal */
	BLOCK_CHANGED,   /* to fetch and write */
	BLOCK_COPY,      /* to write, from the other slot if it still holds it */
	BLOCK_ASSEMBLE,  /* to write, from chunks on the board and fetched ranges */
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
	/* format 3 (chunk assembly), else NULL: */
	struct chunk_seed *seed;     /* the chunks on the board */
	uint64_t *coff;              /* image offset of each chunk, n_chunks + 1 */
	uint64_t *writer;            /* per physical block: the first block written there */
	uint8_t *erased;             /* per physical block: erased in this install */
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

/* A growable list of byte ranges of the bundle. */
struct ranges {
	struct source_range *r;
	size_t n, cap;
};

static int ranges_add(struct ranges *rs, uint64_t off, uint64_t len)
{
	if (rs->n && rs->r[rs->n - 1].off + rs->r[rs->n - 1].len == off) {
		rs->r[rs->n - 1].len += len;
		return 0;
	}
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 64;
		struct source_range *r = realloc(rs->r, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		rs->r = r;
		rs->cap = cap;
	}
	rs->r[rs->n++] = (struct source_range){ off, len };
	return 0;
}

/* The first chunk that ends after image byte off. */
static uint64_t chunk_at(const struct ix *x, uint64_t off)
{
	uint64_t lo = 0, hi = x->ii->img->n_chunks - 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (x->coff[mid + 1] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A chunk found on the board is usable for block k unless it lies (in
 * part) in an erase block of this slot that is erased by now or will be
 * before block k is written. The other slot's are always usable. */
static bool seed_usable(const struct ix *x, const struct chunk_seed_entry *e, uint64_t k)
{
	if (x->seed->src[e->src].flash != x->ii->flash)
		return true;
	for (uint64_t o = e->off; o < e->off + e->len;
	     o = (o / x->es + 1) * x->es) {
		uint32_t p = chunk_seed_phys(x->seed, e->src, o);
		if (x->erased[p] || x->writer[p] < k)
			return false;
	}
	return true;
}

/* How block k is assembled: each chunk of the image that overlaps it is
 * taken from the board when found there and usable (read into buf when
 * buf is not NULL; a chunk that does not read is fetched instead), the
 * other byte ranges are handed to miss (in order, adjacent ones merged).
 * Returns the bytes found on the board, or -errno. */
typedef int (*miss_fn)(struct ix *x, uint64_t k, uint64_t off, uint64_t len, void *ud);

static int64_t walk(struct ix *x, uint64_t k, uint8_t *buf, miss_fn miss, void *ud)
{
	const struct bundle_manifest *m = x->ii->m;
	uint64_t b0 = k * x->es, b1 = b0 + block_len(x, k), run = b0, run_len = 0;
	int64_t local = 0;
	int r;

	for (uint64_t c = chunk_at(x, b0); c < x->ii->img->n_chunks && x->coff[c] < b1; c++) {
		const uint8_t *ent = bundle_chunk_entry(m, x->ii->index, x->ii->img, c);
		const struct chunk_seed_entry *e =
			chunk_seed_find(x->seed, chunk_entry_len(ent), chunk_entry_hash(ent));
		uint64_t from = MAX(x->coff[c], b0), to = MIN(x->coff[c + 1], b1);

		if (e && seed_usable(x, e, k) &&
		    (!buf || chunk_seed_read(x->seed, e, from - x->coff[c], buf + (from - b0),
					     to - from) >= 0)) {
			if (run_len && (r = miss(x, k, run, run_len, ud)) < 0)
				return r;
			run_len = 0;
			local += to - from;
			continue;
		}
		if (!run_len)
			run = from;
		run_len += to - from;
	}
	if (run_len && (r = miss(x, k, run, run_len, ud)) < 0)
		return r;
	return local;
}

static int miss_plan(struct ix *x, uint64_t k, uint64_t off, uint64_t len, void *ud)
{
	(void)k;
	return ranges_add(ud, x->ii->img->offset + off, len);
}

/* The first block written on each physical block, as planned from k on
 * (the blocks before k are settled). */
static void plan_writers(struct ix *x, uint64_t k)
{
	for (uint32_t p = 0; p < x->part_blocks; p++)
		x->writer[p] = UINT64_MAX;
	for (; k < x->n; k++)
		if (x->state[k] != BLOCK_SAME && x->state[k] != BLOCK_KEEP &&
		    x->writer[x->map[k]] == UINT64_MAX)
			x->writer[x->map[k]] = k;
}

/* The ranges of block k to fetch: what assembly cannot find on the
 * board (all of it: the whole block, as one range). */
static int plan_block(struct ix *x, uint64_t k, struct ranges *rs)
{
	int64_t local;

	if (!x->seed)
		return ranges_add(rs, x->ii->img->offset + k * x->es, block_len(x, k));
	local = walk(x, k, NULL, miss_plan, rs);
	if (local > 0)
		x->state[k] = BLOCK_ASSEMBLE;
	return local < 0 ? (int)local : 0;
}

/* One source_plan() for the blocks (and, assembled, the byte ranges) to
 * fetch from k on, adjacent ones coalesced: a network source fetches them
 * in few requests. */
static int plan(struct ix *x, uint64_t k)
{
	struct ranges rs = { 0 };
	int r = 0;

	for (uint64_t j = k; j < x->n; j++)
		if (x->state[j] == BLOCK_CHANGED && other_has(x, j) >= 0)
			x->state[j] = BLOCK_COPY;
	if (x->seed)
		plan_writers(x, k);
	for (; r >= 0 && k < x->n; k++)
		if (x->state[k] == BLOCK_CHANGED)
			r = plan_block(x, k, &rs);
	if (r >= 0 && rs.n)
		r = source_plan(x->src, rs.r, rs.n, x->err);
	free(rs.r);
	return r;
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

/* Erase, program and read back block k at its place (the install's
 * storage handler, ii->program: a block failing any of them, the
 * read-back twice, is marked bad). 1: the block went bad (marked),
 * nothing written. A block that cannot be retired is a
 * flash fault, -EIO: the bytes matched the signed index when fetched. */
static int program(struct ix *x, uint64_t k)
{
	uint64_t at = (uint64_t)x->map[k] * x->es;
	size_t len = block_len(x, k);
	struct flashio_stats fs;
	int r;

	if (x->erased)
		x->erased[x->map[k]] = 1; /* its chunks are gone from here on */
	/* through the install's storage handler: the one writer of a slot */
	r = x->ii->program(x->ii->userdata, at, x->buf, len, &fs);
	x->st->erases += fs.erases;
	x->st->blocks_bad += fs.blocks_marked_bad;
	if (fs.blocks_marked_bad)
		return 1;
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

/* A missing range of block k, fetched into x->buf. */
static int miss_fetch(struct ix *x, uint64_t k, uint64_t off, uint64_t len, void *ud)
{
	uint64_t at = x->ii->img->offset + off;
	ssize_t n = source_pread(x->src, x->buf + (off - k * x->es), len, at, x->err);

	(void)ud;
	if (n < 0)
		return error_prefix(x->err, (int)n, "fetching bytes %" PRIu64 "..%" PRIu64
				    " of block %" PRIu64, at, at + len - 1, k);
	if ((uint64_t)n != len)
		return error_set(x->err, -ENODATA, "fetching block %" PRIu64 ": the bundle ends at "
				 "byte %" PRIu64 " (truncated)", k, at + n);
	return 0;
}

/* Block k from the chunks on the board and the fetched rest, into
 * x->buf: 1 when it is what the signed index says, 0 when not (a chunk
 * read otherwise than when it was scanned: bit rot, a write since) and it
 * is to fetch whole, -errno. */
static int assemble(struct ix *x, uint64_t k)
{
	int64_t local = walk(x, k, x->buf, miss_fetch, NULL);

	if (local < 0)
		return (int)local;
	if (!hash_is(x->buf, block_len(x, k), want_hash(x, k))) {
		x->st->blocks_assembly_failed++;
		return 0;
	}
	x->st->blocks_assembled++;
	x->st->bytes_local += local;
	return 1;
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
	if (x->state[k] == BLOCK_ASSEMBLE) {
		int r = assemble(x, k);
		if (r != 0)
			return MIN(r, 0);
	}
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

/* Format 3: the chunks of the other slot and of this slot's old content
 * (read here, in the install worker), and the image's chunk offsets. A
 * seed is a help, never a need: one that cannot be had is left out. */
static int seed_setup(struct ix *x)
{
	const struct install_index_image *ii = x->ii;
	struct error ignored = {};

	if (!ii->m || !ii->img->n_chunks)
		return 0;
	x->coff = calloc(ii->img->n_chunks + 1, sizeof(*x->coff));
	x->writer = calloc(x->part_blocks, sizeof(*x->writer));
	x->erased = calloc(x->part_blocks, 1);
	if (!x->coff || !x->writer || !x->erased || chunk_seed_new(&x->seed) < 0)
		return -ENOMEM;
	for (uint64_t c = 0; c < ii->img->n_chunks; c++)
		x->coff[c + 1] = x->coff[c] + chunk_entry_len(bundle_chunk_entry(ii->m, ii->index,
										 ii->img, c));
	if (ii->other)
		(void)chunk_seed_scan(x->seed, ii->other, ii->other_rec ? ii->other_rec->size : 0,
				      &ignored);
	(void)chunk_seed_scan(x->seed, ii->flash, ii->rec ? ii->rec->size : 0, &ignored);
	if (!x->seed->n) {
		chunk_seed_free(x->seed);
		x->seed = NULL;
	}
	return 0;
}

static void seed_free(struct ix *x)
{
	chunk_seed_free(x->seed);
	free(x->coff);
	free(x->writer);
	free(x->erased);
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
	r = x.map && x.state && x.buf && x.abuf ? seed_setup(&x) : -ENOMEM;
	if (r >= 0)
		r = run(&x);
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
	seed_free(&x);
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
