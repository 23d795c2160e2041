/* U-Boot environment access through libubootenv (see env.h).
 *
 * libubootenv 0.3.2 (Debian 12) shapes this file:
 *  - libuboot_configure() cannot describe a single copy (it always reads
 *    two entries and crashes on an empty second one), so every env is
 *    configured through libuboot_read_config() on a generated
 *    fw_env.config held in a memfd (a temporary file when memfd or /proc
 *    is missing);
 *  - its config parser reads offsets with %lli (a leading 0 means octal)
 *    and sizes with %zx (always hex), so we always write 0x-prefixed
 *    numbers and check user-supplied configs for the trap;
 *  - libuboot_env_store() returns -1 or a short count on a failed write,
 *    not -errno.
 * The lock libuboot_open() takes is held until env_close(). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libuboot.h>

#include "cleanup.h"
#include "env.h"
#include "util.h"

#define ENV_MAX_COPIES 2

struct env {
	struct uboot_ctx *ctx;
	struct env_device devs[ENV_MAX_COPIES];
	char *paths[ENV_MAX_COPIES];
	size_t n_devs;
	bool blank;
	bool opened;          /* libuboot_open() done: lock held, vars loaded */
	char desc[600];
};

struct env_txn {
	struct env *env;
	struct env_var *vars; /* name/value owned (cast away const) */
	size_t n;
};

static const char SIM_PREFIX[] = "sim:";

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

_printf_(3, 4)
static int env_fail(struct env_error *err, int r, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return r;
}

bool env_name_valid(const char *name)
{
	if (!name || !*name)
		return false;
	for (const char *c = name; *c; c++)
		if (*c == '=' || *c <= ' ' || *c == 0x7f)
			return false;
	return true;
}

static void env_devices_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(paths[i]);
		paths[i] = NULL;
	}
}

void env_close(struct env *e)
{
	if (!e)
		return;
	if (e->ctx) {
		if (e->opened)
			libuboot_close(e->ctx);
		libuboot_exit(e->ctx);
	}
	env_devices_free(e->paths, e->n_devs);
	free(e);
}

const char *env_describe(const struct env *e) { return e->desc; }
bool env_is_redundant(const struct env *e) { return e->n_devs == 2; }
bool env_is_blank(const struct env *e) { return e->blank; }
size_t env_n_devices(const struct env *e) { return e->n_devs; }

const struct env_device *env_device(const struct env *e, size_t i)
{
	return i < e->n_devs ? &e->devs[i] : NULL;
}

static void env_make_desc(struct env *e)
{
	size_t len = 0;

	e->desc[0] = '\0';
	for (size_t i = 0; i < e->n_devs; i++)
		len += snprintf(e->desc + len, sizeof(e->desc) - MIN(len, sizeof(e->desc)),
				"%s%s@0x%" PRIx64 "+0x%" PRIx64, i ? ", " : "", e->devs[i].path,
				e->devs[i].offset, e->devs[i].size);
	if (e->n_devs == 2 && len < sizeof(e->desc))
		snprintf(e->desc + len, sizeof(e->desc) - len, " (redundant)");
}

/* Refuse what libubootenv would mishandle silently. */
static int env_check_device(const struct env_device *d, struct env_error *err)
{
	struct stat st;

	if (!d->path || !*d->path || strpbrk(d->path, " \t\n"))
		return env_fail(err, -EINVAL, "env device '%s': empty or contains whitespace",
				d->path ? d->path : "");
	if (!d->size)
		return env_fail(err, -EINVAL, "env device %s: env size is 0", d->path);
	if (!strncmp(d->path, "/dev/mtdblock", strlen("/dev/mtdblock")))
		return env_fail(err, -EINVAL,
				"env device %s: use the MTD character device (/dev/mtdN); "
				"libubootenv does not write through mtdblock", d->path);
	if (stat(d->path, &st) < 0)
		return env_fail(err, -errno, "env device %s: %s", d->path, strerror(errno));
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < d->offset + d->size)
		return env_fail(err, -ENOSPC,
				"env device %s: env at 0x%" PRIx64 "+0x%" PRIx64
				" ends beyond the file's %" PRIu64 " bytes", d->path, d->offset,
				d->size, (uint64_t)st.st_size);
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return env_fail(err, -EINVAL, "env device %s: not a file or device", d->path);
	return 0;
}

