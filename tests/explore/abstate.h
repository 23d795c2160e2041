/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the three files of test-abstate share: the model of the board and
 * its events (abstate-model.c), the invariants (abstate-check.c) and the
 * explorer (test-abstate.c, whose opening comment describes the whole). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "board.h"
#include "env.h"
#include "install.h"
#include "layout.h"
#include "nsim.h"
#include "slot.h"

#define CHUNK 4096u
#define N_SLOTS 2
#define ENV_SIZE 0x1000u

enum inv { I1, I2, I3, I4, I5, I6, I7, _I_MAX };

struct invariant {
	const char *name;
	const char *xfail;
};

enum { LBL_ERASED, LBL_V1, LBL_V2, LBL_DUD, LBL_FIRST_JUNK };
#define FNV0 0xcbf29ce484222325ULL

enum { B_V2, B_DUD, B_CORRUPT, _B_MAX };

/* an env copy as U-Boot reads it */
struct envcopy {
	bool valid;
	uint8_t flags;
	uint64_t hash;
};

struct shadow {
	uint16_t lbl[N_SLOTS];
	bool verified[N_SLOTS];
	/* the operator marked it bad (and nothing made it a candidate again):
	 * their verdict, not a slot I2 must reach */
	bool judged_bad[N_SLOTS];
	/* a media fault changed it after flashd last wrote it: flashd cannot
	 * know of rot it has not read, so I1 and I6 leave the slot to the boot
	 * counting (a rotted image does not boot) until flashd writes it again,
	 * and its install then reads every block it keeps */
	bool rotted[N_SLOTS];
};

struct inflight {
	int8_t bundle;           /* -1 = none */
	int8_t slot;             /* requested target: -1 = the inactive one */
	uint8_t steps;           /* units done */
	uint32_t base;           /* snapshot when it started */
};

struct node {
	uint32_t snap;
	int8_t booted;           /* -1 = off */
	struct shadow sh;
	struct inflight inf;
	uint32_t parent;
	uint32_t label;          /* index into the transition labels */
	uint8_t depth;
	uint8_t manual;          /* operator events used (daemon/offline ops, env corruption) */
	uint16_t rec[N_SLOTS];   /* each slot's block record in the state dir (records_take) */
};

struct live {
	int booted;
	struct shadow sh;
	struct inflight inf;
	struct install *in;
	size_t fed;
	bool finished;
	/* what the event did */
	int boot_result;         /* boot: slot booted, -1 reset, -2 not a boot */
	bool verified_now;
	int verified_slot;
	char note[160];
};

/* EV_MEDIA faults */
enum { MEDIA_FLIP, MEDIA_UNCORRECTABLE, MEDIA_ENV_DEAD };

enum ev_kind {
	EV_BOOT,
	EV_INSTALL_START,
	EV_INSTALL_STEP,
	EV_INSTALL_WHOLE,        /* an install from start to end in one event, no power cut */
	EV_CANCEL,
	EV_DAEMON_RESTART,
	EV_HEALTH_PASS,
	EV_HEALTH_FAIL,
	EV_DAEMON_OP,            /* mark-good, mark-bad, activate, rollback over the socket */
	EV_OFFLINE_OP,           /* flashctl slot ... without the daemon */
	EV_CORRUPT_ENV,
	EV_LEGACY_ENV,           /* RAUC / a factory image rewrote the env: records gone */
	EV_MEDIA,                /* a fault in a slot or env block (media_fault) */
	EV_RAW_ENV,              /* a socket-group member's raw env write */
	EV_UNKNOWN_BOOTED,       /* booted by hand: the cmdline names no slot; install --slot A */
};

struct event {
	const char *name;
	enum ev_kind kind;
	int arg;                 /* bundle, slot op, env copy */
	int slot;                /* -1 none / inactive, -2 booted, 0/1 */
	unsigned flags;
	/* NULL: explored. Otherwise the fix it waits for on another branch:
	 * the event is left out (listed at the end) until the lead merges
	 * that fix and deletes this string. */
	const char *until;
};

struct measure {
	struct envcopy env[2];
	int active;
	uint64_t slot_hash[N_SLOTS];     /* the image area */
	uint64_t slot_erases[N_SLOTS];
	uint64_t seal_hash[N_SLOTS];     /* the seal block (none: 0) */
	uint64_t seal_erases[N_SLOTS];
	uint64_t mutations;
};

/* ---- abstate-model.c ---- */

/* content labels */
extern unsigned n_labels;
bool lbl_bootable(unsigned l);
void lbl_name(unsigned l, char *buf, size_t len);
uint64_t fnv(const void *p, size_t n, uint64_t h);
unsigned lbl_of(const uint8_t *data, size_t len);

/* the board */
extern struct layout *L;
extern const struct layout_slot_group *G;
extern char dir[64], *sim, *target, *cmdline[N_SLOTS], *cmdline_unknown;
extern struct board *board;
extern struct nsim *ns;
extern size_t fsize, n_chunks;
extern uint8_t *fbuf;
extern uint64_t slot_off[N_SLOTS], slot_size, img_size, env_off[2];
extern unsigned max_tries;
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void file_read(void);
void setup(void);

/* the block records in the state dir (what a promotion is read against) */
extern char *state_dir;
void records_take(uint16_t ret[N_SLOTS]);
void records_restore(const uint16_t rec[N_SLOTS]);

/* snapshots */
extern size_t n_chunk_data, cap_chunk_data;
uint32_t snap_take(void);
void snap_restore(uint32_t id);

/* env copies */
struct envcopy envcopy_of(int k);
int env_active(const struct envcopy *c);

/* the live state and the events */
void live_drop_install(struct live *lv);
void restore(const struct node *n, struct live *lv);
int slot_state_now(struct env *e, struct slot_env *st);
bool running(const struct node *n);
bool health_due(const struct node *n);
bool is_manual(const struct event *ev);
void run_event(struct live *lv, const struct event *ev);

/* ---- abstate-check.c ---- */

extern const struct invariant invariants[_I_MAX];
extern bool violated[_I_MAX];
extern char *violation_trace[_I_MAX];
extern size_t violations[_I_MAX];
extern FILE *samples;
extern size_t n_samples;
void measure(struct measure *m);
void violation(enum inv i, size_t from, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void check_state(const struct node *n, size_t from, const char *label, bool new_state);
bool recorded_bad(int s);
unsigned allowed_stores(const struct event *ev, const struct node *from,
			const struct node *to);

/* ---- test-abstate.c: the explored states ---- */

extern struct node *nodes;
extern size_t n_nodes, cap_nodes;
extern char **labels;
extern size_t n_labels_tr, cap_labels_tr;
extern size_t keys_cap, n_keys;
