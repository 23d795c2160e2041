/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's state as JSON (nsim_json.h). */
#include <stddef.h>

#include "cleanup_json.h"
#include "nsim_json.h"

void nsim_json_add_state(struct json_object *o, const struct nsim_info *i)
{
	json_object_object_add(o, "power_cut", json_object_new_boolean(i->power_cut));
	json_object_object_add(o, "powercut_left", json_object_new_int64(i->powercut_left));
	json_object_object_add(o, "tear", json_object_new_boolean(i->tear));
	json_add_u64(o, "flip_ppm", i->flip_ppm);
	json_add_u64(o, "fail_ppm", i->fail_ppm);
	json_add_u64(o, "seed", i->seed);
}

void nsim_json_add_counters(struct json_object *o, const struct nsim_counters *c)
{
#define COUNTER(k) { #k, offsetof(struct nsim_counters, k) }
	static const struct {
		const char *key;
		size_t off;
	} counters[] = {
		COUNTER(erases), COUNTER(programs), COUNTER(oob_programs), COUNTER(page_reads),
		COUNTER(corrected), COUNTER(failed), COUNTER(mutations),
	};
#undef COUNTER

	for (size_t k = 0; k < ELEMENTSOF(counters); k++)
		json_add_u64(o, counters[k].key, *(const uint64_t *)((const char *)c + counters[k].off));
}
