/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers shared by every module: size parsing and formatting,
 * whole-file reads, robust read/write loops. All return 0/positive or -errno. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

/* Parse "4096", "0x1000", "64KiB", "16MiB", "1GiB" (also k/K/M/G suffixes
 * as powers of 1024). Returns -EINVAL on garbage, -ERANGE on overflow. */
int util_parse_size(const char *s, uint64_t *ret);
/* The same for the value of an option (opt: "--size"), -EINVAL with the
 * message every tool gives for a bad one. */
struct error;
int util_parse_size_arg(const char *opt, const char *v, uint64_t *ret, struct error *err);
/* Format a size for humans: "16 MiB", "64 KiB", "1536 B". */
const char *util_format_size(uint64_t v, char *buf, size_t len);

/* Read a whole file (at most max bytes) into a NUL-terminated buffer. */
int util_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* Read one line from a sysfs-style file, trailing newline stripped. */
int util_read_line(const char *path, char *buf, size_t len);
int util_read_u64(const char *path, uint64_t *ret);

/* Full pread/pwrite loops, retrying on EINTR and short transfers. */
ssize_t util_pread_full(int fd, void *buf, size_t len, off_t off);
ssize_t util_pwrite_full(int fd, const void *buf, size_t len, off_t off);
ssize_t util_read_full(int fd, void *buf, size_t len);
ssize_t util_write_full(int fd, const void *buf, size_t len);

/* A cancel flag (NULL: none), set by a signal handler or another thread
 * and read by the install engine and its fetch-ahead thread: atomic
 * accesses, not just volatile ones. */
static inline bool util_cancelled(volatile int *flag)
{
	return flag && __atomic_load_n(flag, __ATOMIC_RELAXED);
}
static inline void util_cancel(volatile int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELAXED); }

/* mkdir -p: path and every missing parent (existing ones are fine). */
int util_mkdir_p(const char *path, mode_t mode);
/* mkdir -p of the folder path is in (for a file or socket about to be made). */
int util_mkdir_parents(const char *path, mode_t mode);

/* snprintf for messages and paths where truncation is acceptable. */
int util_snprintf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* log2 of v when v is a power of two, else -1. */
int util_log2_exact(uint64_t v);

/* Lower-case hex of n bytes into out (2n + 1 bytes). */
void util_hex(const uint8_t *p, size_t n, char *out);
/* s made safe for a terminal and a log line, into buf (truncated to len):
 * control characters (C0, DEL, C1) and bytes that are not valid UTF-8
 * become "\xNN" (so applying it twice changes nothing more). For every
 * string a server, a bundle or a file provides before it is printed or
 * logged. NULL is "". Returns buf. */
const char *util_printable(const char *s, char *buf, size_t len);

/* True when every byte of buf equals c. */
bool util_mem_is(const void *buf, int c, size_t len);

/* Raise the nice value of the calling thread (who 0 is the thread, not the
 * whole process, on Linux) by steps; the kernel caps it at 19. */
int util_lower_priority(int steps);

/* The monotonic clock (CLOCK_MONOTONIC): for deadlines and durations,
 * which a change of the wall clock must not move. */
uint64_t util_now_usec(void);
static inline uint64_t util_now_ms(void) { return util_now_usec() / 1000; }
