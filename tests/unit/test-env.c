/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* env: libubootenv wrapper on file-backed envs (single and redundant),
 * one store per transaction, torn and failed stores, config parsing,
 * layout resolution (simulator file, fake sysfs); the flash backend on the
 * simulator: power cuts at every op of a store, byte compatibility with
 * libubootenv and fw_printenv/fw_setenv both ways; the bounded env lock. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "cleanup.h"
#include "env.h"
#include "nsim.h"
#include "testlib.h"

#define ENV_SIZE 0x2000u
#define COPY0 0x1000u
#define COPY1 0x3000u
#define FILE_SIZE 0x6000u

/* ---- syscall interposition on the env file (libubootenv calls libc) ---- */
static char watched[PATH_MAX];
static unsigned n_fsync;          /* fsyncs of the watched file = stores */
static long fail_write_after = -1; /* >= 0: write that many bytes, then EIO */

static bool is_watched(int fd)
{
	char link[64], target[PATH_MAX];
	ssize_t n;

	if (!watched[0])
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, watched);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	if (is_watched(fd))
		n_fsync++;
	return real(fd);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (fail_write_after >= 0 && is_watched(fd)) {
		if (fail_write_after == 0) {
			errno = EIO;
			return -1;
		}
		if ((long)len > fail_write_after)
			len = (size_t)fail_write_after;
		ssize_t r = real(fd, buf, len);
		if (r > 0)
			fail_write_after -= r;
		return r;
	}
	return real(fd, buf, len);
}

/* ---- helpers ---- */
static void make_erased(const char *path, size_t size)
{
	unsigned char *b = malloc(size);
	FILE *f = fopen(path, "we");

	assert_non_null(b);
	assert_non_null(f);
	memset(b, 0xff, size);
	assert_int_equal(fwrite(b, 1, size, f), size);
	fclose(f);
	free(b);
}

static unsigned char *slurp(const char *path, size_t size)
{
	unsigned char *b = malloc(size);
	FILE *f = fopen(path, "re");

	assert_non_null(b);
	assert_non_null(f);
	assert_int_equal(fread(b, 1, size, f), size);
	fclose(f);
	return b;
}

static void spill(const char *path, const unsigned char *b, size_t size)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, size, f), size);
	fclose(f);
}

struct fixture {
	char dir[48];
	char file[64];
	char lock[80];
	struct env_device devs[2];
	struct simenv *sim; /* setup_sim */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/flashd-test-env-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->file, sizeof(fx->file), "%s/env.bin", fx->dir);
	make_erased(fx->file, FILE_SIZE);
	fx->devs[0] = (struct env_device){ .path = fx->file, .offset = COPY0, .size = ENV_SIZE };
	fx->devs[1] = (struct env_device){ .path = fx->file, .offset = COPY1, .size = ENV_SIZE };
	assert_non_null(realpath(fx->file, watched));
	/* a private lock: the host's /var/lock one is shared with other tests */
	snprintf(fx->lock, sizeof(fx->lock), "%s/fw_printenv.lock", fx->dir);
	env_set_lock(fx->lock, 1000);
	n_fsync = 0;
	fail_write_after = -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	watched[0] = '\0';
	testlib_rm_rf(fx->dir);
	free(fx->sim);
	free(fx);
	return 0;
}

static void expect_var(struct env *e, const char *name, const char *value)
{
	char *v = NULL;
	int r = env_get(e, name, &v);

	if (!value) {
		if (r != -ENOENT)
			fail_msg("%s: expected unset, got '%s'", name, v ? v : "?");
		return;
	}
	if (r < 0)
		fail_msg("%s: expected '%s', unset (%d)", name, value, r);
	if (strcmp(v, value))
		fail_msg("%s: expected '%s', got '%s'", name, value, v);
	free(v);
}

/* Provision both fixtures' env with a default set and return it open. */
static struct env *provision(struct fixture *fx, size_t n_copies)
{
	static const struct env_var vars[] = {
		{ "BOOT_ORDER", "A B" }, { "BOOT_A_LEFT", "3" }, { "BOOT_B_LEFT", "3" },
	};
	struct error err = {};
	struct env *e = NULL;

	assert_int_equal(env_open_devices(fx->devs, n_copies, ENV_OPEN_ALLOW_BLANK, &e, &err), 0);
	assert_true(env_is_blank(e));
	assert_int_equal(env_init_default(e, NULL, vars, ELEMENTSOF(vars), false, &err), 0);
	assert_false(env_is_blank(e));
	return e;
}

