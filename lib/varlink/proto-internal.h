/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the rooms of lib/varlink's protocol layer share: the objects and
 * the functions one room offers another (prefix = the room's file name).
 * Private to lib/varlink; the API is include/proto.h. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <json-c/json.h>

#include "cleanup.h"
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
	void *input;                 /* the typed parameters (method->input_size) */
	struct json_object *params;  /* a reference: input's strings point into it */
};

/* proto_frame.c: names, output, input, the envelope */
bool proto_frame_interface_name_valid(const char *s, size_t len);
bool proto_frame_member_name_valid(const char *s);
int proto_frame_queue(struct proto_conn *c, struct json_object *msg);
int proto_frame_protocol_error(struct proto_conn *c, int r, const char *reason);
void proto_frame_take_fds(struct proto_conn *c, uint64_t start, uint64_t end,
			  struct proto_call *call);
int proto_frame_process_budget(struct proto_conn *c, unsigned budget);
int proto_frame_process(struct proto_conn *c);
bool proto_frame_has_call(const struct proto_conn *c);
int proto_frame_reserve_input(struct proto_conn *c, size_t n);
int proto_frame_add_fds(struct proto_conn *c, const int *fds, size_t n_fds);

/* proto_call.c */
void proto_call_close_fds(struct proto_call *call);

/* proto_dispatch.c */
const struct proto_method *proto_dispatch_find_method(const struct proto_method *table,
						      const char *iface, size_t len,
						      const char *name);
int proto_dispatch_call(struct proto_call *call, struct json_object *params);
/* proto_typed.c */
bool proto_typed_is(enum proto_type type, struct json_object *j);
const char *proto_typed_check(const struct proto_param *table, struct json_object *params);

/* proto_service.c: org.varlink.service's methods */
extern const struct proto_method proto_service_methods[];

/* proto_conn.c */
bool proto_conn_run(struct proto_conn *c, uint32_t revents);

/* proto_sched.c: run queues and admission */
void proto_sched_remove(struct proto_conn *c);
int proto_sched_run_cb(sd_event_source *src, void *userdata);
void proto_sched_wake(struct proto_conn *c);
int proto_sched_admit(struct proto_server *s, const struct proto_peer *peer, bool privileged);

/* proto_auth.c */
int proto_auth_peer_from_socket(int fd, gid_t auth_group, struct proto_peer *ret);

/* proto_server.c */
_printf_(3, 4)
void proto_server_log(struct proto_server *s, const struct proto_peer *peer, const char *fmt, ...);
_printf_(4, 5)
void proto_server_log_limited(struct proto_server *s, struct log_limit *l,
			      const struct proto_peer *peer, const char *fmt, ...);
const struct proto_interface *proto_server_find_interface(const struct proto_server *s,
							  const char *name, size_t len);
bool proto_server_serves(const struct proto_server *s, const char *iface, size_t len);
