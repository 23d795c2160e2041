/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The update engine (lib/update/install.c) end to end: real bundles
 * (bundle_create, Ed25519 keys, squashfs images from mksquashfs) go through
 * install_run_fd() onto simulated boards laid out by the shipped layouts
 * (nandsim-128m: NAND with bad blocks, nor-router-16m: NOR). What the board
 * would boot afterwards is decided the way the shipped U-Boot script does
 * it: slot_boot_select() on the state read from the env. Power cuts come
 * from the simulator's power-cut clock (nsim_set_powercut). */
#include "block_record.h"
#include "install-fixture.h"

TEST(test_nand_install_bad_blocks)
{
	struct rig r;
	struct rres res;
	struct progress_log pl = { 0 };
	struct image rootfs = make_sqfs("nand-rootfs.sqfs", 600 * 1024, 1);
	struct image kernel = make_raw("nand-kernel.bin", 200 * 1024 + 123, 2);
	const struct layout_partition *rb, *kb;
	struct nsim *s;
	uint64_t bad[3];
	char *bundle;

	rig_new(&r, "nandsim-128m", "nand-good.sim");
	bundle = trusted_bundle(&r, "nand-good.fbd", "2.0", &rootfs, &kernel, true);
	rb = member_part(&r, 1, "rootfs");
	kb = member_part(&r, 1, "kernel");
	assert_string_equal(rb->name, "rootfs-b");
	/* factory bad blocks inside the data's range of both target partitions */
	bad[0] = part_block(&r, rb, 1);
	bad[1] = part_block(&r, rb, 3);
	bad[2] = part_block(&r, kb, 0);
	s = sim_open(&r);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(nsim_set_factory_bad(s, bad[i]), 0);
	nsim_close(s);

	install_ok(&r, bundle, &(struct ropts){ .progress = on_progress, .userdata = &pl }, &res);
	assert_int_equal(res.phase, INSTALL_PHASE_DONE);
	assert_string_equal(res.slot, "B");
	assert_int_equal(res.stats.bytes_written, rootfs.len + kernel.len);
	assert_int_equal(res.stats.bytes_verified, rootfs.len + kernel.len);
	assert_int_equal(res.stats.blocks_bad, 3);
	assert_int_equal(res.stats.blocks_written,
			 DIV_ROUND_UP(rootfs.len, r.eb) + DIV_ROUND_UP(kernel.len, r.eb));
	assert_int_equal(res.stats.blocks_skipped, 0);
	expect_installed_b(&r, "2.0", &rootfs, &kernel);

	/* the bad blocks were stepped over, never touched */
	s = sim_open(&r);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct nsim_block blk;
		assert_int_equal(nsim_get_block(s, bad[i], &blk), 0);
		assert_true(blk.bad && blk.factory_bad);
		assert_int_equal(blk.erase_count, 0);
		assert_int_equal(blk.next_page, 0);
	}
	/* physically: logical block 1 of the image lives in block 2 of rootfs-b */
	uint8_t *img = th_read(rootfs.path, &(size_t){ 0 });
	uint8_t *blk = malloc(r.eb);
	assert_int_equal(nsim_read(s, rb->offset + 2 * r.eb, blk, r.eb), 0);
	assert_memory_equal(blk, img + r.eb, r.eb);
	assert_int_equal(nsim_read(s, rb->offset, blk, r.eb), 0);
	assert_memory_equal(blk, img, r.eb);
	free(blk);
	free(img);
	nsim_close(s);

	/* NAND: every written block was erased first, and only those */
	assert_int_equal(res.stats.erases, res.stats.blocks_written);
	assert_int_equal(sim_ops(&r).erases, res.stats.erases);

	/* progress: monotonic, ends at 100 in phase done, names the slot */
	assert_true(pl.calls > 4);
	assert_false(pl.regress);
	assert_int_equal(pl.last_percent, 100);
	assert_int_equal(pl.last_phase, INSTALL_PHASE_DONE);
	assert_string_equal(pl.slot, "B");

	free(bundle);
	image_free(&rootfs);
	image_free(&kernel);
	rig_free(&r);
}