/* ---- tests ---- */
TEST_FIXTURE(test_blank, setup, teardown)
{
	struct fixture *fx = *state;
	struct error err = {};
	_cleanup_env_ struct env *e = NULL;
	_cleanup_env_txn_ struct env_txn *t = NULL;

	assert_int_equal(env_open_devices(fx->devs, 2, 0, &e, &err), -ENODATA);
	assert_null(e);
	assert_non_null(strstr(err.msg, fx->file));
	assert_non_null(strstr(err.msg, "no valid copy"));

	assert_int_equal(env_open_devices(fx->devs, 2, ENV_OPEN_ALLOW_BLANK, &e, &err), 0);
	assert_true(env_is_blank(e));
	assert_true(env_is_redundant(e));
	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set(t, "x", "1"), 0);
	/* a plain change must not replace U-Boot's defaults on a blank env */
	assert_int_equal(env_txn_commit(t, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "env init"));
	assert_int_equal(n_fsync, 0);
}

TEST_FIXTURE(test_init_default, setup, teardown)
{
	struct fixture *fx = *state;
	struct error err = {};
	char initial[160];
	FILE *f;
	static const struct env_var vars[] = { { "BOOT_ORDER", "A B" }, { "bootdelay", "0" } };
	struct env *e = NULL;

	snprintf(initial, sizeof(initial), "%s/u-boot-initial-env", fx->dir);
	f = fopen(initial, "we");
	assert_non_null(f);
	fputs("# defaults\nbootcmd=run flashd_boot\nbootdelay=2\nempty=\n", f);
	fclose(f);

	assert_int_equal(env_open_devices(fx->devs, 2, ENV_OPEN_ALLOW_BLANK, &e, &err), 0);
	assert_int_equal(env_init_default(e, initial, vars, ELEMENTSOF(vars), false, &err), 0);
	assert_int_equal(n_fsync, 1);
	env_close(e);

	assert_int_equal(env_open_devices(fx->devs, 2, 0, &e, &err), 0);
	expect_var(e, "bootcmd", "run flashd_boot");
	expect_var(e, "bootdelay", "0"); /* vars override the defaults file */
	expect_var(e, "BOOT_ORDER", "A B");
	expect_var(e, "empty", NULL);
	/* a valid env is never replaced by defaults unless forced */
	assert_int_equal(env_init_default(e, initial, vars, 1, false, &err), -EEXIST);
	assert_int_equal(n_fsync, 1);
	assert_int_equal(env_init_default(e, NULL, vars, 1, true, &err), 0);
	expect_var(e, "bootcmd", NULL);
	expect_var(e, "BOOT_ORDER", "A B");
	assert_int_equal(env_init_default(e, "/nonexistent/initial", vars, 1, true, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/initial"));
	env_close(e);
}

TEST_FIXTURE(test_txn_one_store, setup, teardown)
{
	struct fixture *fx = *state;
	struct error err = {};
	struct env *e = provision(fx, 2);
	_cleanup_env_txn_ struct env_txn *t = NULL;
	_cleanup_free_ unsigned char *before = NULL, *after = NULL;
	unsigned before_flags, after_flags;

	env_close(e);
	assert_int_equal(env_open_devices(fx->devs, 2, 0, &e, &err), 0);
	before = slurp(fx->file, FILE_SIZE);
	n_fsync = 0;
	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set(t, "BOOT_ORDER", "B A"), 0);
	assert_int_equal(env_txn_set(t, "BOOT_B_LEFT", "2"), 0);
	assert_int_equal(env_txn_set(t, "BOOT_B_LEFT", "3"), 0); /* last set wins */
	assert_int_equal(env_txn_set(t, "BOOT_A_LEFT", NULL), 0);
	assert_int_equal(env_txn_set(t, "new_var", "x y z"), 0);
	assert_int_equal(env_txn_set(t, "bad=name", "1"), -EINVAL);
	assert_int_equal(env_txn_set(t, "", "1"), -EINVAL);
	assert_int_equal(env_txn_size(t), 4);
	assert_int_equal(env_txn_commit(t, &err), 0);
	assert_int_equal(n_fsync, 1);
	env_close(e);
	after = slurp(fx->file, FILE_SIZE);

	/* exactly one copy rewritten, its flag one above the other's */
	bool c0 = memcmp(before + COPY0, after + COPY0, ENV_SIZE) != 0;
	bool c1 = memcmp(before + COPY1, after + COPY1, ENV_SIZE) != 0;
	assert_true(c0 != c1);
	before_flags = c0 ? after[COPY1 + 4] : after[COPY0 + 4];
	after_flags = c0 ? after[COPY0 + 4] : after[COPY1 + 4];
	assert_int_equal((after_flags - before_flags) & 0xff, 1);

	assert_int_equal(env_open_devices(fx->devs, 2, 0, &e, &err), 0);
	expect_var(e, "BOOT_ORDER", "B A");
	expect_var(e, "BOOT_B_LEFT", "3");
	expect_var(e, "BOOT_A_LEFT", NULL);
	expect_var(e, "new_var", "x y z");

	/* iteration is complete and in name order */
	void *it = NULL;
	const char *name, *value, *prev = "";
	size_t n = 0;
	while (env_next(e, &it, &name, &value) > 0) {
		assert_true(strcmp(prev, name) < 0);
		prev = name;
		n++;
	}
	assert_int_equal(n, 3);
	env_close(e);
}

/* The old and new env values differ in every one of these variables. */
static const struct env_var old_vars[] = {
	{ "BOOT_ORDER", "A B" }, { "BOOT_A_LEFT", "3" }, { "BOOT_B_LEFT", "3" },
};
static const struct env_var new_vars[] = {
	{ "BOOT_ORDER", "B A" }, { "BOOT_A_LEFT", "2" }, { "BOOT_B_LEFT", "1" },
};

/* One store of new_vars through a fresh open of the fixture's two copies. */
static void store_new_vars(struct fixture *fx)
{
	_cleanup_env_txn_ struct env_txn *t = NULL;
	struct error err = {};
	struct env *e = NULL;

	assert_int_equal(env_open_devices(fx->devs, 2, 0, &e, &err), 0);
	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set_many(t, new_vars, ELEMENTSOF(new_vars)), 0);
	assert_int_equal(env_txn_commit(t, &err), 0);
	env_close(e);
}

