/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Varlink protocol layer of the flashd control socket: framing, parsing,
 * table-driven dispatch with parameter checks and authorization, ordered
 * replies, fd passing, and the sd-event glue. See include/proto.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "proto.h"

/* Input kept at most: one maximal message, its NUL, plus what follows it
 * while a call is being answered. */
#define PROTO_MAX_INPUT (2 * (PROTO_MAX_MESSAGE + 1))
#define PROTO_READ_CHUNK (64 * 1024)
#define PROTO_MAX_INTERFACES 8
/* Fairness (issue 13 item 10): one connection's turn in the event loop
 * reads at most one chunk and dispatches at most this many calls; calls
 * are not dispatched while more than PROTO_OUTPUT_HIGH of replies wait
 * for the client to read them. */
#define PROTO_CALLS_PER_TURN 1
#define PROTO_OUTPUT_HIGH (64 * 1024)
/* Event priorities: accepting and the connections of root and the socket
 * group at the daemon's own level (its install worker's reports, signals:
 * those must never wait behind clients), then everyone else's new data,
 * then everyone else's queued calls. Users without rights get the time
 * left over, so they cannot delay root by more than the call being
 * answered when root's arrives. */
#define PROTO_PRIORITY_ACCEPT SD_EVENT_PRIORITY_NORMAL
#define PROTO_PRIORITY_PRIVILEGED SD_EVENT_PRIORITY_NORMAL
#define PROTO_PRIORITY_UNPRIVILEGED (SD_EVENT_PRIORITY_NORMAL + 5)
#define PROTO_PRIORITY_UNPRIVILEGED_QUEUE (SD_EVENT_PRIORITY_NORMAL + 10)

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

/* ---- the parameter table of methods without parameters ---- */

const struct proto_param proto_params_none[] = {
	{ NULL },
};

/* ---- objects ---- */

struct proto_interface {
	const char *name;
	const char *description;
	int (*describe)(char **ret); /* instead of description: a text made on demand */
};

struct proto_server {
	sd_event *event;
	int listen_fd;
	sd_event_source *listen_src;
	const struct proto_method *methods;
	void *userdata;
	gid_t auth_group;
	char *vendor, *product, *version, *url;
	struct proto_interface interfaces[PROTO_MAX_INTERFACES];
	unsigned n_interfaces;
	proto_log_fn log;
	void *log_userdata;
	struct proto_conn *conns;
	unsigned n_conns;
	uint64_t idle_usec;            /* 0: never close idle connections */
	/* Connections with work left after their turn, in FIFO order:
	 * [1] root and the socket group, [0] everyone else. */
	struct proto_runq {
		sd_event_source *src;
		struct proto_conn *head, *tail;
	} runq[2];
	/* one line a second at most: a connect loop must not flood the log */
	struct log_limit {
		uint64_t last;
		unsigned quiet;
	} refused_log, evicted_log;
};

struct pending_fd {
	uint64_t offset; /* stream offset of the first byte it arrived with */
	int fd;
};

struct proto_conn {
	struct proto_server *server;
	struct proto_conn *next, *prev;
	int fd;
	sd_event_source *io_src;
	sd_event_source *idle_src;
	struct proto_peer peer;
	bool privileged;       /* root or the socket group at accept: served first */
	bool queued;           /* on the server's run queue */
	struct proto_conn *run_next;
	uint64_t last_call;      /* CLOCK_MONOTONIC of the last dispatch (or accept) */

	char *in;
	size_t in_start, in_len, in_alloc, in_scan;
	uint64_t in_base; /* stream offset of in[0] */
	struct pending_fd in_fds[PROTO_MAX_PENDING_FDS];
	unsigned n_in_fds;

	char *out;
	size_t out_start, out_len, out_alloc;

	struct proto_call *current;
	bool read_eof; /* the peer will send nothing more */
	bool dead;     /* protocol error: flush the output, then close */
	bool broken;   /* close now, output or not */
	bool hup;
};

struct proto_call {
	unsigned n_ref;
	struct proto_conn *conn; /* NULL once answered or disconnected */
	struct proto_server *server;
	const struct proto_method *method;
	char *method_name;
	struct proto_peer peer;
	bool more, oneway, finished;
	int fds[PROTO_MAX_FDS];
	unsigned n_fds;
	proto_disconnect_fn on_disconnect;
	void *disconnect_userdata;
};

static void conn_wake(struct proto_conn *c);
static int conn_process(struct proto_conn *c);

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void tokener_freep(struct json_tokener **t)
{
	if (*t)
		json_tokener_free(*t);
}

_printf_(3, 4)
static void server_log(struct proto_server *s, const struct proto_peer *peer, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!s || !s->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->log(s->log_userdata, peer, msg);
}

/* server_log, one line a second at most per limit; the lines left out
 * are counted on the next one */
_printf_(4, 5)
static void server_log_limited(struct proto_server *s, struct log_limit *l,
			       const struct proto_peer *peer, const char *fmt, ...)
{
	uint64_t now = now_usec();
	char msg[512];
	va_list ap;

	if (l->last && now - l->last < 1000000) {
		l->quiet++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->quiet)
		server_log(s, peer, "%s (and %u more in the last second)", msg, l->quiet);
	else
		server_log(s, peer, "%s", msg);
	l->last = now;
	l->quiet = 0;
}

/* ---- names ---- */

/* A reverse-domain interface name: at least two dot-separated labels of
 * letters/digits with inner dashes, the first starting with a letter. */
