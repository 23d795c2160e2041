/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The generic flash layer: backend table, windows, wrappers, counters;
 * and the MTD backend's sysfs parsing against a fake /sys/class/mtd. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "error.h"
#include "flash.h"
#include "nsim.h"
#include "testlib.h"
#include "util.h"

#define ES (16u * 1024)
#define PS 512u

struct fx {
	char *path;
	char spec[80];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct nsim_geometry g = { NSIM_NAND, 32 * ES, ES, PS, 16 };
	static const unsigned bad[] = { 6 };

	fx->path = testlib_sim_new("flash", &g, bad, ELEMENTSOF(bad));
	snprintf(fx->spec, sizeof(fx->spec), "sim:%s", fx->path);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	testlib_unlinkp(&fx->path);
	free(fx);
	return 0;
}

TEST_FIXTURE(test_open_sim_info, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_flash_ struct flash *f = NULL;

	assert_int_equal(flash_open(fx->spec, false, &f), 0);
	assert_string_equal(f->ops->name, "sim");
	assert_int_equal(f->info.type, FLASH_NAND);
	assert_int_equal(f->info.size, 32 * ES);
	assert_int_equal(f->info.erasesize, ES);
	assert_int_equal(f->info.writesize, PS);
	assert_int_equal(f->info.oobsize, 16);
	assert_int_equal(f->info.oobavail, 8);
	assert_string_equal(f->info.name, strrchr(fx->path, '/') + 1);
	assert_int_equal(flash_blocks(f), 32);
	assert_true(f->root == f);
	assert_false(f->writable);
}

TEST_FIXTURE(test_open_errors, setup, teardown)
{
	struct fx *fx = *state;
	struct flash *f = NULL;
	char spec[128];

	assert_int_equal(flash_open("ubi:rootfs", false, &f), -EPROTONOSUPPORT);
	assert_int_equal(flash_open("sim:", false, &f), -EINVAL);
	assert_int_equal(flash_open("", false, &f), -EINVAL);
	assert_int_equal(flash_open("sim:/nonexistent/board.sim", false, &f), -ENOENT);
	/* this host has no MTD: the name lookup finds nothing */
	if (access(FLASH_MTD_SYSFS, F_OK) < 0)
		assert_int_equal(flash_open("mtd:rootfs", false, &f), -ENODEV);
	/* a window suffix that is not aligned or does not fit */
	snprintf(spec, sizeof(spec), "%s@100+16KiB", fx->spec);
	assert_int_equal(flash_open(spec, false, &f), -EINVAL);
	snprintf(spec, sizeof(spec), "%s@16KiB+1MiB", fx->spec);
	assert_int_equal(flash_open(spec, false, &f), -ERANGE);
	snprintf(spec, sizeof(spec), "%s@16KiB+junk", fx->spec);
	assert_int_equal(flash_open(spec, false, &f), -EINVAL);
	assert_null(f);
}

TEST(test_spec_split)
{
	_cleanup_free_ char *base = NULL;
	uint64_t off, size;

	assert_int_equal(flash_spec_split("sim:/a/b.sim", &base, &off, &size), 0);
	assert_int_equal(flash_spec_split("sim:/a@b/c.sim", &base, &off, &size), 0);
	assert_int_equal(flash_spec_split("sim:/a/b.sim@0x8000+64KiB", &base, &off, &size), 1);
	assert_string_equal(base, "sim:/a/b.sim");
	assert_int_equal(off, 0x8000);
	assert_int_equal(size, 64 * 1024);
	free(base);
	base = NULL;
	assert_int_equal(flash_spec_split("/dev/mtd3@128KiB", &base, &off, &size), 1);
	assert_string_equal(base, "/dev/mtd3");
	assert_int_equal(off, 128 * 1024);
	assert_int_equal(size, 0);
	assert_int_equal(flash_spec_split("sim:x@1+0", &base, &off, &size), -EINVAL);
}

