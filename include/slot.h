/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The A/B slots in the U-Boot env (the slot env), RAUC-compatible: BOOT_ORDER ("A B",
 * first = primary) and BOOT_<x>_LEFT (tries left; the boot script
 * decrements before booting, mark-good restores the maximum), plus what
 * flashd knows of each slot's content: FLASHD_<x>_STATE (the install
 * record, enum slot_record) and FLASHD_LAST_GOOD (the slot marked good
 * last). The record goes into the same store as the BOOT_ORDER/LEFT
 * change it belongs to.
 *
 * Invariants the operations keep (docs/boot-contract.md):
 *   - a slot enters BOOT_ORDER only when verified (slot_verified());
 *   - BOOT_ORDER is never written empty (the boot script reads an empty
 *     one as "every slot", unverified ones included);
 *   - slot_boot_select() does exactly what the shipped boot script does.
 *
 * The logic is pure: slot_env_load() parses the variables through
 * a getter, slot_compute() gives the new slot env and the variable changes
 * of one operation, slot_apply() writes them in ONE env transaction (one
 * libuboot_env_store), so a power cut never leaves a half-done change.
 * docs/boot-contract.md describes the contract with the boot script. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "error.h"
#include "env.h"
#include "layout.h"

#define SLOT_MAX 4
#define SLOT_NAME_MAX 16
/* The boot script counts with U-Boot's setexpr, which prints hex: tries
 * stay single-digit so hex and decimal agree. */
#define SLOT_MAX_TRIES_LIMIT 9
#define SLOT_DEFAULT_MAX_TRIES 3
#define SLOT_DEFAULT_CMDLINE "/proc/cmdline"

/* Operations; every one refuses (-EPERM) to put an unverified slot into
 * BOOT_ORDER and (-EBUSY) to leave BOOT_ORDER empty. */
#define SLOT_OP_LIST(X)                                                                         \
	/* verified slot first in BOOT_ORDER, full tries */                                     \
	X(SLOT_OP_ACTIVATE, "activate")                                                         \
	/* verified slot: full tries, record good, FLASHD_LAST_GOOD (back into BOOT_ORDER,      \
	 * last, if it was out) */                                                              \
	X(SLOT_OP_MARK_GOOD, "mark-good")                                                       \
	/* out of BOOT_ORDER, 0 tries, record bad; never the last slot of BOOT_ORDER            \
	 * (SLOT_KEEP_LAST: kept there instead) */                                              \
	X(SLOT_OP_MARK_BAD, "mark-bad")                                                         \
	/* from slot (-1 = the primary): the first other verified slot of BOOT_ORDER (force:    \
	 * any other verified slot) becomes primary with full tries; -EALREADY when nothing     \
	 * changes */                                                                           \
	X(SLOT_OP_ROLLBACK, "rollback")                                                         \
	/* full tries for every slot in BOOT_ORDER */                                           \
	X(SLOT_OP_RESET_COUNTERS, "reset-counters")                                             \
	/* every verified slot in BOOT_ORDER (layout order), full tries */                      \
	X(SLOT_OP_INIT, "init")                                                                 \
	/* install: out of BOOT_ORDER, 0 tries, record installing; refused for the last slot of \
	 * BOOT_ORDER */                                                                        \
	X(SLOT_OP_INSTALL_BEGIN, "install-begin")                                               \
	/* install --no-activate: record verified, stays out */                                 \
	X(SLOT_OP_INSTALL_VERIFIED, "install-verified")                                         \
	/* install: record verified and activate */                                             \
	X(SLOT_OP_INSTALL_ACTIVATE, "install-activate")                                         \
	/* install failed: record failed, out of BOOT_ORDER, 0 tries; -ESTALE when the record   \
	 * is not installing (force: the install that stored installing knows better) */        \
	X(SLOT_OP_INSTALL_FAILED, "install-failed")                                             \
	/* same, record cancelled */                                                            \
	X(SLOT_OP_INSTALL_CANCELLED, "install-cancelled")                                       \
	/* provisioning left the slot unwritten: out of BOOT_ORDER, 0 tries, no record, no      \
	 * version (status: empty) */                                                           \
	X(SLOT_OP_RETIRE, "retire")                                                             \
	/* slot = the booted one: the slots the boot script skipped before it (no tries left)   \
	 * leave BOOT_ORDER, record bad */                                                      \
	X(SLOT_OP_FALLBACK, "fallback")

