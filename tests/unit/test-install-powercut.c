/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The update engine under power cuts (install-fixture.h): a cut at every
 * flash op of an install on NAND and NOR, then the board powered on again:
 * the env opens as before or after one store, U-Boot boots a complete
 * slot, nothing outside slot B and the env changed. */
#include "install-fixture.h"

/* ---- power cuts ---- */

/* A copy of the whole simulator file and the byte ranges an install may
 * change (header, env copies, the target slot's partitions with their
 * OOB, block metadata and page states). Everything else must stay equal. */
struct range {
	uint64_t off, len;
};

struct snap {
	uint8_t *base;
	size_t len;
	struct range mut[32];
	size_t n_mut;
	/* the simulator file, mapped once: a mapping per check cost a page
	 * fault per 64 KiB of it at every cut point */
	const uint8_t *map;
	struct stat st;
};

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void snap_add(struct snap *s, uint64_t off, uint64_t len)
{
	assert_true(s->n_mut < ELEMENTSOF(s->mut));
	if (len)
		s->mut[s->n_mut++] = (struct range){ off, len };
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static void snap_add_part(struct snap *s, const struct layout_partition *p)
{
	const struct layout_device *d = p->dev;
	uint64_t oob = le64_at(s->base + 48), meta = le64_at(s->base + 56);
	uint64_t pages = le64_at(s->base + 64);

	snap_add(s, nsim_data_offset() + p->offset, p->size);
	snap_add(s, meta + p->offset / d->erasesize * 16, p->size / d->erasesize * 16);
	if (d->type == FLASH_NAND) {
		snap_add(s, oob + p->offset / d->writesize * d->oobsize,
			 p->size / d->writesize * d->oobsize);
		snap_add(s, pages + p->offset / d->writesize, p->size / d->writesize);
	}
}

static void snap_take(struct snap *s, struct rig *r, int slot)
{
	const struct layout_slot *sl = &r->g->slots[slot];

	size_t len;
	uint8_t *base = th_read(r->sim, &len);
	int fd = open(r->sim, O_RDONLY | O_CLOEXEC);

	*s = (struct snap){ .base = base, .len = len };
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &s->st), 0);
	assert_int_equal((uint64_t)s->st.st_size, len);
	s->map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(s->map != MAP_FAILED);
	close(fd);      /* the mapping stays */
	snap_add(s, 0, NSIM_HEADER_SIZE);
	/* env stores erase and program the env partitions like any flash */
	for (size_t i = 0; i < r->l->env.n_copies; i++)
		snap_add_part(s, r->l->env.copies[i].part);
	snap_add_part(s, sl->rootfs.part);
	if (sl->has_kernel)
		snap_add_part(s, sl->kernel.part);
	qsort(s->mut, s->n_mut, sizeof(s->mut[0]), cmp_range);
}

static const char *where_in_sim(struct rig *r, uint64_t off)
{
	if (off < nsim_data_offset())
		return "header";
	off -= nsim_data_offset();
	for (size_t i = 0; i < r->l->n_partitions; i++)
		if (off >= r->l->partitions[i].offset &&
		    off - r->l->partitions[i].offset < r->l->partitions[i].size)
			return r->l->partitions[i].name;
	return "OOB/block metadata";
}

/* Everything outside the mutable ranges is byte for byte the snapshot. */
static void snap_check_untouched(struct snap *s, struct rig *r, const char *ctx)
{
	const uint8_t *m = s->map;
	struct stat st;
	uint64_t pos = 0;

	/* the file mapped is the simulator's file, at its size */
	assert_int_equal(stat(r->sim, &st), 0);
	assert_true(st.st_ino == s->st.st_ino && st.st_dev == s->st.st_dev);
	assert_int_equal((uint64_t)st.st_size, s->len);
	for (size_t i = 0; i <= s->n_mut; i++) {
		uint64_t end = i < s->n_mut ? s->mut[i].off : s->len;
		if (end > pos && memcmp(m + pos, s->base + pos, end - pos)) {
			uint64_t o = pos;
			while (m[o] == s->base[o])
				o++;
			fail_msg("%s: byte 0x%" PRIx64 " of the simulator file changed (%s)", ctx, o,
				 where_in_sim(r, o));
		}
		if (i < s->n_mut)
			pos = MAX(pos, s->mut[i].off + s->mut[i].len);
	}
}

