/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The health check of a slot on trial: the configured command runs in a
 * worker; its verdict marks the slot good or bad in one env store, with
 * FLASHD_<x>_HEALTH saying why. A fallback the boot script made is
 * recorded first. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

#include "board.h"
#include "log.h"
#include "manager-internal.h"
#include "util.h"

/* The check's own process (the worker, its supervisor) after fork: the
 * command, leader of a process group of its own, so that ending the group
 * ends whatever the check started. */
static _Noreturn void health_exec(const char *command)
{
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL); /* the worker ignores it; exec would keep that */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	execl("/bin/sh", "sh", "-c", command, (char *)NULL);
	_exit(127);
}

/* The worker supervises the check: it reports the check's process group
 * to the daemon (which kills it on a timeout or a stop), waits for the
 * command and then ends the group, so that nothing the check started
 * outlives its verdict. If the daemon dies, even by SIGKILL, the kernel
 * sends this process SIGTERM (the cancel flag) and it ends the group too.
 * Its exit status is the command's. */
static int health_job(int report_fd, volatile int *cancel, void *userdata)
{
	struct manager *m = userdata;
	int status = 0;
	pid_t pid;

	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		health_exec(m->conf->health_command);
	setpgid(pid, pid); /* here too: the group exists before anyone kills it */
	(void)worker_report(report_fd, &pid, sizeof(pid));
	for (;;) {
		if (*cancel)
			kill(-pid, SIGKILL);
		if (waitpid(pid, &status, 0) == pid)
			break;
		if (errno != EINTR)
			return -errno;
	}
	kill(-pid, SIGKILL);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static void health_on_msg(struct worker *w, const void *msg, void *userdata)
{
	struct manager *m = userdata;

	memcpy(&m->op.health_pgid, msg, sizeof(m->op.health_pgid));
}

/* The slot the check ran for is still the booted one, in BOOT_ORDER with
 * tries used: an operator's mark-bad (or anything else) since the check
 * started wins over its verdict. */
static int health_still_on_trial(struct manager *m, struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	struct manager_slots v;
	int r;

	r = manager_open_env(m, &e, err);
	if (r < 0)
		return error_prefix(err, r, "cannot read the U-Boot env");
	r = manager_status_load_slots(m, e, &v, err);
	if (r < 0)
		return r;
	manager_status_slots_done(&v);
	if (v.decision.booted != m->op.health_slot || !v.decision.needs_health_check)
		return error_set(err, -ESTALE, "slot %s is no longer on trial (changed while the "
				 "check ran)", m->group->slots[m->op.health_slot].name);
	return 0;
}

/* FLASHD_<x>_HEALTH of the checked slot: "passed|failed UTC-TIME[: what]". */
static void health_note(struct manager *m, bool good, const char *what, char *var,
			size_t varlen, char *note, size_t notelen)
{
	time_t now = time(NULL);
	char when[32];
	struct tm tm;

	slot_health_var(m->group->slots[m->op.health_slot].name, var, varlen);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	if (good)
		snprintf(note, notelen, "passed %s", when);
	else
		snprintf(note, notelen, "failed %s: %s", when, what);
}

/* kept: a failed slot stays in BOOT_ORDER (no other verified slot) */
static void health_event(struct manager *m, int idx, bool good, bool kept, const char *what)
{
	const char *slot = m->group->slots[idx].name;
	const struct log_field f[] = {
		{ "SLOT", slot }, { "VERDICT", good ? "pass" : "fail" },
		{ "ERROR", good ? NULL : what }, { "SLOT_KEPT", kept ? "yes" : NULL }, { NULL }
	};

	if (good)
		log_event(LOG_EVENT_HEALTH_PASSED, f, "health check passed: slot %s marked good",
			  slot);
	else if (kept)
		log_event(LOG_EVENT_HEALTH_FAILED, f, "health check %s: slot %s recorded bad but "
			  "kept in BOOT_ORDER: no other verified slot can boot; the board is "
			  "DEGRADED until an image passes", what, slot);
	else
		log_event(LOG_EVENT_HEALTH_FAILED, f, "health check %s: slot %s marked bad", what,
			  slot);
}

static void health_verdict(struct manager *m, bool good, const char *what)
{
	enum slot_change_fail kind;
	struct error err = {};
	char var[64], note[128];
	int idx, r;

	r = health_still_on_trial(m, &err);
	if (r < 0) {
		log_warning("health check %s, verdict not applied: %s", what, error_message(&err));
		return;
	}
	health_note(m, good, what, var, sizeof(var), note, sizeof(note));
	r = manager_slot_change(m, good ? SLOT_OP_MARK_GOOD : SLOT_OP_MARK_BAD, NULL,
			SLOT_FORCE | SLOT_KEEP_LAST, (const char *const[2]){ var, note }, &idx,
			&kind, NULL, &err);
	if (r < 0) {
		log_error("health check %s, but the slot env could not be changed: %s", what,
			  error_message(&err));
		return;
	}
	/* r == 1: rebooting would boot the same slot: keep running, say so */
	health_event(m, idx, good, r == 1, what);
	if (good || r == 1 || !m->conf->health_reboot)
		return;
	if (board_target_parse(m->conf->target, NULL) == BOARD_TARGET_SIM) {
		log_notice("not rebooting: the board is simulated (%s); reboot it with 'flashctl "
			   "slot boot-select'", m->conf->target);
		return;
	}
	log_notice("rebooting into the other slot");
	sync();
	if (reboot(RB_AUTOBOOT) < 0)
		log_error("reboot failed: %s", strerror(errno));
}

static void health_on_done(struct worker *w, int code, int status, void *userdata)
{
	struct manager *m = userdata;
	char what[64];

	m->op.health_pgid = 0; /* ended by the worker, its number may be reused */
	if (code == CLD_EXITED && status == 0) {
		health_verdict(m, true, "passed");
	} else {
		snprintf(what, sizeof(what), "failed (%s %d)",
			 code == CLD_EXITED ? "exit status" : "signal", status);
		health_verdict(m, false, what);
	}
	manager_op_clear(m);
}

static int health_on_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	/* nothing the check started runs on after its verdict */
	if (m->op.health_pgid > 0)
		kill(-m->op.health_pgid, SIGKILL);
	health_verdict(m, false, "timed out");
	manager_op_clear(m); /* kills the check */
	return 0;
}