static bool interface_name_valid(const char *s, size_t len)
{
	size_t labels = 0, i = 0;

	while (i < len) {
		size_t start = i;

		while (i < len && s[i] != '.') {
			if (!isascii(s[i]) || !(isalnum(s[i]) || s[i] == '-'))
				return false;
			i++;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false;
		if (labels == 0 && !isalpha(s[start]))
			return false;
		labels++;
		if (i < len)
			i++; /* the dot */
		if (i == len && s[len - 1] == '.')
			return false;
	}
	return labels >= 2;
}

static bool member_name_valid(const char *s)
{
	if (!isascii(*s) || !isupper(*s))
		return false;
	for (s++; *s; s++)
		if (!isascii(*s) || !isalnum(*s))
			return false;
	return true;
}

/* ---- output ---- */

static int conn_queue(struct proto_conn *c, struct json_object *msg)
{
	const char *s;
	size_t len;

	s = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	len = strlen(s) + 1; /* with the NUL that ends every message */
	if (c->out_len - c->out_start + len > PROTO_MAX_OUTPUT) {
		server_log(c->server, &c->peer,
			   "client does not read its replies (%zu bytes queued), disconnecting",
			   c->out_len - c->out_start);
		c->broken = true;
		conn_wake(c);
		return -ENOBUFS;
	}
	if (c->out_alloc - c->out_len < len && c->out_start > 0) {
		memmove(c->out, c->out + c->out_start, c->out_len - c->out_start);
		c->out_len -= c->out_start;
		c->out_start = 0;
	}
	if (c->out_alloc - c->out_len < len) {
		size_t n = MAX(MAX(c->out_alloc * 2, c->out_len + len), (size_t) 4096);
		char *p = realloc(c->out, n);

		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_alloc = n;
	}
	memcpy(c->out + c->out_len, s, len);
	c->out_len += len;
	conn_wake(c);
	return 0;
}

/* A reply outside any call: only ProtocolError, before closing. */
static int conn_protocol_error(struct proto_conn *c, int r, const char *reason)
{
	_cleanup_json_ struct json_object *msg = json_object_new_object();
	struct json_object *params = json_object_new_object();

	server_log(c->server, &c->peer, "protocol error: %s; closing the connection", reason);
	if (!msg || !params) {
		json_object_put(params);
		c->broken = true;
		return r;
	}
	json_object_object_add(params, "reason", json_object_new_string(reason));
	json_object_object_add(msg, "error", json_object_new_string(PROTO_ERROR_PROTOCOL));
	json_object_object_add(msg, "parameters", params);
	(void) conn_queue(c, msg);
	c->dead = true;
	conn_wake(c);
	return r;
}

/* ---- calls ---- */

static void call_close_fds(struct proto_call *call)
{
	for (unsigned i = 0; i < call->n_fds; i++)
		if (call->fds[i] >= 0)
			close(call->fds[i]);
	call->n_fds = 0;
}

static void call_free(struct proto_call *call)
{
	call_close_fds(call);
	free(call->method_name);
	free(call);
}

/* The final reply was sent (or the client left): the connection moves on. */
static void call_detach(struct proto_call *call)
{
	struct proto_conn *c = call->conn;

	if (!c)
		return;
	call->conn = NULL;
	if (c->current == call) {
		c->current = NULL;
		c->last_call = now_usec(); /* idle from now, not from its start */
		conn_wake(c); /* calls waiting behind this one */
		proto_call_unref(call);
	}
}

static int call_send(struct proto_call *call, const char *error, struct json_object *params,
		     bool continues)
{
	_cleanup_json_ struct json_object *msg = NULL;
	int r;

	if (call->finished)
		return -EALREADY;
	if (!continues)
		call->finished = true;
	if (!call->conn) {
		if (call->oneway)
			return 0;
		return -ENOTCONN;
	}
	if (call->oneway || (continues && !call->more)) {
		if (!continues)
			call_detach(call);
		return 0;
	}
	msg = json_object_new_object();
	if (!msg)
		return -ENOMEM;
	if (error)
		json_object_object_add(msg, "error", json_object_new_string(error));
	json_object_object_add(msg, "parameters",
			       params ? json_object_get(params) : json_object_new_object());
	if (continues)
		json_object_object_add(msg, "continues", json_object_new_boolean(true));
	r = conn_queue(call->conn, msg);
	if (!continues)
		call_detach(call);
	return r;
}

int proto_reply(struct proto_call *call, struct json_object *params)
{
	return call_send(call, NULL, params, false);
}

int proto_reply_more(struct proto_call *call, struct json_object *params)
{
	return call_send(call, NULL, params, true);
}

int proto_error(struct proto_call *call, const char *error, struct json_object *params)
{
	return call_send(call, error, params, false);
}

int proto_error_string(struct proto_call *call, const char *error, const char *key,
		       const char *value)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();

	if (!p)
		return -ENOMEM;
	json_object_object_add(p, key, json_object_new_string(value ? value : ""));
	return proto_error(call, error, p);
}

int proto_error_invalid_parameter(struct proto_call *call, const char *parameter)
{
	return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", parameter);
}

int proto_error_errno(struct proto_call *call, int r, const char *message)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	const char *name;
	int e = r < 0 ? -r : r;

	if (!p)
		return -ENOMEM;
	name = strerrorname_np(e);
	json_object_object_add(p, "errno", json_object_new_int(e));
	json_object_object_add(p, "errno_name", json_object_new_string(name ? name : "unknown"));
	json_object_object_add(p, "message", json_object_new_string(message ? message : strerror(e)));
	return proto_error(call, PROTO_ERROR_INTERNAL, p);
}

struct proto_call *proto_call_ref(struct proto_call *call)
{
	if (call)
		call->n_ref++;
	return call;
}

struct proto_call *proto_call_unref(struct proto_call *call)
{
	if (!call)
		return NULL;
	if (--call->n_ref == 0) {
		call_free(call);
		return NULL;
	}
	/* Only the connection still holds it and it was never answered:
	 * nobody will answer it, so do it rather than stall the client. */
	if (call->n_ref == 1 && !call->finished && call->conn && call->conn->current == call) {
		server_log(call->server, &call->peer, "%s: handler dropped the call without a reply",
			   call->method_name);
		proto_error_errno(call, -ENOMSG, "the method returned without a reply");
	}
	return NULL;
}

const char *proto_call_method(const struct proto_call *call)
{
	return call->method_name;
}

const struct proto_peer *proto_call_peer(const struct proto_call *call)
{
	return &call->peer;
}

bool proto_call_wants_more(const struct proto_call *call)
{
	return call->more;
}