/* fw_env.config text for libuboot_read_config(), every number 0x-prefixed. */
static int env_config_text(const struct env *e, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	_cleanup_fclose_ FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < e->n_devs; i++) {
		const struct env_device *d = &e->devs[i];
		uint64_t sector = d->sector_size ? d->sector_size : d->size;
		uint64_t sectors = d->sectors ? d->sectors : MAX(DIV_ROUND_UP(d->size, sector), 1);

		fprintf(f, "%s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 "\n", d->path,
			d->offset, d->size, sector, sectors);
	}
	if (fclose(TAKE_PTR(f)) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}

static int env_read_config_text(struct uboot_ctx *ctx, const char *text)
{
	char path[64];
	_cleanup_close_ int fd = memfd_create("flashd-fw_env.config", MFD_CLOEXEC);
	int r;

	if (fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (util_write_full(fd, text, strlen(text)) < 0)
			return -EIO;
		if (access(path, R_OK) == 0)
			return libuboot_read_config(ctx, path);
	}
	/* no memfd or no /proc (early boot): a private temporary file */
	const char *dir = getenv("TMPDIR");
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int tfd = -1;

	if (asprintf(&tmp, "%s/flashd-fw_env-XXXXXX", dir && *dir ? dir : "/tmp") < 0)
		return -ENOMEM;
	tfd = mkostemp(tmp, O_CLOEXEC);
	if (tfd < 0)
		return -errno;
	r = util_write_full(tfd, text, strlen(text)) < 0 ? -EIO : libuboot_read_config(ctx, tmp);
	unlink(tmp);
	return r;
}

/* Load (again) from storage; the lock is taken by libuboot_open(). */
static int env_load(struct env *e, unsigned flags, struct env_error *err)
{
	int r;

	if (e->opened) {
		libuboot_close(e->ctx);
		e->opened = false;
	}
	r = libuboot_open(e->ctx);
	e->opened = true; /* even on failure: close releases the lock */
	if (r == -ENODATA) {
		e->blank = true;
		if (flags & ENV_OPEN_ALLOW_BLANK)
			return 0;
		return env_fail(err, -ENODATA, "U-Boot env %s: no valid copy (erased or corrupt)",
				e->desc);
	}
	if (r < 0)
		return env_fail(err, r, "U-Boot env %s: cannot read: %s", e->desc, strerror(-r));
	e->blank = false;
	return 0;
}

int env_open_devices(const struct env_device *devs, size_t n_devs, unsigned flags,
		     struct env **ret, struct env_error *err)
{
	_cleanup_(env_closep) struct env *e = NULL;
	_cleanup_free_ char *cfg = NULL;
	int r;

	if (n_devs < 1 || n_devs > ENV_MAX_COPIES)
		return env_fail(err, -EINVAL, "U-Boot env: %zu copies given, 1 or 2 supported", n_devs);
	if (n_devs == 2 && devs[0].size != devs[1].size)
		return env_fail(err, -EINVAL, "U-Boot env: the two copies differ in size (0x%" PRIx64
				" and 0x%" PRIx64 ")", devs[0].size, devs[1].size);
	for (size_t i = 0; i < n_devs; i++) {
		r = env_check_device(&devs[i], err);
		if (r < 0)
			return r;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < n_devs; i++) {
		e->paths[i] = strdup(devs[i].path);
		if (!e->paths[i]) {
			e->n_devs = i;
			return -ENOMEM;
		}
		e->devs[i] = devs[i];
		e->devs[i].path = e->paths[i];
	}
	e->n_devs = n_devs;
	env_make_desc(e);

