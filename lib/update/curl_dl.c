/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libcurl, loaded by the install worker when an install names a URL.
 *
 * libcurl4 (OpenSSL flavour) pulls in libssl, libcrypto, nghttp2, libssh2,
 * librtmp, libldap, libgssapi and more: linked into flashd, the idle
 * daemon would map them all although only its install worker ever
 * downloads. So no program links libcurl; the functions source_http.c
 * uses are defined here under their own names and call libcurl through
 * dlopen(). Unlike libcrypto (crypto_dl.c), libcurl is optional: without
 * it every install from a file still works, and curl_dl_load() says what
 * to install. */
#define CURL_DISABLE_TYPECHECK
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <curl/curl.h>

#include "curl_dl.h"
#include "dl.h"

static void *curl_dl_lib;

int curl_dl_load(struct error *err)
{
	static bool initialized;

	if (!curl_dl_lib)
		curl_dl_lib = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!curl_dl_lib)
		return error_set(err, -ELIBACC, "cannot load %s (install the Debian package "
				 "libcurl4): %s", CURL_SONAME, dlerror());
	if (!initialized) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return error_set(err, -ENOMEM, "cannot initialize libcurl");
		initialized = true;
	}
	return 0;
}

/* curl_dl_load() succeeded before any call: a missing symbol is a
 * libcurl older than the one flashd was built against */
static void *curl_dl_sym(const char *name)
{
	return dl_sym(&curl_dl_lib, CURL_SONAME, name);
}

#define CURL_DL(ret, name, params, args) DL_FORWARD(curl_dl_sym, ret, name, params, args)
#define CURL_DL_VOID(name, params, args) DL_FORWARD_VOID(curl_dl_sym, name, params, args)

CURL_DL(CURLcode, curl_global_init, (long flags), (flags))
CURL_DL(CURL *, curl_easy_init, (void), ())
CURL_DL_VOID(curl_easy_cleanup, (CURL *c), (c))
CURL_DL(CURLcode, curl_easy_pause, (CURL *c, int bitmask), (c, bitmask))
CURL_DL(const char *, curl_easy_strerror, (CURLcode code), (code))
CURL_DL(CURLM *, curl_multi_init, (void), ())
CURL_DL(CURLMcode, curl_multi_cleanup, (CURLM *m), (m))
CURL_DL(CURLMcode, curl_multi_add_handle, (CURLM *m, CURL *c), (m, c))
CURL_DL(CURLMcode, curl_multi_remove_handle, (CURLM *m, CURL *c), (m, c))
CURL_DL(CURLMcode, curl_multi_perform, (CURLM *m, int *running), (m, running))
CURL_DL(CURLMcode, curl_multi_poll, (CURLM *m, struct curl_waitfd *fds, unsigned n, int ms,
				     int *ret), (m, fds, n, ms, ret))
CURL_DL(CURLMsg *, curl_multi_info_read, (CURLM *m, int *left), (m, left))
CURL_DL(const char *, curl_multi_strerror, (CURLMcode code), (code))
CURL_DL(struct curl_slist *, curl_slist_append, (struct curl_slist *l, const char *s), (l, s))
CURL_DL_VOID(curl_slist_free_all, (struct curl_slist *l), (l))
CURL_DL(CURLU *, curl_url, (void), ())
CURL_DL_VOID(curl_url_cleanup, (CURLU *u), (u))
CURL_DL(CURLUcode, curl_url_set, (CURLU *u, CURLUPart what, const char *part, unsigned flags),
	(u, what, part, flags))
CURL_DL(CURLUcode, curl_url_get, (CURLU *u, CURLUPart what, char **part, unsigned flags),
	(u, what, part, flags))
CURL_DL_VOID(curl_free, (void *p), (p))

/* Variadic in libcurl: the option number says the argument's type
 * (CURLOPTTYPE_*), so it is passed on as that type. */
CURLcode curl_easy_setopt(CURL *c, CURLoption opt, ...)
{
	__typeof__(&curl_easy_setopt) fn = DL_FN(curl_dl_sym, curl_easy_setopt);
	CURLcode r;
	va_list ap;

	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		r = fn(c, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		r = fn(c, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		r = fn(c, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		r = fn(c, opt, va_arg(ap, curl_off_t));
	else
		r = fn(c, opt, va_arg(ap, void *));
	va_end(ap);
	return r;
}

/* Every CURLINFO takes a pointer. */
CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
	__typeof__(&curl_easy_getinfo) fn = DL_FN(curl_dl_sym, curl_easy_getinfo);
	CURLcode r;
	va_list ap;

	va_start(ap, info);
	r = fn(c, info, va_arg(ap, void *));
	va_end(ap);
	return r;
}
