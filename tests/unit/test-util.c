/* lib/base/util: size strings (the layout's and sysfs's), whole-file and
 * one-line reads with their limits, the full read/write loops, memory
 * fill checks and mkdir -p. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "testlib.h"
#include "util.h"

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 0 },
		{ "4096", 0, 4096 },
		{ "0x20000", 0, 0x20000 },
		{ "128KiB", 0, 128 << 10 },
		{ "128 KiB", 0, 128 << 10 },
		{ "1k", 0, 1024 }, { "1K", 0, 1024 }, { "1KB", 0, 1024 },
		{ "40MiB", 0, 40ull << 20 }, { "3M", 0, 3ull << 20 }, { "1MB", 0, 1ull << 20 },
		{ "2GiB", 0, 2ull << 30 }, { "1G", 0, 1ull << 30 },
		{ "512B", 0, 512 },
		{ "17179869183GiB", 0, UINT64_MAX - ((1ull << 30) - 1) }, /* the largest GiB count */
		{ "18446744073709551615", 0, UINT64_MAX },
		/* refused */
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },      /* strtoull would wrap it */
		{ " 1", -EINVAL, 0 },
		{ "1.5MiB", -EINVAL, 0 },
		{ "1TiB", -EINVAL, 0 },
		{ "12MiBx", -EINVAL, 0 },
		{ "MiB", -EINVAL, 0 },
		{ "0x", -EINVAL, 0 },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "17179869184GiB", -ERANGE, 0 },   /* 2^64: the shift would overflow */
		{ "18014398509481984KiB", -ERANGE, 0 },
	};

	(void)state;
	assert_int_equal(util_parse_size(NULL, &(uint64_t){ 0 }), -EINVAL);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t v = 0xdead;
		int r = util_parse_size(cases[i].s, &v);

		if (r != cases[i].r)
			fail_msg("\"%s\": %d, expected %d", cases[i].s, r, cases[i].r);
		if (r == 0 && v != cases[i].v)
			fail_msg("\"%s\": %llu, expected %llu", cases[i].s, (unsigned long long)v,
				 (unsigned long long)cases[i].v);
		if (r < 0 && v != 0xdead)
			fail_msg("\"%s\": refused but the result was written", cases[i].s);
	}
}

/* What flashctl prints is what util_parse_size reads back. */
static void test_format_size(void **state)
{
	static const struct {
		uint64_t v;
		const char *s;
	} cases[] = {
		{ 0, "0 B" }, { 1023, "1023 B" }, { 1024, "1 KiB" }, { 1536, "1536 B" },
		{ 128 << 10, "128 KiB" }, { 40ull << 20, "40 MiB" }, { 3ull << 30, "3 GiB" },
		{ 1ull << 40, "1 TiB" }, { 1ull << 50, "1024 TiB" },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t back;

		assert_string_equal(util_format_size(cases[i].v, buf, sizeof(buf)), cases[i].s);
		if (cases[i].v < (1ull << 40)) {
			assert_int_equal(util_parse_size(buf, &back), 0);
			assert_int_equal(back, cases[i].v);
		}
	}
}

static char *file_with(const char *text, size_t len)
{
	char *path = testlib_tmp_file("util");
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(util_write_full(fd, text, len), (ssize_t)len);
	return path;
}

static void test_read_file_limits(void **state)
{
	/* around the buffer's first growth (4096) and the limit */
	static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, 10000 };
	_cleanup_free_ char *big = malloc(10000);

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < 10000; i++)
		big[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
		_cleanup_unlink_ char *path = file_with(big, sizes[i]);
		_cleanup_free_ char *got = NULL, *got2 = NULL;
		size_t len = 1;

		assert_int_equal(util_read_file(path, sizes[i], &got, &len), 0);
		assert_int_equal(len, sizes[i]);
		assert_memory_equal(got, big, sizes[i]);
		assert_int_equal(got[len], '\0');
		if (sizes[i] > 0) /* one byte over the limit */
			assert_int_equal(util_read_file(path, sizes[i] - 1, &got2, NULL), -EFBIG);
		assert_null(got2);
	}
	assert_int_equal(util_read_file("/nonexistent/x", 10, &(char *){ NULL }, NULL), -ENOENT);
}

