/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the Varlink protocol core: framing, parsing, dispatch,
 * parameter checks, authorization, fd passing, and the io.flashd IDL. The
 * connections here have no socket: bytes are fed in with proto_conn_feed()
 * and replies read back from the output queue. Authorization looks at the
 * peer's credentials only (uid, gid, supplementary groups), no user
 * database, so the peers here are plain structs. */
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
static const char *flashd_idl(void)
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

static int m_get_status(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = json_object_new_object();

	json_object_object_add(r, "booted", json_object_new_string("A"));
	return proto_reply(call, r);
}

static int m_set_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	return proto_reply(call, params); /* echo */
}

static int m_install(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = json_object_new_object();

	last_n_fds = proto_call_n_fds(call);
	last_fd = last_n_fds > 0 ? proto_call_take_fd(call, 0) : -1;
	json_object_object_add(r, "n_fds", json_object_new_int(last_n_fds));
	return proto_reply(call, r);
}

static void on_disconnect(struct proto_call *call, void *userdata)
{
	held_disconnects++;
}

static int m_activate(struct proto_call *call, struct json_object *params, void *userdata)
{
	held_call = proto_call_ref(call); /* answered later by the test */
	proto_call_set_disconnect_handler(call, on_disconnect, NULL);
	return 0;
}

static int m_cancel(struct proto_call *call, struct json_object *params, void *userdata)
{
	return -EBUSY;
}

static int m_mark_good(struct proto_call *call, struct json_object *params, void *userdata)
{
	return 0; /* forgets to answer */
}

static int m_overlay_reset(struct proto_call *call, struct json_object *params, void *userdata)
{
	return -EPERM;
}

static int m_rollback(struct proto_call *call, struct json_object *params, void *userdata)
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

static struct fx *fx_new(const struct proto_peer *peer)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(test_server_new(peer ? peer : &root_peer, &f->server, &f->conn), 0);
	return f;
}

static int setup(void **state)
{
	*state = fx_new(NULL);
	held_call = NULL;
	held_disconnects = 0;
	last_n_fds = 0;
	last_fd = -1;
	return 0;
}

static int teardown(void **state)
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
static int feed(struct fx *f, const char *msg)
{
	return proto_conn_feed(f->conn, msg, strlen(msg) + 1, NULL, 0);
}

/* Take all queued replies as a JSON array. */
static struct json_object *replies(struct fx *f)
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

static size_t n_replies(struct fx *f)
{
	_cleanup_json_ struct json_object *a = replies(f);

	return json_object_array_length(a);
}

/* The only reply; asserts there is exactly one. */
static struct json_object *one_reply(struct fx *f)
{
	_cleanup_json_ struct json_object *a = replies(f);

	assert_int_equal(json_object_array_length(a), 1);
	return json_object_get(json_object_array_get_idx(a, 0));
}

static const char *get_str(struct json_object *o, const char *path)
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

static void assert_error(struct json_object *reply, const char *error, const char *key,
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
static void assert_protocol_error(struct fx *f, const char *what, int r, int expect,
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

/* ---- parser ---- */

TEST_FIXTURE(test_valid_call, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL;

	assert_int_equal(feed(f, "{\"method\":\"io.flashd.GetStatus\",\"parameters\":{}}"), 0);
	rep = one_reply(f);
	assert_null(get_str(rep, "error"));
	assert_null(get_str(rep, "continues"));
	assert_string_equal(get_str(rep, "parameters.booted"), "A");
	/* no "parameters", unknown top-level keys and whitespace are fine */
	json_object_put(rep);
	assert_int_equal(feed(f, " {\"method\":\"io.flashd.GetStatus\",\"x-extra\":[1]} \n"), 0);
	rep = one_reply(f);
	assert_string_equal(get_str(rep, "parameters.booted"), "A");
	assert_false(proto_conn_is_dead(f->conn));
}

TEST_FIXTURE(test_get_info, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL;
	struct json_object *p, *ifaces;

	assert_int_equal(feed(f, "{\"method\":\"org.varlink.service.GetInfo\"}"), 0);
	rep = one_reply(f);
	assert_null(get_str(rep, "error"));
	assert_true(json_object_object_get_ex(rep, "parameters", &p));
	assert_string_equal(get_str(p, "vendor"), "flashd");
	assert_string_equal(get_str(p, "product"), "flashd");
	assert_string_equal(get_str(p, "version"), PACKAGE_VERSION);
	assert_non_null(get_str(p, "url"));
	assert_true(json_object_object_get_ex(p, "interfaces", &ifaces));
	assert_int_equal(json_object_array_length(ifaces), 3);
	assert_string_equal(json_object_get_string(json_object_array_get_idx(ifaces, 0)),
			    "org.varlink.service");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(ifaces, 1)),
			    "io.flashd");
	assert_string_equal(json_object_get_string(json_object_array_get_idx(ifaces, 2)),
			    TEST_INTERFACE);

	json_object_put(rep);
	assert_int_equal(proto_server_set_info(f->server, "ACME", NULL, "9.9", NULL), 0);
	assert_int_equal(feed(f, "{\"method\":\"org.varlink.service.GetInfo\"}"), 0);
	rep = one_reply(f);
	assert_string_equal(get_str(rep, "parameters.vendor"), "ACME");
	assert_string_equal(get_str(rep, "parameters.product"), "flashd");
	assert_string_equal(get_str(rep, "parameters.version"), "9.9");
}

TEST_FIXTURE(test_get_interface_description, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL;

	assert_int_equal(feed(f, "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
				 "\"parameters\":{\"interface\":\"io.flashd\"}}"), 0);
	rep = one_reply(f);
	assert_null(get_str(rep, "error"));
	assert_string_equal(get_str(rep, "parameters.description"), flashd_idl());
	assert_non_null(strstr(flashd_idl(), "\ninterface io.flashd\n"));

	json_object_put(rep);
	assert_int_equal(feed(f, "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
				 "\"parameters\":{\"interface\":\"org.varlink.service\"}}"), 0);
	rep = one_reply(f);
	assert_string_equal(get_str(rep, "parameters.description"), proto_service_description);

	json_object_put(rep);
	assert_int_equal(feed(f, "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
				 "\"parameters\":{\"interface\":\"com.example.none\"}}"), 0);
	rep = one_reply(f);
	assert_error(rep, PROTO_ERROR_INTERFACE_NOT_FOUND, "interface", "com.example.none");

	json_object_put(rep);
	assert_int_equal(feed(f, "{\"method\":\"org.varlink.service.GetInterfaceDescription\"}"), 0);
	rep = one_reply(f);
	assert_error(rep, PROTO_ERROR_INVALID_PARAMETER, "parameter", "interface");
}

