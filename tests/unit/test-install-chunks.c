/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Chunk assembly (format 3; install-fixture.h): rebuilt images whose
 * content moved, assembled from the chunks found on the board, missing
 * ranges fetched, every block checked against the signed index. */
#include "install-fixture.h"

/* ---- chunk assembly (format 3): rebuilt images, content at shifted offsets ---- */

/* An appliance-like root, rebuilt by mksquashfs -comp xz as a build
 * system makes it (not patched in place): 200 files of 1..60 KiB in eight
 * directories, text of a fixed vocabulary with binary runs (they compress
 * like programs and docs), and /etc/version. The files in bump[] get a
 * line more (changed files); pkg adds 30 files in the middle of the tree. */
static struct image make_tree(const char *name, const char *version, const unsigned *bump,
			      size_t n_bump, bool pkg)
{
	struct image im = { th_path(name), 0, { 0 } };
	_cleanup_free_ char *src = testlib_asprintf("%s.d", im.path);
	char words[512][10];
	uint8_t *buf = malloc(128 * 1024);
	uint64_t x = 12345;

	assert_non_null(buf);
	for (size_t w = 0; w < ELEMENTSOF(words); w++) {
		size_t n = 2 + w % 7;
		for (size_t i = 0; i < n; i++)
			words[w][i] = 'a' + (x = x * 6364136223846793005ULL + 1442695040888963407ULL) % 26;
		words[w][n] = 0;
	}
	assert_int_equal(th_sh("rm -rf '%s' && mkdir -p '%s/etc' && for i in 0 1 2 3 4 5 6 7; do "
			       "mkdir -p '%s/d'$i; done", src, src, src), 0);
	for (unsigned f = 0; f < 200 + (pkg ? 30 : 0); f++) {
		bool added = f >= 200;
		size_t len = 0, want;
		_cleanup_free_ char *path = NULL;

		x = 1000003ULL * (f + 1);
		want = 1024 + (x >> 7) % (60 * 1024);
		while (len < want) {
			if ((x = x * 6364136223846793005ULL + 1442695040888963407ULL) % 8 == 0) {
				rnd_fill(buf + len, MIN(512, 128 * 1024 - len), x);
				len += MIN(512, 128 * 1024 - len);
			} else {
				len += snprintf((char *)buf + len, 128 * 1024 - len, "%s ",
						words[(x >> 33) % ELEMENTSOF(words)]);
			}
			len = MIN(len, want);
		}
		for (size_t b = 0; b < n_bump; b++)
			if (bump[b] == f)
				len += snprintf((char *)buf + len, 128 * 1024 - len, "\nversion %s\n",
						version);
		path = added ? testlib_asprintf("%s/d4/pkg-%03u", src, f) :
			       testlib_asprintf("%s/d%u/file-%03u", src, f % 8, f);
		th_write(path, buf, len);
	}
	free(buf);
	{
		_cleanup_free_ char *v = testlib_asprintf("%s/etc/version", src);
		th_write(v, version, strlen(version));
	}
	assert_int_equal(th_sh("env -u SOURCE_DATE_EPOCH mksquashfs '%s' '%s' -noappend -quiet "
			       "-no-progress -comp xz -all-root -mkfs-time 1700000000 "
			       "-all-time 1700000000 >/dev/null && rm -rf '%s'", src, im.path, src), 0);
	image_hash(&im);
	return im;
}

struct rebuilt {
	struct rig r;
	struct image v1, v2;
	char *b1, *b2, *cmdline_b;
	uint64_t size2;          /* of b2 */
};

/* v1 installed into A (booted from B), then booted from A again: v2 (v1
 * rebuilt with three small files changed, or with a package added) goes
 * to the empty B. */
static void rebuilt_new(struct rebuilt *t, const char *name, bool pkg)
{
	static const unsigned bump[] = { 3, 101 };
	_cleanup_free_ char *sim = testlib_asprintf("%s.sim", name);
	_cleanup_free_ char *i1 = testlib_asprintf("%s-v1.sqfs", name);
	_cleanup_free_ char *i2 = testlib_asprintf("%s-v2.sqfs", name);
	_cleanup_free_ char *f1 = testlib_asprintf("%s-v1.fbd", name);
	_cleanup_free_ char *f2 = testlib_asprintf("%s-v2.fbd", name);
	struct rres res;
	size_t len;
	uint8_t *b;

	rig_new(&t->r, "nandsim-128m", sim);
	t->cmdline_b = th_path("cmdline-b");
	th_write(t->cmdline_b, "console=ttyS0 flashd.slot=B ro\n", 31);
	t->v1 = make_tree(i1, "1", NULL, 0, false);
	t->v2 = pkg ? make_tree(i2, "1", NULL, 0, true) : make_tree(i2, "2", bump, 2, false);
	t->b1 = trusted_bundle(&t->r, f1, "1.0", &t->v1, NULL, false);
	t->b2 = trusted_bundle(&t->r, f2, "2.0", &t->v2, NULL, false);
	b = th_read(t->b2, &len);
	t->size2 = len;
	free(b);
	install_ok(&t->r, t->b1, &(struct ropts){ .cmdline = t->cmdline_b, .source = true }, &res);
	assert_true(slot_holds(&t->r, 0, &t->v1, NULL));
}