/* 1 = all old values, 2 = all new, fails on anything mixed or invalid. */
static int classify_env(struct env *e, const char *what)
{
	bool is_old = true, is_new = true;

	for (size_t i = 0; i < ELEMENTSOF(old_vars); i++) {
		char *v = NULL;
		if (env_get(e, old_vars[i].name, &v) < 0)
			fail_msg("%s: %s lost", what, old_vars[i].name);
		is_old &= !strcmp(v, old_vars[i].value);
		is_new &= !strcmp(v, new_vars[i].value);
		free(v);
	}
	if (!is_old && !is_new)
		fail_msg("%s: the env mixes old and new state", what);
	return is_new ? 2 : 1;
}

static int classify(struct fixture *fx, size_t n_copies, const char *what)
{
	struct error err = {};
	_cleanup_env_ struct env *e = NULL;

	if (env_open_devices(fx->devs, n_copies, 0, &e, &err) < 0)
		fail_msg("%s: env invalid after a torn store: %s", what, err.msg);
	return classify_env(e, what);
}

/* Power cut during a store: for tear points across the written copy, the
 * device holds the new bytes up to the tear and then either the old bytes
 * (NAND page/NOR word granularity) or 0xff (erased, not yet programmed). */
TEST_FIXTURE(test_power_cut_tear, setup, teardown)
{
	struct fixture *fx = *state;
	struct error err = {};
	struct env *e = provision(fx, 2);
	_cleanup_env_txn_ struct env_txn *t = NULL;
	_cleanup_free_ unsigned char *before = NULL, *after = NULL, *torn = NULL;
	size_t copy, tears = 0, n_new = 0;

	/* a second store so that both copies hold valid data before the cut */
	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set(t, "unrelated", "1"), 0);
	assert_int_equal(env_txn_commit(t, &err), 0);
	env_close(e);

	before = slurp(fx->file, FILE_SIZE);
	store_new_vars(fx);
	after = slurp(fx->file, FILE_SIZE);

	assert_true(memcmp(before + COPY0, after + COPY0, ENV_SIZE) == 0 ||
		    memcmp(before + COPY1, after + COPY1, ENV_SIZE) == 0);
	copy = memcmp(before + COPY0, after + COPY0, ENV_SIZE) ? COPY0 : COPY1;
	assert_int_equal(classify(fx, 2, "complete store"), 2);

	torn = malloc(FILE_SIZE);
	assert_non_null(torn);
	for (size_t k = 0;; k = k < 16 ? k + 1 : MIN(k + 251, ENV_SIZE)) {
		for (int erased = 0; erased < 2; erased++) {
			char what[64];
			memcpy(torn, before, FILE_SIZE);
			memcpy(torn + copy, after + copy, k);
			if (erased)
				memset(torn + copy + k, 0xff, ENV_SIZE - k);
			spill(fx->file, torn, FILE_SIZE);
			snprintf(what, sizeof(what), "tear at byte %zu%s", k, erased ? " (erased)" : "");
			/* a tear past the last byte that differs is a complete write */
			bool complete = !memcmp(torn + copy, after + copy, ENV_SIZE);
			int got = classify(fx, 2, what);
			if (got != (complete ? 2 : 1))
				fail_msg("%s: expected the %s state", what, complete ? "new" : "old");
			n_new += complete;
			tears += !complete;
		}
		if (k == ENV_SIZE)
			break;
	}
	/* most tear points really cut the copy short, and the full write counts */
	assert_true(tears > 20);
	assert_true(n_new >= 2);
}

/* A store that fails mid-write (I/O error) reports it, keeps the previous
 * state on storage and in memory. */