/* Messages the connection dies on: not JSON, not an object, not a
 * well-formed Varlink call. */
TEST(test_protocol_errors)
{
	static const struct {
		const char *msg;
		const char *reason;
	} cases[] = {
		/* framing */
		{ "{\"method\": \"io.flashd.GetStatus\"", "not valid JSON" },
		{ "hello", "not valid JSON" },
		{ "{\"method\":\"io.flashd.GetStatus\"} {}",
		  "not valid JSON: unexpected character (near byte 33)" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"x\":\"\xff\xfe\"}", "not valid JSON" },
		{ "[\"io.flashd.GetStatus\"]", "not a JSON object" },
		{ "42", "not a JSON object" },
		/* envelope */
		{ "{\"parameters\":{}}", "\"method\"" },
		{ "{\"method\":42}", "\"method\"" },
		{ "{\"method\":null}", "\"method\"" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"parameters\":[]}", "\"parameters\"" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"parameters\":\"x\"}", "\"parameters\"" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"more\":\"yes\"}", "\"more\"" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"oneway\":1}", "\"oneway\"" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"upgrade\":true}", "upgrade" },
		{ "{\"method\":\"io.flashd.GetStatus\",\"more\":true,\"oneway\":true}", "exclude" },
		{ "{\"method\":\"GetStatus\"}", "interface.Method" },
		{ "{\"method\":\"io.flashd.getStatus\"}", "interface.Method" },
		{ "{\"method\":\"io..flashd.GetStatus\"}", "interface.Method" },
		{ "{\"method\":\"io.flashd.\"}", "interface.Method" },
		{ "{\"method\":\"flashd.Get-Status\"}", "interface.Method" },
		{ "{\"method\":\"-io.flashd.GetStatus\"}", "interface.Method" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct fx *f = fx_new(NULL);

		assert_protocol_error(f, cases[i].msg, feed(f, cases[i].msg), -EBADMSG,
				      cases[i].reason);
		proto_server_free(f->server);
		free(f);
	}
	(void) state;
}

/* A call and the error it is answered with (key = value among its parameters). */
struct error_case {
	const char *msg, *error, *key, *value;
};

static void expect_errors(struct fx *f, const struct error_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		_cleanup_json_ struct json_object *rep = NULL;

		assert_int_equal(feed(f, c[i].msg), 0);
		rep = one_reply(f);
		assert_error(rep, c[i].error, c[i].key, c[i].value);
	}
}

TEST_FIXTURE(test_unknown_method, setup, teardown)
{
	static const struct error_case cases[] = {
		{ "{\"method\":\"io.flashd.Explode\"}",
		  PROTO_ERROR_METHOD_NOT_FOUND, "method", "io.flashd.Explode" },
		/* in the table, without a handler in this server: known, not implemented */
		{ "{\"method\":\"io.flashd.FlashInfo\"}",
		  PROTO_ERROR_METHOD_NOT_IMPLEMENTED, "method", "io.flashd.FlashInfo" },
		{ "{\"method\":\"com.example.thing.Explode\"}",
		  PROTO_ERROR_INTERFACE_NOT_FOUND, "interface", "com.example.thing" },
		/* the service interface's unknown methods too */
		{ "{\"method\":\"org.varlink.service.Reboot\"}",
		  PROTO_ERROR_METHOD_NOT_FOUND, "method", "org.varlink.service.Reboot" },
	};
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL;

	expect_errors(f, cases, ELEMENTSOF(cases));

	/* the connection goes on */
	assert_int_equal(feed(f, "{\"method\":\"io.flashd.GetStatus\"}"), 0);
	rep = one_reply(f);
	assert_string_equal(get_str(rep, "parameters.booted"), "A");
}

TEST_FIXTURE(test_parameters, setup, teardown)
{
	static const struct {
		const char *params;
		const char *bad; /* NULL: accepted */
	} cases[] = {
		{ "{}", "name" },
		{ "{\"value\":\"1\"}", "name" },
		{ "{\"name\":null}", "name" },
		{ "{\"name\":5}", "name" },
		{ "{\"name\":[\"x\"]}", "name" },
		{ "{\"name\":\"bootdelay\",\"value\":3}", "value" },
		{ "{\"name\":\"bootdelay\",\"force\":\"true\"}", "force" },
		{ "{\"name\":\"bootdelay\",\"bogus\":1}", "bogus" },
		/* an embedded NUL would cut the string short in C: refused */
		{ "{\"name\":\"bootdelay\",\"value\":\"3\\u0000; reset\"}", "value" },
		{ "{\"name\":\"boot\\u0000delay\"}", "name" },
		{ "{\"name\":\"bootdelay\"}", NULL },
		{ "{\"name\":\"bootdelay\",\"value\":null,\"force\":null}", NULL },
		{ "{\"name\":\"bootdelay\",\"value\":\"3\",\"force\":true}", NULL },
	};
	struct fx *f = *state;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_json_ struct json_object *rep = NULL;
		char msg[256];

		snprintf(msg, sizeof(msg), "{\"method\":\"io.flashd.SetEnv\",\"parameters\":%s}",
			 cases[i].params);
		assert_int_equal(feed(f, msg), 0);
		rep = one_reply(f);
		if (cases[i].bad) {
			assert_error(rep, PROTO_ERROR_INVALID_PARAMETER, "parameter", cases[i].bad);
		} else {
			assert_null(get_str(rep, "error"));
			assert_string_equal(get_str(rep, "parameters.name"), "bootdelay");
		}
	}
}

