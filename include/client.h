/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small synchronous Varlink client: flashctl's side of the control
 * socket. One call at a time; replies with "continues": true are handed to
 * the reply callback one by one until the final reply. Library code: it
 * never prints; Varlink errors are kept for client_error_message(). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

struct client;

#define CLIENT_DEFAULT_TIMEOUT_USEC (60ULL * 1000000ULL)

enum {
	CLIENT_MORE = 1 << 0,   /* ask for intermediate replies ("more": true) */
	CLIENT_ONEWAY = 1 << 1, /* expect no reply ("oneway": true) */
};

/* Connect to "PATH" or "unix:PATH". -ENOENT/-ECONNREFUSED when no daemon
 * listens there, -EACCES when the socket may not be opened. */
int client_connect(const char *address, struct client **ret);
/* Use an already connected stream socket (owned on success). */
int client_new_from_fd(int fd, struct client **ret);
struct client *client_free(struct client *c);
/* The longest wait for the next reply (or to send), 0 = forever. */
void client_set_timeout(struct client *c, uint64_t usec);
/* Pass fd (dup'ed; the caller keeps its own) with the next call, via
 * SCM_RIGHTS. Its index among the fds of that call is returned (the value
 * of the "fd" parameter of io.flashd.Install). */
int client_push_fd(struct client *c, int fd);

/* Called for every reply: params (borrowed, never NULL), error (the
 * Varlink error name or NULL) and continues (more replies follow). A
 * negative return stops the call with that value (the connection is then
 * unusable: replies still in flight would be misread). */
typedef int (*client_reply_fn)(struct client *c, struct json_object *params, const char *error,
			       bool continues, void *userdata);

/* Call method with params (borrowed; NULL = {}) and wait for the final
 * reply. Returns 0 when it succeeded; when it is an error reply, the
 * negative errno from client_error_to_errno() (the name and parameters
 * stay readable until the next call); -ETIMEDOUT when no reply came in
 * time; -ECONNRESET when the daemon closed the connection; -EBADMSG for a
 * reply that is not Varlink. */
int client_call(struct client *c, const char *method, struct json_object *params,
		unsigned flags, client_reply_fn reply_cb, void *userdata);
/* client_call() for one reply: its parameters (a new reference) in *ret. */
int client_call_simple(struct client *c, const char *method, struct json_object *params,
		       struct json_object **ret);

/* The error of the last call, NULL if it succeeded. */
const char *client_error_name(const struct client *c);
struct json_object *client_error_parameters(const struct client *c);
/* "the daemon is busy (operation: install)"-style text naming the error
 * and its parameters; buf is returned. */
const char *client_error_message(const struct client *c, char *buf, size_t len);
/* Varlink error name -> -errno: PermissionDenied -EACCES, Busy -EBUSY,
 * MethodNotFound/InterfaceNotFound/MethodNotImplemented -EOPNOTSUPP,
 * InvalidParameter -EINVAL, NoSuchSlot/NoSuchPartition -ENOENT, Cancelled
 * -ECANCELED, InvalidBundle -EBADMSG, EnvRefused -EPERM, InstallFailed
 * -EIO, ProtocolError -EPROTO, InternalError its errno, others -EREMOTEIO. */
int client_error_to_errno(const char *error, struct json_object *params);

static inline void client_freep(struct client **c) { client_free(*c); }
#define _cleanup_client_ __attribute__((cleanup(client_freep)))