TEST(test_nor_install)
{
	struct rig r;
	struct rres res;
	struct image rootfs = make_sqfs("nor-rootfs.sqfs", 300 * 1024, 3);
	struct image kernel = make_raw("nor-kernel.bin", 100 * 1024 + 7, 4);
	struct image rootfs2 = make_sqfs("nor-rootfs2.sqfs", 280 * 1024, 5);
	char *bundle, *bundle2;

	rig_new(&r, "nor-router-16m", "nor-good.sim");
	bundle = trusted_bundle(&r, "nor-good.fbd", "2.0", &rootfs, &kernel, false);
	install_ok(&r, bundle, NULL, &res);
	assert_string_equal(res.slot, "B");
	assert_int_equal(res.stats.bytes_verified, rootfs.len + kernel.len);
	/* NOR: the target was erased already, nothing needs an erase */
	assert_int_equal(res.stats.erases, 0);
	assert_int_equal(sim_ops(&r).erases, 0);
	assert_int_equal(res.stats.blocks_bad, 0);
	expect_installed_b(&r, "2.0", &rootfs, &kernel);

	/* a different image over it: only then are blocks erased */
	bundle2 = trusted_bundle(&r, "nor-good2.fbd", "2.1", &rootfs2, &kernel, true);
	install_ok(&r, bundle2, NULL, &res);
	/* every rootfs block differs and holds data; the kernel is the same */
	assert_int_equal(res.stats.erases, DIV_ROUND_UP(rootfs2.len, r.eb));
	assert_int_equal(res.stats.blocks_skipped, DIV_ROUND_UP(kernel.len, r.eb));
	expect_installed_b(&r, "2.1", &rootfs2, &kernel);

	free(bundle);
	free(bundle2);
	image_free(&rootfs);
	image_free(&rootfs2);
	image_free(&kernel);
	rig_free(&r);
}

/* The target is decided once (install_slot_decide) and a decision handed
 * down is used as it is: the engine does not look for the booted slot
 * again. A refusal carried down is the install's error before anything is
 * written; a target carried down is written even where the engine, left
 * to itself, could not tell it (the root on no slot). */
TEST(test_decided_slot)
{
	struct rig r;
	struct rres res;
	struct install_slot d;
	struct image rootfs = make_sqfs("decided-rootfs.sqfs", 200 * 1024, 31);
	char *bundle;

	rig_new(&r, "nor-router-16m", "decided.sim");
	bundle = trusted_bundle(&r, "decided.fbd", "2.0", &rootfs, NULL, false);
	assert_int_equal(install_slot_decide(r.l, r.g, cmdline_a, r.target, NULL, &d), 0);
	assert_int_equal(d.booted, 0);
	assert_int_equal(d.target, 1);
	assert_int_equal(install_slot_decide(r.l, r.g, cmdline_a, r.target, "A", &d), -EBUSY);
	assert_int_equal(d.target, 0);
	assert_non_null(strstr(d.err.msg, "it is the booted slot"));
	assert_int_equal(install_slot_decide(r.l, r.g, cmdline_factory, r.target, NULL, &d),
			 -ENOENT);

	/* a refusal handed down: the install's error, the env unchanged */
	d = (struct install_slot){ .target = -1, .booted = 0, .error = -EBUSY };
	error_set(&d.err, -EBUSY, "refused by the daemon's decision");
	assert_int_equal(run_install(&r, bundle, &(struct ropts){ .decided = &d }, &res), -EBUSY);
	assert_string_equal(res.err.msg, "refused by the daemon's decision");
	assert_string_equal(res.slot, "");
	expect_env(&r, r.base_env, "after a refusal handed down");

	/* a target handed down: used, not decided again from the cmdline */
	d = (struct install_slot){ .target = 1, .booted = -1 };
	install_ok(&r, bundle, &(struct ropts){ .cmdline = cmdline_factory, .decided = &d }, &res);
	assert_string_equal(res.slot, "B");
	expect_installed_b(&r, "2.0", &rootfs, NULL);

	free(bundle);
	image_free(&rootfs);
	rig_free(&r);
}

