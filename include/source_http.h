/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A bundle source for http(s) URLs (lib/update/source_http.c), libcurl
 * loaded on first use (curl_dl.h).
 *
 * read() is a streaming GET (in doubling ranges at first); pread() and plan() use Range requests, one
 * request per run of planned ranges that lie close together (see the
 * file). A transfer that breaks (dropped connection, 5xx, no byte for
 * stall_timeout seconds) is retried with backoff and resumed with
 * "Range: bytes=N-" and "If-Range: <ETag or Last-Modified>", so a bundle
 * that changed on the server is never spliced. Only http and https.
 *
 * Redirects are followed one hop at a time, each judged from libcurl's own
 * parse of it (CURLINFO_REDIRECT_URL): the URL's credentials, the netrc
 * file's and the configured headers go to the URL's origin (scheme, host,
 * port) only. A redirect to another origin is refused unless
 * redirect_other_origin, which follows it without them; from https to http
 * never. */
#pragma once
#include <stdbool.h>
#include "source.h"

struct source_http_conf {
	const char *ca_file;        /* NULL: the system's CA store */
	const char *client_cert;    /* PEM, NULL: none */
	const char *client_key;     /* PEM, NULL: in client_cert */
	char *const *headers;       /* "Name: value" lines, NULL-terminated; may be NULL */
	const char *netrc_file;     /* credentials per host, for the URL's origin; NULL: none */
	unsigned connect_timeout;   /* seconds; 0: 30 */
	unsigned stall_timeout;     /* seconds without a byte; 0: 60 */
	unsigned retries;           /* attempts after a transient error without progress */
	unsigned retry_delay_ms;    /* first backoff, doubled each time; 0: 1000 */
	unsigned min_rate;          /* bytes/s: slower over min_rate_time fails; 0: no minimum */
	unsigned min_rate_time;     /* seconds spent waiting for the network; 0: 60 */
	unsigned deadline;          /* seconds for the whole download; 0: none */
	bool redirect_other_origin; /* follow, without credentials and headers */
	volatile int *cancel;       /* polled every 200 ms while waiting; may be NULL */
};

/* url for a log or an error message: "user:password@" and the query
 * (signed URLs carry their tokens there) become "***". Returns buf. */
const char *source_http_redact(const char *url, char *buf, size_t len);
/* Whether s names a URL at all ("scheme://"), to tell a URL from a path. */
bool source_http_is_url(const char *s);
/* A bundle's URL, checked once where it comes in (flashctl, the daemon's
 * front ends) and carried as this to the source that fetches it: only
 * source_http_url_parse() makes one. */
struct source_http_url {
	char *url;   /* as given, credentials and query included */
	char *shown; /* for logs, replies and the history: source_http_redact()ed */
};
/* -EPROTONOSUPPORT unless s is an http:// or https:// URL, -EINVAL
 * without a host (err names it, redacted); else *ret holds it. */
int source_http_url_parse(const char *s, struct source_http_url *ret, struct error *err);
/* Frees what parse made; accepts a zeroed one. */
void source_http_url_done(struct source_http_url *u);
/* Opens url: the first GET's headers have arrived when this returns (so
 * a 404, a refused certificate or a dead host fail here) and size is
 * known when the server sent it. conf (and its strings) must outlive the
 * source; url need not. */
int source_http_new(const struct source_http_url *url, const struct source_http_conf *conf,
		    struct source **ret, struct error *err);
/* fetched (source.h) counts every body byte received, also those of
 * dropped gaps and retries; like every backend, the bytes read() and
 * pread() return are added by source_read()/source_pread().
 * Requests and retries so far (tests and the benchmark): */
unsigned source_http_requests(const struct source *s);
unsigned source_http_retries(const struct source *s);
/* Body bytes received so far, used or not: what crossed the network (the
 * bytes_downloaded of progress). fetched catches up when the source
 * drops what it holds unused. */
uint64_t source_http_received(const struct source *s);