enum slot_op {
	SLOT_OP_LIST(STRING_TABLE_ENUM)
	_SLOT_OP_MAX,
};

enum {
	/* rollback to a verified slot out of BOOT_ORDER; mark-bad of a slot
	 * when no other verified slot is left in BOOT_ORDER (never the last
	 * slot of BOOT_ORDER: nothing overrides that) */
	SLOT_FORCE = 1 << 0,
	/* mark-bad by the health check: unless another slot of BOOT_ORDER is
	 * known to boot (marked good, or legacy; one activated and never
	 * booted is not) the slot stays in it, recorded bad: the board is
	 * "degraded" but keeps booting its best image; slot_compute()
	 * returns 1 then */
	SLOT_KEEP_LAST = 1 << 1,
	/* init after an env loss ('flashctl slot init'): only what was read
	 * counts, not the records. A slot of SLOT_READ_OK(i) (read against its
	 * signed index) is recorded good, the running one of SLOT_RUNNING(i)
	 * kept as verified (it boots: the health check judges it); every other
	 * slot leaves BOOT_ORDER with 0 tries, recorded unknown (an install
	 * record that already says unverified stays). */
	SLOT_INIT_READ = 1 << 2,
};
#define SLOT_READ_OK(i) (1u << (8 + (i)))
#define SLOT_RUNNING(i) (1u << (8 + SLOT_MAX + (i)))

/* FLASHD_<x>_STATE */
#define SLOT_RECORD_LIST(X)                                                               \
	/* unset: never written by this flashd (legacy, see slot_verified) */             \
	X(SLOT_RECORD_NONE, "")                                                           \
	/* an install marked it bad and writes it ("interrupted" when no install runs) */ \
	X(SLOT_RECORD_INSTALLING, "installing")                                           \
	/* the last install failed: content unverified */                                 \
	X(SLOT_RECORD_FAILED, "failed")                                                   \
	/* the last install was cancelled: content unverified */                          \
	X(SLOT_RECORD_CANCELLED, "cancelled")                                             \
	/* the last install verified; not marked good since */                            \
	X(SLOT_RECORD_VERIFIED, "verified")                                               \
	/* verified, booted and marked good */                                            \
	X(SLOT_RECORD_GOOD, "good")                                                       \
	/* verified, marked bad (health check, operator, fallback) */                     \
	X(SLOT_RECORD_BAD, "bad")                                                         \
	/* the records were lost (both env copies): content unknown */                    \
	X(SLOT_RECORD_UNKNOWN, "unknown")

enum slot_record {
	SLOT_RECORD_LIST(STRING_TABLE_ENUM)
	_SLOT_RECORD_MAX,
};

/* A slot's state: the word status gives it (JSON "state"), made in one
 * place (slot_state_of) for the daemon's GetStatus and SlotStatus and for
 * offline flashctl alike. Not the record (FLASHD_<x>_STATE keeps that
 * name on the flash): the state is decided from the record, the tries,
 * BOOT_ORDER, a running install and UBI's update marker. */
enum slot_state {
	SLOT_STATE_EMPTY,        /* nothing installed */
	SLOT_STATE_INSTALLING,   /* an install is writing it */
	SLOT_STATE_INTERRUPTED,  /* an install began and never ended (power cut, killed) */
	SLOT_STATE_FAILED,       /* install failed */
	SLOT_STATE_CANCELLED,    /* install cancelled */
	SLOT_STATE_INSTALLED,    /* verified, not activated (out of BOOT_ORDER) */
	SLOT_STATE_PENDING,      /* activated, full tries, never booted since: trial pending */
	SLOT_STATE_TRIAL,        /* in BOOT_ORDER, tries used, not marked good since */
	SLOT_STATE_GOOD,         /* in BOOT_ORDER, marked good, full tries */
	SLOT_STATE_BAD,          /* marked bad (out of BOOT_ORDER, or kept as the last one) */
	SLOT_STATE_UNKNOWN,      /* the env was lost: content unknown, not bootable until installed */
	_SLOT_STATE_MAX,
};

/* A slot's tries: what the boot script's counters alone say of it
 * (BOOT_ORDER and BOOT_<x>_LEFT; RAUC's boot-status). */