TEST_FIXTURE(test_wrappers_check_arguments, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_flash_ struct flash *f = NULL, *ro = NULL;
	uint8_t page[PS];

	memset(page, 0x11, sizeof(page));
	assert_int_equal(flash_open(fx->spec, true, &f), 0);
	assert_int_equal(flash_write(f, 10, page, PS), -EINVAL);       /* unaligned */
	assert_int_equal(flash_write(f, 0, page, 100), -EINVAL);       /* partial page */
	assert_int_equal(flash_write(f, 32 * ES, page, PS), -ERANGE);  /* past the end */
	assert_int_equal(flash_read(f, 32 * ES - 10, page, 11), -ERANGE);
	assert_int_equal(flash_erase_block(f, ES / 2), -EINVAL);
	assert_int_equal(flash_erase_block(f, 32 * ES), -ERANGE);
	assert_int_equal(flash_write_oob(f, 0, page, 9), -EINVAL);     /* > oobavail */
	assert_int_equal(flash_read_oob(f, 3, page, 8), -EINVAL);
	assert_int_equal(flash_block_isbad(f, 6 * ES + 700), 1);       /* any offset in it */
	assert_int_equal(flash_block_isbad(f, 32 * ES), -ERANGE);
	assert_int_equal(flash_unlock(f), 0);
	/* errors from the chip come through unchanged */
	assert_int_equal(flash_erase_block(f, 6 * ES), -EIO);
	assert_int_equal(flash_write(f, 0, page, PS), 0);
	assert_int_equal(flash_write(f, 0, page, PS), -EINVAL);

	assert_int_equal(flash_open(fx->spec, false, &ro), 0);
	assert_int_equal(flash_write(ro, PS, page, PS), -EROFS);
	assert_int_equal(flash_erase_block(ro, 0), -EROFS);
	assert_int_equal(flash_block_markbad(ro, 0), -EROFS);
	assert_int_equal(flash_write_oob(ro, 0, page, 8), -EROFS);
	assert_int_equal(flash_read(ro, 0, page, PS), 0); /* sees the other handle's write */
	assert_int_equal(page[0], 0x11);
}

TEST_FIXTURE(test_windows, setup, teardown)
{
	struct fx *fx = *state;
	struct flash *root = NULL, *w = NULL, *ww = NULL;
	uint8_t page[PS], got[PS];

	assert_int_equal(flash_open(fx->spec, true, &root), 0);
	assert_int_equal(flash_open_window(root, "slot-a", 4 * ES, 8 * ES, &w), 0);
	assert_int_equal(root->refs, 2);
	assert_string_equal(w->info.name, "slot-a");
	assert_int_equal(w->info.size, 8 * ES);
	assert_int_equal(w->base, 4 * ES);
	assert_int_equal(flash_blocks(w), 8);
	/* offsets are relative to the window */
	memset(page, 0x5a, sizeof(page));
	assert_int_equal(flash_write(w, ES, page, PS), 0);
	assert_int_equal(flash_read(root, 5 * ES, got, PS), 0);
	assert_memory_equal(got, page, PS);
	assert_int_equal(flash_block_isbad(w, 2 * ES), 1); /* block 6 of the chip */
	assert_int_equal(flash_count_bad(w), 1);
	assert_int_equal(flash_write(w, 8 * ES, page, PS), -ERANGE);
	/* a window of a window */
	assert_int_equal(flash_open_window(w, "inner", ES, 2 * ES, &ww), 0);
	assert_int_equal(ww->base, 5 * ES);
	assert_int_equal(flash_read(ww, 0, got, PS), 0);
	assert_memory_equal(got, page, PS);
	assert_int_equal(root->refs, 3);
	/* bad windows */
	assert_int_equal(flash_open_window(root, "x", 100, ES, &w), -EINVAL);
	assert_int_equal(flash_open_window(root, "x", 0, ES + 1, &w), -EINVAL);
	assert_int_equal(flash_open_window(root, "x", 30 * ES, 4 * ES, &w), -ERANGE);
	assert_int_equal(flash_open_window(root, "x", 0, 0, &w), -EINVAL);
	/* the root may go first; the windows keep the backend alive (ASan
	 * would catch a use after free here) */
	flash_close(root);
	assert_int_equal(flash_read(w, ES, got, PS), 0);
	assert_memory_equal(got, page, PS);
	flash_close(w);
	assert_int_equal(flash_read(ww, 0, got, PS), 0);
	flash_close(ww);
	flash_close(NULL);
}

TEST_FIXTURE(test_window_spec, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_flash_ struct flash *f = NULL;
	char spec[128];

	snprintf(spec, sizeof(spec), "%s@32KiB+64KiB", fx->spec);
	assert_int_equal(flash_open(spec, true, &f), 0);
	assert_int_equal(f->base, 32 * 1024);
	assert_int_equal(f->info.size, 64 * 1024);
	assert_true(f->root != f);
	assert_int_equal(f->root->refs, 1); /* only the window holds the root */
	flash_close(f);
	snprintf(spec, sizeof(spec), "%s@0x10000", fx->spec);
	assert_int_equal(flash_open(spec, true, &f), 0);
	assert_int_equal(f->info.size, 32 * ES - 0x10000);
}