TEST_FIXTURE(test_oversized, setup, teardown)
{
	struct fx *f = *state, *f2;
	size_t n = PROTO_MAX_MESSAGE + 2;
	_cleanup_free_ char *big = malloc(n);

	assert_non_null(big);
	memset(big, ' ', n);
	/* in pieces: nothing happens until the limit is crossed */
	assert_int_equal(proto_conn_feed(f->conn, big, PROTO_MAX_MESSAGE, NULL, 0), 0);
	assert_false(proto_conn_is_dead(f->conn));
	assert_protocol_error(f, "1 MiB + 1 in pieces", proto_conn_feed(f->conn, big, 1, NULL, 0),
			      -EMSGSIZE, "longer than 1 MiB");

	/* Regression: an oversized message whose NUL arrives in the same read. */
	f2 = fx_new(NULL);
	big[n - 1] = '\0';
	assert_protocol_error(f2, "1 MiB + 1 and its NUL", proto_conn_feed(f2->conn, big, n, NULL, 0),
			      -EMSGSIZE, "longer than 1 MiB");
	proto_server_free(f2->server);
	free(f2);
}

TEST_FIXTURE(test_large_but_allowed, setup, teardown)
{
	struct fx *f = *state;
	size_t vlen = PROTO_MAX_MESSAGE - 100;
	_cleanup_free_ char *msg = malloc(vlen + 100);
	_cleanup_json_ struct json_object *rep = NULL;
	int k;

	assert_non_null(msg);
	k = sprintf(msg, "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"x\",\"value\":\"");
	memset(msg + k, 'v', vlen - k - 4);
	strcpy(msg + vlen - 4, "\"}}");
	assert_true(strlen(msg) <= PROTO_MAX_MESSAGE);
	assert_int_equal(feed(f, msg), 0);
	rep = one_reply(f);
	assert_null(get_str(rep, "error"));
	assert_int_equal(strlen(get_str(rep, "parameters.value")), vlen - k - 4);
}

static const char two_calls[] =
	"{\"method\":\"io.flashd.GetStatus\"}\0"
	"{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"n\",\"value\":\"\xc3\xa9\"}}";

/* Every split of a two-message stream into two reads gives the same
 * replies, and no reply comes before its message's NUL. */
TEST(test_split_everywhere)
{
	size_t total = sizeof(two_calls); /* with both NULs */
	size_t first_nul = strlen(two_calls);

	for (size_t k = 0; k <= total; k++) {
		struct fx *f = fx_new(NULL);
		_cleanup_json_ struct json_object *a = NULL, *b = NULL;

		assert_int_equal(proto_conn_feed(f->conn, two_calls, k, NULL, 0), 0);
		a = replies(f);
		assert_int_equal(json_object_array_length(a), (k > first_nul) + (k == total));
		assert_int_equal(proto_conn_feed(f->conn, two_calls + k, total - k, NULL, 0), 0);
		b = replies(f);
		assert_int_equal(json_object_array_length(a) + json_object_array_length(b), 2);
		for (size_t i = 0; i < json_object_array_length(b); i++)
			json_object_array_add(a, json_object_get(json_object_array_get_idx(b, i)));
		assert_string_equal(get_str(json_object_array_get_idx(a, 0), "parameters.booted"), "A");
		assert_string_equal(get_str(json_object_array_get_idx(a, 1), "parameters.value"),
				    "\xc3\xa9");
		proto_server_free(f->server);
		free(f);
	}
	(void) state;
}

TEST_FIXTURE(test_byte_by_byte, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *a = NULL;

	for (size_t i = 0; i < sizeof(two_calls); i++)
		assert_int_equal(proto_conn_feed(f->conn, two_calls + i, 1, NULL, 0), 0);
	a = replies(f);
	assert_int_equal(json_object_array_length(a), 2);
	assert_string_equal(get_str(json_object_array_get_idx(a, 0), "parameters.booted"), "A");
	assert_string_equal(get_str(json_object_array_get_idx(a, 1), "parameters.name"), "n");
}

TEST_FIXTURE(test_multiple_in_one_read, setup, teardown)
{
	static const char three[] =
		"{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"a\"}}\0"
		"{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"b\"}}\0"
		"{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"c\"}}";
	struct fx *f = *state;
	_cleanup_json_ struct json_object *a = NULL;

	assert_int_equal(proto_conn_feed(f->conn, three, sizeof(three), NULL, 0), 0);
	a = replies(f);
	assert_int_equal(json_object_array_length(a), 3);
	assert_string_equal(get_str(json_object_array_get_idx(a, 0), "parameters.name"), "a");
	assert_string_equal(get_str(json_object_array_get_idx(a, 1), "parameters.name"), "b");
	assert_string_equal(get_str(json_object_array_get_idx(a, 2), "parameters.name"), "c");
}

TEST_FIXTURE(test_oneway, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL;

	assert_int_equal(feed(f, "{\"method\":\"io.flashd.GetStatus\",\"oneway\":true}"), 0);
	/* errors are not sent for oneway calls either */
	assert_int_equal(feed(f, "{\"method\":\"io.flashd.Nope\",\"oneway\":true}"), 0);
	assert_int_equal(feed(f, "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"z\"}}"), 0);
	rep = one_reply(f);
	assert_string_equal(get_str(rep, "parameters.name"), "z");
}

/* A call answered later holds the calls behind it; replies stay in order. */
TEST_FIXTURE(test_async_in_order, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *a = NULL, *b = NULL;
	static const char msgs[] =
		"{\"method\":\"io.flashd.Activate\",\"parameters\":{\"slot\":\"B\"}}\0"
		"{\"method\":\"io.flashd.GetStatus\"}";

	assert_int_equal(proto_conn_feed(f->conn, msgs, sizeof(msgs), NULL, 0), 0);
	assert_non_null(held_call);
	assert_string_equal(proto_call_method(held_call), "io.flashd.Activate");
	a = replies(f);
	assert_int_equal(json_object_array_length(a), 0);

	assert_int_equal(proto_reply(held_call, NULL), 0);
	assert_int_equal(proto_reply(held_call, NULL), -EALREADY);
	assert_int_equal(proto_conn_process(f->conn), 0);
	b = replies(f);
	assert_int_equal(json_object_array_length(b), 2);
	assert_null(get_str(json_object_array_get_idx(b, 0), "error"));
	assert_string_equal(get_str(json_object_array_get_idx(b, 1), "parameters.booted"), "A");
	assert_int_equal(held_disconnects, 0);
}

