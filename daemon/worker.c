/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"
#include "worker.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

/* nice steps the job runs below the daemon */
#define WORKER_NICE 5

struct worker {
	pid_t pid;
	int fd;                    /* read end of the report pipe */
	sd_event_source *io, *child;
	worker_msg_fn on_msg;
	worker_done_fn on_done;
	void *userdata;
	size_t msg_size;           /* every record has this size */
	char buf[WORKER_MSG_MAX];
	size_t len;
	bool eof, exited;
	int code, status;
};

static volatile int worker_cancelled;

static void on_sigterm(int sig)
{
	util_cancel(&worker_cancelled);
}

static void maybe_done(struct worker *w)
{
	/* every record is delivered before the exit status */
	if (w->eof && w->exited && w->on_done) {
		worker_done_fn fn = w->on_done;
		w->on_done = NULL;
		fn(w, w->code, w->status, w->userdata);
	}
}

static void deliver_records(struct worker *w)
{
	size_t off = 0;

	for (; w->len - off >= w->msg_size; off += w->msg_size)
		if (w->on_msg)
			w->on_msg(w, w->buf + off, w->userdata);
	w->len -= off;
	memmove(w->buf, w->buf + off, w->len);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct worker *w = userdata;
	ssize_t n = read(fd, w->buf + w->len, sizeof(w->buf) - w->len);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n > 0) {
		w->len += n;
		deliver_records(w);
		return 0;
	}
	w->eof = true;
	sd_event_source_set_enabled(s, SD_EVENT_OFF);
	maybe_done(w);
	return 0;
}

static int on_child(sd_event_source *s, const siginfo_t *si, void *userdata)
{
	struct worker *w = userdata;

	w->exited = true;
	w->code = si->si_code;
	w->status = si->si_status;
	maybe_done(w);
	return 0;
}

static _Noreturn void run_child(int fd, pid_t parent, worker_job_fn job, void *userdata)
{
	struct sigaction sa = { .sa_handler = on_sigterm };
	sigset_t all;
	int r;

	/* Die with the daemon: an orphan would go on writing a slot that a
	 * restarted daemon installs, verifies and activates meanwhile (issue
	 * 13 item 14). Dying anywhere is safe: the slot was marked bad before
	 * its first write. The daemon may have died before the prctl: then
	 * we were reparented already. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Below the daemon: its answers (status, progress) must not wait for
	 * a job whose pace the flash sets, not the CPU. */
	(void)util_lower_priority(WORKER_NICE);
	/* the parent blocks signals for sd-event; the job must get SIGTERM */
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	r = job(fd, &worker_cancelled, userdata);
	close(fd);
#ifdef __SANITIZE_ADDRESS__
	/* _exit skips LeakSanitizer's check at exit: what the job leaked */
	__lsan_do_leak_check();
#endif
	_exit(r < 0 ? 1 : 0);
}

int worker_start(sd_event *e, size_t msg_size, worker_job_fn job, worker_msg_fn on_msg,
		 worker_done_fn on_done, void *userdata, struct worker **ret)
{
	_cleanup_free_ struct worker *w = NULL;
	pid_t parent = getpid();
	int p[2], r;

	if (msg_size == 0 || msg_size > WORKER_MSG_MAX)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	w->pid = fork();
	if (w->pid < 0) {
		r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (w->pid == 0) {
		/* the child never returns from here: free its copy now */
		free(TAKE_PTR(w));
		close(p[0]);
		run_child(p[1], parent, job, userdata);
	}
	close(p[1]);
	w->fd = p[0];
	fcntl(w->fd, F_SETFL, O_NONBLOCK);
	w->msg_size = msg_size;
	w->on_msg = on_msg;
	w->on_done = on_done;
	w->userdata = userdata;
	r = sd_event_add_io(e, &w->io, w->fd, EPOLLIN, on_io, w);
	if (r >= 0)
		r = sd_event_add_child(e, &w->child, w->pid, WEXITED, on_child, w);
	if (r < 0) {
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		sd_event_source_unref(w->io);
		close(w->fd);
		return r;
	}
	*ret = TAKE_PTR(w);
	return 0;
}

int worker_cancel(struct worker *w)
{
	if (!w || w->exited)
		return 0;
	return kill(w->pid, SIGTERM) < 0 ? -errno : 0;
}

pid_t worker_pid(const struct worker *w)
{
	return w->pid;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	if (!w->exited) {
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
	}
	sd_event_source_disable_unref(w->io);
	sd_event_source_disable_unref(w->child);
	close(w->fd);
	free(w);
}

int worker_report(int fd, const void *msg, size_t size)
{
	ssize_t n;

	/* one write of at most PIPE_BUF bytes: a record arrives whole or not at all */
	if (size > WORKER_MSG_MAX)
		return -EMSGSIZE;
	n = util_write_full(fd, msg, size);
	return n < 0 ? (int)n : 0;
}
