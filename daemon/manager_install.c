/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Install and Cancel: a worker process does the flash I/O (worker.h) and
 * reports typed records; the daemon relays progress, answers the client
 * and keeps the install record. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "board.h"
#include "cleanup_json.h"
#include "flash.h"
#include "log.h"
#include "manager-internal.h"
#include "proto_slot.h"
#include "record.h"
#include "source.h"
#include "source_http.h"
#include "util.h"

#define jstr json_string_or_null

#define STEP_NAME(v, s, step) [v] = step,
static const char *const step_names[] = { INSTALL_PHASE_LIST(STEP_NAME) };
#undef STEP_NAME

static const char *str_or_null(const char *s)
{
	return s && s[0] ? s : NULL;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}
#define COPY(field, src) copy_str(field, sizeof(field), src)

/* The worker's report as io.flashd's Progress (strings borrowed from p). */
static struct proto_flashd_progress progress_of(const struct install_msg *p)
{
	return (struct proto_flashd_progress){
		.percent.value = p->percent,
		.bytes_done.value = (int64_t)p->done,
		.bytes_total.value = (int64_t)p->total,
		.step = step_names[p->phase],
		.image = str_or_null(p->image),
		.slot = str_or_null(p->slot),
		.version = str_or_null(p->version),
		.bytes_downloaded = { (int64_t)p->downloaded, p->from_url },
	};
}

struct json_object *manager_install_progress_json(const struct install_msg *p)
{
	struct proto_flashd_progress pr = progress_of(p);

	return proto_typed_build(proto_flashd_progress_fields, &pr);
}

struct job_ctx {
	int fd;
	unsigned last_percent;
	enum install_phase last_phase;
	struct install *in;
	struct source *src;            /* a URL's source, NULL for an fd */
};

static void job_progress(void *userdata, const struct install_progress *p)
{
	struct job_ctx *ctx = userdata;
	const struct bundle_manifest *man = install_get_manifest(ctx->in);
	struct install_msg rep = {
		.phase = p->phase, .percent = p->percent, .done = p->done, .total = p->total,
		.downloaded = ctx->src ? source_http_received(ctx->src) : 0, .from_url = ctx->src,
	};

	/* one report per percent or step keeps the pipe and the client calm */
	if (p->percent == ctx->last_percent && p->phase == ctx->last_phase)
		return;
	ctx->last_percent = p->percent;
	ctx->last_phase = p->phase;
	COPY(rep.image, p->image);
	COPY(rep.slot, p->slot);
	COPY(rep.version, man ? man->version : NULL);
	worker_report(ctx->fd, &rep, sizeof(rep));
}

/* the bundle is what failed: refused before anything was written (env
 * untouched) or found while streaming (hash, truncation, trailing data:
 * the target stays marked bad) */
static bool bundle_error_class(int r)
{
	static const int codes[] = { -EBADMSG, -EKEYREJECTED, -ENOKEY, -EPROTONOSUPPORT,
				     -EMEDIUMTYPE, -EFBIG, -ENXIO, -ENODATA };

	for (size_t i = 0; i < ELEMENTSOF(codes); i++)
		if (codes[i] == r)
			return true;
	return false;
}

static void final_report(struct install *in, const struct source *src, int r,
			 const struct error *err, struct install_msg *rep)
{
	const struct bundle_manifest *man = install_get_manifest(in);

	*rep = (struct install_msg) {
		.final = true,
		.downloaded = src ? source_http_received(src) : 0,
		.from_url = src,
		.phase = r < 0 ? INSTALL_PHASE_FAILED : INSTALL_PHASE_DONE,
		.percent = r < 0 ? 0 : 100,
		.error = r < 0 ? r : 0,
		.invalid_bundle = r < 0 && bundle_error_class(r),
		.stats = *install_get_stats(in),
	};
	rep->stats.finished = time(NULL);
	COPY(rep->message, r < 0 ? error_message(err) : NULL);
	COPY(rep->slot, install_get_slot(in));
	COPY(rep->version, man ? man->version : NULL);
	COPY(rep->compatible, man ? man->compatible : NULL);
	COPY(rep->signer, man && man->is_signed ? man->signer_name : NULL);
}