TEST_FIXTURE(test_disconnect_handler, setup, teardown)
{
	struct fx *f = *state;

	assert_int_equal(feed(f, "{\"method\":\"io.flashd.Activate\",\"parameters\":{\"slot\":\"B\"}}"), 0);
	assert_non_null(held_call);
	assert_true(proto_call_is_connected(held_call));
	proto_conn_free(f->conn);
	f->conn = NULL;
	assert_int_equal(held_disconnects, 1);
	assert_false(proto_call_is_connected(held_call));
	assert_int_equal(proto_reply(held_call, NULL), -ENOTCONN);
	assert_int_equal(proto_server_n_connections(f->server), 0);
}

TEST_FIXTURE(test_handler_failures, setup, teardown)
{
	static const struct error_case cases[] = {
		{ "{\"method\":\"io.flashd.Cancel\"}", PROTO_ERROR_INTERNAL, "errno_name", "EBUSY" },
		{ "{\"method\":\"io.flashd.MarkGood\"}", PROTO_ERROR_INTERNAL, "errno_name", "ENOMSG" },
		{ "{\"method\":\"io.flashd.OverlayReset\"}", PROTO_ERROR_PERMISSION_DENIED, NULL, NULL },
	};

	expect_errors(*state, cases, ELEMENTSOF(cases));
}

TEST_FIXTURE(test_more, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL, *a = NULL;

	assert_int_equal(feed(f, "{\"method\":\"" TEST_INTERFACE ".Stream\"}"), 0);
	rep = one_reply(f);
	assert_error(rep, PROTO_ERROR_EXPECTED_MORE, NULL, NULL);

	assert_int_equal(feed(f, "{\"method\":\"" TEST_INTERFACE ".Stream\",\"more\":true}"), 0);
	a = replies(f);
	assert_int_equal(json_object_array_length(a), 4);
	for (int i = 0; i < 3; i++) {
		struct json_object *r = json_object_array_get_idx(a, i), *c;

		assert_true(json_object_object_get_ex(r, "continues", &c));
		assert_true(json_object_get_boolean(c));
		assert_int_equal(atoi(get_str(r, "parameters.percent")), i * 33);
	}
	assert_null(get_str(json_object_array_get_idx(a, 3), "continues"));
	assert_null(get_str(json_object_array_get_idx(a, 3), "error"));
}

/* ---- authorization ---- */

TEST(test_peer_authorized)
{
	struct proto_peer p = { .pid = 99 };

	p.uid = 0;
	assert_int_equal(proto_peer_authorized(&p, (gid_t)-1), 1);
	p.uid = 1001, p.gid = 1001, p.n_groups = 2, p.groups[0] = 4242, p.groups[1] = 27;
	assert_int_equal(proto_peer_authorized(&p, (gid_t)-1), 0); /* root only */
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);      /* supplementary */
	assert_int_equal(proto_peer_authorized(&p, 1001), 1);      /* primary */
	assert_int_equal(proto_peer_authorized(&p, 5555), 0);
	p.n_groups = 0; /* the process dropped its groups: what its user may have counts not */
	assert_int_equal(proto_peer_authorized(&p, 4242), 0);
	p.gid = 4242; /* e.g. sg/newgrp: the process's gid counts */
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);
	/* a uid without a passwd entry is judged by its groups like any other */
	p.uid = 7777, p.gid = 7777;
	assert_int_equal(proto_peer_authorized(&p, 4242), 0);
	p.n_groups = 1, p.groups[0] = 4242;
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);
	p.gid = 4242, p.n_groups = 0;
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);
	(void) state;
}

static void auth_case(gid_t group, uid_t uid, gid_t gid, const char *msg, bool allowed)
{
	struct proto_peer peer = { .pid = 42, .uid = uid, .gid = gid };
	_cleanup_json_ struct json_object *rep = NULL;
	struct fx *f;

	/* uid 1001 runs with the supplementary groups 4242 and 27 */
	if (uid == 1001)
		peer.n_groups = 2, peer.groups[0] = 4242, peer.groups[1] = 27;
	f = fx_new(&peer);

	proto_server_set_auth_group(f->server, group);
	assert_int_equal(feed(f, msg), 0);
	rep = one_reply(f);
	if (allowed)
		assert_null(get_str(rep, "error"));
	else
		assert_error(rep, PROTO_ERROR_PERMISSION_DENIED, NULL, NULL);
	assert_int_equal(proto_conn_peer(f->conn)->uid, uid);
	proto_server_free(f->server);
	free(f);
}

TEST(test_dispatch_auth)
{
	static const char set[] = "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"x\"}}";
	static const char get[] = "{\"method\":\"io.flashd.GetStatus\"}";
	static const char bad_params[] = "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{}}";

	auth_case((gid_t)-1, 0, 0, set, true);
	auth_case((gid_t)-1, 1001, 1001, set, false);
	auth_case((gid_t)-1, 1001, 1001, get, true);   /* reading is open */
	auth_case(4242, 1001, 1001, set, true);        /* member of the socket group */
	auth_case(4242, 1002, 1002, set, false);
	auth_case(4242, 1003, 1003, get, true);
	/* refused before the parameters are looked at */
	auth_case(4242, 1002, 1002, bad_params, false);
	(void) state;
}

/* Connection limits (issue 13 item 10): users without rights get at most
 * PROTO_MAX_CONNECTIONS_PER_UID each and all of them together all but
 * PROTO_RESERVED_CONNECTIONS; root and the socket group get the rest. A
 * newcomer to a full share takes the place of the longest-idle connection
 * of the uid holding the most, if that uid holds more than the newcomer
 * (issue 32 item 10: a seventh uid was locked out by six holding 8). */
