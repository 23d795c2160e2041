/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* MarkGood, MarkBad, Activate, Rollback: each one slot_change(), one env
 * store under the board's lock; the health check uses the same path.
 * Activate of a slot that is not running reads it first, in a worker. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "log.h"
#include "manager-internal.h"
#include "proto_slot.h"
#include "slot_verify.h"

int manager_slot_change(struct manager *m, enum slot_op op, const char *name, unsigned flags,
			const char *const extra[2], int *ret_idx, enum slot_change_fail *ret_kind,
			bool *ret_forcible, struct error *err)
{
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	struct slot_change_result res;
	int booted, r;

	*ret_kind = SLOT_CHANGE_ENV;
	r = manager_lock_board(m, slot_op_to_string(op), &lock, err);
	if (r < 0)
		return r;
	r = manager_open_env(m, &e, err);
	if (r < 0)
		return error_is_set(err) ? r : error_set(err, r, "%s", strerror(-r));
	booted = manager_booted(m, NULL, NULL);
	if (booted < 0)
		booted = -1;
	if (!name && op != SLOT_OP_ROLLBACK && booted < 0) {
		*ret_kind = SLOT_CHANGE_NO_SLOT;
		return error_set(err, -ENOENT, "(booted slot unknown)");
	}
	manager_status_invalidate(m, MANAGER_STATUS_ENV); /* stored or not, read it again */
	/* a fallback the daemon has not recorded yet goes into the same store */
	r = slot_change(e, m->group, &(struct slot_change) {
			.op = op, .slot_name = name, .booted = booted, .flags = flags,
			.slot = op == SLOT_OP_ROLLBACK ? -1 : booted,
			.extra_name = extra ? extra[0] : NULL,
			.extra_value = extra ? extra[1] : NULL }, &res, err);
	if (r < 0) {
		*ret_kind = res.fail;
		if (ret_forcible)
			*ret_forcible = res.forcible;
		return r;
	}
	*ret_idx = res.slot;
	return r;
}

void manager_slot_event(struct manager *m, uid_t client, enum slot_op op, enum log_event ev,
			int idx)
{
	char uid[16];

	snprintf(uid, sizeof(uid), "%u", client);
	log_event(ev, (const struct log_field[]){
			{ "SLOT", m->group->slots[idx].name }, { "CLIENT_UID", uid }, { NULL } },
		  "%s of slot %s by uid %s", slot_op_to_string(op), m->group->slots[idx].name, uid);
}

/* SlotRefused {slot, reason}; proto_error() borrows the parameters. */
static int slot_refused(struct proto_call *call, const char *slot, const char *reason)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();

	json_object_object_add(o, "slot", json_string_or_null(slot));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	return proto_error(call, PROTO_ERROR_SLOT_REFUSED, o);
}

/* ev: the journal's event for op */
static int slot_op(struct manager *m, struct proto_call *call, enum slot_op op,
		   enum log_event ev, const char *name, unsigned flags)
{
	enum slot_change_fail kind;
	struct error err = {};
	bool forcible = false;
	const char *error;
	int idx, r;

	if (m->op.name)
		return manager_reply_busy(m, call);
	r = manager_slot_change(m, op, name, flags, NULL, &idx, &kind, &forcible, &err);
	if (r < 0 && kind == SLOT_CHANGE_ENV)
		return manager_reply_lock_error(call, r, &err);
	if (r < 0) {
		/* the same error names as flashctl's offline refusals */
		error = proto_slot_error(kind, forcible);
		if (kind == SLOT_CHANGE_NO_SLOT)
			return proto_error_string(call, error, "slot", error_message(&err));
		if (kind == SLOT_CHANGE_REFUSED && !forcible)
			return slot_refused(call, name, error_message(&err));
		if (error)
			return proto_error_string(call, error, "reason", error_message(&err));
		return proto_error_errno(call, r, error_message(&err));
	}
	manager_slot_event(m, proto_call_peer(call)->uid, op, ev, idx);
	if (op == SLOT_OP_ACTIVATE)
		return proto_reply(call, NULL); /* Activate() -> () */
	return proto_reply_typed(call, &(struct proto_flashd_slot_reply){
		.slot = m->group->slots[idx].name });
}

/* The slot the call names (MarkGood, MarkBad, Rollback, Activate share one
 * input, struct proto_flashd_slot); NULL: the default slot. */
static const char *slot_param(struct proto_call *call)
{
	const struct proto_flashd_slot *in = proto_call_input(call);

	return in->slot;
}

int manager_slot_mark_bad(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_MARK_BAD, LOG_EVENT_SLOT_BAD, slot_param(call), 0);
}

/* The worker reads the slot against its recorded signed index (the event
 * loop never waits on that much flash). */
static int read_job(int report_fd, volatile int *cancel, void *userdata)
{
	struct manager *m = userdata;
	struct slot_read_report rep = { 0 };
	struct error err = {};

	rep.r = slot_verify_promotion(m->layout, m->conf->target, m->group,
				      (size_t)m->op.health_slot, m->op.slot_op, m->conf->state_dir,
				      NULL, &err);
	snprintf(rep.message, sizeof(rep.message), "%s", error_message(&err));
	return worker_report(report_fd, &rep, sizeof(rep));
}

