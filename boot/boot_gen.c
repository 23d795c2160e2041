/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Overlay generations and keep-list migration (see boot_gen.h). */
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

int boot_gen_list_add(struct boot_gen_list *l, const char *s)
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

void boot_gen_list_sort(struct boot_gen_list *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_str);
}

static const char gen_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-";

/* FNV-1a: a short, stable tag that keeps sanitised names apart */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

int boot_gen_name(const char *slot, const char *version, char *buf, size_t len)
{
	char v[BOOT_GEN_NAME_MAX];
	size_t head, room;
	bool changed = false;
	int n;

	if (!version || !*version)
		version = "unknown";
	n = snprintf(buf, len, BOOT_GEN_PREFIX "%s-", slot);
	if (n < 0 || (size_t)n >= len || strpbrk(slot, "/") || !*slot)
		return -ENAMETOOLONG;
	head = (size_t)n;
	/* room for the version part; a name must also fit NAME_MAX with ".tmp" */
	room = MIN(len, (size_t)BOOT_GEN_NAME_MAX) - 1 - head;
	if (room < 10)
		return -ENAMETOOLONG;
	snprintf(v, sizeof(v), "%s", version);
	for (char *p = v; *p; p++)
		if (!strchr(gen_chars, *p)) {
			*p = '_';
			changed = true;
		}
	/* ".tmp" names the half-built generation; "." and ".." are no names */
	changed |= strlen(version) >= sizeof(v) || strlen(v) > room || ends_with(v, ".tmp") ||
		   !strcmp(v, ".") || !strcmp(v, "..");
	if (!changed) {
		snprintf(buf + head, len - head, "%s", v);
		return 0;
	}
	/* "2.0~rc1" and "2.0_rc1" would share a generation: tag the
	 * sanitised (or shortened) name with a hash of the real version */
	snprintf(buf + head, len - head, "%.*s-%08x", (int)(room - 9), v, name_hash(version));
	return 0;
}

bool boot_gen_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (strncmp(name, BOOT_GEN_PREFIX, strlen(BOOT_GEN_PREFIX)) || n >= BOOT_GEN_NAME_MAX ||
	    n <= strlen(BOOT_GEN_PREFIX) || ends_with(name, ".tmp"))
		return false;
	for (const char *p = name; *p; p++)
		if (!strchr(gen_chars, *p))
			return false;
	return true;
}

/* Normalise one entry in place ("//" -> "/", no trailing "/") and check
 * it: absolute, no "." or ".." component, components within NAME_MAX. */
static int keep_entry_check(char *e)
{
	char *w = e;

	if (e[0] != '/')
		return -EINVAL;
	for (const char *r = e; *r; r++)
		if (!(*r == '/' && w > e && w[-1] == '/'))
			*w++ = *r;
	*w = '\0';
	if (w - e > 1 && w[-1] == '/')
		w[-1] = '\0';
	for (const char *c = e + 1; *c;) {
		size_t len = strcspn(c, "/");

		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return -EINVAL;
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		c += len + (c[len] == '/');
	}
	return 0;
}

/* Parse text; bad lines are skipped and counted (*bad), the first one's
 * line number and error kept. Returns 0 or -ENOMEM. */
static int keep_parse(const char *text, struct boot_gen_list *l, unsigned *bad,
		      unsigned *first_line, int *first_err)
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
		r = -ENAMETOOLONG;
		if ((size_t)(b - a) < sizeof(buf)) {
			memcpy(buf, a, b - a);
			buf[b - a] = '\0';
			r = keep_entry_check(buf);
		}
		if (r < 0) {
			if (!(*bad)++) {
				*first_line = line;
				*first_err = r;
			}
			continue;
		}
		r = boot_gen_list_add(l, buf);
		if (r < 0)
			return r;
	}
	return 0;
}

int boot_gen_keep_parse(const char *text, struct boot_gen_list *l, unsigned *ret_line)
{
	unsigned bad = 0, line = 0;
	int err = 0, r;

	r = keep_parse(text, l, &bad, &line, &err);
	if (r < 0)
		return r;
	if (bad) {
		if (ret_line)
			*ret_line = line;
		return err;
	}
	return 0;
}

int boot_gen_keep_load(const char *const *dirs, size_t n_dirs, struct boot_gen_list *ret,
		       struct error *err)
{
	struct boot_gen_list l = { 0 };
	unsigned rejected = 0;
	int r = 0;

