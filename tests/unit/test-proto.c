/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the Varlink protocol core: framing, parsing, dispatch,
 * parameter checks, fd passing (authorization: test-proto-auth; the
 * io.flashd IDL: test-proto-idl). The
 * connections here have no socket: bytes are fed in with proto_conn_feed()
 * and replies read back from the output queue. Authorization looks at the
 * peer's credentials only (uid, gid, supplementary groups), no user
 * database, so the peers here are plain structs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto-fixture.h"
#include "testlib.h"

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

TEST_GROUP(group_setup, NULL);