/* ---- refusals ---- */

struct refusal {
	const char *what;
	char *bundle;
	int code;
	const char *msg;       /* expected in the error message */
	bool marks_bad;        /* refused while streaming: slot B stays marked bad */
	const char *cmdline;
};

TEST(test_refusals)
{
	struct rig r;
	struct image rootfs = make_sqfs("ref-rootfs.sqfs", 200 * 1024, 6);
	struct image kernel = make_raw("ref-kernel.bin", 100 * 1024, 7);
	struct image big = make_raw("ref-big-kernel.bin", 4 * 1024 * 1024 + 2048, 8);
	struct image spl = make_raw("ref-spl.bin", 4096, 9);
	char *good, *marked_bad, *nocmd = th_path("cmdline-none"), *nfs = th_path("cmdline-nfs");
	struct bundle_manifest m;
	uint8_t *raw0;
	size_t raw_len;
	char manifest[1024], hex[65];
	uint8_t junk[8192], junk_sha[32];

	rig_new(&r, "nandsim-128m", "nand-refusals.sim");
	th_write(nocmd, "console=ttyS0 quiet\n", 20);
	th_write(nfs, "console=ttyS0 root=/dev/nfs\n", 28);
	good = trusted_bundle(&r, "ref-good.fbd", "2.0", &rootfs, &kernel, false);
	m = bundle_manifest_of(good);
	size_t sig = BUNDLE_HEADER_SIZE + m.manifest_size + KEYRING_ID_SIZE;
	size_t payload = BUNDLE_HEADER_SIZE + m.manifest_size + BUNDLE_SIG_ENTRY_SIZE;
	size_t vpos;
	{
		size_t len;
		uint8_t *b = th_read(good, &len);
		uint8_t *v = memmem(b, len, "\"version\":\"2.0\"", 15);
		assert_non_null(v);
		vpos = v - b + 13; /* the '0' of "2.0" */
		free(b);
	}

	/* a signed bundle declaring a squashfs that is not one */
	rnd_fill(junk, sizeof(junk), 10);
	sha256(junk, sizeof(junk), junk_sha);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", junk_sha[i]);
	snprintf(manifest, sizeof(manifest), "{\"format_major\":1,\"format_minor\":0,"
		 "\"compatible\":\"%s\",\"version\":\"3\",\"build_date\":\"2026-01-01T00:00:00Z\","
		 "\"images\":[{\"slot\":\"rootfs\",\"type\":\"squashfs\",\"size\":%zu,\"sha256\":"
		 "\"%s\",\"compression\":\"none\",\"stored_size\":%zu}]}", r.l->compatible,
		 sizeof(junk), hex, sizeof(junk));
	char *not_sqfs = craft_bundle("ref-not-sqfs.fbd", manifest, 1, 0, key_trusted, junk,
				      sizeof(junk));
	/* the same, claiming a newer major format, with fields this version does not know */
	snprintf(manifest, sizeof(manifest), "{\"format_major\":4,\"format_minor\":0,"
		 "\"compatible\":\"%s\",\"version\":\"3\",\"build_date\":\"2026-01-01T00:00:00Z\","
		 "\"images\":[{\"slot\":\"rootfs\",\"type\":\"squashfs\",\"size\":%zu,\"sha256\":"
		 "\"%s\",\"compression\":\"zstd\",\"stored_size\":%zu,\"verity\":\"x\"}],"
		 "\"delta\":{\"base\":\"2.0\"}}", r.l->compatible, sizeof(junk), hex, sizeof(junk));
	char *newer = craft_bundle("ref-newer.fbd", manifest, 4, 0, key_trusted, junk,
				   sizeof(junk));
	char *newer_m = craft_bundle("ref-newer-m.fbd", manifest, 1, 0, key_trusted, junk,
				     sizeof(junk));

	struct refusal cases[] = {
		{ "wrong signature", mutate_bundle(good, "ref-sig.fbd", sig + 5, 0x20, 0),
		  -EKEYREJECTED, "does not verify", false, NULL },
		{ "unknown key", make_bundle("ref-unknown.fbd", r.l->compatible, &(struct bspec){
		  "2.0", &rootfs, &kernel, NULL, key_untrusted, NULL, false }),
		  -ENOKEY, "signed only by unknown key", false, NULL },
		{ "unsigned", make_bundle("ref-unsigned.fbd", r.l->compatible, &(struct bspec){
		  "2.0", &rootfs, &kernel, NULL, NULL, NULL, false }),
		  -ENOKEY, "not signed", false, NULL },
		{ "tampered manifest", mutate_bundle(good, "ref-manifest.fbd", vpos, '0' ^ '1', 0),
		  -EKEYREJECTED, "manifest tampered", false, NULL },
		{ "tampered payload byte", mutate_bundle(good, "ref-payload.fbd",
		  payload + rootfs.len / 2, 0x01, 0), -EBADMSG,
		  "does not match its sha256 in the signed index", true, NULL },
		{ "truncated in the manifest", mutate_bundle(good, "ref-trunc-m.fbd", 0, 0,
		  BUNDLE_HEADER_SIZE + 10), -ENODATA, "manifest", false, NULL },
		{ "truncated in the payload", mutate_bundle(good, "ref-trunc-p.fbd", 0, 0,
		  payload + rootfs.len + 1000), -ENODATA, "image 1", true, NULL },
		{ "wrong compatible", make_bundle("ref-compat.fbd", r.l->compatible, &(struct bspec){
		  "2.0", &rootfs, &kernel, NULL, key_trusted, "acme,other-board", false }),
		  -EMEDIUMTYPE, "bundle is for \"acme,other-board\"", false, NULL },
		{ "image larger than the slot",
		  trusted_bundle(&r, "ref-big.fbd", "2.0", &rootfs, &big, false),
		  -EFBIG, "larger than partition 'kernel-b'", false, NULL },
		{ "not a squashfs", not_sqfs, -EBADMSG, "not a squashfs", false, NULL },
		{ "newer major format (header)", newer, -EPROTONOSUPPORT,
		  "bundle format 4.0, this flashd reads 1.x to 3.x", false, NULL },
		{ "newer major format (manifest, unknown fields)", newer_m, -EPROTONOSUPPORT,
		  "manifest: format 4.x", false, NULL },
		{ "member the slot has no place for", make_bundle("ref-spl.fbd", r.l->compatible,
		  &(struct bspec){ "2.0", &rootfs, &spl, "spl", key_trusted, NULL, false }),
		  -ENXIO, "bundle image 'spl' has no place in slot B", false, NULL },
		{ "booted from no slot", strdup(good), -ENOENT, "cannot tell which slot is booted",
		  false, nocmd },
		/* a root the layout does not know could be a slot: nothing is written */
		{ "booted slot unknown", strdup(good), -EBUSY, "could be the running root", false,
		  nfs },
	};

	/* the unmodified bundle is fine (so each refusal is the mutation's doing) */
	raw0 = env_raw(&r, &raw_len);
	install_ok(&r, good, NULL, NULL);
	expect_installed_b(&r, "2.0", &rootfs, &kernel);
	env_raw_restore(&r, raw0);
	expect_env(&r, r.base_env, "env restored");
	marked_bad = env_b_marked_bad(&r);

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const struct refusal *c = &cases[i];
		struct rres res;
		int k = run_install(&r, c->bundle, &(struct ropts){ .cmdline = c->cmdline }, &res);
		uint8_t *raw;
		size_t len;

		if (k != c->code || !strstr(res.err.msg, c->msg))
			fail_msg("%s: got %d \"%s\", expected %d \"%s\"", c->what, k, res.err.msg,
				 c->code, c->msg);
		assert_int_equal(res.phase, INSTALL_PHASE_FAILED);
		raw = env_raw(&r, &len);
		if (!c->marks_bad) {
			/* no store at all: the env copies are byte for byte what they were */
			if (memcmp(raw, raw0, len))
				fail_msg("%s: the env was written", c->what);
		} else {
			char *order = NULL;
			struct env *e = NULL;
			struct error eerr = {};
			/* B is out of BOOT_ORDER, everything else is as it was */
			expect_env(&r, marked_bad, c->what);
			assert_int_equal(env_open_layout(r.l, r.target, NULL, 0, &e, &eerr), 0);
			assert_int_equal(env_get(e, "BOOT_ORDER", &order), 0);
			assert_null(strchr(order, 'B'));
			free(order);
			env_close(e);
		}
		/* the board still boots the running slot; a B marked bad is never tried */
		assert_int_equal(boot_pick(&r), 0);
		if (c->marks_bad)
			boot_never_b(&r, c->what);
		env_raw_restore(&r, raw0);
		free(raw);
		free(c->bundle);
	}
	printf("install refusals: %zu cases\n", ELEMENTSOF(cases));

	/* issue 13 item 1: the booted slot is never a target, whatever the
	 * bundle; refused before any store */
	for (int corrupt = 0; corrupt < 2; corrupt++) {
		struct rres res;
		char *bad = corrupt ? mutate_bundle(good, "ref-payload-a.fbd",
						    payload + rootfs.len / 2, 0x01, 0) : strdup(good);
		uint8_t *raw;
		size_t len;
		int k = run_install(&r, bad, &(struct ropts){ .slot = "A" }, &res);

		if (k != -EBUSY || !strstr(res.err.msg, "it is the booted slot"))
			fail_msg("install into the booted slot: got %d \"%s\"", k, res.err.msg);
		raw = env_raw(&r, &len);
		assert_memory_equal(raw, raw0, len);
		assert_int_equal(res.stats.bytes_written, 0);
		free(raw);
		free(bad);
	}

	/* issue 13 item 13: booted B failed its health check (out of
	 * BOOT_ORDER="A"): the inactive slot A is the only one left to boot */
	{
		char *cmd_b = th_path("cmdline-b"), *only_a;
		struct env *e = NULL;
		struct env_txn *t = NULL;
		struct error eerr = {};
		struct rres res;
		uint8_t *raw1, *raw;
		size_t len;
		int k;

		th_write(cmd_b, "flashd.slot=B\n", 14);
		assert_int_equal(env_open_layout(r.l, r.target, NULL, 0, &e, &eerr), 0);
		assert_int_equal(env_txn_new(e, &t), 0);
		assert_int_equal(env_txn_set(t, "BOOT_ORDER", "A"), 0);
		assert_int_equal(env_txn_set(t, "BOOT_B_LEFT", "0"), 0);
		assert_int_equal(env_txn_set(t, "FLASHD_B_STATE", "bad"), 0);
		assert_int_equal(env_txn_commit(t, &eerr), 0);
		env_txn_free(t);
		env_close(e);
		only_a = env_dump(&r);
		raw1 = env_raw(&r, &len);
		k = run_install(&r, good, &(struct ropts){ .cmdline = cmd_b }, &res);
		if (k != -EBUSY || !strstr(res.err.msg, "last slot in BOOT_ORDER"))
			fail_msg("install into the last slot of BOOT_ORDER: got %d \"%s\"", k,
				 res.err.msg);
		raw = env_raw(&r, &len);
		assert_memory_equal(raw, raw1, len);
		expect_env(&r, only_a, "install into the only bootable slot refused");
		assert_int_equal(boot_pick(&r), 0);
		free(raw);
		free(raw1);
		free(only_a);
		free(cmd_b);
		env_raw_restore(&r, raw0);
	}

	free(raw0);
	free(marked_bad);
	free(good);
	free(nocmd);
	free(nfs);
	image_free(&rootfs);
	image_free(&kernel);
	image_free(&big);
	image_free(&spl);
	rig_free(&r);
}