	r = env_config_text(e, &cfg);
	if (r < 0)
		return r;
	r = libuboot_initialize(&e->ctx, NULL);
	if (r < 0)
		return env_fail(err, r, "libubootenv: cannot initialise: %s", strerror(-r));
	r = env_read_config_text(e->ctx, cfg);
	if (r < 0)
		return env_fail(err, r, "libubootenv rejected the env config for %s: %s", e->desc,
				strerror(-r));
	r = env_load(e, flags, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(e);
	return 0;
}

/* A number of an fw_env.config line, refusing libubootenv 0.3.2's traps. */
static int env_config_number(const char *tok, bool is_size, const char *path, unsigned line,
			     uint64_t *ret, struct env_error *err)
{
	char *end;
	bool hex = !strncasecmp(tok, "0x", 2);

	if (!hex && is_size)
		return env_fail(err, -EINVAL,
				"%s:%u: size '%s' lacks the 0x prefix; libubootenv reads sizes "
				"as hex, so write 0x%llx for %s bytes or 0x%s if hex was meant",
				path, line, tok, strtoull(tok, NULL, 10), tok, tok);
	if (!hex && tok[0] == '0' && tok[1])
		return env_fail(err, -EINVAL,
				"%s:%u: offset '%s' has a leading 0 (octal in libubootenv); use 0x",
				path, line, tok);
	errno = 0;
	*ret = strtoull(tok, &end, hex ? 16 : 10);
	if (errno || *end || end == tok + (hex ? 2 : 0))
		return env_fail(err, -EINVAL, "%s:%u: '%s' is not a number", path, line, tok);
	return 0;
}

int env_open_config(const char *path, unsigned flags, struct env **ret, struct env_error *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	char *paths[ENV_MAX_COPIES] = { NULL, NULL };
	struct env_device devs[ENV_MAX_COPIES] = {};
	size_t n = 0, cap = 0;
	unsigned lineno = 0;
	int r = 0;

	if (!path)
		path = ENV_DEFAULT_CONFIG;
	f = fopen(path, "re");
	if (!f)
		return env_fail(err, -errno, "%s: %s", path, strerror(errno));
	while (getline(&line, &cap, f) >= 0) {
		char *tok[6], *save = NULL;
		size_t nt = 0;

		lineno++;
		for (char *t = strtok_r(line, " \t\r\n", &save); t && nt < ELEMENTSOF(tok);
		     t = strtok_r(NULL, " \t\r\n", &save))
			tok[nt++] = t;
		if (nt == 0 || tok[0][0] == '#')
			continue;
		if (nt < 3) {
			r = env_fail(err, -EINVAL, "%s:%u: expected 'device offset size "
				     "[sector-size [sectors]]'", path, lineno);
			break;
		}
		if (n == ENV_MAX_COPIES) {
			r = env_fail(err, -EINVAL, "%s:%u: more than two env copies", path, lineno);
			break;
		}
		uint64_t *fields[] = { &devs[n].offset, &devs[n].size, &devs[n].sector_size,
				       &devs[n].sectors };
		for (size_t i = 1; i < nt && i <= 4 && r >= 0; i++)
			r = env_config_number(tok[i], i >= 2, path, lineno, fields[i - 1], err);
		if (r < 0)
			break;
		paths[n] = strdup(tok[0]);
		if (!paths[n]) {
			r = -ENOMEM;
			break;
		}
		devs[n].path = paths[n];
		n++;
	}
	if (r >= 0 && n == 0)
		r = env_fail(err, -EINVAL, "%s: no env device line", path);
	if (r >= 0)
		r = env_open_devices(devs, n, flags, ret, err);
	env_devices_free(paths, n);
	return r;
}

/* /dev/mtdN of the MTD partition called name, found under sysfs_root. */
static int env_mtd_by_name(const char *sysfs_root, const char *name, char **ret)
{
	_cleanup_(closedirp) DIR *d = opendir(sysfs_root);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[512], line[128], *end;
		unsigned long idx;

		if (strncmp(de->d_name, "mtd", 3))
			continue;
		idx = strtoul(de->d_name + 3, &end, 10);
		if (end == de->d_name + 3 || *end) /* skips mtdNro */
			continue;
		snprintf(path, sizeof(path), "%s/%s/name", sysfs_root, de->d_name);
		if (util_read_line(path, line, sizeof(line)) < 0 || strcmp(line, name))
			continue;
		return asprintf(ret, "/dev/mtd%lu", idx) < 0 ? -ENOMEM : 0;
	}
	return -ENODEV;
}

static int env_sim_path(const char *target, const struct layout *l,
			const struct layout_device *dev, char **ret)
{
	const char *path = target + strlen(SIM_PREFIX);
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return asprintf(ret, "%s/%s.sim", path, dev->name) < 0 ? -ENOMEM : 0;
	if (l->n_devices > 1)
		return -EISDIR;
	*ret = strdup(path);
	return *ret ? 0 : -ENOMEM;
}

