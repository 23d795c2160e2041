/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A bundle source for http(s) URLs: libcurl's multi interface driven from
 * read()/pread(), so the install engine pulls bytes at its own pace and
 * memory stays bounded (a full buffer pauses the transfer).
 *
 * One transfer at a time: a GET of [start, end) (end 0: to the end of the
 * bundle). read() and pread() reuse the running transfer when the offset
 * they want is at most HTTP_GAP_MAX ahead of it (the bytes between are
 * downloaded and dropped, cheaper than a new request), else they start a
 * new one. plan() merges the announced ranges into runs (ranges in order,
 * gaps up to HTTP_GAP_MAX) so that each run is ONE request. We do not ask
 * for multipart/byteranges: servers differ in whether and how they answer
 * several ranges (some send 200 with the whole file, nginx and lighttpd
 * cap the number of ranges), its parsing is more surface for a hostile
 * server, and with keep-alive a request per run costs one round trip:
 * few after merging.
 *
 * Every response is checked before a byte of its body is used: a ranged
 * request needs 206 with a Content-Range starting where we asked; the
 * ETag (strong) or Last-Modified and the size must be those of the first
 * response, and ranged requests carry If-Range with it, so a bundle
 * replaced on the server fails (-ESTALE) instead of being spliced.
 *
 * Redirects: libcurl does not follow them (a server may send two Location
 * headers, or one longer than a header line we would keep: what counts is
 * what libcurl itself would follow). At the end of a 3xx response we take
 * CURLINFO_REDIRECT_URL, compare its origin (scheme, host, port, parsed by
 * libcurl's URL API) with the URL's, and send the next hop ourselves: with
 * the credentials and configured headers to the URL's origin, without
 * them elsewhere (when allowed at all).
 *
 * Time: a transfer that moves no byte for stall_timeout is retried; one
 * slower than min_rate over min_rate_time of waiting for the network (a
 * drip that would keep an install running for days), or a download not
 * done by its deadline, fails. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <curl/curl.h>

#include "cleanup.h"
#include "curl_dl.h"
#include "source_http.h"
#include "util.h"

#define HTTP_BUF_MAX (256 * 1024) /* bytes buffered ahead of the engine */
/* A gap this small between wanted bytes is downloaded and dropped rather
 * than paying a request: it joins the blocks of small-block chips (16 KiB
 * NAND), never a whole 64 or 128 KiB erase block. */
#define HTTP_GAP_MAX (16 * 1024)
/* read() asks for the bundle in ranges that double, [0, 16 KiB),
 * [16, 32 KiB) ... up to 1 MiB, then for the rest: a sender does not stop
 * at what we read, it fills the socket buffers (megabytes), so an adaptive
 * install that reads only the header, manifest and index and then moves
 * to preads would pay for bytes it never uses. At most as many bytes as
 * were used are wasted, for 7 more requests on a full download. */
#define HTTP_FIRST_RANGE (16 * 1024)
#define HTTP_OPEN_FROM (1024 * 1024)
#define HTTP_MAX_REDIRS 5
#define HTTP_REDIRECT_BODY_MAX (64 * 1024) /* dropped; more is a hostile server */
#define HTTP_BACKOFF_MAX_MS 30000
#define HTTP_RETRY_FACTOR 20
#define HTTP_POLL_MS 200
/* libcurl itself refuses a header line longer than CURL_MAX_HTTP_HEADER
 * (as "Out of memory"); we refuse a response header larger than this */
#define HTTP_HEADER_MAX (64 * 1024)

struct http {
	struct source s;
	char *url;                 /* without its user:password@ */
	char *user, *password;     /* of the URL: for its origin only */
	char shown[512];           /* url for messages: no credentials, no query */
	char origin[300];          /* scheme://host:port of url */
	char hop_origin[300];      /* of the current request (after redirects) */
	unsigned hops;             /* redirects followed by the current request */
	const struct source_http_conf *conf;
	CURLM *multi;
	CURL *easy;
	struct curl_slist *hdrs;
	char validator[256];       /* the first response's strong ETag or Last-Modified */
	bool seen_first;
	char errbuf[CURL_ERROR_SIZE];
	/* the current transfer */
	bool active, finished, paused;
	CURLcode result;
	uint64_t start, end;       /* [start, end) asked for; end 0: to the end */
	uint64_t bufpos;           /* offset of buf[head] */
	uint8_t *buf;
	size_t head, tail;
	/* the current response: reset at each status line */
	long status;
	bool checked;              /* its headers passed check_response() */
	bool has_crange;
	uint64_t crange_start, crange_total, clen;
	char etag[256], lastmod[128];
	bool redirect;             /* a 3xx: its body is dropped, then the next hop */
	size_t header_bytes, redirect_body;
	/* min_rate: time spent waiting for the network in this window, and
	 * received at its start; the deadline (CLOCK_MONOTONIC, ms; 0: none) */
	uint64_t win_ms, win_bytes, deadline_ms;
	/* why a callback stopped the transfer */
	int cb_r;
	bool cb_transient;
	char cb_why[400];
	/* retries */
	unsigned tries, retries, requests;
	uint64_t fail_pos;
	/* plan(): merged runs */
	struct source_range *runs;
	size_t n_runs, run_cur;
	uint64_t seq;              /* read(): the next offset */
	uint64_t seq_end;          /* read(): where the expected bytes end, or 0 */
	uint64_t received;         /* body bytes received, used or not (atomic:
				    * the fetch-ahead thread adds, progress reads) */
};

static struct http *to_http(struct source *s)
{
	return (struct http *)s;
}

bool source_http_is_url(const char *s)
{
	const char *p = strstr(s, "://");

	return p && p > s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789+.-") == (size_t)(p - s);
}

const char *source_http_redact(const char *url, char *buf, size_t len)
{
	const char *auth = strstr(url, "://"), *host, *end, *at, *q;

	auth = auth ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	at = memrchr(auth, '@', end - auth);
	host = at ? at + 1 : auth;
	q = strpbrk(host, "?#");
	/* user:password@ and the query (the tokens of signed URLs) stay out
	 * of logs and replies */
	snprintf(buf, len, "%.*s%s%.*s%s", (int)(auth - url), url, at ? "***@" : "",
		 (int)(q ? (size_t)(q - host) : strlen(host)), host, q ? "?***" : "");
	return buf;
}

static int check_url(const char *url, struct error *err)
{
	static const char *const schemes[] = { "http://", "https://" };
	const char *host;
	char shown[512];

	for (size_t i = 0; i < ELEMENTSOF(schemes); i++) {
		if (strncasecmp(url, schemes[i], strlen(schemes[i])))
			continue;
		host = url + strlen(schemes[i]);
		if (!*host || *host == '/' || *host == ':')
			return error_set(err, -EINVAL, "%s: no host in the URL",
					 source_http_redact(url, shown, sizeof(shown)));
		return 0;
	}
	return error_set(err, -EPROTONOSUPPORT, "%s: only http:// and https:// URLs are "
			 "supported", source_http_redact(url, shown, sizeof(shown)));
}

int source_http_url_parse(const char *s, struct source_http_url *ret, struct error *err)
{
	char shown[PATH_MAX];
	int r = check_url(s, err);

	if (r < 0)
		return r;
	*ret = (struct source_http_url){ .url = strdup(s),
		.shown = strdup(source_http_redact(s, shown, sizeof(shown))) };
	if (!ret->url || !ret->shown) {
		source_http_url_done(ret);
		return error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

void source_http_url_done(struct source_http_url *u)
{
	free(u->url);
	free(u->shown);
	*u = (struct source_http_url){ 0 };
}

static size_t avail(const struct http *h)
{
	return h->tail - h->head;
}

static void consume(struct http *h, size_t n)
{
	h->head += n;
	h->bufpos += n;
	if (h->head == h->tail)
		h->head = h->tail = 0;
}

static size_t cb_fail(struct http *h, int r, bool transient, const char *fmt, ...)
	_printf_(4, 5);
static size_t cb_fail(struct http *h, int r, bool transient, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->cb_why, sizeof(h->cb_why), fmt, ap);
	va_end(ap);
	h->cb_r = r;
	h->cb_transient = transient;
	return 0; /* stops the transfer (CURLE_WRITE_ERROR) */
}

static char *url_part(CURLU *u, CURLUPart what, unsigned flags)
{
	char *v = NULL;

	return curl_url_get(u, what, &v, flags) == CURLUE_OK ? v : NULL;
}

/* libcurl's parse of url: "scheme://host:port" (the port always written)
 * into origin; with ret_url, url without user:password@ (strdup()ed) and
 * with ret_user/ret_password its credentials, decoded (NULL: none). */
static int url_split(const char *url, char *origin, size_t len, char **ret_url, char **ret_user,
		     char **ret_password)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *bare = NULL;
	int r = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    (scheme = url_part(u, CURLUPART_SCHEME, 0)) &&
	    (host = url_part(u, CURLUPART_HOST, 0)) &&
	    (port = url_part(u, CURLUPART_PORT, CURLU_DEFAULT_PORT))) {
		snprintf(origin, len, "%s://%s:%s", scheme, host, port);
		if (ret_user)
			*ret_user = url_part(u, CURLUPART_USER, CURLU_URLDECODE);
		if (ret_password)
			*ret_password = url_part(u, CURLUPART_PASSWORD, CURLU_URLDECODE);
		r = 0;
		if (ret_url && (curl_url_set(u, CURLUPART_USER, NULL, 0) != CURLUE_OK ||
				curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK ||
				!(bare = url_part(u, CURLUPART_URL, 0)) || !(*ret_url = strdup(bare))))
			r = -ENOMEM;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(bare);
	curl_url_cleanup(u);
	return r;
}

static const char *response_validator(const struct http *h)
{
	/* If-Range takes a strong validator only */
	if (h->etag[0] && strncmp(h->etag, "W/", 2))
		return h->etag;
	return h->lastmod;
}

static size_t check_status(struct http *h)
{
	bool ranged = h->start || h->end;

	if (h->status >= 500 || h->status == 408 || h->status == 429)
		return cb_fail(h, -EREMOTEIO, true, "HTTP status %ld", h->status);
	if (h->status == 200 && !h->start && !h->seen_first) {
		h->end = 0; /* the first request, a server without ranges: all of it */
		return 1;
	}
	if (h->status == 200 && ranged)
		return h->validator[0] ?
		       cb_fail(h, -ESTALE, false, "the bundle changed on the server (If-Range "
			       "answered with the whole file): not resumed") :
		       cb_fail(h, -EOPNOTSUPP, false, "the server ignores Range requests");
	if (h->status != (ranged ? 206 : 200))
		return cb_fail(h, -EREMOTEIO, false, "HTTP status %ld", h->status);
	if (ranged && (!h->has_crange || h->crange_start != h->start))
		return cb_fail(h, -EREMOTEIO, false, "asked for bytes %" PRIu64 "-, the server "
			       "answered with another range", h->start);
	return 1;
}

/* The final response's headers: is its body the part of OUR bundle that
 * was asked for? */
static size_t check_response(struct http *h)
{
	const char *v = response_validator(h);
	uint64_t total = h->has_crange ? h->crange_total : h->clen;

	if (!check_status(h))
		return 0;
	if (!h->seen_first) {
		snprintf(h->validator, sizeof(h->validator), "%s", v);
		h->seen_first = true;
	} else if (v[0] && strcmp(v, h->validator)) {
		/* (a response without one is covered by If-Range: a server that
		 * honours it answers 200 for a changed file) */
		char now[256], was[256];
		return cb_fail(h, -ESTALE, false, "the bundle changed on the server (validator "
			       "'%s', was '%s')", util_printable(v, now, sizeof(now)),
			       util_printable(h->validator, was, sizeof(was)));
	}
	if (total && h->s.size && total != h->s.size)
		return cb_fail(h, -ESTALE, false, "the bundle changed on the server (%" PRIu64
			       " bytes, was %" PRIu64 ")", total, h->s.size);
	if (total)
		h->s.size = total;
	h->checked = true;
	return 1;
}

static void header_value(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v);
}

