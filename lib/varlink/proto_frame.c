/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The framing of the flashd control socket: a connection's input and output
 * buffers, messages cut at their NUL, the call envelope parsed and checked,
 * fds matched to the message they came with. See include/proto.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "proto-internal.h"
#include "util.h"

static void tokener_freep(struct json_tokener **t)
{
	if (*t)
		json_tokener_free(*t);
}

/* ---- names ---- */

/* A reverse-domain interface name: at least two dot-separated labels of
 * letters/digits with inner dashes, the first starting with a letter. */
bool proto_frame_interface_name_valid(const char *s, size_t len)
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

bool proto_frame_member_name_valid(const char *s)
{
	if (!isascii(*s) || !isupper(*s))
		return false;
	for (s++; *s; s++)
		if (!isascii(*s) || !isalnum(*s))
			return false;
	return true;
}

/* ---- output ---- */

int proto_frame_queue(struct proto_conn *c, struct json_object *msg)
{
	const char *s;
	size_t len;

	s = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	len = strlen(s) + 1; /* with the NUL that ends every message */
	if (c->out_len - c->out_start + len > PROTO_MAX_OUTPUT) {
		proto_server_log(c->server, &c->peer,
			   "client does not read its replies (%zu bytes queued), disconnecting",
			   c->out_len - c->out_start);
		c->broken = true;
		proto_sched_wake(c);
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
	proto_sched_wake(c);
	return 0;
}

/* A reply outside any call: only ProtocolError, before closing. */
int proto_frame_protocol_error(struct proto_conn *c, int r, const char *reason)
{
	_cleanup_json_ struct json_object *msg = json_object_new_object();
	struct json_object *params = json_object_new_object();

	proto_server_log(c->server, &c->peer, "protocol error: %s; closing the connection", reason);
	if (!msg || !params) {
		json_object_put(params);
		c->broken = true;
		return r;
	}
	json_object_object_add(params, "reason", json_object_new_string(reason));
	json_object_object_add(msg, "error", json_object_new_string(PROTO_ERROR_PROTOCOL));
	json_object_object_add(msg, "parameters", params);
	(void) proto_frame_queue(c, msg);
	c->dead = true;
	proto_sched_wake(c);
	return r;
}

/* Collect the fds that arrived with the message at stream offsets
 * [start, end] into call. */
void proto_frame_take_fds(struct proto_conn *c, uint64_t start, uint64_t end,
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

		proto_frame_take_fds(c, start, end, NULL);
		snprintf(reason, sizeof(reason), "message is not valid JSON: %s (near byte %zu)",
			 e == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(e),
			 json_tokener_get_parse_end(tok));
		return proto_frame_protocol_error(c, -EBADMSG, reason);
	}
	for (end_off = json_tokener_get_parse_end(tok); end_off < len; end_off++)
		if (!isspace((unsigned char) data[end_off])) {
			proto_frame_take_fds(c, start, end, NULL);
			return proto_frame_protocol_error(c, -EBADMSG, "trailing data after the JSON object");
		}

	call = calloc(1, sizeof(*call));
	if (!call)
		return -ENOMEM;
	call->n_ref = 1;
	call->server = c->server;
	call->peer = c->peer;
	proto_frame_take_fds(c, start, end, call);

#define ENVELOPE_ERROR(msgtext) return proto_frame_protocol_error(c, -EBADMSG, msgtext)
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
	if (!dot || !proto_frame_interface_name_valid(name, dot - name) || !proto_frame_member_name_valid(dot + 1)) {
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

	call->method = proto_dispatch_find_method(proto_service_methods, name, dot - name, dot + 1);
	if (!call->method)
		call->method = proto_dispatch_find_method(c->server->methods, name, dot - name, dot + 1);
	if (!call->method) {
		if (!proto_server_serves(c->server, name, dot - name)) {
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
	return proto_dispatch_call(call, params);
}

/* Dispatch up to budget buffered calls (0: all of them). With an event
 * loop, a client that leaves its replies unread gets no more calls
 * answered until it reads (its turn comes back with EPOLLOUT). */
int proto_frame_process_budget(struct proto_conn *c, unsigned budget)
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
				proto_frame_take_fds(c, 0, UINT64_MAX, NULL);
				return proto_frame_protocol_error(c, -EMSGSIZE,
							   "message longer than 1 MiB");
			}
			break;
		}
		len = nul - (c->in + start);
		/* the limit holds however the bytes were split across reads */
		if (len > PROTO_MAX_MESSAGE) {
			proto_frame_take_fds(c, 0, UINT64_MAX, NULL);
			return proto_frame_protocol_error(c, -EMSGSIZE, "message longer than 1 MiB");
		}
		c->in_start = c->in_scan = start + len + 1;
		c->last_call = util_now_usec();
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

int proto_frame_process(struct proto_conn *c)
{
	return proto_frame_process_budget(c, 0);
}

/* A complete call waits in the input buffer. */
bool proto_frame_has_call(const struct proto_conn *c)
{
	return c->in_len > c->in_scan && memchr(c->in + c->in_scan, 0, c->in_len - c->in_scan);
}

int proto_frame_reserve_input(struct proto_conn *c, size_t n)
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
int proto_frame_add_fds(struct proto_conn *c, const int *fds, size_t n_fds)
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
	return proto_frame_protocol_error(c, -ENOBUFS, "too many file descriptors passed");
}
