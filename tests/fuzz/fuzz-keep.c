/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the keep-list parser (boot_gen_keep_parse) and the
 * migration (boot_gen_migrate) it feeds. Input: the text of a keep.d
 * file. Every accepted entry is applied from a fixed hostile old upper
 * (symlinks inside, outside, looping; dot names; brackets) to a fresh new
 * upper in a scratch directory. Invariants (abort when broken): every
 * accepted entry is absolute with no "." or ".." component; the old upper
 * and a sentinel tree beside it keep every byte; nothing appears in the
 * scratch directory but the two uppers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot/boot_gen.h"
#include "boot/boot_gen_migrate.h"
#include "../unit/tree-digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256], old_up[300], new_up[300], sentinel[300];
static uint64_t old_digest, sentinel_digest;

static uint64_t digest(const char *path)
{
	uint64_t h = 0;

	if (tree_digest(path, &h) < 0)
		abort();
	return h;
}

static void mk(const char *rel, const char *text, const char *link)
{
	char path[600], *slash;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = path + strlen(dir) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	if (link) {
		if (symlink(link, path) < 0)
			abort();
	} else {
		FILE *f = fopen(path, "w");
		if (!f)
			abort();
		fputs(text, f);
		fclose(f);
	}
}

static void cleanup(void)
{
	boot_gen_rmtree(dir);
}

static void fixture(void)
{
	char target[600];
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(dir, sizeof(dir), "%s/fuzz-keep-XXXXXX", tmp);
	if (!mkdtemp(dir))
		abort();
	snprintf(old_up, sizeof(old_up), "%s/old", dir);
	snprintf(new_up, sizeof(new_up), "%s/new", dir);
	snprintf(sentinel, sizeof(sentinel), "%s/sentinel", dir);
	mk("sentinel/file", "sentinel\n", NULL);
	mk("old/etc/config/a", "a\n", NULL);
	mk("old/etc/config/.h", "h\n", NULL);
	mk("old/data/d", "d\n", NULL);
	mk("old/[x]/y", "y\n", NULL);
	mk("old/..a/b", "b\n", NULL);
	mk("old/etc/in", NULL, "../data");
	snprintf(target, sizeof(target), "%s/data", old_up);
	mk("old/etc/abs", NULL, target);
	mk("old/etc/out", NULL, sentinel);
	mk("old/etc/rel", NULL, "../../sentinel");
	mk("old/etc/loop", NULL, "loop");
	mk("old/up", NULL, dir);
	old_digest = digest(old_up);
	sentinel_digest = digest(sentinel);
	atexit(cleanup);
}

static void check_entry(const char *e)
{
	if (e[0] != '/')
		abort();
	for (const char *c = e; (c = strchr(c, '/')); c++)
		if ((c[1] == '.' && (c[2] == '/' || !c[2])) ||
		    (c[1] == '.' && c[2] == '.' && (c[3] == '/' || !c[3])))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct boot_gen_list keep = { 0 };
	char *text;
	struct error err = {};
	unsigned line = 0;
	int entries = 0;
	DIR *d;
	struct dirent *de;

	if (size > 65536)
		return 0;
	if (!dir[0])
		fixture();
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)boot_gen_keep_parse(text, &keep, &line);
	free(text);
	for (size_t i = 0; i < keep.n; i++)
		check_entry(keep.v[i]);
	if (mkdir(new_up, 0755) < 0)
		abort();
	(void)boot_gen_migrate(old_up, new_up, &keep, &err);
	boot_gen_list_done(&keep);
	if (digest(old_up) != old_digest || digest(sentinel) != sentinel_digest)
		abort();
	d = opendir(dir);
	if (!d)
		abort();
	while ((de = readdir(d)))
		entries++;
	closedir(d);
	if (entries != 5) /* ".", "..", old, new, sentinel */
		abort();
	if (boot_gen_rmtree(new_up) < 0)
		abort();
	return 0;
}
