/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "util.h"

static const struct {
	const char *suffix;
	unsigned shift;
} size_suffixes[] = {
	{ "", 0 }, { "B", 0 },
	{ "k", 10 }, { "K", 10 }, { "KiB", 10 }, { "KB", 10 },
	{ "M", 20 }, { "MiB", 20 }, { "MB", 20 },
	{ "G", 30 }, { "GiB", 30 }, { "GB", 30 },
};

int util_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < ELEMENTSOF(size_suffixes); i++) {
		unsigned sh = size_suffixes[i].shift;
		if (strcmp(end, size_suffixes[i].suffix) != 0)
			continue;
		if (sh && v > (UINT64_MAX >> sh))
			return -ERANGE;
		*ret = (uint64_t)v << sh;
		return 0;
	}
	return -EINVAL;
}

int util_parse_size_arg(const char *opt, const char *v, uint64_t *ret, struct error *err)
{
	if (util_parse_size(v, ret) < 0)
		return error_set(err, -EINVAL, "invalid %s '%s': expected a size like 4096, 0x1000 "
				 "or 128KiB", opt, v);
	return 0;
}

const char *util_format_size(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (u + 1 < ELEMENTSOF(units) && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", v, units[u]);
	return buf;
}

int util_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;
		if (len + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nb;
			if (cap > max + 1)
				return -EFBIG;
			nb = realloc(buf, ncap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += n;
		if (len > max)
			return -EFBIG;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

int util_read_line(const char *path, char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		return ferror(f) ? -EIO : -ENODATA;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int util_read_u64(const char *path, uint64_t *ret)
{
	char line[64];
	int r = util_read_line(path, line, sizeof(line));

	if (r < 0)
		return r;
	return util_parse_size(line, ret);
}

/* The loop behind the four below: retries EINTR and short transfers; a
 * read stops at end of file (the count so far), a write that moves no byte
 * is -EIO. off < 0: the file position (read/write), else pread/pwrite. */
static ssize_t io_full(int fd, void *buf, size_t len, off_t off, bool wr)
{
	size_t done = 0;

	while (done < len) {
		char *p = (char *)buf + done;
		size_t n_left = len - done;
		ssize_t n;

		if (wr)
			n = off < 0 ? write(fd, p, n_left) : pwrite(fd, p, n_left, off + done);
		else
			n = off < 0 ? read(fd, p, n_left) : pread(fd, p, n_left, off + done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			if (wr)
				return -EIO;
			break;
		}
		done += n;
	}
	return done;
}

ssize_t util_pread_full(int fd, void *buf, size_t len, off_t off)
{
	return off < 0 ? -EINVAL : io_full(fd, buf, len, off, false);
}

ssize_t util_pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
	return off < 0 ? -EINVAL : io_full(fd, (void *)buf, len, off, true);
}

ssize_t util_read_full(int fd, void *buf, size_t len)
{
	return io_full(fd, buf, len, -1, false);
}

ssize_t util_write_full(int fd, const void *buf, size_t len)
{
	return io_full(fd, (void *)buf, len, -1, true);
}

bool util_mem_is(const void *buf, int c, size_t len)
{
	const unsigned char *p = buf;

	if (len == 0)
		return true;
	/* p[0] == c and p[0..n-1] == p[1..n] implies all bytes equal c */
	return p[0] == (unsigned char)c && memcmp(p, p + 1, len - 1) == 0;
}

int util_mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0) {
		struct stat st;

		if (errno != EEXIST)
			return -errno;
		/* existing is fine only as a directory (or a link to one) */
		if (stat(p, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	return 0;
}

int util_mkdir_parents(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	char *s;

	if (!p)
		return -ENOMEM;
	s = strrchr(p, '/');
	if (!s || s == p)
		return 0; /* in the working or the root folder */
	*s = '\0';
	return util_mkdir_p(p, mode);
}

uint64_t util_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int util_snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return r;
}

int util_log2_exact(uint64_t v)
{
	int s = 0;

	if (!v || (v & (v - 1)))
		return -1;
	while (v >>= 1)
		s++;
	return s;
}

void util_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

int util_lower_priority(int steps)
{
	int prio;

	/* -1 is also a valid nice value: only errno tells a failure */
	errno = 0;
	prio = getpriority(PRIO_PROCESS, 0);
	if (prio == -1 && errno)
		return -errno;
	if (setpriority(PRIO_PROCESS, 0, prio + steps) < 0)
		return -errno;
	return 0;
}

/* The length of the UTF-8 sequence at p (at most n bytes) when it is a
 * valid one that encodes no control character (C1: U+0080..U+009F), else 0. */
static size_t utf8_printable(const unsigned char *p, size_t n)
{
	size_t len = p[0] >= 0xf0 && p[0] < 0xf5 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;

	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((len == 2 && p[0] == 0xc2 && p[1] < 0xa0) || (len == 3 && p[0] == 0xe0 && p[1] < 0xa0) ||
	    (len == 4 && p[0] == 0xf0 && p[1] < 0x90) || (len == 4 && p[0] == 0xf4 && p[1] >= 0x90))
		return 0; /* C1 controls, overlong forms, beyond U+10FFFF */
	return len;
}

const char *util_printable(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0, n = strlen((const char *)p), u;

	if (!len)
		return buf;
	for (size_t i = 0; i < n && o + 1 < len; i += u ? u : 1) {
		u = p[i] >= 0x80 ? utf8_printable(p + i, n - i) : 0;
		if (u && o + u < len) {
			memcpy(buf + o, p + i, u);
			o += u;
		} else if (u) {
			break;
		} else if (p[i] >= 0x20 && p[i] < 0x7f) {
			buf[o++] = p[i];
		} else if (o + 4 < len) {
			o += snprintf(buf + o, len - o, "\\x%02x", p[i]);
		} else {
			break;
		}
	}
	buf[o] = '\0';
	return buf;
}