bool proto_call_is_oneway(const struct proto_call *call)
{
	return call->oneway;
}

bool proto_call_is_connected(const struct proto_call *call)
{
	return call->conn != NULL;
}

void proto_call_set_disconnect_handler(struct proto_call *call, proto_disconnect_fn fn,
				       void *userdata)
{
	call->on_disconnect = fn;
	call->disconnect_userdata = userdata;
}

unsigned proto_call_n_fds(const struct proto_call *call)
{
	return call->n_fds;
}

int proto_call_take_fd(struct proto_call *call, unsigned idx)
{
	if (idx >= call->n_fds)
		return -ENXIO;
	if (call->fds[idx] < 0)
		return -EBADF;
	return TAKE_FD(call->fds[idx]);
}

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

static const struct proto_interface *server_find_interface(const struct proto_server *s,
							   const char *name, size_t len)
{
	for (unsigned i = 0; i < s->n_interfaces; i++)
		if (strlen(s->interfaces[i].name) == len && !strncmp(s->interfaces[i].name, name, len))
			return &s->interfaces[i];
	return NULL;
}

/* An interface is served when the method table has a method of it. */
static bool server_serves(const struct proto_server *s, const char *iface, size_t len)
{
	if (strlen(PROTO_SERVICE_INTERFACE) == len && !strncmp(iface, PROTO_SERVICE_INTERFACE, len))
		return true;
	for (const struct proto_method *m = s->methods; m && m->name; m++)
		if (strlen(m->interface) == len && !strncmp(m->interface, iface, len))
			return true;
	return false;
}

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