	for (size_t i = 0; i < n_dirs && r >= 0; i++) {
		struct dirent **ents = NULL;
		int n = scandir(dirs[i], &ents, NULL, alphasort);

		if (n < 0) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			r = error_set(err, -errno, "%s: %s", dirs[i], strerror(errno));
			break;
		}
		for (int j = 0; j < n; j++) {
			_cleanup_free_ char *path = NULL, *text = NULL;
			unsigned bad = 0, line = 0;
			int perr = 0;
			struct stat st;

			if (r >= 0 && ents[j]->d_name[0] != '.' &&
			    asprintf(&path, "%s/%s", dirs[i], ents[j]->d_name) >= 0 &&
			    lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				r = util_read_file(path, 1 << 20, &text, NULL);
				if (r < 0)
					error_set(err, r, "%s: %s", path, strerror(-r));
				else if ((r = keep_parse(text, &l, &bad, &line, &perr)) >= 0 && bad) {
					if (!rejected)
						error_set(err, perr, "%s:%u: %s", path, line,
							    perr == -EINVAL ? "not an absolute path without "
									      "'.' or '..' components"
									    : strerror(-perr));
					rejected += bad;
				}
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
	return (int)MIN(rejected, (unsigned)INT_MAX);
}

/* ---- bookkeeping ---- */

int boot_gen_rmtree(const char *path)
{
	struct stat st, sub;
	int r = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		_cleanup_closedir_ DIR *d = opendir(path);
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
			r = boot_gen_list_add(&out, rel);
	}
	boot_gen_list_done(keep);
	*keep = out;
	return r < 0 ? r : 0;
}

/* The name in .flashd-last, if it is one this code could have written:
 * anything else (a planted "../x", a ".tmp") is no previous generation. */
static void last_read(const char *path, char *last, struct boot_gen_result *res)
{
	if (util_read_line(path, last, BOOT_GEN_NAME_MAX) < 0) {
		last[0] = '\0';
		return;
	}
	if (last[0] && !boot_gen_name_valid(last)) {
		snprintf(res->note, sizeof(res->note),
			 "%s names no generation (\"%.64s\"): nothing migrated", path, last);
		last[0] = '\0';
	}
}

static void meta_from_name(struct gen_meta *m, const char *name)
{
	const char *v;

	*m = (struct gen_meta){ .created = (unsigned long long)time(NULL) };
	/* the slot/version parts are informational; the name is the key */
	snprintf(m->slot, sizeof(m->slot), "%s", name + strlen(BOOT_GEN_PREFIX));
	*strchrnul(m->slot, '-') = '\0';
	v = name + strlen(BOOT_GEN_PREFIX) + strlen(m->slot);
	snprintf(m->version, sizeof(m->version), "%s", *v ? v + 1 : "");
}

/* Keep-list of the new image and the previous upper, applied from the
 * previous generation's upper to the new one (in tmp). */
static int migrate_from(const char *overlay, const char *last, const char *rom, const char *prefix,
			const char *up, struct boot_gen_result *res, struct error *err)
{
	_cleanup_free_ char *prev_up = NULL, *keep_rom = NULL, *keep_old = NULL;
	struct boot_gen_list keep = { 0 };
	const char *kd = under_prefix(BOOT_GEN_KEEP_DIR, prefix);
	const char *dirs[2];
	size_t n_dirs = 0;
	int r;

	if (asprintf(&prev_up, "%s/%s/upper", overlay, last) < 0 ||
	    asprintf(&keep_rom, "%s%s", rom ? rom : "", BOOT_GEN_KEEP_DIR) < 0 ||
	    (kd && asprintf(&keep_old, "%s%s", prev_up, kd) < 0))
		return -ENOMEM;
	if (!is_dir(prev_up))
		return 0;
	if (rom)
		dirs[n_dirs++] = keep_rom;
	if (keep_old)
		dirs[n_dirs++] = keep_old;
	r = boot_gen_keep_load(dirs, n_dirs, &keep, err);
	if (r > 0) {
		/* a bad line is skipped, the others still apply */
		res->keep_rejected = (unsigned)r;
		snprintf(res->note, sizeof(res->note), "keep-list line skipped: %s", error_message(err));
		error_clear(err); /* a note, not the error of this call */
	}
	if (r >= 0)
		r = keep_for_prefix(&keep, prefix);
	if (r < 0) {
		boot_gen_list_done(&keep);
		return r;
	}
	res->keep_entries = keep.n;
	r = boot_gen_migrate(prev_up, up, &keep, err);
	boot_gen_list_done(&keep);
	if (r < 0)
		return r;
	res->migrated = r;
	snprintf(res->previous, sizeof(res->previous), "%s", last);
	return 0;
}

/* First boot of a generation: build it as NAME.tmp, rename into place.
 * On failure the .tmp is removed (the previous generation is untouched). */
static int create_gen(const char *overlay, const char *name, const char *last, const char *rom,
		      const char *prefix, struct boot_gen_result *res, struct gen_meta *m,
		      struct error *err)
{
	_cleanup_free_ char *dir = NULL, *tmp = NULL, *up = NULL, *work = NULL;
	int r;