/* Put the mutable ranges back (only the chunks that differ). */
static void snap_restore(struct snap *s, struct rig *r)
{
	int fd = open(r->sim, O_RDWR | O_CLOEXEC);
	const uint8_t *m = s->map;
	const uint64_t chunk = 64 * 1024;

	assert_true(fd >= 0);
	for (size_t i = 0; i < s->n_mut; i++)
		for (uint64_t o = s->mut[i].off; o < s->mut[i].off + s->mut[i].len; o += chunk) {
			uint64_t n = MIN(chunk, s->mut[i].off + s->mut[i].len - o);
			if (memcmp(m + o, s->base + o, n))
				assert_int_equal(util_pwrite_full(fd, s->base + o, n, o), (ssize_t)n);
		}
	close(fd);
}

struct matrix {
	struct rig r;
	struct image old_b, old_a, old_kernel, rootfs, kernel;
	char *bundle;
	struct snap snap;
	char *env_failed, *env_cut, *env_done, *env_verified;
	uint64_t ops, erases_base;
	unsigned points, recovered, in_env_store;
};

/* After a cut at op n (the install's own flash ops and the erases and
 * page programs of its two env stores): the env opens as it was before or
 * after a store, U-Boot boots a slot holding the complete image it is
 * supposed to hold, nothing outside slot B and the env changed. */
static void matrix_check(struct matrix *x, int k, const struct rres *res, const char *ctx,
			 bool expect_done, uint64_t erases_before)
{
	struct rig *r = &x->r;
	int pick;

	/* the error names the first failure; a failed record store is appended */
	static const char env_err[] = "writing the U-Boot env";
	bool in_env = !expect_done && !strncmp(res->err.msg, env_err, strlen(env_err));
	char *got;

	if (expect_done) {
		if (k != 0)
			fail_msg("%s: install failed: %d %s", ctx, k, res->err.msg);
	} else if (k != -ESHUTDOWN || (!strstr(res->err.msg, "partition '") && !in_env)) {
		fail_msg("%s: expected -ESHUTDOWN naming the partition or the env, got %d \"%s\"",
			 ctx, k, res->err.msg);
	}
	/* the engine's counters say what happened to the flash, cut or not (a
	 * torn erase of an env block counts on the block, not in the chip's op
	 * counter, so sim_ops() takes one erase too many off then) */
	uint64_t saw = sim_ops(r).erases - erases_before;
	if (res->stats.erases != saw && !(in_env && res->stats.erases == saw + 1))
		fail_msg("%s: install counted %" PRIu64 " erases, the flash saw %" PRIu64, ctx,
			 res->stats.erases, sim_ops(r).erases - erases_before);
	/* a cut inside an env store leaves the env before or after that store:
	 * in the first one (B's "installing" record), the provisioned env with
	 * B untouched; in a later one, the state of the store before it */
	got = env_dump(r);
	if (!expect_done && in_env && !strcmp(got, r->base_env)) {
		x->in_env_store++;
		if (boot_pick(r) != 0 || !slot_holds(r, 0, &x->old_a, &x->old_kernel) ||
		    !slot_holds(r, 1, &x->old_b, &x->old_kernel))
			fail_msg("%s: cut in the first env store: a slot changed", ctx);
		free(got);
		snap_check_untouched(&x->snap, r, ctx);
		return;
	}
	x->in_env_store += in_env;
	if (expect_done) {
		expect_env(r, x->env_done, ctx);
	} else if (strcmp(got, x->env_failed) && strcmp(got, x->env_cut)) {
		/* the failure store is not reached when the cut took the env too */
		fail_msg("%s: env\n%s\nexpected\n%s", ctx, got, x->env_failed);
	}
	free(got);
	pick = boot_pick(r);
	if (expect_done) {
		if (pick != 1 || !slot_holds(r, 1, &x->rootfs, &x->kernel))
			fail_msg("%s: boots slot %d, expected B with the new image", ctx, pick);
	} else {
		if (pick != 0 || !slot_holds(r, 0, &x->old_a, &x->old_kernel))
			fail_msg("%s: boots slot %d, expected A with its old image", ctx, pick);
		boot_never_b(r, ctx);
	}
	snap_check_untouched(&x->snap, r, ctx);
}

