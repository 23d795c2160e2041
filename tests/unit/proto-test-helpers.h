/* Shared by test-proto and test-client: the one io.flashd table bound to a
 * test's handlers, plus a streaming method (PROTO_NEEDS_MORE) in a test
 * interface, since no io.flashd method requires "more". */
#pragma once
#include "proto_flashd.h"

#define TEST_INTERFACE "org.example.test"

/* ret: _PROTO_FLASHD_METHOD_MAX + 2 entries (the last stays { NULL }). */
static inline void test_methods_bind(struct proto_method *ret,
				     const proto_method_fn handlers[_PROTO_FLASHD_METHOD_MAX],
				     proto_method_fn stream)
{
	proto_flashd_bind(ret, handlers);
	ret[_PROTO_FLASHD_METHOD_MAX] = (struct proto_method) {
		TEST_INTERFACE, "Stream", stream, PROTO_NEEDS_MORE, proto_params_none };
	ret[_PROTO_FLASHD_METHOD_MAX + 1] = (struct proto_method) { NULL };
}
