/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A shared library loaded on first use instead of at start-up (libcrypto:
 * crypto_dl.c, libcurl: curl_dl.c, nettle: hash.c): the library's functions are defined
 * under their own names, each forwarding to the symbol dlsym() finds the
 * first time it is called. The prototype comes from the library's header,
 * so a changed signature fails to build.
 *
 *   static void *crypto_sym(const char *name) { static void *lib;
 *           return dl_sym(&lib, "libcrypto.so.3", name); }
 *   DL_FORWARD(crypto_sym, int, BIO_free, (BIO *a), (a))
 */
#pragma once

/* The address of name in soname, which is dlopen()ed into *lib on first
 * use. A missing library or symbol is a broken installation, as it would
 * be for the dynamic loader at start-up: it aborts with a message. */
void *dl_sym(void **lib, const char *soname, const char *name);

/* The library's function name, looked up through getsym on the first call
 * only: for the forwarders below and those written by hand (variadic). */
#define DL_FN(getsym, name)                                            \
	({                                                             \
		static __typeof__(&name) dl_fn_;                       \
		if (!dl_fn_)                                           \
			dl_fn_ = (__typeof__(&name))getsym(#name);     \
		dl_fn_;                                                \
	})

#define DL_FORWARD(getsym, ret, name, params, args)                    \
	ret name params                                                \
	{                                                              \
		return DL_FN(getsym, name) args;                       \
	}
#define DL_FORWARD_VOID(getsym, name, params, args)                    \
	void name params                                               \
	{                                                              \
		DL_FN(getsym, name) args;                              \
	}