/* UBI slots need the kernel's UBI: on the simulator the install refuses
 * at the manifest, before the mark-bad store, and says why. */
/* The downgrade policy against the booted slot A's recorded 1.0: an older
 * bundle is refused before the first byte (no env store, no erase of B),
 * naming both versions; the caller's override, warn and allow install it;
 * a newer one by Debian's order (1.10 > 1.9 > 1.0) or an equal one is no
 * downgrade. */
TEST(test_downgrade_policy)
{
	struct rig r;
	struct image rootfs = make_sqfs("dg-rootfs.sqfs", 200 * 1024, 11);
	char *old, *same, *newer;
	static const struct {
		enum install_downgrade_policy policy;
		bool allow;
		enum install_downgrade want;
	} allowed[] = {
		{ INSTALL_DOWNGRADE_POLICY_REFUSE, true, INSTALL_DOWNGRADE_OVERRIDDEN },
		{ INSTALL_DOWNGRADE_POLICY_WARN, false, INSTALL_DOWNGRADE_WARNED },
		{ INSTALL_DOWNGRADE_POLICY_ALLOW, false, INSTALL_DOWNGRADE_ALLOWED },
	};
	uint64_t mutations;
	struct rres res;
	uint8_t *raw0, *raw;
	size_t len0, len;
	int k;

	rig_new(&r, "nandsim-128m", "nand-downgrade.sim");
	old = trusted_bundle(&r, "dg-old.fbd", "0.9.9", &rootfs, NULL, false);
	same = trusted_bundle(&r, "dg-same.fbd", "1.0", &rootfs, NULL, false);
	newer = trusted_bundle(&r, "dg-new.fbd", "1.0.1~rc1", &rootfs, NULL, false);
	raw0 = env_raw(&r, &len0);
	mutations = sim_info(&r).cnt.mutations;
	k = run_install(&r, old, &(struct ropts){ .downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE },
			&res);
	assert_int_equal(k, -EPERM);
	assert_non_null(strstr(res.err.msg, "bundle version 0.9.9 is older than version 1.0 of "
				"the running slot A"));
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_REFUSED);
	assert_string_equal(res.stats.running_version, "1.0");
	assert_int_equal(res.stats.erases, 0);
	/* nothing erased or programmed anywhere, the env copies as they were */
	assert_int_equal(sim_info(&r).cnt.mutations, mutations);
	raw = env_raw(&r, &len);
	assert_int_equal(len, len0);
	assert_memory_equal(raw, raw0, len);
	free(raw);

	for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
		install_ok(&r, old, &(struct ropts){ .downgrade = allowed[i].policy,
			   .allow_downgrade = allowed[i].allow }, &res);
		assert_int_equal(res.stats.downgrade, allowed[i].want);
		assert_string_equal(res.stats.running_version, "1.0");
		env_raw_restore(&r, raw0);
	}
	install_ok(&r, same, &(struct ropts){ .downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE }, &res);
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_NONE);
	env_raw_restore(&r, raw0);
	install_ok(&r, newer, &(struct ropts){ .downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE }, &res);
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_NONE);
	/* provisioning: no slot runs, nothing to compare with */
	env_raw_restore(&r, raw0);
	install_ok(&r, old, &(struct ropts){ .downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE,
		   .slot = "B", .cmdline = cmdline_factory }, &res);
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_NONE);
	assert_string_equal(res.stats.running_version, "");
	free(raw0);
	free(old);
	free(same);
	free(newer);
	image_free(&rootfs);
	rig_free(&r);
}

