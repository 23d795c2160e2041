/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd boot's state record (BOOT_STATE_PATH): written once per run. */
#pragma once
#include <stdbool.h>

#include "boot_assemble.h"

/* True when the union lacks something the layout asks for. */
bool boot_state_degraded(const struct boot *b);
/* Write the record (result "ok" or "failed"); print it too when print. */
int boot_state_write(struct boot *b, const char *result, bool print);
