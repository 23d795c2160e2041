/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Synchronous Varlink client (see include/client.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "client.h"
#include "proto.h"
#include "util.h"

struct client {
	int fd;
	uint64_t timeout_usec;
	int fds[PROTO_MAX_FDS];
	unsigned n_fds;
	char *in;
	size_t in_len, in_alloc;
	char *error;
	struct json_object *error_params;
	bool broken;
};

static void client_drop_fds(struct client *c)
{
	for (unsigned i = 0; i < c->n_fds; i++)
		close(c->fds[i]);
	c->n_fds = 0;
}

int client_new_from_fd(int fd, struct client **ret)
{
	struct client *c;
	int flags;

	if (fd < 0)
		return -EBADF;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->timeout_usec = CLIENT_DEFAULT_TIMEOUT_USEC;
	*ret = c;
	return 0;
}

int client_connect(const char *address, struct client **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	const char *path = address;
	int r;

	if (!strncmp(path, "unix:", 5))
		path += 5;
	if (!*path)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
		if (errno != EINTR)
			return -errno;
	r = client_new_from_fd(fd, ret);
	if (r < 0)
		return r;
	TAKE_FD(fd);
	return 0;
}

struct client *client_free(struct client *c)
{
	if (!c)
		return NULL;
	client_drop_fds(c);
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->error);
	json_object_put(c->error_params);
	free(c);
	return NULL;
}

void client_set_timeout(struct client *c, uint64_t usec)
{
	c->timeout_usec = usec;
}

int client_push_fd(struct client *c, int fd)
{
	int copy;

	if (fd < 0)
		return -EBADF;
	if (c->n_fds >= PROTO_MAX_FDS)
		return -E2BIG;
	copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (copy < 0)
		return -errno;
	c->fds[c->n_fds] = copy;
	return c->n_fds++;
}

/* Wait for events on the socket until deadline (0 = forever). */
static int client_wait(struct client *c, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = events };
		int timeout = -1, r;

		if (deadline) {
			uint64_t n = util_now_usec();

			if (n >= deadline)
				return -ETIMEDOUT;
			timeout = (int) MIN((deadline - n + 999) / 1000, (uint64_t) INT32_MAX);
		}
		r = poll(&p, 1, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ETIMEDOUT;
		return 0;
	}
}

static uint64_t client_deadline(const struct client *c)
{
	return c->timeout_usec ? util_now_usec() + c->timeout_usec : 0;
}

static int client_send(struct client *c, const char *data, size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * PROTO_MAX_FDS)];
	} control;
	uint64_t deadline = client_deadline(c);
	size_t done = 0;
	bool fds_sent = c->n_fds == 0;

	while (done < len) {
		struct iovec iov = { .iov_base = (char *) data + done, .iov_len = len - done };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;
		int r;

		if (!fds_sent) {
			struct cmsghdr *cm;

			memset(&control, 0, sizeof(control));
			mh.msg_control = &control;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * c->n_fds);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * c->n_fds);
			memcpy(CMSG_DATA(cm), c->fds, sizeof(int) * c->n_fds);
		}
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return errno == EPIPE ? -ECONNRESET : -errno;
			r = client_wait(c, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		fds_sent = true;
		done += n;
	}
	client_drop_fds(c);
	return 0;
}

/* The next complete message, NUL-terminated, in a fresh buffer. */
static int client_read_message(struct client *c, char **ret)
{
	uint64_t deadline = client_deadline(c);
	size_t scanned = 0;

	for (;;) {
		char *nul = c->in_len > scanned ? memchr(c->in + scanned, 0, c->in_len - scanned) : NULL;
		ssize_t n;
		int r;

		if (nul) {
			size_t len = nul - c->in + 1;
			char *msg = malloc(len);

			if (!msg)
				return -ENOMEM;
			memcpy(msg, c->in, len);
			memmove(c->in, c->in + len, c->in_len - len);
			c->in_len -= len;
			*ret = msg;
			return 0;
		}
		scanned = c->in_len;
		if (c->in_len > PROTO_MAX_MESSAGE)
			return -EMSGSIZE;
		if (c->in_alloc - c->in_len < 4096) {
			size_t want = MAX(c->in_alloc * 2, (size_t) 65536);
			char *p = realloc(c->in, want);

			if (!p)
				return -ENOMEM;
			c->in = p;
			c->in_alloc = want;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_alloc - c->in_len, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			r = client_wait(c, POLLIN, deadline);
			if (r < 0)
				return r;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		c->in_len += n;
	}
}

static void client_clear_error(struct client *c)
{
	free(c->error);
	c->error = NULL;
	json_object_put(c->error_params);
	c->error_params = NULL;
}

/* The tests check every reply against the interface description the
 * daemon serves (tests/lib/varlink-idl.py): with FLASHD_TEST_REPLY_LOG set,
 * each reply is appended to that file as {"method": ..., "reply": ...},
 * one line in one write (clients of several processes share the file).
 * A file that cannot be opened (another uid's test client) is skipped. */
static void client_log_reply(const char *method, const char *data)
{
	const char *path = getenv("FLASHD_TEST_REPLY_LOG");
	_cleanup_json_ struct json_object *m = NULL;
	_cleanup_free_ char *line = NULL;
	_cleanup_close_ int fd = -1;
	int n;

	if (!path || !*path)
		return;
	m = json_object_new_string(method);
	n = asprintf(&line, "{\"method\":%s,\"reply\":%s}\n",
		     json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN), data);
	if (n < 0) {
		line = NULL;
		return;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0 && write(fd, line, n) != n)
		return; /* a test log: nothing to do about a short write */
}