static void rebuilt_free(struct rebuilt *t)
{
	free(t->b1);
	free(t->b2);
	free(t->cmdline_b);
	image_free(&t->v1);
	image_free(&t->v2);
	rig_free(&t->r);
}

static void rebuilt_row(const char *what, const struct rebuilt *t, const struct rres *res)
{
	printf("rebuilt %-16s image %zu B, %u of %u blocks differ in place; fetched %" PRIu64
	       " B (%.1f%% of the bundle's %" PRIu64 "), assembled %" PRIu64 " (failed %" PRIu64
	       "), local %" PRIu64 " B, erases %" PRIu64 "\n", what, t->v2.len,
	       blocks_differing(&t->v1, &t->v2, t->r.eb), (unsigned)((t->v2.len + t->r.eb - 1) / t->r.eb),
	       res->stats.bytes_fetched, 100.0 * res->stats.bytes_fetched / t->size2, t->size2,
	       res->stats.blocks_assembled, res->stats.blocks_assembly_failed,
	       res->stats.bytes_local, res->stats.erases);
}

/* Issue 33 item 1: a rebuilt squashfs differs in (nearly) every erase
 * block, so a block-wise install fetched the whole image (fails on main:
 * 100 % of the bundle fetched). With the chunk table the install finds the
 * unchanged compressed blocks in the running slot A at their shifted
 * offsets and fetches only the rest: a small fraction, and B reads back
 * as v2 byte for byte; A is never written. */
TEST(test_chunks_rebuilt_image)
{
	static const bool pkgs[] = { false, true };

	for (size_t i = 0; i < ELEMENTSOF(pkgs); i++) {
		struct rebuilt t;
		struct rres res;
		uint8_t a_before[32], a_after[32];
		uint64_t a_size;

		rebuilt_new(&t, pkgs[i] ? "ch-pkg" : "ch-bump", pkgs[i]);
		a_size = member_part(&t.r, 0, "rootfs")->size;
		member_sha(&t.r, 0, "rootfs", a_size, a_before);
		install_ok(&t.r, t.b2, &(struct ropts){ .source = true }, &res);
		rebuilt_row(pkgs[i] ? "package added" : "3 files changed", &t, &res);
		assert_true(res.stats.adaptive);
		assert_true(res.stats.blocks_assembled > 0);
		assert_int_equal(res.stats.blocks_assembly_failed, 0);
		if (!pkgs[i]) {
			/* most blocks moved, but 3.7 % fetched (measured; main: 100 %) */
			assert_true(blocks_differing(&t.v1, &t.v2, t.r.eb) * 2 > t.v2.len / t.r.eb);
			assert_true(res.stats.bytes_fetched * 100 < t.size2 * 8);
		} else {
			/* 30 files added before 100 others: squashfs packs small
			 * files into fragment blocks in tree order, so the
			 * fragments after the package are new too (40 % measured) */
			assert_true(res.stats.bytes_fetched * 100 < t.size2 * 50);
		}
		assert_true(slot_holds(&t.r, 1, &t.v2, NULL));
		/* the booted slot was only read */
		member_sha(&t.r, 0, "rootfs", a_size, a_after);
		assert_memory_equal(a_before, a_after, 32);
		rebuilt_free(&t);
	}
}

/* A chunk of the running slot that rots after the install scanned it (a
 * bit flips between the scan and the block's assembly): the assembled
 * block does not match its signed hash, so it is fetched whole and B
 * still reads back as v2: the rotted byte never reaches B. */
struct rot_at {
	struct rig *r;
	bool done;
};

static void rot_on_progress(void *userdata, const struct install_progress *p)
{
	struct rot_at *ra = userdata;

	if (ra->done || p->phase != INSTALL_PHASE_WRITE || p->done == 0)
		return;
	/* the seed was scanned before the first block was classified */
	for (unsigned k = 1; k < 8; k++)
		xor_slot_byte(ra->r, 0, (uint64_t)k * ra->r->eb + 5000, 0x10);
	ra->done = true;
}

