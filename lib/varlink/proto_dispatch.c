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

static bool type_bool(struct json_object *j) { return json_object_is_type(j, json_type_boolean); }
static bool type_int(struct json_object *j) { return json_object_is_type(j, json_type_int); }
static bool type_float(struct json_object *j)
{
	return json_object_is_type(j, json_type_int) || json_object_is_type(j, json_type_double);
}
/* A string with an embedded NUL ("\u0000") would reach C code cut short:
 * the daemon would act on another value than the caller sent. */
static bool type_string(struct json_object *j)
{
	return json_object_is_type(j, json_type_string) &&
	       strlen(json_object_get_string(j)) == (size_t) json_object_get_string_len(j);
}
static bool type_object(struct json_object *j) { return json_object_is_type(j, json_type_object); }
static bool type_array(struct json_object *j) { return json_object_is_type(j, json_type_array); }

static bool (*const type_check[_PROTO_TYPE_MAX])(struct json_object *) = {
	[PROTO_TYPE_BOOL] = type_bool,
	[PROTO_TYPE_INT] = type_int,
	[PROTO_TYPE_FLOAT] = type_float,
	[PROTO_TYPE_STRING] = type_string,
	[PROTO_TYPE_OBJECT] = type_object,
	[PROTO_TYPE_ARRAY] = type_array,
};

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
		if (val && !type_check[p->type](val))
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

/* One field of a typed reply: its value, or NULL (JSON null) for an
 * optional one not given. */
static struct json_object *reply_value(const struct proto_param *p, const char *at)
{
	const struct proto_bool *b = (const struct proto_bool *) at;
	const struct proto_int *i = (const struct proto_int *) at;
	const struct proto_float *f = (const struct proto_float *) at;

	switch (p->type) {
	case PROTO_TYPE_BOOL:
		return b->given || p->required ? json_object_new_boolean(b->value) : NULL;
	case PROTO_TYPE_INT:
		return i->given || p->required ? json_object_new_int64(i->value) : NULL;
	case PROTO_TYPE_FLOAT:
		return f->given || p->required ? json_object_new_double(f->value) : NULL;
	case PROTO_TYPE_STRING:
		return *(const char *const *) at ? json_object_new_string(*(const char *const *) at) :
		       NULL;
	case PROTO_TYPE_OBJECT:
	case PROTO_TYPE_ARRAY:
		return json_object_get(*(struct json_object *const *) at);
	case _PROTO_TYPE_MAX:
		break;
	}
	return NULL;
}

/* The reply's JSON from its typed description (struct proto_param);
 * NULL without memory. */
struct json_object *proto_dispatch_reply_build(const struct proto_param *table, const void *reply)
{
	struct json_object *o = json_object_new_object();

	for (const struct proto_param *p = table; o && p->name; p++)
		json_object_object_add(o, p->name, reply_value(p, (const char *) reply + p->offset));
	return o;
}

/* NULL when a reply's params fit the method's declared reply, else the
 * name of the first field it does not declare or of the wrong type (a
 * null where the IDL has no "?" included). */
const char *proto_dispatch_reply_check(const struct proto_param *table, struct json_object *params)
{
	if (!table || !params)
		return NULL;
	json_object_object_foreach(params, key, val) {
		const struct proto_param *p;

		for (p = table; p->name; p++)
			if (!strcmp(p->name, key))
				break;
		if (!p->name || (val ? !type_check[p->type](val) : p->required))
			return key;
	}
	return NULL;
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
