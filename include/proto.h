/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Varlink protocol layer of the flashd control socket.
 *
 * Varlink (https://varlink.org): every message is one JSON object followed
 * by a NUL byte. A call is {"method": "io.flashd.X", "parameters": {...},
 * "more": bool?, "oneway": bool?}; a reply is {"parameters": {...},
 * "continues": bool?} or {"error": "io.flashd.Busy", "parameters": {...}}.
 * Calls on one connection are answered strictly in order: while one call
 * is unanswered, further calls stay buffered.
 *
 * The core (struct proto_conn: framing, parsing, dispatch, output queue) is
 * transport-agnostic so that it can be unit-tested and fuzzed without a
 * socket; proto_server_new() ties it to sd-event and a listening socket.
 * Library code: nothing here prints; problems are returned as -errno and
 * reported through the optional log hook (proto_server_set_log()). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

/* A message (without its NUL) may be at most this long; a longer one is
 * answered with io.flashd.ProtocolError and the connection is closed. */
#define PROTO_MAX_MESSAGE (1024 * 1024)
/* Unsent replies beyond this (a client that stopped reading) close the
 * connection instead of growing memory without bound. */
#define PROTO_MAX_OUTPUT (16 * 1024 * 1024)
/* File descriptors passed with one message / waiting on a connection. */
#define PROTO_MAX_FDS 4
#define PROTO_MAX_PENDING_FDS 16
/* Connections at once. Users without rights (neither root nor in the
 * socket group) share all but PROTO_RESERVED_CONNECTIONS of them, at most
 * PROTO_MAX_CONNECTIONS_PER_UID per uid, and a newcomer to a full share
 * replaces the longest-idle connection of the uid holding the most:
 * however many connections they hold, root and every other user still
 * get in (issues 13 item 10 and 32 item 10, docs/security.md). */
#define PROTO_MAX_CONNECTIONS 64
#define PROTO_RESERVED_CONNECTIONS 16
#define PROTO_MAX_CONNECTIONS_PER_UID 8
/* A connection without a call in flight for this long is closed
 * (proto_server_set_idle_timeout(); flashd.conf idle-timeout=). */
#define PROTO_IDLE_TIMEOUT_DEFAULT 60

#define PROTO_SERVICE_INTERFACE "org.varlink.service"
#define PROTO_FLASHD_INTERFACE "io.flashd"

/* The standard errors of org.varlink.service. */
#define PROTO_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"   /* {interface} */
#define PROTO_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"         /* {method} */
#define PROTO_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented" /* {method} */
#define PROTO_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"     /* {parameter} */
#define PROTO_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"     /* {} */
#define PROTO_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"             /* {} */

/* The errors of io.flashd (lib/varlink/io.flashd.varlink documents each). */
#define PROTO_ERROR_BUSY "io.flashd.Busy"                         /* {operation} */
#define PROTO_ERROR_DENIED "io.flashd.PermissionDenied"           /* {reason} */
#define PROTO_ERROR_INSTALL_FAILED "io.flashd.InstallFailed"      /* {reason} */
#define PROTO_ERROR_INVALID_BUNDLE "io.flashd.InvalidBundle"      /* {reason} */
#define PROTO_ERROR_NO_SUCH_SLOT "io.flashd.NoSuchSlot"           /* {slot} */
#define PROTO_ERROR_NO_ROLLBACK "io.flashd.NoRollbackTarget"      /* {reason} */
#define PROTO_ERROR_SLOT_REFUSED "io.flashd.SlotRefused"          /* {slot, reason} */
#define PROTO_ERROR_FORCE_REQUIRED "io.flashd.ForceRequired"    /* {reason} */
#define PROTO_ERROR_NO_SUCH_PARTITION "io.flashd.NoSuchPartition" /* {partition} */
#define PROTO_ERROR_ENV_REFUSED "io.flashd.EnvRefused"            /* {name, reason} */
#define PROTO_ERROR_CANCELLED "io.flashd.Cancelled"               /* {} */
#define PROTO_ERROR_DOWNGRADE_REFUSED "io.flashd.DowngradeRefused" /* {slot, version, running_version, reason} */
#define PROTO_ERROR_PROTOCOL "io.flashd.ProtocolError"            /* {reason} */
#define PROTO_ERROR_INTERNAL "io.flashd.InternalError"            /* {errno, errno_name, message} */

/* The interface definitions, as served by GetInterfaceDescription. The
 * io.flashd text is lib/varlink/io.flashd.varlink, compiled in gzip-compressed
 * at build time (tools/idl2c.sh: 12 KiB of text is 5 KiB of binary);
 * proto_flashd_description() inflates it into a new string. */
extern const unsigned char proto_flashd_idl_gz[];
extern const size_t proto_flashd_idl_gz_size;
int proto_flashd_description(char **ret);
extern const char proto_service_description[];

enum proto_type {
	PROTO_TYPE_BOOL,
	PROTO_TYPE_INT,
	PROTO_TYPE_FLOAT,  /* accepts integers too */
	PROTO_TYPE_STRING,
	PROTO_TYPE_OBJECT,
	PROTO_TYPE_ARRAY,
	_PROTO_TYPE_MAX,
};

/* One field of a method's parameters or of its reply. A parameter that is
 * absent or JSON null is "not given"; required ones must be given.
 * Parameters not in the table are rejected with InvalidParameter naming
 * them. In a reply, required means "never null" (the IDL's type without
 * "?"), and a field not in the table or of another type is refused.
 *
 * Typed dispatch (sd-varlink's sd_varlink_dispatch() with a field table):
 * when the method has an input_size, the dispatcher fills a struct of that
 * size before the handler runs, each parameter at its offset: a bool as
 * struct proto_bool, an int as struct proto_int, a float as struct
 * proto_float (given: the caller sent it), a string as const char * and
 * an object or array as struct json_object * (NULL: not given; both
 * borrowed from the call's message, valid while the call is referenced).
 * The handler reads it with proto_call_input(), never the JSON by name.
 *
 * Nested types (reply only): an object or array field names the fields of
 * its element type in fields (one table per IDL type, proto_flashd.c), and
 * the reply check goes into them, PROTO_MAX_DEPTH levels at most; a field
 * named "*" stands for every key (the IDL's map, [string]T). fields NULL:
 * the value is not looked into (input parameters). */
struct proto_param {
	const char *name;
	enum proto_type type;
	bool required;
	size_t offset;
	const struct proto_param *fields;
	/* building: an optional field not given is left out instead of null
	 * (where a reply left it out before typed building, and clients read
	 * "absent") */
	bool omit;
};
#define PROTO_MAX_DEPTH 4

struct proto_bool {
	bool value;
	bool given;
};
struct proto_int {
	int64_t value;
	bool given;
};
struct proto_float {
	double value;
	bool given;
};

enum {
	PROTO_NEEDS_AUTH = 1 << 0, /* changes state: root or the socket group only */
	PROTO_NEEDS_MORE = 1 << 1, /* must be called with "more": true (else ExpectedMore) */
	PROTO_TAKES_FDS = 1 << 2,  /* keeps fds passed with the call (else they are closed) */
};

struct proto_call;
struct proto_conn;
struct proto_server;

/* A method handler. It answers with proto_reply()/proto_error() before it
 * returns, or takes a reference (proto_call_ref()) and answers later from
 * the event loop. A negative return without an answer is answered for it:
 * -EACCES/-EPERM as PermissionDenied, -EOPNOTSUPP as MethodNotImplemented,
 * anything else as io.flashd.InternalError naming the errno. */
typedef int (*proto_method_fn)(struct proto_call *call, struct json_object *params,
			       void *userdata);

/* One entry of a method table; a table ends with an entry whose name is
 * NULL. params may be NULL for a method without parameters; a NULL
 * handler answers MethodNotImplemented (after the flags are checked).
 * input_size > 0: the parameters are filled into a struct of that size
 * (see struct proto_param). reply, when not NULL, declares the fields of
 * every non-error reply (proto_params_none: none): a reply carrying
 * another field, or one of the wrong type, is logged and answered with
 * io.flashd.InternalError instead, so that no reply says what the IDL
 * does not. */
struct proto_method {
	const char *interface;
	const char *name;
	proto_method_fn handler;
	unsigned flags;
	const struct proto_param *params;
	size_t input_size;
	const struct proto_param *reply;
	/* > 0: reply's offsets place its fields in a struct of this size,
	 * which proto_reply_typed() builds the reply from */
	size_t reply_size;
};

/* The parameters of a method without any ({ NULL }). The io.flashd
 * methods and their parameters are in proto_flashd.h. */
extern const struct proto_param proto_params_none[];

/* Supplementary groups kept per peer; see proto_peer.groups. */
#define PROTO_PEER_MAX_GROUPS 32

/* Credentials of the peer process, read from the socket when the
 * connection is accepted (SO_PEERCRED, SO_PEERGROUPS): what the process
 * had when it connected, as the kernel saw it, not what a user database
 * says about the uid. */
struct proto_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	/* Supplementary groups. A process with more than
	 * PROTO_PEER_MAX_GROUPS keeps the first ones, and the server's
	 * socket group in front when it is among them. */
	unsigned n_groups;
	gid_t groups[PROTO_PEER_MAX_GROUPS];
};