static int service_get_description(struct proto_call *call, struct json_object *params,
				   void *userdata)
{
	_cleanup_json_ struct json_object *reply = NULL;
	_cleanup_free_ char *text = NULL;
	const struct proto_interface *i;
	struct json_object *v;
	const char *name;
	int r;

	json_object_object_get_ex(params, "interface", &v);
	name = json_object_get_string(v);
	i = server_find_interface(call->server, name, strlen(name));
	if (!i || !server_serves(call->server, name, strlen(name)))
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

static const struct proto_param service_params_description[] = {
	{ "interface", PROTO_TYPE_STRING, true },
	{ NULL },
};

static const struct proto_method service_methods[] = {
	{ PROTO_SERVICE_INTERFACE, "GetInfo", service_get_info, 0, proto_params_none },
	{ PROTO_SERVICE_INTERFACE, "GetInterfaceDescription", service_get_description, 0,
	  service_params_description },
	{ NULL },
};

static const struct proto_method *find_method(const struct proto_method *table,
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

static int call_dispatch(struct proto_call *call, struct json_object *params)
{
	const struct proto_method *m = call->method;
	struct proto_server *s = call->server;
	const char *bad;
	int r;

	if ((m->flags & PROTO_NEEDS_MORE) && !call->more)
		return proto_error(call, PROTO_ERROR_EXPECTED_MORE, NULL);
	if ((m->flags & PROTO_NEEDS_AUTH) && proto_peer_authorized(&call->peer, s->auth_group) <= 0) {
		server_log(s, &call->peer, "%s refused: uid %u is not root%s", call->method_name,
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
	if (!(m->flags & PROTO_TAKES_FDS))
		call_close_fds(call);

	proto_call_ref(call); /* the handler's reference */
	r = m->handler(call, params, s->userdata);
	if (r < 0 && !call->finished)
		call_answer_failure(call, r);
	proto_call_unref(call); /* answers for a handler that kept no reference */
	return 0;
}

/* Collect the fds that arrived with the message at stream offsets
 * [start, end] into call. */
static void conn_take_fds(struct proto_conn *c, uint64_t start, uint64_t end,
			  struct proto_call *call)
{
	unsigned i, kept = 0;

	for (i = 0; i < c->n_in_fds; i++) {
		struct pending_fd *p = &c->in_fds[i];

		if (p->offset <= end && p->offset >= start && call && call->n_fds < PROTO_MAX_FDS)
			call->fds[call->n_fds++] = p->fd;
		else if (p->offset <= end)
			close(p->fd); /* belongs to no call, or one too many */
		else
			c->in_fds[kept++] = *p;
	}
	c->n_in_fds = kept;
}

static int get_bool(struct json_object *msg, const char *key, bool *ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(msg, key, &v) || !v) {
		*ret = false;
		return 0;
	}
	if (!json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	*ret = json_object_get_boolean(v);
	return 0;
}

static int conn_handle_message(struct proto_conn *c, const char *data, size_t len,
			       uint64_t start, uint64_t end)
{
	_cleanup_(tokener_freep) struct json_tokener *tok = NULL;
	_cleanup_json_ struct json_object *msg = NULL;
	_cleanup_proto_call_ struct proto_call *call = NULL;
	struct json_object *method = NULL, *params = NULL;
	const char *name, *dot;
	char reason[256];
	bool upgrade;
	size_t end_off;

	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	/* data[len] is the NUL: with it, json-c sees the end of a top-level number */
	msg = json_tokener_parse_ex(tok, data, (int) len + 1);
	if (!msg || json_tokener_get_error(tok) != json_tokener_success) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		conn_take_fds(c, start, end, NULL);
		snprintf(reason, sizeof(reason), "message is not valid JSON: %s (near byte %zu)",
			 e == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(e),
			 json_tokener_get_parse_end(tok));
		return conn_protocol_error(c, -EBADMSG, reason);
	}
	for (end_off = json_tokener_get_parse_end(tok); end_off < len; end_off++)
		if (!isspace((unsigned char) data[end_off])) {
			conn_take_fds(c, start, end, NULL);
			return conn_protocol_error(c, -EBADMSG, "trailing data after the JSON object");
		}

	call = calloc(1, sizeof(*call));
	if (!call)
		return -ENOMEM;
	call->n_ref = 1;
	call->server = c->server;
	call->peer = c->peer;
	conn_take_fds(c, start, end, call);

#define ENVELOPE_ERROR(msgtext) return conn_protocol_error(c, -EBADMSG, msgtext)
	if (!json_object_is_type(msg, json_type_object))
		ENVELOPE_ERROR("message is not a JSON object");
	if (!json_object_object_get_ex(msg, "method", &method) ||
	    !json_object_is_type(method, json_type_string))
		ENVELOPE_ERROR("\"method\" is missing or not a string");
	if (json_object_object_get_ex(msg, "parameters", &params) && params &&
	    !json_object_is_type(params, json_type_object))
		ENVELOPE_ERROR("\"parameters\" is not an object");
	if (get_bool(msg, "more", &call->more) < 0)
		ENVELOPE_ERROR("\"more\" is not a boolean");
	if (get_bool(msg, "oneway", &call->oneway) < 0)
		ENVELOPE_ERROR("\"oneway\" is not a boolean");
	if (get_bool(msg, "upgrade", &upgrade) < 0)
		ENVELOPE_ERROR("\"upgrade\" is not a boolean");
	if (upgrade)
		ENVELOPE_ERROR("protocol upgrades are not supported");
	if (call->more && call->oneway)
		ENVELOPE_ERROR("\"more\" and \"oneway\" exclude each other");
	name = json_object_get_string(method);
	dot = strrchr(name, '.');
	if (!dot || !interface_name_valid(name, dot - name) || !member_name_valid(dot + 1)) {
		snprintf(reason, sizeof(reason),
			 "\"method\" is not of the form interface.Method: \"%.100s\"", name);
		ENVELOPE_ERROR(reason);
	}
#undef ENVELOPE_ERROR

	call->method_name = strdup(name);
	if (!call->method_name)
		return -ENOMEM;
	call->conn = c;
	c->current = proto_call_ref(call); /* the connection's reference */

	call->method = find_method(service_methods, name, dot - name, dot + 1);
	if (!call->method)
		call->method = find_method(c->server->methods, name, dot - name, dot + 1);
	if (!call->method) {
		if (!server_serves(c->server, name, dot - name)) {
			_cleanup_free_ char *iface = strndup(name, dot - name);

			if (!iface)
				return -ENOMEM;
			return proto_error_string(call, PROTO_ERROR_INTERFACE_NOT_FOUND, "interface",
						  iface);
		}
		return proto_error_string(call, PROTO_ERROR_METHOD_NOT_FOUND, "method", name);
	}
	if (!params) {
		params = json_object_new_object();
		if (!params)
			return -ENOMEM;
		json_object_object_add(msg, "parameters", params);
	}
	return call_dispatch(call, params);
}

/* Dispatch up to budget buffered calls (0: all of them). With an event
 * loop, a client that leaves its replies unread gets no more calls
 * answered until it reads (its turn comes back with EPOLLOUT). */
static int conn_process_budget(struct proto_conn *c, unsigned budget)
{
	unsigned done = 0;
	int r;

	while (!c->current && !c->dead && !c->broken && (!budget || done < budget) &&
	       !(c->server->event && c->out_len - c->out_start > PROTO_OUTPUT_HIGH)) {
		char *nul = c->in_len > c->in_scan ?
			memchr(c->in + c->in_scan, 0, c->in_len - c->in_scan) : NULL;
		size_t start = c->in_start, len;

		if (!nul) {
			c->in_scan = c->in_len;
			if (c->in_len - c->in_start > PROTO_MAX_MESSAGE) {
				conn_take_fds(c, 0, UINT64_MAX, NULL);
				return conn_protocol_error(c, -EMSGSIZE,
							   "message longer than 1 MiB");
			}
			break;
		}
		len = nul - (c->in + start);
		/* the limit holds however the bytes were split across reads */
		if (len > PROTO_MAX_MESSAGE) {
			conn_take_fds(c, 0, UINT64_MAX, NULL);
			return conn_protocol_error(c, -EMSGSIZE, "message longer than 1 MiB");
		}
		c->in_start = c->in_scan = start + len + 1;
		c->last_call = now_usec();
		done++;
		r = conn_handle_message(c, c->in + start, len, c->in_base + start,
					c->in_base + start + len);
		if (r < 0)
			return r;
	}
	/* Drop consumed input so that the buffer never creeps. */
	if (c->in_start == c->in_len) {
		c->in_base += c->in_start;
		c->in_start = c->in_len = c->in_scan = 0;
	} else if (c->in_start > c->in_alloc / 2) {
		memmove(c->in, c->in + c->in_start, c->in_len - c->in_start);
		c->in_base += c->in_start;
		c->in_len -= c->in_start;
		c->in_scan -= c->in_start;
		c->in_start = 0;
	}
	return 0;
}

static int conn_process(struct proto_conn *c)
{
	return conn_process_budget(c, 0);
}

/* A complete call waits in the input buffer. */
static bool conn_has_call(const struct proto_conn *c)
{
	return c->in_len > c->in_scan && memchr(c->in + c->in_scan, 0, c->in_len - c->in_scan);
}

static int conn_reserve_input(struct proto_conn *c, size_t n)
{
	char *p;
	size_t want;

	if (c->in_alloc - c->in_len >= n)
		return 0;
	if (c->in_start > 0) {
		memmove(c->in, c->in + c->in_start, c->in_len - c->in_start);
		c->in_base += c->in_start;
		c->in_len -= c->in_start;
		c->in_scan -= c->in_start;
		c->in_start = 0;
		if (c->in_alloc - c->in_len >= n)
			return 0;
	}
	want = MAX(MAX(c->in_alloc * 2, c->in_len + n), (size_t) 4096);
	p = realloc(c->in, want);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->in_alloc = want;
	return 0;
}

/* Remember fds that came with the bytes about to be appended. */
static int conn_add_fds(struct proto_conn *c, const int *fds, size_t n_fds)
{
	size_t i;

	for (i = 0; i < n_fds; i++) {
		if (c->n_in_fds >= PROTO_MAX_PENDING_FDS || c->dead || c->broken)
			break;
		c->in_fds[c->n_in_fds++] = (struct pending_fd) {
			.offset = c->in_base + c->in_len, .fd = fds[i],
		};
	}
	if (i == n_fds)
		return 0;
	for (; i < n_fds; i++)
		close(fds[i]);
	if (c->dead || c->broken)
		return -EPIPE;
	return conn_protocol_error(c, -ENOBUFS, "too many file descriptors passed");
}

int proto_conn_feed(struct proto_conn *c, const void *data, size_t len, const int *fds,
		    size_t n_fds)
{
	int r;

	r = conn_add_fds(c, fds, n_fds);
	if (r < 0)
		return r;
	if (c->dead || c->broken)
		return -EPIPE;
	if (c->in_len - c->in_start + len > PROTO_MAX_INPUT)
		return conn_protocol_error(c, -EMSGSIZE, "message longer than 1 MiB");
	if (len > 0) {
		r = conn_reserve_input(c, len);
		if (r < 0)
			return r;
		memcpy(c->in + c->in_len, data, len);
		c->in_len += len;
	}
	return conn_process(c);
}

int proto_conn_process(struct proto_conn *c)
{
	if (c->dead || c->broken)
		return -EPIPE;
	return conn_process(c);
}

const char *proto_conn_output(const struct proto_conn *c, size_t *ret_len)
{
	*ret_len = c->out_len - c->out_start;
	/* nothing queued yet: no buffer either (NULL + 0 is undefined) */
	return c->out ? c->out + c->out_start : "";
}

void proto_conn_consume_output(struct proto_conn *c, size_t n)
{
	c->out_start += MIN(n, c->out_len - c->out_start);
	if (c->out_start == c->out_len)
		c->out_start = c->out_len = 0;
}

const struct proto_peer *proto_conn_peer(const struct proto_conn *c)
{
	return &c->peer;
}

bool proto_conn_is_dead(const struct proto_conn *c)
{
	return c->dead || c->broken;
}

/* ---- socket I/O on sd-event ---- */

/* After a non-blocking recvmsg()/send() failed: 1 = again (EINTR),
 * 0 = it would block (EAGAIN), else -errno. */
static int io_again(void)
{
	return errno == EINTR ? 1 : errno == EAGAIN ? 0 : -errno;
}

static int conn_read(struct proto_conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
	} control;

	/* one chunk per turn: a client that sends without pause gets its
	 * share of the loop, not all of it (the loop comes back while data
	 * waits: the io source is level-triggered) */
	for (;;) {
		size_t space = PROTO_MAX_INPUT - (c->in_len - c->in_start);
		int fds[PROTO_MAX_FDS];
		size_t n_fds = 0;
		struct iovec iov;
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = &control, .msg_controllen = sizeof(control),
		};
		ssize_t n;
		int r;

		if (space == 0)
			return 0; /* resumes when a call finished and input was consumed */
		r = conn_reserve_input(c, MIN(space, (size_t) PROTO_READ_CHUNK));
		if (r < 0)
			return r;
		iov.iov_base = c->in + c->in_len;
		iov.iov_len = MIN(space, c->in_alloc - c->in_len);
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0) {
			r = io_again();
			if (r > 0)
				continue;
			return r;
		}
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (n_fds < ELEMENTSOF(fds))
					fds[n_fds++] = fd;
				else
					close(fd);
			}
		}
		if (mh.msg_flags & MSG_CTRUNC) {
			for (size_t i = 0; i < n_fds; i++)
				close(fds[i]);
			return conn_protocol_error(c, -ENOBUFS, "too many file descriptors passed");
		}
		r = conn_add_fds(c, fds, n_fds);
		if (r < 0)
			return r;
		if (n == 0)
			c->read_eof = true;
		c->in_len += n;
		return 0;
	}
}

