/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* U-Boot environment access (see env.h): the common part (open, lock,
 * transactions, defaults) and one of two backends (env_backend.h),
 * chosen from a table:
 *
 *  - env_uboot.c: libubootenv (real MTD devices, fw_env.config files, explicit device
 *    lists). Version 0.3.2 (Debian 12) shapes that part:
 *     - libuboot_configure() cannot describe a single copy (it always reads
 *       two entries and crashes on an empty second one), so every env is
 *       configured through libuboot_read_config() on a generated
 *       fw_env.config held in a memfd (a temporary file when memfd or /proc
 *       is missing);
 *     - its config parser reads offsets with %lli (a leading 0 means octal)
 *       and sizes with %zx (always hex), so we always write 0x-prefixed
 *       numbers and check user-supplied configs for the trap;
 *     - libuboot_env_store() returns -1 or a short count on a failed write,
 *       not -errno;
 *     - libuboot_open() takes its lock with a blocking flock() on a fixed
 *       path and cannot be told not to (see env_lock_take()).
 *  - env_flash.c: flash ("sim:" targets): U-Boot's env format implemented over
 *    struct flash, so that every env store is an erase and page programs
 *    on the simulated chip, cut, torn and counted like any other flash
 *    operation. The bytes and the copy selection are those of U-Boot and
 *    of libubootenv on a file: fw_printenv reads what this writes and the
 *    other way round (tests/unit/test-env.c checks both ways). */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <libuboot.h>

#include "board.h"
#include "cleanup.h"
#include "env.h"
#include "env_backend.h"
#include "util.h"

#define ENV_LOCK_POLL_MS 10

struct env_txn {
	struct env *env;
	struct env_var *vars; /* name/value owned (cast away const) */
	size_t n;
};

static const char *env_lock_override; /* env_set_lock(): every env's lock */
static unsigned env_lock_timeout_ms = ENV_LOCK_TIMEOUT_MS;
static char *env_lock_held; /* the path env_lock_fd locks */
/* The lock is this process's while any env of it is open: an env opened
 * while another is (e.g. the install engine recording a failure from
 * inside a failed store) shares the hold instead of waiting for itself
 * (flock() locks of two open files conflict, even in one process). */
static int env_lock_fd = -1;
static unsigned env_lock_holders;

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

/* ---- the lock shared with fw_printenv/fw_setenv ---- */

void env_set_lock(const char *path, unsigned timeout_ms)
{
	env_lock_override = path;
	env_lock_timeout_ms = timeout_ms;
}

/* libubootenv creates its lock file world-readable in the world-writable
 * /var/lock, and any user who can open it can hold a shared flock on it
 * and so stall every env access (issue 13, item 16). As root, make the
 * lock file root's own and mode 0600, replacing whatever is there (a
 * file, a symlink of another user) with one rename, so that only root
 * can lock it from now on. */
static int env_lock_open_root(const char *path)
{
	_cleanup_free_ char *tmp = NULL;
	struct stat st;
	int fd;

	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 &&
	    !(st.st_mode & 077))
		return fd;
	if (fd >= 0)
		close(fd);
	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0)
		return -errno;
	if (rename(tmp, path) < 0) {
		int r = -errno;
		unlink(tmp);
		close(fd);
		return r;
	}
	return fd;
}

/* The lock fw_printenv/fw_setenv take, with a bounded wait: whoever holds
 * it longer than the timeout makes this -EBUSY ("env busy") instead of
 * stalling the caller (the daemon's event loop). Without the rights to
 * open the lock file (a user reading the env) go on unlocked, as
 * libubootenv does: a read is checked by the CRCs anyway. */