#define SLOT_TRIES_LIST(X)                                        \
	/* in BOOT_ORDER, full tries */                           \
	X(SLOT_TRIES_FULL, "full")                                \
	/* in BOOT_ORDER, some tries used: not yet marked good */ \
	X(SLOT_TRIES_USED, "used")                                \
	/* in BOOT_ORDER, no tries left: U-Boot skips it */       \
	X(SLOT_TRIES_EXHAUSTED, "exhausted")                      \
	/* not in BOOT_ORDER */                                   \
	X(SLOT_TRIES_OUT, "out")

enum slot_tries {
	SLOT_TRIES_LIST(STRING_TABLE_ENUM)
	_SLOT_TRIES_MAX,
};

/* One slot's variables in the slot env. */
struct slot_vars {
	char name[SLOT_NAME_MAX];
	unsigned left;          /* BOOT_<x>_LEFT (max_tries when unset, as the boot script does) */
	bool left_set;          /* the variable exists */
	int order_pos;          /* position in BOOT_ORDER, -1 = not in it */
	enum slot_record record; /* FLASHD_<x>_STATE */
	bool has_version;       /* FLASHD_<x>_VERSION is set */
	bool has_health;        /* FLASHD_<x>_HEALTH is set (a new install deletes it) */
	bool unsealed;          /* the group seals its slots and this one's seal is missing
				 * (slot_env_seal) */
	bool unfinished;        /* UBI's update marker: a volume of the slot holds an update
				 * that never ended (ubi_image_mark_unfinished) */
};

/* A variable of the slot env that does not read as this module and the
 * boot script read it (written by hand, fw_setenv): the state is loaded
 * anyway, as the boot script will act on it, and status names it. */
struct slot_malformed {
	char name[SLOT_NAME_MAX + 16];
	char value[32];
	/* what the boot script and flashd make of it */
	char effect[160];
};

/* The slot env: the A/B variables as loaded from the U-Boot env
 * (slot_env_load), what every decision starts from. */
struct slot_env {
	unsigned max_tries;
	size_t n_slots;
	struct slot_vars slots[SLOT_MAX];
	size_t n_order;
	size_t order[SLOT_MAX]; /* slot indices, BOOT_ORDER order */
	bool order_set;         /* BOOT_ORDER is set and not empty (unset or empty = all
				 * slots, as the script does) */
	bool order_foreign;     /* BOOT_ORDER named something that is not a slot (ignored) */
	int last_good;          /* FLASHD_LAST_GOOD: slot index, -1 = unset */
	size_t n_malformed;     /* malformed variables, the first SLOT_MAX of them below */
	struct slot_malformed malformed[SLOT_MAX];
	bool env_default;       /* FLASHD_ENV=default: a default env, not a legacy one */
};

#define SLOT_CHANGES_MAX (3 * SLOT_MAX + 2)

/* The variables one operation writes; all of them go into one store. */
struct slot_changes {
	size_t n;
	struct {
		char name[SLOT_NAME_MAX + 16];
		char value[SLOT_MAX * (SLOT_NAME_MAX + 1) + 1];
	} vars[SLOT_CHANGES_MAX];
};

/* The boot decision: what the boot script did at the last boot and will
 * do at the next, derived from the slot env and the booted slot
 * (slot_decide). */
struct slot_decision {
	int booted;             /* slot index, -1 = unknown */
	const char *booted_by;  /* "flashd.slot", "rauc.slot", "root" or NULL */
	int primary;            /* first in BOOT_ORDER, -1 = empty order */
	int next_boot;               /* what the boot script boots next (after its counter reset
				 * when none has tries left); -1 = none: BOOT_ORDER names no slot */
	bool next_after_reset;  /* no slot has tries left: the script resets the counters
				 * and the board once before booting next */
	bool on_trial;          /* the booted slot has used tries (not marked good) */
	bool fell_back;         /* the booted slot is not first in BOOT_ORDER, whose primary used tries */
	bool switch_pending;    /* another slot was activated (full tries): it boots next */
	bool needs_health_check; /* the booted slot is in BOOT_ORDER with tries used (0 = its
				  * last try), not recorded bad: run the health check, then
				  * mark-good or mark-bad */
	bool degraded;          /* BOOT_ORDER holds a slot recorded bad: kept because no other
				 * verified slot could boot */
	int last_good;          /* FLASHD_LAST_GOOD, -1 = none */
};

/* Returns a malloc'd value or NULL when unset (env_get_dup fits). */
typedef char *(*slot_getenv_fn)(void *userdata, const char *name);