/* The boot script skipped the primaries before the booted slot (no tries
 * left): they failed to boot. Out of BOOT_ORDER in one store, so neither a
 * health check nor mark-bad of the booted slot can lock the board onto
 * them. With the records lost (default env), the booted slot alone stays
 * (slot_needs_fallback). v is reloaded. */
static int record_fallback(struct manager *m, struct env *e, struct manager_slots *v,
			   struct error *err)
{
	struct slot_env nst;
	struct slot_changes ch;
	char order[128];
	int r;

	manager_status_invalidate(m, MANAGER_STATUS_ENV);
	r = slot_compute(&v->st, SLOT_OP_FALLBACK, v->decision.booted, 0, &nst, &ch, err);
	if (r >= 0)
		r = slot_apply(e, &ch, err);
	if (r < 0)
		return error_prefix(err, r, "recording the fallback");
	slot_order_string(&nst, order, sizeof(order));
	if (slot_records_lost(&v->st))
		log_warning("the U-Boot env holds no slot records (both copies were lost, U-Boot "
			    "booted its default env): only the booted slot %s is known to boot, the "
			    "others are recorded unknown (BOOT_ORDER=%s)",
			    m->group->slots[v->decision.booted].name, order);
	else
		log_event(LOG_EVENT_BOOT_FALLBACK, (const struct log_field[]){
				{ "SLOT", m->group->slots[v->decision.booted].name },
				{ "BOOT_ORDER", order }, { NULL } },
			  "booted slot %s after the slots before it in BOOT_ORDER ran out of "
			  "tries: they failed to boot and are marked bad (BOOT_ORDER=%s)",
			  m->group->slots[v->decision.booted].name, order);
	manager_status_slots_done(v);
	return manager_status_load_slots(m, e, v, err);
}

int manager_health_start(struct manager *m)
{
	_cleanup_env_ struct env *e = NULL;
	struct error err = {};
	struct manager_slots v;
	int r;

	r = manager_open_env(m, &e, &err);
	if (r < 0) {
		log_warning("no health check: cannot read the U-Boot env: %s", err.msg);
		return 0;
	}
	r = manager_status_load_slots(m, e, &v, &err);
	if (r >= 0 && slot_needs_fallback(&v.st, v.decision.booted))
		r = record_fallback(m, e, &v, &err);
	env_close(TAKE_PTR(e));
	if (r < 0) {
		log_warning("no health check: %s", error_message(&err));
		return 0;
	}
	manager_status_slots_done(&v);
	if (!v.decision.needs_health_check)
		return 0;
	if (!m->conf->health_command) {
		log_notice("slot %s is on trial; no health check configured: mark it good with "
			   "'flashctl slot mark-good'", m->group->slots[v.decision.booted].name);
		return 0;
	}
	log_info("slot %s is on trial: running the health check '%s'",
		 m->group->slots[v.decision.booted].name, m->conf->health_command);
	m->op = (struct operation){ .name = "health-check", .bundle_fd = -1, .started = time(NULL),
				    .health_slot = v.decision.booted };
	r = worker_start(m->event, sizeof(pid_t), health_job, health_on_msg, health_on_done, m,
			 &m->op.worker);
	if (r >= 0)
		r = sd_event_add_time_relative(m->event, &m->op.timeout, CLOCK_MONOTONIC,
					       (uint64_t)m->conf->health_timeout * 1000000, 0,
					       health_on_timeout, m);
	if (r < 0) {
		manager_op_clear(m);
		log_error("cannot run the health check: %s", strerror(-r));
	}
	return r;
}