static void parse_header(struct http *h, const char *name, const char *v)
{
	if (!strcasecmp(name, "etag")) {
		header_value(h->etag, sizeof(h->etag), v);
	} else if (!strcasecmp(name, "last-modified")) {
		header_value(h->lastmod, sizeof(h->lastmod), v);
	} else if (!strcasecmp(name, "content-length")) {
		h->clen = strtoull(v, NULL, 10);
	} else if (!strcasecmp(name, "content-range")) {
		uint64_t a, b, t;
		h->has_crange = sscanf(v, "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64, &a, &b, &t) == 3;
		h->crange_start = a;
		h->crange_total = t;
	}
}

static size_t on_header(char *p, size_t size, size_t n, void *userdata)
{
	struct http *h = userdata;
	size_t len = size * n, l;
	char line[1400], *colon, *v;

	h->header_bytes += len;
	if (h->header_bytes > HTTP_HEADER_MAX)
		return cb_fail(h, -EMSGSIZE, false, "the response header from %s exceeds %u bytes",
			       h->hop_origin, HTTP_HEADER_MAX);
	l = MIN(len, sizeof(line) - 1);
	memcpy(line, p, l);
	while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
		l--;
	line[l] = 0;
	if (!strncmp(line, "HTTP/", 5)) {
		v = strchr(line, ' ');
		h->status = v ? strtol(v + 1, NULL, 10) : 0;
		h->has_crange = h->redirect = false;
		h->clen = h->redirect_body = 0;
		h->header_bytes = len;
		h->etag[0] = h->lastmod[0] = 0;
		return len;
	}
	if (!line[0]) {
		if (h->status < 200)
			return len;
		/* the next hop is judged once libcurl has parsed all of it */
		h->redirect = h->status >= 300 && h->status < 400;
		return h->redirect || check_response(h) ? len : 0;
	}
	colon = strchr(line, ':');
	if (!colon)
		return len;
	*colon = 0;
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	parse_header(h, line, v);
	return len;
}

static size_t on_write(char *p, size_t size, size_t n, void *userdata)
{
	struct http *h = userdata;
	size_t len = size * n;

	if (h->redirect) {
		h->redirect_body += len;
		return h->redirect_body <= HTTP_REDIRECT_BODY_MAX ? len :
		       cb_fail(h, -EMSGSIZE, false, "a redirect from %s with a body of more than "
			       "%u bytes", h->hop_origin, HTTP_REDIRECT_BODY_MAX);
	}
	if (!h->checked)
		return cb_fail(h, -EREMOTEIO, false, "a body without a checked response");
	if (h->end && h->bufpos + avail(h) + len > h->end)
		return cb_fail(h, -EREMOTEIO, false, "the server sent more than the range asked for");
	if (h->tail + len > HTTP_BUF_MAX && h->head) {
		memmove(h->buf, h->buf + h->head, avail(h));
		h->tail -= h->head;
		h->head = 0;
	}
	if (h->tail + len > HTTP_BUF_MAX) {
		/* the engine is behind: libcurl keeps these bytes and stops reading */
		h->paused = true;
		return CURL_WRITEFUNC_PAUSE;
	}
	memcpy(h->buf + h->tail, p, len);
	h->tail += len;
	__atomic_fetch_add(&h->received, len, __ATOMIC_RELAXED);
	return len;
}

/* Bytes that crossed the network and that read()/pread() never return
 * (a gap dropped, a buffer thrown away) count as fetched here: the
 * returned ones are counted by source_read()/source_pread(). */
static void drop(struct http *h, size_t n)
{
	h->s.fetched += n;
	consume(h, n);
}

static void stop_transfer(struct http *h)
{
	if (h->active)
		curl_multi_remove_handle(h->multi, h->easy);
	h->active = h->finished = h->paused = false;
	h->s.fetched += avail(h);
	h->head = h->tail = 0;
}

static int http_error(struct http *h, int r, struct error *err, const char *fmt, ...)
	_printf_(4, 5);
static int http_error(struct http *h, int r, struct error *err, const char *fmt, ...)
{
	char msg[ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(err, r, "%s: %s", h->shown, msg);
}

/* One hop of the current request: url with the credentials, the netrc
 * file and the configured headers when it is on the URL's origin, with
 * none of them elsewhere. The range stays that of the request. */
static int send_hop(struct http *h, const char *url, bool foreign, struct error *err)
{
	const struct source_http_conf *c = h->conf;
	char ifrange[300];
	struct curl_slist *l = NULL;

	if (h->active)
		curl_multi_remove_handle(h->multi, h->easy);
	h->active = h->finished = h->paused = false;
	for (char *const *hd = c->headers; !foreign && hd && *hd; hd++)
		if (!(l = curl_slist_append(l, *hd)))
			goto oom;
	if ((h->start || h->end) && h->validator[0]) {
		snprintf(ifrange, sizeof(ifrange), "If-Range: %s", h->validator);
		if (!(l = curl_slist_append(l, ifrange)))
			goto oom;
	}
	curl_slist_free_all(h->hdrs);
	h->hdrs = l;
	curl_easy_setopt(h->easy, CURLOPT_URL, url);
	curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, h->hdrs);
	curl_easy_setopt(h->easy, CURLOPT_USERNAME, foreign ? NULL : h->user);
	curl_easy_setopt(h->easy, CURLOPT_PASSWORD, foreign ? NULL : h->password);
	curl_easy_setopt(h->easy, CURLOPT_NETRC_FILE, c->netrc_file);
	curl_easy_setopt(h->easy, CURLOPT_NETRC, (long)(c->netrc_file && !foreign ?
						      CURL_NETRC_OPTIONAL : CURL_NETRC_IGNORED));
	h->bufpos = h->start;
	h->checked = h->redirect = false;
	h->status = 0;
	h->cb_r = 0;
	h->errbuf[0] = 0;
	h->result = CURLE_OK;
	if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK)
		return http_error(h, -ENOMEM, err, "cannot start a request");
	h->active = true;
	h->requests++;
	return 0;
oom:
	curl_slist_free_all(l);
	return http_error(h, -ENOMEM, err, "out of memory");
}

