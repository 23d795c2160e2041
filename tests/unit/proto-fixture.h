/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fixture of the test-proto* programs (test-proto: parsing, dispatch,
 * fd passing; -auth: authorization and connection limits; -idl: the IDL
 * against the table): the test methods bound to the io.flashd table, a
 * connection without a socket per test, its replies. Header-only, static,
 * as proto-test-helpers.h; the group fixture is TEST_GROUP(group_setup, NULL). */
#pragma once
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "proto.h"
#include "proto_flashd.h"
#include "proto-test-helpers.h"
#include "testlib.h"
#include "util.h"

/* io.flashd's text as the server inflates it, made once for every test. */
static inline const char *flashd_idl(void)
{
	static char *text;

	if (!text)
		assert_int_equal(proto_flashd_description(&text), 0);
	return text;
}

/* ---- test methods ---- */

static struct proto_call *held_call;
static int held_disconnects;
static unsigned last_n_fds;
static int last_fd = -1;

static inline int m_get_status(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = json_object_new_object();

	json_object_object_add(r, "booted", json_object_new_string("A"));
	return proto_reply(call, r);
}

static inline int m_set_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	return proto_reply(call, params); /* echo */
}

static inline int m_install(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = json_object_new_object();

	last_n_fds = proto_call_n_fds(call);
	last_fd = last_n_fds > 0 ? proto_call_take_fd(call, 0) : -1;
	json_object_object_add(r, "n_fds", json_object_new_int(last_n_fds));
	return proto_reply(call, r);
}

static inline void on_disconnect(struct proto_call *call, void *userdata)
{
	held_disconnects++;
}

static inline int m_activate(struct proto_call *call, struct json_object *params, void *userdata)
{
	held_call = proto_call_ref(call); /* answered later by the test */
	proto_call_set_disconnect_handler(call, on_disconnect, NULL);
	return 0;
}

static inline int m_cancel(struct proto_call *call, struct json_object *params, void *userdata)
{
	return -EBUSY;
}

static inline int m_mark_good(struct proto_call *call, struct json_object *params, void *userdata)
{
	return 0; /* forgets to answer */
}

static inline int m_overlay_reset(struct proto_call *call, struct json_object *params,
				  void *userdata)
{
	return -EPERM;
}

static inline int m_rollback(struct proto_call *call, struct json_object *params, void *userdata)
{
	for (int i = 0; i < 3; i++) {
		_cleanup_json_ struct json_object *p = json_object_new_object();

		json_object_object_add(p, "percent", json_object_new_int(i * 33));
		assert_int_equal(proto_reply_more(call, p), 0);
	}
	return proto_reply(call, NULL);
}

static const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX] = {
	[PROTO_FLASHD_GET_STATUS] = m_get_status,
	[PROTO_FLASHD_SET_ENV] = m_set_env,
	[PROTO_FLASHD_INSTALL] = m_install,
	[PROTO_FLASHD_ACTIVATE] = m_activate,
	[PROTO_FLASHD_CANCEL] = m_cancel,
	[PROTO_FLASHD_MARK_GOOD] = m_mark_good,
	[PROTO_FLASHD_OVERLAY_RESET] = m_overlay_reset,
};

/* ---- fixture ---- */

struct fx {
	struct proto_server *server;
	struct proto_conn *conn;
};

static const struct proto_peer root_peer = { .pid = 1, .uid = 0, .gid = 0 };

static inline struct fx *fx_new(const struct proto_peer *peer)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(test_server_new(peer ? peer : &root_peer, &f->server, &f->conn), 0);
	return f;
}

static inline int setup(void **state)
{
	*state = fx_new(NULL);
	held_call = NULL;
	held_disconnects = 0;
	last_n_fds = 0;
	last_fd = -1;
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;

	proto_call_unref(TAKE_PTR(held_call));
	proto_server_free(f->server); /* frees the connection too */
	if (last_fd >= 0)
		close(last_fd);
	free(f);
	return 0;
}

