/* Overlay generations and keep-list migration (see include/boot_gen.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "boot_gen.h"
#include "cleanup.h"
#include "util.h"

static void closedirp_(DIR **d)
{
	if (*d)
		closedir(*d);
}

void boot_gen_list_done(struct boot_gen_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int list_add(struct boot_gen_list *l, const char *s)
{
	char **v;

	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return 0;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	if (!(l->v[l->n] = strdup(s)))
		return -ENOMEM;
	l->n++;
	return 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int boot_gen_name(const char *slot, const char *version, char *buf, size_t len)
{
	int n;

	if (!version || !*version)
		version = "unknown";
	n = snprintf(buf, len, BOOT_GEN_PREFIX "%s-%s", slot, version);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	for (char *p = buf + strlen(BOOT_GEN_PREFIX); *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-", *p))
			*p = '_';
	return 0;
}

static bool path_ok(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *c = p; (c = strstr(c, "..")); c += 2)
		if (c[-1] == '/' && (c[2] == '/' || c[2] == '\0'))
			return false;
	return true;
}

int boot_gen_keep_parse(const char *text, struct boot_gen_list *l, unsigned *ret_line)
{
	unsigned line = 0;

	for (const char *s = text; s && *s;) {
		const char *e = strchrnul(s, '\n'), *a = s, *b;
		char buf[PATH_MAX];
		int r;

		line++;
		while (a < e && (*a == ' ' || *a == '\t'))
			a++;
		b = a;
		while (b < e && *b != '#')
			b++;
		while (b > a && strchr(" \t\r", b[-1]))
			b--;
		s = *e ? e + 1 : e;
		if (b == a)
			continue;
		if ((size_t)(b - a) >= sizeof(buf)) {
			if (ret_line)
				*ret_line = line;
			return -ENAMETOOLONG;
		}
		memcpy(buf, a, b - a);
		buf[b - a] = '\0';
		/* "/etc/config/" and "/etc/config" are the same entry */
		while (strlen(buf) > 1 && buf[strlen(buf) - 1] == '/')
			buf[strlen(buf) - 1] = '\0';
		if (!path_ok(buf)) {
			if (ret_line)
				*ret_line = line;
			return -EINVAL;
		}
		r = list_add(l, buf);
		if (r < 0)
			return r;
	}
	return 0;
}

int boot_gen_keep_load(const char *const *dirs, size_t n_dirs, struct boot_gen_list *ret,
		       char *err, size_t errlen)
{
	struct boot_gen_list l = { 0 };
	int r = 0;

	for (size_t i = 0; i < n_dirs && r >= 0; i++) {
		struct dirent **ents = NULL;
		int n = scandir(dirs[i], &ents, NULL, alphasort);

		if (n < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			r = util_errorf(err, errlen, -errno, "%s: %s", dirs[i], strerror(errno));
			break;
		}
		for (int j = 0; j < n; j++) {
			_cleanup_free_ char *path = NULL, *text = NULL;
			unsigned line = 0;
			struct stat st;

			if (r >= 0 && ents[j]->d_name[0] != '.' &&
			    asprintf(&path, "%s/%s", dirs[i], ents[j]->d_name) >= 0 &&
			    stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				r = util_read_file(path, 1 << 20, &text, NULL);
				if (r < 0)
					util_errorf(err, errlen, r, "%s: %s", path, strerror(-r));
				else if ((r = boot_gen_keep_parse(text, &l, &line)) < 0)
					util_errorf(err, errlen, r, "%s:%u: %s", path, line,
					     r == -EINVAL ? "not an absolute path without '..'"
							  : strerror(-r));
			}
			free(ents[j]);
		}
		free(ents);
	}
	if (r < 0) {
		boot_gen_list_done(&l);
		return r;
	}
	*ret = l;
	return 0;
}

/* ---- copying ---- */

static bool xattr_wanted(const char *name)
{
	if (strncmp(name, "trusted.overlay.", 16))
		return true;
	return !strcmp(name, "trusted.overlay.opaque");
}

