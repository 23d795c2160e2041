/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The operation lock of a board. See include/oplock.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cleanup.h"
#include "board.h"
#include "oplock.h"
#include "util.h"

struct oplock {
	int fd;
};

int oplock_path(const char *target, char **ret)
{
	int kind = board_target_parse(target, NULL);

	if (kind < 0)
		return kind;
	if (kind == BOARD_TARGET_SIM)
		return board_sim_side_path(target, "oplock", ret);
	*ret = strdup(OPLOCK_SYSTEM_FILE);
	return *ret ? 0 : -ENOMEM;
}

/* The root-only directory of the system lock: paths_run_dir (/run/flashd)
 * is 0755 (the socket is in it), the lock directory below it 0700. */
static int make_system_dir(void)
{
	struct stat st;
	int r = util_mkdir_p(paths_run_dir, 0755);

	if (r < 0)
		return r;
	if (mkdir(OPLOCK_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(OPLOCK_DIR, &st) < 0)
		return -errno;
	/* made by someone else, or opened up: not a place for the lock */
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static void read_holder(int fd, struct oplock_holder *h)
{
	char buf[96] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	int pid = 0, off = 0;

	*h = (struct oplock_holder){ 0 };
	if (n <= 0 || sscanf(buf, "%d %n", &pid, &off) < 1 || pid <= 0)
		return;
	h->pid = pid;
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(h->what, sizeof(h->what), "%s", buf + off);
}

int oplock_acquire(const char *target, const char *what, struct oplock **ret,
		   struct oplock_holder *holder)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	struct oplock *l;
	int r;

	r = oplock_path(target, &path);
	if (r < 0)
		return r;
	if (!strcmp(path, OPLOCK_SYSTEM_FILE) && (r = make_system_dir()) < 0)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		r = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (r == -EBUSY && holder)
			read_holder(fd, holder);
		return r;
	}
	l = malloc(sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->fd = TAKE_FD(fd);
	(void) oplock_set_holder(l, getpid(), what);
	*ret = l;
	return 0;
}

/* /proc/locks has the flock of this inode: "1: FLOCK  ADVISORY  WRITE
 * 1234 fd:01:5678 0 EOF" (device numbers in hex; waiters are "->" lines). */
static bool flock_listed(FILE *f, const struct stat *st)
{
	char line[256];
	unsigned maj, min;
	unsigned long ino;

	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: FLOCK %*s %*s %*d %x:%x:%lu", &maj, &min, &ino) == 3 &&
		    maj == major(st->st_dev) && min == minor(st->st_dev) && ino == st->st_ino)
			return true;
	return false;
}

int oplock_probe(const char *target, struct oplock_holder *holder)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_fclose_ FILE *locks = NULL;
	struct stat st;
	int r;

	r = oplock_path(target, &path);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	locks = fopen("/proc/locks", "re");
	if (!locks)
		return -errno;
	if (!flock_listed(locks, &st))
		return 0;
	if (holder)
		read_holder(fd, holder);
	return 1;
}

int oplock_set_holder(struct oplock *l, pid_t pid, const char *what)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "%d %s\n", (int)pid, what ? what : "");
	ssize_t w;

	if (ftruncate(l->fd, 0) < 0)
		return -errno;
	w = util_pwrite_full(l->fd, buf, MIN((size_t)n, sizeof(buf) - 1), 0);
	return w < 0 ? (int)w : 0;
}

void oplock_release(struct oplock *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

const char *oplock_holder_describe(const struct oplock_holder *h, char *buf, size_t len)
{
	if (h->pid > 0)
		snprintf(buf, len, "pid %d (%s)", (int)h->pid, h->what[0] ? h->what : "?");
	else
		snprintf(buf, len, "another process");
	return buf;
}
