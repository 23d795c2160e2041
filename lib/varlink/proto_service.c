/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* org.varlink.service, which every Varlink server answers: GetInfo and
 * GetInterfaceDescription. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "proto-internal.h"

const char proto_service_description[] =
	"# The Varlink Service Interface is provided by every varlink service. It\n"
	"# describes the service and the interfaces it implements.\n"
	"interface org.varlink.service\n"
	"\n"
	"# Get a list of all the interfaces a service provides and information\n"
	"# about the implementation.\n"
	"method GetInfo() -> (\n"
	"  vendor: string,\n"
	"  product: string,\n"
	"  version: string,\n"
	"  url: string,\n"
	"  interfaces: []string\n"
	")\n"
	"\n"
	"# Get the description of an interface that is implemented by this service.\n"
	"method GetInterfaceDescription(interface: string) -> (description: string)\n"
	"\n"
	"# The requested interface was not found.\n"
	"error InterfaceNotFound (interface: string)\n"
	"\n"
	"# The requested method was not found\n"
	"error MethodNotFound (method: string)\n"
	"\n"
	"# The interface defines the requested method, but the service does not\n"
	"# implement it.\n"
	"error MethodNotImplemented (method: string)\n"
	"\n"
	"# One of the passed parameters is invalid.\n"
	"error InvalidParameter (parameter: string)\n"
	"\n"
	"# Client is denied access\n"
	"error PermissionDenied ()\n"
	"\n"
	"# Method is expected to be called with 'more' set to true, but wasn't\n"
	"error ExpectedMore ()\n";

static int service_get_info(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct proto_server *s = call->server;
	_cleanup_json_ struct json_object *reply = json_object_new_object();
	struct json_object *ifaces = json_object_new_array();

	if (!reply || !ifaces) {
		json_object_put(ifaces);
		return -ENOMEM;
	}
	json_object_object_add(reply, "vendor", json_object_new_string(s->vendor));
	json_object_object_add(reply, "product", json_object_new_string(s->product));
	json_object_object_add(reply, "version", json_object_new_string(s->version));
	json_object_object_add(reply, "url", json_object_new_string(s->url));
	json_object_object_add(reply, "interfaces", ifaces);
	json_object_array_add(ifaces, json_object_new_string(PROTO_SERVICE_INTERFACE));
	for (const struct proto_method *m = s->methods; m && m->name; m++) {
		bool seen = false;

		for (const struct proto_method *o = s->methods; o < m && !seen; o++)
			seen = !strcmp(o->interface, m->interface);
		if (!seen && strcmp(m->interface, PROTO_SERVICE_INTERFACE))
			json_object_array_add(ifaces, json_object_new_string(m->interface));
	}
	return proto_reply(call, reply);
}

struct service_description_in {
	const char *interface;
};

static int service_get_description(struct proto_call *call, struct json_object *params,
				   void *userdata)
{
	_cleanup_json_ struct json_object *reply = NULL;
	_cleanup_free_ char *text = NULL;
	const struct service_description_in *in = proto_call_input(call);
	const char *name = in->interface;
	const struct proto_interface *i;
	int r;

	i = proto_server_find_interface(call->server, name, strlen(name));
	if (!i || !proto_server_serves(call->server, name, strlen(name)))
		return proto_error_string(call, PROTO_ERROR_INTERFACE_NOT_FOUND, "interface", name);
	if (i->describe) {
		r = i->describe(&text);
		if (r < 0)
			return r;
	}
	reply = json_object_new_object();
	if (!reply)
		return -ENOMEM;
	json_object_object_add(reply, "description",
			       json_object_new_string(text ? text : i->description));
	return proto_reply(call, reply);
}

#define IN(type, field) offsetof(struct type, field)
static const struct proto_param service_params_description[] = {
	{ "interface", PROTO_TYPE_STRING, true, IN(service_description_in, interface), NULL, false },
	{ NULL },
};
#undef IN

static const struct proto_param service_reply_info[] = {
	{ "vendor", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ "product", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ "version", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ "url", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ "interfaces", PROTO_TYPE_ARRAY, true, 0, NULL, false },
	{ NULL },
};
static const struct proto_param service_reply_description[] = {
	{ "description", PROTO_TYPE_STRING, true, 0, NULL, false },
	{ NULL },
};

const struct proto_method proto_service_methods[] = {
	{ PROTO_SERVICE_INTERFACE, "GetInfo", service_get_info, 0, proto_params_none, 0,
	  service_reply_info, 0 },
	{ PROTO_SERVICE_INTERFACE, "GetInterfaceDescription", service_get_description, 0,
	  service_params_description, sizeof(struct service_description_in),
	  service_reply_description, 0 },
	{ NULL },
};