TEST(test_chunks_seed_rot)
{
	struct rebuilt t;
	struct rres res;
	struct rot_at ra = { 0 };

	rebuilt_new(&t, "ch-rot", false);
	ra.r = &t.r;
	install_ok(&t.r, t.b2, &(struct ropts){ .source = true, .progress = rot_on_progress,
						.userdata = &ra }, &res);
	rebuilt_row("seed rotted", &t, &res);
	assert_true(ra.done);
	assert_true(res.stats.blocks_assembly_failed > 0);
	assert_true(slot_holds(&t.r, 1, &t.v2, NULL));
	rebuilt_free(&t);
}

/* A source that records the plan it is given and the preads it gets,
 * over a file source: what a network backend sees of an adaptive install. */
struct plan_source {
	struct source s;
	struct source *inner;
	struct source_range plan[16];
	size_t n_plan, n_plan_calls, n_preads;
};

static ssize_t ps_read(struct source *s, void *buf, size_t len, struct error *err)
{
	return source_read(((struct plan_source *)s)->inner, buf, len, err);
}

static ssize_t ps_pread(struct source *s, void *buf, size_t len, uint64_t off, struct error *err)
{
	struct plan_source *ps = (struct plan_source *)s;

	ps->n_preads++;
	return source_pread(ps->inner, buf, len, off, err);
}

static int ps_plan(struct source *s, const struct source_range *r, size_t n, struct error *err)
{
	struct plan_source *ps = (struct plan_source *)s;

	ps->n_plan_calls++;
	ps->n_plan = MIN(n, ELEMENTSOF(ps->plan));
	memcpy(ps->plan, r, ps->n_plan * sizeof(*r));
	return 0;
}

static void ps_free(struct source *s)
{
	source_free(((struct plan_source *)s)->inner);
}

static const struct source_ops plan_source_ops = {
	.kind = "test", .read = ps_read, .pread = ps_pread, .plan = ps_plan, .free = ps_free,
};

/* An install on the adaptive board (into B, with its state dir) of the
 * bundle file read through a plan_source with ops; x keeps the source,
 * the board and the install (stats) for the test, ps_install_done()
 * frees them. install_run_source()'s result. */
struct ps_install {
	struct plan_source ps;
	struct board *b;
	struct install *in;
	int fd;
};

static int ps_install(struct adaptive *a, const char *bundle, const struct source_ops *ops,
		      volatile int *cancel, struct ps_install *x, struct error *err)
{
	*x = (struct ps_install){ .ps = { .s = { .ops = ops } } };
	x->fd = open(bundle, O_RDONLY | O_CLOEXEC);
	assert_true(x->fd >= 0);
	assert_int_equal(source_new_fd(x->fd, &x->ps.inner, NULL), 0);
	x->ps.s.size = x->ps.inner->size; /* a random-access source knows its size */
	assert_int_equal(board_open(a->r.l, a->r.target, true, &x->b), 0);
	assert_int_equal(install_new(&(struct install_params){ .board = x->b, .target = a->r.target,
				     .cmdline = cmdline_a, .keyring = ring, .activate = true,
				     .state_dir = a->state }, &x->in), 0);
	return install_run_source(x->in, &x->ps.s, cancel, err);
}

static void ps_install_done(struct ps_install *x)
{
	install_free(x->in);
	board_close(x->b);
	ps_free(&x->ps.s);
	close(x->fd);
}

/* Blocks 3, 4 and 13 changed: one plan, at the payload offsets the
 * manifest gives, of the chunks that hold the changed bytes (the rest of
 * each block is found in B's old content); then exactly those are pread. */