static void test_read_line_and_u64(void **state)
{
	_cleanup_unlink_ char *two = file_with("first\nsecond\n", 13);
	_cleanup_unlink_ char *bare = file_with("131072", 6);
	_cleanup_unlink_ char *size = file_with("128KiB\n", 7);
	_cleanup_unlink_ char *word = file_with("nand\n", 5);
	_cleanup_unlink_ char *empty = file_with("", 0);
	char line[16];
	uint64_t v;

	(void)state;
	assert_int_equal(util_read_line(two, line, sizeof(line)), 0);
	assert_string_equal(line, "first");
	assert_int_equal(util_read_line(empty, line, sizeof(line)), -ENODATA);
	assert_int_equal(util_read_u64(bare, &v), 0);
	assert_int_equal(v, 131072);
	assert_int_equal(util_read_u64(size, &v), 0);
	assert_int_equal(v, 128 << 10);
	assert_int_equal(util_read_u64(word, &v), -EINVAL);
	assert_int_equal(util_read_u64(empty, &v), -ENODATA);
	assert_int_equal(util_read_u64("/nonexistent/x", &v), -ENOENT);
}

/* The loops go on over short transfers and stop at end of file. */
static void test_full_io(void **state)
{
	_cleanup_unlink_ char *path = testlib_tmp_file("util-io");
	_cleanup_close_ int fd = open(path, O_RDWR | O_CLOEXEC);
	char buf[300000], back[sizeof(buf)];
	int p[2];

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7);
	/* a hole first: pwrite at an offset extends the file */
	assert_int_equal(util_pwrite_full(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
	assert_int_equal(util_pread_full(fd, back, sizeof(back), 4096), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	/* past the end: what is there */
	assert_int_equal(util_pread_full(fd, back, sizeof(back), 4096 + 1000),
			 (ssize_t)sizeof(buf) - 1000);

	/* a pipe delivers at most 64 KiB a read: read_full collects it all */
	assert_int_equal(pipe(p), 0);
	if (fork() == 0) {
		close(p[0]);
		_exit(util_write_full(p[1], buf, sizeof(buf)) == (ssize_t)sizeof(buf) ? 0 : 1);
	}
	close(p[1]);
	assert_int_equal(util_read_full(p[0], back, sizeof(back)), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	assert_int_equal(util_read_full(p[0], back, 10), 0); /* end of file */
	close(p[0]);

	/* a reader gone: -EPIPE, not a signal */
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	assert_int_equal(util_write_full(p[1], buf, 10), -EPIPE);
	close(p[1]);
	assert_int_equal(util_write_full(-1, buf, 10), -EBADF);
}

static void test_mem_is(void **state)
{
	uint8_t b[2048];

	(void)state;
	memset(b, 0xff, sizeof(b));
	assert_true(util_mem_is(b, 0xff, sizeof(b)));
	assert_true(util_mem_is(b, 0x00, 0)); /* nothing: vacuously */
	assert_false(util_mem_is(b, 0x00, sizeof(b)));
	b[sizeof(b) - 1] = 0xfe;
	assert_false(util_mem_is(b, 0xff, sizeof(b)));
	assert_true(util_mem_is(b, 0xff, sizeof(b) - 1));
	b[0] = 0xfe;
	assert_false(util_mem_is(b, 0xff, 1));
}

static void test_mkdir_p(void **state)
{
	_cleanup_free_ char *dir = testlib_tmp_dir("util");
	_cleanup_free_ char *path = testlib_asprintf("%s/a/b/c", dir);
	_cleanup_free_ char *file = testlib_asprintf("%s/f", path);
	_cleanup_free_ char *under = testlib_asprintf("%s/g", file);
	_cleanup_free_ char *rm = testlib_asprintf("rm -rf %s", dir);
	struct stat st;

	(void)state;
	assert_int_equal(util_mkdir_p(path, 0755), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(util_mkdir_p(path, 0755), 0); /* existing: fine */
	assert_int_equal(close(creat(file, 0644)), 0);
	assert_int_equal(util_mkdir_p(under, 0755), -ENOTDIR);
	assert_int_equal(system(rm), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_read_file_limits),
		cmocka_unit_test(test_read_line_and_u64),
		cmocka_unit_test(test_full_io),
		cmocka_unit_test(test_mem_is),
		cmocka_unit_test(test_mkdir_p),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