static void matrix_setup(struct matrix *x, const char *layout, const char *name,
			 size_t rootfs_len, size_t kernel_len)
{
	struct rig *r = &x->r;
	struct board *b = NULL;
	struct flash *f = NULL;
	uint8_t *junk;
	char *old_a_b, *old_b_b, *p;

	rig_new(r, layout, name);
	p = testlib_asprintf("%s-old-b.sqfs", name);
	x->old_b = make_sqfs(p, rootfs_len + 3 * r->eb / 2, 20);
	free(p);
	p = testlib_asprintf("%s-old-a.sqfs", name);
	x->old_a = make_sqfs(p, rootfs_len, 21);
	free(p);
	p = testlib_asprintf("%s-new.sqfs", name);
	x->rootfs = make_sqfs(p, rootfs_len, 22);
	free(p);
	p = testlib_asprintf("%s-kernel.bin", name);
	x->kernel = make_raw(p, kernel_len, 23);
	free(p);
	p = testlib_asprintf("%s-old-kernel.bin", name);
	x->old_kernel = make_raw(p, kernel_len + 5000, 25);
	free(p);
	p = testlib_asprintf("%s-old-b.fbd", name);
	old_b_b = trusted_bundle(r, p, "0.9", &x->old_b, &x->old_kernel, false);
	free(p);
	p = testlib_asprintf("%s-old-a.fbd", name);
	old_a_b = trusted_bundle(r, p, "1.0", &x->old_a, &x->old_kernel, false);
	free(p);
	p = testlib_asprintf("%s-new.fbd", name);
	x->bundle = trusted_bundle(r, p, "2.0", &x->rootfs, &x->kernel, true);
	free(p);

	/* a board in the field: B holds an older release, A the running one
	 * (activated last, so "A B"), the overlay is a JFFS2 with data */
	install_ok(r, old_b_b, &(struct ropts){ .slot = "B", .cmdline = cmdline_factory }, NULL);
	install_ok(r, old_a_b, &(struct ropts){ .slot = "A", .cmdline = cmdline_factory }, NULL);
	expect_env(r, r->base_env, "provisioned board");
	assert_int_equal(board_open(r->l, r->target, true, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "rootfs_data", &f), 0);
	assert_int_equal(jffs2_erase_partition(f, 0, NULL), 0);
	junk = malloc(r->eb / 2);
	rnd_fill(junk, r->eb / 2, 24);
	assert_int_equal(flash_write(f, r->eb + 4096, junk, r->eb / 2), 0);
	assert_int_equal(flash_write(f, f->info.size - r->eb + 4096, junk, r->eb / 4), 0);
	free(junk);
	flash_close(f);
	board_close(b);

	x->env_failed = env_b_marked_bad(r);
	x->env_cut = env_b_record(r, "installing");
	x->env_done = env_with(r->base_env, "BOOT_ORDER", "B A", "FLASHD_B_VERSION", "2.0",
			       "FLASHD_B_STATE", "verified", NULL);
	x->env_verified = env_with(r->base_env, "BOOT_ORDER", "A", "BOOT_B_LEFT", "0",
				   "FLASHD_B_VERSION", "2.0", "FLASHD_B_STATE", "verified", NULL);
	snap_take(&x->snap, r, 1);
	x->erases_base = sim_ops(r).erases;
	free(old_a_b);
	free(old_b_b);
}

