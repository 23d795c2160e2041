/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fixtures shared by the unit tests (see testlib.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "error.h"
#include "flash.h"
#include "layout_parse.h"
#include "testlib.h"

char *testlib_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		fail_msg("out of memory");
	return p;
}

char *testlib_src_path(const char *rel)
{
	const char *top = getenv("top_srcdir");

	return testlib_asprintf("%s/%s", top ? top : TOP_SRCDIR, rel);
}

char *testlib_tmp_file(const char *name)
{
	char *path = testlib_asprintf("/tmp/test-%s-XXXXXX", name);
	int fd = mkstemp(path);

	if (fd < 0)
		fail_msg("mkstemp %s: %s", path, strerror(errno));
	close(fd);
	return path;
}

char *testlib_tmp_dir(const char *name)
{
	char *path = testlib_asprintf("/tmp/test-%s-XXXXXX", name);

	if (!mkdtemp(path))
		fail_msg("mkdtemp %s: %s", path, strerror(errno));
	return path;
}

char *testlib_sim_new(const char *name, const struct nsim_geometry *g, const unsigned *bad,
		      size_t n_bad)
{
	char *path = testlib_tmp_file(name);
	struct nsim *s;
	int r;

	r = nsim_create(path, g, NSIM_CREATE_FORCE);
	if (r < 0)
		fail_msg("nsim_create %s: %s", path, strerror(-r));
	r = nsim_open(path, true, &s);
	if (r < 0)
		fail_msg("nsim_open %s: %s", path, strerror(-r));
	for (size_t i = 0; i < n_bad; i++)
		if (nsim_set_factory_bad(s, bad[i]) < 0)
			fail_msg("%s: cannot mark block %u bad", path, bad[i]);
	nsim_close(s);
	return path;
}

struct nsim_geometry testlib_sim_geometry(const struct layout_device *d)
{
	bool nand = d->type == FLASH_NAND;

	return (struct nsim_geometry){
		.type = nand ? NSIM_NAND : NSIM_NOR,
		.size = d->size,
		.erasesize = d->erasesize,
		.writesize = nand ? d->writesize : 1,
		.oobsize = nand ? d->oobsize : 0,
	};
}

struct layout *testlib_layout_load(const char *name)
{
	size_t n = strlen(name);
	bool ext = n > 5 && !strcmp(name + n - 5, ".json"); /* "nand-ubi" or "nand-ubi.json" */
	/* a name in layouts/, or a path from the top of the source tree */
	char *path = testlib_asprintf("%s/%s%s%s",
				      getenv("top_srcdir") ? getenv("top_srcdir") : TOP_SRCDIR,
				      strchr(name, '/') ? "" : "layouts/", name, ext ? "" : ".json");
	struct error err = {};
	struct layout *l = NULL;

	if (layout_load(path, &l, &err) < 0)
		fail_msg("layout %s: %s", path, error_message(&err));
	free(path);
	return l;
}

struct layout *testlib_layout_parse(const char *json)
{
	struct error err = {};
	struct layout *l = NULL;

	if (layout_parse(json, "test layout", &l, &err) < 0)
		fail_msg("test layout: %s", error_message(&err));
	return l;
}

void testlib_poke(const char *path, uint64_t off, uint8_t byte)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	if (pwrite(fd, &byte, 1, (off_t)off) != 1)
		fail_msg("%s: write at %" PRIu64 ": %s", path, off, strerror(errno));
	close(fd);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	if (remove(path) < 0)
		fail_msg("remove %s: %s", path, strerror(errno));
	return 0;
}

void testlib_rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 && errno == ENOENT)
		return;
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fail_msg("walking %s: %s", path, strerror(errno));
}

void testlib_unlinkp(char **path)
{
	if (!*path)
		return;
	unlink(*path);
	free(*path);
	*path = NULL;
}
