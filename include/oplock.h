/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The operation lock of a board: one writer of its slots and its U-Boot
 * env at a time, across processes (issue 13 items 14, 18).
 *
 * flashd's install worker holds it for the whole install (taken by the
 * daemon before the fork, kept by the worker, released when the worker
 * exits, however it exits); the daemon's own env changes, a second
 * daemon on the same target and the offline `flashctl slot`/`env`
 * writes take it for the duration of their change. Nobody waits for it:
 * it is taken without blocking, and a holder answers "busy, held by pid
 * N (what)".
 *
 * An flock(2) on a file in a root-only directory (OPLOCK_DIR, 0700): a
 * user without rights cannot open it, so cannot hold it to freeze
 * anyone. A simulated target (sim:PATH) keeps it next to its file
 * (PATH.oplock, or PATH/flashd.oplock for a directory), so that tests on
 * different simulated boards do not see each other. */
#pragma once
#include <sys/types.h>
#include "paths.h"

#define OPLOCK_DIR paths_lock_dir
#define OPLOCK_SYSTEM_FILE paths_board_lock

struct oplock;

/* Who holds a lock (as the holder wrote it). */
struct oplock_holder {
	pid_t pid;      /* 0 when unknown */
	char what[64];  /* "install", "flashctl slot activate", ... */
};

/* The lock file of target ("system" or "sim:PATH"). */
int oplock_path(const char *target, char **ret);
/* Take the lock of target without waiting, as what. -EBUSY when another
 * open file holds it; holder (may be NULL) then says who. Also -errno of
 * creating the directory or the file. */
int oplock_acquire(const char *target, const char *what, struct oplock **ret,
		   struct oplock_holder *holder);
/* Is the lock of target held, and by whom, without taking it: taking it,
 * even for an instant, could make its rightful taker's attempt fail. The
 * kernel's list of flocks (/proc/locks) is read for the file's inode. 1
 * held (holder says who), 0 free or no lock file, -errno. */
int oplock_probe(const char *target, struct oplock_holder *holder);
/* Record the holder (the install worker writes its own pid after the
 * fork). */
int oplock_set_holder(struct oplock *l, pid_t pid, const char *what);
/* Close this process's handle. The lock is released when the last handle
 * on it is closed: a forked child that inherited it keeps it until it
 * exits. NULL-safe. */
void oplock_release(struct oplock *l);
/* "pid 1234 (install)" or "another process" into buf. */
const char *oplock_holder_describe(const struct oplock_holder *h, char *buf, size_t len);

static inline void oplock_releasep(struct oplock **l) { oplock_release(*l); }
#define _cleanup_oplock_ __attribute__((cleanup(oplock_releasep)))
