/* U-Boot environment access (see env.h), through one of two backends
 * chosen from a table:
 *
 *  - libubootenv (real MTD devices, fw_env.config files, explicit device
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
 *  - flash ("sim:" targets): U-Boot's env format implemented here over
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
#include "util.h"

#define ENV_MAX_COPIES 2
#define ENV_LOCK_POLL_MS 10

struct env;

/* What a backend does; the common code (transactions, defaults, checks)
 * works through these only. */
struct env_backend {
	const char *name;
	/* (Re)load the variables from storage: 0, -ENODATA when no copy is
	 * valid (the env is then empty), -errno. */
	int (*load)(struct env *e);
	void (*close)(struct env *e);
	char *(*get)(struct env *e, const char *name);
	void *(*next)(struct env *e, void *it, const char **ret_name, const char **ret_value);
	int (*set)(struct env *e, const char *name, const char *value);
	/* fw_setenv's "name=value" script format; an empty value deletes */
	int (*import)(struct env *e, const char *path);
	/* Write the variables in memory with one store. */
	int (*store)(struct env *e);
};

/* One copy on flash (flash backend). */
struct env_copy {
	char *part_name;      /* the partition, on the chip ... */
	uint64_t part_offset, part_size;
	struct flash_info chip; /* ... the layout describes (type, size, erasesize) */
	struct flash *dev;    /* the simulated chip */
	struct flash *f;      /* the partition's window */
	uint64_t offset;      /* of the copy in the window */
	uint64_t span;        /* bytes reserved for the copy (erase units) */
	enum env_copy_state state;
	int error;            /* read error, -errno, when state is ENV_COPY_UNREADABLE */
	uint8_t flags;        /* redundant envs: the serial U-Boot compares */
};

struct env_pair {
	char *name, *value;
};

struct env {
	const struct env_backend *be;
	struct env_device devs[ENV_MAX_COPIES];
	char *paths[ENV_MAX_COPIES];
	size_t n_devs;
	bool blank;
	int lock_fd;
	char desc[600];
	/* libubootenv */
	struct uboot_ctx *ctx;
	bool opened;          /* libuboot_open() done: lock held, vars loaded */
	/* flash */
	bool writable;        /* board opened for writing (only to store) */
	struct env_copy copies[ENV_MAX_COPIES];
	size_t current;       /* copy the variables came from */
	struct env_pair *vars; /* sorted by name */
	size_t n_vars;
};

struct env_txn {
	struct env *env;
	struct env_var *vars; /* name/value owned (cast away const) */
	size_t n;
};

static const char SIM_PREFIX[] = "sim:";
static const char *env_lock_path = ENV_LOCK_FILE;
static unsigned env_lock_timeout_ms = ENV_LOCK_TIMEOUT_MS;
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
	env_lock_path = path ? path : ENV_LOCK_FILE;
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

