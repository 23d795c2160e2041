/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Typed dispatch of io.flashd through the real dispatcher and the one
 * method table (proto_flashd.c), as the daemon binds it: the parameters a
 * handler reads are the struct the dispatcher filled from the method's
 * declared fields; an unknown field, a wrong type or a missing required
 * field never reaches the handler; a reply carrying a field the IDL does
 * not declare (or of the wrong type) is refused with an internal error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "proto.h"
#include "proto_flashd.h"
#include "testlib.h"

static unsigned handled;
static struct proto_flashd_install got_install;
static struct proto_flashd_set_env got_set_env;
static char got_slot[32], got_name[32], got_value[32];
/* what the GetEnv handler answers (tests set it) */
static const char *get_env_reply;
static char logged[512];
static unsigned n_logged;

static int m_install(struct proto_call *call, struct json_object *params, void *userdata)
{
	const struct proto_flashd_install *in = proto_call_input(call);
	_cleanup_json_ struct json_object *p = json_tokener_parse("{\"percent\":\"half\"}");

	handled++;
	got_install = *in;
	snprintf(got_slot, sizeof(got_slot), "%s", in->slot ? in->slot : "(null)");
	if (proto_call_wants_more(call)) /* a progress reply of the wrong type */
		return proto_reply_more(call, p);
	return proto_reply(call, NULL);
}

static int m_set_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	const struct proto_flashd_set_env *in = proto_call_input(call);

	handled++;
	got_set_env = *in;
	snprintf(got_name, sizeof(got_name), "%s", in->name);
	snprintf(got_value, sizeof(got_value), "%s", in->value ? in->value : "(null)");
	return proto_reply(call, NULL);
}

static int m_get_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	const struct proto_flashd_get_env *in = proto_call_input(call);
	_cleanup_json_ struct json_object *r = NULL;

	handled++;
	if (!get_env_reply) /* typed: value not set is null */
		return proto_reply_typed(call, &(struct proto_flashd_get_env_reply){
			.name = in->name });
	r = json_tokener_parse(get_env_reply);
	assert_non_null(r);
	return proto_reply(call, r);
}

static int typed_activate_r = 1;
/* what the GetStatus handler answers, JSON text (tests set it) */
static const char *status_reply;

static int m_status(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = NULL;

	if (status_reply) {
		r = json_tokener_parse(status_reply);
		assert_non_null(r);
		return proto_reply(call, r);
	}
	return proto_reply(call, NULL);
}

static int m_slot(struct proto_call *call, struct json_object *params, void *userdata)
{
	const struct proto_flashd_slot *in = proto_call_input(call);
	_cleanup_json_ struct json_object *r = json_object_new_object();

	handled++;
	snprintf(got_slot, sizeof(got_slot), "%s", in->slot ? in->slot : "(null)");
	if (!strcmp(proto_call_method(call), "io.flashd.Activate")) {
		/* Activate() -> () declares no reply struct: a typed reply is refused */
		typed_activate_r = proto_reply_typed(call, &(struct proto_flashd_slot_reply){ "A" });
		return proto_reply(call, NULL);
	}
	/* MarkGood declares slot: string; 5 is the wrong type */
	json_object_object_add(r, "slot", in->slot && !strcmp(in->slot, "int") ?
			       json_object_new_int(5) : json_object_new_string("A"));
	return proto_reply(call, r);
}

static int m_cancel(struct proto_call *call, struct json_object *params, void *userdata)
{
	_cleanup_json_ struct json_object *r = json_tokener_parse("{\"cancelled\":null}");

	handled++;
	return proto_reply(call, r); /* cancelled: bool, never null */
}

static int m_any(struct proto_call *call, struct json_object *params, void *userdata)
{
	handled++;
	return proto_reply(call, NULL);
}

static const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX] = {
	[PROTO_FLASHD_INSTALL] = m_install,
	[PROTO_FLASHD_SET_ENV] = m_set_env,
	[PROTO_FLASHD_GET_ENV] = m_get_env,
	[PROTO_FLASHD_MARK_GOOD] = m_slot,
	[PROTO_FLASHD_ACTIVATE] = m_slot,
	[PROTO_FLASHD_CANCEL] = m_cancel,
	[PROTO_FLASHD_OVERLAY_RESET] = m_any,
	[PROTO_FLASHD_FLASH_INFO] = m_any,
	[PROTO_FLASHD_GET_STATUS] = m_status,
};

