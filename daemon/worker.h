/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A job in a child process, so the daemon's event loop never waits on
 * flash I/O. The child dies with the daemon (PR_SET_PDEATHSIG, SIGKILL):
 * no job outlives the process that answers for it. The child reports
 * typed records of one fixed size (the job's own struct, at most
 * WORKER_MSG_MAX bytes: one atomic pipe write) on a pipe; the parent gets
 * each record, then the exit status (after the last record). No text is
 * parsed back: both sides are this program, built once.
 * Cancelling sends SIGTERM; the job sees *cancel become non-zero and
 * stops at its next check (between erase blocks). */
#pragma once
#include <signal.h>
#include <systemd/sd-event.h>
#include <limits.h>
#include <stddef.h>

#define WORKER_MSG_MAX PIPE_BUF

struct worker;

/* Runs in the child; its return (0 / -errno) becomes the exit status. */
typedef int (*worker_job_fn)(int report_fd, volatile int *cancel, void *userdata);
/* msg: one record of the size given to worker_start() (aligned copy not
 * guaranteed: memcpy it into the struct). */
typedef void (*worker_msg_fn)(struct worker *w, const void *msg, void *userdata);
/* status: exit code (code == CLD_EXITED) or signal. */
typedef void (*worker_done_fn)(struct worker *w, int code, int status, void *userdata);

/* -EINVAL when msg_size is 0 or over WORKER_MSG_MAX. */
int worker_start(sd_event *e, size_t msg_size, worker_job_fn job, worker_msg_fn on_msg,
		 worker_done_fn on_done, void *userdata, struct worker **ret);
/* SIGTERM to the child (no-op once it exited). */
int worker_cancel(struct worker *w);
pid_t worker_pid(const struct worker *w);
/* Frees the parent's side; a running child is killed with SIGKILL. */
void worker_free(struct worker *w);

/* Child side: one record (size: the msg_size of worker_start) to the parent. */
int worker_report(int fd, const void *msg, size_t size);