int env_lock_take(const struct env *e, int *ret_fd, struct error *err)
{
	_cleanup_close_ int fd = -1;
	uint64_t deadline = util_now_ms() + env_lock_timeout_ms;
	const char *path = env_lock_override ? env_lock_override :
			   e->lock_path ? e->lock_path : ENV_LOCK_FILE;

	if (env_lock_holders) {
		/* a process works on one board: a second lock is a bug, not a wait */
		if (strcmp(path, env_lock_held))
			return error_set(err, -EDEADLK, "U-Boot env lock %s: this process holds %s",
					 path, env_lock_held);
		env_lock_holders++;
		*ret_fd = env_lock_fd;
		return 0;
	}
	fd = geteuid() == 0 ? env_lock_open_root(path) :
			      open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*ret_fd = -1;
		return 0;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return error_set(err, -errno, "U-Boot env lock %s: %s", path, strerror(errno));
		if (util_now_ms() >= deadline)
			return error_set(err, -EBUSY, "U-Boot env busy: another process holds the "
					"lock %s (fw_setenv/fw_printenv?) for more than %u ms; try "
					"again", path, env_lock_timeout_ms);
		nanosleep(&(struct timespec){ .tv_nsec = ENV_LOCK_POLL_MS * 1000000L }, NULL);
	}
	env_lock_held = strdup(path);
	if (!env_lock_held)
		return -ENOMEM;
	env_lock_fd = *ret_fd = TAKE_FD(fd);
	env_lock_holders = 1;
	return 0;
}

void env_lock_release(int *fd)
{
	if (*fd < 0)
		return;
	*fd = -1;
	if (--env_lock_holders == 0) {
		flock(env_lock_fd, LOCK_UN);
		close(env_lock_fd);
		env_lock_fd = -1;
		free(env_lock_held);
		env_lock_held = NULL;
	}
}

/* ---- common ---- */

void env_close(struct env *e)
{
	if (!e)
		return;
	if (e->be)
		e->be->close(e);
	env_lock_release(&e->lock_fd);
	env_devices_free(e->paths, e->n_devs);
	free(e->lock_path);
	free(e);
}

static struct env *env_new(const struct env_backend *be)
{
	struct env *e = calloc(1, sizeof(*e));

	if (e) {
		e->be = be;
		e->lock_fd = -1;
	}
	return e;
}

const char *env_describe(const struct env *e) { return e->desc; }
bool env_is_redundant(const struct env *e) { return e->n_devs == 2; }
bool env_is_blank(const struct env *e) { return e->blank; }
size_t env_n_devices(const struct env *e) { return e->n_devs; }

const struct env_device *env_device(const struct env *e, size_t i)
{
	return i < e->n_devs ? &e->devs[i] : NULL;
}

enum env_copy_state env_copy_state(const struct env *e, size_t i, int *ret_error)
{
	if (i >= e->n_devs)
		return ENV_COPY_UNKNOWN;
	if (ret_error)
		*ret_error = e->copies[i].error;
	return e->copies[i].state;
}

