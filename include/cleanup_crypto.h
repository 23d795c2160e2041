/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* _cleanup_ for OpenSSL objects; kept apart (like cleanup_json.h) so that
 * only users of libcrypto pull its headers in. */
#pragma once
#include <openssl/evp.h>
#include "cleanup.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)
#define _cleanup_md_ctx_ _cleanup_(EVP_MD_CTX_freep)
#define _cleanup_pkey_ _cleanup_(EVP_PKEY_freep)