TEST(test_connection_limits)
{
	_cleanup_proto_server_ struct proto_server *s = NULL;
	struct proto_peer p = { .pid = 1 };
	struct proto_conn *c;
	unsigned n = 0;

	assert_int_equal(proto_server_new(NULL, -1, test_methods, NULL, &s), 0);
	proto_server_set_auth_group(s, 4242);
	/* one uid: its limit */
	p.uid = p.gid = 1000;
	for (unsigned i = 0; i < PROTO_MAX_CONNECTIONS_PER_UID; i++, n++)
		assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_conn_new(s, -1, &p, &c), -EUSERS);
	/* more uids: up to the unprivileged share */
	for (uid_t u = 1001; n < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS; u++) {
		p.uid = p.gid = u;
		for (unsigned i = 0; i < PROTO_MAX_CONNECTIONS_PER_UID &&
		     n < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS; i++, n++)
			assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	}
	/* a fresh uid still gets in: one connection of a uid holding 8 goes */
	p.uid = p.gid = 2000;
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), n);
	assert_int_equal(proto_server_uid_connections(s, 2000), 1);
	/* and again, while others hold more than it */
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), n);
	assert_int_equal(proto_server_uid_connections(s, 2000), 2);
	/* the reserve: root, and a process with the socket group */
	p.uid = 0;
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	n++;
	p.uid = 2001, p.gid = 2001, p.n_groups = 1, p.groups[0] = 4242;
	for (; n < PROTO_MAX_CONNECTIONS; n++)
		assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), PROTO_MAX_CONNECTIONS);
	/* all full: root takes the place of a user without rights */
	p.uid = 0, p.n_groups = 0;
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), PROTO_MAX_CONNECTIONS);
	(void) state;
}

/* Shares equal: nobody takes another's place; and root, with nothing
 * unprivileged to close, is refused at the total. */
TEST(test_connection_share_equal)
{
	_cleanup_proto_server_ struct proto_server *s = NULL;
	struct proto_peer p = { .pid = 1 };
	struct proto_conn *c;
	unsigned n;

	assert_int_equal(proto_server_new(NULL, -1, test_methods, NULL, &s), 0);
	for (n = 0; n < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS; n++) {
		p.uid = p.gid = 1000 + n;
		assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	}
	p.uid = p.gid = 1000; /* holds 1, as everyone does */
	assert_int_equal(proto_conn_new(s, -1, &p, &c), -ENOSPC);
	p.uid = p.gid = 5000; /* holds none: one of the others' goes */
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_uid_connections(s, 5000), 1);
	assert_int_equal(proto_server_n_connections(s), n);

	_cleanup_proto_server_ struct proto_server *r = NULL;
	assert_int_equal(proto_server_new(NULL, -1, test_methods, NULL, &r), 0);
	p.uid = p.gid = 0;
	for (n = 0; n < PROTO_MAX_CONNECTIONS; n++)
		assert_int_equal(proto_conn_new(r, -1, &p, &c), 0);
	assert_int_equal(proto_conn_new(r, -1, &p, &c), -EMFILE);
	(void) state;
}

TEST_FIXTURE(test_auth_group_name, setup, teardown)
{
	struct fx *f = *state;

	/* the real group database: "root" exists everywhere */
	assert_int_equal(proto_server_set_auth_group_name(f->server, "root"), 0);
	assert_int_equal(proto_server_set_auth_group_name(f->server, "no-such-group-xyz"), -ENOENT);
}

/* ---- fd passing ---- */

static bool fd_is_closed_peer(int wfd)
{
	/* the read end is gone when writing fails with EPIPE */
	return write(wfd, "x", 1) < 0 && errno == EPIPE;
}

TEST_FIXTURE(test_fd_passing, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *rep = NULL;
	static const char get[] = "{\"method\":\"io.flashd.GetStatus\"}";
	static const char inst[] = "{\"method\":\"io.flashd.Install\",\"parameters\":{\"fd\":0}}";
	int p[2];
	char buf[8];

	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	/* GetStatus first (no fd), then Install with the fd on its first byte */
	assert_int_equal(proto_conn_feed(f->conn, get, sizeof(get), NULL, 0), 0);
	assert_int_equal(proto_conn_feed(f->conn, inst, sizeof(inst), &p[0], 1), 0);
	json_object_put(replies(f));
	assert_int_equal(last_n_fds, 1);
	assert_true(last_fd >= 0);
	assert_int_equal(write(p[1], "bundle", 6), 6);
	assert_int_equal(read(last_fd, buf, sizeof(buf)), 6);
	assert_memory_equal(buf, "bundle", 6);
	close(p[1]);

	/* an fd sent with a method that takes none is closed */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(proto_conn_feed(f->conn, get, sizeof(get), &p[0], 1), 0);
	rep = one_reply(f);
	assert_string_equal(get_str(rep, "parameters.booted"), "A");
	assert_true(fd_is_closed_peer(p[1]));
	close(p[1]);
}

TEST_FIXTURE(test_fd_with_split_message, setup, teardown)
{
	struct fx *f = *state;
	static const char inst[] = "{\"method\":\"io.flashd.Install\",\"parameters\":{\"fd\":0}}";
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	/* fd arrives with the second half: still the same message */
	assert_int_equal(proto_conn_feed(f->conn, inst, 10, NULL, 0), 0);
	assert_int_equal(proto_conn_feed(f->conn, inst + 10, sizeof(inst) - 10, &p[0], 1), 0);
	json_object_put(replies(f));
	assert_int_equal(last_n_fds, 1);
	close(p[1]);
}

TEST_FIXTURE(test_too_many_fds, setup, teardown)
{
	struct fx *f = *state;
	int fds[PROTO_MAX_PENDING_FDS + 1], w[PROTO_MAX_PENDING_FDS + 1];

	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
		int p[2];

		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		fds[i] = p[0];
		w[i] = p[1];
	}
	assert_protocol_error(f, "too many fds",
			      proto_conn_feed(f->conn, "{", 1, fds, ELEMENTSOF(fds)), -ENOBUFS,
			      "file descriptors");
	proto_conn_free(f->conn);
	f->conn = NULL;
	for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
		assert_true(fd_is_closed_peer(w[i])); /* none leaked */
		close(w[i]);
	}
}

/* ---- the IDL ---- */

/* A small parser of the Varlink interface definition language (no varlink
 * tooling is packaged for Debian 12): checks the syntax and collects the
 * input parameters of each method. */
struct idl {
	const char *p;
	char err[160];
	char types[32][32];
	unsigned n_types;
	char refs[64][32];
	unsigned n_refs;
	char errors[32][32];
	unsigned n_errors;
};

