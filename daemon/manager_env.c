/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GetEnv, SetEnv, ListEnv and OverlayReset: the U-Boot env for operators;
 * the variables flashd manages are refused unless forced. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup_json.h"
#include "log.h"
#include "manager-internal.h"
#include "util.h"

int manager_env_get(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_free_ char *value = NULL;
	const struct proto_flashd_get_env *in = proto_call_input(call);
	const char *name = in->name;
	struct error eerr = {};
	int r;

	/* no such variable can exist: the caller's mistake, not the env's */
	if (!env_name_valid(name))
		return proto_error_invalid_parameter(call, "name");
	r = manager_open_env(m, &e, &eerr);
	if (r < 0)
		return manager_reply_env_error(call, r, &eerr);
	r = env_get(e, name, &value);
	if (r < 0 && r != -ENOENT)
		return proto_error_errno(call, r, "reading the U-Boot env");
	return proto_reply_typed(call, &(struct proto_flashd_get_env_reply){
		.name = name, .value = value });
}

/* EnvRefused {name, reason}; proto_error() borrows the parameters. */
static int env_refused(struct proto_call *call, const char *name, const char *reason)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	return proto_error(call, PROTO_ERROR_ENV_REFUSED, o);
}

/* One variable in one env store; the caller holds the board lock. A
 * variable of flashd's keeps BOOT_ORDER to verified slots (slot_change.h). */
static int store_var(struct manager *m, const char *name, const char *value, struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	int r;

	manager_status_invalidate(m, MANAGER_STATUS_ENV);
	r = manager_open_env(m, &e, err);
	if (r >= 0 && slot_env_is_flashd_var(name))
		r = slot_change_check_raw(e, m->group, &(struct env_var){ name, value }, 1, err);
	return r < 0 ? r : env_store_var(e, name, value, err);
}

/* Records and boot selection are flashd's word: only its own operations
 * write them; a raw write is root's alone (docs/security.md). */
static int env_denied(struct proto_call *call, const char *name)
{
	char reason[256];

	snprintf(reason, sizeof(reason), "%s: flashd's records and the boot selection are "
		 "written only by flashd's own operations (install, activate, mark-good, "
		 "mark-bad, rollback); a raw write, even forced, needs root (uid 0)", name);
	log_notice("SetEnv %s refused for uid %u: not root", name, proto_call_peer(call)->uid);
	return proto_error_string(call, PROTO_ERROR_DENIED, "reason", reason);
}

int manager_env_set(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_oplock_ struct oplock *lock = NULL;
	struct error eerr = {};
	struct error serr = {};
	const struct proto_flashd_set_env *in = proto_call_input(call);
	const char *name = in->name, *value = in->value;
	bool force = in->force.value;
	int r;
	const char *nv = value && *value ? value : NULL; /* "" deletes */

	if (m->op.name)
		return manager_reply_busy(m, call);
	if (!env_name_valid(name))
		return env_refused(call, name, "not a valid U-Boot variable name (empty, too long, "
				   "or contains '=' or a control character)");
	if (slot_env_is_flashd_var(name) && !force) {
		char reason[256];

		snprintf(reason, sizeof(reason), "%s is managed by flashd (boot selection / install "
			 "state): use mark-good, activate, rollback, or force", name);
		return proto_error_string(call, PROTO_ERROR_FORCE_REQUIRED, "reason", reason);
	}
	if (slot_env_is_flashd_var(name) && proto_call_peer(call)->uid != 0)
		return env_denied(call, name);
	/* even forced, a slot variable must read as the boot script reads it */
	if (slot_env_var_check(m->group, name, nv, &serr) < 0)
		return env_refused(call, name, serr.msg);
	r = manager_lock_board(m, "flashd SetEnv", &lock, &eerr);
	if (r < 0)
		return manager_reply_lock_error(call, r, &eerr);
	r = store_var(m, name, nv, &eerr);
	if (r < 0)
		return env_refused(call, name, eerr.msg[0] ? eerr.msg : strerror(-r));
	log_notice("env %s %s by uid %u%s", value ? "set" : "delete", name,
		   proto_call_peer(call)->uid, force ? " (forced)" : "");
	return proto_reply(call, NULL);
}

int manager_env_list(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *vars = json_object_new_object();
	struct error eerr = {};
	const char *name, *value;
	void *it = NULL;
	int r;

	if (!vars)
		return -ENOMEM;
	r = manager_open_env(m, &e, &eerr);
	if (r < 0)
		return manager_reply_env_error(call, r, &eerr);
	while (env_next(e, &it, &name, &value) > 0)
		json_object_object_add(vars, name, json_object_new_string(value));
	return proto_reply_typed(call, &(struct proto_flashd_list_env_reply){ .variables = vars });
}


static int overlay_reset_store(struct manager *m, bool cancel, bool *ret_changed,
			       struct error *err)
{
	_cleanup_env_ struct env *e = NULL;
	int r;

	manager_status_invalidate(m, MANAGER_STATUS_ENV);
	r = manager_open_env(m, &e, err);
	return r < 0 ? r : slot_change_overlay_reset(e, cancel, ret_changed, err);
}

int manager_env_overlay_reset(struct proto_call *call, struct json_object *params,
			      void *userdata)
{
	struct manager *m = userdata;
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_json_ struct json_object *overlay = NULL;
	const struct proto_flashd_overlay_reset *in = proto_call_input(call);
	struct error eerr = {};
	bool cancel = in->cancel.value, changed;
	int r;

	if (m->op.name)
		return manager_reply_busy(m, call);
	if (!m->layout->n_overlays)
		return proto_error_string(call, PROTO_ERROR_DENIED, "reason",
					  "the layout has no overlay");
	r = manager_lock_board(m, "flashd OverlayReset", &lock, &eerr);
	if (r < 0)
		return manager_reply_lock_error(call, r, &eerr);
	/* flashd boot erases the overlay at the next boot, then clears this */
	r = overlay_reset_store(m, cancel, &changed, &eerr);
	if (r < 0)
		return manager_reply_env_error(call, r, &eerr);
	if (changed && cancel)
		log_notice("overlay reset cancelled by uid %u: the overlay is kept",
			   proto_call_peer(call)->uid);
	else if (changed)
		log_notice("overlay reset requested by uid %u: takes effect at the next boot",
			   proto_call_peer(call)->uid);
	overlay = manager_status_overlay_json(m, !cancel);
	return proto_reply_typed(call, &(struct proto_flashd_overlay_reply){
		.overlay = overlay, .changed.value = changed });
}