TEST_FIXTURE(test_store_failure, setup, teardown)
{
	struct fixture *fx = *state;
	struct error err = {};
	struct env *e = provision(fx, 2);
	_cleanup_env_txn_ struct env_txn *t = NULL;

	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set_many(t, new_vars, ELEMENTSOF(new_vars)), 0);
	/* early in the data: libubootenv leaves the image's tail uninitialised,
	 * and a tail that happens to match the erased bytes would make a later
	 * tear point a complete write */
	fail_write_after = 32;
	assert_int_equal(env_txn_commit(t, &err), -EIO);
	fail_write_after = -1;
	assert_non_null(strstr(err.msg, "store failed"));
	assert_non_null(strstr(err.msg, fx->file));
	/* memory was reloaded: the failed values are not visible */
	expect_var(e, "BOOT_ORDER", "A B");
	expect_var(e, "BOOT_B_LEFT", "3");
	env_close(e);
	assert_int_equal(classify(fx, 2, "failed store"), 1);

	/* and the next store still works */
	store_new_vars(fx);
	assert_int_equal(classify(fx, 2, "store after failure"), 2);
}

TEST_FIXTURE(test_single_copy_and_space, setup, teardown)
{
	struct fixture *fx = *state;
	struct error err = {};
	struct env *e = provision(fx, 1);
	_cleanup_env_txn_ struct env_txn *t = NULL;
	unsigned char *raw;
	char *big = malloc(ENV_SIZE);

	assert_false(env_is_redundant(e));
	assert_non_null(strstr(env_describe(e), fx->file));
	/* single copy layout: crc32 of the data area, then data */
	raw = slurp(fx->file, FILE_SIZE);
	uint32_t crc;
	memcpy(&crc, raw + COPY0, 4);
	assert_int_equal(crc, (uint32_t)crc32(0, raw + COPY0 + 4, ENV_SIZE - 4));
	assert_memory_equal(raw + COPY0 + 4, "BOOT_A_LEFT=3", 14);
	free(raw);

	n_fsync = 0;
	memset(big, 'x', ENV_SIZE - 1);
	big[ENV_SIZE - 1] = '\0';
	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set(t, "big", big), 0);
	assert_int_equal(env_txn_commit(t, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "do not fit"));
	assert_int_equal(n_fsync, 0);
	expect_var(e, "big", NULL);
	env_close(e);
	free(big);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void expect_config_error(struct fixture *fx, const char *text, int code, const char *msg)
{
	char cfg[160];
	struct error err = {};
	struct env *e = NULL;

	snprintf(cfg, sizeof(cfg), "%s/fw_env.config", fx->dir);
	write_text(cfg, text);
	assert_int_equal(env_open_config(cfg, ENV_OPEN_ALLOW_BLANK, &e, &err), code);
	assert_null(e);
	if (!strstr(err.msg, msg))
		fail_msg("error '%s' lacks '%s'", err.msg, msg);
}

TEST_FIXTURE(test_config, setup, teardown)
{
	struct fixture *fx = *state;
	char cfg[160], text[512];
	struct error err = {};
	struct env *e = provision(fx, 2);

	env_close(e);
	snprintf(cfg, sizeof(cfg), "%s/fw_env.config", fx->dir);
	snprintf(text, sizeof(text), "# comment\n\n%s 0x1000 0x2000 0x2000\n%s 0x3000 0x2000\n",
		 fx->file, fx->file);
	write_text(cfg, text);
	assert_int_equal(env_open_config(cfg, 0, &e, &err), 0);
	assert_true(env_is_redundant(e));
	assert_int_equal(env_device(e, 1)->offset, 0x3000);
	assert_int_equal(env_device(e, 0)->sector_size, 0x2000);
	expect_var(e, "BOOT_ORDER", "A B");
	env_close(e);

	snprintf(text, sizeof(text), "%s 0x1000 8192\n", fx->file);
	expect_config_error(fx, text, -EINVAL, "lacks the 0x prefix");
	snprintf(text, sizeof(text), "%s 01000 0x2000\n", fx->file);
	expect_config_error(fx, text, -EINVAL, "leading 0");
	expect_config_error(fx, "/dev/mtdblock3 0x0 0x2000\n", -EINVAL, "mtdblock");
	expect_config_error(fx, "/nonexistent/env 0x0 0x2000\n", -ENOENT, "/nonexistent/env");
	snprintf(text, sizeof(text), "%s 0x1000\n", fx->file);
	expect_config_error(fx, text, -EINVAL, ":1: expected");
	snprintf(text, sizeof(text), "%s 0x5000 0x2000\n", fx->file);
	expect_config_error(fx, text, -ENOSPC, "ends beyond");
	snprintf(text, sizeof(text), "%s 0x0 0x1000\n%s 0x1000 0x1000\n%s 0x2000 0x1000\n",
		 fx->file, fx->file, fx->file);
	expect_config_error(fx, text, -EINVAL, ":3: more than two");
	snprintf(text, sizeof(text), "%s 0x0 0x1000\n%s 0x1000 0x2000\n", fx->file, fx->file);
	expect_config_error(fx, text, -EINVAL, "differ in size");
	assert_int_equal(env_open_config("/nonexistent/fw_env.config", 0, &e, &err), -ENOENT);
}

