/* MarkGood, MarkBad, Activate, Rollback: each one slot_change(), one env
 * store under the board's lock; the health check uses the same path. */
#include <errno.h>
#include <string.h>

#include "cleanup_json.h"
#include "log.h"
#include "manager-internal.h"

int manager_slot_change(struct manager *m, enum slot_op op, const char *name, unsigned flags,
			const char *const extra[2], int *ret_idx, enum slot_change_fail *ret_kind,
			struct error *err)
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
		return r;
	}
	*ret_idx = res.slot;
	return r;
}

static int slot_op(struct manager *m, struct proto_call *call, enum slot_op op, const char *name,
		   unsigned flags)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	enum slot_change_fail kind;
	struct error err = {};
	int idx, r;

	if (m->op.name)
		return manager_reply_busy(m, call);
	r = manager_slot_change(m, op, name, flags, NULL, &idx, &kind, &err);
	if (r < 0 && kind == SLOT_CHANGE_ENV)
		return manager_reply_lock_error(call, r, &err);
	if (r < 0) {
		switch (kind) {
		case SLOT_CHANGE_NO_SLOT:
			return proto_error_string(call, PROTO_ERROR_NO_SUCH_SLOT, "slot",
						  error_message(&err));
		case SLOT_CHANGE_REFUSED:
			return proto_error_string(call, PROTO_ERROR_DENIED, "reason",
						  error_message(&err));
		case SLOT_CHANGE_OK:
		case SLOT_CHANGE_ENV:
			break;
		}
		return proto_error_errno(call, r, error_message(&err));
	}
	log_notice("%s of slot %s by uid %u", slot_op_to_string(op), m->group->slots[idx].name,
		   proto_call_peer(call)->uid);
	if (op != SLOT_OP_ACTIVATE)
		json_object_object_add(o, "slot", json_object_new_string(m->group->slots[idx].name));
	return proto_reply(call, o);
}

int manager_slot_mark_good(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_MARK_GOOD, NULL, 0);
}

int manager_slot_mark_bad(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_MARK_BAD, manager_param_str(params, "slot"), 0);
}

int manager_slot_activate(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_ACTIVATE, manager_param_str(params, "slot"), 0);
}

int manager_slot_rollback(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_ROLLBACK, NULL, 0);
}
