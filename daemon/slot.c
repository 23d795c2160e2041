/* A/B slot state logic over BOOT_ORDER / BOOT_<x>_LEFT (see slot.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "slot.h"
#include "util.h"

static const char *const op_names[_SLOT_OP_MAX] = {
	[SLOT_OP_ACTIVATE] = "activate",
	[SLOT_OP_MARK_GOOD] = "mark-good",
	[SLOT_OP_MARK_BAD] = "mark-bad",
	[SLOT_OP_ROLLBACK] = "rollback",
	[SLOT_OP_RESET_COUNTERS] = "reset-counters",
	[SLOT_OP_INIT] = "init",
};

static const char *const health_names[_SLOT_HEALTH_MAX] = {
	[SLOT_HEALTH_GOOD] = "good",
	[SLOT_HEALTH_TRIAL] = "trial",
	[SLOT_HEALTH_EXHAUSTED] = "exhausted",
	[SLOT_HEALTH_BAD] = "bad",
};

_printf_(3, 4)
static int slot_fail(struct slot_error *err, int r, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return r;
}

const char *slot_op_to_string(enum slot_op op)
{
	return op < _SLOT_OP_MAX ? op_names[op] : NULL;
}

int slot_op_from_string(const char *s)
{
	for (size_t i = 0; i < _SLOT_OP_MAX; i++)
		if (!strcmp(op_names[i], s))
			return (int)i;
	return -EINVAL;
}

const char *slot_health_to_string(enum slot_health h)
{
	return h < _SLOT_HEALTH_MAX ? health_names[h] : NULL;
}

void slot_left_var(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "BOOT_%s_LEFT", name);
}

bool slot_is_state_var(const char *name)
{
	size_t len = strlen(name);

	if (!strcmp(name, "BOOT_ORDER"))
		return true;
	return len > strlen("BOOT__LEFT") && !strncmp(name, "BOOT_", 5) &&
	       !strcmp(name + len - 5, "_LEFT");
}

static bool slot_name_valid(const char *s)
{
	if (!s || !*s || strlen(s) >= SLOT_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

int slot_find(const struct slot_state *st, const char *name)
{
	for (size_t i = 0; i < st->n_slots; i++)
		if (!strcmp(st->slots[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* Decimal tries count as U-Boot's "test -gt" reads it. */
static int parse_left(const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 1000)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static void order_push(struct slot_state *st, size_t idx)
{
	st->slots[idx].order_pos = (int)st->n_order;
	st->order[st->n_order++] = idx;
}