static void idl_skip(struct idl *x)
{
	for (;;) {
		while (isspace((unsigned char) *x->p))
			x->p++;
		if (*x->p != '#')
			return;
		while (*x->p && *x->p != '\n')
			x->p++;
	}
}

static bool idl_word(struct idl *x, char *buf, size_t len)
{
	size_t n = 0;

	idl_skip(x);
	while (isalnum((unsigned char) x->p[n]) || x->p[n] == '_' || x->p[n] == '.')
		n++;
	if (n == 0 || n >= len)
		return false;
	memcpy(buf, x->p, n);
	buf[n] = 0;
	x->p += n;
	return true;
}

static bool idl_tok(struct idl *x, const char *t)
{
	idl_skip(x);
	if (strncmp(x->p, t, strlen(t)))
		return false;
	x->p += strlen(t);
	return true;
}

static bool field_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!islower((unsigned char) s[0]) || s[n - 1] == '_')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char) s[i]) || s[i] == '_'))
			return false;
	return true;
}

static bool type_name_ok(const char *s)
{
	if (!isupper((unsigned char) s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char) *s))
			return false;
	return true;
}

struct idl_field {
	char name[32];
	char type[32]; /* the outermost type word, e.g. "string", "[]", "Slot" */
	bool nullable;
};

#define IDL_MAX_FIELDS 32
static bool idl_struct(struct idl *x, struct idl_field *fields, unsigned *n_fields);

static bool idl_type(struct idl *x, struct idl_field *f)
{
	char w[32];

	f->nullable = idl_tok(x, "?");
	if (idl_tok(x, "[]")) {
		snprintf(f->type, sizeof(f->type), "[]");
		return idl_type(x, &(struct idl_field) { 0 });
	}
	if (idl_tok(x, "[string]")) {
		snprintf(f->type, sizeof(f->type), "[string]");
		return idl_type(x, &(struct idl_field) { 0 });
	}
	idl_skip(x);
	if (*x->p == '(') {
		snprintf(f->type, sizeof(f->type), "()");
		return idl_struct(x, NULL, NULL);
	}
	if (!idl_word(x, w, sizeof(w))) {
		snprintf(x->err, sizeof(x->err), "type expected near \"%.20s\"", x->p);
		return false;
	}
	snprintf(f->type, sizeof(f->type), "%s", w);
	if (!strcmp(w, "bool") || !strcmp(w, "int") || !strcmp(w, "float") ||
	    !strcmp(w, "string") || !strcmp(w, "object"))
		return true;
	if (!type_name_ok(w)) {
		snprintf(x->err, sizeof(x->err), "bad type name \"%s\"", w);
		return false;
	}
	if (x->n_refs < ELEMENTSOF(x->refs))
		snprintf(x->refs[x->n_refs++], 32, "%s", w);
	return true;
}

/* "(a: T, b: U)" or an enum "(x, y, z)" or "()" */
static bool idl_struct(struct idl *x, struct idl_field *fields, unsigned *n_fields)
{
	unsigned n = 0;
	int is_enum = -1;

	if (!idl_tok(x, "(")) {
		snprintf(x->err, sizeof(x->err), "'(' expected near \"%.20s\"", x->p);
		return false;
	}
	if (idl_tok(x, ")"))
		goto done;
	for (;;) {
		struct idl_field f = { 0 };

		if (!idl_word(x, f.name, sizeof(f.name)) || !field_name_ok(f.name)) {
			snprintf(x->err, sizeof(x->err), "bad field name near \"%.20s\"", x->p);
			return false;
		}
		if (idl_tok(x, ":")) {
			if (is_enum == 1 || !idl_type(x, &f))
				return false;
			is_enum = 0;
		} else {
			if (is_enum == 0) {
				snprintf(x->err, sizeof(x->err), "':' expected after \"%s\"", f.name);
				return false;
			}
			is_enum = 1;
		}
		if (fields && n < IDL_MAX_FIELDS)
			fields[n] = f;
		n++;
		if (idl_tok(x, ")"))
			break;
		if (!idl_tok(x, ",")) {
			snprintf(x->err, sizeof(x->err), "',' or ')' expected near \"%.20s\"", x->p);
			return false;
		}
	}
done:
	if (n_fields)
		*n_fields = n;
	return true;
}

struct idl_method {
	char name[32];
	struct idl_field in[IDL_MAX_FIELDS];
	unsigned n_in;
	struct idl_field out[IDL_MAX_FIELDS];
	unsigned n_out;
};

/* Parse text; fill methods. Returns false with x->err set on a syntax error. */
static bool idl_parse(struct idl *x, const char *text, const char *iface,
		      struct idl_method *out, unsigned *n_methods)
{
	char w[32], name[32];

	x->p = text;
	*n_methods = 0;
	if (!idl_word(x, w, sizeof(w)) || strcmp(w, "interface") || !idl_word(x, name, sizeof(name)) ||
	    strcmp(name, iface)) {
		snprintf(x->err, sizeof(x->err), "does not start with 'interface %s'", iface);
		return false;
	}
	for (;;) {
		idl_skip(x);
		if (!*x->p)
			break;
		if (!idl_word(x, w, sizeof(w)) || !idl_word(x, name, sizeof(name)) ||
		    !type_name_ok(name)) {
			snprintf(x->err, sizeof(x->err), "member expected near \"%.20s\"", x->p);
			return false;
		}
		if (!strcmp(w, "type")) {
			snprintf(x->types[x->n_types++], 32, "%s", name);
			if (!idl_struct(x, NULL, NULL))
				return false;
		} else if (!strcmp(w, "method")) {
			struct idl_method *m = &out[(*n_methods)++];

			snprintf(m->name, sizeof(m->name), "%s", name);
			if (!idl_struct(x, m->in, &m->n_in) || !idl_tok(x, "->") ||
			    !idl_struct(x, m->out, &m->n_out)) {
				if (!x->err[0])
					snprintf(x->err, sizeof(x->err), "method %s: '->' expected", name);
				return false;
			}
		} else if (!strcmp(w, "error")) {
			if (x->n_errors < ELEMENTSOF(x->errors))
				snprintf(x->errors[x->n_errors++], 32, "%s", name);
			if (!idl_struct(x, NULL, NULL))
				return false;
		} else {
			snprintf(x->err, sizeof(x->err), "unknown keyword \"%s\"", w);
			return false;
		}
	}
	for (unsigned i = 0; i < x->n_refs; i++) {
		bool found = false;

		for (unsigned k = 0; k < x->n_types; k++)
			found |= !strcmp(x->refs[i], x->types[k]);
		if (!found) {
			snprintf(x->err, sizeof(x->err), "type %s is used but not defined", x->refs[i]);
			return false;
		}
	}
	return true;
}

