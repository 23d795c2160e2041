/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay generations: copying the keep paths from the old generation's
 * upper to the new one (boot_gen_migrate.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "boot_gen.h"
#include "boot_gen_migrate.h"
#include "cleanup.h"
#include "util.h"

/* ---- copying: every step is one openat() of one name below a
 * directory fd with O_NOFOLLOW, so nothing in the old upper (symlinks,
 * "..") can lead a read or a write outside the two uppers ---- */

static bool xattr_wanted(const char *name)
{
	if (strncmp(name, "trusted.overlay.", 16))
		return true;
	return !strcmp(name, "trusted.overlay.opaque");
}

/* An inode to read or write xattrs of: an open fd, or (symlinks and
 * whiteouts, which cannot be opened) /proc/self/fd/N of an O_PATH fd. */
struct xnode {
	int fd;
	char path[64];
};

static ssize_t xlist(const struct xnode *x, char *buf, size_t n)
{
	return x->path[0] ? listxattr(x->path, buf, n) : flistxattr(x->fd, buf, n);
}

static ssize_t xget(const struct xnode *x, const char *name, void *buf, size_t n)
{
	return x->path[0] ? getxattr(x->path, name, buf, n) : fgetxattr(x->fd, name, buf, n);
}

static int xset(const struct xnode *x, const char *name, const void *buf, size_t n)
{
	return x->path[0] ? setxattr(x->path, name, buf, n, 0) : fsetxattr(x->fd, name, buf, n, 0);
}

static bool xattr_unsupported(int e)
{
	return e == ENOTSUP || e == ENOENT; /* ENOENT: no /proc in a preinit */
}

/* Buffers sized from the kernel's answer: values of any size copy. */
static int copy_xattrs(const struct xnode *src, const struct xnode *dst)
{
	_cleanup_free_ char *names = NULL;
	ssize_t n;

	for (;;) {
		n = xlist(src, NULL, 0);
		if (n <= 0)
			return n == 0 ? 0 : xattr_unsupported(errno) ? 0 : -errno;
		free(names);
		names = malloc(n);
		if (!names)
			return -ENOMEM;
		n = xlist(src, names, n);
		if (n >= 0)
			break;
		if (errno != ERANGE)
			return -errno;
	}
	for (char *p = names; p < names + n; p += strlen(p) + 1) {
		_cleanup_free_ char *value = NULL;
		ssize_t vl;

		if (!xattr_wanted(p))
			continue;
		vl = xget(src, p, NULL, 0);
		if (vl < 0)
			return errno == ENODATA ? 0 : -errno;
		if (!(value = malloc(vl ? vl : 1)))
			return -ENOMEM;
		vl = xget(src, p, value, vl);
		if (vl < 0)
			return -errno;
		if (xset(dst, p, value, vl) < 0 && errno != ENOTSUP)
			return -errno;
	}
	return 0;
}

static bool same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

struct mig {
	int total;
	struct error *err;
};

static int mig_fail(struct mig *m, int r, const char *what, const char *rel)
{
	return error_set(m->err, r, "%s %s: %s", what, rel,
			   r == -ELOOP ? "source and destination are the same file" : strerror(-r));
}

/* Owner, mode, times of name in dir (fd < 0: by name, not followed). */
static int copy_meta_at(int dir, const char *name, int fd, const struct stat *st)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	if (fd >= 0) {
		if (fchown(fd, st->st_uid, st->st_gid) < 0 || fchmod(fd, st->st_mode & 07777) < 0 ||
		    futimens(fd, ts) < 0)
			return -errno;
		return 0;
	}
	if (fchownat(dir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    utimensat(dir, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static int copy_at(struct mig *m, int odir, int ndir, const char *name, const char *rel);

static int copy_dir_contents(struct mig *m, int ofd, int nfd, const char *rel)
{
	_cleanup_closedir_ DIR *d = NULL;
	int dup_fd = openat(ofd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	int r;

	if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
		r = -errno;
		if (dup_fd >= 0)
			close(dup_fd);
		return mig_fail(m, r, "reading", rel);
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *sub = NULL;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (asprintf(&sub, "%s/%s", strcmp(rel, "/") ? rel : "", de->d_name) < 0)
			return -ENOMEM;
		r = copy_at(m, ofd, nfd, de->d_name, sub);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The xattrs, owner, mode and times of st from the open fd in onto the open
 * fd out (the copy of rel). */
static int copy_attrs_fd(struct mig *m, int in, int out, const struct stat *st, const char *rel)
{
	struct xnode xs = { .fd = in }, xd = { .fd = out };
	int r = copy_xattrs(&xs, &xd);

	if (r >= 0)
		r = copy_meta_at(-1, NULL, out, st);
	return r < 0 ? mig_fail(m, r, "attributes of", rel) : 0;
}

static int copy_dir(struct mig *m, int odir, int ndir, const char *name, const char *rel,
		    const struct stat *st)
{
	_cleanup_close_ int ofd = -1, nfd = -1;
	struct stat nst;
	int r;

	ofd = openat(odir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ofd < 0)
		return mig_fail(m, -errno, "opening", rel);
	if (mkdirat(ndir, name, 0700) < 0 && errno != EEXIST)
		return mig_fail(m, -errno, "mkdir", rel);
	nfd = openat(ndir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (nfd < 0)
		return mig_fail(m, -errno, "opening the new", rel);
	if (fstat(nfd, &nst) < 0)
		return mig_fail(m, -errno, "stat", rel);
	if (same_inode(st, &nst))
		return mig_fail(m, -ELOOP, "copying", rel);
	r = copy_dir_contents(m, ofd, nfd, rel);
	if (r < 0)
		return r;
	return copy_attrs_fd(m, ofd, nfd, st, rel);
}

static int copy_reg(struct mig *m, int odir, int ndir, const char *name, const char *rel,
		    const struct stat *st)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat ist, ost;
	char buf[65536];
	ssize_t n;

	in = openat(odir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fstat(in, &ist) < 0)
		return mig_fail(m, -errno, "opening", rel);
	if (!S_ISREG(ist.st_mode) || !same_inode(st, &ist))
		return mig_fail(m, -ESTALE, "opening", rel);
	/* no O_TRUNC before we know it is not the source itself */
	out = openat(ndir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0 || fstat(out, &ost) < 0)
		return mig_fail(m, -errno, "creating", rel);
	if (same_inode(&ist, &ost))
		return mig_fail(m, -ELOOP, "copying", rel);
	if (!S_ISREG(ost.st_mode))
		return mig_fail(m, -EEXIST, "creating", rel);
	if (ftruncate(out, 0) < 0)
		return mig_fail(m, -errno, "truncating", rel);
	while ((n = util_read_full(in, buf, sizeof(buf))) > 0)
		if (util_write_full(out, buf, n) < 0)
			return mig_fail(m, -errno, "writing", rel);
	if (n < 0)
		return mig_fail(m, (int)n, "reading", rel);
	if (fsync(out) < 0)
		return mig_fail(m, -errno, "writing", rel);
	return copy_attrs_fd(m, in, out, st, rel);
}

/* symlinks and whiteouts: made by name, xattrs through O_PATH fds */
static int copy_special(struct mig *m, int odir, int ndir, const char *name, const char *rel,
			const struct stat *st)
{
	_cleanup_close_ int ofd = -1, nfd = -1;
	struct xnode xs = { .fd = -1 }, xd = { .fd = -1 };
	struct stat nst;
	int r;

	if (fstatat(ndir, name, &nst, AT_SYMLINK_NOFOLLOW) == 0) {
		if (same_inode(st, &nst))
			return mig_fail(m, -ELOOP, "copying", rel);
		if (unlinkat(ndir, name, S_ISDIR(nst.st_mode) ? AT_REMOVEDIR : 0) < 0)
			return mig_fail(m, -errno, "replacing", rel);
	}
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(odir, name, target, sizeof(target) - 1);

		if (n < 0)
			return mig_fail(m, -errno, "readlink", rel);
		target[n] = '\0';
		if (symlinkat(target, ndir, name) < 0)
			return mig_fail(m, -errno, "symlink", rel);
	} else if (mknodat(ndir, name, S_IFCHR | 0000, makedev(0, 0)) < 0) {
		/* an overlayfs whiteout: the user deleted a file of the image */
		return mig_fail(m, -errno, "whiteout", rel);
	}
	ofd = openat(odir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	nfd = openat(ndir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (ofd < 0 || nfd < 0)
		return mig_fail(m, -errno, "opening", rel);
	snprintf(xs.path, sizeof(xs.path), "/proc/self/fd/%d", ofd);
	snprintf(xd.path, sizeof(xd.path), "/proc/self/fd/%d", nfd);
	r = copy_xattrs(&xs, &xd);
	if (r >= 0)
		r = copy_meta_at(ndir, name, -1, st);
	return r < 0 ? mig_fail(m, r, "attributes of", rel) : 0;
}

/* Copy name (recursively for a directory) from odir to ndir. */
static int copy_at(struct mig *m, int odir, int ndir, const char *name, const char *rel)
{
	struct stat st;
	int r;

	if (fstatat(odir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : mig_fail(m, -errno, "stat", rel);
	if (S_ISDIR(st.st_mode))
		r = copy_dir(m, odir, ndir, name, rel, &st);
	else if (S_ISREG(st.st_mode))
		r = copy_reg(m, odir, ndir, name, rel, &st);
	else if (S_ISLNK(st.st_mode) || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)))
		r = copy_special(m, odir, ndir, name, rel, &st);
	else
		return 0; /* devices, fifos, sockets: not user data */
	if (r < 0)
		return r;
	m->total++;
	return 0;
}

/* One directory level of the walk down a keep entry. The new upper's
 * directory is made only when something below it is copied (owner and
 * mode from the old one, no xattrs: an opaque parent would hide the new
 * image's files around the kept one). */
struct level {
	struct level *up;
	const char *name;      /* in up */
	int old_fd, new_fd;    /* new_fd: -1 until needed */
	const char *rel;
};

static int level_new_fd(struct mig *m, struct level *lv)
{
	struct stat ost, nst;
	int r;

	if (lv->new_fd >= 0)
		return lv->new_fd;
	r = level_new_fd(m, lv->up);
	if (r < 0)
		return r;
	if (fstat(lv->old_fd, &ost) < 0)
		return mig_fail(m, -errno, "stat", lv->rel);
	if (mkdirat(lv->up->new_fd, lv->name, ost.st_mode & 07777) < 0 && errno != EEXIST)
		return mig_fail(m, -errno, "mkdir", lv->rel);
	lv->new_fd = openat(lv->up->new_fd, lv->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lv->new_fd < 0)
		return mig_fail(m, -errno, "opening the new", lv->rel);
	if (fstat(lv->new_fd, &nst) < 0)
		return mig_fail(m, -errno, "stat", lv->rel);
	if (same_inode(&ost, &nst))
		return mig_fail(m, -ELOOP, "copying", lv->rel);
	if (fchown(lv->new_fd, ost.st_uid, ost.st_gid) < 0 || fchmod(lv->new_fd, ost.st_mode & 07777) < 0)
		return mig_fail(m, -errno, "attributes of", lv->rel);
	return lv->new_fd;
}

static int walk(struct mig *m, struct level *lv, const char *pattern);

/* One name matched in lv: copy it (last component) or descend into it
 * (a real directory only: a symlinked directory is not followed). */
static int walk_step(struct mig *m, struct level *lv, const char *name, const char *rest)
{
	_cleanup_free_ char *rel = NULL;
	struct level child;
	struct stat st;
	int r;

	if (asprintf(&rel, "%s/%s", strcmp(lv->rel, "/") ? lv->rel : "", name) < 0)
		return -ENOMEM;
	if (!rest) {
		if (fstatat(lv->old_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? 0 : mig_fail(m, -errno, "stat", rel);
		r = level_new_fd(m, lv);
		return r < 0 ? r : copy_at(m, lv->old_fd, lv->new_fd, name, rel);
	}
	child = (struct level){ .up = lv, .name = name, .new_fd = -1, .rel = rel };
	child.old_fd = openat(lv->old_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (child.old_fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0
			: mig_fail(m, -errno, "opening", rel);
	r = walk(m, &child, rest);
	close(child.old_fd);
	if (child.new_fd >= 0)
		close(child.new_fd);
	return r;
}

/* Names in lv's old directory matching one glob component. readdir's
 * "." and ".." are never offered, so no pattern can climb ('.[.]', '.*'). */
static int walk_glob(struct mig *m, struct level *lv, const char *comp, const char *rest)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct boot_gen_list names = { 0 };
	int dup_fd, r = 0;
	struct dirent *de;

	dup_fd = openat(lv->old_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
		r = -errno;
		if (dup_fd >= 0)
			close(dup_fd);
		return mig_fail(m, r, "reading", lv->rel);
	}
	while ((de = readdir(d)) && r >= 0)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && !fnmatch(comp, de->d_name, 0))
			r = boot_gen_list_add(&names, de->d_name);
	if (names.n)
		boot_gen_list_sort(&names);
	for (size_t i = 0; i < names.n && r >= 0; i++)
		r = walk_step(m, lv, names.v[i], rest);
	boot_gen_list_done(&names);
	return r;
}

/* pattern: the rest of a keep entry below lv, without the leading '/' */
static int walk(struct mig *m, struct level *lv, const char *pattern)
{
	char comp[NAME_MAX + 1];
	const char *slash, *rest;
	size_t len;
	int r;

	while (*pattern == '/')
		pattern++;
	if (!*pattern) {
		/* the entry names the whole upper ("/", or the subtree's path) */
		r = level_new_fd(m, lv);
		return r < 0 ? r : copy_dir_contents(m, lv->old_fd, lv->new_fd, lv->rel);
	}
	slash = strchr(pattern, '/');
	len = slash ? (size_t)(slash - pattern) : strlen(pattern);
	rest = slash && slash[strspn(slash, "/")] ? slash + 1 : NULL;
	if (len > NAME_MAX)
		return 0; /* matches nothing */
	memcpy(comp, pattern, len);
	comp[len] = '\0';
	if (!strcmp(comp, ".") || !strcmp(comp, ".."))
		return error_set(m->err, -EINVAL, "keep entry component '%s'", comp);
	if (strpbrk(comp, "*?[\\"))
		return walk_glob(m, lv, comp, rest);
	return walk_step(m, lv, comp, rest);
}

int boot_gen_migrate(const char *old_upper, const char *new_upper,
		     const struct boot_gen_list *keep, struct error *err)
{
	struct mig m = { .err = err };
	struct level root = { .rel = "/", .old_fd = -1, .new_fd = -1 };
	struct stat ost, nst;
	int r = 0;

	root.old_fd = open(old_upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root.old_fd < 0)
		return error_set(err, -errno, "%s: %s", old_upper, strerror(errno));
	root.new_fd = open(new_upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root.new_fd < 0)
		r = error_set(err, -errno, "%s: %s", new_upper, strerror(errno));
	else if (fstat(root.old_fd, &ost) < 0 || fstat(root.new_fd, &nst) < 0)
		r = error_set(err, -errno, "stat: %s", strerror(errno));
	else if (same_inode(&ost, &nst))
		r = error_set(err, -ELOOP, "%s and %s are the same directory", old_upper,
				new_upper);
	for (size_t i = 0; i < keep->n && r >= 0; i++) {
		r = walk(&m, &root, keep->v[i]);
		if (r < 0 && err && !strstr(err->msg, keep->v[i]))
			error_prefix(err, r, "keep entry %s", keep->v[i]);
	}
	close(root.old_fd);
	if (root.new_fd >= 0)
		close(root.new_fd);
	return r < 0 ? r : m.total;
}