static int start_transfer(struct http *h, uint64_t start, uint64_t end, struct error *err)
{
	char range[48];

	stop_transfer(h);
	if (end)
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, start, end - 1);
	else
		snprintf(range, sizeof(range), "%" PRIu64 "-", start);
	curl_easy_setopt(h->easy, CURLOPT_RANGE, start || end ? range : NULL);
	h->start = start;
	h->end = end;
	h->hops = 0;
	snprintf(h->hop_origin, sizeof(h->hop_origin), "%s", h->origin);
	return send_hop(h, h->url, false, err);
}

/* The end of a 3xx response: the next hop, to where libcurl says, if its
 * origin may be asked at all. */
static int follow_redirect(struct http *h, struct error *err)
{
	char *to = NULL, origin[300];
	_cleanup_free_ char *bare = NULL;
	bool foreign;
	int r;

	if (curl_easy_getinfo(h->easy, CURLINFO_REDIRECT_URL, &to) != CURLE_OK || !to)
		return http_error(h, -EREMOTEIO, err, "HTTP status %ld from %s without a usable "
				  "Location", h->status, h->hop_origin);
	if (++h->hops > HTTP_MAX_REDIRS)
		return http_error(h, -ELOOP, err, "more than %d redirects", HTTP_MAX_REDIRS);
	r = url_split(to, origin, sizeof(origin), &bare, NULL, NULL);
	if (r < 0)
		return http_error(h, r == -ENOMEM ? r : -EPERM, err, "redirected from %s to an "
				  "unusable URL", h->hop_origin);
	foreign = strcmp(origin, h->origin);
	if (foreign && !strncmp(h->origin, "https:", 6) && strncmp(origin, "https:", 6))
		return http_error(h, -EPERM, err, "redirected from %s to %s: from https to http, "
				  "refused", h->hop_origin, origin);
	if (foreign && !h->conf->redirect_other_origin)
		return http_error(h, -EPERM, err, "redirected from %s to %s, another origin: refused "
				  "([network] redirect-other-origin=yes follows it, without "
				  "credentials and header= lines)", h->hop_origin, origin);
	snprintf(h->hop_origin, sizeof(h->hop_origin), "%s", origin);
	/* the Location's own user:password@ is not sent either: bare */
	return send_hop(h, bare, foreign, err);
}