static int copy_xattrs(const char *src, const char *dst)
{
	char names[4096], value[4096];
	ssize_t n = llistxattr(src, names, sizeof(names));

	if (n < 0)
		return errno == ENOTSUP ? 0 : -errno;
	for (char *p = names; p < names + n; p += strlen(p) + 1) {
		ssize_t vl;

		if (!xattr_wanted(p))
			continue;
		vl = lgetxattr(src, p, value, sizeof(value));
		if (vl < 0)
			return -errno;
		if (lsetxattr(dst, p, value, vl, 0) < 0 && errno != ENOTSUP)
			return -errno;
	}
	return 0;
}

static int copy_meta(const char *dst, const struct stat *st)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	if (lchown(dst, st->st_uid, st->st_gid) < 0)
		return -errno;
	if (!S_ISLNK(st->st_mode) && chmod(dst, st->st_mode & 07777) < 0)
		return -errno;
	if (utimensat(AT_FDCWD, dst, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

static int copy_file(const char *src, const char *dst, mode_t mode)
{
	_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_close_ int out = -1;
	char buf[65536];
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 0777);
	if (out < 0)
		return -errno;
	while ((n = util_read_full(in, buf, sizeof(buf))) > 0)
		if (util_write_full(out, buf, n) < 0)
			return -errno;
	if (n < 0)
		return (int)n;
	if (fsync(out) < 0)
		return -errno;
	return 0;
}

/* Copy one entry (recursively for directories); returns entries copied. */
static int copy_entry(const char *src, const char *dst, char *err, size_t errlen)
{
	struct stat st;
	int r, count = 1;

	if (lstat(src, &st) < 0)
		return errno == ENOENT ? 0 : util_errorf(err, errlen, -errno, "%s: %s", src, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		_cleanup_(closedirp_) DIR *d = NULL;
		struct dirent *de;

		if (mkdir(dst, 0700) < 0 && errno != EEXIST)
			return util_errorf(err, errlen, -errno, "mkdir %s: %s", dst, strerror(errno));
		d = opendir(src);
		if (!d)
			return util_errorf(err, errlen, -errno, "%s: %s", src, strerror(errno));
		while ((de = readdir(d))) {
			_cleanup_free_ char *s = NULL, *t = NULL;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (asprintf(&s, "%s/%s", src, de->d_name) < 0 ||
			    asprintf(&t, "%s/%s", dst, de->d_name) < 0)
				return -ENOMEM;
			r = copy_entry(s, t, err, errlen);
			if (r < 0)
				return r;
			count += r;
		}
	} else if (S_ISREG(st.st_mode)) {
		r = copy_file(src, dst, st.st_mode);
		if (r < 0)
			return util_errorf(err, errlen, r, "copy %s to %s: %s", src, dst, strerror(-r));
	} else if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(src, target, sizeof(target) - 1);

		if (n < 0)
			return util_errorf(err, errlen, -errno, "readlink %s: %s", src, strerror(errno));
		target[n] = '\0';
		unlink(dst);
		if (symlink(target, dst) < 0)
			return util_errorf(err, errlen, -errno, "symlink %s: %s", dst, strerror(errno));
	} else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
		/* an overlayfs whiteout: the user deleted a file of the image */
		unlink(dst);
		if (mknod(dst, S_IFCHR | 0000, makedev(0, 0)) < 0)
			return util_errorf(err, errlen, -errno, "whiteout %s: %s", dst, strerror(errno));
	} else {
		return 0; /* devices, fifos, sockets: not user data */
	}
	r = copy_xattrs(src, dst);
	if (r >= 0)
		r = copy_meta(dst, &st);
	if (r < 0)
		return util_errorf(err, errlen, r, "attributes of %s: %s", dst, strerror(-r));
	return count;
}

/* Make the parents of rel (relative to the uppers) in new_upper, taking
 * owner and mode from old_upper's directories (no xattrs: an opaque
 * parent would hide the new image's files around the kept one). */
