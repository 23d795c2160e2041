/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One change of the A/B state: load the slot env, compute
 * the operation (slot.h), write the result in ONE env store, together
 * with at most one more variable of the same change (the install's
 * FLASHD_<x>_VERSION). The daemon's slot operations, the install engine's
 * records and 'flashctl slot' all change the state through here. */
#pragma once
#include <stdbool.h>
#include "env.h"
#include "error.h"
#include "layout.h"
#include "slot.h"

struct slot_change {
	enum slot_op op;
	const char *slot_name;  /* the slot by name, or NULL: ... */
	int slot;               /* ... by index (-1: none, e.g. rollback from the primary) */
	int booted;             /* the booted slot, -1 unknown: its fallback joins the store */
	unsigned flags;         /* SLOT_FORCE, SLOT_KEEP_LAST */
	const char *extra_name; /* one more variable in the store, or NULL */
	const char *extra_value;/* its value; NULL deletes it */
};

enum slot_change_fail {
	SLOT_CHANGE_OK,
	SLOT_CHANGE_ENV,        /* the env: unreadable slot env, the store failed */
	SLOT_CHANGE_NO_SLOT,    /* no such slot */
	SLOT_CHANGE_NO_ROLLBACK, /* rollback: no other verified slot to go back to */
	SLOT_CHANGE_REFUSED,    /* the state logic refuses */
};

struct slot_change_result {
	struct slot_env before, after;
	int slot;               /* the slot acted on (rollback: the new primary), -1 none */
	size_t n_written;       /* variables in the store */
	enum slot_change_fail fail;
	bool forcible;          /* refused, and the same change with SLOT_FORCE would pass */
};

/* 0, or 1 when mark-bad with SLOT_KEEP_LAST kept the slot (degraded); on
 * failure -errno, ret->fail says what kind and err what and where. ret is
 * filled in either case: before.n_slots is 0 when the state could not be
 * loaded, after is set once computed. */
int slot_change(struct env *e, const struct layout_slot_group *g, const struct slot_change *c,
		struct slot_change_result *ret, struct error *err);

/* The factory reset flag (SLOT_OVERLAY_RESET_VAR, flashd boot erases the
 * overlay and clears it): set, or deleted when cancel, in one store unless
 * the env already says so; *ret_changed false then. The flag touches no
 * slot env: no BOOT_ORDER check. The daemon's OverlayReset and the
 * offline 'flashctl overlay reset' both come here. */
int slot_change_overlay_reset(struct env *e, bool cancel, bool *ret_changed, struct error *err);

/* The slot op would put ahead of the booted one on its record alone
 * (activate or mark-good of a slot that is not running, rollback onto
 * one): its caller reads that slot against its signed index first. -1:
 * none, or the state logic refuses op (the change itself says why). */
int slot_change_promotes(const struct slot_env *st, int booted, enum slot_op op, int slot,
			 unsigned flags);

/* A raw write of vars (env set --force, SetEnv with force, by root): the
 * slot env as it would be after it must keep BOOT_ORDER to slots
 * recorded verified (slot_order_check). 0, or -EPERM with err saying
 * which slot and why; -errno when the state cannot be loaded. */
int slot_change_check_raw(struct env *e, const struct layout_slot_group *g,
			  const struct env_var *vars, size_t n, struct error *err);