TEST_FIXTURE(test_stats_per_handle, setup, teardown)
{
	struct fx *fx = *state;
	_cleanup_flash_ struct flash *root = NULL, *w = NULL;
	struct flash_stats st;
	uint8_t buf[2 * PS];

	memset(buf, 0x33, sizeof(buf));
	assert_int_equal(flash_open(fx->spec, true, &root), 0);
	assert_int_equal(flash_open_window(root, "w", 8 * ES, 4 * ES, &w), 0);
	assert_int_equal(flash_erase_block(w, 0), 0);
	assert_int_equal(flash_erase_block(w, ES), 0);
	assert_int_equal(flash_write(w, 0, buf, sizeof(buf)), 0);
	assert_int_equal(flash_read(w, 0, buf, 100), 0);
	assert_int_equal(flash_read(root, 0, buf, 10), 0);
	assert_int_equal(w->stats.erases, 2);
	assert_int_equal(w->stats.writes, 2 * PS);
	assert_int_equal(w->stats.reads, 100);
	assert_int_equal(root->stats.erases, 0);
	assert_int_equal(root->stats.reads, 10);
	/* failed ops are not counted */
	assert_int_equal(flash_erase_block(root, 6 * ES), -EIO);
	assert_int_equal(root->stats.erases, 0);

	/* ECC events: per handle, and the chip's totals in get_stats */
	assert_int_equal(nsim_set_block_flip(flash_sim_nsim(w), 9, NSIM_FLIP_CORRECTED), 0);
	assert_int_equal(flash_read(w, ES, buf, PS), -EUCLEAN);
	assert_int_equal(nsim_set_block_flip(flash_sim_nsim(w), 9, NSIM_FLIP_UNCORRECTABLE), 0);
	assert_int_equal(flash_read(w, ES, buf, PS), -EBADMSG);
	assert_int_equal(w->stats.read_corrected, 1);
	assert_int_equal(w->stats.read_failed, 1);
	assert_int_equal(flash_get_stats(w, &st), 0);
	assert_int_equal(st.corrected, 1);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.badblocks, 0);   /* block 6 is outside this window */
	assert_int_equal(st.erases, 2);
	assert_int_equal(flash_get_stats(root, &st), 0);
	assert_int_equal(st.badblocks, 1);
}

TEST(test_nor_sim)
{
	struct nsim_geometry g = { NSIM_NOR, 4 * 64 * 1024, 64 * 1024, 1, 0 };
	_cleanup_unlink_ char *path = testlib_sim_new("flash-nor", &g, NULL, 0);
	_cleanup_flash_ struct flash *f = NULL;
	uint8_t b[3] = { 1, 2, 3 };
	char spec[64];

	snprintf(spec, sizeof(spec), "sim:%s", path);
	assert_int_equal(flash_open(spec, true, &f), 0);
	assert_int_equal(f->info.type, FLASH_NOR);
	assert_int_equal(f->info.writesize, 1);
	assert_int_equal(f->info.oobsize, 0);
	assert_int_equal(flash_write(f, 7, b, 3), 0);   /* any byte on NOR */
	assert_int_equal(flash_write_oob(f, 0, b, 3), -ENOTSUP);
	assert_int_equal(flash_count_bad(f), 0);
}

TEST(test_type_strings)
{
	assert_string_equal(flash_type_to_string(FLASH_NAND), "nand");
	assert_int_equal(flash_type_from_string("nor"), FLASH_NOR);
	assert_int_equal(flash_type_from_string("NAND"), -EINVAL);
	assert_null(flash_type_to_string(_FLASH_TYPE_MAX));
}

/* ---- MTD backend: sysfs against a fake tree -------------------------------- */

static void put(const char *root, const char *dev, const char *attr, const char *val)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", root, dev);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", root, dev, attr);
	fp = fopen(path, "we");
	assert_non_null(fp);
	fprintf(fp, "%s\n", val);
	fclose(fp);
}

static void fake_mtd(const char *root, const char *dev, const char *name, const char *type,
		     const char *size, bool ecc)
{
	put(root, dev, "name", name);
	put(root, dev, "type", type);
	put(root, dev, "size", size);
	put(root, dev, "erasesize", "131072");
	put(root, dev, "writesize", !strcmp(type, "nand") ? "2048" : "1");
	put(root, dev, "oobsize", !strcmp(type, "nand") ? "64" : "0");
	put(root, dev, "flags", "0xc00");
	put(root, dev, "offset", "1048576");
	if (!ecc)
		return;
	put(root, dev, "oobavail", "38");
	put(root, dev, "bad_blocks", "3");
	put(root, dev, "bbt_blocks", "4");
	put(root, dev, "corrected_bits", "17");
	put(root, dev, "ecc_failures", "2");
	put(root, dev, "ecc_strength", "1");
	put(root, dev, "bitflip_threshold", "1");
}