/* Feed text plus its terminating NUL. */
static inline int feed(struct fx *f, const char *msg)
{
	return proto_conn_feed(f->conn, msg, strlen(msg) + 1, NULL, 0);
}

/* Take all queued replies as a JSON array. */
static inline struct json_object *replies(struct fx *f)
{
	struct json_object *a = json_object_new_array();
	size_t len, off = 0;
	const char *out = proto_conn_output(f->conn, &len);

	while (off < len) {
		const char *nul = memchr(out + off, 0, len - off);
		struct json_object *j;

		assert_non_null(nul); /* every reply is NUL-terminated */
		j = json_tokener_parse(out + off);
		assert_non_null(j);
		json_object_array_add(a, j);
		off = nul - out + 1;
	}
	proto_conn_consume_output(f->conn, len);
	return a;
}

static inline size_t n_replies(struct fx *f)
{
	_cleanup_json_ struct json_object *a = replies(f);

	return json_object_array_length(a);
}

/* The only reply; asserts there is exactly one. */
static inline struct json_object *one_reply(struct fx *f)
{
	_cleanup_json_ struct json_object *a = replies(f);

	assert_int_equal(json_object_array_length(a), 1);
	return json_object_get(json_object_array_get_idx(a, 0));
}

static inline const char *get_str(struct json_object *o, const char *path)
{
	/* path: "key" or "key.sub" */
	char buf[64], *dot;
	struct json_object *v = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	dot = strchr(buf, '.');
	if (dot)
		*dot = 0;
	if (!json_object_object_get_ex(o, buf, &v))
		return NULL;
	if (dot && !json_object_object_get_ex(v, dot + 1, &v))
		return NULL;
	return json_object_get_string(v);
}

static inline void assert_error(struct json_object *reply, const char *error, const char *key,
				const char *value)
{
	assert_non_null(get_str(reply, "error"));
	assert_string_equal(get_str(reply, "error"), error);
	if (key) {
		char path[64];

		snprintf(path, sizeof(path), "parameters.%s", key);
		assert_non_null(get_str(reply, path));
		assert_string_equal(get_str(reply, path), value);
	}
}

/* `what` (the message fed) names the case when it fails. */
static inline void assert_protocol_error(struct fx *f, const char *what, int r, int expect,
					 const char *reason_part)
{
	_cleanup_json_ struct json_object *rep = NULL;

	if (r != expect)
		fail_msg("%s: %d, expected %d", what, r, expect);
	rep = one_reply(f);
	assert_error(rep, PROTO_ERROR_PROTOCOL, NULL, NULL);
	if (!strstr(get_str(rep, "parameters.reason"), reason_part))
		fail_msg("%s: reason \"%s\" does not contain \"%s\"", what,
			 get_str(rep, "parameters.reason"), reason_part);
	assert_true(proto_conn_is_dead(f->conn));
	/* nothing more is read from a dead connection */
	assert_int_equal(feed(f, "{\"method\":\"io.flashd.GetStatus\"}"), -EPIPE);
	assert_int_equal(n_replies(f), 0);
}

/* The handlers above answer with what they saw (SetEnv echoes its
 * parameters, Install counts its fds): their replies are declared here,
 * since the dispatcher refuses a field the method does not declare
 * (test_reply_check has the table's own declarations). */
static const struct proto_param echo_reply[] = {
	{ "name", PROTO_TYPE_STRING, false, 0, NULL, false },
	{ "value", PROTO_TYPE_STRING, false, 0, NULL, false },
	{ "force", PROTO_TYPE_BOOL, false, 0, NULL, false },
	{ NULL },
};
static const struct proto_param n_fds_reply[] = {
	{ "n_fds", PROTO_TYPE_INT, true, 0, NULL, false },
	{ NULL },
};

static inline int group_setup(void **state)
{
	(void)state;
	/* the io.flashd table with the handlers above, Stream = m_rollback */
	test_methods_bind(handlers, m_rollback);
	test_methods[PROTO_FLASHD_SET_ENV].reply = echo_reply;
	test_methods[PROTO_FLASHD_INSTALL].reply = n_fds_reply;
	return 0;
}