/* Authorization for PROTO_NEEDS_AUTH, from the peer's credentials alone:
 * root, or group is the peer's gid or one of its supplementary groups.
 * No user database lookup: a uid without a passwd entry is judged by its
 * groups like any other. group == (gid_t)-1 means "root only". Returns 1
 * (allowed) or 0 (refused). */
int proto_peer_authorized(const struct proto_peer *peer, gid_t group);

/* Log hook: the daemon logs protocol problems (garbage, oversized
 * messages, refused calls) with the peer named; the library never prints. */
typedef void (*proto_log_fn)(void *userdata, const struct proto_peer *peer, const char *msg);

/* ---- server ---- */

/* A server answering calls from methods (not copied: must outlive the
 * server). With e != NULL and listen_fd >= 0 it accepts connections on
 * listen_fd (owned by the server on success). With e == NULL and
 * listen_fd < 0 it is detached: connections are made with
 * proto_conn_new() and fed by hand (tests, fuzzing). */
int proto_server_new(sd_event *e, int listen_fd, const struct proto_method *methods,
		     void *userdata, struct proto_server **ret);
/* Closes every connection (firing disconnect handlers) and the listen fd. */
struct proto_server *proto_server_free(struct proto_server *s);
/* GetInfo's vendor/product/version/url (copied; NULL keeps the default). */
int proto_server_set_info(struct proto_server *s, const char *vendor, const char *product,
			  const char *version, const char *url);