static struct proto_method methods[_PROTO_FLASHD_METHOD_MAX + 1];

struct fx {
	struct proto_server *server;
	struct proto_conn *conn;
};

static void log_hook(void *userdata, const struct proto_peer *peer, const char *msg)
{
	snprintf(logged, sizeof(logged), "%s", msg);
	n_logged++;
}

static int setup(void **state)
{
	static const struct proto_peer root = { .pid = 1, .uid = 0, .gid = 0 };
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	proto_flashd_bind(methods, handlers); /* the table's replies, as the daemon's */
	assert_int_equal(proto_server_new(NULL, -1, methods, NULL, &f->server), 0);
	assert_int_equal(proto_conn_new(f->server, -1, &root, &f->conn), 0);
	proto_server_set_log(f->server, log_hook, NULL);
	handled = n_logged = 0;
	logged[0] = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	proto_server_free(f->server);
	free(f);
	return 0;
}

/* Call method with params (JSON text); the one reply. */
static struct json_object *call(struct fx *f, const char *method, const char *params, bool more)
{
	_cleanup_free_ char *msg = NULL;
	struct json_object *rep;
	const char *out;
	size_t len;

	assert_true(asprintf(&msg, "{\"method\":\"io.flashd.%s\",\"parameters\":%s%s}", method,
			     params, more ? ",\"more\":true" : "") > 0);
	assert_int_equal(proto_conn_feed(f->conn, msg, strlen(msg) + 1, NULL, 0), 0);
	out = proto_conn_output(f->conn, &len);
	assert_true(len > 0);
	assert_int_equal(strlen(out) + 1, len); /* exactly one reply */
	rep = json_tokener_parse(out);
	assert_non_null(rep);
	proto_conn_consume_output(f->conn, len);
	return rep;
}

static const char *str_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(o, a, &v) || (b && !json_object_object_get_ex(v, b, &v)))
		return NULL;
	return json_object_get_string(v);
}

static void assert_invalid(struct fx *f, const char *method, const char *params, const char *bad)
{
	unsigned before = handled;
	_cleanup_json_ struct json_object *rep = call(f, method, params, false);

	if (!str_at(rep, "error", NULL) ||
	    strcmp(str_at(rep, "error", NULL), PROTO_ERROR_INVALID_PARAMETER) ||
	    strcmp(str_at(rep, "parameters", "parameter"), bad))
		fail_msg("%s %s: %s, expected InvalidParameter %s", method, params,
			 json_object_to_json_string(rep), bad);
	assert_int_equal(handled, before); /* the handler never ran */
}

/* ---- typed input ---- */

TEST_FIXTURE(test_typed_input_filled, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *a = NULL, *b = NULL, *c = NULL, *d = NULL;

	a = call(f, "Install", "{\"fd\":0,\"slot\":\"B\",\"activate\":false}", false);
	assert_null(str_at(a, "error", NULL));
	assert_true(got_install.fd.given);
	assert_int_equal(got_install.fd.value, 0);
	assert_string_equal(got_slot, "B");
	assert_null(got_install.path);
	assert_null(got_install.url);
	assert_true(got_install.activate.given);
	assert_false(got_install.activate.value);
	assert_false(got_install.allow_downgrade.given);

	/* null is "not given", as an absent field */
	b = call(f, "Install", "{\"path\":\"/b\",\"fd\":null,\"allow_downgrade\":true}", false);
	assert_null(str_at(b, "error", NULL));
	assert_false(got_install.fd.given);
	assert_false(got_install.activate.given);
	assert_true(got_install.allow_downgrade.given && got_install.allow_downgrade.value);
	assert_string_equal(got_slot, "(null)");

	c = call(f, "SetEnv", "{\"name\":\"bootdelay\",\"value\":null,\"force\":true}", false);
	assert_null(str_at(c, "error", NULL));
	assert_string_equal(got_name, "bootdelay");
	assert_string_equal(got_value, "(null)");
	assert_true(got_set_env.force.given && got_set_env.force.value);

	d = call(f, "Activate", "{\"slot\":\"A\"}", false);
	assert_null(str_at(d, "error", NULL));
	assert_string_equal(got_slot, "A");
	assert_int_equal(handled, 4);
}