static int make_parents(const char *old_upper, const char *new_upper, const char *rel,
			char *err, size_t errlen)
{
	char path[PATH_MAX];
	const char *p = rel;

	while ((p = strchr(p + 1, '/'))) {
		_cleanup_free_ char *s = NULL, *t = NULL;
		struct stat st;

		snprintf(path, sizeof(path), "%.*s", (int)(p - rel), rel);
		if (asprintf(&s, "%s%s", old_upper, path) < 0 ||
		    asprintf(&t, "%s%s", new_upper, path) < 0)
			return -ENOMEM;
		if (lstat(t, &st) == 0)
			continue;
		if (lstat(s, &st) < 0 || !S_ISDIR(st.st_mode))
			st = (struct stat){ .st_mode = S_IFDIR | 0755 };
		if (mkdir(t, st.st_mode & 07777) < 0 && errno != EEXIST)
			return util_errorf(err, errlen, -errno, "mkdir %s: %s", t, strerror(errno));
		if (lchown(t, st.st_uid, st.st_gid) < 0 || chmod(t, st.st_mode & 07777) < 0)
			return util_errorf(err, errlen, -errno, "attributes of %s: %s", t, strerror(errno));
	}
	return 0;
}

int boot_gen_migrate(const char *old_upper, const char *new_upper,
		     const struct boot_gen_list *keep, char *err, size_t errlen)
{
	int total = 0, r;

	for (size_t i = 0; i < keep->n; i++) {
		_cleanup_free_ char *pattern = NULL;
		glob_t g = { 0 };

		if (asprintf(&pattern, "%s%s", old_upper, keep->v[i]) < 0)
			return -ENOMEM;
		r = glob(pattern, GLOB_NOSORT | GLOB_PERIOD, NULL, &g);
		if (r == GLOB_NOMATCH) {
			globfree(&g);
			continue;
		}
		if (r != 0) {
			globfree(&g);
			return util_errorf(err, errlen, -EIO, "keep entry %s: glob failed", keep->v[i]);
		}
		for (size_t j = 0; j < g.gl_pathc; j++) {
			const char *rel = g.gl_pathv[j] + strlen(old_upper);
			_cleanup_free_ char *dst = NULL;

			if (asprintf(&dst, "%s%s", new_upper, rel) < 0) {
				globfree(&g);
				return -ENOMEM;
			}
			r = make_parents(old_upper, new_upper, rel, err, errlen);
			if (r >= 0)
				r = copy_entry(g.gl_pathv[j], dst, err, errlen);
			if (r < 0) {
				globfree(&g);
				return r;
			}
			total += r;
		}
		globfree(&g);
	}
	return total;
}

/* ---- bookkeeping ---- */

int boot_gen_rmtree(const char *path)
{
	struct stat st, sub;
	int r = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		_cleanup_(closedirp_) DIR *d = opendir(path);
		struct dirent *de;

		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			_cleanup_free_ char *s = NULL;

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (asprintf(&s, "%s/%s", path, de->d_name) < 0)
				return -ENOMEM;
			if (lstat(s, &sub) == 0 && S_ISDIR(sub.st_mode) && sub.st_dev != st.st_dev)
				return -EXDEV; /* something is mounted in there */
			r = boot_gen_rmtree(s);
			if (r < 0)
				return r;
		}
		if (rmdir(path) < 0)
			return -errno;
		return 0;
	}
	if (unlink(path) < 0)
		return -errno;
	return 0;
}

struct gen_meta {
	char slot[64], version[128], previous[BOOT_GEN_NAME_MAX];
	unsigned long long created;
	unsigned boots;
	int migrated;
};