/* The group whose members may call PROTO_NEEDS_AUTH methods, or
 * (gid_t)-1 for root only (the default). */
void proto_server_set_auth_group(struct proto_server *s, gid_t group);
/* Same by name; -ENOENT when no such group exists. */
int proto_server_set_auth_group_name(struct proto_server *s, const char *name);
/* The group of PROTO_NEEDS_AUTH ((gid_t)-1: root only), for other front
 * ends that apply the same rule (the daemon's D-Bus API). */
gid_t proto_server_auth_group(const struct proto_server *s);
/* Serve description for interface (GetInterfaceDescription) and list it
 * in GetInfo. io.flashd and org.varlink.service are built in. The strings
 * are not copied. */
int proto_server_add_interface(struct proto_server *s, const char *name,
			       const char *description);
void proto_server_set_log(struct proto_server *s, proto_log_fn fn, void *userdata);
/* Close a connection that had no call in flight for usec since its last
 * call (or since it was accepted); 0 never. Applies to connections
 * accepted afterwards. Default PROTO_IDLE_TIMEOUT_DEFAULT seconds. */
void proto_server_set_idle_timeout(struct proto_server *s, uint64_t usec);
unsigned proto_server_n_connections(const struct proto_server *s);
/* Connections of uid that are neither root's nor the socket group's. */
unsigned proto_server_uid_connections(const struct proto_server *s, uid_t uid);
/* In a forked child (the install worker): close this process's copies of
 * the listening socket and of every connection, touching nothing else.
 * Otherwise a connection the daemon closes stays open for its client
 * while the child runs, and a child that outlived the daemon would keep
 * the socket path bound. */
void proto_server_close_fds_in_child(struct proto_server *s);

/* ---- connections (the transport-agnostic core) ---- */

/* A connection on fd (owned on success; -1: no socket, replies stay in
 * the output queue for proto_conn_output()). peer NULL: read SO_PEERCRED
 * from fd. With an event loop, the connection registers its own I/O. */
int proto_conn_new(struct proto_server *s, int fd, const struct proto_peer *peer,
		   struct proto_conn **ret);
struct proto_conn *proto_conn_free(struct proto_conn *c);
/* Feed received bytes; fds (may be NULL/0) arrived with the first of them
 * (ownership passes to the connection, even on failure). Complete
 * messages are parsed and dispatched. Returns 0, or -EBADMSG (bytes that
 * are not a Varlink message), -EMSGSIZE (message too long), -ENOBUFS (too
 * many fds): the error reply is queued and the connection must be closed. */
int proto_conn_feed(struct proto_conn *c, const void *data, size_t len, const int *fds,
		    size_t n_fds);
/* Dispatch buffered calls after an asynchronous reply (detached mode;
 * the event loop does this by itself). Same returns as proto_conn_feed. */
int proto_conn_process(struct proto_conn *c);
/* Queued output; proto_conn_consume_output() drops its first n bytes. */
const char *proto_conn_output(const struct proto_conn *c, size_t *ret_len);
void proto_conn_consume_output(struct proto_conn *c, size_t n);
const struct proto_peer *proto_conn_peer(const struct proto_conn *c);
/* True when a protocol error ended the connection (only output remains). */
bool proto_conn_is_dead(const struct proto_conn *c);

/* ---- calls ---- */