/* The running slot's version comes from the signed manifest the install
 * kept for it (block_record.h), not from the env: with B running 2.0 and
 * the env saying 0.5, 1.0 is refused. The kept manifest is verified again:
 * without a key of the keyring that signed it (-ENOKEY) and without one
 * kept (-ENOENT) the env's version is taken; a flipped byte is never
 * trusted, nor the env in its place: refused, or overridden. */
TEST(test_downgrade_kept_manifest)
{
	struct rig r;
	struct image root2 = make_sqfs("km-2.sqfs", 200 * 1024, 21);
	struct image root1 = make_sqfs("km-1.sqfs", 200 * 1024, 22);
	_cleanup_free_ char *sdir = testlib_tmp_dir("km-sdir"), *kept = NULL;
	_cleanup_free_ char *cmdline_b = th_path("km-cmdline-b"), *v2 = NULL, *v1 = NULL;
	_cleanup_keyring_ struct keyring *none = NULL;
	const struct ropts refuse_on_b = { .cmdline = cmdline_b, .state_dir = sdir,
					   .downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE };
	struct bundle_manifest m;
	struct error err = {};
	struct rres res;

	th_write(cmdline_b, "flashd.slot=B\n", 14);
	rig_new(&r, "nandsim-128m", "nand-kept.sim");
	v2 = trusted_bundle(&r, "km-2.fbd", "2.0", &root2, NULL, false);
	v1 = trusted_bundle(&r, "km-1.fbd", "1.0", &root1, NULL, false);
	kept = testlib_asprintf("%s/manifest-%s-B.bin", sdir, r.g->name);
	install_ok(&r, v2, &(struct ropts){ .state_dir = sdir }, &res);
	assert_int_equal(block_record_manifest_load(sdir, r.g->name, "B", ring, r.l->compatible,
						    &m, &err), 0);
	assert_string_equal(m.version, "2.0");
	set_env_var(&r, "FLASHD_B_VERSION", "0.5");
	assert_int_equal(run_install(&r, v1, &refuse_on_b, &res), -EPERM);
	assert_int_equal(res.stats.running_version_from, INSTALL_VERSION_FROM_MANIFEST);
	assert_string_equal(res.stats.running_version, "2.0");
	assert_int_equal(res.stats.erases, 0);

	/* a key no longer in the keyring: nothing verifies it */
	assert_int_equal(keyring_new(&none), 0);
	assert_int_equal(block_record_manifest_load(sdir, r.g->name, "B", none, NULL, &m, &err),
			 -ENOKEY);
	/* one byte of the signed manifest flipped */
	testlib_poke(kept, BUNDLE_HEADER_SIZE + 3, 0x01);
	assert_int_equal(block_record_manifest_load(sdir, r.g->name, "B", ring, NULL, &m, &err),
			 -EKEYREJECTED);
	assert_int_equal(run_install(&r, v1, &refuse_on_b, &res), -EPERM);
	assert_int_equal(res.stats.running_version_from, INSTALL_VERSION_FROM_UNVERIFIED);
	assert_string_equal(res.stats.running_version, "");
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_REFUSED);
	assert_non_null(strstr(res.err.msg, "kept manifest"));
	install_ok(&r, v1, &(struct ropts){ .cmdline = cmdline_b, .state_dir = sdir,
		   .downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE, .allow_downgrade = true }, &res);
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_OVERRIDDEN);

	/* none kept: the env's, as before */
	assert_int_equal(unlink(kept), 0);
	assert_int_equal(block_record_manifest_load(sdir, r.g->name, "B", ring, NULL, &m, &err),
			 -ENOENT);
	install_ok(&r, v1, &refuse_on_b, &res);
	assert_int_equal(res.stats.running_version_from, INSTALL_VERSION_FROM_ENV);
	assert_string_equal(res.stats.running_version, "0.5");
	assert_int_equal(res.stats.downgrade, INSTALL_DOWNGRADE_NONE);
	testlib_rm_rf(sdir);
	image_free(&root1);
	image_free(&root2);
	rig_free(&r);
}