static const char *const env_copy_state_table[] = { ENV_COPY_STATE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(env_copy_state, enum env_copy_state)

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

/* Copy devs (paths duplicated) into e. */
static int env_set_devices(struct env *e, const struct env_device *devs, size_t n_devs)
{
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
	return 0;
}

/* Load (again) from storage. */
static int env_load(struct env *e, unsigned flags, struct error *err)
{
	int r = e->be->load(e);

	if (r == -ENODATA) {
		e->blank = true;
		if (flags & ENV_OPEN_ALLOW_BLANK)
			return 0;
		return error_set(err, -ENODATA, "U-Boot env %s: no valid copy (erased or corrupt)",
				e->desc);
	}
	if (r < 0)
		return error_set(err, r, "U-Boot env %s: cannot read: %s", e->desc, strerror(-r));
	e->blank = false;
	return 0;
}

size_t env_header_size(const struct env *e)
{
	return env_is_redundant(e) ? 5 : 4; /* crc32 [+ flags] */
}

/* Lock, load, hand out. */
static int env_open_finish(struct env **ep, unsigned flags, struct env **ret,
			   struct error *err)
{
	struct env *e = *ep;
	int r;

	r = env_lock_take(e, &e->lock_fd, err);
	if (r < 0)
		return r;
	r = env_load(e, flags, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(*ep);
	return 0;
}

int env_open_devices(const struct env_device *devs, size_t n_devs, unsigned flags,
		     struct env **ret, struct error *err)
{
	_cleanup_(env_closep) struct env *e = NULL;
	int r;

	if (n_devs < 1 || n_devs > ENV_MAX_COPIES)
		return error_set(err, -EINVAL, "U-Boot env: %zu copies given, 1 or 2 supported", n_devs);
	if (n_devs == 2 && devs[0].size != devs[1].size)
		return error_set(err, -EINVAL, "U-Boot env: the two copies differ in size (0x%" PRIx64
				" and 0x%" PRIx64 ")", devs[0].size, devs[1].size);
	e = env_new(&env_uboot_backend);
	if (!e)
		return -ENOMEM;
	r = env_set_devices(e, devs, n_devs);
	if (r < 0)
		return r;
	r = env_uboot_configure(e, err);
	if (r < 0)
		return r;
	return env_open_finish(&e, flags, ret, err);
}

/* A number of an fw_env.config line, refusing libubootenv 0.3.2's traps. */
static int env_config_number(const char *tok, bool is_size, const char *path, unsigned line,
			     uint64_t *ret, struct error *err)
{
	char *end;
	bool hex = !strncasecmp(tok, "0x", 2);

	if (!hex && is_size)
		return error_set(err, -EINVAL,
				"%s:%u: size '%s' lacks the 0x prefix; libubootenv reads sizes "
				"as hex, so write 0x%llx for %s bytes or 0x%s if hex was meant",
				path, line, tok, strtoull(tok, NULL, 10), tok, tok);
	if (!hex && tok[0] == '0' && tok[1])
		return error_set(err, -EINVAL,
				"%s:%u: offset '%s' has a leading 0 (octal in libubootenv); use 0x",
				path, line, tok);
	errno = 0;
	*ret = strtoull(tok, &end, hex ? 16 : 10);
	if (errno || *end || end == tok + (hex ? 2 : 0))
		return error_set(err, -EINVAL, "%s:%u: '%s' is not a number", path, line, tok);
	return 0;
}

int env_open_config(const char *path, unsigned flags, struct env **ret, struct error *err)
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
		return error_set(err, -errno, "%s: %s", path, strerror(errno));
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
			r = error_set(err, -EINVAL, "%s:%u: expected 'device offset size "
				     "[sector-size [sectors]]'", path, lineno);
			break;
		}
		if (n == ENV_MAX_COPIES) {
			r = error_set(err, -EINVAL, "%s:%u: more than two env copies", path, lineno);
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
		r = error_set(err, -EINVAL, "%s: no env device line", path);
	if (r >= 0)
		r = env_open_devices(devs, n, flags, ret, err);
	env_devices_free(paths, n);
	return r;
}

/* A layout's env on simulator files: the flash backend. */
static int env_open_flash(const struct layout *l, const char *target, unsigned flags,
			  struct env **ret, struct error *err)
{
	_cleanup_(env_closep) struct env *e = env_new(&env_flash_backend);
	int r;

	if (!e)
		return -ENOMEM;
	r = env_flash_locate(e, l, target, err);
	if (r < 0)
		return r;
	/* the simulated board's own lock: no fw_setenv reads a simulator
	 * file, and boards simulated side by side must not wait for each
	 * other on the machine's /var/lock one */
	r = board_sim_side_path(target, "envlock", &e->lock_path);
	if (r < 0)
		return error_set(err, r, "target %s: %s", target, strerror(-r));
	env_make_desc(e);
	return env_open_finish(&e, flags, ret, err);
}

int env_open_layout(const struct layout *l, const char *target, const char *sysfs_root,
		    unsigned flags, struct env **ret, struct error *err)
{
	struct env_device devs[ENV_MAX_COPIES] = {};
	char *paths[ENV_MAX_COPIES] = { NULL, NULL };
	int kind = board_target_parse(target, NULL);
	size_t n = l->env.n_copies;
	int r = 0;

	if (n == 0)
		return error_set(err, -ENOENT, "layout %s has no U-Boot env partitions; describe "
				"them there or use " ENV_DEFAULT_CONFIG, l->path ? l->path : "");
	if (n > ENV_MAX_COPIES)
		return error_set(err, -EINVAL, "layout %s: %zu env copies", l->path, n);
	if (kind < 0)
		return error_set(err, -EINVAL, "target '%s': expected 'system' or 'sim:PATH'", target);
	for (size_t i = 0; i < n; i++) {
		const struct layout_env_copy *c = &l->env.copies[i];
		if (c->offset + c->size > c->part->size)
			return error_set(err, -EINVAL, "env copy %zu (0x%" PRIx64 "+0x%" PRIx64
					") does not fit partition %s (0x%" PRIx64 " bytes)", i,
					c->offset, c->size, c->part->name, c->part->size);
	}
	if (kind == BOARD_TARGET_SIM)
		return env_open_flash(l, target, flags, ret, err);
	if (!sysfs_root)
		sysfs_root = ENV_DEFAULT_SYSFS;

	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct layout_env_copy *c = &l->env.copies[i];
		const struct layout_partition *p = c->part;

		r = flash_mtd_find_by_name_dup(sysfs_root, p->name, &paths[i]);
		if (r < 0)
			r = error_set(err, r, "env partition %s: no MTD device of that name "
				     "under %s", p->name, sysfs_root);
		devs[i].offset = c->offset;
		devs[i].path = paths[i];
		devs[i].size = c->size;
		devs[i].sector_size = c->sector_size ? c->sector_size : p->dev->erasesize;
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
	v = e->be->get(e, name);
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
	void *next = e->be->next(e, *it, ret_name, ret_value);

	if (!next)
		return 0;
	*it = next;
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

/* Apply t (after clearing every variable when clear) and store once. */
static int env_apply(struct env_txn *t, bool clear, const char *initial_env,
		     struct error *err)
{
	struct env *e = t->env;
	size_t header = env_header_size(e);
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
			r = e->be->set(e, n, NULL);
			if (r < 0)
				goto reload;
			it = NULL;
		}
		if (initial_env) {
			r = e->be->import(e, initial_env);
			if (r < 0) {
				error_set(err, r, "%s: cannot import the default env: %s", initial_env,
					 strerror(-r));
				goto reload_keep;
			}
		}
	}
	need = env_txn_data_size(t);
	if (need + header > e->devs[0].size) {
		r = error_set(err, -ENOSPC, "U-Boot env %s: %zu bytes of variables do not fit "
			     "the 0x%" PRIx64 "-byte env", e->desc, need, e->devs[0].size);
		goto reload_keep;
	}
	for (size_t i = 0; i < t->n; i++) {
		r = e->be->set(e, t->vars[i].name, t->vars[i].value);
		if (r < 0) {
			error_set(err, r, "U-Boot env %s: cannot set %s: %s", e->desc,
				 t->vars[i].name, r == -EPERM ? "read-only by .flags" : strerror(-r));
			goto reload_keep;
		}
	}
	r = e->be->store(e);
	if (r < 0) {
		error_set(err, r, "U-Boot env %s: store failed: %s (the previous env stays %s)",
			 e->desc, strerror(-r), env_is_redundant(e) ? "valid" : "as far as the write "
			 "did not reach it");
		goto reload_keep;
	}
	e->blank = false;
	return 0;

reload:
	error_set(err, r, "U-Boot env %s: %s", e->desc, strerror(-r));
reload_keep:
	/* the in-memory env holds half-applied changes: drop them */
	env_load(e, ENV_OPEN_ALLOW_BLANK, NULL);
	return r;
}

