/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A connection of the flashd control socket: its life cycle, its socket
 * I/O on sd-event (one turn at a time), idle connections closed. See
 * include/proto.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "proto-internal.h"
#include "util.h"

int proto_conn_feed(struct proto_conn *c, const void *data, size_t len, const int *fds,
		    size_t n_fds)
{
	int r;

	r = proto_frame_add_fds(c, fds, n_fds);
	if (r < 0)
		return r;
	if (c->dead || c->broken)
		return -EPIPE;
	if (c->in_len - c->in_start + len > PROTO_MAX_INPUT)
		return proto_frame_protocol_error(c, -EMSGSIZE, "message longer than 1 MiB");
	if (len > 0) {
		r = proto_frame_reserve_input(c, len);
		if (r < 0)
			return r;
		memcpy(c->in + c->in_len, data, len);
		c->in_len += len;
	}
	return proto_frame_process(c);
}

int proto_conn_process(struct proto_conn *c)
{
	if (c->dead || c->broken)
		return -EPIPE;
	return proto_frame_process(c);
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
		r = proto_frame_reserve_input(c, MIN(space, (size_t) PROTO_READ_CHUNK));
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
			return proto_frame_protocol_error(c, -ENOBUFS, "too many file descriptors passed");
		}
		r = proto_frame_add_fds(c, fds, n_fds);
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
bool proto_conn_run(struct proto_conn *c, uint32_t revents)
{
	uint32_t events = 0;
	int r;

	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		r = conn_read(c);
		if (r < 0 && !c->dead) {
			if (r != -ECONNRESET)
				proto_server_log(c->server, &c->peer, "reading from the client failed: %s",
					   strerror(-r));
			c->broken = true;
		}
	}
	if (!c->dead && !c->broken && (r = proto_frame_process_budget(c, PROTO_CALLS_PER_TURN)) < 0 &&
	    !c->dead)
		c->broken = true;
	if (!c->broken && (r = conn_write(c)) < 0) {
		if (r != -EPIPE && r != -ECONNRESET)
			proto_server_log(c->server, &c->peer, "writing to the client failed: %s",
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
	    !proto_frame_has_call(c))
		events |= EPOLLIN;
	if (c->out_len > c->out_start)
		events |= EPOLLOUT;
	(void) sd_event_source_set_io_events(c->io_src, events);
	if (!c->current && !c->dead && proto_frame_has_call(c) &&
	    c->out_len - c->out_start <= PROTO_OUTPUT_HIGH)
		proto_sched_wake(c);
	return false;
}

static int conn_io_cb(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	proto_conn_run(userdata, revents);
	return 0;
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
		proto_server_log(s, &c->peer, "no call for %llu s: closing the idle connection",
			   (unsigned long long) (s->idle_usec / 1000000));
		proto_conn_free(c);
		return 0;
	}
	(void) sd_event_source_set_time(src, c->current ? usec + s->idle_usec : due);
	(void) sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
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
	c->last_call = util_now_usec();
	if (peer)
		c->peer = *peer;
	else if ((r = proto_auth_peer_from_socket(fd, s->auth_group, &c->peer)) < 0) {
		free(c);
		return r;
	}
	c->privileged = proto_peer_authorized(&c->peer, s->auth_group) > 0;
	r = proto_sched_admit(s, &c->peer, c->privileged);
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
	proto_frame_take_fds(c, 0, UINT64_MAX, NULL);
	proto_sched_remove(c);
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