TEST(test_ubi_on_sim_refused)
{
	struct rig r;
	struct image rootfs = make_sqfs("ubi-rootfs.sqfs", 200 * 1024, 11);
	struct rres res;
	char *bundle;
	uint64_t programs;

	(void)state;
	rig_new(&r, "nand-ubi", "ubi-refused.sim");
	bundle = trusted_bundle(&r, "ubi.fbd", "2.0", &rootfs, NULL, false);
	programs = sim_info(&r).cnt.programs;
	assert_int_equal(run_install(&r, bundle, NULL, &res), -EOPNOTSUPP);
	assert_non_null(strstr(res.err.msg, "UBI volume rootfs_b: the simulator has no UBI"));
	assert_int_equal(res.phase, INSTALL_PHASE_FAILED);
	assert_string_equal(res.slot, "B");
	expect_env(&r, r.base_env, "UBI install refused on the simulator");
	assert_int_equal(sim_info(&r).cnt.programs, programs);
	free(bundle);
	image_free(&rootfs);
	rig_free(&r);
}

/* More bad blocks in the target than room for the image: refused while
 * writing, slot stays marked bad, the running slot still boots. */
TEST(test_no_good_blocks_left)
{
	struct rig r;
	struct rres res;
	struct image rootfs = make_sqfs("nospc-rootfs.sqfs", 100 * 1024, 11);
	struct image kernel = make_raw("nospc-kernel.bin", 30 * 128 * 1024, 12);
	const struct layout_partition *kb;
	struct nsim *s;
	char *bundle;

	rig_new(&r, "nandsim-128m", "nand-nospc.sim");
	kb = member_part(&r, 1, "kernel");
	assert_int_equal(kb->size / r.eb, 32);
	s = sim_open(&r);
	for (uint64_t i = 3; i < 6; i++)
		assert_int_equal(nsim_set_factory_bad(s, part_block(&r, kb, i)), 0);
	nsim_close(s);
	bundle = trusted_bundle(&r, "nospc.fbd", "2.0", &rootfs, &kernel, true);
	install_refused(&r, bundle, &res, -ENOSPC, "partition 'kernel-b'",
			"no good erase block left", NULL);
	expect_b_marked_bad(&r, "after -ENOSPC");
	free(bundle);
	image_free(&rootfs);
	image_free(&kernel);
	rig_free(&r);
}