static void network_conf(const struct conf *c, volatile int *cancel,
			 struct source_http_conf *ret)
{
	*ret = (struct source_http_conf){
		.ca_file = c->ca_file,
		.client_cert = c->client_cert,
		.client_key = c->client_key,
		.headers = c->headers,
		.connect_timeout = c->connect_timeout,
		.stall_timeout = c->stall_timeout,
		.retries = c->retries,
		.retry_delay_ms = c->retry_delay_ms,
		.netrc_file = c->netrc_file,
		.min_rate = c->min_rate,
		.min_rate_time = c->min_rate_time,
		.deadline = c->deadline,
		.redirect_other_origin = c->redirect_other_origin,
		.cancel = cancel,
	};
}

/* Runs in the worker process. */
static int install_job(int report_fd, volatile int *cancel, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_board_ struct board *b = NULL;
	_cleanup_install_ struct install *in = NULL;
	_cleanup_keyring_ struct keyring *keys = NULL;
	struct error err = {};
	struct install_msg fin;
	struct job_ctx ctx = { .fd = report_fd, .last_percent = 101 };
	_cleanup_source_ struct source *src = NULL;
	struct source_http_conf net;
	struct install_params p = {
		.target = m->conf->target,
		.group = m->group,
		.cmdline = m->conf->cmdline,
		.slot = m->op.slot,
		.decided = &m->op.decided,     /* the daemon's, before the worker started */
		.allow_unsigned = m->conf->allow_unsigned,
		.activate = m->op.activate,
		.state_dir = m->conf->state_dir,
		.downgrade = m->conf->downgrade,
		.allow_downgrade = m->op.allow_downgrade,
		.progress = job_progress,
		.userdata = &ctx,
	};
	int r;

	proto_server_close_fds_in_child(m->server);
	/* not the event loop: a writer of the simulator may take longer */
	flash_sim_set_lock_wait(MANAGER_SIM_LOCK_WAIT_WORKER_USEC);
	/* the lock came with the fork; it is ours until we exit */
	if (m->op.lock)
		oplock_set_holder(m->op.lock, getpid(), "flashd install worker");
	/* read here, not in the daemon: the keys of this install, and
	 * libcrypto mapped in this process only */
	r = keyring_load_dir(m->conf->keyring, &keys, &err);
	if (r == -ENOKEY || r == -ENOENT) {
		error_clear(&err);
		r = keyring_new(&keys);
	}
	if (r < 0) {
		fin = (struct install_msg){ .final = true, .phase = INSTALL_PHASE_FAILED, .error = r };
		error_prefix(&err, r, "keyring");
		COPY(fin.message, error_message(&err));
		worker_report(report_fd, &fin, sizeof(fin));
		return r;
	}
	p.keyring = keys;
	r = board_open(m->layout, m->conf->target, true, &b);
	if (r < 0)
		return r;
	p.board = b;
	r = install_new(&p, &in);
	if (r < 0)
		return r;
	ctx.in = in;
	if (m->op.url.url) {
		/* fetched here, by root's worker, never by the client; the URL
		 * was checked when the call came in */
		network_conf(m->conf, cancel, &net);
		if (m->op.headers)
			net.headers = m->op.headers;
		r = source_http_new(&m->op.url, &net, &src, &err);
		ctx.src = src;
	} else {
		r = source_new_fd(m->op.bundle_fd, &src, &err);
	}
	/* one engine entry for both: adaptive when the source can seek and
	 * the bundle has an index, a stream otherwise */
	if (r >= 0)
		r = install_run_source(in, src, cancel, &err);
	final_report(in, ctx.src, r, &err, &fin);
	worker_report(report_fd, &fin, sizeof(fin));
	return r;
}