/* Parse. names: the slot names (1..SLOT_MAX, [A-Za-z0-9_]); max_tries
 * 1..SLOT_MAX_TRIES_LIMIT. A malformed variable does not fail the load
 * (status must still say what the next boot does): it is read as the boot
 * script reads it and listed in ret->malformed. A BOOT_<x>_LEFT that is not
 * one decimal digit: the script's "test -gt 0" reads its leading decimal
 * number, boots the slot once when that is above 0 and counts on in hex
 * (setexpr), where "10" becomes "f", which reads as 0: one try left (none
 * when it does not start with a positive number); the next operation
 * writes it back as a digit. An unknown FLASHD_<x>_STATE (the script never
 * reads it) is read as "unknown": the content is unverified. */
int slot_env_load(struct slot_env *ret, const char *const *names, size_t n_names,
		    unsigned max_tries, slot_getenv_fn get, void *userdata, struct error *err);
int slot_env_load_group(struct slot_env *ret, const struct layout_slot_group *g,
			  slot_getenv_fn get, void *userdata, struct error *err);

/* The seals the boot script reads (a group with "seal": slot_seal.h):
 * sealed[i] false = slot i's seal is missing. An unset BOOT_ORDER (the
 * env was lost) then defaults to the sealed slots only, in layout order,
 * as the script builds it. */
void slot_env_seal(struct slot_env *st, const bool *sealed);
int slot_find(const struct slot_env *st, const char *name); /* index or -ENOENT */
int slot_next_boot(const struct slot_env *st);              /* index or -ENOENT */
enum slot_tries slot_tries_of(const struct slot_env *st, size_t i);
const char *slot_tries_to_string(enum slot_tries h);
const char *slot_record_to_string(enum slot_record r); /* "" for NONE */
int slot_record_from_string(const char *s);            /* -EINVAL if unknown */
/* The slot's content passed read-back verification: record verified, good
 * or bad; a slot with no record (a board flashd never installed to: RAUC,
 * a factory image, 'slot init') counts when it is in BOOT_ORDER, unless
 * BOOT_ORDER is unset and another slot has a version this one lacks (an
 * old flashd emptied BOOT_ORDER while writing it). */
bool slot_verified(const struct slot_env *st, size_t i);
/* Slot i has no flashd record and the bootloader already boots it (a
 * legacy board, slot_verified): there is no signed index to read it
 * against, and activating it only reorders what boots already. */
bool slot_legacy(const struct slot_env *st, size_t i);
/* The state of slot i; install_running: an install is writing now (false
 * turns "installing" into "interrupted"). A slot whose UBI volume holds an
 * unfinished update (slot_vars.unfinished) is "interrupted" whatever its
 * record, unless it is the one being written. */
enum slot_state slot_state_of(const struct slot_env *st, size_t i, bool install_running);
const char *slot_state_to_string(enum slot_state v);  /* "trial" (JSON) */
const char *slot_state_describe(enum slot_state v);   /* "on trial (booted, not marked good)" */
int slot_state_from_string(const char *s);           /* the view, or -EINVAL */
const char *slot_op_to_string(enum slot_op op);
int slot_op_from_string(const char *s); /* -EINVAL if unknown */
/* "A B" */
void slot_order_string(const struct slot_env *st, char *buf, size_t len);
/* "BOOT_A_LEFT" */
void slot_left_var(const char *name, char *buf, size_t len);
/* "FLASHD_A_VERSION": the version an install verified into the slot */
void slot_version_var(const char *name, char *buf, size_t len);
/* "FLASHD_A_HEALTH": the daemon's last health verdict on the slot ("passed
 * TIME" / "failed TIME: why"), written in the store of the mark it made,
 * so that status can say why a slot is bad after the board rolled back. */
void slot_health_var(const char *name, char *buf, size_t len);
/* "FLASHD_A_STATE" */
void slot_record_var(const char *name, char *buf, size_t len);
#define SLOT_LAST_GOOD_VAR "FLASHD_LAST_GOOD"
/* FLASHD_ENV=default: the env is a default one (U-Boot's built-in env with
 * dist/u-boot-env-flashd.txt, or 'flashctl env init'), not a legacy
 * board's: with no records it means they were lost (slot_records_lost). */
