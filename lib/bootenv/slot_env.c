/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The slot env: the A/B variables read as the boot script reads them
 * (slot_env_load), the form a write of one must have (slot_env_var_check)
 * and which variables are flashd's (see slot.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "slot.h"
#include "util.h"

static bool has_affix(const char *name, const char *pre, const char *suf)
{
	size_t len = strlen(name), lp = strlen(pre), ls = strlen(suf);

	return len > lp + ls && !strncmp(name, pre, lp) && !strcmp(name + len - ls, suf);
}

bool slot_env_is_flashd_var(const char *name)
{
	return slot_env_is_var(name) || !strncmp(name, "FLASHD_", 7);
}

bool slot_env_is_var(const char *name)
{
	return !strcmp(name, SLOT_ORDER_VAR) || !strcmp(name, SLOT_LAST_GOOD_VAR) ||
	       has_affix(name, "BOOT_", "_LEFT") || has_affix(name, "FLASHD_", "_STATE");
}

/* One decimal digit: U-Boot's "test -gt" reads decimal, the script's
 * setexpr writes hex; they agree on 0..9 only. */
static int parse_left(const char *s, unsigned *ret)
{
	if (!s || !isdigit((unsigned char)s[0]) || s[1])
		return -EINVAL;
	*ret = (unsigned)(s[0] - '0');
	return 0;
}

static bool group_has(const struct layout_slot_group *g, const char *name, size_t len)
{
	if (!g)
		return true;
	for (size_t i = 0; i < g->n_slots; i++)
		if (strlen(g->slots[i].name) == len && !strncmp(g->slots[i].name, name, len))
			return true;
	return false;
}

