/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the Varlink framing, message parser and method
 * dispatch of the control socket (lib/varlink/proto_frame.c, proto_dispatch.c), on a detached server
 * (no socket, no event loop) with the io.flashd method table bound to
 * dummy handlers that answer in every way the real ones do: at once,
 * with progress ("continues"), later (held call answered after the
 * feed), with an errno, or not at all.
 *
 * Input: byte 0 = control (bit 0: peer is root or an unprivileged uid;
 * bits 1-3: chunk size of the feed, so that message boundaries fall
 * everywhere), the rest = bytes as they would arrive on the socket.
 * Every reply the server queues must be one JSON object followed by NUL,
 * with "parameters" or "error". */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "proto.h"
#include "proto_flashd.h"
#include "../unit/proto-test-helpers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct proto_call *held;

static int m_status(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct json_object *r = json_object_new_object();
	int k;

	json_object_object_add(r, "booted", json_object_new_string("A"));
	k = proto_reply(call, r);
	json_object_put(r);
	return k;
}

static int m_echo(struct proto_call *call, struct json_object *params, void *userdata)
{
	return proto_reply(call, params);
}

static int m_install(struct proto_call *call, struct json_object *params, void *userdata)
{
	for (int i = 0; i < 3; i++) {
		struct json_object *p = json_object_new_object();

		json_object_object_add(p, "percent", json_object_new_int(i * 50));
		(void) proto_reply_more(call, p);
		json_object_put(p);
	}
	if (proto_call_n_fds(call) > 0) {
		int fd = proto_call_take_fd(call, 0);

		if (fd >= 0)
			abort(); /* the fuzzer passes no fds */
	}
	return proto_error_string(call, PROTO_ERROR_INVALID_BUNDLE, "reason", "fuzz");
}

static int m_hold(struct proto_call *call, struct json_object *params, void *userdata)
{
	if (held)
		return -EBUSY;
	held = proto_call_ref(call);
	return 0;
}

static int m_errno(struct proto_call *call, struct json_object *params, void *userdata)
{
	return -EIO;
}

static int m_perm(struct proto_call *call, struct json_object *params, void *userdata)
{
	return -EPERM;
}

static int m_silent(struct proto_call *call, struct json_object *params, void *userdata)
{
	return 0; /* forgets to answer */
}

static int m_invalid(struct proto_call *call, struct json_object *params, void *userdata)
{
	return proto_error_invalid_parameter(call, "slot");
}

/* The io.flashd table (proto_flashd.c), as the daemon uses it. */
static const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX] = {
	[PROTO_FLASHD_GET_STATUS] = m_status,
	[PROTO_FLASHD_INSTALL] = m_install,
	[PROTO_FLASHD_CANCEL] = m_errno,
	[PROTO_FLASHD_MARK_GOOD] = m_silent,
	[PROTO_FLASHD_MARK_BAD] = m_invalid,
	[PROTO_FLASHD_ACTIVATE] = m_hold,
	[PROTO_FLASHD_ROLLBACK] = m_install,
	[PROTO_FLASHD_OVERLAY_RESET] = m_perm,
	[PROTO_FLASHD_OVERLAY_STATUS] = m_status,
	[PROTO_FLASHD_GET_ENV] = m_echo,
	[PROTO_FLASHD_SET_ENV] = m_echo,
	[PROTO_FLASHD_LIST_ENV] = m_hold,
	/* FlashInfo: no handler (MethodNotImplemented) */
};

/* Every queued reply: a JSON object and a NUL. */
static void check_output(struct proto_conn *c)
{
	size_t len, off = 0;
	const char *out = proto_conn_output(c, &len);

	while (off < len) {
		const char *end = memchr(out + off, 0, len - off);
		struct json_object *o;

		if (!end)
			abort(); /* a reply without its NUL */
		o = json_tokener_parse(out + off);
		if (!o || !json_object_is_type(o, json_type_object))
			abort();
		if (!json_object_object_get_ex(o, "parameters", NULL) &&
		    !json_object_object_get_ex(o, "error", NULL))
			abort();
		json_object_put(o);
		off = end - out + 1;
	}
	proto_conn_consume_output(c, len);
}

/* Answer the held call; the calls buffered behind it are dispatched now,
 * so this may end the connection like a feed does (same return codes). */
static int answer_held(struct proto_conn *c)
{
	if (!held)
		return 0;
	if (proto_call_is_connected(held))
		(void) proto_reply(held, NULL);
	held = proto_call_unref(held);
	return proto_conn_process(c);
}

static void check_result(struct proto_conn *c, int r)
{
	if (r < 0 && r != -EBADMSG && r != -EMSGSIZE && r != -ENOBUFS)
		abort(); /* an undocumented error */
	if (r < 0 && !proto_conn_is_dead(c))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[8] = { 1, 2, 3, 7, 64, 4096, 65536, SIZE_MAX };
	static const struct proto_peer root = { .pid = 1, .uid = 0, .gid = 0 };
	static const struct proto_peer user = { .pid = 2, .uid = 1000, .gid = 1000 };
	struct proto_server *s = NULL;
	struct proto_conn *c = NULL;
	size_t chunk;
	int r = 0;

	if (size < 1)
		return 0;
	chunk = chunks[(data[0] >> 1) & 7];
	if (!test_methods[0].name) /* ... and Stream (test interface) = m_install */
		test_methods_bind(handlers, m_install);
	if (test_server_new((data[0] & 1) ? &user : &root, &s, &c) < 0)
		abort();
	data++;
	size--;
	while (size > 0 && r >= 0) {
		size_t n = size < chunk ? size : chunk;

		r = proto_conn_feed(c, data, n, NULL, 0);
		check_result(c, r);
		check_output(c);
		if (r >= 0) {
			r = answer_held(c);
			check_result(c, r);
			check_output(c);
		}
		data += n;
		size -= n;
	}
	held = proto_call_unref(held);
	proto_server_free(s); /* frees c */
	return 0;
}