static uint64_t env_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The lock fw_printenv/fw_setenv take, with a bounded wait: whoever holds
 * it longer than the timeout makes this -EBUSY ("env busy") instead of
 * stalling the caller (the daemon's event loop). Without the rights to
 * open the lock file (a user reading the env) go on unlocked, as
 * libubootenv does: a read is checked by the CRCs anyway. */
static int env_lock_take(int *ret_fd, struct error *err)
{
	_cleanup_close_ int fd = -1;
	uint64_t deadline = env_now_ms() + env_lock_timeout_ms;

	if (env_lock_holders) {
		env_lock_holders++;
		*ret_fd = env_lock_fd;
		return 0;
	}
	fd = geteuid() == 0 ? env_lock_open_root(env_lock_path) :
			      open(env_lock_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*ret_fd = -1;
		return 0;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return error_set(err, -errno, "U-Boot env lock %s: %s", env_lock_path,
					strerror(errno));
		if (env_now_ms() >= deadline)
			return error_set(err, -EBUSY, "U-Boot env busy: another process holds the "
					"lock %s (fw_setenv/fw_printenv?) for more than %u ms; try "
					"again", env_lock_path, env_lock_timeout_ms);
		nanosleep(&(struct timespec){ .tv_nsec = ENV_LOCK_POLL_MS * 1000000L }, NULL);
	}
	env_lock_fd = *ret_fd = TAKE_FD(fd);
	env_lock_holders = 1;
	return 0;
}

static void env_lock_release(int *fd)
{
	if (*fd < 0)
		return;
	*fd = -1;
	if (--env_lock_holders == 0) {
		flock(env_lock_fd, LOCK_UN);
		close(env_lock_fd);
		env_lock_fd = -1;
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

static const char *const env_copy_state_table[_ENV_COPY_STATE_MAX] = {
	[ENV_COPY_UNKNOWN] = "unknown",
	[ENV_COPY_VALID] = "valid",
	[ENV_COPY_ERASED] = "erased",
	[ENV_COPY_BAD_CRC] = "bad-crc",
	[ENV_COPY_UNREADABLE] = "unreadable",
};
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

/* Lock, load, hand out. */
static int env_open_finish(struct env **ep, unsigned flags, struct env **ret,
			   struct error *err)
{
	struct env *e = *ep;
	int r;

	r = env_lock_take(&e->lock_fd, err);
	if (r < 0)
		return r;
	r = env_load(e, flags, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(*ep);
	return 0;
}

/* ---- libubootenv backend ---- */

static uint32_t env_crc(const uint8_t *data, size_t len);
static void env_copy_classify(struct env *e, size_t i, const uint8_t *buf);

/* libubootenv does not say which copy failed: read them for status. */
static void env_uboot_inspect(struct env *e)
{
	size_t size = e->devs[0].size;
	_cleanup_free_ uint8_t *buf = malloc(size);

	for (size_t i = 0; buf && i < e->n_devs; i++) {
		_cleanup_close_ int fd = open(e->devs[i].path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -errno : util_pread_full(fd, buf, size, e->devs[i].offset);

		e->copies[i].error = n < 0 ? (int)n : 0;
		if (n != (ssize_t)size)
			e->copies[i].state = ENV_COPY_UNREADABLE;
		else
			env_copy_classify(e, i, buf);
		if (n >= 0 && n != (ssize_t)size)
			e->copies[i].error = -EIO;
	}
}

static int env_uboot_load(struct env *e)
{
	if (e->opened) {
		libuboot_close(e->ctx);
		e->opened = false;
	}
	/* libuboot_open() takes the fw_printenv lock with a blocking flock():
	 * env_lock_take() has just shown within a bounded wait that nobody
	 * holds it, and released it (holding it here would make libubootenv
	 * wait for us). Only root can take it in between (the lock file is
	 * root's own, see env_lock_open_root()). */
	int r = e->lock_fd < 0 ? env_lock_take(&e->lock_fd, NULL) : 0;

	if (r < 0)
		return r;
	env_lock_release(&e->lock_fd);
	r = libuboot_open(e->ctx);
	e->opened = true; /* even on failure: close releases the lock */
	if (r < 0) /* only then is it worth reading the copies a second time */
		env_uboot_inspect(e);
	return r;
}

static void env_uboot_close(struct env *e)
{
	if (!e->ctx)
		return;
	if (e->opened)
		libuboot_close(e->ctx);
	libuboot_exit(e->ctx);
}

static char *env_uboot_get(struct env *e, const char *name)
{
	return libuboot_get_env(e->ctx, name);
}

static void *env_uboot_next(struct env *e, void *it, const char **ret_name,
			    const char **ret_value)
{
	void *next = libuboot_iterator(e->ctx, it);

	if (next) {
		*ret_name = libuboot_getname(next);
		*ret_value = libuboot_getvalue(next);
	}
	return next;
}

static int env_uboot_set(struct env *e, const char *name, const char *value)
{
	return libuboot_set_env(e->ctx, name, value);
}

static int env_uboot_import(struct env *e, const char *path)
{
	return libuboot_load_file(e->ctx, path);
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

static int env_uboot_store(struct env *e)
{
	return env_store_result(libuboot_env_store(e->ctx));
}

static const struct env_backend env_backend_uboot = {
	.name = "libubootenv",
	.load = env_uboot_load,
	.close = env_uboot_close,
	.get = env_uboot_get,
	.next = env_uboot_next,
	.set = env_uboot_set,
	.import = env_uboot_import,
	.store = env_uboot_store,
};

/* ---- flash backend: U-Boot's env format over struct flash ---- */

static void env_flash_drop(struct env *e)
{
	for (size_t i = 0; i < e->n_vars; i++) {
		free(e->vars[i].name);
		free(e->vars[i].value);
	}
	free(e->vars);
	e->vars = NULL;
	e->n_vars = 0;
}

static void env_flash_detach(struct env *e);
static int env_flash_attach(struct env *e, bool writable, struct error *err);

static void env_flash_close(struct env *e)
{
	env_flash_drop(e);
	env_flash_detach(e);
	for (size_t i = 0; i < ENV_MAX_COPIES; i++)
		free(e->copies[i].part_name);
}

/* Index of name in the sorted variables, or where it would go (found false). */
static size_t env_flash_find(const struct env *e, const char *name, bool *found)
{
	size_t lo = 0, hi = e->n_vars;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(e->vars[mid].name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static char *env_flash_get(struct env *e, const char *name)
{
	bool found;
	size_t i = env_flash_find(e, name, &found);

	return found ? strdup(e->vars[i].value) : NULL;
}

static void *env_flash_next(struct env *e, void *it, const char **ret_name,
			    const char **ret_value)
{
	struct env_pair *p = it ? (struct env_pair *)it + 1 : e->vars;

	if (!e->vars || p >= e->vars + e->n_vars)
		return NULL;
	*ret_name = p->name;
	*ret_value = p->value;
	return p;
}

/* Like libubootenv: names without '=', NULL deletes. */
static int env_flash_set(struct env *e, const char *name, const char *value)
{
	bool found;
	size_t i;
	char *v, *n;

	if (!*name || strchr(name, '='))
		return -EINVAL;
	i = env_flash_find(e, name, &found);
	if (!value) {
		if (found) {
			free(e->vars[i].name);
			free(e->vars[i].value);
			memmove(e->vars + i, e->vars + i + 1, (e->n_vars - i - 1) * sizeof(*e->vars));
			e->n_vars--;
		}
		return 0;
	}
	v = strdup(value);
	if (!v)
		return -ENOMEM;
	if (found) {
		free(e->vars[i].value);
		e->vars[i].value = v;
		return 0;
	}
	struct env_pair *nv = realloc(e->vars, (e->n_vars + 1) * sizeof(*nv));
	n = strdup(name);
	if (!nv || !n) {
		if (nv)
			e->vars = nv;
		free(v);
		free(n);
		return -ENOMEM;
	}
	e->vars = nv;
	memmove(e->vars + i + 1, e->vars + i, (e->n_vars - i) * sizeof(*e->vars));
	e->vars[i] = (struct env_pair){ n, v };
	e->n_vars++;
	return 0;
}

static int env_flash_import(struct env *e, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f)
		return -errno;
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *value;
		int r;

		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (!len || line[0] == '#' || !(value = strchr(line, '=')))
			continue;
		*value++ = '\0';
		r = env_flash_set(e, line, *value ? value : NULL);
		if (r < 0 && r != -EINVAL)
			return r;
	}
	return 0;
}

static size_t env_header_size(const struct env *e)
{
	return env_is_redundant(e) ? 5 : 4; /* crc32 [+ flags] */
}

/* The copy's erase units, bad ones skipped (like U-Boot's env on NAND):
 * calls fn for each good block with the block's offset and the part of
 * the env it holds. */
static int env_flash_blocks(struct env_copy *c, size_t size,
			    int (*fn)(struct env_copy *c, uint64_t off, size_t pos, size_t len,
				      void *userdata),
			    void *userdata)
{
	uint64_t eb = c->f->info.erasesize;
	size_t pos = 0;

	for (uint64_t off = c->offset; pos < size && off < c->offset + c->span; off += eb) {
		int r = flash_block_isbad(c->f, off);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		r = fn(c, off, pos, MIN(eb, size - pos), userdata);
		if (r < 0)
			return r;
		pos += MIN(eb, size - pos);
	}
	return pos == size ? 0 : -ENOSPC;
}

static int env_flash_read_block(struct env_copy *c, uint64_t off, size_t pos, size_t len,
				void *buf)
{
	int r = flash_read(c->f, off, (uint8_t *)buf + pos, len);

	return r == -EUCLEAN ? 0 : r;
}

/* Erase, then program the block's part of the image (padded with 0xff to
 * whole pages: NAND programs pages). */
static int env_flash_write_block(struct env_copy *c, uint64_t off, size_t pos, size_t len,
				 void *image)
{
	size_t ws = MAX(c->f->info.writesize, 1u), full = DIV_ROUND_UP(len, ws) * ws;
	_cleanup_free_ uint8_t *pad = NULL;
	const uint8_t *src = (const uint8_t *)image + pos;
	int r;

	r = flash_erase_block(c->f, off);
	if (r < 0)
		return r;
	if (full != len) {
		pad = malloc(full);
		if (!pad)
			return -ENOMEM;
		memset(pad, 0xff, full);
		memcpy(pad, src, len);
		src = pad;
	}
	return flash_write(c->f, off, src, full);
}

static uint32_t env_crc(const uint8_t *data, size_t len)
{
	return (uint32_t)crc32(0, data, (uInt)len);
}

/* Copy i's state from its bytes. */
static void env_copy_classify(struct env *e, size_t i, const uint8_t *buf)
{
	struct env_copy *c = &e->copies[i];
	size_t size = e->devs[i].size, hdr = env_header_size(e);
	uint32_t crc;

	memcpy(&crc, buf, 4);
	c->flags = hdr == 5 ? buf[4] : 0;
	if (le32toh(crc) == env_crc(buf + hdr, size - hdr))
		c->state = ENV_COPY_VALID;
	else
		c->state = util_mem_is(buf, 0xff, size) ? ENV_COPY_ERASED : ENV_COPY_BAD_CRC;
}

/* Read copy i and check its CRC; fills the copy's state. */
static int env_flash_read_copy(struct env *e, size_t i, uint8_t *buf)
{
	struct env_copy *c = &e->copies[i];
	int r;

	r = env_flash_blocks(c, e->devs[i].size, env_flash_read_block, buf);
	if (r < 0) {
		c->state = ENV_COPY_UNREADABLE;
		c->error = r;
		return r;
	}
	c->error = 0;
	env_copy_classify(e, i, buf);
	return 0;
}

/* U-Boot's choice between two valid copies (env_import_redund(), and
 * libubootenv's for NAND and files): the higher serial wins, and 0
 * follows 0xff (wrap-around). */
static size_t env_pick_redundant(uint8_t f0, uint8_t f1)
{
	if (f0 == 0xff && f1 == 0)
		return 1;
	if (f0 == 0 && f1 == 0xff)
		return 0;
	return f1 > f0 ? 1 : 0;
}

/* "name=value\0...\0" into the variables; U-Boot skips lines without '='. */
static int env_flash_parse(struct env *e, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	while (p < end && *p) {
		const char *nul = memchr(p, '\0', end - p), *eq;
		_cleanup_free_ char *name = NULL;
		int r;

		if (!nul)
			break; /* runs off the end: what follows is not the env */
		eq = memchr(p, '=', nul - p);
		if (eq && eq > p) {
			name = strndup(p, eq - p);
			if (!name)
				return -ENOMEM;
			r = env_flash_set(e, name, eq + 1);
			if (r < 0)
				return r;
		}
		p = nul + 1;
	}
	return 0;
}

static int env_flash_load(struct env *e)
{
	size_t size = e->devs[0].size, hdr = env_header_size(e);
	_cleanup_free_ uint8_t *buf = malloc(size * e->n_devs);
	bool valid[ENV_MAX_COPIES] = { false, false };

	if (!buf)
		return -ENOMEM;
	env_flash_drop(e);
	for (size_t i = 0; i < e->n_devs; i++) {
		int q = env_flash_read_copy(e, i, buf + i * size);
		valid[i] = q >= 0 && e->copies[i].state == ENV_COPY_VALID;
	}
	if (e->n_devs == 2 && valid[0] && valid[1])
		e->current = env_pick_redundant(e->copies[0].flags, e->copies[1].flags);
	else
		e->current = e->n_devs == 2 && valid[1] ? 1 : 0;
	if (!valid[e->current])
		/* no valid copy: U-Boot would use its default env; the copies'
		 * states say why (env_copy_state()) */
		return -ENODATA;
	return env_flash_parse(e, (const char *)buf + e->current * size + hdr, size - hdr);
}

/* The image of a copy: crc32 (little endian), the serial on a redundant
 * env, the variables, zero-filled. */
static int env_flash_image(struct env *e, uint8_t serial, uint8_t **ret)
{
	size_t size = e->devs[0].size, hdr = env_header_size(e), pos = hdr;
	uint8_t *img = calloc(1, size);
	uint32_t crc;

	if (!img)
		return -ENOMEM;
	for (size_t i = 0; i < e->n_vars; i++) {
		size_t nl = strlen(e->vars[i].name), vl = strlen(e->vars[i].value);
		if (pos + nl + vl + 2 >= size) { /* keeps the closing empty string */
			free(img);
			return -ENOSPC;
		}
		memcpy(img + pos, e->vars[i].name, nl);
		img[pos + nl] = '=';
		memcpy(img + pos + nl + 1, e->vars[i].value, vl);
		pos += nl + vl + 2;
	}
	if (hdr == 5)
		img[4] = serial;
	crc = htole32(env_crc(img + hdr, size - hdr));
	memcpy(img, &crc, 4);
	*ret = img;
	return 0;
}

/* One store: the copy not in use (the only one on a single env) is erased
 * and programmed with the next serial. A cut leaves that copy invalid and
 * the other one as it was. */
static int env_flash_store(struct env *e)
{
	size_t target = env_is_redundant(e) ? !e->current : 0;
	uint8_t serial = (uint8_t)(e->copies[e->current].flags + 1);
	_cleanup_free_ uint8_t *img = NULL;
	int r;

	r = env_flash_image(e, serial, &img);
	if (r < 0)
		return r;
	if (!e->writable) {
		r = env_flash_attach(e, true, NULL);
		if (r < 0)
			return r;
	}
	e->copies[target].state = ENV_COPY_BAD_CRC; /* until the last page is in */
	r = env_flash_blocks(&e->copies[target], e->devs[target].size, env_flash_write_block, img);
	if (r < 0)
		return r;
	e->copies[target].state = ENV_COPY_VALID;
	e->copies[target].flags = serial;
	e->current = target;
	return 0;
}

static const struct env_backend env_backend_flash = {
	.name = "flash",
	.load = env_flash_load,
	.close = env_flash_close,
	.get = env_flash_get,
	.next = env_flash_next,
	.set = env_flash_set,
	.import = env_flash_import,
	.store = env_flash_store,
};

/* Refuse what libubootenv would mishandle silently. */
static int env_check_device(const struct env_device *d, struct error *err)
{
	struct stat st;

	if (!d->path || !*d->path || strpbrk(d->path, " \t\n"))
		return error_set(err, -EINVAL, "env device '%s': empty or contains whitespace",
				d->path ? d->path : "");
	if (!d->size)
		return error_set(err, -EINVAL, "env device %s: env size is 0", d->path);
	if (!strncmp(d->path, "/dev/mtdblock", strlen("/dev/mtdblock")))
		return error_set(err, -EINVAL,
				"env device %s: use the MTD character device (/dev/mtdN); "
				"libubootenv does not write through mtdblock", d->path);
	if (stat(d->path, &st) < 0)
		return error_set(err, -errno, "env device %s: %s", d->path, strerror(errno));
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < d->offset + d->size)
		return error_set(err, -ENOSPC,
				"env device %s: env at 0x%" PRIx64 "+0x%" PRIx64
				" ends beyond the file's %" PRIu64 " bytes", d->path, d->offset,
				d->size, (uint64_t)st.st_size);
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return error_set(err, -EINVAL, "env device %s: not a file or device", d->path);
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

int env_open_devices(const struct env_device *devs, size_t n_devs, unsigned flags,
		     struct env **ret, struct error *err)
{
	_cleanup_(env_closep) struct env *e = NULL;
	_cleanup_free_ char *cfg = NULL;
	int r;

	if (n_devs < 1 || n_devs > ENV_MAX_COPIES)
		return error_set(err, -EINVAL, "U-Boot env: %zu copies given, 1 or 2 supported", n_devs);
	if (n_devs == 2 && devs[0].size != devs[1].size)
		return error_set(err, -EINVAL, "U-Boot env: the two copies differ in size (0x%" PRIx64
				" and 0x%" PRIx64 ")", devs[0].size, devs[1].size);
	for (size_t i = 0; i < n_devs; i++) {
		r = env_check_device(&devs[i], err);
		if (r < 0)
			return r;
	}
	e = env_new(&env_backend_uboot);
	if (!e)
		return -ENOMEM;
	r = env_set_devices(e, devs, n_devs);
	if (r < 0)
		return r;
	r = env_config_text(e, &cfg);
	if (r < 0)
		return r;
	r = libuboot_initialize(&e->ctx, NULL);
	if (r < 0)
		return error_set(err, r, "libubootenv: cannot initialise: %s", strerror(-r));
	r = env_read_config_text(e->ctx, cfg);
	if (r < 0)
		return error_set(err, r, "libubootenv rejected the env config for %s: %s", e->desc,
				strerror(-r));
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

static void env_flash_detach(struct env *e)
{
	for (size_t i = 0; i < ENV_MAX_COPIES; i++) {
		flash_close(e->copies[i].f);
		flash_close(e->copies[i].dev);
		e->copies[i].f = e->copies[i].dev = NULL;
	}
}

/* Open the copies' partitions on the simulator, read-only (reads leave the
 * chip file as it is: no counters change) or writable (for a store). The
 * env keeps no pointer into the layout: callers may free it once opened. */
static int env_flash_attach(struct env *e, bool writable, struct error *err)
{
	env_flash_detach(e);
	for (size_t i = 0; i < e->n_devs; i++) {
		struct env_copy *c = &e->copies[i];
		_cleanup_free_ char *spec = NULL;
		int r;

		if (asprintf(&spec, "%s%s", SIM_PREFIX, e->paths[i]) < 0)
			return -ENOMEM;
		r = flash_open(spec, writable, &c->dev);
		if (r >= 0 && (c->dev->info.size != c->chip.size ||
			       c->dev->info.erasesize != c->chip.erasesize ||
			       c->dev->info.type != c->chip.type))
			r = -EMEDIUMTYPE;
		if (r >= 0)
			r = flash_open_window(c->dev, c->part_name, c->part_offset, c->part_size,
					      &c->f);
		if (r < 0)
			return error_set(err, r, "env partition %s: simulator %s: %s", c->part_name,
					e->paths[i], r == -EMEDIUMTYPE ?
					"not the chip the layout describes" : strerror(-r));
	}
	e->writable = writable;
	return 0;
}

/* Where copy i of the layout's env is: devs[i], and what env_flash_attach()
 * needs (copied: the layout may go away). */
static int env_flash_copy_locate(struct env *e, const struct layout *l, const char *target,
				 size_t i, struct error *err)
{
	const struct layout_env_copy *lc = &l->env.copies[i];
	const struct layout_partition *p = lc->part;
	struct env_copy *c = &e->copies[i];
	uint64_t span = lc->sector_size ? lc->sector_size : p->dev->erasesize;
	char *path = NULL;
	int r;

	r = board_sim_device_path(target, l, p->dev, &path);
	if (r < 0)
		return error_set(err, r, "env partition %s: no simulator file for device %s in %s: %s",
				p->name, p->dev->name, target, strerror(-r));
	e->paths[i] = path;
	e->n_devs = i + 1;
	e->devs[i] = (struct env_device){ .path = path, .offset = p->offset + lc->offset,
					  .size = lc->size, .sector_size = span, .sectors = 1 };
	c->part_name = strdup(p->name);
	if (!c->part_name)
		return -ENOMEM;
	c->part_offset = p->offset;
	c->part_size = p->size;
	c->chip = (struct flash_info){ .type = p->dev->type, .size = p->dev->size,
				       .erasesize = p->dev->erasesize };
	c->offset = lc->offset;
	c->span = span;
	return 0;
}

/* A layout's env on simulator files: the flash backend. */
static int env_open_flash(const struct layout *l, const char *target, unsigned flags,
			  struct env **ret, struct error *err)
{
	_cleanup_(env_closep) struct env *e = env_new(&env_backend_flash);
	int r = 0;

	if (!e)
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < l->env.n_copies; i++)
		r = env_flash_copy_locate(e, l, target, i, err);
	if (r >= 0)
		r = env_flash_attach(e, false, err);
	if (r < 0)
		return r;
	env_make_desc(e);
	return env_open_finish(&e, flags, ret, err);
}

int env_open_layout(const struct layout *l, const char *target, const char *sysfs_root,
		    unsigned flags, struct env **ret, struct error *err)
{
	struct env_device devs[ENV_MAX_COPIES] = {};
	char *paths[ENV_MAX_COPIES] = { NULL, NULL };
	bool sim = target && !strncmp(target, SIM_PREFIX, strlen(SIM_PREFIX));
	size_t n = l->env.n_copies;
	int r = 0;

	if (n == 0)
		return error_set(err, -ENOENT, "layout %s has no U-Boot env partitions; describe "
				"them there or use " ENV_DEFAULT_CONFIG, l->path ? l->path : "");
	if (n > ENV_MAX_COPIES)
		return error_set(err, -EINVAL, "layout %s: %zu env copies", l->path, n);
	if (target && !sim && strcmp(target, "system"))
		return error_set(err, -EINVAL, "target '%s': expected 'system' or 'sim:PATH'", target);
	for (size_t i = 0; i < n; i++) {
		const struct layout_env_copy *c = &l->env.copies[i];
		if (c->offset + c->size > c->part->size)
			return error_set(err, -EINVAL, "env copy %zu (0x%" PRIx64 "+0x%" PRIx64
					") does not fit partition %s (0x%" PRIx64 " bytes)", i,
					c->offset, c->size, c->part->name, c->part->size);
	}
	if (sim)
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
