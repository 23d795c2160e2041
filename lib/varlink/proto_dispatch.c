/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Dispatch of a call from a method table: flags, authorization, the
 * parameters checked against the method's table, the handler's failure
 * answered for it. See include/proto.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto-internal.h"

/* ---- the parameter table of methods without parameters ---- */

const struct proto_param proto_params_none[] = {
	{ NULL },
};

/* ---- dispatch ---- */

/* NULL when params fit the table, else the name of the first offender. */
static const char *params_check(const struct proto_param *table, struct json_object *params)
{
	const struct proto_param *p;

	json_object_object_foreach(params, key, val) {
		for (p = table; p && p->name; p++)
			if (!strcmp(p->name, key))
				break;
		if (!p || !p->name)
			return key; /* unknown parameter */
		if (val && !proto_typed_is(p->type, val))
			return key;
	}
	for (p = table; p && p->name; p++) {
		struct json_object *v = NULL;

		if (p->required && (!json_object_object_get_ex(params, p->name, &v) || !v))
			return p->name;
	}
	return NULL;
}

/* Each parameter given at its offset in input (struct proto_param), after
 * params_check() found them all of their declared type. */
static void params_fill(const struct proto_param *table, struct json_object *params, void *input)
{
	for (const struct proto_param *p = table; p && p->name; p++) {
		struct json_object *v = NULL;
		char *at = (char *) input + p->offset;

		if (!json_object_object_get_ex(params, p->name, &v) || !v)
			continue;
		switch (p->type) {
		case PROTO_TYPE_BOOL:
			*(struct proto_bool *) at = (struct proto_bool) { json_object_get_boolean(v), true };
			break;
		case PROTO_TYPE_INT:
			*(struct proto_int *) at = (struct proto_int) { json_object_get_int64(v), true };
			break;
		case PROTO_TYPE_FLOAT:
			*(struct proto_float *) at = (struct proto_float) { json_object_get_double(v), true };
			break;
		case PROTO_TYPE_STRING:
			*(const char **) at = json_object_get_string(v);
			break;
		case PROTO_TYPE_OBJECT:
		case PROTO_TYPE_ARRAY:
			*(struct json_object **) at = v;
			break;
		case _PROTO_TYPE_MAX:
			break;
		}
	}
}

const struct proto_method *proto_dispatch_find_method(const struct proto_method *table,
					      const char *iface, size_t len, const char *name)
{
	for (const struct proto_method *m = table; m && m->name; m++)
		if (strlen(m->interface) == len && !strncmp(m->interface, iface, len) &&
		    !strcmp(m->name, name))
			return m;
	return NULL;
}

/* Errno of a handler that failed without answering -> a Varlink error. */
static void call_answer_failure(struct proto_call *call, int r)
{
	switch (-r) {
	case EACCES:
	case EPERM:
		proto_error(call, PROTO_ERROR_PERMISSION_DENIED, NULL);
		break;
	case EOPNOTSUPP:
		proto_error_string(call, PROTO_ERROR_METHOD_NOT_IMPLEMENTED, "method",
				   call->method_name);
		break;
	default:
		proto_error_errno(call, r, NULL);
	}
}

int proto_dispatch_call(struct proto_call *call, struct json_object *params)
{
	const struct proto_method *m = call->method;
	struct proto_server *s = call->server;
	const char *bad;
	int r;

	if ((m->flags & PROTO_NEEDS_MORE) && !call->more)
		return proto_error(call, PROTO_ERROR_EXPECTED_MORE, NULL);
	if ((m->flags & PROTO_NEEDS_AUTH) && proto_peer_authorized(&call->peer, s->auth_group) <= 0) {
		proto_server_log(s, &call->peer, "%s refused: uid %u is not root%s", call->method_name,
			   (unsigned) call->peer.uid,
			   s->auth_group == (gid_t)-1 ? "" : " nor in the socket group");
		return proto_error(call, PROTO_ERROR_PERMISSION_DENIED, NULL);
	}
	if (!m->handler)
		return proto_error_string(call, PROTO_ERROR_METHOD_NOT_IMPLEMENTED, "method",
					  call->method_name);
	bad = params_check(m->params, params);
	if (bad)
		return proto_error_invalid_parameter(call, bad);
	if (m->input_size) {
		call->input = calloc(1, m->input_size);
		if (!call->input)
			return -ENOMEM;
		call->params = json_object_get(params);
		params_fill(m->params, params, call->input);
	}
	if (!(m->flags & PROTO_TAKES_FDS))
		proto_call_close_fds(call);

	proto_call_ref(call); /* the handler's reference */
	r = m->handler(call, params, s->userdata);
	if (r < 0 && !call->finished)
		call_answer_failure(call, r);
	proto_call_unref(call); /* answers for a handler that kept no reference */
	return 0;
}