static int write_atomic(const char *path, const char *text)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;

	if (asprintf(&tmp, "%s.new", path) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (util_write_full(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
		int r = -errno;
		unlink(tmp);
		return r;
	}
	if (rename(tmp, path) < 0)
		return -errno;
	return 0;
}

static int meta_write(const char *dir, const struct gen_meta *m)
{
	_cleanup_free_ char *path = NULL, *text = NULL;

	if (asprintf(&path, "%s/" BOOT_GEN_META, dir) < 0 ||
	    asprintf(&text, "slot=%s\nversion=%s\ncreated=%llu\nboots=%u\nprevious=%s\nmigrated=%d\n",
		     m->slot, m->version, m->created, m->boots, m->previous, m->migrated) < 0)
		return -ENOMEM;
	return write_atomic(path, text);
}

static void meta_read(const char *dir, struct gen_meta *m)
{
	_cleanup_free_ char *path = NULL, *text = NULL;

	*m = (struct gen_meta){ 0 };
	if (asprintf(&path, "%s/" BOOT_GEN_META, dir) < 0 ||
	    util_read_file(path, 1 << 16, &text, NULL) < 0)
		return;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *v = strchr(line, '=');
		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(line, "boots"))
			m->boots = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(line, "created"))
			m->created = strtoull(v, NULL, 10);
		else if (!strcmp(line, "migrated"))
			m->migrated = atoi(v);
		else if (!strcmp(line, "slot"))
			snprintf(m->slot, sizeof(m->slot), "%s", v);
		else if (!strcmp(line, "version"))
			snprintf(m->version, sizeof(m->version), "%s", v);
		else if (!strcmp(line, "previous"))
			snprintf(m->previous, sizeof(m->previous), "%s", v);
	}
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "/etc/x" under prefix "/etc" is "/x"; under "/" it stays; NULL = outside */
static const char *under_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return path;
	if (strncmp(path, prefix, n) || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path[n] ? path + n : "/";
}

static int keep_for_prefix(struct boot_gen_list *keep, const char *prefix)
{
	struct boot_gen_list out = { 0 };
	int r = 0;

	for (size_t i = 0; i < keep->n && r >= 0; i++) {
		const char *rel = under_prefix(keep->v[i], prefix);
		if (rel)
			r = list_add(&out, rel);
	}
	boot_gen_list_done(keep);
	*keep = out;
	return r < 0 ? r : 0;
}

int boot_gen_prepare(const char *overlay, const char *name, const char *rom, const char *prefix,
		     struct boot_gen_result *ret, char *err, size_t errlen)
{
	_cleanup_free_ char *dir = NULL, *tmp = NULL, *last_path = NULL, *last = NULL;
	_cleanup_free_ char *prev_dir = NULL, *keep_rom = NULL, *keep_old = NULL;
	_cleanup_free_ char *up = NULL, *work = NULL, *prev_up = NULL;
	struct boot_gen_result res = { 0 };
	struct gen_meta m;
	int r;

	snprintf(res.name, sizeof(res.name), "%s", name);
	if (asprintf(&dir, "%s/%s", overlay, name) < 0 || asprintf(&tmp, "%s.tmp", dir) < 0 ||
	    asprintf(&last_path, "%s/" BOOT_GEN_LAST, overlay) < 0)
		return -ENOMEM;
	if (util_read_line(last_path, (last = calloc(1, BOOT_GEN_NAME_MAX)), BOOT_GEN_NAME_MAX) < 0)
		last[0] = '\0';