typedef void (*proto_disconnect_fn)(struct proto_call *call, void *userdata);

struct proto_call *proto_call_ref(struct proto_call *call);
struct proto_call *proto_call_unref(struct proto_call *call);
/* "io.flashd.Install" */
const char *proto_call_method(const struct proto_call *call);
const struct proto_peer *proto_call_peer(const struct proto_call *call);
bool proto_call_wants_more(const struct proto_call *call);
bool proto_call_is_oneway(const struct proto_call *call);
/* False once the client went away. */
bool proto_call_is_connected(const struct proto_call *call);
/* Called once if the connection goes away before the final reply (the
 * install engine cancels). The call stays valid while referenced. */
void proto_call_set_disconnect_handler(struct proto_call *call, proto_disconnect_fn fn,
				       void *userdata);
/* The method's typed parameters, filled by the dispatcher (struct
 * proto_param); NULL for a method without input_size. */
const void *proto_call_input(const struct proto_call *call);
/* File descriptors passed with the call (PROTO_TAKES_FDS methods only). */
unsigned proto_call_n_fds(const struct proto_call *call);
/* Take fd number idx (ownership passes to the caller): the fd, -ENXIO if
 * idx is out of range, -EBADF if already taken. */
int proto_call_take_fd(struct proto_call *call, unsigned idx);

/* The final reply (params borrowed; NULL = {}). -EALREADY after the final
 * reply, -ENOTCONN when the client is gone (a oneway call is answered
 * silently), -EPROTO when params do not fit the method's declared reply
 * (then io.flashd.InternalError was sent instead). */
int proto_reply(struct proto_call *call, struct json_object *params);
/* The final reply built from a struct of the method's declared reply
 * (reply_size): the fields in the C types of struct proto_param, a
 * required one always sent, an optional one null when not given (NULL,
 * given false); objects and arrays are borrowed. -EINVAL when the method
 * declares no reply struct. */
int proto_reply_typed(struct proto_call *call, const void *reply);
/* An object of the fields of table from the struct at s, as
 * proto_reply_typed() makes a reply: nested values (a Slot, an array of
 * them) are made with this and placed as struct json_object * in the
 * struct of their parent. NULL without memory. */
struct json_object *proto_typed_build(const struct proto_param *table, const void *s);
/* An array of n objects of table, from the structs at items, size bytes
 * apart. NULL without memory. */
struct json_object *proto_typed_array(const struct proto_param *table, const void *items,
				      size_t n, size_t size);
/* A field of a JSON record (a file another program wrote: flashd boot's
 * record, an install record) for a typed struct: the value when o has
 * key with a value of that type, else NULL / not given. o may be NULL. */
const char *proto_typed_string_at(struct json_object *o, const char *key);
struct proto_int proto_typed_int_at(struct json_object *o, const char *key);
struct proto_bool proto_typed_bool_at(struct json_object *o, const char *key);
/* An intermediate reply ("continues": true). Dropped, returning 0, when
 * the caller did not ask for "more": progress is only for those who do. */
int proto_reply_more(struct proto_call *call, struct json_object *params);
/* The final reply as an error; params borrowed, NULL = {}. */
int proto_error(struct proto_call *call, const char *error, struct json_object *params);
/* proto_error(call, error, {key: value}) for the common one-string case. */
int proto_error_string(struct proto_call *call, const char *error, const char *key,
		       const char *value);
int proto_error_invalid_parameter(struct proto_call *call, const char *parameter);
/* io.flashd.InternalError {errno, errno_name, message}; r is -errno. */
int proto_error_errno(struct proto_call *call, int r, const char *message);

/* ---- sockets ---- */

/* Bind a listening AF_UNIX stream socket at path: creates the parent
 * directory (0755), replaces a stale socket (-EADDRINUSE if a live server
 * answers there, -EEXIST if path is not a socket), mode 0666: access
 * control is by peer credentials. The fd is non-blocking and O_CLOEXEC. */
int proto_listen(const char *path, int *ret_fd);
/* Socket activation: 1 and the fd when systemd passed exactly one
 * listening AF_UNIX stream socket, 0 when none, -EINVAL otherwise. */
int proto_listen_activated(int *ret_fd);

static inline void proto_server_freep(struct proto_server **s) { proto_server_free(*s); }
static inline void proto_conn_freep(struct proto_conn **c) { proto_conn_free(*c); }
static inline void proto_call_unrefp(struct proto_call **c) { proto_call_unref(*c); }
#define _cleanup_proto_server_ __attribute__((cleanup(proto_server_freep)))
#define _cleanup_proto_conn_ __attribute__((cleanup(proto_conn_freep)))
#define _cleanup_proto_call_ __attribute__((cleanup(proto_call_unrefp)))
