/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by test-proto*, test-client and the proto fuzzer: the methods a
 * test serves (the one io.flashd table bound to the test's handlers, plus a
 * streaming method (PROTO_NEEDS_MORE) in a test interface, since no
 * io.flashd method requires "more") and a server without a socket.
 * Header-only: the fuzzer links no test library. */
#pragma once
#include "proto.h"
#include "proto_flashd.h"

#define TEST_INTERFACE "org.example.test"

/* Bound by test_methods_bind(); the last entry stays { NULL }. */
static struct proto_method test_methods[_PROTO_FLASHD_METHOD_MAX + 2];

static inline void test_methods_bind(const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX],
				     proto_method_fn stream)
{
	proto_flashd_bind(test_methods, handlers);
	test_methods[_PROTO_FLASHD_METHOD_MAX] = (struct proto_method) {
		.interface = TEST_INTERFACE, .name = "Stream", .handler = stream,
		.flags = PROTO_NEEDS_MORE, .params = proto_params_none };
	test_methods[_PROTO_FLASHD_METHOD_MAX + 1] = (struct proto_method) { NULL };
}

/* A server of test_methods with no socket and no event loop, and one
 * connection from `peer`: bytes go in with proto_conn_feed(), replies come
 * out of proto_conn_output(). proto_server_free() frees both. */
static inline int test_server_new(const struct proto_peer *peer, struct proto_server **ret_server,
				  struct proto_conn **ret_conn)
{
	struct proto_server *s = NULL;
	int r;

	r = proto_server_new(NULL, -1, test_methods, NULL, &s);
	if (r < 0)
		return r;
	r = proto_conn_new(s, -1, peer, ret_conn);
	if (r < 0) {
		proto_server_free(s);
		return r;
	}
	*ret_server = s;
	return 0;
}