/* A one-device NAND layout with a redundant env in two partitions. */
static void fill_layout(struct layout *l, struct layout_device *d, struct layout_partition *p)
{
	*d = (struct layout_device){ .name = "nand0", .type = FLASH_NAND, .size = 0x100000,
				     .erasesize = 0x4000, .writesize = 512 };
	p[0] = (struct layout_partition){ .name = "u-boot", .dev = d, .offset = 0, .size = 0x10000 };
	p[1] = (struct layout_partition){ .name = "env1", .dev = d, .offset = 0x10000, .size = 0x8000 };
	p[2] = (struct layout_partition){ .name = "env2", .dev = d, .offset = 0x18000, .size = 0x8000 };
	*l = (struct layout){ .path = "test.json", .devices = d, .n_devices = 1, .partitions = p,
			      .n_partitions = 3 };
	l->env.copies[0] = (struct layout_env_copy){ .part = &p[1], .offset = 0x4000, .size = 0x4000 };
	l->env.copies[1] = (struct layout_env_copy){ .part = &p[2], .offset = 0, .size = 0x4000 };
	l->env.n_copies = 2;
}

/* A simulator file with the geometry of fill_layout()'s device. */
static void make_sim(const char *path, const struct layout_device *d)
{
	struct nsim_geometry geo = { .type = NSIM_NAND, .size = d->size, .erasesize = d->erasesize,
				     .writesize = d->writesize, .oobsize = 16 };

	assert_int_equal(nsim_create(path, &geo, NSIM_CREATE_FORCE), 0);
}

/* ---- the flash backend on the simulator ---- */

struct simenv {
	struct layout l;
	struct layout_device d;
	struct layout_partition p[3];
	char sim[160], target[200];
	char cfg[160]; /* sim_fw_env_config() */
};

/* fill_layout()'s board on a blank simulator fx->dir/board.sim */
static void simenv_blank(struct fixture *fx, struct simenv *s)
{
	fill_layout(&s->l, &s->d, s->p);
	snprintf(s->sim, sizeof(s->sim), "%s/board.sim", fx->dir);
	make_sim(s->sim, &s->d);
	snprintf(s->target, sizeof(s->target), "sim:%s", s->sim);
}

/* ... with an env of the boot script's defaults */
static void simenv_new(struct fixture *fx, struct simenv *s)
{
	static const struct env_var vars[] = {
		{ "BOOT_ORDER", "A B" }, { "BOOT_A_LEFT", "3" }, { "BOOT_B_LEFT", "3" },
	};
	struct error err = {};
	struct env *e = NULL;

	simenv_blank(fx, s);
	assert_int_equal(env_open_layout(&s->l, s->target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &err), 0);
	assert_int_equal(env_init_default(e, NULL, vars, ELEMENTSOF(vars), false, &err), 0);
	env_close(e);
}

/* The fixture plus a simulated board with its env (fx->sim). */
static int setup_sim(void **state)
{
	struct fixture *fx;

	setup(state);
	fx = *state;
	fx->sim = calloc(1, sizeof(*fx->sim));
	assert_non_null(fx->sim);
	simenv_new(fx, fx->sim);
	return 0;
}