TEST(test_mtd_sysfs)
{
	char root[] = "/tmp/test-flash-sysfs-XXXXXX";
	struct flash_mtd_sysfs s;
	struct error err = {};
	unsigned idx = 0;
	char dev[32];

	assert_non_null(mkdtemp(root));
	fake_mtd(root, "mtd0", "u-boot-env", "nor", "262144", false);
	fake_mtd(root, "mtd2", "rootfs", "nand", "5368709120", true); /* 5 GiB: > 32 bit */
	fake_mtd(root, "mtd2ro", "rootfs", "nand", "5368709120", true);
	put(root, "mtd3", "name", "no-type");

	assert_int_equal(flash_mtd_find_by_name(root, "rootfs", dev, sizeof(dev)), 0);
	assert_string_equal(dev, "/dev/mtd2");
	assert_int_equal(flash_mtd_find_by_name(root, "u-boot-env", dev, sizeof(dev)), 0);
	assert_string_equal(dev, "/dev/mtd0");
	assert_int_equal(flash_mtd_find_by_name(root, "rootf", dev, sizeof(dev)), -ENODEV);
	assert_int_equal(flash_mtd_find_by_name(root, "rootfs", dev, 5), -ENAMETOOLONG);
	assert_int_equal(flash_mtd_find_by_name("/nonexistent", "x", dev, sizeof(dev)), -ENODEV);
	assert_int_equal(flash_mtd_find_partition(root, "rootfs", dev, sizeof(dev), &idx, &err), 0);
	assert_string_equal(dev, "/dev/mtd2");
	assert_int_equal(idx, 2);
	assert_int_equal(flash_mtd_find_partition(root, "rootf", dev, sizeof(dev), &idx, &err),
			 -ENODEV);
	assert_int_equal(idx, 2);
	assert_non_null(strstr(err.msg, "partition rootf: no MTD device of that name in /tmp/"));

	assert_int_equal(flash_mtd_read_sysfs(root, 2, &s), 0);
	assert_string_equal(s.name, "rootfs");
	assert_string_equal(s.type, "nand");
	assert_int_equal(s.size, 5368709120ull);
	assert_int_equal(s.erasesize, 131072);
	assert_int_equal(s.writesize, 2048);
	assert_int_equal(s.oobsize, 64);
	assert_int_equal(s.oobavail, 38);
	assert_int_equal(s.flags, 0xc00);
	assert_int_equal(s.offset, 1048576);
	assert_true(s.have_ecc);
	assert_int_equal(s.bad_blocks, 3);
	assert_int_equal(s.bbt_blocks, 4);
	assert_int_equal(s.corrected_bits, 17);
	assert_int_equal(s.ecc_failures, 2);
	assert_int_equal(s.ecc_strength, 1);

	assert_int_equal(flash_mtd_read_sysfs(root, 0, &s), 0);
	assert_false(s.have_ecc);
	assert_int_equal(s.oobavail, 0);
	assert_int_equal(flash_mtd_read_sysfs(root, 3, &s), -ENOENT);
	assert_int_equal(flash_mtd_read_sysfs(root, 9, &s), -ENODEV);

	assert_int_equal(flash_mtd_type_from_sysfs("nand"), FLASH_NAND);
	assert_int_equal(flash_mtd_type_from_sysfs("mlc-nand"), FLASH_NAND);
	assert_int_equal(flash_mtd_type_from_sysfs("nor"), FLASH_NOR);
	assert_int_equal(flash_mtd_type_from_sysfs("ram"), FLASH_NOR);
	assert_int_equal(flash_mtd_type_from_sysfs("ubi"), -EMEDIUMTYPE);
	assert_int_equal(flash_mtd_type_from_sysfs("bogus"), -EMEDIUMTYPE);

	testlib_rm_rf(root);
}

TEST(test_mtd_rejects_non_mtd_device)
{
	struct flash *f = NULL;

	/* the backend refuses a path that is not an MTD character device */
	assert_int_equal(flash_mtd_ops.open(&(struct flash){ 0 }, "/dev/null", false), -ENOTTY);
	assert_int_equal(flash_open("/dev/mtd-does-not-exist", false, &f), -ENOENT);
	assert_int_equal(flash_mtd_get_sysfs(NULL, &(struct flash_mtd_sysfs){ 0 }), -ENOTTY);
}