TEST_FIXTURE(test_typed_input_unknown_field, setup, teardown)
{
	struct fx *f = *state;

	assert_invalid(f, "GetEnv", "{\"name\":\"x\",\"bogus\":1}", "bogus");
	assert_invalid(f, "Install", "{\"path\":\"/b\",\"target\":\"B\"}", "target");
	assert_invalid(f, "MarkGood", "{\"slots\":\"A\"}", "slots");
	assert_invalid(f, "FlashInfo", "{\"partition\":\"boot\",\"all\":true}", "all");
	/* a method without parameters takes none */
	assert_invalid(f, "Cancel", "{\"now\":true}", "now");
}

TEST_FIXTURE(test_typed_input_wrong_type, setup, teardown)
{
	struct fx *f = *state;

	assert_invalid(f, "Install", "{\"fd\":\"0\"}", "fd");
	assert_invalid(f, "Install", "{\"fd\":0.5}", "fd");
	assert_invalid(f, "Install", "{\"path\":\"/b\",\"activate\":1}", "activate");
	assert_invalid(f, "MarkGood", "{\"slot\":1}", "slot");
	assert_invalid(f, "OverlayReset", "{\"cancel\":\"yes\"}", "cancel");
	assert_invalid(f, "FlashInfo", "{\"partition\":[\"boot\"]}", "partition");
}

TEST_FIXTURE(test_typed_input_missing_required, setup, teardown)
{
	struct fx *f = *state;

	assert_invalid(f, "Activate", "{}", "slot");
	assert_invalid(f, "Activate", "{\"slot\":null}", "slot");
	assert_invalid(f, "GetEnv", "{}", "name");
	assert_invalid(f, "SetEnv", "{\"value\":\"1\"}", "name");
}

/* ---- the reply check ---- */

TEST_FIXTURE(test_reply_undeclared_field, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *ok = NULL, *bad = NULL;

	get_env_reply = "{\"name\":\"x\",\"value\":null}";
	ok = call(f, "GetEnv", "{\"name\":\"x\"}", false);
	assert_null(str_at(ok, "error", NULL));
	assert_int_equal(n_logged, 0);

	get_env_reply = "{\"name\":\"x\",\"value\":\"1\",\"secret\":\"s3cr3t\"}";
	bad = call(f, "GetEnv", "{\"name\":\"x\"}", false);
	assert_string_equal(str_at(bad, "error", NULL), PROTO_ERROR_INTERNAL);
	assert_string_equal(str_at(bad, "parameters", "errno_name"), "EPROTO");
	assert_non_null(strstr(str_at(bad, "parameters", "message"), "\"secret\""));
	/* what was refused never reaches the client */
	assert_null(strstr(json_object_to_json_string(bad), "s3cr3t"));
	assert_int_equal(n_logged, 1);
	assert_non_null(strstr(logged, "io.flashd.GetEnv"));
	assert_non_null(strstr(logged, "\"secret\""));
}

TEST_FIXTURE(test_reply_wrong_type, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *a = NULL, *b = NULL, *c = NULL, *d = NULL;

	a = call(f, "MarkGood", "{\"slot\":\"int\"}", false); /* slot: 5 */
	assert_string_equal(str_at(a, "error", NULL), PROTO_ERROR_INTERNAL);
	assert_non_null(strstr(str_at(a, "parameters", "message"), "\"slot\""));
	b = call(f, "MarkGood", "{}", false);
	assert_null(str_at(b, "error", NULL));
	assert_string_equal(str_at(b, "parameters", "slot"), "A");
	c = call(f, "Cancel", "{}", false); /* cancelled: null */
	assert_string_equal(str_at(c, "error", NULL), PROTO_ERROR_INTERNAL);
	/* a progress reply is checked too: the call ends with the error */
	d = call(f, "Install", "{\"path\":\"/b\"}", true);
	assert_string_equal(str_at(d, "error", NULL), PROTO_ERROR_INTERNAL);
	assert_null(str_at(d, "continues", NULL));
	assert_int_equal(n_logged, 3);
}

/* GetStatus answered with text: InternalError naming field, or (NULL) the
 * reply itself. */