static void install_on_msg(struct worker *w, const void *msg, void *userdata)
{
	struct manager *m = userdata;
	struct install_msg rep;
	_cleanup_json_ struct json_object *o = NULL;

	memcpy(&rep, msg, sizeof(rep));
	/* the worker's env stores come between its steps (the target marked
	 * bad before the write, activated after the read-back) */
	if (rep.final || !m->op.has_progress || rep.phase != m->op.last.phase)
		manager_status_invalidate(m, MANAGER_STATUS_ALL);
	if (rep.final) {
		m->op.final = rep;
		return;
	}
	m->op.last = rep;
	m->op.has_progress = true;
	sd_notifyf(0, "STATUS=installing: %u%%", rep.percent);
	manager_rauc_install_progress(m->rauc, &rep);
	o = manager_install_progress_json(&rep);
	if (m->op.call)
		proto_reply_more(m->op.call, o);
}

/* The io.flashd error an install ended with (NULL: it succeeded), for its
 * client and its record alike. */
static const char *install_error_name(const struct install_msg *f)
{
	if (!f->final)
		return PROTO_ERROR_INSTALL_FAILED; /* the worker died */
	if (f->error == 0)
		return NULL;
	if (f->error == -ECANCELED)
		return PROTO_ERROR_CANCELLED;
	if (f->stats.downgrade == INSTALL_DOWNGRADE_REFUSED)
		return PROTO_ERROR_DOWNGRADE_REFUSED;
	return f->invalid_bundle ? PROTO_ERROR_INVALID_BUNDLE : PROTO_ERROR_INSTALL_FAILED;
}

static const char *downgrade_or_null(const struct install_msg *f)
{
	return f->stats.downgrade == INSTALL_DOWNGRADE_NONE ? NULL :
	       install_downgrade_to_string(f->stats.downgrade);
}

static const char *version_from_or_null(const struct install_msg *f)
{
	return f->stats.running_version_from == INSTALL_VERSION_FROM_NONE ? NULL :
	       install_version_from_to_string(f->stats.running_version_from);
}

/* What is known of the install: the worker's end report or, when it died
 * before sending one, its last progress (slot and version once the
 * manifest was read; the requested slot before). */
static void install_record(struct manager *m, const char *result, const char *error)
{
	const struct install_msg *f = &m->op.final;
	const struct install_msg *known = f->final ? f : &m->op.last;
	struct record r = {
		.started = m->op.started,
		.finished = time(NULL),
		.group = m->group->name,
		.slot = str_or_null(known->slot) ? str_or_null(known->slot) : m->op.slot,
		.version = str_or_null(known->version),
		.compatible = str_or_null(f->compatible),
		.result = result,
		.error_name = install_error_name(f),
		.error = error,
		.source = m->op.source,
		.bytes = f->stats.bytes_written,
		.bytes_fetched = f->stats.bytes_fetched,
		.erases = f->stats.erases,
		.blocks_skipped = f->stats.blocks_skipped,
		.signer = str_or_null(f->signer),
		.running_version = str_or_null(f->stats.running_version),
		.running_version_from = version_from_or_null(f),
		.downgrade = downgrade_or_null(f),
	};
	int ret = record_append(m->conf->state_dir, &r);

	if (ret < 0)
		log_warning("cannot keep the install record in %s: %s", m->conf->state_dir,
			    strerror(-ret));
	manager_status_unsaved_install(m, ret < 0 ? &r : NULL, ret);
}

