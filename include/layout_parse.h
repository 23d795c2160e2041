/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The board layout JSON parser and validator (schema: man/flashd-layout.5).
 * layout_load() (layout.h) reads a file and calls it. */
#pragma once
#include "error.h"
#include "layout.h"

/* Parse and validate json; name is the file name messages start with.
 * On error err names the file, the JSON path and the reason. */
int layout_parse(const char *json, const char *name, struct layout **ret, struct error *err);
