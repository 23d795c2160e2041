/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A slot read against its recorded signed index (include/slot_verify.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "block_record.h"
#include "board.h"
#include "cleanup.h"
#include "env.h"
#include "flash.h"
#include "install-internal.h"
#include "install_index.h"
#include "slot.h"
#include "slot_change.h"
#include "slot_verify.h"

/* Every block of rec read from f and equal: 1, else -EILSEQ or -errno. */
static int verify_blocks(const struct block_record *rec, struct flash *f, const char *member,
			 const struct layout_image_target *t, const char *image,
			 struct error *err)
{
	uint32_t bad = 0;
	int r = block_record_verify(rec, f, &bad);

	if (r < 0)
		return error_set(err, r, "%s: reading partition %s: %s", member, t->part->name,
				 strerror(-r));
	if (r == 0)
		return error_set(err, -EILSEQ, "%s: block %" PRIu32 " of partition %s differs from "
				 "the signed image (%s) or cannot be read", member, bad,
				 t->part->name, image);
	return 1;
}

/* 1 verified, 0 no record, -errno (err). */
static int verify_member(struct board *b, const char *state_dir, const char *group,
			 const char *slot, const char *member, const struct layout_image_target *t,
			 struct error *err)
{
	_cleanup_block_record_ struct block_record *rec = NULL;
	_cleanup_flash_ struct flash *f = NULL;
	int r;

	if (t->storage != LAYOUT_STORAGE_NAND && t->storage != LAYOUT_STORAGE_NOR)
		return 0;
	r = block_record_load(state_dir, group, slot, member, &rec);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return error_set(err, r, "%s: its block record in %s is damaged", member, state_dir);
	r = board_open_partition(b, t->part, &f);
	if (r < 0)
		return error_set(err, r, "%s: cannot open partition %s: %s", member, t->part->name,
				 strerror(-r));
	if (!block_record_matches_flash(rec, f))
		return error_set(err, -EILSEQ, "%s: partition %s changed since the install (bad "
				 "blocks or erase size)", member, t->part->name);
	return verify_blocks(rec, f, member, t, "the one its last verified install recorded", err);
}

/* A legacy slot (slot_legacy): the env says so, as the caller read it
 * (known) or read now. */
static bool legacy(const struct layout *l, const char *target, const struct layout_slot_group *g,
		   size_t slot, const struct slot_env *known)
{
	_cleanup_env_ struct env *e = NULL;
	struct slot_env st;

	if (known)
		return slot_legacy(known, slot);
	return env_open_layout(l, target, NULL, 0, &e, NULL) >= 0 &&
	       slot_env_load_group(&st, g, env_get_dup, e, NULL) >= 0 && slot_legacy(&st, slot);
}

int slot_verify_read(const struct layout *l, const char *target, const struct layout_slot_group *g,
		     size_t slot, const char *state_dir, const struct slot_env *known,
		     struct error *err)
{
	_cleanup_board_ struct board *b = NULL;
	const struct layout_slot *s = &g->slots[slot];
	int r, found = 0;

	if (!state_dir)
		return error_set(err, 0, "slot %s: no state dir to find its signed index in", s->name);
	r = board_open(l, target, false, &b);
	if (r < 0)
		return error_set(err, r, "slot %s: cannot open the board: %s", s->name, strerror(-r));
	r = verify_member(b, state_dir, g->name, s->name, "rootfs", &s->rootfs, err);
	found = r > 0;
	if (r >= 0 && s->has_kernel) {
		r = verify_member(b, state_dir, g->name, s->name, "kernel", &s->kernel, err);
		found |= r > 0;
	}
	if (r < 0)
		return error_prefix(err, r, "slot %s", s->name);
	if (!found && legacy(l, target, g, slot, known))
		return 1;
	if (!found)
		return error_set(err, 0, "slot %s: no signed index recorded for it in %s (an install "
				 "with a block index keeps one): nothing to read it against",
				 s->name, state_dir);
	return 1;
}

static int verify_image(struct board *b, const struct layout_slot *s,
			const struct bundle_manifest *m, const struct bundle_image *img,
			const uint8_t *index, struct error *err)
{
	const struct layout_image_target *t = install_member_target(s, img->slot);
	_cleanup_block_record_ struct block_record *rec = NULL;
	_cleanup_flash_ struct flash *f = NULL;
	int r;

	if (!t || (t->storage != LAYOUT_STORAGE_NAND && t->storage != LAYOUT_STORAGE_NOR))
		return 0;
	r = board_open_partition(b, t->part, &f);
	if (r < 0)
		return error_set(err, r, "%s: cannot open partition %s: %s", img->slot,
				 t->part->name, strerror(-r));
	if (f->info.erasesize != m->block_size)
		return error_set(err, -EILSEQ, "%s: the bundle's blocks are %" PRIu32 " bytes, the "
				 "partition's erase blocks %" PRIu32, img->slot, m->block_size,
				 (uint32_t)f->info.erasesize);
	r = install_index_record(f, img, index, &rec);
	if (r < 0)
		return error_set(err, r, "%s: partition %s cannot hold the image: %s", img->slot,
				 t->part->name, strerror(-r));
	_cleanup_free_ char *image = NULL;
	if (asprintf(&image, "version %s", m->version) < 0)
		return -ENOMEM;
	return verify_blocks(rec, f, img->slot, t, image, err);
}

int slot_verify_index(const struct layout *l, const char *target,
		      const struct layout_slot_group *g, size_t slot,
		      const struct bundle_manifest *m, const uint8_t *index, struct error *err)
{
	_cleanup_board_ struct board *b = NULL;
	const struct layout_slot *s = &g->slots[slot];
	int r = 0, found = 0;

	if (!index)
		return error_set(err, 0, "slot %s: bundle version %s has no block index to read "
				 "the slot against", s->name, m->version);
	r = board_open(l, target, false, &b);
	if (r < 0)
		return error_set(err, r, "slot %s: cannot open the board: %s", s->name, strerror(-r));
	for (size_t i = 0; r >= 0 && i < m->n_images; i++) {
		r = verify_image(b, s, m, &m->images[i], index, err);
		found |= r > 0;
	}
	if (r < 0)
		return error_prefix(err, r, "slot %s", s->name);
	if (!found)
		return error_set(err, 0, "slot %s: bundle version %s has no raw image of it",
				 s->name, m->version);
	return 1;
}

int slot_verify_refused(enum slot_op op, const char *slot, const char *why, struct error *err)
{
	return error_set(err, -EPERM, "refusing to %s slot %s: it was not read back as its "
			 "signed image: %s", op == SLOT_OP_ROLLBACK ? "roll back onto" :
			 slot_op_to_string(op), slot, why);
}

int slot_verify_promotion(const struct layout *l, const char *target,
			  const struct layout_slot_group *g, size_t slot, enum slot_op op,
			  const char *state_dir, const struct slot_env *known, struct error *err)
{
	struct error why = {};
	int r = slot_verify_read(l, target, g, slot, state_dir, known, &why);

	return r > 0 ? 1 : slot_verify_refused(op, g->slots[slot].name, error_message(&why), err);
}

int slot_verify_change(struct env *e, const struct layout *l, const char *target,
		       const struct layout_slot_group *g, const char *state_dir,
		       const struct slot_change *c, struct slot_change_result *ret,
		       struct error *err)
{
	struct slot_env st;
	int idx, r;

	r = slot_env_load_group(&st, g, env_get_dup, e, NULL);
	idx = c->slot_name ? slot_find(&st, c->slot_name) : c->slot;
	if (r >= 0 && (!c->slot_name || idx >= 0))
		idx = slot_change_promotes(&st, c->booted, c->op, idx, c->flags);
	else
		idx = -1; /* the change says what is wrong */
	if (idx >= 0) {
		r = slot_verify_promotion(l, target, g, (size_t)idx, c->op, state_dir, &st, err);
		if (r < 0) {
			*ret = (struct slot_change_result){ .before = st, .slot = -1,
							    .fail = SLOT_CHANGE_REFUSED };
			return r;
		}
	}
	return slot_change(e, g, c, ret, err);
}