int env_txn_commit(struct env_txn *t, struct error *err)
{
	if (t->env->blank)
		return error_set(err, -ENODATA, "U-Boot env %s has no valid copy: provision it "
				"first ('flashctl env init'), so U-Boot's defaults are not lost",
				t->env->desc);
	if (t->n == 0)
		return 0;
	return env_apply(t, false, NULL, err);
}

int env_store_var(struct env *e, const char *name, const char *value, struct error *err)
{
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	int r = env_txn_new(e, &t);

	if (r >= 0)
		r = env_txn_set(t, name, value);
	if (r < 0)
		return error_set(err, r, "%s: %s", name, strerror(-r));
	return env_txn_commit(t, err);
}

int env_init_default(struct env *e, const char *initial_env, const struct env_var *vars,
		     size_t n_vars, bool force, struct error *err)
{
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	int r;

	if (!e->blank && !force)
		return error_set(err, -EEXIST, "U-Boot env %s is valid; refusing to replace it "
				"with defaults without force", e->desc);
	if (initial_env && access(initial_env, R_OK) < 0)
		return error_set(err, -errno, "%s: %s", initial_env, strerror(errno));
	r = env_txn_new(e, &t);
	if (r < 0)
		return r;
	r = env_txn_set_many(t, vars, n_vars);
	if (r < 0)
		return error_set(err, r, "invalid default variable: %s", strerror(-r));
	return env_apply(t, true, initial_env, err);
}