TEST_FIXTURE(test_layout_sim, setup, teardown)
{
	struct fixture *fx = *state;
	struct simenv s;
	struct error err = {};
	static const struct env_var vars[] = { { "BOOT_ORDER", "A B" } };
	struct env *e = NULL;
	unsigned char *raw;
	const uint64_t data = nsim_data_offset();

	simenv_blank(fx, &s);
	assert_int_equal(env_open_layout(&s.l, s.target, NULL, 0, &e, &err), -ENODATA);
	assert_int_equal(env_open_layout(&s.l, s.target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &err), 0);
	/* offsets on the simulated chip */
	assert_int_equal(env_device(e, 0)->offset, 0x10000 + 0x4000);
	assert_int_equal(env_device(e, 1)->offset, 0x18000);
	assert_int_equal(env_device(e, 0)->sector_size, 0x4000);
	assert_string_equal(env_device(e, 0)->path, s.sim);
	assert_int_equal(env_init_default(e, NULL, vars, 1, false, &err), 0);
	env_close(e);

	/* the store landed in partition env2's first 16 KiB, with a valid CRC */
	raw = slurp(s.sim, data + s.d.size);
	const unsigned char *c = raw + data + 0x18000;
	uint32_t crc;
	memcpy(&crc, c, 4);
	assert_int_equal(crc, (uint32_t)crc32(0, c + 5, 0x4000 - 5));
	assert_memory_equal(c + 5, "BOOT_ORDER=A B", 15);
	free(raw);

	/* a directory target holds <device>.sim */
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "mkdir %s/boards && mv %s %s/boards/nand0.sim", fx->dir, s.sim,
		 fx->dir);
	assert_int_equal(system(cmd), 0);
	snprintf(s.target, sizeof(s.target), "sim:%s/boards", fx->dir);
	assert_int_equal(env_open_layout(&s.l, s.target, NULL, 0, &e, &err), 0);
	expect_var(e, "BOOT_ORDER", "A B");
	env_close(e);

	s.l.env.n_copies = 0;
	assert_int_equal(env_open_layout(&s.l, s.target, NULL, 0, &e, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "fw_env.config"));
	s.l.env.n_copies = 2;
	s.l.env.copies[0].offset = 0x6000; /* 0x6000 + 0x4000 > 0x8000 */
	assert_int_equal(env_open_layout(&s.l, s.target, NULL, 0, &e, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not fit partition env1"));
	assert_int_equal(env_open_layout(&s.l, "usb:x", NULL, 0, &e, &err), -EINVAL);
	s.l.env.copies[0].offset = 0x4000;
	/* a simulator that is not the layout's chip */
	s.d.erasesize = 0x8000;
	assert_int_equal(env_open_layout(&s.l, s.target, NULL, 0, &e, &err), -EMEDIUMTYPE);
	assert_non_null(strstr(err.msg, "not the chip the layout describes"));
}

static struct nsim_info sim_info(const char *path)
{
	struct nsim *n = NULL;
	struct nsim_info i;

	assert_int_equal(nsim_open(path, true, &n), 0);
	assert_int_equal(nsim_get_info(n, &i), 0);
	nsim_close(n);
	return i;
}

static void sim_cut(const char *path, int64_t ops, bool tear)
{
	struct nsim *n = NULL;

	assert_int_equal(nsim_open(path, true, &n), 0);
	if (ops < 0)
		assert_int_equal(nsim_power_on(n), 0);
	else
		assert_int_equal(nsim_set_powercut(n, ops, tear), 0);
	nsim_close(n);
}

/* 1 = the old values, 2 = the new ones; fails on a mix or an invalid env. */
static int sim_classify(struct simenv *s, const char *what)
{
	struct error err = {};
	_cleanup_env_ struct env *e = NULL;

	if (env_open_layout(&s->l, s->target, NULL, 0, &e, &err) < 0)
		fail_msg("%s: env invalid: %s", what, err.msg);
	return classify_env(e, what);
}

static int sim_store(struct simenv *s, const struct env_var *vars, size_t n,
		     struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	_cleanup_env_txn_ struct env_txn *t = NULL;
	int r = env_open_layout(&s->l, s->target, NULL, 0, &e, err);

	if (r < 0)
		return r;
	assert_int_equal(env_txn_new(e, &t), 0);
	assert_int_equal(env_txn_set_many(t, vars, n), 0);
	return env_txn_commit(t, err);
}

/* An env store on a sim: target is flash operations of the simulator: a
 * store while the power is off fails, and a cut at every op of the store
 * (plain and torn) leaves the old or the new env, never a mix or none.
 * Before the flash backend, libubootenv wrote the file directly and the
 * first store below succeeded with the power off. */
TEST_FIXTURE(test_sim_power_cut, setup_sim, teardown)
{
	struct fixture *fx = *state;
	struct simenv *s = fx->sim;
	struct error err = {};
	uint64_t before, ops;
	unsigned n_old = 0, n_new = 0;

	/* both copies valid before the cut: one more store of the old values */
	assert_int_equal(sim_store(s, old_vars, ELEMENTSOF(old_vars), &err), 0);

	sim_cut(s->sim, 0, false);
	assert_int_equal(sim_store(s, new_vars, ELEMENTSOF(new_vars), &err), -ESHUTDOWN);
	assert_non_null(strstr(err.msg, "store failed"));
	assert_true(sim_info(s->sim).power_cut);
	sim_cut(s->sim, -1, false);
	assert_int_equal(sim_classify(s, "store with the power off"), 1);

	/* the ops of one store: erase the inactive copy, program its pages */
	before = sim_info(s->sim).cnt.mutations;
	assert_int_equal(sim_store(s, old_vars, ELEMENTSOF(old_vars), &err), 0);
	ops = sim_info(s->sim).cnt.mutations - before;
	assert_int_equal(ops, 1 + 0x4000 / 512);

	for (int tear = 0; tear < 2; tear++)
		for (uint64_t n = 0; n <= ops; n++) {
			char what[64];
			snprintf(what, sizeof(what), "cut after op %" PRIu64 "/%" PRIu64 "%s", n, ops,
				 tear ? " (torn)" : "");
			sim_cut(s->sim, (int64_t)n, tear);
			int r = sim_store(s, new_vars, ELEMENTSOF(new_vars), &err);
			if (r != (n == ops ? 0 : -ESHUTDOWN))
				fail_msg("%s: store returned %d (%s)", what, r, err.msg);
			sim_cut(s->sim, -1, false);
			int got = sim_classify(s, what);
			if (got != (n == ops ? 2 : 1))
				fail_msg("%s: expected the %s env", what, n == ops ? "new" : "old");
			n_old += got == 1;
			n_new += got == 2;
			/* back to the old env for the next cut point */
			assert_int_equal(sim_store(s, old_vars, ELEMENTSOF(old_vars), &err), 0);
		}
	assert_int_equal(n_new, 2);
	assert_int_equal(n_old, 2 * ops);
	printf("env store on the simulator: %" PRIu64 " flash ops, %u cut points (plain and "
	       "torn), old env kept at each\n", ops, n_old);
}

/* fw_env.config lines for the layout's env copies in the simulator file. */
/* fx->dir/fw_env.config for libubootenv on the simulator's two copies
 * (s->cfg, returned) */
static const char *sim_fw_env_config(struct fixture *fx, struct simenv *s)
{
	char text[512];

	snprintf(s->cfg, sizeof(s->cfg), "%s/fw_env.config", fx->dir);
	snprintf(text, sizeof(text), "%s 0x%" PRIx64 " 0x4000 0x4000\n%s 0x%" PRIx64
		 " 0x4000 0x4000\n", s->sim, nsim_data_offset() + 0x14000, s->sim,
		 nsim_data_offset() + 0x18000);
	write_text(s->cfg, text);
	return s->cfg;
}

static char *libuboot_get(const char *cfg, const char *name)
{
	struct error err = {};
	_cleanup_env_ struct env *e = NULL;
	char *v = NULL;

	if (env_open_config(cfg, 0, &e, &err) < 0)
		fail_msg("libubootenv cannot read the env: %s", err.msg);
	return env_get(e, name, &v) < 0 ? NULL : v;
}

static bool have_tool(const char *name)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

/* The flash backend and libubootenv (the library in this process, and the
 * fw_printenv/fw_setenv tools) read each other's env on a sim file, over
 * more stores than the 8-bit serial has values (its wrap-around picks the
 * same copy for both). */
TEST_FIXTURE(test_sim_libubootenv_compat, setup_sim, teardown)
{
	struct fixture *fx = *state;
	struct simenv *s = fx->sim;
	struct error err = {};
	const char *cfg = NULL;
	char cmd[600], val[16];
	bool tools = have_tool("fw_printenv") && have_tool("fw_setenv");

	cfg = sim_fw_env_config(fx, s);
	for (unsigned i = 0; i < 300; i++) {
		struct env_var v = { "counter", val };
		char *got;

		snprintf(val, sizeof(val), "%u", i);
		if (i % 2) {
			/* libubootenv writes, flashd reads */
			_cleanup_env_ struct env *e = NULL;
			_cleanup_env_txn_ struct env_txn *t = NULL;
			assert_int_equal(env_open_config(cfg, 0, &e, &err), 0);
			assert_int_equal(env_txn_new(e, &t), 0);
			assert_int_equal(env_txn_set_many(t, &v, 1), 0);
			assert_int_equal(env_txn_commit(t, &err), 0);
			_cleanup_env_ struct env *f = NULL;
			assert_int_equal(env_open_layout(&s->l, s->target, NULL, 0, &f, &err), 0);
			assert_int_equal(env_get(f, "counter", &got), 0);
		} else {
			/* flashd writes, libubootenv reads */
			assert_int_equal(sim_store(s, &v, 1, &err), 0);
			got = libuboot_get(cfg, "counter");
		}
		if (!got || strcmp(got, val))
			fail_msg("store %u: read back '%s'", i, got ? got : "(unset)");
		free(got);
	}

	if (!tools) {
		printf("fw_printenv/fw_setenv not installed: the tools' check skipped\n");
		return;
	}
	/* the tools: fw_printenv reads flashd's store, flashd reads fw_setenv's */
	assert_int_equal(sim_store(s, new_vars, ELEMENTSOF(new_vars), &err), 0);
	snprintf(cmd, sizeof(cmd), "test \"$(fw_printenv -c %s -n BOOT_ORDER)\" = 'B A'", cfg);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "fw_setenv -c %s BOOT_ORDER 'A B' && fw_setenv -c %s "
		 "BOOT_A_LEFT 3 && fw_setenv -c %s BOOT_B_LEFT 3", cfg, cfg, cfg);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(sim_classify(s, "after fw_setenv"), 1);
}

