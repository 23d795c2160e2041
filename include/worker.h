/* A job in a child process, so the daemon's event loop never waits on
 * flash I/O. The child dies with the daemon (PR_SET_PDEATHSIG, SIGKILL):
 * no job outlives the process that answers for it. The child reports progress as JSON lines on a pipe; the
 * parent gets each line, then the exit status (after the last line).
 * Cancelling sends SIGTERM; the job sees *cancel become non-zero and
 * stops at its next check (between erase blocks). */
#pragma once
#include <signal.h>
#include <systemd/sd-event.h>
#include <json-c/json.h>

struct worker;

/* Runs in the child; its return (0 / -errno) becomes the exit status. */
typedef int (*worker_job_fn)(int report_fd, volatile int *cancel, void *userdata);
typedef void (*worker_line_fn)(struct worker *w, struct json_object *msg, void *userdata);
/* status: exit code (code == CLD_EXITED) or signal. */
typedef void (*worker_done_fn)(struct worker *w, int code, int status, void *userdata);

int worker_start(sd_event *e, worker_job_fn job, worker_line_fn on_line, worker_done_fn on_done,
		 void *userdata, struct worker **ret);
/* SIGTERM to the child (no-op once it exited). */
int worker_cancel(struct worker *w);
pid_t worker_pid(const struct worker *w);
/* Frees the parent's side; a running child is killed with SIGKILL. */
void worker_free(struct worker *w);

/* Child side: one JSON line to the parent. */
int worker_report(int fd, struct json_object *msg);
