/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The update engine re-installing, cancelled and within bounded memory
 * (install-fixture.h): unchanged blocks cost nothing, a cancel leaves the
 * target marked bad and the booted slot untouched, memory stays at an
 * erase block or two whatever the image size. */
#include "install-fixture.h"

TEST(test_reinstall)
{
	struct rig r;
	struct rres res;
	const size_t len = 20 * 128 * 1024 - 64 * 1024;
	uint8_t *data = malloc(len);
	struct image v1, v2;
	struct nsim_counters before, after;
	char *b1, *b2;
	unsigned changed, blocks;

	rig_new(&r, "nandsim-128m", "nand-reinstall.sim");
	rnd_fill(data, len, 30);
	v1 = make_sqfs_data("re-v1.sqfs", data, len);
	/* two erase blocks' worth of the file change, in place */
	rnd_fill(data + 3 * r.eb + 1000, 5000, 31);
	rnd_fill(data + 12 * r.eb + 7, 300, 32);
	v2 = make_sqfs_data("re-v2.sqfs", data, len);
	free(data);
	blocks = DIV_ROUND_UP(v1.len, r.eb);
	assert_int_equal(v1.len, v2.len);
	changed = blocks_differing(&v1, &v2, r.eb);
	assert_true(changed >= 2 && changed * 10 <= blocks * 2);

	b1 = trusted_bundle(&r, "re-v1.fbd", "1.1", &v1, NULL, true);
	b2 = trusted_bundle(&r, "re-v2.fbd", "1.2", &v2, NULL, true);
	install_ok(&r, b1, NULL, &res);
	assert_int_equal(res.stats.blocks_written, blocks);

	/* the same image again: not one erase or program */
	before = sim_ops(&r);
	install_ok(&r, b1, NULL, &res);
	after = sim_ops(&r);
	assert_int_equal(res.stats.erases, 0);
	assert_int_equal(after.erases - before.erases, 0);
	assert_int_equal(after.programs - before.programs, 0);
	assert_int_equal(res.stats.blocks_skipped, blocks);
	assert_int_equal(res.stats.blocks_written, 0);
	assert_int_equal(res.stats.bytes_verified, v1.len);
	/* each block read once: the compare proved it in full, no read-back */
	assert_int_equal(after.page_reads - before.page_reads,
			 blocks * (r.eb / sim_info(&r).geo.writesize));
	expect_installed_b(&r, "1.1", &v1, NULL);

	/* ~10% of the blocks differ: about that many erases */
	before = sim_ops(&r);
	install_ok(&r, b2, NULL, &res);
	after = sim_ops(&r);
	if (res.stats.erases < changed || res.stats.erases > changed + 1)
		fail_msg("%u of %u erase blocks changed, %" PRIu64 " erased", changed, blocks,
			 res.stats.erases);
	assert_int_equal(after.erases - before.erases, res.stats.erases);
	assert_int_equal(res.stats.blocks_skipped + res.stats.blocks_written, blocks);
	/* identical blocks read once by the compare; changed ones up to their
	 * first different page by it, then once by the read-back */
	assert_true(after.page_reads - before.page_reads <=
		    (blocks + res.stats.blocks_written) * (r.eb / sim_info(&r).geo.writesize));
	expect_installed_b(&r, "1.2", &v2, NULL);
	printf("re-install: %u erase blocks, identical image 0 erases, %u changed -> %" PRIu64
	       " erases\n", blocks, changed, res.stats.erases);

	free(b1);
	free(b2);
	image_free(&v1);
	image_free(&v2);
	rig_free(&r);
}

/* ---- cancel ---- */

struct cancel_at {
	volatile int *flag;
	uint64_t after;
};

static void cancel_progress(void *userdata, const struct install_progress *p)
{
	struct cancel_at *c = userdata;

	if (p->phase == INSTALL_PHASE_WRITE && p->done >= c->after)
		*c->flag = 1;
}

static struct install *new_install(struct rig *r, struct board **ret_board)
{
	struct install *in = NULL;

	assert_int_equal(board_open(r->l, r->target, true, ret_board), 0);
	assert_int_equal(install_new(&(struct install_params){ .board = *ret_board,
		.target = r->target, .cmdline = cmdline_a, .keyring = ring, .activate = true },
		&in), 0);
	return in;
}

