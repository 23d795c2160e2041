/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A slot read against the signed index of what an install verified into
 * it, before anything makes it bootable on the records' word alone
 * (docs/security.md, "What is read before anything is trusted").
 *
 * The index is the one the install's verified read-back wrote into the
 * slot's block records (block_record.h, in the daemon's state dir, root
 * only): the SHA-256 of every erase block of each raw (NOR/NAND) image,
 * from the bundle's signed index. Every block is read and hashed. A slot
 * with no record (an install without an index, UBI volumes, a board
 * flashd never installed to) cannot be verified this way. */
#pragma once
#include <stddef.h>

#include <stdint.h>

#include "bundle.h"
#include "error.h"
#include "env.h"
#include "layout.h"
#include "slot_change.h"

/* 1: at least one member has a record and every recorded member reads
 * back as recorded, or none has and the env calls the slot legacy
 * (slot_legacy); 0: no record to read the slot against (err says);
 * -EILSEQ: the slot differs (err names member and block); -errno (err).
 * known: the group's slot env as the caller read it, or NULL to read it
 * here; a caller holding the env open must pass it (a second open would
 * wait for the caller's own lock, then fail). */
int slot_verify_read(const struct layout *l, const char *target, const struct layout_slot_group *g,
		     size_t slot, const char *state_dir, const struct slot_env *known,
		     struct error *err);
/* The same against a bundle's verified signed index (m, index: from a
 * bundle_reader that read the whole bundle): every raw image of m is read
 * from the slot member it names, logical block k on the k-th good block,
 * as an install writes it. 1 all equal; 0 m has no raw image of this
 * slot or no index (err says); -EILSEQ differs; -errno. */
int slot_verify_index(const struct layout *l, const char *target,
		      const struct layout_slot_group *g, size_t slot,
		      const struct bundle_manifest *m, const uint8_t *index, struct error *err);

/* The read before a promotion (docs/security.md, "What is read before
 * anything is trusted"): op (activate, mark-good, rollback) would put
 * slot ahead of the booted one on its record alone, so it is read
 * against its recorded signed index first (slot_verify_read). 1 read and
 * equal; -EPERM (or the read's -errno) with err "refusing to <op> slot
 * <slot>: it was not read back as its signed image: <why>". The one home
 * of that read and its refusal: the daemon's worker, the RAUC API and
 * flashctl's offline path all come here. */
int slot_verify_promotion(const struct layout *l, const char *target,
			  const struct layout_slot_group *g, size_t slot, enum slot_op op,
			  const char *state_dir, const struct slot_env *known, struct error *err);
/* The refusal of a promotion whose read did not end (its worker died):
 * err as slot_verify_promotion's, with why. Returns -EPERM. */
int slot_verify_refused(enum slot_op op, const char *slot, const char *why, struct error *err);
/* slot_change() of c after that read: the slot c would promote
 * (slot_change_promotes, decided on the slot env now in e) is read first;
 * a refused read changes nothing (ret->fail SLOT_CHANGE_REFUSED, not
 * forcible: a record forced by root is still no proof of the bytes).
 * Returns what slot_change() returns. flashctl's offline operations and
 * the A/B exploration (tests/explore) change the slots through here; the
 * daemon reads in its worker (slot_verify_promotion) and changes on its
 * event loop. */
int slot_verify_change(struct env *e, const struct layout *l, const char *target,
		       const struct layout_slot_group *g, const char *state_dir,
		       const struct slot_change *c, struct slot_change_result *ret,
		       struct error *err);
