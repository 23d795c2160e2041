/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The server of the flashd control socket: its life cycle, accepting
 * connections, its settings, its log hook. See include/proto.h. */
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "proto-internal.h"
#include "util.h"

_printf_(3, 4)
void proto_server_log(struct proto_server *s, const struct proto_peer *peer, const char *fmt, ...)
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
void proto_server_log_limited(struct proto_server *s, struct log_limit *l,
			       const struct proto_peer *peer, const char *fmt, ...)
{
	uint64_t now = util_now_usec();
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
		proto_server_log(s, peer, "%s (and %u more in the last second)", msg, l->quiet);
	else
		proto_server_log(s, peer, "%s", msg);
	l->last = now;
	l->quiet = 0;
}

const struct proto_interface *proto_server_find_interface(const struct proto_server *s,
							   const char *name, size_t len)
{
	for (unsigned i = 0; i < s->n_interfaces; i++)
		if (strlen(s->interfaces[i].name) == len && !strncmp(s->interfaces[i].name, name, len))
			return &s->interfaces[i];
	return NULL;
}

/* An interface is served when the method table has a method of it. */
bool proto_server_serves(const struct proto_server *s, const char *iface, size_t len)
{
	if (strlen(PROTO_SERVICE_INTERFACE) == len && !strncmp(iface, PROTO_SERVICE_INTERFACE, len))
		return true;
	for (const struct proto_method *m = s->methods; m && m->name; m++)
		if (strlen(m->interface) == len && !strncmp(m->interface, iface, len))
			return true;
	return false;
}

unsigned proto_server_uid_connections(const struct proto_server *s, uid_t uid)
{
	unsigned n = 0;

	for (const struct proto_conn *c = s->conns; c; c = c->next)
		n += !c->privileged && c->peer.uid == uid;
	return n;
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
	proto_server_log_limited(s, &s->refused_log, peer, "refusing a connection: %s",
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
			proto_server_log(s, NULL, "accepting a connection failed: %m");
			if (errno == EMFILE || errno == ENFILE)
				/* Level-triggered: would spin. Resume when a connection closes. */
				(void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
			break;
		}
		r = proto_auth_peer_from_socket(cfd, s->auth_group, &peer);
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

		if (!iface || !proto_frame_interface_name_valid(iface, strlen(iface)) ||
		    !proto_frame_member_name_valid(m->name))
			return -EINVAL;
		/* io.flashd replies are checked against its IDL: a method
		 * bound without its declared reply would escape the check */
		if (!strcmp(iface, PROTO_FLASHD_INTERFACE) && !m->reply)
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
			r = sd_event_add_defer(e, &s->runq[i].src, proto_sched_run_cb, &s->runq[i]);
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

	if (!name || !description || !proto_frame_interface_name_valid(name, strlen(name)))
		return -EINVAL;
	i = (struct proto_interface *) proto_server_find_interface(s, name, strlen(name));
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