int env_open_layout(const struct layout *l, const char *target, const char *sysfs_root,
		    unsigned flags, struct env **ret, struct env_error *err)
{
	struct env_device devs[ENV_MAX_COPIES] = {};
	char *paths[ENV_MAX_COPIES] = { NULL, NULL };
	bool sim = target && !strncmp(target, SIM_PREFIX, strlen(SIM_PREFIX));
	size_t n = l->env.n_copies;
	int r = 0;

	if (n == 0)
		return env_fail(err, -ENOENT, "layout %s has no U-Boot env partitions; describe "
				"them there or use " ENV_DEFAULT_CONFIG, l->path ? l->path : "");
	if (n > ENV_MAX_COPIES)
		return env_fail(err, -EINVAL, "layout %s: %zu env copies", l->path, n);
	if (target && !sim && strcmp(target, "system"))
		return env_fail(err, -EINVAL, "target '%s': expected 'system' or 'sim:PATH'", target);
	if (!sysfs_root)
		sysfs_root = ENV_DEFAULT_SYSFS;

	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct layout_env_copy *c = &l->env.copies[i];
		const struct layout_partition *p = c->part;

		if (sim) {
			r = env_sim_path(target, l, p->dev, &paths[i]);
			if (r < 0)
				r = env_fail(err, r, "env partition %s: no simulator file for device "
					     "%s in %s: %s", p->name, p->dev->name, target, strerror(-r));
			devs[i].offset = ENV_SIM_DATA_OFFSET + p->offset + c->offset;
		} else {
			r = env_mtd_by_name(sysfs_root, p->name, &paths[i]);
			if (r < 0)
				r = env_fail(err, r, "env partition %s: no MTD device of that name "
					     "under %s", p->name, sysfs_root);
			devs[i].offset = c->offset;
		}
		devs[i].path = paths[i];
		devs[i].size = c->size;
		devs[i].sector_size = c->sector_size ? c->sector_size : p->dev->erasesize;
		if (r >= 0 && c->offset + c->size > p->size)
			r = env_fail(err, -EINVAL, "env copy %zu (0x%" PRIx64 "+0x%" PRIx64
				     ") does not fit partition %s (0x%" PRIx64 " bytes)", i,
				     c->offset, c->size, p->name, p->size);
	}
	if (r >= 0)
		r = env_open_devices(devs, n, flags, ret, err);
	env_devices_free(paths, n);
	return r;
}

int env_get(struct env *e, const char *name, char **ret)
{
	char *v;

	if (!env_name_valid(name))
		return -EINVAL;
	v = libuboot_get_env(e->ctx, name);
	if (!v)
		return -ENOENT;
	*ret = v;
	return 0;
}

char *env_get_dup(void *env, const char *name)
{
	char *v = NULL;

	return env_get(env, name, &v) < 0 ? NULL : v;
}

int env_next(struct env *e, void **it, const char **ret_name, const char **ret_value)
{
	void *next = libuboot_iterator(e->ctx, *it);

	if (!next)
		return 0;
	*it = next;
	*ret_name = libuboot_getname(next);
	*ret_value = libuboot_getvalue(next);
	return 1;
}

int env_txn_new(struct env *e, struct env_txn **ret)
{
	struct env_txn *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->env = e;
	*ret = t;
	return 0;
}

void env_txn_free(struct env_txn *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->vars[i].name);
		free((char *)t->vars[i].value);
	}
	free(t->vars);
	free(t);
}

size_t env_txn_size(const struct env_txn *t) { return t->n; }

