/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/base/util.c: size parsing and formatting, whole-file reads, the
 * full-transfer loops, mkdir -p, small helpers. The edges a shell test
 * never reaches: overflow, EOF in the middle of a read, EPIPE, a file in
 * the place of a directory. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "error.h"
#include "util.h"
#include "testlib.h"

TEST(test_parse_size)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} cases[] = {
		{ "4096", 0, 4096 },
		{ "0x1000", 0, 4096 },
		{ "64KiB", 0, 64 << 10 },
		{ "64k", 0, 64 << 10 },
		{ "16M", 0, 16 << 20 },
		{ "1 GiB", 0, 1 << 30 },
		{ "1GB", 0, 1 << 30 },
		{ "7B", 0, 7 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -ERANGE, 0 },
		{ "17179869184G", -ERANGE, 0 },   /* 2^34 GiB = 2^64 */
		{ "17179869183G", 0, UINT64_MAX - ((1ull << 30) - 1) },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "KiB", -EINVAL, 0 },
		{ "12X", -EINVAL, 0 },
		{ "1TiB", -EINVAL, 0 },
		{ "1 KiB ", -EINVAL, 0 },
		{ "1.5MiB", -EINVAL, 0 },
		{ "0x", -EINVAL, 0 },
		{ "18014398509481984KiB", -ERANGE, 0 },  /* 2^54 KiB = 2^64 */
	};

	(void)state;
	assert_int_equal(util_parse_size(NULL, &(uint64_t){ 0 }), -EINVAL);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		uint64_t v = 0xdead;
		int r = util_parse_size(cases[i].s, &v);

		if (r != cases[i].r)
			fail_msg("'%s': %d, expected %d", cases[i].s, r, cases[i].r);
		/* the output is untouched on failure */
		assert_true(r < 0 ? v == 0xdead : v == cases[i].v);
	}
}

TEST(test_parse_size_arg)
{
	struct error err = {};
	uint64_t v = 0;

	(void)state;
	assert_int_equal(util_parse_size_arg("--size", "128KiB", &v, &err), 0);
	assert_int_equal(v, 128 * 1024);
	assert_false(error_is_set(&err));
	/* overflow is an invalid value too, with the same message */
	assert_int_equal(util_parse_size_arg("--size", "18014398509481984KiB", &v, &err), -EINVAL);
	assert_string_equal(err.msg, "invalid --size '18014398509481984KiB': expected a size like "
			    "4096, 0x1000 or 128KiB");
	assert_int_equal(v, 128 * 1024);
}

TEST(test_format_size)
{
	char b[32];

	(void)state;
	assert_string_equal(util_format_size(0, b, sizeof(b)), "0 B");
	assert_string_equal(util_format_size(1536, b, sizeof(b)), "1536 B");
	assert_string_equal(util_format_size(16u << 20, b, sizeof(b)), "16 MiB");
	assert_string_equal(util_format_size((16u << 20) + 1024, b, sizeof(b)), "16385 KiB");
	assert_string_equal(util_format_size(1ull << 40, b, sizeof(b)), "1 TiB");
	assert_string_equal(util_format_size(1ull << 50, b, sizeof(b)), "1024 TiB");
	/* parse(format(v)) == v for the units parse knows */
	for (uint64_t v = 1; v < (1ull << 40); v = v * 3 + 1024) {
		uint64_t back;

		util_format_size(v, b, sizeof(b));
		if (strstr(b, "TiB"))
			continue;
		assert_int_equal(util_parse_size(b, &back), 0);
		assert_int_equal(back, v);
	}
}

static void write_file(const char *path, const void *buf, size_t len)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(util_write_full(fd, buf, len), (ssize_t)len);
}

/* max is the largest size read; the buffer grows past its first 4 KiB;
 * the text is NUL-terminated with the length beside it. */