int slot_state_load(struct slot_state *ret, const char *const *names, size_t n_names,
		    unsigned max_tries, slot_getenv_fn get, void *userdata, struct slot_error *err)
{
	struct slot_state st = { .max_tries = max_tries, .n_slots = n_names };
	_cleanup_free_ char *order = NULL;

	if (n_names < 1 || n_names > SLOT_MAX)
		return slot_fail(err, -EINVAL, "%zu slots: 1 to %d supported", n_names, SLOT_MAX);
	if (max_tries < 1 || max_tries > SLOT_MAX_TRIES_LIMIT)
		return slot_fail(err, -EINVAL, "max tries %u: must be 1..%d (the boot script counts "
				 "with setexpr, which prints hex)", max_tries, SLOT_MAX_TRIES_LIMIT);
	for (size_t i = 0; i < n_names; i++) {
		char var[SLOT_NAME_MAX + 16];
		_cleanup_free_ char *v = NULL;

		if (!slot_name_valid(names[i]))
			return slot_fail(err, -EINVAL, "slot name '%s': 1-%d characters of "
					 "[A-Za-z0-9_]", names[i], SLOT_NAME_MAX - 1);
		if (slot_find(&st, names[i]) >= 0 && (size_t)slot_find(&st, names[i]) < i)
			return slot_fail(err, -EINVAL, "slot name '%s' given twice", names[i]);
		snprintf(st.slots[i].name, sizeof(st.slots[i].name), "%s", names[i]);
		st.slots[i].order_pos = -1;
		slot_left_var(names[i], var, sizeof(var));
		v = get(userdata, var);
		if (!v) {
			st.slots[i].left = max_tries; /* as the boot script defaults it */
			continue;
		}
		if (parse_left(v, &st.slots[i].left) < 0)
			return slot_fail(err, -EBADMSG, "%s='%s' is not a number of tries", var, v);
		st.slots[i].left_set = true;
	}

	order = get(userdata, "BOOT_ORDER");
	st.order_set = order != NULL;
	if (!order) {
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

int slot_state_load_group(struct slot_state *ret, const struct layout_slot_group *g,
			  slot_getenv_fn get, void *userdata, struct slot_error *err)
{
	const char *names[SLOT_MAX];

	if (g->n_slots > SLOT_MAX)
		return slot_fail(err, -EINVAL, "slot group %s: %zu slots, at most %d", g->name,
				 g->n_slots, SLOT_MAX);
	for (size_t i = 0; i < g->n_slots; i++)
		names[i] = g->slots[i].name;
	return slot_state_load(ret, names, g->n_slots,
			       g->max_tries ? g->max_tries : SLOT_DEFAULT_MAX_TRIES, get, userdata,
			       err);
}

int slot_next_boot(const struct slot_state *st)
{
	for (size_t k = 0; k < st->n_order; k++)
		if (st->slots[st->order[k]].left > 0)
			return (int)st->order[k];
	return -ENOENT;
}

enum slot_health slot_health_of(const struct slot_state *st, size_t i)
{
	const struct slot_info *s = &st->slots[i];

	if (s->order_pos < 0)
		return SLOT_HEALTH_BAD;
	if (s->left == 0)
		return SLOT_HEALTH_EXHAUSTED;
	return s->left >= st->max_tries ? SLOT_HEALTH_GOOD : SLOT_HEALTH_TRIAL;
}

void slot_order_string(const struct slot_state *st, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	for (size_t k = 0; k < st->n_order && off < len; k++)
		off += snprintf(buf + off, len - off, "%s%s", k ? " " : "",
				st->slots[st->order[k]].name);
}

/* Rebuild BOOT_ORDER from a list of slot indices. */
static void set_order(struct slot_state *st, const size_t *idx, size_t n)
{
	for (size_t i = 0; i < st->n_slots; i++)
		st->slots[i].order_pos = -1;
	st->n_order = 0;
	for (size_t k = 0; k < n; k++)
		order_push(st, idx[k]);
	st->order_set = true;
	st->order_foreign = false;
}

static void move_first(struct slot_state *st, size_t slot)
{
	size_t idx[SLOT_MAX], n = 0;

	idx[n++] = slot;
	for (size_t k = 0; k < st->n_order; k++)
		if (st->order[k] != slot)
			idx[n++] = st->order[k];
	set_order(st, idx, n);
}

static void remove_from_order(struct slot_state *st, size_t slot)
{
	size_t idx[SLOT_MAX], n = 0;

	for (size_t k = 0; k < st->n_order; k++)
		if (st->order[k] != slot)
			idx[n++] = st->order[k];
	set_order(st, idx, n);
}

static void append_to_order(struct slot_state *st, size_t slot)
{
	size_t idx[SLOT_MAX], n = 0;

	for (size_t k = 0; k < st->n_order; k++)
		idx[n++] = st->order[k];
	if (st->slots[slot].order_pos < 0)
		idx[n++] = slot;
	set_order(st, idx, n);
}

static void set_left(struct slot_state *st, size_t slot, unsigned left)
{
	st->slots[slot].left = left;
	st->slots[slot].left_set = true;
}

/* Every variable that differs between old and new (or is unset in old). */
static void diff_changes(const struct slot_state *old, const struct slot_state *new,
			 struct slot_changes *c)
{
	char o[sizeof(c->vars[0].value)], n[sizeof(c->vars[0].value)];

	c->n = 0;
	slot_order_string(old, o, sizeof(o));
	slot_order_string(new, n, sizeof(n));
	if (!old->order_set || old->order_foreign || strcmp(o, n)) {
		snprintf(c->vars[c->n].name, sizeof(c->vars[c->n].name), "BOOT_ORDER");
		snprintf(c->vars[c->n].value, sizeof(c->vars[c->n].value), "%s", n);
		c->n++;
	}
	for (size_t i = 0; i < new->n_slots; i++) {
		if (old->slots[i].left_set && old->slots[i].left == new->slots[i].left)
			continue;
		slot_left_var(new->slots[i].name, c->vars[c->n].name, sizeof(c->vars[c->n].name));
		snprintf(c->vars[c->n].value, sizeof(c->vars[c->n].value), "%u",
			 new->slots[i].left);
		c->n++;
	}
}

int slot_compute(const struct slot_state *st, enum slot_op op, int slot, unsigned flags,
		 struct slot_state *ret_state, struct slot_changes *ret_changes,
		 struct slot_error *err)
{
	struct slot_state n = *st;
	bool needs_slot = op == SLOT_OP_ACTIVATE || op == SLOT_OP_MARK_GOOD ||
			  op == SLOT_OP_MARK_BAD;
	int target;

	if (op >= _SLOT_OP_MAX)
		return slot_fail(err, -EINVAL, "unknown slot operation %d", (int)op);
	if ((needs_slot && slot < 0) || slot >= (int)st->n_slots)
		return slot_fail(err, -EINVAL, "%s: no such slot (index %d)", op_names[op], slot);

	switch (op) {
	case SLOT_OP_ACTIVATE:
		move_first(&n, (size_t)slot);
		set_left(&n, (size_t)slot, n.max_tries);
		break;
	case SLOT_OP_MARK_GOOD:
		append_to_order(&n, (size_t)slot);
		set_left(&n, (size_t)slot, n.max_tries);
		break;
	case SLOT_OP_MARK_BAD:
		if (!(flags & SLOT_FORCE) && st->slots[slot].order_pos >= 0 && st->n_order == 1)
			return slot_fail(err, -EBUSY, "refusing to mark slot %s bad: it is the "
					 "last slot in BOOT_ORDER (force overrides)",
					 st->slots[slot].name);
		remove_from_order(&n, (size_t)slot);
		set_left(&n, (size_t)slot, 0);
		break;
	case SLOT_OP_ROLLBACK:
		if (slot < 0) {
			if (st->n_order == 0)
				return slot_fail(err, -ENOENT, "rollback: BOOT_ORDER is empty");
			slot = (int)st->order[0];
		}
		target = -1;
		for (size_t k = 0; k < st->n_order && target < 0; k++)
			if (st->order[k] != (size_t)slot)
				target = (int)st->order[k];
		if (target < 0 && (flags & SLOT_FORCE))
			for (size_t i = 0; i < st->n_slots && target < 0; i++)
				if (i != (size_t)slot)
					target = (int)i;
		if (target < 0)
			return slot_fail(err, -ENOENT, "rollback from slot %s: no other slot in "
					 "BOOT_ORDER (one marked bad needs force)",
					 st->slots[slot].name);
		move_first(&n, (size_t)target);
		set_left(&n, (size_t)target, n.max_tries);
		break;
	case SLOT_OP_RESET_COUNTERS:
		for (size_t k = 0; k < n.n_order; k++)
			set_left(&n, n.order[k], n.max_tries);
		break;
	case SLOT_OP_INIT: {
		size_t idx[SLOT_MAX];
		for (size_t i = 0; i < n.n_slots; i++) {
			idx[i] = i;
			set_left(&n, i, n.max_tries);
		}
		set_order(&n, idx, n.n_slots);
		break;
	}
	case _SLOT_OP_MAX:
		break;
	}
	diff_changes(st, &n, ret_changes);
	*ret_state = n;
	return 0;
}

void slot_status_compute(const struct slot_state *st, int booted, const char *booted_by,
			 struct slot_status *ret)
{
	struct slot_status s = {
		.booted = booted >= 0 && booted < (int)st->n_slots ? booted : -1,
		.primary = st->n_order ? (int)st->order[0] : -1,
		.next = slot_next_boot(st),
	};

	if (s.next < 0)
		s.next = -1;
	if (s.booted >= 0) {
		s.booted_by = booted_by;
		s.on_trial = st->slots[s.booted].left < st->max_tries;
		/* the primary was tried (used tries) and the script moved on; a
		 * primary with all its tries was activated after this boot */
		s.fell_back = s.primary >= 0 && s.booted != s.primary &&
			      st->slots[s.primary].left < st->max_tries;
		s.switch_pending = s.primary >= 0 && s.booted != s.primary && !s.fell_back;
		s.needs_health_check = s.on_trial;
	}
	*ret = s;
}

/* Index of partition p among the kernel's MTD devices, or -1: devices in
 * layout order, each one's partitions by offset (layout_partition_index()'s
 * rule, computed here so this module needs only the layout data). */
static int mtd_index(const struct layout *l, const struct layout_partition *p)
{
	int idx = 0;

	if (!p)
		return -1;
	for (size_t d = 0; d < l->n_devices; d++) {
		const struct layout_device *dev = &l->devices[d];
		for (size_t i = 0; i < l->n_partitions; i++) {
			const struct layout_partition *q = &l->partitions[i];
			if (q->dev != dev)
				continue;
			if (dev == p->dev && q->offset < p->offset)
				idx++;
			else if (dev != p->dev && dev < p->dev)
				idx++;
		}
		if (dev == p->dev)
			return idx;
	}
	return -1;
}

/* Does root= value name slot s's rootfs? */
static bool root_matches(const struct layout *l, const struct layout_slot *s, const char *root)
{
	const struct layout_image_target *t = &s->rootfs;
	char buf[128];

	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND: {
		int idx = mtd_index(l, t->part);
		if (idx >= 0) {
			snprintf(buf, sizeof(buf), "/dev/mtdblock%d", idx);
			if (!strcmp(root, buf))
				return true;
		}
		snprintf(buf, sizeof(buf), "mtd:%s", t->part ? t->part->name : "");
		return !strcmp(root, buf);
	}
	case LAYOUT_STORAGE_UBI:
		for (size_t u = 0; u < l->n_ubis; u++) {
			if (l->ubis[u].part != t->part)
				continue;
			for (size_t v = 0; v < l->ubis[u].n_volumes; v++) {
				if (strcmp(l->ubis[u].volumes[v].name, t->ubi_volume))
					continue;
				snprintf(buf, sizeof(buf), "ubi%zu:%s", u, t->ubi_volume);
				if (!strcmp(root, buf))
					return true;
				snprintf(buf, sizeof(buf), "/dev/ubiblock%zu_%zu", u, v);
				if (!strcmp(root, buf))
					return true;
			}
		}
		return false;
	case LAYOUT_STORAGE_FILE:
		return false;
	case _LAYOUT_STORAGE_MAX:
		break;
	}
	return false;
}

/* Next cmdline word (double quotes group, as the kernel parses them). */
static const char *next_word(const char *p, char *buf, size_t len)
{
	size_t n = 0;
	bool quoted = false;

	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (!*p)
		return NULL;
	for (; *p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (n + 1 < len)
			buf[n++] = *p;
	}
	buf[n] = '\0';
	return p;
}

int slot_booted_from_cmdline(const char *cmdline, const struct layout *l,
			     const struct layout_slot_group *g, const char **ret_by,
			     struct slot_error *err)
{
	static const char *const keys[] = { "flashd.slot=", "rauc.slot=", "root=" };
	char found[ELEMENTSOF(keys)][256] = { "", "", "" };
	bool have[ELEMENTSOF(keys)] = { false, false, false };
	char word[256];

	/* the last occurrence of a parameter wins, as in the kernel */
	for (const char *p = cmdline; (p = next_word(p, word, sizeof(word)));)
		for (size_t k = 0; k < ELEMENTSOF(keys); k++)
			if (!strncmp(word, keys[k], strlen(keys[k]))) {
				snprintf(found[k], sizeof(found[k]), "%s", word + strlen(keys[k]));
				have[k] = true;
			}
	for (size_t k = 0; k < 2; k++) {
		if (!have[k])
			continue;
		for (size_t i = 0; i < g->n_slots; i++)
			if (!strcmp(g->slots[i].name, found[k])) {
				if (ret_by)
					*ret_by = k == 0 ? "flashd.slot" : "rauc.slot";
				return (int)i;
			}
		return slot_fail(err, -EBADMSG, "kernel command line: %s%s is not a slot of "
				 "group %s", keys[k], found[k], g->name);
	}
	if (have[2])
		for (size_t i = 0; i < g->n_slots; i++)
			if (root_matches(l, &g->slots[i], found[2])) {
				if (ret_by)
					*ret_by = "root";
				return (int)i;
			}
	return slot_fail(err, -ENOENT, "kernel command line names no slot of group %s "
			 "(no flashd.slot=, rauc.slot= or matching root=)", g->name);
}

int slot_booted(const char *path, const struct layout *l, const struct layout_slot_group *g,
		const char **ret_by, struct slot_error *err)
{
	_cleanup_free_ char *text = NULL;
	int r;

	if (!path)
		path = SLOT_DEFAULT_CMDLINE;
	r = util_read_file(path, 64 * 1024, &text, NULL);
	if (r < 0)
		return slot_fail(err, r, "%s: %s", path, strerror(-r));
	return slot_booted_from_cmdline(text, l, g, ret_by, err);
}

int slot_apply(struct env *e, const struct slot_changes *c, struct env_error *err)
{
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	int r;

	r = env_txn_new(e, &t);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		r = env_txn_set(t, c->vars[i].name, c->vars[i].value);
		if (r < 0)
			return r;
	}
	return env_txn_commit(t, err);
}

