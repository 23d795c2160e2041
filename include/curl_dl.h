/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libcurl through dlopen() (lib/update/curl_dl.c): call curl_dl_load()
 * before any curl_* function. */
#pragma once
#include "error.h"

/* Load libcurl and initialize it once; -ELIBACC when it is not installed. */
int curl_dl_load(struct error *err);
