/* A/B slot state in the U-Boot env, RAUC-compatible: BOOT_ORDER ("A B",
 * first = primary) and BOOT_<x>_LEFT (tries left; the boot script
 * decrements before booting, mark-good restores the maximum).
 *
 * The state logic is pure: slot_state_load() parses the variables through
 * a getter, slot_compute() gives the new state and the variable changes
 * of one operation, slot_apply() writes them in ONE env transaction (one
 * libuboot_env_store), so a power cut never leaves a half-done change.
 * docs/boot-contract.md describes the contract with the boot script. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "env.h"
#include "layout.h"

#define SLOT_MAX 4
#define SLOT_NAME_MAX 16
/* The boot script counts with U-Boot's setexpr, which prints hex: tries
 * stay single-digit so hex and decimal agree. */
#define SLOT_MAX_TRIES_LIMIT 9
#define SLOT_DEFAULT_MAX_TRIES 3
#define SLOT_DEFAULT_CMDLINE "/proc/cmdline"

struct slot_error {
	char msg[256];
};

enum slot_op {
	SLOT_OP_ACTIVATE,       /* slot first in BOOT_ORDER, full tries */
	SLOT_OP_MARK_GOOD,      /* full tries (back into BOOT_ORDER, last, if it was out) */
	SLOT_OP_MARK_BAD,       /* out of BOOT_ORDER, 0 tries */
	SLOT_OP_ROLLBACK,       /* the other slot (first one in BOOT_ORDER that is not slot) primary */
	SLOT_OP_RESET_COUNTERS, /* full tries for every slot in BOOT_ORDER */
	SLOT_OP_INIT,           /* every slot in BOOT_ORDER (layout order), full tries */
	_SLOT_OP_MAX,
};

enum {
	/* mark-bad of the last slot in BOOT_ORDER, rollback to a slot marked bad */
	SLOT_FORCE = 1 << 0,
};

enum slot_health {
	SLOT_HEALTH_GOOD,      /* in BOOT_ORDER, full tries */
	SLOT_HEALTH_TRIAL,     /* in BOOT_ORDER, some tries used: not yet marked good */
	SLOT_HEALTH_EXHAUSTED, /* in BOOT_ORDER, no tries left: U-Boot skips it */
	SLOT_HEALTH_BAD,       /* not in BOOT_ORDER */
	_SLOT_HEALTH_MAX,
};

struct slot_info {
	char name[SLOT_NAME_MAX];
	unsigned left;          /* BOOT_<x>_LEFT (max_tries when unset, as the boot script does) */
	bool left_set;          /* the variable exists */
	int order_pos;          /* position in BOOT_ORDER, -1 = not in it */
};

struct slot_state {
	unsigned max_tries;
	size_t n_slots;
	struct slot_info slots[SLOT_MAX];
	size_t n_order;
	size_t order[SLOT_MAX]; /* slot indices, BOOT_ORDER order */
	bool order_set;         /* BOOT_ORDER exists (unset = all slots, as the script does) */
	bool order_foreign;     /* BOOT_ORDER named something that is not a slot (ignored) */
};

/* The variables one operation writes; all of them go into one store. */
struct slot_changes {
	size_t n;
	struct {
		char name[SLOT_NAME_MAX + 16];
		char value[SLOT_MAX * (SLOT_NAME_MAX + 1) + 1];
	} vars[SLOT_MAX + 1];
};

struct slot_status {
	int booted;             /* slot index, -1 = unknown */
	const char *booted_by;  /* "flashd.slot", "rauc.slot", "root" or NULL */
	int primary;            /* first in BOOT_ORDER, -1 = empty order */
	int next;               /* what U-Boot picks next boot, -1 = none (it resets counters) */
	bool on_trial;          /* the booted slot has used tries (not marked good) */
	bool fell_back;         /* the booted slot is not first in BOOT_ORDER, whose primary used tries */
	bool switch_pending;    /* another slot was activated (full tries): it boots next */
	bool needs_health_check; /* on trial: run the health check, then mark-good or mark-bad */
};

/* Returns a malloc'd value or NULL when unset (env_get_dup fits). */
typedef char *(*slot_getenv_fn)(void *userdata, const char *name);

/* Parse. names: the slot names (1..SLOT_MAX, [A-Za-z0-9_]); max_tries
 * 1..SLOT_MAX_TRIES_LIMIT. A BOOT_<x>_LEFT that is not a number is
 * -EBADMSG with err naming it. */
int slot_state_load(struct slot_state *ret, const char *const *names, size_t n_names,
		    unsigned max_tries, slot_getenv_fn get, void *userdata, struct slot_error *err);
int slot_state_load_group(struct slot_state *ret, const struct layout_slot_group *g,
			  slot_getenv_fn get, void *userdata, struct slot_error *err);

int slot_find(const struct slot_state *st, const char *name); /* index or -ENOENT */
int slot_next_boot(const struct slot_state *st);              /* index or -ENOENT */
enum slot_health slot_health_of(const struct slot_state *st, size_t i);
const char *slot_health_to_string(enum slot_health h);
const char *slot_op_to_string(enum slot_op op);
int slot_op_from_string(const char *s); /* -EINVAL if unknown */
/* "A B" */
void slot_order_string(const struct slot_state *st, char *buf, size_t len);
/* "BOOT_A_LEFT" */
void slot_left_var(const char *name, char *buf, size_t len);
/* Variables this module owns (BOOT_ORDER, BOOT_<x>_LEFT): env set refuses
 * them without --force. */
bool slot_is_state_var(const char *name);

/* Compute op on slot (index; -1 where the op takes none, for rollback =
 * "from the primary"). Fills the new state and the changes; st untouched. */
int slot_compute(const struct slot_state *st, enum slot_op op, int slot, unsigned flags,
		 struct slot_state *ret_state, struct slot_changes *ret_changes,
		 struct slot_error *err);
void slot_status_compute(const struct slot_state *st, int booted, const char *booted_by,
			 struct slot_status *ret);

/* Which slot of g the kernel booted: flashd.slot=X, else rauc.slot=X, else
 * root= matching a slot's rootfs (/dev/mtdblockN, mtd:NAME, ubiX:VOL,
 * /dev/ubiblockX_Y). Returns the index, -ENOENT when nothing names a slot,
 * -EBADMSG when flashd.slot/rauc.slot names a slot that does not exist. */
int slot_booted_from_cmdline(const char *cmdline, const struct layout *l,
			     const struct layout_slot_group *g, const char **ret_by,
			     struct slot_error *err);
/* Same, reading path (NULL = /proc/cmdline). */
int slot_booted(const char *path, const struct layout *l, const struct layout_slot_group *g,
		const char **ret_by, struct slot_error *err);

/* The boot script's choice at power-on: the first slot in BOOT_ORDER
 * with tries left gets its counter decremented (the changes the script
 * saves before booting); returns its index. With none left, the changes
 * restore every slot with full tries and -EAGAIN says the board resets.
 * Used to simulate reboots on the simulator and in tests. */
int slot_boot_select(const struct slot_state *st, struct slot_state *ret_state,
		     struct slot_changes *ret_changes);

/* Write c with one env transaction. */
int slot_apply(struct env *e, const struct slot_changes *c, struct env_error *err);

/* The U-Boot hush boot script for layout l's first slot group (see
 * docs/boot-contract.md): picks the first slot in BOOT_ORDER with tries
 * left, decrements, saveenv, sets flashd_slot/flashd_root and bootargs
 * (flashd.slot=X) and runs flashd_boot_cmd; with none left it restores
 * the counters and resets. */
int slot_bootscript(const struct layout *l, FILE *out);