/* Kernel root= argument for a slot's rootfs, "" when flashd boot finds it. */
static void root_args(const struct layout *l, const struct layout_slot *s, char *buf, size_t len)
{
	const struct layout_image_target *t = &s->rootfs;

	buf[0] = '\0';
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		snprintf(buf, len, "root=/dev/mtdblock%d rootfstype=squashfs ro",
			 mtd_index(l, t->part));
		return;
	case LAYOUT_STORAGE_UBI:
		for (size_t u = 0; u < l->n_ubis; u++)
			if (l->ubis[u].part == t->part) {
				snprintf(buf, len, "ubi.mtd=%s ubi.block=%zu,%s root=ubi%zu:%s "
					 "rootfstype=squashfs ro", t->part->name, u, t->ubi_volume,
					 u, t->ubi_volume);
				return;
			}
		return;
	case LAYOUT_STORAGE_FILE:
	case _LAYOUT_STORAGE_MAX:
		return;
	}
}

/* The script line setting the U-Boot commands that load the slot's kernel
 * to ${kernel_addr_r}; none without a kernel in the slot (the board's
 * flashd_boot_cmd loads it then). */
static void kernel_load(const struct layout_slot *s, char *buf, size_t len)
{
	const struct layout_image_target *t = &s->kernel;

	buf[0] = '\0';
	if (!s->has_kernel)
		return;
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		snprintf(buf, len, "    setenv flashd_kernel_load 'mtd read %s ${kernel_addr_r}'\n",
			 t->part->name);
		return;
	case LAYOUT_STORAGE_UBI:
		snprintf(buf, len, "    setenv flashd_kernel_load 'ubi part %s && ubi read "
			 "${kernel_addr_r} %s'\n", t->part->name, t->ubi_volume);
		return;
	case LAYOUT_STORAGE_FILE:
	case _LAYOUT_STORAGE_MAX:
		return;
	}
}

