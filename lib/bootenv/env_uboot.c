/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libubootenv backend of the U-Boot env (env.h, env_backend.h): real
 * MTD devices, fw_env.config files, explicit device lists. The quirks of
 * libubootenv 0.3.2 it works around are listed at the top of env.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libuboot.h>

#include "cleanup.h"
#include "env.h"
#include "env_backend.h"
#include "util.h"

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
			env_flash_copy_classify(e, i, buf);
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
	int r = e->lock_fd < 0 ? env_lock_take(e, &e->lock_fd, NULL) : 0;

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

const struct env_backend env_uboot_backend = {
	.name = "libubootenv",
	.load = env_uboot_load,
	.close = env_uboot_close,
	.get = env_uboot_get,
	.next = env_uboot_next,
	.set = env_uboot_set,
	.import = env_uboot_import,
	.store = env_uboot_store,
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

/* Configure libubootenv for the devices in e (generated fw_env.config). */
int env_uboot_configure(struct env *e, struct error *err)
{
	_cleanup_free_ char *cfg = NULL;
	int r;

	for (size_t i = 0; i < e->n_devs; i++) {
		r = env_check_device(&e->devs[i], err);
		if (r < 0)
			return r;
	}
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
	return 0;
}