static int conn_write(struct proto_conn *c)
{
	int r;

	while (c->out_len > c->out_start) {
		ssize_t n = send(c->fd, c->out + c->out_start, c->out_len - c->out_start,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			r = io_again();
			if (r > 0)
				continue;
			return r;
		}
		c->out_start += n;
	}
	c->out_start = c->out_len = 0;
	return 0;
}

static bool conn_should_close(const struct proto_conn *c)
{
	bool out_empty = c->out_len == c->out_start;

	if (c->broken || c->hup)
		return true;
	if (c->dead)
		return out_empty;
	/* The peer sent all it will: close once everything is answered. */
	return c->read_eof && !c->current && out_empty;
}

/* One turn: read (one chunk), dispatch (PROTO_CALLS_PER_TURN), write,
 * and decide what to wait for next; work left over queues the connection
 * behind the others. Frees c when the connection is over; returns true
 * then. */
static bool conn_run(struct proto_conn *c, uint32_t revents)
{
	uint32_t events = 0;
	int r;

	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		r = conn_read(c);
		if (r < 0 && !c->dead) {
			if (r != -ECONNRESET)
				server_log(c->server, &c->peer, "reading from the client failed: %s",
					   strerror(-r));
			c->broken = true;
		}
	}
	if (!c->dead && !c->broken && (r = conn_process_budget(c, PROTO_CALLS_PER_TURN)) < 0 &&
	    !c->dead)
		c->broken = true;
	if (!c->broken && (r = conn_write(c)) < 0) {
		if (r != -EPIPE && r != -ECONNRESET)
			server_log(c->server, &c->peer, "writing to the client failed: %s",
				   strerror(-r));
		c->broken = true;
	}
	if (revents & (EPOLLHUP | EPOLLERR))
		c->hup = true;
	if (conn_should_close(c)) {
		proto_conn_free(c);
		return true;
	}
	/* Read more only once the calls already buffered are dispatched: the
	 * input a client can park in the daemon stays one chunk. */
	if (!c->read_eof && !c->dead && c->in_len - c->in_start < PROTO_MAX_INPUT &&
	    !conn_has_call(c))
		events |= EPOLLIN;
	if (c->out_len > c->out_start)
		events |= EPOLLOUT;
	(void) sd_event_source_set_io_events(c->io_src, events);
	if (!c->current && !c->dead && conn_has_call(c) &&
	    c->out_len - c->out_start <= PROTO_OUTPUT_HIGH)
		conn_wake(c);
	return false;
}

static int conn_io_cb(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	conn_run(userdata, revents);
	return 0;
}