/* libcurl's answers: the errno we report and whether trying again may help */
static const struct {
	CURLcode code;
	int r;
	bool transient;
} curl_errors[] = {
	{ CURLE_OPERATION_TIMEDOUT, -ETIMEDOUT, true },
	{ CURLE_COULDNT_CONNECT, -ECONNREFUSED, true },
	{ CURLE_COULDNT_RESOLVE_HOST, -EHOSTUNREACH, true },
	{ CURLE_COULDNT_RESOLVE_PROXY, -EHOSTUNREACH, true },
	{ CURLE_PARTIAL_FILE, -ECONNRESET, true },
	{ CURLE_RECV_ERROR, -ECONNRESET, true },
	{ CURLE_SEND_ERROR, -ECONNRESET, true },
	{ CURLE_GOT_NOTHING, -ECONNRESET, true },
	{ CURLE_HTTP2, -ECONNRESET, true },
	{ CURLE_HTTP2_STREAM, -ECONNRESET, true },
	{ CURLE_PEER_FAILED_VERIFICATION, -ECOMM, false },
	{ CURLE_SSL_CACERT_BADFILE, -ECOMM, false },
	{ CURLE_SSL_CERTPROBLEM, -ECOMM, false },
	{ CURLE_SSL_CONNECT_ERROR, -ECOMM, false },
	{ CURLE_UNSUPPORTED_PROTOCOL, -EPROTONOSUPPORT, false },
	{ CURLE_OUT_OF_MEMORY, -ENOMEM, false },
};

