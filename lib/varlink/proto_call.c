/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One call of the flashd control socket: its references, fds and replies
 * (final, "continues", errors). See include/proto.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "proto-internal.h"
#include "util.h"

/* ---- calls ---- */

void proto_call_close_fds(struct proto_call *call)
{
	for (unsigned i = 0; i < call->n_fds; i++)
		if (call->fds[i] >= 0)
			close(call->fds[i]);
	call->n_fds = 0;
}

static void call_free(struct proto_call *call)
{
	proto_call_close_fds(call);
	free(call->input);
	json_object_put(call->params);
	free(call->method_name);
	free(call);
}

/* The final reply was sent (or the client left): the connection moves on. */
static void call_detach(struct proto_call *call)
{
	struct proto_conn *c = call->conn;

	if (!c)
		return;
	call->conn = NULL;
	if (c->current == call) {
		c->current = NULL;
		c->last_call = util_now_usec(); /* idle from now, not from its start */
		proto_sched_wake(c); /* calls waiting behind this one */
		proto_call_unref(call);
	}
}

/* A handler's reply carries a field the method does not declare (or one
 * of the wrong type): a bug of the daemon, said once in the log, and the
 * client gets an internal error rather than what the IDL does not say. */
static int call_refuse_reply(struct proto_call *call, struct json_object *params)
{
	const char *field = proto_typed_check(call->method->reply, params);
	char msg[256];

	snprintf(msg, sizeof(msg), "the reply of %s has field \"%s\", which its interface "
		 "does not declare so (an undeclared field or the wrong type)", call->method_name,
		 field);
	proto_server_log(call->server, &call->peer, "%s", msg);
	(void) proto_error_errno(call, -EPROTO, msg);
	return -EPROTO;
}

static int call_send(struct proto_call *call, const char *error, struct json_object *params,
		     bool continues)
{
	_cleanup_json_ struct json_object *msg = NULL;
	int r;

	if (call->finished)
		return -EALREADY;
	if (!error && call->method && proto_typed_check(call->method->reply, params))
		return call_refuse_reply(call, params);
	if (!continues)
		call->finished = true;
	if (!call->conn) {
		if (call->oneway)
			return 0;
		return -ENOTCONN;
	}
	if (call->oneway || (continues && !call->more)) {
		if (!continues)
			call_detach(call);
		return 0;
	}
	msg = json_object_new_object();
	if (!msg)
		return -ENOMEM;
	if (error)
		json_object_object_add(msg, "error", json_object_new_string(error));
	json_object_object_add(msg, "parameters",
			       params ? json_object_get(params) : json_object_new_object());
	if (continues)
		json_object_object_add(msg, "continues", json_object_new_boolean(true));
	r = proto_frame_queue(call->conn, msg);
	if (!continues)
		call_detach(call);
	return r;
}

int proto_reply(struct proto_call *call, struct json_object *params)
{
	return call_send(call, NULL, params, false);
}

int proto_reply_typed(struct proto_call *call, const void *reply)
{
	_cleanup_json_ struct json_object *o = NULL;

	if (!call->method || !call->method->reply_size)
		return -EINVAL;
	o = proto_typed_build(call->method->reply, reply);
	if (!o)
		return -ENOMEM;
	return proto_reply(call, o);
}

int proto_reply_more(struct proto_call *call, struct json_object *params)
{
	return call_send(call, NULL, params, true);
}

int proto_error(struct proto_call *call, const char *error, struct json_object *params)
{
	return call_send(call, error, params, false);
}

int proto_error_string(struct proto_call *call, const char *error, const char *key,
		       const char *value)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();

	if (!p)
		return -ENOMEM;
	json_object_object_add(p, key, json_object_new_string(value ? value : ""));
	return proto_error(call, error, p);
}

int proto_error_invalid_parameter(struct proto_call *call, const char *parameter)
{
	return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", parameter);
}

int proto_error_errno(struct proto_call *call, int r, const char *message)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	const char *name;
	int e = r < 0 ? -r : r;

	if (!p)
		return -ENOMEM;
	name = strerrorname_np(e);
	json_object_object_add(p, "errno", json_object_new_int(e));
	json_object_object_add(p, "errno_name", json_object_new_string(name ? name : "unknown"));
	json_object_object_add(p, "message", json_object_new_string(message ? message : strerror(e)));
	return proto_error(call, PROTO_ERROR_INTERNAL, p);
}

struct proto_call *proto_call_ref(struct proto_call *call)
{
	if (call)
		call->n_ref++;
	return call;
}

struct proto_call *proto_call_unref(struct proto_call *call)
{
	if (!call)
		return NULL;
	if (--call->n_ref == 0) {
		call_free(call);
		return NULL;
	}
	/* Only the connection still holds it and it was never answered:
	 * nobody will answer it, so do it rather than stall the client. */
	if (call->n_ref == 1 && !call->finished && call->conn && call->conn->current == call) {
		proto_server_log(call->server, &call->peer, "%s: handler dropped the call without a reply",
			   call->method_name);
		proto_error_errno(call, -ENOMSG, "the method returned without a reply");
	}
	return NULL;
}

const char *proto_call_method(const struct proto_call *call)
{
	return call->method_name;
}

const struct proto_peer *proto_call_peer(const struct proto_call *call)
{
	return &call->peer;
}

bool proto_call_wants_more(const struct proto_call *call)
{
	return call->more;
}

bool proto_call_is_oneway(const struct proto_call *call)
{
	return call->oneway;
}

bool proto_call_is_connected(const struct proto_call *call)
{
	return call->conn != NULL;
}

void proto_call_set_disconnect_handler(struct proto_call *call, proto_disconnect_fn fn,
				       void *userdata)
{
	call->on_disconnect = fn;
	call->disconnect_userdata = userdata;
}

const void *proto_call_input(const struct proto_call *call)
{
	return call->input;
}

unsigned proto_call_n_fds(const struct proto_call *call)
{
	return call->n_fds;
}

int proto_call_take_fd(struct proto_call *call, unsigned idx)
{
	if (idx >= call->n_fds)
		return -ENXIO;
	if (call->fds[idx] < 0)
		return -EBADF;
	return TAKE_FD(call->fds[idx]);
}
