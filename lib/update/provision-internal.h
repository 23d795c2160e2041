/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the parts of provisioning share (lib/update/provision*.c): the run's
 * state and the few functions one part calls in another. Private to
 * lib/update/, not a module of its own: include/provision.h is the
 * interface to provisioning. One part per concern:
 *   provision.c           the run: plan, checks, erase, env, slot installs
 *   provision_ubi_pass.c  UBI partitions without the kernel's UBI: the
 *                         ubinize image, from one pass over the bundle
 *   provision_export.c    the factory image for a flash programmer */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "bundle.h"
#include "bundle_reader.h"
#include "error.h"
#include "layout.h"
#include "provision.h"

struct prov {
	const struct provision_params *p;
	struct error *err;
	bool *written;                /* flash was touched */
	const struct layout *l;
	const struct layout_slot_group *g;
	char target[4096];            /* board target: "system" or "sim:PATH" */
	char *image_prefix;           /* image: targets */
	struct bundle_manifest man;
	struct provision_region *regions; /* one per partition */
	char (*details)[PROVISION_DETAIL_MAX];
	uint64_t *ubi_pebs;           /* per partition: PEBs of the UBI image written (factory) */
};

/* ---- provision.c ---- */

bool provision_slot_installed(const struct prov *pv, size_t i);
/* The bundle reader's policy: keyring, compatible, room per slot member. */
void provision_bundle_policy_of(const struct prov *pv, struct bundle_slot_limit lim[2],
				struct bundle_policy *ret);
const char *provision_sim_file(const struct prov *pv);

/* ---- provision_ubi_pass.c ---- */

int provision_ubi_pass_write(struct prov *pv, struct board *b);
int provision_ubi_pass_activate(struct prov *pv);

/* ---- provision_export.c ---- */

/* PREFIX.bin (NAND: and PREFIX.oob.bin) and PREFIX.json from the
 * provisioned simulator; fills each region's sha256. */
int provision_export_image(struct prov *pv);