/* Which copy failed and why, for status (issue 13, item 6), on both
 * backends; with no valid copy the env still opens with ALLOW_BLANK. */
TEST_FIXTURE(test_copy_state, setup_sim, teardown)
{
	struct fixture *fx = *state;
	struct simenv *s = fx->sim;
	struct error err = {};
	struct env *e = NULL;

	assert_int_equal(env_open_layout(&s->l, s->target, NULL, 0, &e, &err), 0);
	assert_int_equal(env_copy_state(e, 0, NULL), ENV_COPY_ERASED);
	assert_int_equal(env_copy_state(e, 1, NULL), ENV_COPY_VALID);
	assert_string_equal(env_copy_state_to_string(env_copy_state(e, 1, NULL)), "valid");
	env_close(e);
	/* a flipped byte in the only valid copy (programming clears bits) */
	testlib_poke(s->sim, nsim_data_offset() + 0x18000 + 10, 0);
	assert_int_equal(env_open_layout(&s->l, s->target, NULL, 0, &e, &err), -ENODATA);
	assert_int_equal(env_open_layout(&s->l, s->target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &err), 0);
	assert_true(env_is_blank(e));
	assert_int_equal(env_copy_state(e, 0, NULL), ENV_COPY_ERASED);
	assert_int_equal(env_copy_state(e, 1, NULL), ENV_COPY_BAD_CRC);
	env_close(e);
	/* libubootenv does not tell: flashd reads the copies itself */
	assert_int_equal(env_open_config(sim_fw_env_config(fx, s), ENV_OPEN_ALLOW_BLANK, &e, &err),
			 0);
	assert_true(env_is_blank(e));
	assert_int_equal(env_copy_state(e, 0, NULL), ENV_COPY_ERASED);
	assert_int_equal(env_copy_state(e, 1, NULL), ENV_COPY_BAD_CRC);
	assert_int_equal(env_copy_state(e, 2, NULL), ENV_COPY_UNKNOWN);
	env_close(e);
}

