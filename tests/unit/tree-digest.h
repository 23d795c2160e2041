/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A digest of a directory tree: every name, type and mode, each regular
 * file's size and bytes, each link target (FNV-1a), not following
 * symlinks, so that "unchanged" is checked, not assumed. Shared by
 * test-boot-gen and the keep-list fuzzer (tests/fuzz/fuzz-keep.c);
 * header-only: the fuzzer links no test library. */
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t tree_digest_; /* nftw() takes no user data */

static inline void tree_digest_bytes(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tree_digest_ = (tree_digest_ ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
}

static inline int tree_digest_one(const char *path, const struct stat *st, int flag,
				  struct FTW *f)
{
	char buf[4096];
	ssize_t n;

	tree_digest_bytes(path, strlen(path));
	tree_digest_bytes(&st->st_mode, sizeof(st->st_mode));
	if (S_ISREG(st->st_mode)) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		tree_digest_bytes(&st->st_size, sizeof(st->st_size));
		while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
			tree_digest_bytes(buf, n);
		if (fd >= 0)
			close(fd);
	} else if (S_ISLNK(st->st_mode) && (n = readlink(path, buf, sizeof(buf))) > 0) {
		tree_digest_bytes(buf, n);
	}
	(void)flag;
	(void)f;
	return 0;
}

/* 0 and the digest of the tree at path, or -errno */
static inline int tree_digest(const char *path, uint64_t *ret)
{
	tree_digest_ = 14695981039346656037ull;
	if (nftw(path, tree_digest_one, 16, FTW_PHYS) < 0)
		return -errno;
	*ret = tree_digest_;
	return 0;
}