/* The end of a transfer: 0 when it delivered all it should, else -errno
 * (err set) and *transient when a retry may help. */
static int transfer_result(struct http *h, bool *transient, struct error *err)
{
	uint64_t want = h->end && (!h->s.size || h->end < h->s.size) ? h->end : h->s.size;

	*transient = false;
	if (h->cb_r) {
		*transient = h->cb_transient;
		return http_error(h, h->cb_r, err, "%s", h->cb_why);
	}
	if (h->result == CURLE_OK) {
		if (!h->checked)
			return http_error(h, -EREMOTEIO, err, "no response");
		*transient = want && h->bufpos < want;
		if (*transient)
			return http_error(h, -ECONNRESET, err, "connection closed at byte %" PRIu64
					  " of %" PRIu64, h->bufpos, want);
		return 0;
	}
	if (h->result == CURLE_OUT_OF_MEMORY && h->status && !h->checked && !h->redirect)
		/* libcurl's name for a header line it will not hold */
		return http_error(h, -EMSGSIZE, err, "the response header from %s exceeds %u bytes",
				  h->hop_origin, CURL_MAX_HTTP_HEADER);
	for (size_t i = 0; i < ELEMENTSOF(curl_errors); i++)
		if (curl_errors[i].code == h->result) {
			*transient = curl_errors[i].transient;
			return http_error(h, curl_errors[i].r, err, "%s%s%s",
					  curl_easy_strerror(h->result), h->errbuf[0] ? ": " : "",
					  h->errbuf);
		}
	return http_error(h, -EIO, err, "%s%s%s", curl_easy_strerror(h->result),
			  h->errbuf[0] ? ": " : "", h->errbuf);
}

