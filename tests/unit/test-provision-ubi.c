/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The UBI partition's plan for provisioning: the volume table of
 * layouts/nand-ubi.json against the partition's bad blocks and UBI's
 * reserves, and the plan's text (what --dry-run shows). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cleanup.h"
#include "layout.h"
#include "provision_ubi.h"
#include "testlib.h"

static struct layout *load(void)
{
	const char *top = getenv("top_srcdir");
	_cleanup_free_ char *path = NULL;
	struct error err = {};
	struct layout *l = NULL;

	assert_true(asprintf(&path, "%s/layouts/nand-ubi.json", top ? top : ".") > 0);
	assert_int_equal(layout_load(path, &l, &err), 0);
	assert_int_equal(l->n_ubis, 1);
	return l;
}

/* 2024 PEBs of 128 KiB in the partition, 2048 on the chip: reserve 2 + 4 +
 * 40 (20 per 1024), LEB 126976 (2 KiB pages): 1978 LEBs; the volumes take
 * 67 + 793 + 67 + 793 + 199 = 1919 */
TEST(test_plan_nand_ubi)
{
	_cleanup_layout_ struct layout *l = load();
	struct provision_ubi_plan p;
	struct error err = {};

	(void)state;
	assert_int_equal(provision_ubi_plan(&l->ubis[0], 0, &p, &err), 0);
	assert_int_equal(p.pebs, 2024);
	assert_int_equal(p.bad_limit, 40);
	assert_int_equal(p.leb_size, 126976);
	assert_int_equal(p.lebs_avail, 1978);
	assert_int_equal(p.lebs_needed, 1919);
	/* bad blocks within the reserve cost no volume space */
	assert_int_equal(provision_ubi_plan(&l->ubis[0], 40, &p, &err), 0);
	assert_int_equal(p.lebs_avail, 1978);
	/* 59 beyond it still fit, exactly */
	assert_int_equal(provision_ubi_plan(&l->ubis[0], 99, &p, &err), 0);
	assert_int_equal(p.lebs_avail, 1919);
}

TEST(test_plan_too_many_bad)
{
	_cleanup_layout_ struct layout *l = load();
	struct provision_ubi_plan p = { .pebs = 12345 };
	struct error err = {};

	(void)state;
	assert_int_equal(provision_ubi_plan(&l->ubis[0], 100, &p, &err), -ENOSPC);
	assert_int_equal(p.pebs, 12345); /* untouched on failure */
	assert_non_null(strstr(err.msg, "partition ubi"));
	assert_non_null(strstr(err.msg, "need 1919 LEBs"));
	assert_non_null(strstr(err.msg, "1918 are left"));
	assert_non_null(strstr(err.msg, "100 bad"));
}

TEST(test_describe)
{
	_cleanup_layout_ struct layout *l = load();
	char buf[512];

	(void)state;
	provision_ubi_describe(&l->ubis[0], false, buf, sizeof(buf));
	assert_string_equal(buf, "UBI: ubiformat (erase counters kept), 5 volumes: kernel_a 8192 KiB "
			    "static, rootfs_a 98304 KiB static, kernel_b 8192 KiB static, rootfs_b "
			    "98304 KiB static, overlay 24576 KiB dynamic");
	/* a short buffer is cut, never overrun */
	provision_ubi_describe(&l->ubis[0], false, buf, 40);
	assert_int_equal(strlen(buf), 39);
}