int slot_bootscript(const struct layout *l, FILE *out)
{
	const struct layout_slot_group *g;
	unsigned max;
	char order[SLOT_MAX * SLOT_NAME_MAX + 1] = "";

	if (l->n_groups < 1)
		return -ENOENT;
	g = &l->groups[0];
	max = g->max_tries ? g->max_tries : SLOT_DEFAULT_MAX_TRIES;
	if (g->n_slots < 1 || g->n_slots > SLOT_MAX || max > SLOT_MAX_TRIES_LIMIT)
		return -EINVAL;
	for (size_t i = 0; i < g->n_slots; i++) {
		if (!slot_name_valid(g->slots[i].name))
			return -EINVAL;
		strcat(order, i ? " " : "");
		strcat(order, g->slots[i].name);
	}

	fprintf(out, "# flashd A/B boot script for %s (layout %s, slot group %s).\n"
		"# Generated by 'flashctl slot bootscript'; the contract is docs/boot-contract.md.\n"
		"# Build: mkimage -A arm -T script -C none -d THIS boot.scr\n"
		"# RAUC-compatible: BOOT_ORDER lists slots, BOOT_<x>_LEFT their tries left.\n"
		"# flashd_boot_cmd (default: load the kernel, bootm) may be overridden.\n",
		l->board ? l->board : "board",
		/* the file name only: the script must not depend on where it was made */
		l->path ? (strrchr(l->path, '/') ? strrchr(l->path, '/') + 1 : l->path) : "?",
		g->name);
	fprintf(out, "test -n \"${BOOT_ORDER}\" || setenv BOOT_ORDER \"%s\"\n", order);
	for (size_t i = 0; i < g->n_slots; i++)
		fprintf(out, "test -n \"${BOOT_%s_LEFT}\" || setenv BOOT_%s_LEFT %u\n",
			g->slots[i].name, g->slots[i].name, max);
	fprintf(out, "setenv flashd_slot\n"
		"for s in ${BOOT_ORDER}; do\n");
	for (size_t i = 0; i < g->n_slots; i++) {
		const char *n = g->slots[i].name;
		char root[256], kern[256];

		root_args(l, &g->slots[i], root, sizeof(root));
		kernel_load(&g->slots[i], kern, sizeof(kern));
		fprintf(out, "  if test -z \"${flashd_slot}\" && test \"${s}\" = \"%s\" && "
			"test ${BOOT_%s_LEFT} -gt 0; then\n"
			"    setexpr BOOT_%s_LEFT ${BOOT_%s_LEFT} - 1\n"
			"    setenv flashd_slot %s\n"
			"    setenv flashd_root \"%s\"\n"
			"%s"
			"  fi\n", n, n, n, n, n, root, kern);
	}
	/* None left: give the slots in BOOT_ORDER their tries back and reset.
	 * A slot out of the order (marked bad: an interrupted install) stays
	 * out: booting it would run an image that was never verified. */
	fprintf(out, "done\n"
		"if test -z \"${flashd_slot}\"; then\n"
		"  echo \"flashd: no slot with tries left: resetting the counters of BOOT_ORDER (${BOOT_ORDER})\"\n"
		"  for s in ${BOOT_ORDER}; do\n");
	for (size_t i = 0; i < g->n_slots; i++)
		fprintf(out, "    if test \"${s}\" = \"%s\"; then setenv BOOT_%s_LEFT %u; fi\n",
			g->slots[i].name, g->slots[i].name, max);
	fprintf(out, "  done\n");
	fprintf(out, "  saveenv\n"
		"  reset\n"
		"fi\n"
		"saveenv\n"
		"setenv bootargs \"${flashd_bootargs} ${flashd_root} flashd.slot=${flashd_slot}\"\n"
		"test -n \"${flashd_boot_cmd}\" || setenv flashd_boot_cmd "
		"'run flashd_kernel_load && bootm ${kernel_addr_r}'\n"
		"echo \"flashd: booting slot ${flashd_slot}\"\n"
		"run flashd_boot_cmd\n"
		"echo \"flashd: booting slot ${flashd_slot} failed\"\n"
		"reset\n");
	return ferror(out) ? -EIO : 0;
}

int slot_boot_select(const struct slot_state *st, struct slot_state *ret_state,
		     struct slot_changes *ret_changes)
{
	struct slot_state n = *st;
	int i = slot_next_boot(st);

	if (i < 0) {
		/* the script gives the slots in BOOT_ORDER full tries, saves,
		 * resets; slots out of the order (bad) stay out */
		for (size_t k = 0; k < n.n_order; k++)
			set_left(&n, n.order[k], n.max_tries);
		n.order_set = true;
		diff_changes(st, &n, ret_changes);
		*ret_state = n;
		return -EAGAIN;
	}
	set_left(&n, i, n.slots[i].left - 1);
	if (!n.order_set) /* the script's setenv of the default is saved too */
		n.order_set = true;
	diff_changes(st, &n, ret_changes);
	*ret_state = n;
	return i;
}