static bool cancelled(const struct http *h)
{
	return util_cancelled(h->conf->cancel);
}

static int backoff(struct http *h)
{
	unsigned ms = h->conf->retry_delay_ms ? h->conf->retry_delay_ms : 1000;
	struct timespec slice = { 0, 100 * 1000 * 1000 };

	for (unsigned i = 0; i < h->tries && ms < HTTP_BACKOFF_MAX_MS; i++)
		ms *= 2;
	for (ms = MIN(ms, HTTP_BACKOFF_MAX_MS); ms; ms -= MIN(ms, 100u)) {
		if (cancelled(h))
			return -ECANCELED;
		if (h->deadline_ms && util_now_ms() >= h->deadline_ms)
			return 0; /* the next pump() says so */
		nanosleep(&slice, NULL);
	}
	return 0;
}

/* A transient failure: again from where the bytes stopped, unless the
 * same place failed too often. A retry that got further resets the count. */
static int retry(struct http *h, int r, struct error *err)
{
	uint64_t pos = h->bufpos;

	if (pos > h->fail_pos)
		h->tries = 0;
	h->fail_pos = pos;
	/* a link that drops every few bytes makes progress each time: the
	 * whole install gets HTTP_RETRY_FACTOR x retries at most */
	if (h->tries >= h->conf->retries || h->retries >= HTTP_RETRY_FACTOR * h->conf->retries)
		return error_prefix(err, r, "gave up after %u retries (%u in all)", h->tries,
				    h->retries);
	if (pos && !h->validator[0])
		return error_prefix(err, r, "cannot resume at byte %" PRIu64 ": the server "
				    "sends neither a strong ETag nor Last-Modified", pos);
	h->tries++;
	h->retries++;
	r = backoff(h);
	if (r < 0)
		return r;
	error_clear(err);
	return start_transfer(h, pos, h->end, err);
}

/* min_rate, counted over the time spent here, waiting for the network:
 * not while the engine writes (a full buffer pauses the transfer) nor
 * during a retry's backoff */
static int check_rate(struct http *h, uint64_t waited_ms, struct error *err)
{
	const struct source_http_conf *c = h->conf;
	uint64_t window = (c->min_rate_time ? c->min_rate_time : 60) * 1000ULL, got;

	if (!c->min_rate)
		return 0;
	h->win_ms += waited_ms;
	if (h->win_ms < window)
		return 0;
	got = source_http_received(&h->s) - h->win_bytes;
	if (got * 1000 < (uint64_t)c->min_rate * h->win_ms)
		return http_error(h, -ETIMEDOUT, err, "slower than %u bytes/s over %" PRIu64 " s "
				  "(%" PRIu64 " bytes; [network] min-rate=, min-rate-time=)",
				  c->min_rate, h->win_ms / 1000, got);
	h->win_ms = 0;
	h->win_bytes += got;
	return 0;
}

static int check_deadline(struct http *h, struct error *err)
{
	if (!h->deadline_ms || util_now_ms() < h->deadline_ms)
		return 0;
	return http_error(h, -ETIMEDOUT, err, "not done after %u s (download-deadline=%u)",
			  h->conf->deadline, h->conf->deadline);
}