static void matrix_free(struct matrix *x)
{
	free(x->snap.base);
	munmap((void *)x->snap.map, x->snap.len);
	free(x->bundle);
	free(x->env_failed);
	free(x->env_cut);
	free(x->env_done);
	free(x->env_verified);
	image_free(&x->old_a);
	image_free(&x->old_b);
	image_free(&x->rootfs);
	image_free(&x->kernel);
	image_free(&x->old_kernel);
	rig_free(&x->r);
}

static void powercut_matrix(const char *layout, const char *name, size_t rootfs_len,
			    size_t kernel_len)
{
	struct matrix x;
	struct rig *r = &x.r;
	struct rres res;
	uint64_t before;
	char ctx[128];
	int k;

	memset(&x, 0, sizeof(x));
	matrix_setup(&x, layout, name, rootfs_len, kernel_len);

	/* count the flash ops of one full install without a cut */
	before = sim_info(r).cnt.mutations;
	k = run_install(r, x.bundle, NULL, &res);
	x.ops = sim_info(r).cnt.mutations - before;
	matrix_check(&x, k, &res, "no cut", true, x.erases_base);
	assert_true(x.ops > 2);
	snap_restore(&x.snap, r);
	expect_env(r, r->base_env, "restored");

	for (int tear = 0; tear < 2; tear++) {
		for (uint64_t n = 0; n <= x.ops; n++) {
			bool done = n == x.ops;
			snprintf(ctx, sizeof(ctx), "%s, power cut after op %" PRIu64 "/%" PRIu64
				 "%s", layout, n, x.ops, tear ? " (torn)" : "");
			sim_powercut(r, (int64_t)n, tear);
			k = run_install(r, x.bundle, NULL, &res);
			/* the cut happened exactly when the op count says it would */
			assert_int_equal(sim_power_on(r), !done);
			matrix_check(&x, k, &res, ctx, done, x.erases_base);
			/* and the board recovers: the next install completes */
			if (!done && (n % 4 == 0 || n + 4 > x.ops)) {
				snprintf(ctx + strlen(ctx), sizeof(ctx) - strlen(ctx), ", retried");
				before = sim_ops(r).erases;
				k = run_install(r, x.bundle, NULL, &res);
				matrix_check(&x, k, &res, ctx, true, before);
				x.recovered++;
			}
			snap_restore(&x.snap, r);
			x.points += !done;
		}
	}

	/* install --no-activate: written, verified, recorded so with its
	 * version (issue 13 item 4), still out of BOOT_ORDER, so A boots */
	install_ok(r, x.bundle, &(struct ropts){ .no_activate = true }, &res);
	assert_int_equal(res.phase, INSTALL_PHASE_DONE);
	expect_env(r, x.env_verified, "verified, not activated");
	assert_int_equal(boot_pick(r), 0);
	assert_true(slot_holds(r, 1, &x.rootfs, &x.kernel));
	assert_true(slot_holds(r, 0, &x.old_a, &x.old_kernel));
	snap_check_untouched(&x.snap, r, "verified, not activated");

	/* both env stores were cut at each of their ops, plain and torn */
	assert_true(x.in_env_store >= 4 * r->env_store_programs);
	printf("power-cut matrix %s: %" PRIu64 " flash ops per install, %u cut points "
	       "(%" PRIu64 " plain + %" PRIu64 " torn; %u inside an env store) + 1 before the "
	       "activating store, %u recoveries re-installed\n", layout, x.ops, x.points, x.ops,
	       x.ops, x.in_env_store, x.recovered);
	matrix_free(&x);
}

TEST(test_powercut_nand)
{
	/* ~3 erase blocks of rootfs + ~1.2 of kernel, 65 ops per NAND block;
	 * nandsim-128m's partitions at an eighth of the size: every cut point
	 * compares the whole simulator file with its snapshot */
	powercut_matrix("tests/unit/layouts/nand-16m", "pc-nand", 3 * 128 * 1024 - 20000, 150 * 1024);
}

TEST(test_powercut_nor)
{
	powercut_matrix("nor-router-16m", "pc-nor", 6 * 64 * 1024, 100 * 1024);
}