static int on_stop_now(sd_event_source *s, void *userdata)
{
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* The worker could not record the end of its install: the daemon does, so
 * the target is recorded failed and out of BOOT_ORDER again (an offline
 * write may have put it back meanwhile). */
static void install_record_died(struct manager *m)
{
	const char *slot = str_or_null(m->op.last.slot);
	enum slot_change_fail kind;
	struct error err = {};
	int idx;

	if (!slot)
		return; /* no target chosen yet */
	/* refused (-ESTALE) unless the env records it installing */
	if (manager_slot_change(m, SLOT_OP_INSTALL_FAILED, slot, 0, NULL, &idx, &kind, NULL, &err) < 0 &&
	    kind != SLOT_CHANGE_REFUSED)
		log_error("cannot record the failed install of slot %s: %s", slot,
			  error_message(&err));
}

/* The client's final answer: the last Progress (step "done") or the error. */
static void install_reply(struct manager *m, struct proto_call *call, const char *error)
{
	struct install_msg *f = &m->op.final;
	_cleanup_json_ struct json_object *o = NULL;
	const char *name = install_error_name(f);

	if (name && !strcmp(name, PROTO_ERROR_CANCELLED)) {
		proto_error(call, PROTO_ERROR_CANCELLED, NULL);
		return;
	}
	if (name && !strcmp(name, PROTO_ERROR_DOWNGRADE_REFUSED)) {
		o = json_object_new_object();
		json_object_object_add(o, "slot", jstr(str_or_null(f->slot)));
		json_object_object_add(o, "version", json_object_new_string(f->version));
		json_object_object_add(o, "running_version",
				       json_object_new_string(f->stats.running_version));
		json_object_object_add(o, "reason", json_object_new_string(error));
		proto_error(call, name, o);
		return;
	}
	if (f->final && f->error == 0) {
		struct install_msg done = { .phase = INSTALL_PHASE_DONE, .percent = 100,
					       .done = m->op.last.total, .total = m->op.last.total };
		struct proto_flashd_progress pr;

		COPY(done.slot, f->slot);
		COPY(done.version, f->version);
		done.downloaded = f->downloaded;
		done.from_url = f->from_url;
		pr = progress_of(&done);
		proto_reply_typed(call, &pr);
		return;
	}
	proto_error_string(call, name, "reason", error);
}

#define U64(buf, v) (snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t)(v)), buf)

static void install_event_finished(struct manager *m)
{
	const struct install_msg *f = &m->op.final;
	char bytes[24], erases[24], skipped[24], down[24], dl[48] = "";

	if (f->from_url)
		snprintf(dl, sizeof(dl), "; %" PRIu64 " bytes downloaded", f->downloaded);
	log_event(LOG_EVENT_INSTALL_FINISHED, (const struct log_field[]){
			{ "SLOT", f->slot }, { "VERSION", f->version },
			{ "BUNDLE_SOURCE", m->op.source },
			{ "BYTES", U64(bytes, f->stats.bytes_written) },
			{ "ERASES", U64(erases, f->stats.erases) },
			{ "BLOCKS_SKIPPED", U64(skipped, f->stats.blocks_skipped) },
			{ "BYTES_DOWNLOADED", f->from_url ? U64(down, f->downloaded) : NULL },
			{ NULL } },
		  "installed version %s into slot %s (%s bytes, %s erases, %s unchanged blocks "
		  "skipped%s)", f->version, f->slot, bytes, erases, skipped, dl);
}

/* result: "failed" or "cancelled" */
static void install_event_failed(struct manager *m, const char *result, const char *error)
{
	const struct install_msg *f = &m->op.final;
	const struct install_msg *known = f->final ? f : &m->op.last;

	log_event(LOG_EVENT_INSTALL_FAILED, (const struct log_field[]){
			{ "SLOT", str_or_null(known->slot) ? known->slot : m->op.slot },
			{ "VERSION", str_or_null(known->version) },
			{ "BUNDLE_SOURCE", m->op.source }, { "RESULT", result },
			{ "ERROR", error }, { NULL } },
		  "install %s: %s", result, error);
}

/* An installed downgrade, or an install over a running version that
 * could not be trusted (running_version_from "unverified"). */
static void log_downgrade(const struct install_msg *f)
{
	const char *why = f->stats.downgrade == INSTALL_DOWNGRADE_OVERRIDDEN ? "allowed by the "
			  "caller over downgrade=refuse" : f->stats.downgrade ==
			  INSTALL_DOWNGRADE_WARNED ? "downgrade=warn" : "downgrade=allow";

	if (f->stats.running_version_from == INSTALL_VERSION_FROM_UNVERIFIED)
		log_warning("downgrade?: version %s installed over a running slot whose version "
			    "cannot be trusted: its kept manifest does not verify (%s)", f->version,
			    why);
	else
		log_warning("downgrade: version %s is older than version %s of the running slot "
			    "(%s)", f->version, f->stats.running_version, why);
}

static void install_on_done(struct worker *w, int code, int status, void *userdata)
{
	struct manager *m = userdata;
	const struct install_msg *f = &m->op.final;
	const char *result, *error = f->message;
	char why[160];
	struct proto_call *call = m->op.call;

	if (!f->final) {
		snprintf(why, sizeof(why), "the install worker died (%s %d) before it finished; "
			 "the target slot stays marked bad", code == CLD_EXITED ? "exit" : "signal",
			 status);
		result = "failed";
		error = why;
		install_record_died(m);
	} else {
		result = f->error == 0 ? "success" : f->error == -ECANCELED ? "cancelled" : "failed";
	}
	if (f->final && f->error == 0 && f->stats.downgrade != INSTALL_DOWNGRADE_NONE)
		log_downgrade(f);
	if (f->final && f->error == 0)
		install_event_finished(m);
	else
		install_event_failed(m, result, error);
	install_record(m, result, f->final && f->error == 0 ? NULL : error);
	if (m->stopping)
		log_info("install ended; stopping");
	bool ok = f->final && f->error == 0;
	_cleanup_free_ char *ended = ok ? NULL : strdup(error);

	if (call && proto_call_is_connected(call))
		install_reply(m, call, error);
	manager_op_clear(m);
	/* the D-Bus front end hears of the end once the daemon is idle again */
	manager_rauc_install_done(m->rauc, ok, ended ? ended : error);
	if (m->stopping) {
		/* exit once the reply above went out: the connection's turn in
		 * the control socket's run queue (normal priority, or just below
		 * it for users without rights) writes it before this idle one runs */
		m->stop_timer = sd_event_source_disable_unref(m->stop_timer);
		if (sd_event_add_defer(m->event, &m->stop_timer, on_stop_now, m) < 0 ||
		    sd_event_source_set_priority(m->stop_timer, SD_EVENT_PRIORITY_IDLE) < 0)
			sd_event_exit(m->event, 0);
	}
}

static void install_on_disconnect(struct proto_call *call, void *userdata)
{
	struct manager *m = userdata;

	if (m->op.call != call)
		return;
	log_warning("install client went away: cancelling");
	m->op.cancelled = true;
	worker_cancel(m->op.worker);
}

static int install_open_bundle(struct proto_call *call, const struct proto_flashd_install *in)
{
	if (in->url)
		return -EUCLEAN; /* not a descriptor: the worker fetches it */
	if (in->fd.given) {
		int64_t idx = in->fd.value;

		/* an index beyond the passed descriptors is the caller's
		 * mistake (InvalidParameter "fd"), not a system error */
		if (idx < 0 || idx >= proto_call_n_fds(call))
			return -EDOM;
		return proto_call_take_fd(call, idx);
	}
	if (in->path)
		return manager_install_open_path(in->path);
	return -ENOENT;
}

int manager_install_open_path(const char *path)
{
	struct stat st;
	int fd;

	if (path[0] != '/')
		return -EINVAL;
	/* the root daemon opens what a caller names: never block on a
	 * FIFO, never open a device (opening some has side effects) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, 0) < 0) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* Where the bundle comes from, for the history: the URL without its
 * secrets, the path the daemon opened, or what the passed descriptor
 * names (a file's path, "pipe:[N]"). A name, not a proof: the bundle's
 * signature says what it is. */
static char *install_source(const struct proto_flashd_install *in,
			    const struct source_http_url *url, int fd)
{
	char buf[PATH_MAX], proc[64];
	const char *path = in->path;
	ssize_t n;

	if (url)
		return strdup(url->shown);
	if (path)
		return strdup(path);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

static bool group_has_slot(const struct layout_slot_group *g, const char *name)
{
	for (size_t i = 0; i < g->n_slots; i++)
		if (!strcmp(g->slots[i].name, name))
			return true;
	return false;
}

/* The target decided once (install_slot_decide: *ret, handed to the
 * worker's engine) and the A/B policy's answer before a worker starts and
 * before the bundle is read, so a refusal is a refusal (SlotRefused,
 * flashctl exit 3) and not a failed install: never the booted slot (fail
 * closed when any slot could be the running root), never the last slot of
 * BOOT_ORDER while the booted one is out of it. The env store of the
 * engine computes the change again under its own env open; env trouble,
 * and a target that cannot be told, are left to it to report. */
int manager_install_precheck(struct manager *m, const char *slot, struct install_slot *ret,
			     struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	struct slot_env st, nst;
	struct slot_changes ch;
	int r;

	install_slot_decide(m->layout, m->group, m->conf->cmdline, m->conf->target, slot, ret);
	if (manager_open_env(m, &e, NULL) < 0 ||
	    slot_env_load_group(&st, m->group, env_get_dup, e, NULL) < 0)
		return 0;
	if (ret->error == -EBUSY) {
		error_copy(err, &ret->err);
		return ret->error;
	}
	if (ret->error)
		return 0;
	r = slot_compute_booted(&st, ret->booted, SLOT_OP_INSTALL_BEGIN, ret->target, 0, &nst,
				&ch, err);
	return r < 0 ? r : 0;
}

/* Where the bundle comes from, for the journal: a URL without its
 * credentials, the path the daemon opened, or the file the client's fd
 * names ("fd" for a pipe): where to look, printable (log.c). */
static void install_event_started(struct manager *m, uid_t client, bool url)
{
	char uid[16], pid[16];

	snprintf(uid, sizeof(uid), "%u", client);
	snprintf(pid, sizeof(pid), "%d", (int)worker_pid(m->op.worker));
	log_event(LOG_EVENT_INSTALL_STARTED, (const struct log_field[]){
			{ "BUNDLE_SOURCE", m->op.source }, { "SLOT", m->op.slot },
			{ "CLIENT_UID", uid }, { "WORKER_PID", pid }, { NULL } },
		  "install%s%s started by uid %s (worker pid %s)", url ? " from " : "",
		  url ? m->op.source : "", uid, pid);
}

int manager_install_method(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	const struct proto_flashd_install *in = proto_call_input(call);
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_(source_http_url_done) struct source_http_url parsed = {};
	const char *slot = in->slot, *url = in->url;
	struct install_slot decided;
	struct error err = {};
	int fd, r;

	if (m->op.name)
		return manager_reply_busy(m, call);
	/* overriding downgrade=refuse is root's, as a raw write of flashd's
	 * variables is: a socket-group member may not replay an old bundle */
	if (in->allow_downgrade.value && proto_call_peer(call)->uid != 0)
		return proto_error_string(call, PROTO_ERROR_DENIED, "reason", "allow_downgrade: "
					  "overriding the downgrade policy is root's alone");
	/* a wrong name is the caller's mistake, not a failed install: say so
	 * before a worker starts (and before the bundle is opened) */
	if (slot && !group_has_slot(m->group, slot))
		return proto_error_string(call, PROTO_ERROR_NO_SUCH_SLOT, "slot", slot);
	r = manager_install_precheck(m, slot, &decided, &err);
	if (r < 0) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		json_object_object_add(o, "slot", decided.target >= 0 ?
				       json_object_new_string(m->group->slots[decided.target].name) :
				       NULL);
		json_object_object_add(o, "reason", json_object_new_string(error_message(&err)));
		return proto_error(call, PROTO_ERROR_SLOT_REFUSED, o);
	}
	/* another writer (a second daemon, an offline flashctl, a worker of a
	 * daemon that died) must be gone before this one starts */
	r = manager_lock_board(m, "flashd install", &lock, &err);
	if (r < 0)
		return manager_reply_lock_error(call, r, &err);
	if (url && (in->path || in->fd.given))
		return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", "url");
	/* exactly one source: an fd with a path would leave the path unread */
	if (in->path && in->fd.given)
		return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", "path");
	/* the one check of the URL on this side: carried to the worker */
	if (url && source_http_url_parse(url, &parsed, &err) < 0) {
		log_warning("install refused: %s", error_message(&err));
		return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", "url");
	}
	fd = url ? -1 : install_open_bundle(call, in);
	if ((fd == -ENOENT && !in->path) || fd == -EDOM)
		return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", "fd");
	if (fd < 0 && !url)
		return proto_error_errno(call, fd, "cannot open the bundle (pass an fd, an "
					 "absolute path the daemon can read, or an http(s) URL)");
	return manager_install_start(m, &lock, &(struct manager_install_req){
			.fd = fd, .url = url ? &parsed : NULL, .slot = slot, .decided = &decided,
			.source = install_source(in, url ? &parsed : NULL, fd),
			.activate = !in->activate.given || in->activate.value,
			/* root's alone: refused above to anyone else */
			.allow_downgrade = in->allow_downgrade.value,
			.uid = proto_call_peer(call)->uid }, call);
}

/* the configured headers, then the caller's */
static int install_headers(struct manager *m, const char *const *more)
{
	size_t n = 0, k = 0;

	for (char **h = m->conf->headers; h && *h; h++)
		n++;
	for (const char *const *h = more; *h; h++)
		n++;
	m->op.headers = calloc(n + 1, sizeof(char *));
	if (!m->op.headers)
		return -ENOMEM;
	for (char **h = m->conf->headers; h && *h; h++)
		if (!(m->op.headers[k++] = strdup(*h)))
			return -ENOMEM;
	for (const char *const *h = more; *h; h++)
		if (!(m->op.headers[k++] = strdup(*h)))
			return -ENOMEM;
	return 0;
}

int manager_install_start(struct manager *m, struct oplock **lock,
			  const struct manager_install_req *req, struct proto_call *call)
{
	int r;

	m->op = (struct operation){ .name = "install", .bundle_fd = req->fd, .activate = req->activate,
				    .allow_downgrade = req->allow_downgrade, .started = time(NULL),
				    .lock = TAKE_PTR(*lock), .source = req->source,
				    .decided = *req->decided };
	if (req->slot)
		m->op.slot = strdup(req->slot);
	if (req->url) {
		m->op.url = *req->url;
		*req->url = (struct source_http_url){ 0 };
	}
	if (req->headers && install_headers(m, req->headers) < 0) {
		manager_op_clear(m);
		return call ? proto_error_errno(call, -ENOMEM, "out of memory") : -ENOMEM;
	}
	if (m->op.url.url && !m->op.source)
		m->op.source = strdup(m->op.url.shown);
	if (call) {
		m->op.call = proto_call_ref(call);
		proto_call_set_disconnect_handler(call, install_on_disconnect, m);
	}
	r = worker_start(m->event, sizeof(struct install_msg), install_job, install_on_msg,
			 install_on_done, m, &m->op.worker);
	if (r < 0) {
		manager_op_clear(m);
		return call ? proto_error_errno(call, r, "cannot start the install worker") : r;
	}
	/* the worker holds the lock now, until it exits however it exits */
	oplock_release(m->op.lock);
	m->op.lock = NULL;
	install_event_started(m, req->uid, m->op.url.url != NULL);
	sd_notify(0, "STATUS=installing");
	manager_rauc_install_started(m->rauc);
	return 0;
}

int manager_install_cancel(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	bool running = manager_install_running(m) && m->op.worker;

	if (running) {
		log_notice("install cancelled by uid %u", proto_call_peer(call)->uid);
		m->op.cancelled = true;
		worker_cancel(m->op.worker);
	}
	return proto_reply_typed(call, &(struct proto_flashd_cancel_reply){
		.cancelled.value = running });
}

int manager_install_history(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_json_ struct json_object *o = NULL;
	/* the last install's record first, when the state dir could not keep it */
	int r = proto_history(m->conf->state_dir, m->status.unsaved_install, &o);

	if (r < 0)
		return proto_error_errno(call, r, "cannot make the install history");
	return proto_reply(call, o);
}

bool manager_install_running(const struct manager *m)
{
	return m->op.name && !strcmp(m->op.name, "install");
}

int manager_install_stop(struct manager *m)
{
	m->stopping = true;
	m->op.cancelled = true;
	return worker_cancel(m->op.worker);
}