static void read_on_msg(struct worker *w, const void *msg, void *userdata)
{
	struct manager *m = userdata;

	memcpy(&m->op.read, msg, sizeof(m->op.read));
}

static void read_on_done(struct worker *w, int code, int status, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_free_ char *name = TAKE_PTR(m->op.slot);
	struct proto_call *call = proto_call_ref(m->op.call);
	struct slot_read_report rep = m->op.read;
	enum slot_op op = m->op.slot_op;
	enum log_event ev = m->op.slot_event;
	const char *read = m->group->slots[m->op.health_slot].name;
	bool ok = rep.r == 1 && code == CLD_EXITED && status == 0;
	struct error err = {};

	manager_op_clear(m); /* the board's lock too: the change takes it again */
	/* the worker's words (slot_verify_promotion), or why it has none */
	if (!ok && (rep.r == 1 || !rep.message[0]))
		slot_verify_refused(op, read, "the read ended early", &err);
	else if (!ok)
		error_set(&err, rep.r < 0 ? rep.r : -EPERM, "%s", rep.message);
	if (!call) { /* the RAUC D-Bus API's Mark (manager_rauc.c) */
		manager_rauc_slot_read(m, op, name, ok, error_message(&err));
		return;
	}
	if (ok) {
		slot_op(m, call, op, ev, name, 0);
	} else {
		log_warning("%s", error_message(&err));
		if (proto_call_is_connected(call))
			slot_refused(call, read, error_message(&err));
	}
	proto_call_unref(call);
}

/* The slot op would put ahead of the booted one (activate or mark-good of
 * another slot, rollback onto one), -1 none or refused by the state logic
 * (slot_op says why). Its record (root may force one) is no proof of its
 * bytes (docs/security.md): it is read first. */
static int slot_to_read(struct manager *m, enum slot_op op, const char *name)
{
	_cleanup_env_ struct env *e = NULL;
	struct manager_slots v;
	int idx;

	if (manager_open_env(m, &e, NULL) < 0 || manager_status_load_slots(m, e, &v, NULL) < 0)
		return -1; /* the change reports the env's trouble */
	manager_status_slots_done(&v);
	idx = name ? slot_find(&v.st, name) : op == SLOT_OP_ROLLBACK ? -1 : v.decision.booted;
	if (name && idx < 0)
		return -1;
	return slot_change_promotes(&v.st, v.decision.booted, op, idx, 0);
}

int manager_slot_read_start(struct manager *m, enum slot_op op, enum log_event ev,
			    const char *name, struct proto_call *call, struct error *err)
{
	int idx, r;

	idx = m->op.name ? -1 : slot_to_read(m, op, name);
	if (idx < 0)
		return 0;
	m->op = (struct operation){ .name = slot_op_to_string(op), .bundle_fd = -1,
				    .started = time(NULL), .health_slot = idx,
				    .slot = name ? strdup(name) : NULL, .slot_op = op,
				    .slot_event = ev, .call = proto_call_ref(call) };
	r = manager_lock_board(m, "flashd reading a slot before its change", &m->op.lock, err);
	if (r >= 0 && name && !m->op.slot)
		r = -ENOMEM;
	if (r >= 0)
		r = worker_start(m->event, sizeof(struct slot_read_report), read_job,
				 read_on_msg, read_on_done, m, &m->op.worker);
	if (r < 0) {
		manager_op_clear(m);
		return r;
	}
	return 1;
}

/* op after a read of the slot it promotes, in a worker; at once when it
 * promotes none. */
static int read_then_op(struct manager *m, struct proto_call *call, enum slot_op op,
			enum log_event ev, const char *name)
{
	struct error err = {};
	int r = manager_slot_read_start(m, op, ev, name, call, &err);

	if (r == 0)
		return slot_op(m, call, op, ev, name, 0);
	if (r < 0)
		return error_is_set(&err) ? manager_reply_lock_error(call, r, &err) :
		       proto_error_errno(call, r, "cannot start reading the slot");
	return 0;
}

int manager_slot_activate(struct proto_call *call, struct json_object *params, void *userdata)
{
	return read_then_op(userdata, call, SLOT_OP_ACTIVATE, LOG_EVENT_SLOT_ACTIVATED,
			    slot_param(call));
}

int manager_slot_mark_good(struct proto_call *call, struct json_object *params, void *userdata)
{
	return read_then_op(userdata, call, SLOT_OP_MARK_GOOD, LOG_EVENT_SLOT_GOOD,
			    slot_param(call));
}

int manager_slot_rollback(struct proto_call *call, struct json_object *params, void *userdata)
{
	return read_then_op(userdata, call, SLOT_OP_ROLLBACK, LOG_EVENT_ROLLBACK,
			    slot_param(call));
}
