/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* boot_overlay: what a JFFS2 partition holds (erased / JFFS2 / foreign)
 * on the flash simulator, and the overlayfs probe of an upper directory. */
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
#include <dirent.h>
#include <cmocka.h>

#include "boot/boot_overlay.h"
#include "cleanup.h"
#include "flash.h"
#include "jffs2.h"
#include "nsim.h"
#include "testlib.h"

static struct flash *make(enum nsim_type type, const unsigned *bad, size_t nbad, char *path)
{
	struct nsim_geometry g = type == NSIM_NAND ?
		(struct nsim_geometry){ NSIM_NAND, 32 * 16384, 16384, 512, 16 } :
		(struct nsim_geometry){ NSIM_NOR, 16 * 65536, 65536, 1, 0 };
	char spec[300];
	struct flash *f;
	struct nsim *s;
	int fd;

	strcpy(path, "/tmp/test-boot-overlay-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(nsim_create(path, &g, NSIM_CREATE_FORCE), 0);
	assert_int_equal(nsim_open(path, true, &s), 0);
	for (size_t i = 0; i < nbad; i++)
		assert_int_equal(nsim_set_factory_bad(s, bad[i]), 0);
	nsim_close(s);
	snprintf(spec, sizeof(spec), "sim:%s", path);
	assert_int_equal(flash_open(spec, true, &f), 0);
	return f;
}

static void classify_lifecycle(enum nsim_type type, const unsigned *bad, size_t nbad)
{
	enum boot_overlay_medium m;
	char path[64];
	struct flash *f = make(type, bad, nbad, path);
	uint64_t first = nbad && bad[0] == 0 ? f->info.erasesize : 0;
	uint8_t page[512];

	/* fresh: all 0xFF without cleanmarkers */
	assert_int_equal(boot_overlay_classify(f, &m), 0);
	assert_int_equal(m, BOOT_OVERLAY_MEDIUM_ERASED);
	/* after flash_erase -j */
	assert_int_equal(jffs2_erase_partition(f, 0, NULL), 0);
	assert_int_equal(boot_overlay_classify(f, &m), 0);
	assert_int_equal(m, BOOT_OVERLAY_MEDIUM_JFFS2);
	/* issue 14.4: a half-erased first block (garbage), the other blocks
	 * JFFS2: the kernel mounts it (and erases that block again); it was
	 * classified foreign and the user's data sent to tmpfs */
	assert_int_equal(flash_erase_block(f, first), 0);
	memset(page, 0x5a, sizeof(page));
	assert_int_equal(flash_write(f, first, page, sizeof(page)), 0);
	assert_int_equal(boot_overlay_classify(f, &m), 0);
	assert_int_equal(m, BOOT_OVERLAY_MEDIUM_JFFS2);
	/* garbage in the first block, every other one erased: no JFFS2 at all */
	for (uint64_t off = first + f->info.erasesize; off < f->info.size; off += f->info.erasesize)
		if (flash_block_isbad(f, off) == 0)
			assert_int_equal(flash_erase_block(f, off), 0);
	assert_int_equal(boot_overlay_classify(f, &m), 0);
	assert_int_equal(m, BOOT_OVERLAY_MEDIUM_FOREIGN);
	/* first block erased by JFFS2's GC, nodes further on: still JFFS2 */
	assert_int_equal(flash_erase_block(f, first), 0);
	assert_int_equal(flash_erase_block(f, first + 2 * f->info.erasesize), 0);
	page[0] = 0x85;
	page[1] = 0x19;
	assert_int_equal(flash_write(f, first + 2 * f->info.erasesize, page, sizeof(page)), 0);
	for (uint64_t off = 0; off < f->info.size; off += f->info.erasesize)
		if (off != first + 2 * f->info.erasesize && flash_block_isbad(f, off) == 0)
			assert_int_equal(flash_erase_block(f, off), 0);
	assert_int_equal(boot_overlay_classify(f, &m), 0);
	assert_int_equal(m, BOOT_OVERLAY_MEDIUM_JFFS2);
	flash_close(f);
	unlink(path);
}

TEST(test_classify_nor)
{
	classify_lifecycle(NSIM_NOR, NULL, 0);
}

TEST(test_classify_nand_first_block_bad)
{
	static const unsigned bad[] = { 0 };
	classify_lifecycle(NSIM_NAND, bad, 1);
}

TEST(test_probe_leaves_nothing)
{
	char dir[] = "/tmp/test-boot-probe-XXXXXX";
	struct boot_overlay_probe p = { 0 };
	struct dirent *de;
	DIR *d;
	int n = 0;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(boot_overlay_probe(dir, &p), 0);
	assert_true(p.done);
	if (geteuid() == 0)
		assert_true(p.whiteout); /* any Linux fs root can mknod c 0 0 in /tmp */
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		n++;
	closedir(d);
	assert_int_equal(n, 2); /* . and .. */
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(boot_overlay_probe("/nonexistent-dir", &p), -ENOENT);
}