/* ---- the run queue: connections with work left take turns ---- */

static void runq_remove(struct proto_conn *c)
{
	struct proto_runq *q = &c->server->runq[c->privileged];
	struct proto_conn **p;

	if (!c->queued)
		return;
	for (p = &q->head; *p; p = &(*p)->run_next)
		if (*p == c) {
			*p = c->run_next;
			break;
		}
	if (q->tail == c) {
		q->tail = NULL;
		for (struct proto_conn *i = q->head; i; i = i->run_next)
			q->tail = i;
	}
	c->run_next = NULL;
	c->queued = false;
	if (!q->head)
		(void) sd_event_source_set_enabled(q->src, SD_EVENT_OFF);
}

static int runq_cb(sd_event_source *src, void *userdata)
{
	struct proto_runq *q = userdata;
	struct proto_conn *c = q->head;

	if (!c) {
		(void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
		return 0;
	}
	runq_remove(c);
	conn_run(c, 0);
	return 0;
}

/* Queue c for a turn (a reply was queued, a call finished, calls wait). */
static void conn_wake(struct proto_conn *c)
{
	struct proto_runq *q = &c->server->runq[c->privileged];

	if (!q->src || !c->io_src || c->queued)
		return;
	c->queued = true;
	c->run_next = NULL;
	if (q->tail)
		q->tail->run_next = c;
	else
		q->head = c;
	q->tail = c;
	(void) sd_event_source_set_enabled(q->src, SD_EVENT_ON);
}

/* ---- idle connections ---- */

/* No call in flight for idle_usec since the last one was dispatched (or
 * since accept): the connection only holds a slot, close it. Bytes of an
 * unfinished message do not count as activity. */
static int conn_idle_cb(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct proto_conn *c = userdata;
	struct proto_server *s = c->server;
	uint64_t due = c->last_call + s->idle_usec;

	if (!c->current && due <= usec) {
		server_log(s, &c->peer, "no call for %llu s: closing the idle connection",
			   (unsigned long long) (s->idle_usec / 1000000));
		proto_conn_free(c);
		return 0;
	}
	(void) sd_event_source_set_time(src, c->current ? usec + s->idle_usec : due);
	(void) sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	return 0;
}

/* The supplementary groups of the peer: at most PROTO_PEER_MAX_GROUPS,
 * with keep (the socket group) first when the process is in it. */
static int peer_groups(int fd, gid_t keep, struct proto_peer *p)
{
	_cleanup_free_ gid_t *g = NULL;
	socklen_t len = 64 * sizeof(gid_t);
	size_t n;

	for (;;) {
		free(g);
		g = malloc(len);
		if (!g)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0)
			break;
		if (errno != ERANGE || len > 65536 * sizeof(gid_t))
			return -errno;
	}
	n = len / sizeof(gid_t);
	for (size_t i = 0; i < n; i++)
		if (g[i] == keep && keep != (gid_t)-1)
			p->groups[p->n_groups++] = keep;
	for (size_t i = 0; i < n && p->n_groups < PROTO_PEER_MAX_GROUPS; i++)
		if (g[i] != keep || keep == (gid_t)-1)
			p->groups[p->n_groups++] = g[i];
	return 0;
}

static int peer_from_socket(int fd, gid_t auth_group, struct proto_peer *ret)
{
	struct proto_peer p = { 0 };
	struct ucred uc;
	socklen_t l = sizeof(uc);
	int r;

	if (fd < 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0)
		return -errno;
	p.pid = uc.pid;
	p.uid = uc.uid;
	p.gid = uc.gid;
	r = peer_groups(fd, auth_group, &p);
	if (r < 0)
		return r;
	*ret = p;
	return 0;
}

unsigned proto_server_uid_connections(const struct proto_server *s, uid_t uid)
{
	unsigned n = 0;

	for (const struct proto_conn *c = s->conns; c; c = c->next)
		n += !c->privileged && c->peer.uid == uid;
	return n;
}

/* c is a better victim than best: no call in flight before one with a
 * call, then the one whose last call is oldest */
static bool conn_idler(const struct proto_conn *c, const struct proto_conn *best)
{
	if (!best || !c->current != !best->current)
		return !best || !c->current;
	return c->last_call < best->last_call;
}

/* The connection to close so that a newcomer holding `held` connections
 * of the shared pool gets in when the pool is full: the longest-idle one of
 * the uid holding the most, if that uid holds more than the newcomer.
 * Shares thus converge to an equal part per uid present, however the
 * connections were taken, and a uid that holds none always gets in (six
 * uids holding 8 each locked out a seventh: issue 32 item 10). Capping
 * each uid at the pool divided by the uids present would need the same
 * eviction when a new uid arrives, with a cap moving under everyone;
 * eviction alone is simpler. Root's and the socket group's connections are
 * never chosen. */
static struct proto_conn *server_victim(const struct proto_server *s, unsigned held)
{
	struct proto_conn *victim = NULL;
	unsigned most = held;

	for (struct proto_conn *c = s->conns; c; c = c->next) {
		unsigned n;

		if (c->privileged)
			continue;
		n = proto_server_uid_connections(s, c->peer.uid);
		if (n > most) {
			most = n;
			victim = c;
		} else if (victim && c->peer.uid == victim->peer.uid && conn_idler(c, victim)) {
			victim = c;
		}
	}
	return victim;
}

/* Room for one more connection of peer? Root and the socket group may
 * use every slot; everyone else shares all but PROTO_RESERVED_CONNECTIONS
 * of them, at most PROTO_MAX_CONNECTIONS_PER_UID per uid, and a newcomer
 * to a full pool takes the place of an idle connection of the uid that
 * holds the most (server_victim). So no number of connections from users
 * without rights locks root, or any other user, out. */