TEST(test_adaptive_plan)
{
	uint64_t fetched;
	struct adaptive a;
	const unsigned three[] = { 3, 4, 13 };
	struct image v2;
	char *b2;
	struct ps_install x;
	struct error err = {};

	b2 = adaptive_v2(&a, "ad-plan", three, 3, &v2);
	if (ps_install(&a, b2, &plan_source_ops, NULL, &x, &err) < 0)
		fail_msg("install: %s", err.msg);
	/* format 3: each block is assembled from the chunks B still holds,
	 * only the chunk with the changed byte is fetched: three ranges */
	assert_int_equal(x.ps.n_plan_calls, 1);
	assert_int_equal(x.ps.n_plan, 3);
	fetched = a.prefix;
	for (size_t i = 0; i < 3; i++) {
		uint64_t byte = a.prefix + three[i] * (uint64_t)a.r.eb + 1000;
		assert_true(x.ps.plan[i].off <= byte && byte < x.ps.plan[i].off + x.ps.plan[i].len);
		assert_true(x.ps.plan[i].len <= CHUNK_MAX);
		fetched += x.ps.plan[i].len;
	}
	/* one pread per missing range of a block: a chunk across the 3/4
	 * boundary is one planned range read by both blocks */
	assert_true(x.ps.n_preads >= 3 && x.ps.n_preads <= 4);
	assert_int_equal(install_get_stats(x.in)->blocks_assembled, 3);
	assert_int_equal(install_get_stats(x.in)->bytes_fetched, fetched);
	ps_install_done(&x);
	expect_installed_b(&a.r, "2.0", &v2, NULL);
	free(b2);
	image_free(&v2);
	adaptive_free(&a);
}

/* A cancel between two blocks of an adaptive write stops it there (not at
 * the end of the image): the install ends cancelled, slot B stays out of
 * BOOT_ORDER with record "cancelled", and the next install completes. */
static int *cancel_after_preads;
static volatile int adaptive_cancel;

static ssize_t ps_pread_cancel(struct source *s, void *buf, size_t len, uint64_t off,
			       struct error *err)
{
	struct plan_source *ps = (struct plan_source *)s;

	if (++ps->n_preads == (size_t)*cancel_after_preads)
		util_cancel(&adaptive_cancel);
	return source_pread(ps->inner, buf, len, off, err);
}

static const struct source_ops cancel_source_ops = {
	.kind = "test", .read = ps_read, .pread = ps_pread_cancel, .plan = ps_plan, .free = ps_free,
};

TEST(test_adaptive_cancel)
{
	struct adaptive a;
	const unsigned changed[] = { 2, 5, 8, 11, 14 };
	int after = 2;
	struct image v2;
	char *b2, *want;
	struct ps_install x;
	struct error err = {};
	struct rres res;

	b2 = adaptive_v2(&a, "ad-cancel", changed, 5, &v2);
	cancel_after_preads = &after;
	adaptive_cancel = 0;
	assert_int_equal(ps_install(&a, b2, &cancel_source_ops, &adaptive_cancel, &x, &err),
			 -ECANCELED);
	/* stopped at the next block, not after the fifth: the fetch-ahead
	 * thread may have fetched one block more (its pread set the cancel
	 * either before or after the main thread looked) */
	assert_in_range(x.ps.n_preads, 2, 3);
	assert_in_range(install_get_stats(x.in)->blocks_written, 1, 2);
	ps_install_done(&x);
	want = env_b_record(&a.r, "cancelled");
	expect_env(&a.r, want, "after a cancelled adaptive install");
	free(want);
	install_ok(&a.r, b2, &(struct ropts){ .state_dir = a.state, .source = true }, &res);
	expect_installed_b(&a.r, "2.0", &v2, NULL);
	free(b2);
	image_free(&v2);
	adaptive_free(&a);
}

/* A power cut after the record was saved, in the activation store: the
 * env says the slot is being installed (no version); the record still
 * says where to look, and the next install reads every block it keeps. */
TEST(test_adaptive_cut_before_activation)
{
	struct adaptive a;
	struct rres res;
	char *rec, *want;

	adaptive_new(&a, "ad-act");
	adaptive_ok(&a, a.b1, &res);
	rec = testlib_asprintf("%s/blocks-rootfs-B-rootfs.bin", a.state);
	/* unchanged: no flash op but the two stores; cut in the second */
	sim_powercut(&a.r, (int64_t)(a.r.env_store_erases + a.r.env_store_programs), false);
	assert_true(run_install(&a.r, a.b1, &(struct ropts){ .state_dir = a.state, .source = true },
				&res) < 0);
	assert_true(sim_power_on(&a.r));
	assert_int_equal(res.stats.erases, 0);
	assert_int_equal(access(rec, F_OK), 0);
	want = env_b_record(&a.r, "installing");
	expect_env(&a.r, want, "cut in the activation store");
	free(want);
	adaptive_ok(&a, a.b1, &res);
	assert_int_equal(res.stats.blocks_recorded, a.n);
	assert_int_equal(res.stats.blocks_read, a.n);
	assert_int_equal(res.stats.blocks_written, 0);
	expect_installed_b(&a.r, "1.0", &a.v1, NULL);
	free(rec);
	adaptive_free(&a);
}