/* Someone holding the env lock makes opening -EBUSY after the bounded wait
 * instead of blocking for as long as the lock is held (issue 13, item 16). */
TEST_FIXTURE(test_lock_bounded, setup_sim, teardown)
{
	struct fixture *fx = *state;
	struct simenv *s = fx->sim;
	struct error err = {};
	struct env *e = NULL;
	char cmd[400];
	struct timespec t0, t1;

	env_set_lock(fx->lock, 200);
	/* a shared lock, as any process able to open the file can take */
	snprintf(cmd, sizeof(cmd), "flock -s %s sleep 3 & echo $! > %s/holder; sleep 0.5", fx->lock,
		 fx->dir);
	assert_int_equal(system(cmd), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(env_open_layout(&s->l, s->target, NULL, 0, &e, &err), -EBUSY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_null(e);
	assert_non_null(strstr(err.msg, "env busy"));
	assert_non_null(strstr(err.msg, fx->lock));
	double waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("env lock held elsewhere: -EBUSY after %.3f s (bound 0.2 s)\n", waited);
	assert_true(waited < 3);
	/* the libubootenv backend checks the lock the same way */
	assert_int_equal(env_open_devices(fx->devs, 2, ENV_OPEN_ALLOW_BLANK, &e, &err), -EBUSY);
	snprintf(cmd, sizeof(cmd), "kill $(cat %s/holder) && flock %s true", fx->dir, fx->lock);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(env_open_layout(&s->l, s->target, NULL, 0, &e, &err), 0);
	/* as root the lock file is made root's own, mode 0600 */
	struct stat st;
	assert_int_equal(stat(fx->lock, &st), 0);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, 0);
		assert_int_equal(st.st_mode & 0777, 0600);
	}
	/* an env opened while another one is shares this process's hold (no
	 * wait for itself), and the lock is free once both are closed */
	struct env *e2 = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(env_open_layout(&s->l, s->target, NULL, 0, &e2, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 1);
	env_close(e);
	snprintf(cmd, sizeof(cmd), "flock -n %s true", fx->lock);
	assert_int_not_equal(system(cmd), 0); /* e2 still holds it */
	env_close(e2);
	assert_int_equal(system(cmd), 0);
	env_set_lock(fx->lock, 1000);
}

TEST_FIXTURE(test_layout_system, setup, teardown)
{
	struct fixture *fx = *state;
	struct layout l;
	struct layout_device d;
	struct layout_partition p[3];
	struct error err = {};
	char sys[96], cmd[1200];
	struct env *e = NULL;

	fill_layout(&l, &d, p);
	snprintf(sys, sizeof(sys), "%s/sys", fx->dir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %1$s/mtd0 %1$s/mtd0ro %1$s/mtd7 %1$s/mtd7ro %1$s/mtd12 && "
		 "echo u-boot > %1$s/mtd0/name && echo env1 > %1$s/mtd7/name && "
		 "echo env1 > %1$s/mtd7ro/name && echo env2 > %1$s/mtd12/name", sys);
	assert_int_equal(system(cmd), 0);
	/* the host has no MTD: resolution succeeds, opening /dev/mtd7 does not */
	assert_int_equal(env_open_layout(&l, "system", sys, 0, &e, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/dev/mtd7"));
	snprintf(cmd, sizeof(cmd), "rm -r %s/mtd12", sys);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(env_open_layout(&l, NULL, sys, 0, &e, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "env2"));
	assert_non_null(strstr(err.msg, sys));
}

TEST(test_names)
{
	assert_true(env_name_valid("BOOT_ORDER"));
	assert_true(env_name_valid(".flags"));
	assert_false(env_name_valid(""));
	assert_false(env_name_valid(NULL));
	assert_false(env_name_valid("a=b"));
	assert_false(env_name_valid("a b"));
	assert_false(env_name_valid("a\nb"));
}