static int server_admit(struct proto_server *s, const struct proto_peer *peer, bool privileged)
{
	unsigned unprivileged = 0, held = privileged ? 0 : proto_server_uid_connections(s, peer->uid);
	struct proto_conn *victim;

	for (const struct proto_conn *c = s->conns; c; c = c->next)
		unprivileged += !c->privileged;
	if (!privileged && held >= PROTO_MAX_CONNECTIONS_PER_UID)
		return -EUSERS;
	if (s->n_conns < PROTO_MAX_CONNECTIONS &&
	    (privileged || unprivileged < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS))
		return 0;
	victim = server_victim(s, held);
	if (!victim)
		return s->n_conns >= PROTO_MAX_CONNECTIONS ? -EMFILE : -ENOSPC;
	server_log_limited(s, &s->evicted_log, &victim->peer,
			   "closing this uid's longest-idle connection: the connections for users "
			   "without rights are full and it holds the most (%u) of them",
			   proto_server_uid_connections(s, victim->peer.uid));
	proto_conn_free(victim);
	return 0;
}

static int conn_add_sources(struct proto_conn *c, int fd)
{
	struct proto_server *s = c->server;
	int r;

	r = sd_event_add_io(s->event, &c->io_src, fd, EPOLLIN, conn_io_cb, c);
	if (r >= 0)
		r = sd_event_source_set_priority(c->io_src, c->privileged ?
						 PROTO_PRIORITY_PRIVILEGED :
						 PROTO_PRIORITY_UNPRIVILEGED);
	if (r >= 0 && s->idle_usec)
		r = sd_event_add_time(s->event, &c->idle_src, CLOCK_MONOTONIC,
				      c->last_call + s->idle_usec, 0, conn_idle_cb, c);
	if (r < 0) {
		c->io_src = sd_event_source_disable_unref(c->io_src);
		c->idle_src = sd_event_source_disable_unref(c->idle_src);
	}
	return r;
}

int proto_conn_new(struct proto_server *s, int fd, const struct proto_peer *peer,
		   struct proto_conn **ret)
{
	struct proto_conn *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->server = s;
	c->fd = -1;
	c->last_call = now_usec();
	if (peer)
		c->peer = *peer;
	else if ((r = peer_from_socket(fd, s->auth_group, &c->peer)) < 0) {
		free(c);
		return r;
	}
	c->privileged = proto_peer_authorized(&c->peer, s->auth_group) > 0;
	r = server_admit(s, &c->peer, c->privileged);
	if (r >= 0 && s->event && fd >= 0)
		r = conn_add_sources(c, fd);
	if (r < 0) {
		free(c);
		return r;
	}
	c->fd = fd;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	if (ret)
		*ret = c;
	return 0;
}

struct proto_conn *proto_conn_free(struct proto_conn *c)
{
	struct proto_server *s;
	struct proto_call *call;

	if (!c)
		return NULL;
	s = c->server;
	call = TAKE_PTR(c->current);
	if (call) {
		call->conn = NULL;
		if (!call->finished && call->on_disconnect)
			call->on_disconnect(call, call->disconnect_userdata);
		proto_call_unref(call);
	}
	conn_take_fds(c, 0, UINT64_MAX, NULL);
	runq_remove(c);
	sd_event_source_disable_unref(c->io_src);
	sd_event_source_disable_unref(c->idle_src);
	if (c->fd >= 0)
		close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	/* A slot is free again: resume accepting if EMFILE stopped it. */
	if (s->listen_src)
		(void) sd_event_source_set_enabled(s->listen_src, SD_EVENT_ON);
	free(c->in);
	free(c->out);
	free(c);
	return NULL;
}

/* ---- server ---- */

#define PROTO_ACCEPTS_PER_TURN 16

static const char *refusal_reason(int r)
{
	switch (-r) {
	case EMFILE: return "too many connections";
	case ENOSPC: return "too many connections from users without rights (the rest is kept for root and the socket group)";
	case EUSERS: return "too many connections from this uid";
	}
	return strerror(-r);
}

/* One line per second at most: a connect loop must not flood the log. */
static void server_log_refusal(struct proto_server *s, const struct proto_peer *peer, int r)
{
	server_log_limited(s, &s->refused_log, peer, "refusing a connection: %s",
			   refusal_reason(r));
}

static int server_accept_cb(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct proto_server *s = userdata;

	/* a bounded batch: a connect loop gets no more of the event loop than
	 * that, the rest waits for the next turn (level-triggered) */
	for (unsigned i = 0; i < PROTO_ACCEPTS_PER_TURN; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct proto_peer peer;
		int r;

		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN)
				break;
			server_log(s, NULL, "accepting a connection failed: %m");
			if (errno == EMFILE || errno == ENFILE)
				/* Level-triggered: would spin. Resume when a connection closes. */
				(void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
			break;
		}
		r = peer_from_socket(cfd, s->auth_group, &peer);
		if (r >= 0)
			r = proto_conn_new(s, cfd, &peer, NULL);
		if (r < 0) {
			server_log_refusal(s, r == -EMFILE || r == -ENOSPC || r == -EUSERS ?
					   &peer : NULL, r);
			close(cfd);
		}
	}
	return 0;
}