int env_txn_set(struct env_txn *t, const char *name, const char *value)
{
	_cleanup_free_ char *v = NULL;
	char *nm;
	size_t i;

	if (!env_name_valid(name))
		return -EINVAL;
	if (value) {
		v = strdup(value);
		if (!v)
			return -ENOMEM;
	}
	for (i = 0; i < t->n; i++)
		if (!strcmp(t->vars[i].name, name)) {
			free((char *)t->vars[i].value);
			t->vars[i].value = TAKE_PTR(v);
			return 0;
		}
	struct env_var *nv = realloc(t->vars, (t->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	t->vars = nv;
	nm = strdup(name);
	if (!nm)
		return -ENOMEM;
	t->vars[t->n].name = nm;
	t->vars[t->n].value = TAKE_PTR(v);
	t->n++;
	return 0;
}

int env_txn_set_many(struct env_txn *t, const struct env_var *vars, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = env_txn_set(t, vars[i].name, vars[i].value);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Bytes the env data would take with the txn applied ("n=v\0"... "\0"). */
static size_t env_txn_data_size(const struct env_txn *t)
{
	size_t sz = 1;
	void *it = NULL;
	const char *name, *value;

	while (env_next(t->env, &it, &name, &value) > 0) {
		bool overridden = false;
		for (size_t i = 0; i < t->n && !overridden; i++)
			overridden = !strcmp(t->vars[i].name, name);
		if (!overridden)
			sz += strlen(name) + strlen(value) + 2;
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->vars[i].value)
			sz += strlen(t->vars[i].name) + strlen(t->vars[i].value) + 2;
	return sz;
}

/* libubootenv's store result as -errno. */
static int env_store_result(int r)
{
	if (r == 0)
		return 0;
	if (r > 0 || r == -1) /* short write count, or write() == -1 passed through */
		return -EIO;
	return r;
}

/* Apply t (after clearing every variable when clear) and store once. */
static int env_apply(struct env_txn *t, bool clear, const char *initial_env,
		     struct env_error *err)
{
	struct env *e = t->env;
	size_t header = env_is_redundant(e) ? 5 : 4;
	size_t need;
	int r;

	if (clear) {
		void *it = NULL;
		const char *name, *value;

		/* deleting while iterating would lose the cursor: restart each time */
		while (env_next(e, &it, &name, &value) > 0) {
			_cleanup_free_ char *n = strdup(name);
			if (!n)
				return -ENOMEM;
			r = libuboot_set_env(e->ctx, n, NULL);
			if (r < 0)
				goto reload;
			it = NULL;
		}
		if (initial_env) {
			r = libuboot_load_file(e->ctx, initial_env);
			if (r < 0) {
				env_fail(err, r, "%s: cannot import the default env: %s", initial_env,
					 strerror(-r));
				goto reload_keep;
			}
		}
	}
	need = env_txn_data_size(t);
	if (need + header > e->devs[0].size) {
		r = env_fail(err, -ENOSPC, "U-Boot env %s: %zu bytes of variables do not fit "
			     "the 0x%" PRIx64 "-byte env", e->desc, need, e->devs[0].size);
		goto reload_keep;
	}
	for (size_t i = 0; i < t->n; i++) {
		r = libuboot_set_env(e->ctx, t->vars[i].name, t->vars[i].value);
		if (r < 0) {
			env_fail(err, r, "U-Boot env %s: cannot set %s: %s", e->desc,
				 t->vars[i].name, r == -EPERM ? "read-only by .flags" : strerror(-r));
			goto reload_keep;
		}
	}
	r = env_store_result(libuboot_env_store(e->ctx));
	if (r < 0) {
		env_fail(err, r, "U-Boot env %s: store failed: %s (the previous env stays %s)",
			 e->desc, strerror(-r), env_is_redundant(e) ? "valid" : "as far as the write "
			 "did not reach it");
		goto reload_keep;
	}
	e->blank = false;
	return 0;

reload:
	env_fail(err, r, "U-Boot env %s: %s", e->desc, strerror(-r));
reload_keep:
	/* the in-memory env holds half-applied changes: drop them */
	env_load(e, ENV_OPEN_ALLOW_BLANK, NULL);
	return r;
}

int env_txn_commit(struct env_txn *t, struct env_error *err)
{
	if (t->env->blank)
		return env_fail(err, -ENODATA, "U-Boot env %s has no valid copy: provision it "
				"first ('flashctl env init'), so U-Boot's defaults are not lost",
				t->env->desc);
	if (t->n == 0)
		return 0;
	return env_apply(t, false, NULL, err);
}

int env_init_default(struct env *e, const char *initial_env, const struct env_var *vars,
		     size_t n_vars, bool force, struct env_error *err)
{
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	int r;

	if (!e->blank && !force)
		return env_fail(err, -EEXIST, "U-Boot env %s is valid; refusing to replace it "
				"with defaults without force", e->desc);
	if (initial_env && access(initial_env, R_OK) < 0)
		return env_fail(err, -errno, "%s: %s", initial_env, strerror(errno));
	r = env_txn_new(e, &t);
	if (r < 0)
		return r;
	r = env_txn_set_many(t, vars, n_vars);
	if (r < 0)
		return env_fail(err, r, "invalid default variable: %s", strerror(-r));
	return env_apply(t, true, initial_env, err);
}