static int check_order(const struct layout_slot_group *g, const char *v, struct error *err)
{
	char name[SLOT_NAME_MAX];

	if (!v || !*v)
		return error_set(err, -EINVAL, "BOOT_ORDER must name at least one slot: unset or "
				 "empty, the boot script boots every slot, unverified ones too");
	for (const char *p = v;;) {
		size_t len = strcspn(p, " ");

		snprintf(name, sizeof(name), "%.*s", (int)MIN(len, sizeof(name) - 1), p);
		if (!len || len >= SLOT_NAME_MAX || !slot_name_valid(name) ||
		    !group_has(g, p, len))
			return error_set(err, -EINVAL, "BOOT_ORDER='%s': '%.*s' is not a slot%s%s "
					 "(slot names separated by single spaces)", v, (int)len, p,
					 g ? " of group " : "", g ? g->name : "");
		for (const char *q = v; q < p; q += strcspn(q, " ") + 1)
			if (strcspn(q, " ") == len && !strncmp(q, p, len))
				return error_set(err, -EINVAL, "BOOT_ORDER='%s': slot %s given "
						 "twice", v, name);
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int slot_env_var_check(const struct layout_slot_group *g, const char *name, const char *value,
		   struct error *err)
{
	unsigned max = g && g->max_tries ? g->max_tries : g ? SLOT_DEFAULT_MAX_TRIES :
		       SLOT_MAX_TRIES_LIMIT, left;
	size_t len = strlen(name);

	if (!strcmp(name, SLOT_ORDER_VAR))
		return check_order(g, value, err);
	if (has_affix(name, "BOOT_", "_LEFT")) {
		if (!group_has(g, name + 5, len - 10))
			return error_set(err, -EINVAL, "%s: no slot '%.*s' in group %s", name,
					 (int)(len - 10), name + 5, g->name);
		if (value && (parse_left(value, &left) < 0 || left > max))
			return error_set(err, -EINVAL, "%s='%s': tries left must be one decimal "
					 "number 0..%u (the boot script counts with setexpr, "
					 "which writes hex)", name, value, max);
		return 0;
	}
	if (has_affix(name, "FLASHD_", "_STATE")) {
		if (!group_has(g, name + 7, len - 13))
			return error_set(err, -EINVAL, "%s: no slot '%.*s' in group %s", name,
					 (int)(len - 13), name + 7, g->name);
		if (value && slot_record_from_string(value) < 0)
			return error_set(err, -EINVAL, "%s='%s': not an install record (installing, "
					 "verified, good, bad, failed, cancelled)", name, value);
		return 0;
	}
	if (!strcmp(name, SLOT_LAST_GOOD_VAR) && value &&
	    (!slot_name_valid(value) || !group_has(g, value, strlen(value))))
		return error_set(err, -EINVAL, "%s='%s' is not a slot", name, value);
	return 0;
}

static void order_push(struct slot_env *st, size_t idx)
{
	st->slots[idx].order_pos = (int)st->n_order;
	st->order[st->n_order++] = idx;
}

/* Note a malformed variable (the first SLOT_MAX are kept). */
static void add_malformed(struct slot_env *st, const char *name, const char *value,
			  const char *fmt, ...)
{
	struct slot_malformed *m = &st->malformed[st->n_malformed];
	va_list ap;

	if (st->n_malformed++ >= SLOT_MAX)
		return;
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->value, sizeof(m->value), "%s", value);
	va_start(ap, fmt);
	vsnprintf(m->effect, sizeof(m->effect), fmt, ap);
	va_end(ap);
}

/* FLASHD_<x>_STATE and whether FLASHD_<x>_VERSION / _HEALTH exist. */
static void load_record(struct slot_env *st, struct slot_vars *s, slot_getenv_fn get,
			void *userdata)
{
	char var[SLOT_NAME_MAX + 16];
	_cleanup_free_ char *rec = NULL, *ver = NULL, *health = NULL;
	int r;

	slot_record_var(s->name, var, sizeof(var));
	rec = get(userdata, var);
	if (rec && *rec) {
		r = slot_record_from_string(rec);
		if (r < 0) {
			/* the boot script never reads it; not proof of anything */
			add_malformed(st, var, rec, "not an install record: read as unknown "
				      "(content unverified); the boot script does not read it");
			r = SLOT_RECORD_UNKNOWN;
		}
		s->record = (enum slot_record)r;
	}
	slot_version_var(s->name, var, sizeof(var));
	ver = get(userdata, var);
	s->has_version = ver && *ver;
	slot_health_var(s->name, var, sizeof(var));
	health = get(userdata, var);
	s->has_health = health && *health;
}

/* BOOT_<x>_LEFT as the script reads it (slot.h, slot_env_load). */
static void load_left(struct slot_env *st, struct slot_vars *s, slot_getenv_fn get,
		      void *userdata)
{
	char var[SLOT_NAME_MAX + 16];
	_cleanup_free_ char *v = NULL;
	long n;

	slot_left_var(s->name, var, sizeof(var));
	v = get(userdata, var);
	if (!v) {
		s->left = st->max_tries; /* as the boot script defaults it */
		return;
	}
	if (parse_left(v, &s->left) >= 0) {
		s->left_set = true;
		return;
	}
	n = strtol(v, NULL, 10);
	s->left = n > 0 ? 1 : 0;
	/* left_set false: the next operation writes it back as a digit */
	if (n > 0)
		add_malformed(st, var, v, "not one decimal digit: the boot script boots slot %s "
			      "once more (%ld > 0), then its hex countdown (setexpr) reads as 0: "
			      "counted as 1 try left", s->name, n);
	else
		add_malformed(st, var, v, "not a number of tries: the boot script skips slot %s "
			      "(reads as 0 tries left)", s->name);
}

int slot_env_load(struct slot_env *ret, const char *const *names, size_t n_names,
		    unsigned max_tries, slot_getenv_fn get, void *userdata, struct error *err)
{
	struct slot_env st = { .max_tries = max_tries, .n_slots = n_names };
	_cleanup_free_ char *order = NULL, *last = NULL, *mark = NULL;

	if (n_names < 1 || n_names > SLOT_MAX)
		return error_set(err, -EINVAL, "%zu slots: 1 to %d supported", n_names, SLOT_MAX);
	if (max_tries < 1 || max_tries > SLOT_MAX_TRIES_LIMIT)
		return error_set(err, -EINVAL, "max tries %u: must be 1..%d (the boot script counts "
				 "with setexpr, which prints hex)", max_tries, SLOT_MAX_TRIES_LIMIT);
	for (size_t i = 0; i < n_names; i++) {
		if (!slot_name_valid(names[i]))
			return error_set(err, -EINVAL, "slot name '%s': 1-%d characters of "
					 "[A-Za-z0-9_]", names[i], SLOT_NAME_MAX - 1);
		if (slot_find(&st, names[i]) >= 0 && (size_t)slot_find(&st, names[i]) < i)
			return error_set(err, -EINVAL, "slot name '%s' given twice", names[i]);
		snprintf(st.slots[i].name, sizeof(st.slots[i].name), "%s", names[i]);
		st.slots[i].order_pos = -1;
		load_record(&st, &st.slots[i], get, userdata);
		load_left(&st, &st.slots[i], get, userdata);
	}
	mark = get(userdata, SLOT_ENV_MARK_VAR);
	st.env_default = mark && !strcmp(mark, SLOT_ENV_MARK_DEFAULT);
	last = get(userdata, SLOT_LAST_GOOD_VAR);
	st.last_good = last ? slot_find(&st, last) : -1;
	if (st.last_good < 0)
		st.last_good = -1;

	order = get(userdata, SLOT_ORDER_VAR);
	/* the script's "test -n" cannot tell empty from unset */
	st.order_set = order && *order;
	if (!st.order_set) {
		for (size_t i = 0; i < st.n_slots; i++)
			order_push(&st, i);
	} else {
		char *save = NULL;

		for (char *t = strtok_r(order, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
			int i = slot_find(&st, t);
			if (i < 0)
				st.order_foreign = true; /* the boot script skips it as well */
			else if (st.slots[i].order_pos < 0)
				order_push(&st, (size_t)i);
		}
	}
	*ret = st;
	return 0;
}

void slot_env_seal(struct slot_env *st, const bool *sealed)
{
	for (size_t i = 0; i < st->n_slots; i++)
		st->slots[i].unsealed = !sealed[i];
	if (st->order_set)
		return;
	st->n_order = 0;
	for (size_t i = 0; i < st->n_slots; i++) {
		st->slots[i].order_pos = -1;
		if (sealed[i])
			order_push(st, i);
	}
}

int slot_env_load_group(struct slot_env *ret, const struct layout_slot_group *g,
			  slot_getenv_fn get, void *userdata, struct error *err)
{
	const char *names[SLOT_MAX];

	if (g->n_slots > SLOT_MAX)
		return error_set(err, -EINVAL, "slot group %s: %zu slots, at most %d", g->name,
				 g->n_slots, SLOT_MAX);
	for (size_t i = 0; i < g->n_slots; i++)
		names[i] = g->slots[i].name;
	return slot_env_load(ret, names, g->n_slots,
			       g->max_tries ? g->max_tries : SLOT_DEFAULT_MAX_TRIES, get, userdata,
			       err);
}
