/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A/B slot logic over BOOT_ORDER / BOOT_<x>_LEFT (see slot.h): the words,
 * the states, the operations and the boot decision; loading the slot env
 * is slot_env.c. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "slot.h"
#include "util.h"

static const char *const slot_op_table[] = { SLOT_OP_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE(slot_op, enum slot_op)

static const char *const record_names[] = { SLOT_RECORD_LIST(STRING_TABLE_NAME) };

static const struct {
	const char *word, *text;
} state_names[_SLOT_STATE_MAX] = {
	[SLOT_STATE_EMPTY] = { "empty", "empty" },
	[SLOT_STATE_INSTALLING] = { "installing", "install in progress" },
	[SLOT_STATE_INTERRUPTED] = { "interrupted", "install interrupted (content unverified)" },
	[SLOT_STATE_FAILED] = { "failed", "install failed (content unverified)" },
	[SLOT_STATE_CANCELLED] = { "cancelled", "install cancelled (content unverified)" },
	[SLOT_STATE_INSTALLED] = { "installed", "installed, verified, not activated" },
	[SLOT_STATE_PENDING] = { "pending", "trial pending (activated, not booted yet)" },
	[SLOT_STATE_TRIAL] = { "trial", "on trial (tries used, not marked good)" },
	[SLOT_STATE_GOOD] = { "good", "good" },
	[SLOT_STATE_BAD] = { "bad", "bad" },
	[SLOT_STATE_UNKNOWN] = { "unknown", "content unknown (the env was lost): install to use it" },
};

static const char *const slot_tries_table[] = { SLOT_TRIES_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(slot_tries, enum slot_tries)

const char *slot_record_to_string(enum slot_record r)
{
	return r < _SLOT_RECORD_MAX ? record_names[r] : NULL;
}

int slot_record_from_string(const char *s)
{
	for (size_t i = 1; i < _SLOT_RECORD_MAX; i++)
		if (!strcmp(record_names[i], s))
			return (int)i;
	return -EINVAL;
}

const char *slot_state_to_string(enum slot_state v)
{
	return v < _SLOT_STATE_MAX ? state_names[v].word : NULL;
}

const char *slot_state_describe(enum slot_state v)
{
	return v < _SLOT_STATE_MAX ? state_names[v].text : NULL;
}

int slot_state_from_string(const char *s)
{
	for (size_t i = 0; s && i < _SLOT_STATE_MAX; i++)
		if (!strcmp(state_names[i].word, s))
			return (int)i;
	return -EINVAL;
}

void slot_left_var(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "BOOT_%s_LEFT", name);
}

void slot_version_var(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "FLASHD_%s_VERSION", name);
}

void slot_health_var(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "FLASHD_%s_HEALTH", name);
}

void slot_record_var(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "FLASHD_%s_STATE", name);
}

