/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the board layout parser and validator (layout_parse),
 * then everything that walks a layout that validated: mtdparts/nandsim
 * conversions, partition roles, UBI capacity, target sizes, lookups.
 * Input: the bytes of a layout file (NUL-terminated copy). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "layout_parse.h"
#include "layout_kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(struct layout *l)
{
	char roles[256];
	char *s = NULL;
	const char *module;

	if (layout_kernel_mtdparts(l, &s) >= 0)
		free(s);
	for (size_t i = 0; i < l->n_devices; i++) {
		s = NULL;
		if (layout_kernel_nandsim(l, &l->devices[i], &module, &s) >= 0)
			free(s);
		s = NULL;
		if (layout_kernel_mtdparts_device(l, &l->devices[i], &s) >= 0)
			free(s);
		(void) layout_device_mtd_id(&l->devices[i]);
		(void) layout_find_device(l, l->devices[i].name);
	}
	for (size_t i = 0; i < l->n_partitions; i++) {
		(void) layout_partition_roles(l, &l->partitions[i], roles, sizeof(roles));
		(void) layout_partition_index(l, &l->partitions[i]);
		(void) layout_find_partition(l, l->partitions[i].name);
	}
	for (size_t i = 0; i < l->n_ubis; i++) {
		uint64_t leb, lebs;

		(void) layout_ubi_capacity(&l->ubis[i], &leb, &lebs);
	}
	for (size_t g = 0; g < l->n_groups; g++) {
		struct layout_slot_group *grp = &l->groups[g];

		(void) layout_find_group(l, grp->name);
		for (size_t i = 0; i < grp->n_slots; i++) {
			(void) layout_find_slot(grp, grp->slots[i].name);
			(void) layout_target_size(l, &grp->slots[i].rootfs);
			if (grp->slots[i].has_kernel)
				(void) layout_target_size(l, &grp->slots[i].kernel);
		}
	}
	for (size_t i = 0; i < l->n_lowers; i++)
		(void) layout_target_size(l, &l->lowers[i].target);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct error err;
	struct layout *l = NULL;
	char *json = malloc(size + 1);
	int r;

	if (!json)
		return 0;
	memcpy(json, data, size);
	json[size] = 0;
	err.msg[0] = 0;
	r = layout_parse(json, "fuzz.json", &l, &err);
	if (r >= 0) {
		if (!l)
			abort(); /* success must hand out a layout */
		walk(l);
		layout_free(l);
	} else {
		if (l)
			abort(); /* ret untouched on failure */
		if (!err.msg[0])
			abort(); /* every refusal names a reason */
		if (!memchr(err.msg, 0, sizeof(err.msg)))
			abort();
	}
	free(json);
	return 0;
}