	if (asprintf(&dir, "%s/%s", overlay, name) < 0 || asprintf(&tmp, "%s.tmp", dir) < 0 ||
	    asprintf(&up, "%s/upper", tmp) < 0 || asprintf(&work, "%s/work", tmp) < 0)
		return -ENOMEM;
	res->created = true;
	r = boot_gen_rmtree(tmp); /* an interrupted earlier attempt */
	if (r < 0)
		return error_set(err, r, "removing %s: %s", tmp, strerror(-r));
	if (mkdir(tmp, 0755) < 0 || mkdir(up, 0755) < 0 || mkdir(work, 0700) < 0) {
		r = error_set(err, -errno, "mkdir in %s: %s", tmp, strerror(errno));
		goto fail;
	}
	meta_from_name(m, name);
	if (last[0] && strcmp(last, name)) {
		r = migrate_from(overlay, last, rom, prefix, up, res, err);
		if (r < 0)
			goto fail;
		snprintf(m->previous, sizeof(m->previous), "%s", res->previous);
		m->migrated = res->migrated;
	}
	r = meta_write(tmp, m);
	if (r < 0) {
		error_set(err, r, "%s/" BOOT_GEN_META ": %s", tmp, strerror(-r));
		goto fail;
	}
	if (rename(tmp, dir) < 0) {
		r = error_set(err, -errno, "rename %s: %s", tmp, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	boot_gen_rmtree(tmp);
	return r;
}

int boot_gen_prepare(const char *overlay, const char *name, const char *rom, const char *prefix,
		     struct boot_gen_result *ret, struct error *err)
{
	_cleanup_free_ char *dir = NULL, *last_path = NULL, *up = NULL, *work = NULL;
	char last[BOOT_GEN_NAME_MAX];
	struct boot_gen_result res = { 0 };
	struct gen_meta m;
	int r;

	if (!boot_gen_name_valid(name))
		return error_set(err, -EINVAL, "%s: not a generation name", name);
	snprintf(res.name, sizeof(res.name), "%s", name);
	if (asprintf(&dir, "%s/%s", overlay, name) < 0 ||
	    asprintf(&last_path, "%s/" BOOT_GEN_LAST, overlay) < 0)
		return -ENOMEM;
	last_read(last_path, last, &res);

	if (!is_dir(dir)) {
		r = create_gen(overlay, name, last, rom, prefix, &res, &m, err);
		if (r < 0)
			return r;
	} else {
		meta_read(dir, &m);
		res.boots = m.boots;
		snprintf(res.previous, sizeof(res.previous), "%s", m.previous);
		/* a generation made by hand or by an older flashd: make sure */
		if (asprintf(&up, "%s/upper", dir) < 0 || asprintf(&work, "%s/work", dir) < 0)
			return -ENOMEM;
		if ((mkdir(up, 0755) < 0 && errno != EEXIST) || (mkdir(work, 0700) < 0 && errno != EEXIST))
			return error_set(err, -errno, "mkdir in %s: %s", dir, strerror(errno));
	}
	m.boots++;
	r = meta_write(dir, &m);
	if (r < 0)
		return error_set(err, r, "%s/" BOOT_GEN_META ": %s", dir, strerror(-r));
	if (strcmp(last, name)) {
		char text[BOOT_GEN_NAME_MAX + 2];

		snprintf(text, sizeof(text), "%s\n", name);
		r = write_atomic(last_path, text);
		if (r < 0)
			return error_set(err, r, "%s: %s", last_path, strerror(-r));
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
	_cleanup_closedir_ DIR *d = opendir(overlay);
	struct dirent *de;
	int r;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, BOOT_GEN_PREFIX, strlen(BOOT_GEN_PREFIX)) &&
		    (r = boot_gen_list_add(&l, de->d_name)) < 0) {
			boot_gen_list_done(&l);
			return r;
		}
	if (l.n)
		boot_gen_list_sort(&l);
	*ret = l;
	return 0;
}

int boot_gen_gc(const char *overlay, const char *keep, struct boot_gen_list *removed,
		struct error *err)
{
	struct boot_gen_list l = { 0 };
	int r, n = 0;

	r = boot_gen_list(overlay, &l);
	if (r < 0)
		return error_set(err, r, "%s: %s", overlay, strerror(-r));
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
			error_set(err, r, "removing %s: %s", path, strerror(-r));
			break;
		}
		n++;
		if (removed && (r = boot_gen_list_add(removed, l.v[i])) < 0)
			break;
	}
	boot_gen_list_done(&l);
	return r < 0 ? r : n;
}