TEST(test_read_file)
{
	_cleanup_unlink_ char *path = testlib_tmp_file("util");
	_cleanup_free_ char *big = malloc(10000);
	char *buf = NULL;
	size_t len = 0;

	assert_non_null(big);
	memset(big, 'x', 10000);
	write_file(path, big, 10000);
	assert_int_equal(util_read_file(path, 10000, &buf, &len), 0);
	assert_int_equal(len, 10000);
	assert_int_equal(buf[10000], '\0');
	assert_memory_equal(buf, big, 10000);
	free(buf);
	buf = NULL;
	assert_int_equal(util_read_file(path, 9999, &buf, &len), -EFBIG);
	assert_null(buf);
	write_file(path, "", 0);
	assert_int_equal(util_read_file(path, 0, &buf, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	buf = NULL;
	assert_int_equal(util_read_file("/nonexistent/x", 10, &buf, NULL), -ENOENT);
	assert_null(buf);
}

TEST(test_read_line_u64)
{
	_cleanup_unlink_ char *path = testlib_tmp_file("util");
	char line[8];
	uint64_t v = 0;

	write_file(path, "0x20000\nsecond\n", 15);
	assert_int_equal(util_read_line(path, line, sizeof(line)), 0);
	assert_string_equal(line, "0x20000");
	assert_int_equal(util_read_u64(path, &v), 0);
	assert_int_equal(v, 0x20000);
	write_file(path, "", 0);
	assert_int_equal(util_read_line(path, line, sizeof(line)), -ENODATA);
	write_file(path, "12 apples\n", 10);
	assert_int_equal(util_read_u64(path, &v), -EINVAL);
}

/* A pipe delivers in pieces and ends early: read_full gathers the pieces
 * and returns what there was; a write to a closed pipe is -EPIPE. */
TEST(test_full_loops_on_pipes)
{
	int p[2];
	char buf[16];
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		for (int i = 0; i < 3; i++) {
			(void)!write(p[1], "abc", 3);
			usleep(20000);
		}
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(util_read_full(p[0], buf, sizeof(buf)), 9);
	assert_memory_equal(buf, "abcabcabc", 9);
	assert_int_equal(util_read_full(p[0], buf, sizeof(buf)), 0);
	close(p[0]);

	assert_int_equal(pipe(p), 0);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(util_write_full(p[1], "x", 1), -EPIPE);
	close(p[1]);
	assert_int_equal(util_read_full(-1, buf, 1), -EBADF);
}

/* In a child: its nice value goes up by the steps, and stops at 19. */
TEST(test_lower_priority)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int before = getpriority(PRIO_PROCESS, 0);
		bool ok = util_lower_priority(2) == 0 &&
			  getpriority(PRIO_PROCESS, 0) == MIN(before + 2, 19) &&
			  util_lower_priority(40) == 0 && getpriority(PRIO_PROCESS, 0) == 19;

		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

TEST(test_positional)
{
	_cleanup_unlink_ char *path = testlib_tmp_file("util");
	_cleanup_close_ int fd = -1;
	char buf[8];

	write_file(path, "0123456789", 10);
	fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(util_pwrite_full(fd, "AB", 2, 4), 2);
	assert_int_equal(util_pread_full(fd, buf, 4, 3), 4);
	assert_memory_equal(buf, "3AB6", 4);
	/* short at the end of the file, nothing past it */
	assert_int_equal(util_pread_full(fd, buf, 8, 7), 3);
	assert_int_equal(util_pread_full(fd, buf, 8, 100), 0);
	/* the file position is not used nor moved */
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	assert_int_equal(util_pread_full(fd, buf, 1, -1), -EINVAL);
	assert_int_equal(util_pwrite_full(fd, buf, 1, -1), -EINVAL);
}

TEST(test_mkdir_p)
{
	_cleanup_free_ char *dir = testlib_tmp_dir("util");
	_cleanup_free_ char *abc = testlib_asprintf("%s/a/b/c", dir);
	_cleanup_free_ char *f = testlib_asprintf("%s/f", dir);
	_cleanup_free_ char *fg = testlib_asprintf("%s/f/g", dir);
	struct stat st;

	assert_int_equal(util_mkdir_p(abc, 0700), 0);
	assert_int_equal(stat(abc, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(util_mkdir_p(abc, 0700), 0); /* existing: fine */
	write_file(f, "", 0);
	/* a file where a directory should be is not "existing" */
	assert_int_equal(util_mkdir_p(f, 0755), -ENOTDIR);
	assert_int_equal(util_mkdir_p(fg, 0755), -ENOTDIR);
	testlib_rm_rf(dir);
}

TEST(test_mkdir_parents)
{
	_cleanup_free_ char *dir = testlib_tmp_dir("util");
	_cleanup_free_ char *sock = testlib_asprintf("%s/run/flashd/socket", dir);
	_cleanup_free_ char *parent = testlib_asprintf("%s/run/flashd", dir);
	_cleanup_free_ char *f = testlib_asprintf("%s/f", dir);
	_cleanup_free_ char *fg = testlib_asprintf("%s/f/g/h", dir);
	struct stat st;

	assert_int_equal(util_mkdir_parents(sock, 0700), 0);
	assert_int_equal(stat(parent, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(stat(sock, &st), -1); /* the parents, not the path */
	assert_int_equal(util_mkdir_parents(sock, 0700), 0);
	assert_int_equal(util_mkdir_parents("socket", 0700), 0); /* the working folder */
	write_file(f, "", 0);
	assert_int_equal(util_mkdir_parents(fg, 0755), -ENOTDIR);
	testlib_rm_rf(dir);
}

TEST(test_now)
{
	uint64_t a = util_now_usec(), b, ms;
	struct timespec pause = { .tv_nsec = 2 * 1000 * 1000 };

	nanosleep(&pause, NULL);
	b = util_now_usec();
	ms = util_now_ms();
	assert_true(b >= a + 2000); /* microseconds, and it moves */
	assert_true(ms >= b / 1000 && ms <= b / 1000 + 1000);
}

TEST(test_small_helpers)
{
	static const uint8_t bytes[] = { 0x00, 0x7f, 0xa5, 0xff };
	uint8_t ff[64];
	char hex[9], b[4];

	(void)state;
	util_hex(bytes, sizeof(bytes), hex);
	assert_string_equal(hex, "007fa5ff");
	util_hex(bytes, 0, hex);
	assert_string_equal(hex, "");

	assert_int_equal(util_log2_exact(1), 0);
	assert_int_equal(util_log2_exact(4096), 12);
	assert_int_equal(util_log2_exact(1ull << 63), 63);
	assert_int_equal(util_log2_exact(0), -1);
	assert_int_equal(util_log2_exact(3 << 10), -1);

	memset(ff, 0xff, sizeof(ff));
	assert_true(util_mem_is(ff, 0xff, sizeof(ff)));
	assert_true(util_mem_is(ff, 0, 0));
	assert_false(util_mem_is(ff, 0, sizeof(ff)));
	ff[63] = 0xfe;
	assert_false(util_mem_is(ff, 0xff, sizeof(ff)));
	assert_true(util_mem_is(ff, 0xff, 63));

	/* truncation is allowed and reported like snprintf */
	assert_int_equal(util_snprintf(b, sizeof(b), "%s", "abcdef"), 6);
	assert_string_equal(b, "abc");
}

/* Issue 32.6: what a server sends is printed without its escape codes */
TEST(test_printable)
{
	char buf[64];

	assert_string_equal(util_printable("plain ascii", buf, sizeof(buf)), "plain ascii");
	assert_string_equal(util_printable("\x1b[2J\x07x", buf, sizeof(buf)), "\\x1b[2J\\x07x");
	assert_string_equal(util_printable("a\nb\x7f", buf, sizeof(buf)), "a\\x0ab\\x7f");
	/* twice is once: a message printable at its source passes unchanged */
	assert_string_equal(util_printable("\\x1b", buf, sizeof(buf)), "\\x1b");
	/* UTF-8 kept; C1 controls (U+009B, CSI), stray and overlong bytes escaped */
	assert_string_equal(util_printable("gr\xc3\xbc\xc3\x9f", buf, sizeof(buf)), "gr\xc3\xbc\xc3\x9f");
	assert_string_equal(util_printable("\xc2\x9b" "2J", buf, sizeof(buf)), "\\xc2\\x9b2J");
	assert_string_equal(util_printable("\x9b\xc0\xaf", buf, sizeof(buf)), "\\x9b\\xc0\\xaf");
	assert_string_equal(util_printable(NULL, buf, sizeof(buf)), "");
	/* truncated, never an escape cut in half */
	assert_string_equal(util_printable("ab\x1b", buf, 6), "ab");
	assert_string_equal(util_printable("abcdefgh", buf, 4), "abc");
}