/* What the binary carries, inflated, is the source file to the byte. */
TEST(test_idl_is_the_source)
{
	_cleanup_free_ char *src = NULL;
	size_t len;

	assert_int_equal(util_read_file(TOP_SRCDIR "/lib/varlink/io.flashd.varlink", 1 << 20,
					&src, &len), 0);
	assert_int_equal(strlen(flashd_idl()), len);
	assert_memory_equal(flashd_idl(), src, len);
}

TEST(test_idl_syntax)
{
	struct idl_method ms[32];
	unsigned n;
	struct idl x = { 0 };

	if (!idl_parse(&x, flashd_idl(), "io.flashd", ms, &n))
		fail_msg("io.flashd.varlink: %s", x.err);
	assert_int_equal(n, _PROTO_FLASHD_METHOD_MAX);
	memset(&x, 0, sizeof(x));
	if (!idl_parse(&x, proto_service_description, "org.varlink.service", ms, &n))
		fail_msg("org.varlink.service: %s", x.err);
	assert_int_equal(n, 2);

	/* the parser itself rejects what it should */
	memset(&x, 0, sizeof(x));
	assert_false(idl_parse(&x, "interface io.flashd\nmethod A(Bad: int) -> ()\n", "io.flashd", ms, &n));
	memset(&x, 0, sizeof(x));
	assert_false(idl_parse(&x, "interface io.flashd\nmethod A(x: Missing) -> ()\n", "io.flashd", ms, &n));
	memset(&x, 0, sizeof(x));
	assert_false(idl_parse(&x, "interface io.flashd\nmethod A(x: int)\n", "io.flashd", ms, &n));
	(void) state;
}

static const struct proto_method *table_method(const char *name)
{
	for (const struct proto_method *m = proto_flashd_methods; m->name; m++)
		if (!strcmp(m->name, name))
			return m;
	return NULL;
}

/* The size of the C type the dispatcher stores a parameter as. */
static size_t param_size(enum proto_type type)
{
	static const size_t sizes[_PROTO_TYPE_MAX] = {
		[PROTO_TYPE_BOOL] = sizeof(struct proto_bool),
		[PROTO_TYPE_INT] = sizeof(struct proto_int),
		[PROTO_TYPE_FLOAT] = sizeof(struct proto_float),
		[PROTO_TYPE_STRING] = sizeof(const char *),
		[PROTO_TYPE_OBJECT] = sizeof(struct json_object *),
		[PROTO_TYPE_ARRAY] = sizeof(struct json_object *),
	};
	return sizes[type];
}

/* A typed declaration: every field inside its struct, none overlapping
 * another. */
static void check_struct(const char *name, const char *what, const struct proto_param *t,
			 size_t size)
{
	for (unsigned k = 0; t[k].name; k++) {
		if (t[k].offset + param_size(t[k].type) > size)
			fail_msg("%s: %s field %s lies outside its struct", name, what, t[k].name);
		for (unsigned o = 0; o < k; o++)
			if (t[o].offset < t[k].offset + param_size(t[k].type) &&
			    t[k].offset < t[o].offset + param_size(t[o].type))
				fail_msg("%s: %s fields %s and %s overlap", name, what, t[o].name,
					 t[k].name);
	}
}

/* A method with parameters is filled into its input struct (input_size);
 * a method without takes no struct. A typed reply (reply_size) places its
 * fields in its reply struct. */
static void check_typed(const struct proto_method *m)
{
	const struct proto_param *t = m->params;

	if (!t || !t->name) {
		if (m->input_size)
			fail_msg("%s: no parameters but an input struct", m->name);
	} else if (!m->input_size) {
		fail_msg("%s: parameters without an input struct (typed dispatch)", m->name);
	} else {
		check_struct(m->name, "parameter", t, m->input_size);
	}
	if (m->reply_size)
		check_struct(m->name, "reply", m->reply, m->reply_size);
}

/* One method's reply: the table's fields are the IDL's outputs, in order;
 * a nested type ("()", a named type, "[string]T") is an object, "[]T" an
 * array; required is the IDL's type without "?". */
static void check_reply(const struct idl_method *im, const struct proto_param *t)
{
	unsigned k = 0;

	if (!t)
		fail_msg("%s: the table declares no reply", im->name);
	for (; t[k].name; k++) {
		const struct idl_field *f = &im->out[k];
		const char *w = f->type;
		enum proto_type want;

		if (k >= im->n_out)
			fail_msg("%s: the table's reply has field %s, the IDL's does not", im->name,
				 t[k].name);
		want = !strcmp(w, "bool") ? PROTO_TYPE_BOOL : !strcmp(w, "int") ? PROTO_TYPE_INT :
		       !strcmp(w, "float") ? PROTO_TYPE_FLOAT : !strcmp(w, "string") ?
		       PROTO_TYPE_STRING : !strcmp(w, "[]") ? PROTO_TYPE_ARRAY : PROTO_TYPE_OBJECT;
		if (strcmp(t[k].name, f->name) || t[k].type != want || t[k].required == f->nullable)
			fail_msg("%s: reply field %u: table %s/%d/%s, IDL %s: %s%s", im->name, k,
				 t[k].name, t[k].type, t[k].required ? "required" : "optional",
				 f->name, f->nullable ? "?" : "", f->type);
	}
	if (k != im->n_out)
		fail_msg("%s: the IDL's reply has field %s, the table's does not", im->name,
			 im->out[k].name);
}

/* One method: the table's parameters are the IDL's inputs, in order, with
 * the same type and the same optionality. */
