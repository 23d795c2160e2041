/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's state as JSON, the one rendering of 'nsimctl info --json'
 * and the "sim" object of 'flashctl flash info --json': the same keys with
 * the same meaning in both. */
#pragma once
#include <json-c/json.h>

#include "nsim.h"

/* Fault settings: power_cut, powercut_left, tear, flip_ppm, fail_ppm, seed. */
void nsim_json_add_state(struct json_object *o, const struct nsim_info *i);
/* Counters: erases, programs, oob_programs, page_reads, corrected, failed,
 * mutations. */
void nsim_json_add_counters(struct json_object *o, const struct nsim_counters *c);