int proto_server_new(sd_event *e, int listen_fd, const struct proto_method *methods,
		     void *userdata, struct proto_server **ret)
{
	_cleanup_(proto_server_freep) struct proto_server *s = NULL;
	int r;

	if ((e == NULL) != (listen_fd < 0))
		return -EINVAL;
	for (const struct proto_method *m = methods; m && m->name; m++) {
		const char *iface = m->interface;

		if (!iface || !interface_name_valid(iface, strlen(iface)) ||
		    !member_name_valid(m->name))
			return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->listen_fd = -1;
	s->methods = methods;
	s->userdata = userdata;
	s->auth_group = (gid_t)-1;
	s->vendor = strdup("flashd");
	s->product = strdup("flashd");
	s->version = strdup(PACKAGE_VERSION);
	s->url = strdup(PACKAGE_URL);
	if (!s->vendor || !s->product || !s->version || !s->url)
		return -ENOMEM;
	s->interfaces[s->n_interfaces++] = (struct proto_interface) {
		PROTO_SERVICE_INTERFACE, proto_service_description, NULL,
	};
	s->interfaces[s->n_interfaces++] = (struct proto_interface) {
		PROTO_FLASHD_INTERFACE, NULL, proto_flashd_description,
	};
	s->idle_usec = PROTO_IDLE_TIMEOUT_DEFAULT * 1000000ULL;
	if (e) {
		r = sd_event_add_io(e, &s->listen_src, listen_fd, EPOLLIN, server_accept_cb, s);
		if (r >= 0)
			r = sd_event_source_set_priority(s->listen_src, PROTO_PRIORITY_ACCEPT);
		for (unsigned i = 0; r >= 0 && i < ELEMENTSOF(s->runq); i++) {
			r = sd_event_add_defer(e, &s->runq[i].src, runq_cb, &s->runq[i]);
			if (r >= 0)
				r = sd_event_source_set_priority(s->runq[i].src, i ?
								 PROTO_PRIORITY_PRIVILEGED :
								 PROTO_PRIORITY_UNPRIVILEGED_QUEUE);
			if (r >= 0)
				r = sd_event_source_set_enabled(s->runq[i].src, SD_EVENT_OFF);
		}
		if (r < 0)
			return r;
		s->event = sd_event_ref(e);
		s->listen_fd = listen_fd;
	}
	*ret = TAKE_PTR(s);
	return 0;
}

void proto_server_set_idle_timeout(struct proto_server *s, uint64_t usec)
{
	s->idle_usec = usec;
}

struct proto_server *proto_server_free(struct proto_server *s)
{
	if (!s)
		return NULL;
	while (s->conns)
		proto_conn_free(s->conns);
	for (unsigned i = 0; i < ELEMENTSOF(s->runq); i++)
		sd_event_source_disable_unref(s->runq[i].src);
	s->listen_src = sd_event_source_disable_unref(s->listen_src);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	sd_event_unref(s->event);
	free(s->vendor);
	free(s->product);
	free(s->version);
	free(s->url);
	free(s);
	return NULL;
}

static int replace_string(char **p, const char *v)
{
	char *n;

	if (!v)
		return 0;
	n = strdup(v);
	if (!n)
		return -ENOMEM;
	free(*p);
	*p = n;
	return 0;
}

int proto_server_set_info(struct proto_server *s, const char *vendor, const char *product,
			  const char *version, const char *url)
{
	int r;

	if ((r = replace_string(&s->vendor, vendor)) < 0 ||
	    (r = replace_string(&s->product, product)) < 0 ||
	    (r = replace_string(&s->version, version)) < 0 ||
	    (r = replace_string(&s->url, url)) < 0)
		return r;
	return 0;
}

void proto_server_set_auth_group(struct proto_server *s, gid_t group)
{
	s->auth_group = group;
}

gid_t proto_server_auth_group(const struct proto_server *s)
{
	return s ? s->auth_group : (gid_t)-1;
}

int proto_server_set_auth_group_name(struct proto_server *s, const char *name)
{
	struct group gr, *res = NULL;
	char buf[16384];
	int r;

	r = getgrnam_r(name, &gr, buf, sizeof(buf), &res);
	if (r > 0)
		return -r;
	if (!res)
		return -ENOENT;
	s->auth_group = res->gr_gid;
	return 0;
}

int proto_server_add_interface(struct proto_server *s, const char *name,
			       const char *description)
{
	struct proto_interface *i;

	if (!name || !description || !interface_name_valid(name, strlen(name)))
		return -EINVAL;
	i = (struct proto_interface *) server_find_interface(s, name, strlen(name));
	if (i) {
		i->description = description;
		i->describe = NULL;
		return 0;
	}
	if (s->n_interfaces >= PROTO_MAX_INTERFACES)
		return -E2BIG;
	s->interfaces[s->n_interfaces++] = (struct proto_interface) { name, description, NULL };
	return 0;
}

void proto_server_set_log(struct proto_server *s, proto_log_fn fn, void *userdata)
{
	s->log = fn;
	s->log_userdata = userdata;
}

unsigned proto_server_n_connections(const struct proto_server *s)
{
	return s->n_conns;
}

void proto_server_close_fds_in_child(struct proto_server *s)
{
	if (!s)
		return;
	for (struct proto_conn *c = s->conns; c; c = c->next)
		if (c->fd >= 0)
			close(c->fd);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
}

/* ---- authorization ---- */

int proto_peer_authorized(const struct proto_peer *peer, gid_t group)
{
	if (peer->uid == 0)
		return 1;
	if (group == (gid_t)-1)
		return 0;
	if (peer->gid == group)
		return 1;
	for (unsigned i = 0; i < peer->n_groups && i < PROTO_PEER_MAX_GROUPS; i++)
		if (peer->groups[i] == group)
			return 1;
	return 0;
}

/* ---- sockets ---- */

static int mkdir_parents(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	char *s;

	if (!p)
		return -ENOMEM;
	s = strrchr(p, '/');
	if (!s || s == p)
		return 0;
	*s = 0;
	for (char *q = p + 1; ; q++) {
		if (*q == '/' || *q == 0) {
			char c = *q;

			*q = 0;
			if (mkdir(p, mode) < 0 && errno != EEXIST)
				return -errno;
			*q = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* A socket file at path: 0 stale (nobody listens), -EADDRINUSE live. */
static int socket_probe(const struct sockaddr_un *sa)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) == 0 || errno == EAGAIN)
		return -EADDRINUSE;
	return errno == ECONNREFUSED ? 0 : -errno;
}

int proto_listen(const char *path, int *ret_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	r = mkdir_parents(path, 0755);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			return -errno;
		if (lstat(path, &st) < 0)
			return -errno;
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		r = socket_probe(&sa);
		if (r < 0)
			return r;
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
			return -errno;
	}
	if (chmod(path, 0666) < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		unlink(path);
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int proto_listen_activated(int *ret_fd)
{
	int n, fd, flags;

	n = sd_listen_fds(1);
	if (n <= 0)
		return n;
	if (n > 1)
		return -EINVAL;
	fd = SD_LISTEN_FDS_START;
	if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
		return -EINVAL;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	*ret_fd = fd;
	return 1;
}