bool slot_name_valid(const char *s)
{
	if (!s || !*s || strlen(s) >= SLOT_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

int slot_find(const struct slot_env *st, const char *name)
{
	for (size_t i = 0; i < st->n_slots; i++)
		if (!strcmp(st->slots[i].name, name))
			return (int)i;
	return -ENOENT;
}


int slot_next_boot(const struct slot_env *st)
{
	for (size_t k = 0; k < st->n_order; k++)
		if (st->slots[st->order[k]].left > 0)
			return (int)st->order[k];
	return -ENOENT;
}

enum slot_tries slot_tries_of(const struct slot_env *st, size_t i)
{
	const struct slot_vars *s = &st->slots[i];

	if (s->order_pos < 0)
		return SLOT_TRIES_OUT;
	if (s->left == 0)
		return SLOT_TRIES_EXHAUSTED;
	return s->left >= st->max_tries ? SLOT_TRIES_FULL : SLOT_TRIES_USED;
}

void slot_order_string(const struct slot_env *st, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (size_t k = 0; k < st->n_order && off < len; k++)
		off += snprintf(buf + off, len - off, "%s%s", k ? " " : "",
				st->slots[st->order[k]].name);
}

/* Rebuild BOOT_ORDER from a list of slot indices. */
static void set_order(struct slot_env *st, const size_t *idx, size_t n)
{
	for (size_t i = 0; i < st->n_slots; i++)
		st->slots[i].order_pos = -1;
	for (size_t k = 0; k < n; k++) {
		st->slots[idx[k]].order_pos = (int)k;
		st->order[k] = idx[k];
	}
	st->n_order = n;
	st->order_set = true;
	st->order_foreign = false;
}

/* BOOT_ORDER without slot into idx (room for SLOT_MAX); returns the count. */
static size_t order_without(const struct slot_env *st, size_t slot, size_t *idx)
{
	size_t n = 0;

	for (size_t k = 0; k < st->n_order; k++)
		if (st->order[k] != slot)
			idx[n++] = st->order[k];
	return n;
}

static void move_first(struct slot_env *st, size_t slot)
{
	size_t idx[SLOT_MAX + 1];

	idx[0] = slot;
	set_order(st, idx, 1 + order_without(st, slot, idx + 1));
}

static void remove_from_order(struct slot_env *st, size_t slot)
{
	size_t idx[SLOT_MAX];

	set_order(st, idx, order_without(st, slot, idx));
}

static void append_to_order(struct slot_env *st, size_t slot)
{
	size_t idx[SLOT_MAX], n = 0;

	for (size_t k = 0; k < st->n_order; k++)
		idx[n++] = st->order[k];
	if (st->slots[slot].order_pos < 0)
		idx[n++] = slot;
	set_order(st, idx, n);
}

static void set_left(struct slot_env *st, size_t slot, unsigned left)
{
	st->slots[slot].left = left;
	st->slots[slot].left_set = true;
}

static void add_change(struct slot_changes *c, const char *name, const char *value)
{
	snprintf(c->vars[c->n].name, sizeof(c->vars[c->n].name), "%s", name);
	snprintf(c->vars[c->n].value, sizeof(c->vars[c->n].value), "%s", value);
	c->n++;
}

/* Every variable that differs between old and new (or is unset in old). */
static void diff_changes(const struct slot_env *old, const struct slot_env *new,
			 struct slot_changes *c)
{
	char o[sizeof(c->vars[0].value)], n[sizeof(c->vars[0].value)];
	char var[sizeof(c->vars[0].name)];

	c->n = 0;
	slot_order_string(old, o, sizeof(o));
	slot_order_string(new, n, sizeof(n));
	/* never an empty BOOT_ORDER: the script would boot every slot */
	if (new->n_order && (!old->order_set || old->order_foreign || strcmp(o, n)))
		add_change(c, SLOT_ORDER_VAR, n);
	for (size_t i = 0; i < new->n_slots; i++) {
		if (old->slots[i].left_set && old->slots[i].left == new->slots[i].left)
			continue;
		slot_left_var(new->slots[i].name, var, sizeof(var));
		snprintf(n, sizeof(n), "%u", new->slots[i].left);
		add_change(c, var, n);
	}
	for (size_t i = 0; i < new->n_slots; i++) {
		if (old->slots[i].record == new->slots[i].record)
			continue;
		slot_record_var(new->slots[i].name, var, sizeof(var));
		add_change(c, var, record_names[new->slots[i].record]);
	}
	if (old->last_good != new->last_good && new->last_good >= 0)
		add_change(c, SLOT_LAST_GOOD_VAR, new->slots[new->last_good].name);
	for (size_t i = 0; i < new->n_slots; i++) {
		if (!old->slots[i].has_health || new->slots[i].has_health)
			continue;
		slot_health_var(new->slots[i].name, var, sizeof(var));
		add_change(c, var, ""); /* deleted */
	}
}

int slot_order_check(const struct slot_env *st, struct error *err)
{
	for (size_t k = 0; k < st->n_order; k++) {
		size_t i = st->order[k];

		if (!slot_verified(st, i))
			return error_set(err, -EPERM, "BOOT_ORDER would name slot %s, which holds no "
					 "verified image (%s): the boot script would boot it",
					 st->slots[i].name,
					 state_names[slot_state_of(st, i, false)].text);
	}
	return 0;
}

bool slot_verified(const struct slot_env *st, size_t i)
{
	const struct slot_vars *s = &st->slots[i];

	switch (s->record) {
	case SLOT_RECORD_VERIFIED:
	case SLOT_RECORD_GOOD:
	case SLOT_RECORD_BAD:
		return true;
	case SLOT_RECORD_INSTALLING:
	case SLOT_RECORD_FAILED:
	case SLOT_RECORD_CANCELLED:
	case SLOT_RECORD_UNKNOWN:
		return false;
	case SLOT_RECORD_NONE:
	case _SLOT_RECORD_MAX:
		break;
	}
	/* legacy: what the bootloader boots is what the board trusted */
	if (s->order_pos < 0)
		return false;
	if (st->order_set || s->has_version)
		return true;
	for (size_t k = 0; k < st->n_slots; k++)
		if (st->slots[k].has_version)
			return false;
	return true;
}

bool slot_legacy(const struct slot_env *st, size_t i)
{
	return st->slots[i].record == SLOT_RECORD_NONE && !st->env_default && slot_verified(st, i);
}

enum slot_state slot_state_of(const struct slot_env *st, size_t i, bool install_running)
{
	const struct slot_vars *s = &st->slots[i];

	/* UBI's update marker outranks the record: the volume holds part of
	 * an image whatever the env says (flashd boot refuses to mount it) */
	if (s->unfinished && (s->record != SLOT_RECORD_INSTALLING || !install_running))
		return SLOT_STATE_INTERRUPTED;
	switch (s->record) {
	case SLOT_RECORD_INSTALLING:
		return install_running ? SLOT_STATE_INSTALLING : SLOT_STATE_INTERRUPTED;
	case SLOT_RECORD_FAILED:
		return SLOT_STATE_FAILED;
	case SLOT_RECORD_CANCELLED:
		return SLOT_STATE_CANCELLED;
	case SLOT_RECORD_UNKNOWN:
		return SLOT_STATE_UNKNOWN;
	case SLOT_RECORD_BAD:
		return SLOT_STATE_BAD;
	case SLOT_RECORD_VERIFIED:
		if (s->order_pos < 0)
			return SLOT_STATE_INSTALLED;
		return s->left >= st->max_tries ? SLOT_STATE_PENDING : SLOT_STATE_TRIAL;
	case SLOT_RECORD_GOOD:
		if (s->order_pos < 0)
			return SLOT_STATE_BAD;
		return s->left >= st->max_tries ? SLOT_STATE_GOOD : SLOT_STATE_TRIAL;
	case SLOT_RECORD_NONE:
	case _SLOT_RECORD_MAX:
		break;
	}
	if (!slot_verified(st, i))
		return s->has_version ? SLOT_STATE_BAD : SLOT_STATE_EMPTY;
	return s->left >= st->max_tries ? SLOT_STATE_GOOD : SLOT_STATE_TRIAL;
}

/* Slots of BOOT_ORDER other than skip that are verified and not recorded bad. */
static size_t order_good_others(const struct slot_env *st, size_t skip)
{
	size_t n = 0;

	for (size_t k = 0; k < st->n_order; k++)
		if (st->order[k] != skip && slot_verified(st, st->order[k]) &&
		    st->slots[st->order[k]].record != SLOT_RECORD_BAD)
			n++;
	return n;
}

/* Slots of BOOT_ORDER other than skip known to boot: marked good (or
 * legacy, booted before flashd). A slot activated and never booted may
 * not boot at all: a failed health check keeps its slot behind it as
 * the fallback (found by test-abstate: dud pending in B, A's check
 * fails, B never boots, A was out for good). */
static size_t order_proven_others(const struct slot_env *st, size_t skip)
{
	size_t n = 0;

	for (size_t k = 0; k < st->n_order; k++) {
		const struct slot_vars *o = &st->slots[st->order[k]];

		if (st->order[k] != skip && slot_verified(st, st->order[k]) &&
		    (o->record == SLOT_RECORD_GOOD || o->record == SLOT_RECORD_NONE))
			n++;
	}
	return n;
}

static int need_verified(const struct slot_env *st, enum slot_op op, size_t slot,
			 struct error *err)
{
	const struct slot_vars *s = &st->slots[slot];

	if (slot_verified(st, slot))
		return 0;
	return error_set(err, -EPERM, "%s: slot %s holds no verified image (%s): only a slot "
			 "whose last install verified can boot; install it first",
			 slot_op_table[op], s->name, state_names[slot_state_of(st, slot, false)].text);
}

/* A slot that leaves BOOT_ORDER as a failed install: never leaves the
 * order empty (the script would boot every slot, this one included). */
static int drop_install(struct slot_env *n, size_t slot, enum slot_record rec,
			struct error *err)
{
	if (n->slots[slot].order_pos >= 0 && n->n_order == 1)
		return error_set(err, -EBUSY, "slot %s is the last slot in BOOT_ORDER: taking it "
				 "out would leave nothing to boot (an empty BOOT_ORDER boots "
				 "every slot)", n->slots[slot].name);
	remove_from_order(n, slot);
	set_left(n, slot, 0);
	n->slots[slot].record = rec;
	return 0;
}

static int mark_bad(struct slot_env *n, size_t slot, unsigned flags, struct error *err)
{
	struct slot_vars *s = &n->slots[slot];
	bool in_order = s->order_pos >= 0;

	if (slot_verified(n, slot) || s->record == SLOT_RECORD_NONE)
		s->record = SLOT_RECORD_BAD;
	if (!in_order) {
		set_left(n, slot, 0);
		return 0;
	}
	if ((flags & SLOT_KEEP_LAST) && order_proven_others(n, slot) == 0) {
		/* the best the board has stays, recorded bad (degraded), but
		 * behind the verified slots not yet tried: they boot first, and
		 * it is the fallback when they do not */
		if (order_good_others(n, slot) > 0) {
			remove_from_order(n, slot);
			append_to_order(n, slot);
		}
		return 1;
	}
	if (n->n_order == 1)
		return error_set(err, -EBUSY, "refusing to mark slot %s bad: it is the last slot "
				 "in BOOT_ORDER and the board would have nothing to boot (an "
				 "empty BOOT_ORDER boots every slot); install and activate "
				 "another image first", s->name);
	if (!(flags & SLOT_FORCE) && order_good_others(n, slot) == 0)
		return error_set(err, -EBUSY, "refusing to mark slot %s bad: no other slot in "
				 "BOOT_ORDER holds a verified image not marked bad (force "
				 "overrides)", s->name);
	remove_from_order(n, slot);
	set_left(n, slot, 0);
	return 0;
}

static int rollback(struct slot_env *n, int slot, unsigned flags, struct error *err)
{
	int target = -1;

	if (slot < 0) {
		if (n->n_order == 0)
			return error_set(err, -ENOENT, "rollback: BOOT_ORDER is empty");
		slot = (int)n->order[0];
	}
	for (size_t k = 0; k < n->n_order && target < 0; k++)
		if (n->order[k] != (size_t)slot && slot_verified(n, n->order[k]))
			target = (int)n->order[k];
	if (target < 0 && (flags & SLOT_FORCE))
		for (size_t i = 0; i < n->n_slots && target < 0; i++)
			if (i != (size_t)slot && slot_verified(n, i))
				target = (int)i;
	if (target < 0)
		return error_set(err, -ENOENT, "rollback from slot %s: no other verified slot in "
				 "BOOT_ORDER (one marked bad needs force; one whose install did "
				 "not verify never boots)", n->slots[slot].name);
	if (n->slots[target].record == SLOT_RECORD_BAD)
		n->slots[target].record = SLOT_RECORD_VERIFIED;
	move_first(n, (size_t)target);
	set_left(n, (size_t)target, n->max_tries);
	return 0;
}

/* A slot kept in BOOT_ORDER recorded bad (degraded, see mark_bad) stays
 * behind every slot that is not: it is the fallback, never the next boot
 * while a good one is there. */
static void bad_behind(struct slot_env *n)
{
	size_t bad[SLOT_MAX], k = 0;

	for (size_t i = 0; i < n->n_order; i++)
		if (n->slots[n->order[i]].record == SLOT_RECORD_BAD)
			bad[k++] = n->order[i];
	for (size_t i = 0; i < k; i++) {
		remove_from_order(n, bad[i]);
		append_to_order(n, bad[i]);
	}
}

static int activate(struct slot_env *n, size_t slot, struct error *err)
{
	int r = need_verified(n, SLOT_OP_ACTIVATE, slot, err);

	if (r < 0)
		return r;
	/* activating a slot marked bad gives it a new trial */
	if (n->slots[slot].record == SLOT_RECORD_BAD)
		n->slots[slot].record = SLOT_RECORD_VERIFIED;
	move_first(n, slot);
	set_left(n, slot, n->max_tries);
	return 0;
}

/* SLOT_INIT_READ: the records say nothing; what was read or runs does. */
static void init_from_reads(struct slot_env *n, unsigned flags)
{
	for (size_t i = 0; i < n->n_slots; i++) {
		struct slot_vars *s = &n->slots[i];

		if (flags & SLOT_READ_OK(i))
			s->record = s->record == SLOT_RECORD_BAD ? SLOT_RECORD_BAD : SLOT_RECORD_GOOD;
		else if (flags & SLOT_RUNNING(i))
			s->record = s->record == SLOT_RECORD_BAD || s->record == SLOT_RECORD_GOOD ?
				    s->record : SLOT_RECORD_VERIFIED;
		else if (slot_verified(n, i) || s->record == SLOT_RECORD_NONE)
			s->record = SLOT_RECORD_UNKNOWN;
		if (!slot_verified(n, i))
			set_left(n, i, 0);
	}
}

static int init_order(struct slot_env *n, unsigned flags, struct error *err)
{
	size_t idx[SLOT_MAX], k = 0;

	if (flags & SLOT_INIT_READ)
		init_from_reads(n, flags);
	for (size_t i = 0; i < n->n_slots; i++)
		if (slot_verified(n, i) && n->slots[i].record != SLOT_RECORD_BAD) {
			idx[k++] = i;
			set_left(n, i, n->max_tries);
			/* a legacy slot trusted by the operator gets its record:
			 * an env without any is one whose records were lost */
			if (n->slots[i].record == SLOT_RECORD_NONE)
				n->slots[i].record = SLOT_RECORD_GOOD;
		}
	if (!k)
		return error_set(err, -EPERM, "init: no slot holds a verified image not marked "
				 "bad; install one first");
	set_order(n, idx, k);
	return 0;
}

bool slot_fell_back(const struct slot_env *st, int booted)
{
	if (booted < 0 || booted >= (int)st->n_slots || st->slots[booted].order_pos <= 0)
		return false;
	for (int k = 0; k < st->slots[booted].order_pos; k++)
		if (st->slots[st->order[k]].left > 0)
			return false;
	return true;
}

bool slot_records_lost(const struct slot_env *st)
{
	if (st->last_good >= 0 || (st->order_set && !st->env_default))
		return false;
	for (size_t i = 0; i < st->n_slots; i++)
		if (st->slots[i].record != SLOT_RECORD_NONE || st->slots[i].has_version)
			return false;
	return true;
}

bool slot_needs_fallback(const struct slot_env *st, int booted)
{
	if (booted < 0 || booted >= (int)st->n_slots)
		return false;
	return slot_records_lost(st) || slot_fell_back(st, booted);
}

/* Records lost: the default env's "A B" would boot a slot nobody verified
 * (a never written or half-written one) once the booted slot's tries run
 * out. The running slot is the only one known to boot: it alone stays in
 * BOOT_ORDER, on trial (the health check decides), the others unknown. */
static void adopt_booted(struct slot_env *n, size_t booted)
{
	for (size_t i = 0; i < n->n_slots; i++)
		n->slots[i].record = i == booted ? SLOT_RECORD_VERIFIED : SLOT_RECORD_UNKNOWN;
	set_order(n, &booted, 1);
	if (!n->slots[booted].left_set)
		set_left(n, booted, n->slots[booted].left);
}

static void fallback(struct slot_env *n, int booted)
{
	if (booted >= 0 && booted < (int)n->n_slots && slot_records_lost(n)) {
		adopt_booted(n, (size_t)booted);
		return;
	}
	if (!slot_fell_back(n, booted))
		return;
	while (n->order[0] != (size_t)booted) {
		size_t s = n->order[0];

		if (slot_verified(n, s) || n->slots[s].record == SLOT_RECORD_NONE)
			n->slots[s].record = SLOT_RECORD_BAD;
		remove_from_order(n, s);
	}
}

/* op on n in place; 1 = kept (degraded), see SLOT_KEEP_LAST. */
static int apply_op(struct slot_env *n, enum slot_op op, int slot, unsigned flags,
		    struct error *err)
{
	int r;

	switch (op) {
	case SLOT_OP_ACTIVATE:
		return activate(n, (size_t)slot, err);
	case SLOT_OP_MARK_GOOD:
		r = need_verified(n, op, (size_t)slot, err);
		if (r < 0)
			return r;
		append_to_order(n, (size_t)slot);
		set_left(n, (size_t)slot, n->max_tries);
		n->slots[slot].record = SLOT_RECORD_GOOD;
		n->last_good = slot;
		bad_behind(n);
		return 0;
	case SLOT_OP_MARK_BAD:
		return mark_bad(n, (size_t)slot, flags, err);
	case SLOT_OP_ROLLBACK:
		return rollback(n, slot, flags, err);
	case SLOT_OP_RESET_COUNTERS:
		for (size_t k = 0; k < n->n_order; k++)
			set_left(n, n->order[k], n->max_tries);
		return 0;
	case SLOT_OP_INIT:
		return init_order(n, flags, err);
	case SLOT_OP_INSTALL_BEGIN:
		if (n->slots[slot].order_pos >= 0 && n->n_order == 1)
			return error_set(err, -EBUSY, "refusing to install into slot %s: it is the "
					 "last slot in BOOT_ORDER, the only one the board can boot "
					 "(the booted slot is not in BOOT_ORDER: it failed or was "
					 "marked bad); reboot into %s, or activate the booted slot "
					 "if it is good, first", n->slots[slot].name,
					 n->slots[slot].name);
		r = drop_install(n, (size_t)slot, SLOT_RECORD_INSTALLING, err);
		if (r >= 0 && n->last_good == slot)
			n->last_good = -1;
		/* the verdict was on the image this install replaces */
		n->slots[slot].has_health = false;
		return r;
	case SLOT_OP_INSTALL_VERIFIED:
		n->slots[slot].record = SLOT_RECORD_VERIFIED;
		return 0;
	case SLOT_OP_INSTALL_ACTIVATE:
		n->slots[slot].record = SLOT_RECORD_VERIFIED;
		return activate(n, (size_t)slot, err);
	case SLOT_OP_INSTALL_FAILED:
	case SLOT_OP_INSTALL_CANCELLED:
		if (!(flags & SLOT_FORCE) && n->slots[slot].record != SLOT_RECORD_INSTALLING)
			return error_set(err, -ESTALE, "%s: slot %s is not being installed (%s)",
					 slot_op_table[op], n->slots[slot].name,
					 state_names[slot_state_of(n, slot, false)].text);
		return drop_install(n, (size_t)slot, op == SLOT_OP_INSTALL_FAILED ?
				    SLOT_RECORD_FAILED : SLOT_RECORD_CANCELLED, err);
	case SLOT_OP_RETIRE:
		r = drop_install(n, (size_t)slot, SLOT_RECORD_NONE, err);
		if (r >= 0 && n->last_good == slot)
			n->last_good = -1;
		return r;
	case SLOT_OP_FALLBACK:
		fallback(n, slot);
		return 0;
	case _SLOT_OP_MAX:
		break;
	}
	return error_set(err, -EINVAL, "unknown slot operation %d", (int)op);
}

static bool op_needs_slot(enum slot_op op)
{
	return op != SLOT_OP_ROLLBACK && op != SLOT_OP_RESET_COUNTERS && op != SLOT_OP_INIT;
}

int slot_compute_booted(const struct slot_env *st, int booted, enum slot_op op, int slot,
			unsigned flags, struct slot_env *ret_state,
			struct slot_changes *ret_changes, struct error *err)
{
	struct slot_env n = *st;
	int r;

	if (op >= _SLOT_OP_MAX)
		return error_set(err, -EINVAL, "unknown slot operation %d", (int)op);
	if ((op_needs_slot(op) && slot < 0) || slot >= (int)st->n_slots)
		return error_set(err, -EINVAL, "%s: no such slot (index %d)", slot_op_table[op], slot);
	if (booted >= 0 && booted < (int)st->n_slots)
		fallback(&n, booted);
	r = apply_op(&n, op, slot, flags, err);
	if (r < 0)
		return r;
	if (!n.n_order && st->n_order)
		return error_set(err, -EBUSY, "%s would leave BOOT_ORDER empty", slot_op_table[op]);
	diff_changes(st, &n, ret_changes);
	if (op == SLOT_OP_ROLLBACK && ret_changes->n == 0)
		return error_set(err, -EALREADY, "rollback: slot %s is already primary with full "
				 "tries; nothing to roll back", n.slots[n.order[0]].name);
	*ret_state = n;
	return r;
}

int slot_compute(const struct slot_env *st, enum slot_op op, int slot, unsigned flags,
		 struct slot_env *ret_state, struct slot_changes *ret_changes,
		 struct error *err)
{
	return slot_compute_booted(st, -1, op, slot, flags, ret_state, ret_changes, err);
}

void slot_decide(const struct slot_env *st, int booted, const char *booted_by,
			 struct slot_decision *ret)
{
	struct slot_env n, n2;
	struct slot_changes ch;
	struct slot_decision s = {
		.booted = booted >= 0 && booted < (int)st->n_slots ? booted : -1,
		.primary = st->n_order ? (int)st->order[0] : -1,
		.last_good = st->last_good,
	};
	int next = slot_boot_select(st, &n, &ch);

	/* what the script boots, after its counter reset if it comes to that */
	if (next == -EAGAIN) {
		s.next_after_reset = true;
		next = slot_boot_select(&n, &n2, &ch);
	}
	s.next_boot = next >= 0 ? next : -1;
	for (size_t k = 0; k < st->n_order; k++)
		if (st->slots[st->order[k]].record == SLOT_RECORD_BAD)
			s.degraded = true;
	if (s.booted >= 0) {
		const struct slot_vars *b = &st->slots[s.booted];

		s.booted_by = booted_by;
		s.on_trial = b->order_pos >= 0 && b->left < st->max_tries;
		/* the primaries before it ran out of tries and the script moved
		 * on; a primary with tries was activated after this boot */
		s.fell_back = slot_fell_back(st, s.booted);
		s.switch_pending = s.primary >= 0 && s.booted != s.primary && !s.fell_back;
		/* a slot kept in BOOT_ORDER recorded bad (degraded) failed
		 * its check already: not again on every daemon start */
		s.needs_health_check = s.on_trial && b->record != SLOT_RECORD_BAD;
	}
	*ret = s;
}

int slot_apply(struct env *e, const struct slot_changes *c, struct error *err)
{
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	int r;

	r = env_txn_new(e, &t);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		/* "" deletes (a record going back to none); BOOT_ORDER is never "" */
		r = env_txn_set(t, c->vars[i].name, c->vars[i].value[0] ? c->vars[i].value : NULL);
		if (r < 0)
			return r;
	}
	return env_txn_commit(t, err);
}

/* The script never rewrites a BOOT_ORDER that is set (names it does not
 * know stay in it); it saves only the default of an unset one. */
static void keep_order_as_is(const struct slot_env *st, struct slot_changes *c)
{
	if (!st->order_set || !c->n || strcmp(c->vars[0].name, SLOT_ORDER_VAR))
		return;
	memmove(&c->vars[0], &c->vars[1], (c->n - 1) * sizeof(c->vars[0]));
	c->n--;
}

int slot_boot_select(const struct slot_env *st, struct slot_env *ret_state,
		     struct slot_changes *ret_changes)
{
	struct slot_env n = *st;
	int i = slot_next_boot(st);

	/* the script's defaults (unset or empty variables) are saved too */
	n.order_set = true;
	for (size_t k = 0; k < n.n_slots; k++)
		n.slots[k].left_set = true;
	if (i < 0) {
		/* the script gives the slots in BOOT_ORDER full tries, saves,
		 * resets; slots out of the order (bad) stay out */
		for (size_t k = 0; k < n.n_order; k++)
			set_left(&n, n.order[k], n.max_tries);
		diff_changes(st, &n, ret_changes);
		keep_order_as_is(st, ret_changes);
		*ret_state = n;
		return n.n_order ? -EAGAIN : -ELOOP;
	}
	set_left(&n, i, n.slots[i].left - 1);
	diff_changes(st, &n, ret_changes);
	keep_order_as_is(st, ret_changes);
	*ret_state = n;
	return i;
}