static int pump(struct http *h, struct error *err)
{
	CURLMcode mc;
	CURLMsg *msg;
	int running, left, r;
	uint64_t t0 = util_now_ms();

	mc = curl_multi_perform(h->multi, &running);
	if (mc != CURLM_OK)
		return http_error(h, -EIO, err, "%s", curl_multi_strerror(mc));
	while ((msg = curl_multi_info_read(h->multi, &left)))
		if (msg->msg == CURLMSG_DONE) {
			h->finished = true;
			h->result = msg->data.result;
		}
	if (!h->finished && !avail(h)) {
		mc = curl_multi_poll(h->multi, NULL, 0, HTTP_POLL_MS, NULL);
		if (mc != CURLM_OK)
			return http_error(h, -EIO, err, "%s", curl_multi_strerror(mc));
	}
	r = check_rate(h, util_now_ms() - t0, err);
	return r < 0 ? r : check_deadline(h, err);
}

/* Bytes buffered at bufpos (> 0), 0 when the transfer delivered all it
 * asked for, -errno. Retries transient failures. */
static ssize_t fill(struct http *h, struct error *err)
{
	int r;

	for (;;) {
		if (avail(h))
			return avail(h);
		if (h->paused) {
			h->paused = false;
			curl_easy_pause(h->easy, CURLPAUSE_CONT);
			continue;
		}
		if (h->finished && h->redirect && !h->cb_r && h->result == CURLE_OK) {
			r = follow_redirect(h, err);
			if (r < 0)
				return r;
			continue;
		}
		if (h->finished) {
			bool transient;
			r = transfer_result(h, &transient, err);
			if (r == 0 || !transient)
				return r;
			r = retry(h, r, err);
			if (r < 0)
				return r;
			continue;
		}
		if (cancelled(h))
			return -ECANCELED;
		r = pump(h, err);
		if (r < 0)
			return r;
	}
}

static bool usable(const struct http *h, uint64_t off)
{
	return h->active && off >= h->bufpos && off - h->bufpos <= HTTP_GAP_MAX &&
	       (!h->end || off < h->end);
}

static bool run_holds(const struct source_range *r, uint64_t off)
{
	return off >= r->off && off - r->off < r->len;
}

/* The end of the planned run that holds off, else off + len. preads come
 * in the planned order: the search starts at the run of the last one. */
static uint64_t run_end(struct http *h, uint64_t off, uint64_t len)
{
	for (size_t k = 0; k < h->n_runs; k++) {
		size_t i = (h->run_cur + k) % h->n_runs;
		if (run_holds(&h->runs[i], off)) {
			h->run_cur = i;
			return h->runs[i].off + h->runs[i].len;
		}
	}
	return off + len;
}

/* Bytes buffered at off (> 0), 0 at the end of the bundle, -errno. A new
 * transfer, when one is needed, asks for [off, end) (end 0: to the end). */
static ssize_t at(struct http *h, uint64_t off, uint64_t end, struct error *err)
{
	ssize_t n;
	int r;

	for (;;) {
		if (h->s.size && off >= h->s.size)
			return 0;
		if (!usable(h, off)) {
			r = start_transfer(h, off, end, err);
			if (r < 0)
				return r;
		}
		while ((n = fill(h, err)) > 0 && h->bufpos < off)
			drop(h, MIN((uint64_t)n, off - h->bufpos));
		if (n != 0)
			return n; /* bytes at off, or the error */
		if (!h->end)
			return 0; /* the end of the bundle */
		stop_transfer(h); /* the end of a range before off: the next one */
	}
}

static ssize_t http_read(struct source *s, void *buf, size_t len, struct error *err)
{
	struct http *h = to_http(s);
	uint64_t end = h->seq >= HTTP_OPEN_FROM ? 0 : h->seq ? 2 * h->seq : HTTP_FIRST_RANGE;
	ssize_t n;
	size_t c;

	if (h->seq_end > h->seq)
		end = h->seq_end; /* the rest of the head, and not a byte more */
	n = at(h, h->seq, end, err);

	if (n <= 0)
		return n;
	c = MIN((size_t)n, len);
	memcpy(buf, h->buf + h->head, c);
	consume(h, c);
	h->seq += c;
	return c;
}

static ssize_t http_pread(struct source *s, void *buf, size_t len, uint64_t off,
			  struct error *err)
{
	struct http *h = to_http(s);
	size_t got = 0, c;
	ssize_t n;

