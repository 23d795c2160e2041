/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Provisioning: bring a board from blank to first boot in one step —
 * verify the bundle, erase what the layout owns (never the bootloader
 * unless asked), write the initial U-Boot env, install the bundle into
 * slot A (and B), format the overlay, read everything back. Targets: the
 * running system's MTD partitions ("system"), a simulator file
 * ("sim:PATH", created when missing) or a factory image for a flash
 * programmer ("image:PREFIX": NOR -> PREFIX.bin, NAND -> PREFIX.bin data
 * + PREFIX.oob.bin with page+OOB interleaved as nandwrite -o takes it;
 * PREFIX.json reports every region with its sha256). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "error.h"
#include "keyring.h"
#include "layout.h"

#define PROVISION_ACTION_LIST(X)                                            \
	/* left as it is (bootloader) */                                    \
	X(PROVISION_KEEP, "keep")                                           \
	/* erased (unused, or kernel partitions of an empty slot) */        \
	X(PROVISION_ERASE, "erase")                                         \
	/* erased, initial env written */                                   \
	X(PROVISION_ENV, "env")                                             \
	/* erased, image written and verified */                            \
	X(PROVISION_IMAGE, "image")                                         \
	/* erased with JFFS2 cleanmarkers */                                \
	X(PROVISION_OVERLAY, "overlay")                                     \
	/* what this version cannot lay out (refused before any erase) */  \
	X(PROVISION_UNSUPPORTED, "unsupported")                             \
	/* ubiformat (erase counters kept), volumes made, images written */ \
	X(PROVISION_UBI, "ubi")                                             \
	/* erased, the UBI image (ubinize semantics) with the images */     \
	X(PROVISION_UBI_IMAGE, "ubi-image")

enum provision_action {
	PROVISION_ACTION_LIST(STRING_TABLE_ENUM)
	_PROVISION_ACTION_MAX,
};

#define PROVISION_DETAIL_MAX 512

/* One region, reported as it is handled (and in dry runs). */
struct provision_region {
	const struct layout_partition *part;
	enum provision_action action;
	const char *detail;    /* "rootfs of slot A, 3 MiB, version 1.0" */
	uint64_t erased;       /* blocks erased */
	uint64_t bad;          /* bad blocks found */
	uint8_t sha256[32];    /* of the whole region after provisioning (image targets) */
	bool has_sha256;
};

struct provision_params {
	const struct layout *layout;
	const char *target;
	const char *bundle;               /* path */
	const struct keyring *keyring;
	bool allow_unsigned;
	bool both_slots;                  /* install into every slot */
	bool include_bootloader;          /* erase the bootloader partition too */
	bool dry_run;                     /* report only */
	const char *initial_env;          /* U-Boot default env (name=value lines) or NULL */
	const char *sysfs;                /* system targets: sysfs root (tests) */
	const char *cmdline;              /* system targets: the booted slot's kernel command
					   * line (NULL = /proc/cmdline) */
	const char *state_dir;            /* flashd's state dir or NULL: the block records of
					   * the slots are dropped before anything is erased
					   * (a stale one would make the next install skip
					   * blocks) and written for the images installed */
	void (*report)(void *userdata, const struct provision_region *r);
	void *userdata;
};

/* Every check (target kind and geometry, a simulator path that is a
 * regular file, the running system's MTD table and booted slot, UBI and
 * other unsupported layouts, the bundle: signature, hashes, compatible,
 * image types and sizes against the slots and their good blocks) runs
 * before the first erase; a dry run runs exactly these checks. On failure
 * *ret_written (may be NULL) says whether flash was touched. */
int provision_run(const struct provision_params *p, bool *ret_written, struct error *err);
const char *provision_action_to_string(enum provision_action a);
