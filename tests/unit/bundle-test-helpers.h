/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by test-bundle*, test-keyring, test-squashfs: temp dirs, shell
 * commands (openssl, mksquashfs), file helpers. Header-only, static. */
#pragma once
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle_create.h"
#include "error.h"
#include "keyring.h"

static char th_dir[64];

static inline void th_cleanup(void)
{
	char cmd[128];

	if (th_dir[0] && !getenv("FLASHD_TEST_KEEP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", th_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", th_dir);
	}
}

static inline const char *th_tmpdir(void)
{
	if (!th_dir[0]) {
		snprintf(th_dir, sizeof(th_dir), "/tmp/flashd-bundle-test-XXXXXX");
		if (!mkdtemp(th_dir)) {
			perror("mkdtemp");
			exit(1);
		}
		atexit(th_cleanup);
	}
	return th_dir;
}

/* Run a shell command; returns its exit status (or -1). */
static inline int th_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int th_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st < 0 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static inline char *th_path(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", th_tmpdir(), name) < 0)
		exit(1);
	return p;
}

static inline void th_write(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "we");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "writing %s failed\n", path);
		exit(1);
	}
}

static inline uint8_t *th_read(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0)
		exit(1);
	buf = malloc(n ? n : 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n)
		exit(1);
	fclose(f);
	*ret_len = n;
	return buf;
}

/* The signing keys of a test: ret_trusted, whose public half
 * (th_path("ring/trusted.pub")) is the only key of ret_ring, and
 * ret_untrusted, in no keyring: made by "openssl genpkey" when openssl
 * (a key of another maker), else by bundle_create_keygen. */
static inline void th_keys_new(bool openssl, void **ret_trusted, void **ret_untrusted,
			       struct keyring **ret_ring)
{
	char *ring = th_path("ring"), *priv = th_path("trusted.key");
	char *pub = th_path("ring/trusted.pub");
	char *upriv = th_path("untrusted.key"), *upub = th_path("untrusted.pub");
	struct error err = {};
	struct error kerr = {};

	if (mkdir(ring, 0755) < 0 || bundle_create_keygen(priv, pub, NULL, &err) < 0 ||
	    (openssl ? th_sh("openssl genpkey -algorithm ed25519 -out '%s'", upriv) != 0 :
		       bundle_create_keygen(upriv, upub, NULL, &err) < 0) ||
	    bundle_create_key_load(priv, ret_trusted, &err) < 0 ||
	    bundle_create_key_load(upriv, ret_untrusted, &err) < 0 ||
	    keyring_load_dir(ring, ret_ring, &kerr) < 0) {
		fprintf(stderr, "test keys: %s%s\n", error_message(&err), error_message(&kerr));
		exit(1);
	}
	free(ring);
	free(priv);
	free(pub);
	free(upriv);
	free(upub);
}

static inline void th_keys_free(void *trusted, void *untrusted, struct keyring *ring)
{
	bundle_create_key_free(trusted);
	bundle_create_key_free(untrusted);
	keyring_free(ring);
}

/* Deterministic pseudo-random bytes (xorshift), half compressible. */
static inline void th_fill(uint8_t *buf, size_t len, uint32_t seed)
{
	uint32_t x = seed ? seed : 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (i / 4096) % 2 ? (uint8_t)(i / 4096) : (uint8_t)x;
	}
}

/* A squashfs made by the real mksquashfs from a small tree with `kib` KiB
 * of file data. NULL when mksquashfs lacks the compressor. */
static inline char *th_make_squashfs(const char *name, const char *comp, size_t kib, const char *extra)
{
	char *src = th_path("sqsrc"), *out = th_path(name);
	char *file;
	uint8_t *data = malloc(kib * 1024);

	th_sh("rm -rf '%s' && mkdir -p '%s/etc' '%s/bin'", src, src, src);
	th_fill(data, kib * 1024, 42);
	if (asprintf(&file, "%s/bin/payload", src) < 0)
		exit(1);
	th_write(file, data, kib * 1024);
	free(file);
	if (asprintf(&file, "%s/etc/hostname", src) < 0)
		exit(1);
	th_write(file, "board\n", 6);
	free(file);
	free(data);
	if (th_sh("mksquashfs '%s' '%s' -noappend -quiet -no-progress -comp %s -all-root "
		  "-mkfs-time 1700000000 %s >/dev/null 2>&1", src, out, comp,
		  extra ? extra : "") != 0) {
		free(out);
		out = NULL;
	}
	free(src);
	return out;
}