	while (got < len) {
		n = at(h, off + got, run_end(h, off + got, len - got), err);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		c = MIN((size_t)n, len - got);
		memcpy((uint8_t *)buf + got, h->buf + h->head, c);
		consume(h, c);
		got += c;
	}
	return got;
}

static int http_plan(struct source *s, const struct source_range *r, size_t n, struct error *err)
{
	struct http *h = to_http(s);
	_cleanup_free_ struct source_range *runs = calloc(n ? n : 1, sizeof(*runs));
	size_t k = 0;

	if (!runs)
		return error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct source_range *last = k ? &runs[k - 1] : NULL;
		uint64_t last_end = last ? last->off + last->len : 0;
		if (!r[i].len)
			continue;
		if (last && r[i].off >= last_end && r[i].off - last_end <= HTTP_GAP_MAX)
			last->len = r[i].off + r[i].len - last->off;
		else
			runs[k++] = r[i];
	}
	free(h->runs);
	h->runs = TAKE_PTR(runs);
	h->n_runs = k;
	h->run_cur = 0;
	return 0;
}

static void http_expect(struct source *s, uint64_t len)
{
	struct http *h = to_http(s);

	h->seq_end = h->seq + len;
}

static void http_free(struct source *s)
{
	struct http *h = to_http(s);

	stop_transfer(h);
	if (h->easy)
		curl_easy_cleanup(h->easy);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	curl_slist_free_all(h->hdrs);
	free(h->buf);
	free(h->runs);
	free(h->url);
	curl_free(h->user);
	curl_free(h->password);
	free(h);
}

static const struct source_ops http_ops = {
	.kind = "http",
	.read = http_read,
	.pread = http_pread,
	.plan = http_plan,
	.expect = http_expect,
	.free = http_free,
};

static void setup_easy(struct http *h)
{
	const struct source_http_conf *c = h->conf;
	CURL *e = h->easy;

	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* each hop decided by follow_redirect() */
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "flashd/" PACKAGE_VERSION);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)(c->connect_timeout ? c->connect_timeout : 30));
	/* a transfer that moves no byte for this long is a failed one */
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)(c->stall_timeout ? c->stall_timeout : 60));
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	if (c->client_cert)
		curl_easy_setopt(e, CURLOPT_SSLCERT, c->client_cert);
	if (c->client_key)
		curl_easy_setopt(e, CURLOPT_SSLKEY, c->client_key);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
}

int source_http_new(const struct source_http_url *u, const struct source_http_conf *conf,
		    struct source **ret, struct error *err)
{
	_cleanup_free_ struct http *h = NULL;
	ssize_t n;
	int r;

	/* checked where it came in: u is what source_http_url_parse() made */
	r = curl_dl_load(err);
	if (r < 0)
		return error_prefix(err, r, "%.511s", u->shown);
	h = calloc(1, sizeof(*h));
	if (!h || !(h->buf = malloc(HTTP_BUF_MAX)))
		goto oom;
	h->s.ops = &http_ops;
	h->conf = conf;
	snprintf(h->shown, sizeof(h->shown), "%s", u->shown);
	r = url_split(u->url, h->origin, sizeof(h->origin), &h->url, &h->user, &h->password);
	if (r < 0) {
		r = r == -ENOMEM ? error_set(err, r, "%s: out of memory", h->shown) :
		    error_set(err, -EINVAL, "%s: not a valid URL", h->shown);
		http_free(&TAKE_PTR(h)->s);
		return r;
	}
	if (conf->deadline)
		h->deadline_ms = util_now_ms() + conf->deadline * 1000ULL;
	h->multi = curl_multi_init();
	h->easy = curl_easy_init();
	if (!h->multi || !h->easy)
		goto oom;
	setup_easy(h);
	/* the first GET, to its first bytes: a wrong URL fails here */
	r = start_transfer(h, 0, HTTP_FIRST_RANGE, err);
	n = r < 0 ? r : fill(h, err);
	if (n < 0) {
		http_free(&TAKE_PTR(h)->s);
		return n;
	}
	*ret = &TAKE_PTR(h)->s;
	return 0;
oom:
	if (h)
		http_free(&TAKE_PTR(h)->s);
	return error_set(err, -ENOMEM, "%.511s: out of memory", u->shown);
}

unsigned source_http_requests(const struct source *s)
{
	return ((const struct http *)s)->requests;
}

unsigned source_http_retries(const struct source *s)
{
	return ((const struct http *)s)->retries;
}

uint64_t source_http_received(const struct source *s)
{
	return __atomic_load_n(&((const struct http *)s)->received, __ATOMIC_RELAXED);
}