/* The flash does not keep what was written to a block of B's rootfs: the
 * read-back catches it, the block is programmed a second time, fails
 * again and is marked bad; the data goes on the next good block and B is
 * activated holding the image (fails on main: the install stopped there
 * with -EBADMSG, InvalidBundle: a flash fault blamed on the bundle). */
struct readback {
	const char *board, *name; /* layout, file names */
	size_t size;              /* of the rootfs image */
	unsigned seed, block;     /* the rootfs-b block that does not keep its data */
	bool gzip;
	int (*fault)(struct nsim *s, uint64_t block);
};

static void readback_retired(const struct readback *c)
{
	_cleanup_free_ char *sim = testlib_asprintf("%s.sim", c->name);
	_cleanup_free_ char *img = testlib_asprintf("%s-rootfs.sqfs", c->name);
	_cleanup_free_ char *fbd = testlib_asprintf("%s.fbd", c->name);
	struct rig r;
	struct rres res;
	struct image rootfs;
	uint64_t b;
	char *bundle;
	struct nsim *s;

	rig_new(&r, c->board, sim);
	rootfs = make_sqfs(img, c->size, c->seed);
	bundle = trusted_bundle(&r, fbd, "2.0", &rootfs, NULL, c->gzip);
	b = part_block(&r, member_part(&r, 1, "rootfs"), c->block);
	s = sim_open(&r);
	assert_int_equal(c->fault(s, b), 0);
	nsim_close(s);
	install_ok(&r, bundle, NULL, &res);
	assert_int_equal(res.stats.blocks_bad, 1);
	s = sim_open(&r);
	assert_int_equal(nsim_block_isbad(s, b * r.eb), 1);
	nsim_close(s);
	expect_installed_b(&r, "2.0", &rootfs, NULL);
	free(bundle);
	image_free(&rootfs);
	rig_free(&r);
}

static int flip_uncorrectable(struct nsim *s, uint64_t block)
{
	return nsim_set_block_flip(s, block, NSIM_FLIP_UNCORRECTABLE);
}

/* NAND: uncorrectable bitflips in the block. */
TEST(test_readback)
{
	static const struct readback nand = {
		"nandsim-128m", "nand-readback", 500 * 1024, 60, 2, true, flip_uncorrectable,
	};

	readback_retired(&nand);
}


static int stuck_bit(struct nsim *s, uint64_t block)
{
	return nsim_set_block_faults(s, block, NSIM_FAULT_STUCK_BIT);
}

/* A bit the NOR flash did not keep, with no ECC to notice (a stuck cell:
 * the program reported success): only the read-back catches it, the
 * block is retired, the data goes on. */
TEST(test_readback_silent)
{
	static const struct readback nor = {
		"nor-router-16m", "nor-readback", 300 * 1024, 61, 3, false, stuck_bit,
	};

	readback_retired(&nor);
}
