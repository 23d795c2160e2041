/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* load -> compute -> one env store (include/slot_change.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "slot_change.h"

static int change_fail(struct slot_change_result *ret, enum slot_change_fail kind, int r)
{
	ret->fail = kind;
	return r;
}

/* The state and the changes of c, or a refusal (ret->forcible said). */
static int compute(const struct slot_change *c, int idx, struct slot_change_result *ret,
		   struct slot_changes *ch, struct error *err)
{
	int r;

	r = slot_compute_booted(&ret->before, c->booted, c->op, idx, c->flags, &ret->after, ch,
				err);
	if (r >= 0)
		return r;
	if (!(c->flags & SLOT_FORCE)) {
		struct slot_changes fch;
		struct slot_env fst;

		ret->forcible = slot_compute_booted(&ret->before, c->booted, c->op, idx,
						    c->flags | SLOT_FORCE, &fst, &fch, NULL) >= 0;
	}
	return change_fail(ret, c->op == SLOT_OP_ROLLBACK && r == -ENOENT ? SLOT_CHANGE_NO_ROLLBACK :
			   SLOT_CHANGE_REFUSED, r);
}

static int store(struct env *e, const struct slot_change *c, const struct slot_changes *ch,
		 struct slot_change_result *ret, struct error *err)
{
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	int r;

	r = env_txn_new(e, &t);
	/* "" deletes (a record going back to none); BOOT_ORDER is never "" */
	for (size_t i = 0; r >= 0 && i < ch->n; i++)
		r = env_txn_set(t, ch->vars[i].name, ch->vars[i].value[0] ? ch->vars[i].value : NULL);
	if (r >= 0 && c->extra_name)
		r = env_txn_set(t, c->extra_name, c->extra_value);
	if (r >= 0)
		r = env_txn_commit(t, err);
	else
		error_set(err, r, "%s", strerror(-r));
	if (r < 0)
		return change_fail(ret, SLOT_CHANGE_ENV, r);
	ret->n_written = env_txn_size(t);
	return 0;
}

int slot_change(struct env *e, const struct layout_slot_group *g, const struct slot_change *c,
		struct slot_change_result *ret, struct error *err)
{
	struct slot_changes ch;
	int idx, kept, r;

	*ret = (struct slot_change_result){ .slot = -1 };
	r = slot_env_load_group(&ret->before, g, env_get_dup, e, err);
	if (r < 0) {
		ret->before.n_slots = 0; /* not loaded */
		return change_fail(ret, SLOT_CHANGE_ENV, r);
	}
	idx = c->slot_name ? slot_find(&ret->before, c->slot_name) : c->slot;
	if (c->slot_name && idx < 0)
		return change_fail(ret, SLOT_CHANGE_NO_SLOT,
				   error_set(err, -ENOENT, "%s", c->slot_name));
	r = compute(c, idx, ret, &ch, err);
	if (r < 0)
		return r;
	kept = r;
	r = store(e, c, &ch, ret, err);
	if (r < 0)
		return r;
	ret->slot = c->op == SLOT_OP_ROLLBACK ? (int)ret->after.order[0] : idx;
	return kept;
}

struct raw_view {
	struct env *env;
	const struct env_var *vars;
	size_t n;
};

/* The env as the raw write leaves it: the last write of a name wins. */
static char *raw_get(void *userdata, const char *name)
{
	const struct raw_view *v = userdata;

	for (size_t i = v->n; i-- > 0;)
		if (!strcmp(v->vars[i].name, name))
			return v->vars[i].value ? strdup(v->vars[i].value) : NULL;
	return env_get_dup(v->env, name);
}

/* A slot the old BOOT_ORDER listed and trusted (recorded verified or
 * good, or legacy). */
static bool trusted_before(const struct slot_env *before, size_t i)
{
	enum slot_record rec = before->slots[i].record;

	return before->order_set && before->slots[i].order_pos >= 0 && slot_verified(before, i) &&
	       rec != SLOT_RECORD_BAD;
}

/* A raw BOOT_ORDER drops no slot the old one listed and trusted unless the
 * same write records a verdict on it: the fallback the board has is never
 * written away by a BOOT_ORDER alone (taking a slot out is mark-bad's, with
 * its own policy, SLOT_KEEP_LAST). */
static int keeps_fallback(const struct slot_env *before, const struct slot_env *st,
			  struct error *err)
{
	for (size_t i = 0; i < before->n_slots; i++)
		if (trusted_before(before, i) && st->slots[i].order_pos < 0 &&
		    st->slots[i].record == before->slots[i].record)
			return error_set(err, -EPERM, "BOOT_ORDER would drop slot %s, which holds a "
					 "verified image: the board would lose a fallback (use "
					 "mark-bad to take a slot out)", before->slots[i].name);
	return 0;
}

int slot_change_check_raw(struct env *e, const struct layout_slot_group *g,
			  const struct env_var *vars, size_t n, struct error *err)
{
	struct raw_view v = { e, vars, n };
	struct raw_view now = { e, NULL, 0 };
	struct slot_env st, before;
	int r;

	r = slot_env_load_group(&st, g, raw_get, &v, err);
	if (r >= 0)
		r = slot_env_load_group(&before, g, raw_get, &now, err);
	if (r < 0)
		return r;
	/* a legacy slot (no record) is trusted because the bootloader already
	 * boots it: a raw write cannot create that trust */
	for (size_t k = 0; k < st.n_order; k++) {
		size_t i = st.order[k];

		if (st.slots[i].record == SLOT_RECORD_NONE &&
		    (!before.order_set || before.slots[i].order_pos < 0))
			return error_set(err, -EPERM, "BOOT_ORDER would name slot %s, which has no "
					 "record of a verified image and was not in BOOT_ORDER",
					 st.slots[i].name);
	}
	r = slot_order_check(&st, err);
	return r < 0 ? r : keeps_fallback(&before, &st, err);
}

int slot_change_overlay_reset(struct env *e, bool cancel, bool *ret_changed, struct error *err)
{
	_cleanup_free_ char *v = NULL;
	bool pending = env_get(e, SLOT_OVERLAY_RESET_VAR, &v) >= 0 && !strcmp(v, "1");
	int r;

	if (pending != cancel) { /* already as asked */
		*ret_changed = false;
		return 0;
	}
	r = env_store_var(e, SLOT_OVERLAY_RESET_VAR, cancel ? NULL : "1", err);
	if (r < 0)
		return r;
	*ret_changed = true;
	return 0;
}

int slot_change_promotes(const struct slot_env *st, int booted, enum slot_op op, int slot,
			 unsigned flags)
{
	struct slot_env nst;
	struct slot_changes ch;

	if ((op != SLOT_OP_ACTIVATE && op != SLOT_OP_MARK_GOOD && op != SLOT_OP_ROLLBACK) ||
	    slot_compute_booted(st, booted, op, slot, flags, &nst, &ch, NULL) < 0)
		return -1;
	if (op == SLOT_OP_ROLLBACK)
		slot = nst.n_order ? (int)nst.order[0] : -1;
	return slot == booted ? -1 : slot;
}