#define SLOT_ENV_MARK_VAR "FLASHD_ENV"
#define SLOT_ENV_MARK_DEFAULT "default"
/* The boot order the boot script walks: "A B". */
#define SLOT_ORDER_VAR "BOOT_ORDER"
/* "1": flashd boot erases the overlays before it mounts them (factory reset). */
#define SLOT_OVERLAY_RESET_VAR "FLASHD_OVERLAY_RESET"
/* Variables this module owns (BOOT_ORDER, BOOT_<x>_LEFT, FLASHD_<x>_STATE,
 * FLASHD_LAST_GOOD): env set refuses them without --force. */
bool slot_env_is_var(const char *name);
/* Variables only flashd's own operations write: the slot env above and
 * every other FLASHD_* record (versions, health verdicts). A raw write
 * needs root and force (docs/security.md, "Who writes the env"). */
bool slot_env_is_flashd_var(const char *name);
/* The invariant every store keeps: BOOT_ORDER names only slots recorded
 * verified (slot_verified()). -EPERM naming the first slot that is not. */
int slot_order_check(const struct slot_env *st, struct error *err);
/* Even with --force a state variable must read as the boot script and
 * this module read it: BOOT_ORDER = known slot names separated by single
 * spaces (never empty or unset: that means "every slot"), BOOT_<x>_LEFT =
 * one decimal digit 0..max tries (or unset), FLASHD_<x>_STATE = a record
 * word, FLASHD_LAST_GOOD = a slot. g NULL: slot names and max tries are
 * not known, only the form is checked. value NULL = delete. -EINVAL with
 * err saying why; 0 for variables that are not the slot env's. */
int slot_env_var_check(const struct layout_slot_group *g, const char *name, const char *value,
		   struct error *err);

/* Compute op on slot (index; -1 where the op takes none, for rollback =
 * "from the primary"). Fills the new state and the changes; st untouched.
 * 0 done, 1 = mark-bad with SLOT_KEEP_LAST kept the slot (degraded). */
int slot_compute(const struct slot_env *st, enum slot_op op, int slot, unsigned flags,
		 struct slot_env *ret_state, struct slot_changes *ret_changes,
		 struct error *err);
/* The booted slot fell back (slot_decision.fell_back): the primaries the
 * boot script skipped are out of tries. */
bool slot_fell_back(const struct slot_env *st, int booted);
/* No slot record, version or FLASHD_LAST_GOOD in a default env
 * (FLASHD_ENV=default, or BOOT_ORDER unset): both copies were lost. An env
 * with a BOOT_ORDER, no records and no marker is a legacy board's (RAUC,
 * a factory image): its BOOT_ORDER is kept, its slots count as verified
 * by the updater before flashd (slot_verified). */
bool slot_records_lost(const struct slot_env *st);
/* What the daemon records at start for the booted slot (SLOT_OP_FALLBACK):
 * a fallback, or records lost (only the running slot is trusted then). */
bool slot_needs_fallback(const struct slot_env *st, int booted);
/* slot_compute() after SLOT_OP_FALLBACK for booted (when it fell back),
 * both in the one store: an operation never leaves an exhausted primary
 * in BOOT_ORDER to lock the board onto. booted -1 = unknown. */
int slot_compute_booted(const struct slot_env *st, int booted, enum slot_op op, int slot,
			unsigned flags, struct slot_env *ret_state,
			struct slot_changes *ret_changes, struct error *err);
void slot_decide(const struct slot_env *st, int booted, const char *booted_by,
			 struct slot_decision *ret);

/* The boot script's choice at power-on, exactly (the script is the
 * reference): unset or empty BOOT_ORDER / BOOT_<x>_LEFT take the defaults
 * (saved with the decrement); the first slot in BOOT_ORDER with tries left
 * gets its counter decremented (the changes the script saves before
 * booting); returns its index. With none left, the changes restore the
 * slots of BOOT_ORDER with full tries and -EAGAIN says the board resets;
 * when BOOT_ORDER names no slot at all that repeats forever (-ELOOP, no
 * changes). Used to simulate reboots on the simulator and in tests. */
int slot_boot_select(const struct slot_env *st, struct slot_env *ret_state,
		     struct slot_changes *ret_changes);

/* A slot member name: [A-Za-z0-9_]{1,SLOT_NAME_MAX-1}. */
bool slot_name_valid(const char *s);

/* Write c with one env transaction (an empty value deletes the variable). */
int slot_apply(struct env *e, const struct slot_changes *c, struct error *err);