static void check_params(const struct idl_method *im, const struct proto_param *t)
{
	static const char *const type_words[_PROTO_TYPE_MAX] = {
		[PROTO_TYPE_BOOL] = "bool", [PROTO_TYPE_INT] = "int",
		[PROTO_TYPE_FLOAT] = "float", [PROTO_TYPE_STRING] = "string",
		[PROTO_TYPE_OBJECT] = "object", [PROTO_TYPE_ARRAY] = "[]",
	};
	unsigned k = 0;

	for (; t && t[k].name; k++) {
		if (k >= im->n_in)
			fail_msg("%s: the table has parameter %s, the IDL does not", im->name,
				 t[k].name);
		if (strcmp(t[k].name, im->in[k].name) || strcmp(type_words[t[k].type], im->in[k].type) ||
		    t[k].required == im->in[k].nullable)
			fail_msg("%s: parameter %u: table %s/%s/%s, IDL %s: %s%s", im->name, k,
				 t[k].name, type_words[t[k].type], t[k].required ? "required" : "optional",
				 im->in[k].name, im->in[k].nullable ? "?" : "", im->in[k].type);
	}
	if (k != im->n_in)
		fail_msg("%s: the IDL has parameter %s, the table does not", im->name, im->in[k].name);
}

/* The one io.flashd table (proto_flashd.c) and the IDL name the same
 * methods with the same parameters. */
TEST(test_idl_matches_table)
{
	struct idl_method ms[32];
	struct idl x = { 0 };
	unsigned n;

	assert_true(idl_parse(&x, flashd_idl(), "io.flashd", ms, &n));
	for (unsigned i = 0; i < n; i++) {
		const struct proto_method *m = table_method(ms[i].name);

		if (!m)
			fail_msg("IDL method %s is not in the io.flashd table", ms[i].name);
		check_params(&ms[i], m->params);
		check_typed(m);
		check_reply(&ms[i], m->reply);
	}
	for (const struct proto_method *m = proto_flashd_methods; m->name; m++) {
		bool found = false;

		assert_string_equal(m->interface, PROTO_FLASHD_INTERFACE);
		assert_null(m->handler);
		for (unsigned i = 0; i < n; i++)
			found |= !strcmp(ms[i].name, m->name);
		if (!found)
			fail_msg("table method %s is not in the IDL", m->name);
	}
	assert_int_equal(n, _PROTO_FLASHD_METHOD_MAX);
	(void) state;
}

/* The errors of the table module are the IDL's, both ways. */
TEST(test_idl_errors)
{
	struct idl_method ms[32];
	struct idl x = { 0 };
	unsigned n, n_table = 0;

	assert_true(idl_parse(&x, flashd_idl(), "io.flashd", ms, &n));
	for (const char *const *e = proto_flashd_errors; *e; e++, n_table++) {
		bool found = false;

		if (strncmp(*e, "io.flashd.", 10))
			fail_msg("%s is not an io.flashd error", *e);
		for (unsigned i = 0; i < x.n_errors; i++)
			found |= !strcmp(x.errors[i], *e + 10);
		if (!found)
			fail_msg("io.flashd.varlink does not define %s", *e);
	}
	for (unsigned i = 0; i < x.n_errors; i++) {
		bool found = false;

		for (const char *const *e = proto_flashd_errors; *e; e++)
			found |= !strcmp(x.errors[i], *e + 10);
		if (!found)
			fail_msg("IDL error %s is not in proto_flashd_errors", x.errors[i]);
	}
	assert_int_equal(n_table, x.n_errors);
	(void) state;
}

static char logged[512];

static void log_hook(void *userdata, const struct proto_peer *peer, const char *msg)
{
	snprintf(logged, sizeof(logged), "pid %d uid %u: %s", (int) peer->pid, (unsigned) peer->uid,
		 msg);
}

TEST(test_log_hook)
{
	struct proto_peer peer = { .pid = 4711, .uid = 1002, .gid = 1002 };
	struct fx *f = fx_new(&peer);

	proto_server_set_log(f->server, log_hook, NULL);
	logged[0] = 0;
	assert_int_equal(feed(f, "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"x\"}}"), 0);
	assert_string_equal(logged, "pid 4711 uid 1002: io.flashd.SetEnv refused: uid 1002 is not root");
	json_object_put(replies(f));
	assert_int_equal(feed(f, "{oops"), -EBADMSG);
	assert_non_null(strstr(logged, "pid 4711 uid 1002: protocol error: message is not valid JSON"));
	assert_non_null(strstr(logged, "closing the connection"));
	proto_server_free(f->server);
	free(f);
	(void) state;
}

TEST(test_server_new_validates)
{
	static const struct proto_method bad_iface[] = {
		{ "flashd", "GetStatus", m_get_status, 0, NULL, 0, proto_params_none, 0 }, { NULL },
	};
	static const struct proto_method bad_name[] = {
		{ "io.flashd", "get_status", m_get_status, 0, NULL, 0, proto_params_none, 0 }, { NULL },
	};
	struct proto_server *s = NULL;

	assert_int_equal(proto_server_new(NULL, -1, bad_iface, NULL, &s), -EINVAL);
	assert_int_equal(proto_server_new(NULL, -1, bad_name, NULL, &s), -EINVAL);
	assert_int_equal(proto_server_new(NULL, 3, test_methods, NULL, &s), -EINVAL);
	assert_null(s);
	(void) state;
}


/* The handlers above answer with what they saw (SetEnv echoes its
 * parameters, Install counts its fds): their replies are declared here,
 * since the dispatcher refuses a field the method does not declare
 * (test_reply_check has the table's own declarations). */
static const struct proto_param echo_reply[] = {
	{ "name", PROTO_TYPE_STRING, false, 0 },
	{ "value", PROTO_TYPE_STRING, false, 0 },
	{ "force", PROTO_TYPE_BOOL, false, 0 },
	{ NULL },
};
static const struct proto_param n_fds_reply[] = {
	{ "n_fds", PROTO_TYPE_INT, true, 0 },
	{ NULL },
};

static int group_setup(void **state)
{
	(void)state;
	/* the io.flashd table with the handlers above, Stream = m_rollback */
	test_methods_bind(handlers, m_rollback);
	test_methods[PROTO_FLASHD_SET_ENV].reply = echo_reply;
	test_methods[PROTO_FLASHD_INSTALL].reply = n_fds_reply;
	return 0;
}

TEST_GROUP(group_setup, NULL);