TEST(test_cancel)
{
	struct rig r;
	struct rres res;
	struct image rootfs = make_sqfs("cancel-rootfs.sqfs", 1024 * 1024, 40);
	struct image kernel = make_raw("cancel-kernel.bin", 64 * 1024, 41);
	volatile int flag = 0;
	struct cancel_at at = { &flag, 300 * 1024 };
	struct error err = {};
	struct board *b = NULL;
	struct install *in;
	uint8_t *raw0, *raw, *bundle_bytes;
	size_t raw_len, len, blen;
	char *bundle, *marked_bad;
	int k;

	rig_new(&r, "nandsim-128m", "nand-cancel.sim");
	bundle = trusted_bundle(&r, "cancel.fbd", "2.0", &rootfs, &kernel, false);
	bundle_bytes = th_read(bundle, &blen);
	raw0 = env_raw(&r, &raw_len);
	marked_bad = env_b_record(&r, "cancelled");

	/* the cancel flag of install_run_fd, raised while writing */
	k = run_install(&r, bundle, &(struct ropts){ .cancel = &flag, .progress = cancel_progress,
			.userdata = &at }, &res);
	assert_int_equal(k, -ECANCELED);
	assert_non_null(strstr(res.err.msg, "cancelled; slot B stays marked bad"));
	/* progress counts each block's read-back as it goes */
	assert_true(res.stats.bytes_written + res.stats.bytes_verified >= at.after &&
		    res.stats.bytes_written < rootfs.len);
	expect_env(&r, marked_bad, "cancelled while writing");
	assert_int_equal(boot_pick(&r), 0);
	env_raw_restore(&r, raw0);

	/* install_cancel between feeds: later calls refuse */
	in = new_install(&r, &b);
	assert_int_equal(install_feed(in, bundle_bytes, blen / 2, &err), 0);
	assert_int_equal(install_get_phase(in), INSTALL_PHASE_WRITE);
	install_cancel(in);
	assert_int_equal(install_get_phase(in), INSTALL_PHASE_FAILED);
	assert_int_equal(install_feed(in, bundle_bytes + blen / 2, 100, &err), -ECANCELED);
	assert_non_null(strstr(err.msg, "slot B stays marked bad"));
	assert_int_equal(install_finish_input(in, &err), -ECANCELED);
	assert_int_equal(install_step(in, &err), -ECANCELED);
	install_free(in);
	board_close(b);
	expect_env(&r, marked_bad, "cancelled between feeds");
	env_raw_restore(&r, raw0);

	/* cancelled while reading back: the slot is never activated */
	in = new_install(&r, &b);
	assert_int_equal(install_feed(in, bundle_bytes, blen, &err), 0);
	assert_int_equal(install_finish_input(in, &err), 0);
	assert_int_equal(install_step(in, &err), 1);
	assert_int_equal(install_get_phase(in), INSTALL_PHASE_VERIFY);
	install_cancel(in);
	assert_int_equal(install_step(in, &err), -ECANCELED);
	install_free(in);
	board_close(b);
	expect_env(&r, marked_bad, "cancelled while verifying");
	assert_int_equal(boot_pick(&r), 0);
	env_raw_restore(&r, raw0);

	/* cancelled before the manifest: nothing was chosen, nothing stored */
	in = new_install(&r, &b);
	assert_int_equal(install_feed(in, bundle_bytes, 20, &err), 0);
	install_cancel(in);
	assert_int_equal(install_feed(in, bundle_bytes + 20, 20, &err), -ECANCELED);
	assert_null(install_get_slot(in));
	install_free(in);
	board_close(b);
	raw = env_raw(&r, &len);
	assert_memory_equal(raw, raw0, raw_len);
	free(raw);

	/* a cancel after the end changes nothing: the install stays done */
	in = new_install(&r, &b);
	assert_int_equal(install_feed(in, bundle_bytes, blen, &err), 0);
	assert_int_equal(install_finish_input(in, &err), 0);
	while ((k = install_step(in, &err)) == 1)
		;
	assert_int_equal(k, 0);
	install_cancel(in);
	assert_int_equal(install_get_phase(in), INSTALL_PHASE_DONE);
	assert_int_equal(install_step(in, &err), 0);
	install_free(in);
	board_close(b);
	expect_installed_b(&r, "2.0", &rootfs, &kernel);

	free(raw0);
	free(marked_bad);
	free(bundle);
	free(bundle_bytes);
	image_free(&rootfs);
	image_free(&kernel);
	rig_free(&r);
}
/* ---- bounded memory ---- */

static size_t mem_for(struct rig *r, size_t mib)
{
	struct rres res;
	char *name = testlib_asprintf("mem-%zu.sqfs", mib);
	struct image im = make_sqfs(name, mib * 1024 * 1024, 50 + mib);
	char *bname = testlib_asprintf("mem-%zu.fbd", mib);
	char *bundle = trusted_bundle(r, bname, "4.0", &im, NULL, true);

	install_ok(r, bundle, NULL, &res);
	assert_int_equal(res.stats.bytes_verified, im.len);
	assert_true(slot_holds(r, 1, &im, NULL));
	free(name);
	free(bname);
	free(bundle);
	image_free(&im);
	return res.mem_peak;
}

TEST(test_bounded_memory)
{
	struct rig r;
	size_t m1, m16;

	rig_new(&r, "nandsim-128m", "nand-mem.sim");
	m1 = mem_for(&r, 1);
	m16 = mem_for(&r, 16);
	printf("install memory peak: %zu bytes for a 1 MiB image, %zu for 16 MiB "
	       "(erase block %u)\n", m1, m16, r.eb);
	/* only the index grows: 32 bytes per 128 KiB block, 16 per chunk */
	assert_true(m16 <= m1 + (16 - 1) * (8 * BUNDLE_HASH_SIZE +
					    (1 << 20) / CHUNK_MIN * CHUNK_ENTRY_SIZE));
	/* the writer's block and its compare copy, the inflate window, the manifest */
	assert_true(m1 >= 2 * (size_t)r.eb);
	assert_true(m1 <= 2 * (size_t)r.eb + 512 * 1024);
	rig_free(&r);
}
