/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* source_http against a real lighttpd (run by tests/net/test-source-http.sh,
 * which serves FLASHD_TEST_HTTP_DIR at FLASHD_TEST_HTTP_URL): the
 * streaming read, preads with and without a plan, how many requests and
 * bytes the planned runs cost, the end of the bundle, a 404. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "source_http.h"
#include "testlib.h"

#define BLOCK (128 * 1024)

static const struct source_http_conf conf = {
	.connect_timeout = 5, .stall_timeout = 5, .retries = 1, .retry_delay_ms = 50,
};

/* the served file's bytes, read locally to compare */
static uint8_t *local(size_t *ret_size)
{
	const char *dir = getenv("FLASHD_TEST_HTTP_DIR");
	char path[4096];
	struct stat st;
	uint8_t *buf;
	int fd;

	if (!dir)
		skip(); /* run by tests/net/test-source-http.sh */
	snprintf(path, sizeof(path), "%s/data.bin", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc(st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, st.st_size), st.st_size);
	close(fd);
	*ret_size = st.st_size;
	return buf;
}

/* the URL of name on the test's server (skips without one) */
static void url_of(const char *name, char *url, size_t len)
{
	const char *base = getenv("FLASHD_TEST_HTTP_URL");

	if (!base)
		skip();
	snprintf(url, len, "%s/%s", base, name);
}

/* A URL as the daemon takes one: parsed (and checked) once, then opened */
static int http_open(const char *url, struct source **ret, struct error *err)
{
	struct source_http_url u;
	int r = source_http_url_parse(url, &u, err);

	if (r < 0)
		return r;
	r = source_http_new(&u, &conf, ret, err);
	source_http_url_done(&u);
	return r;
}

static struct source *open_url(const char *name)
{
	struct error err = {};
	struct source *s = NULL;
	char url[512];

	url_of(name, url, sizeof(url));
	if (http_open(url, &s, &err) < 0)
		fail_msg("%s", error_message(&err));
	return s;
}

/* the backend's calls, counted as source_read()/source_pread() count them */
static ssize_t rd(struct source *s, void *buf, size_t len)
{
	struct error err = {};
	ssize_t n = s->ops->read(s, buf, len, &err);

	if (n > 0)
		s->fetched += n;
	return n;
}

static ssize_t prd(struct source *s, void *buf, size_t len, uint64_t off)
{
	struct error err = {};
	ssize_t n = s->ops->pread(s, buf, len, off, &err);

	if (n > 0)
		s->fetched += n;
	return n;
}

TEST(test_stream)
{
	size_t size, got = 0;
	_cleanup_free_ uint8_t *want = local(&size);
	_cleanup_free_ uint8_t *buf = malloc(size + 1);
	struct source *s = open_url("data.bin");
	ssize_t n;

	assert_int_equal(s->size, size);
	while ((n = rd(s, buf + got, 65536)) > 0)
		got += n;
	assert_int_equal(n, 0);
	assert_int_equal(got, size);
	assert_memory_equal(buf, want, size);
	assert_int_equal(s->fetched, size);
	/* 16, 16, 32 ... 512 KiB (7 ranges), then the rest */
	assert_int_equal(source_http_requests(s), 8);
	assert_int_equal(source_http_received(s), size);
	s->ops->free(s);
}

/* a head of 16 KiB + 922 bytes, the last part announced with expect():
 * the second request asks for those 922 bytes, not a doubled 16 KiB, so
 * an unchanged slot's install costs the head and nothing more */
TEST(test_expect_head)
{
	enum { HEAD = 16 * 1024 + 922 };
	size_t size, got = 0;
	_cleanup_free_ uint8_t *want = local(&size);
	_cleanup_free_ uint8_t *buf = malloc(HEAD);
	struct source *s = open_url("data.bin");
	ssize_t n;

	assert_true(size > 4 * HEAD);
	while (got < 16 * 1024 && (n = rd(s, buf + got, 16 * 1024 - got)) > 0)
		got += n;
	s->ops->expect(s, HEAD - got);
	while (got < HEAD && (n = rd(s, buf + got, HEAD - got)) > 0)
		got += n;
	assert_int_equal(got, HEAD);
	assert_memory_equal(buf, want, HEAD);
	assert_int_equal(source_http_requests(s), 2);
	assert_int_equal(source_http_received(s), HEAD);
	s->ops->free(s);
}

/* blocks 40-42 and 60-61 (adjacent), 63 (a 1-block gap: a run of its
 * own), 100 (alone), read in that order after a plan: four requests past
 * the first GET, and no more bytes than asked plus the first GET's */