static void assert_status_refused(struct fx *f, const char *text, const char *field)
{
	_cleanup_json_ struct json_object *rep = NULL;
	char quoted[64];

	status_reply = text;
	rep = call(f, "GetStatus", "{}", false);
	status_reply = NULL;
	if (!field) {
		if (str_at(rep, "error", NULL))
			fail_msg("%s: refused: %s", text, json_object_to_json_string(rep));
		return;
	}
	snprintf(quoted, sizeof(quoted), "\"%s\"", field);
	if (!str_at(rep, "error", NULL) || strcmp(str_at(rep, "error", NULL), PROTO_ERROR_INTERNAL) ||
	    !strstr(str_at(rep, "parameters", "message"), quoted))
		fail_msg("%s: %s, expected InternalError naming %s", text,
			 json_object_to_json_string(rep), field);
}

/* The check goes into nested types (Slot in slots[], Overlay and its
 * layers, EnvStatus and its copies) as deep as the IDL does. */
TEST_FIXTURE(test_reply_nested, setup, teardown)
{
	struct fx *f = *state;

	assert_status_refused(f, "{\"slots\":[{\"name\":\"A\",\"secret\":\"s3cr3t\"}]}", "secret");
	assert_status_refused(f, "{\"slots\":[{\"name\":\"A\"},{\"tries_left\":\"3\"}]}",
			      "tries_left");
	assert_status_refused(f, "{\"slots\":[{\"booted\":null}]}", "booted");
	assert_status_refused(f, "{\"slots\":[\"A\"]}", "slots");
	assert_status_refused(f, "{\"overlay\":{\"state\":\"mounted\",\"layers\":"
			      "[{\"path\":\"/\",\"bogus\":1}]}}", "bogus");
	assert_status_refused(f, "{\"env\":{\"copies\":[{\"state\":\"valid\",\"crc\":1}]}}", "crc");
	assert_status_refused(f, "{\"progress\":{\"percent\":1.5}}", "percent");
	assert_status_refused(f, "{\"last_install\":{\"result\":\"success\",\"key\":\"k\"}}",
			      "key");
	/* what the IDL declares passes, nulls where it has "?" */
	assert_status_refused(f, "{\"slots\":[{\"name\":\"A\",\"partition\":\"rootfs-a\","
			      "\"state\":\"good\",\"version\":null,\"health\":null,"
			      "\"tries_left\":3,\"priority\":null,\"booted\":true}],"
			      "\"overlay\":{\"state\":\"none\",\"layers\":[{\"path\":\"/\","
			      "\"fallback\":null}]},\"env\":{\"copies\":[{\"state\":\"valid\","
			      "\"error\":null}],\"malformed\":[]},\"progress\":null}", NULL);
	assert_int_equal(n_logged, 8);
}

/* A reply built from its typed description carries the declared fields,
 * an optional one not given as null. */
TEST_FIXTURE(test_reply_typed, setup, teardown)
{
	struct fx *f = *state;
	_cleanup_json_ struct json_object *a = NULL, *b = NULL;
	struct json_object *p, *v;

	get_env_reply = NULL;
	a = call(f, "GetEnv", "{\"name\":\"bootcmd\"}", false);
	assert_null(str_at(a, "error", NULL));
	assert_true(json_object_object_get_ex(a, "parameters", &p));
	assert_int_equal(json_object_object_length(p), 2);
	assert_string_equal(str_at(a, "parameters", "name"), "bootcmd");
	assert_true(json_object_object_get_ex(p, "value", &v));
	assert_null(v);
	b = call(f, "Activate", "{\"slot\":\"A\"}", false);
	assert_null(str_at(b, "error", NULL));
	assert_int_equal(typed_activate_r, -EINVAL);
	assert_int_equal(n_logged, 0);
}

/* An io.flashd method bound without its declared reply would escape the
 * check: the server refuses such a table. */
TEST(test_reply_declaration_required)
{
	static const struct proto_method undeclared[] = {
		{ PROTO_FLASHD_INTERFACE, "GetStatus", m_any, 0, proto_params_none, 0, NULL, 0 },
		{ NULL },
	};
	struct proto_server *s = NULL;

	assert_int_equal(proto_server_new(NULL, -1, undeclared, NULL, &s), -EINVAL);
	assert_null(s);
	for (size_t i = 0; i < _PROTO_FLASHD_METHOD_MAX; i++)
		assert_non_null(proto_flashd_methods[i].reply);
	(void) state;
}