	if (!is_dir(dir)) {
		struct boot_gen_list keep = { 0 };

		res.created = true;
		r = boot_gen_rmtree(tmp); /* an interrupted earlier attempt */
		if (r < 0)
			return util_errorf(err, errlen, r, "removing %s: %s", tmp, strerror(-r));
		if (asprintf(&up, "%s/upper", tmp) < 0 || asprintf(&work, "%s/work", tmp) < 0)
			return -ENOMEM;
		if (mkdir(tmp, 0755) < 0 || mkdir(up, 0755) < 0 || mkdir(work, 0700) < 0)
			return util_errorf(err, errlen, -errno, "mkdir in %s: %s", tmp, strerror(errno));
		m = (struct gen_meta){ .created = (unsigned long long)time(NULL) };
		/* the slot/version parts are informational; the name is the key */
		snprintf(m.slot, sizeof(m.slot), "%s", name + strlen(BOOT_GEN_PREFIX));
		*strchrnul(m.slot, '-') = '\0';
		{
			const char *v = name + strlen(BOOT_GEN_PREFIX) + strlen(m.slot);
			snprintf(m.version, sizeof(m.version), "%s", *v ? v + 1 : "");
		}
		if (last[0] && strcmp(last, name) &&
		    asprintf(&prev_dir, "%s/%s", overlay, last) >= 0 && is_dir(prev_dir)) {
			const char *dirs[2];
			size_t n_dirs = 0;

			const char *kd = under_prefix(BOOT_GEN_KEEP_DIR, prefix);

			if (asprintf(&prev_up, "%s/upper", prev_dir) < 0 ||
			    asprintf(&keep_rom, "%s" BOOT_GEN_KEEP_DIR, rom ? rom : "") < 0 ||
			    (kd && asprintf(&keep_old, "%s%s", prev_up, kd) < 0))
				return -ENOMEM;
			if (rom)
				dirs[n_dirs++] = keep_rom;
			if (keep_old)
				dirs[n_dirs++] = keep_old;
			r = boot_gen_keep_load(dirs, n_dirs, &keep, err, errlen);
			if (r >= 0)
				r = keep_for_prefix(&keep, prefix);
			if (r < 0) {
				boot_gen_list_done(&keep);
				return r;
			}
			res.keep_entries = keep.n;
			r = boot_gen_migrate(prev_up, up, &keep, err, errlen);
			boot_gen_list_done(&keep);
			if (r < 0)
				return r;
			res.migrated = r;
			snprintf(res.previous, sizeof(res.previous), "%s", last);
			snprintf(m.previous, sizeof(m.previous), "%s", last);
			m.migrated = r;
		}
		r = meta_write(tmp, &m);
		if (r < 0)
			return util_errorf(err, errlen, r, "%s/" BOOT_GEN_META ": %s", tmp, strerror(-r));
		if (rename(tmp, dir) < 0)
			return util_errorf(err, errlen, -errno, "rename %s: %s", tmp, strerror(errno));
	} else {
		meta_read(dir, &m);
		res.boots = m.boots;
		snprintf(res.previous, sizeof(res.previous), "%s", m.previous);
		/* a generation made by hand or by an older flashd: make sure */
		if (asprintf(&up, "%s/upper", dir) < 0 || asprintf(&work, "%s/work", dir) < 0)
			return -ENOMEM;
		if ((mkdir(up, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST))
			return util_errorf(err, errlen, -errno, "mkdir in %s: %s", dir, strerror(errno));
	}
	m.boots++;
	r = meta_write(dir, &m);
	if (r < 0)
		return util_errorf(err, errlen, r, "%s/" BOOT_GEN_META ": %s", dir, strerror(-r));
	if (strcmp(last, name)) {
		char text[BOOT_GEN_NAME_MAX + 2];

		snprintf(text, sizeof(text), "%s\n", name);
		r = write_atomic(last_path, text);
		if (r < 0)
			return util_errorf(err, errlen, r, "%s: %s", last_path, strerror(-r));
	}
	*ret = res;
	return 0;
}

bool boot_gen_slot_good(unsigned left, unsigned max_tries, unsigned boots_before)
{
	return boots_before > 0 && max_tries > 0 && left + 1 >= max_tries;
}

int boot_gen_list(const char *overlay, struct boot_gen_list *ret)
{
	struct boot_gen_list l = { 0 };
	_cleanup_(closedirp_) DIR *d = opendir(overlay);
	struct dirent *de;
	int r;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, BOOT_GEN_PREFIX, strlen(BOOT_GEN_PREFIX)) &&
		    (r = list_add(&l, de->d_name)) < 0) {
			boot_gen_list_done(&l);
			return r;
		}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_str);
	*ret = l;
	return 0;
}

int boot_gen_gc(const char *overlay, const char *keep, struct boot_gen_list *removed,
		char *err, size_t errlen)
{
	struct boot_gen_list l = { 0 };
	int r, n = 0;

	r = boot_gen_list(overlay, &l);
	if (r < 0)
		return util_errorf(err, errlen, r, "%s: %s", overlay, strerror(-r));
	for (size_t i = 0; i < l.n; i++) {
		_cleanup_free_ char *path = NULL;

		if (!strcmp(l.v[i], keep))
			continue;
		if (asprintf(&path, "%s/%s", overlay, l.v[i]) < 0) {
			r = -ENOMEM;
			break;
		}
		r = boot_gen_rmtree(path);
		if (r < 0) {
			util_errorf(err, errlen, r, "removing %s: %s", path, strerror(-r));
			break;
		}
		n++;
		if (removed && (r = list_add(removed, l.v[i])) < 0)
			break;
	}
	boot_gen_list_done(&l);
	return r < 0 ? r : n;
}