TEST(test_pread_planned)
{
	static const unsigned blocks[] = { 40, 41, 42, 60, 61, 63, 100 };
	struct source_range r[ELEMENTSOF(blocks)];
	size_t size;
	_cleanup_free_ uint8_t *want = local(&size);
	_cleanup_free_ uint8_t *buf = malloc(BLOCK);
	struct source *s = open_url("data.bin");
	struct error err = {};
	uint64_t before;

	assert_true(size >= 101 * BLOCK);
	for (size_t i = 0; i < ELEMENTSOF(blocks); i++)
		r[i] = (struct source_range){ (uint64_t)blocks[i] * BLOCK, BLOCK };
	assert_int_equal(s->ops->plan(s, r, ELEMENTSOF(r), &err), 0);
	before = s->fetched;
	for (size_t i = 0; i < ELEMENTSOF(blocks); i++) {
		assert_int_equal(prd(s, buf, BLOCK, r[i].off), BLOCK);
		assert_memory_equal(buf, want + r[i].off, BLOCK);
	}
	/* runs: 40-42, 60-61, 63, 100; plus the first GET's 16 KiB, unread */
	assert_int_equal(source_http_requests(s), 1 + 4);
	assert_true(s->fetched - before <= 7 * BLOCK + 16 * 1024);
	assert_true(source_http_received(s) <= 7 * BLOCK + 16 * 1024);
	print_message("planned preads: %u requests, %llu bytes for %zu bytes asked\n",
		      source_http_requests(s), (unsigned long long)(s->fetched - before),
		      ELEMENTSOF(blocks) * (size_t)BLOCK);
	s->ops->free(s);
}

/* without a plan every far pread is a request of its own, and short
 * reads happen only at the end of the bundle */
TEST(test_pread_unplanned_and_end)
{
	size_t size;
	_cleanup_free_ uint8_t *want = local(&size);
	_cleanup_free_ uint8_t *buf = malloc(BLOCK);
	struct source *s = open_url("data.bin");
	uint64_t offs[] = { 5 * BLOCK + 17, 90 * BLOCK + 3, 2 * BLOCK, size - 1000 };

	for (size_t i = 0; i < ELEMENTSOF(offs); i++) {
		size_t len = MIN((size_t)BLOCK, size - offs[i]);
		assert_int_equal(prd(s, buf, BLOCK, offs[i]), len);
		assert_memory_equal(buf, want + offs[i], len);
	}
	assert_int_equal(prd(s, buf, BLOCK, size), 0);
	s->ops->free(s);
}

TEST(test_not_found)
{
	struct error err = {};
	struct source *s = NULL;
	char url[512];

	url_of("none.bin", url, sizeof(url));
	assert_int_equal(http_open(url, &s, &err), -EREMOTEIO);
	assert_null(s);
	assert_non_null(strstr(err.msg, url));
	assert_non_null(strstr(err.msg, "HTTP status 404"));
}

TEST(test_schemes)
{
	struct error err = {};
	struct source *s = NULL;
	struct source_http_url u;

	assert_int_equal(http_open("file:///etc/passwd", &s, &err), -EPROTONOSUPPORT);
	assert_null(s);
	assert_int_equal(source_http_url_parse("ftp://x/y", &u, &err), -EPROTONOSUPPORT);
	assert_int_equal(source_http_url_parse("http:///y", &u, &err), -EINVAL);
	assert_int_equal(source_http_url_parse("HTTPS://u:pw@host/b?t=1", &u, &err), 0);
	assert_string_equal(u.url, "HTTPS://u:pw@host/b?t=1");
	assert_string_equal(u.shown, "HTTPS://***@host/b?***");
	source_http_url_done(&u);
	assert_true(source_http_is_url("gopher://x"));
	assert_false(source_http_is_url("/srv/a://b"));
	assert_false(source_http_is_url("bundle.img"));
}

TEST(test_redact)
{
	char b[128];

	assert_string_equal(source_http_redact("https://u:pw@h.example:8443/a/b.bundle?X-Sig=s3cr3t",
					       b, sizeof(b)), "https://***@h.example:8443/a/b.bundle?***");
	assert_string_equal(source_http_redact("http://h/x.bundle", b, sizeof(b)), "http://h/x.bundle");
	assert_string_equal(source_http_redact("http://h/x#frag", b, sizeof(b)), "http://h/x?***");
	assert_string_equal(source_http_redact("http://a@b@h/p", b, sizeof(b)), "http://***@h/p");
	assert_string_equal(source_http_redact("http://h/p?q=a@b", b, sizeof(b)), "http://h/p?***");
}