static int client_build(const char *method, struct json_object *params, unsigned flags,
			char **ret, size_t *ret_len)
{
	_cleanup_json_ struct json_object *msg = json_object_new_object();
	const char *s;

	if (!msg)
		return -ENOMEM;
	json_object_object_add(msg, "method", json_object_new_string(method));
	json_object_object_add(msg, "parameters",
			       params ? json_object_get(params) : json_object_new_object());
	if (flags & CLIENT_MORE)
		json_object_object_add(msg, "more", json_object_new_boolean(true));
	if (flags & CLIENT_ONEWAY)
		json_object_object_add(msg, "oneway", json_object_new_boolean(true));
	s = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	*ret_len = strlen(s) + 1;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int client_call(struct client *c, const char *method, struct json_object *params,
		unsigned flags, client_reply_fn reply_cb, void *userdata)
{
	_cleanup_free_ char *req = NULL;
	size_t len;
	int r;

	client_clear_error(c);
	if (c->broken)
		return -ENOTCONN;
	if ((flags & CLIENT_MORE) && (flags & CLIENT_ONEWAY))
		return -EINVAL;
	r = client_build(method, params, flags, &req, &len);
	if (r < 0)
		return r;
	r = client_send(c, req, len);
	if (r < 0) {
		c->broken = true;
		return r;
	}
	if (flags & CLIENT_ONEWAY)
		return 0;

	for (;;) {
		_cleanup_(json_object_putp) struct json_object *msg = NULL;
		_cleanup_free_ char *data = NULL;
		struct json_object *p = NULL, *e = NULL, *cont = NULL;
		const char *error = NULL;
		bool continues = false;

		r = client_read_message(c, &data);
		if (r < 0) {
			c->broken = true;
			return r;
		}
		client_log_reply(method, data);
		msg = json_tokener_parse(data);
		if (!msg || !json_object_is_type(msg, json_type_object) ||
		    (json_object_object_get_ex(msg, "parameters", &p) && p &&
		     !json_object_is_type(p, json_type_object)) ||
		    (json_object_object_get_ex(msg, "error", &e) && e &&
		     !json_object_is_type(e, json_type_string)) ||
		    (json_object_object_get_ex(msg, "continues", &cont) && cont &&
		     !json_object_is_type(cont, json_type_boolean))) {
			c->broken = true;
			return -EBADMSG;
		}
		if (!p) {
			p = json_object_new_object();
			if (!p)
				return -ENOMEM;
			json_object_object_add(msg, "parameters", p);
		}
		error = e ? json_object_get_string(e) : NULL;
		continues = cont && json_object_get_boolean(cont);
		if (continues && (error || !(flags & CLIENT_MORE))) {
			c->broken = true; /* errors end a call; continues needs "more" */
			return -EBADMSG;
		}
		if (error) {
			c->error = strdup(error);
			c->error_params = json_object_get(p);
			if (!c->error)
				return -ENOMEM;
		}
		if (reply_cb) {
			r = reply_cb(c, p, error, continues, userdata);
			if (r < 0) {
				if (continues)
					c->broken = true;
				return r;
			}
		}
		if (!continues)
			return error ? client_error_to_errno(error, p) : 0;
	}
}

static int simple_cb(struct client *c, struct json_object *params, const char *error,
		     bool continues, void *userdata)
{
	struct json_object **ret = userdata;

	if (!error) {
		json_object_put(*ret);
		*ret = json_object_get(params);
	}
	return 0;
}

int client_call_simple(struct client *c, const char *method, struct json_object *params,
		       struct json_object **ret)
{
	struct json_object *reply = NULL;
	int r;

	r = client_call(c, method, params, 0, simple_cb, &reply);
	if (r < 0) {
		json_object_put(reply);
		return r;
	}
	if (ret)
		*ret = reply;
	else
		json_object_put(reply);
	return 0;
}

const char *client_error_name(const struct client *c)
{
	return c->error;
}

struct json_object *client_error_parameters(const struct client *c)
{
	return c->error_params;
}

static const struct {
	const char *name;
	int err;
	const char *text;
} error_table[] = {
	{ PROTO_ERROR_PERMISSION_DENIED, -EACCES,
	  "permission denied (root or the socket group required)" },
	{ PROTO_ERROR_DENIED, -EACCES, "refused by the daemon's policy" },
	{ PROTO_ERROR_BUSY, -EBUSY, "the daemon is busy" },
	{ PROTO_ERROR_METHOD_NOT_FOUND, -EOPNOTSUPP, "the daemon does not know this method" },
	{ PROTO_ERROR_INTERFACE_NOT_FOUND, -EOPNOTSUPP, "the daemon does not know this interface" },
	{ PROTO_ERROR_METHOD_NOT_IMPLEMENTED, -EOPNOTSUPP, "not implemented by the daemon" },
	{ PROTO_ERROR_EXPECTED_MORE, -EOPNOTSUPP, "the method must be called with 'more'" },
	{ PROTO_ERROR_INVALID_PARAMETER, -EINVAL, "invalid parameter" },
	{ PROTO_ERROR_NO_SUCH_SLOT, -ENOENT, "no such slot" },
	{ PROTO_ERROR_NO_ROLLBACK, -ENOENT, "no other verified slot to roll back to" },
	{ PROTO_ERROR_NO_SUCH_PARTITION, -ENOENT, "no such partition" },
	{ PROTO_ERROR_CANCELLED, -ECANCELED, "cancelled" },
	{ PROTO_ERROR_INVALID_BUNDLE, -EBADMSG, "invalid bundle" },
	{ PROTO_ERROR_ENV_REFUSED, -EPERM, "environment change refused" },
	{ PROTO_ERROR_SLOT_REFUSED, -EPERM, "refused by the A/B policy" },
	{ PROTO_ERROR_FORCE_REQUIRED, -EPERM, "refused without --force" },
	{ PROTO_ERROR_INSTALL_FAILED, -EIO, "installation failed" },
	{ PROTO_ERROR_DOWNGRADE_REFUSED, -EPERM, "downgrade refused" },
	{ PROTO_ERROR_PROTOCOL, -EPROTO, "protocol error" },
	{ PROTO_ERROR_INTERNAL, -EIO, "internal error in the daemon" },
};

int client_error_to_errno(const char *error, struct json_object *params)
{
	struct json_object *v;

	if (!error)
		return 0;
	if (!strcmp(error, PROTO_ERROR_INTERNAL) && json_object_object_get_ex(params, "errno", &v) &&
	    json_object_is_type(v, json_type_int) && json_object_get_int(v) > 0 &&
	    json_object_get_int(v) < 4096)
		return -json_object_get_int(v);
	for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
		if (!strcmp(error_table[i].name, error))
			return error_table[i].err;
	return -EREMOTEIO;
}

const char *client_error_message(const struct client *c, char *buf, size_t len)
{
	const char *text = NULL;
	size_t off;
	bool first = true;

	if (len == 0)
		return buf;
	if (!c->error) {
		snprintf(buf, len, "no error");
		return buf;
	}
	for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
		if (!strcmp(error_table[i].name, c->error))
			text = error_table[i].text;
	off = snprintf(buf, len, "%s", text ? text : c->error);
	if (c->error_params && json_object_is_type(c->error_params, json_type_object)) {
		json_object_object_foreach(c->error_params, key, val) {
			if (off >= len)
				break;
			off += snprintf(buf + off, len - off, "%s%s: %s", first ? " (" : ", ", key,
					val ? (json_object_is_type(val, json_type_string) ?
					       json_object_get_string(val) :
					       json_object_to_json_string(val)) : "null");
			first = false;
		}
	}
	if (!first && off < len)
		off += snprintf(buf + off, len - off, ")");
	if (text && off < len)
		snprintf(buf + off, len - off, " [%s]", c->error);
	return buf;
}
