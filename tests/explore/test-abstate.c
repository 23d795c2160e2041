/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Exhaustive exploration of the A/B state machine (issue 13).
 *
 * A tiny two-slot NOR board (tests/explore/tiny-ab.json: 4 KiB erase
 * blocks, 8 KiB slots, 4 KiB squashfs images) is provisioned by the real
 * provision code on the userspace simulator, then every sequence of events
 * up to a bounded depth is explored breadth first, with the real slot, env
 * and install code doing the work on the simulator file:
 *
 *   boot (U-Boot's choice: slot_boot_select, one saveenv), install start /
 *   each install step (one erase block of payload, the read-back, the
 *   activation store), cancel, daemon killed and restarted (its worker dies
 *   with it), health check pass / fail, mark-good, mark-bad, activate,
 *   rollback (daemon and offline), mark-good and activate of the slot not
 *   running (read against its block record first, the real
 *   slot_verify_change(): intact or half-written, rotted too with
 *   FLASHD_EXPLORE_MANUAL=2; a refused read changes nothing), offline slot init / activate during an install,
 *   install into either slot, an env copy corrupted, and a power cut at
 *   every flash operation of every event (torn and clean).
 *
 * Two passes, each to the depth: every event step by step, then the
 * promotion pass (explore()'s comment): whole installs, boots, health
 * checks and the operator's changes of the other slot, so that what meets
 * an installed slot after its install is within reach.
 *
 * States are deduplicated by an abstract key: both env copies (valid?,
 * variables), what each slot holds, which of those contents were verified,
 * the booted slot and the install in flight. A state is rebuilt from a
 * snapshot of the simulator file (4 KiB chunks, interned) and, for an
 * install in flight, by replaying its steps from the snapshot taken when it
 * started (deterministic, and nothing else writes its target).
 *
 * The shadow truth (what each slot really holds, and whether an install's
 * read-back verified exactly that) is kept here, not read from the env.
 * Invariants checked in every state:
 *   I1 the board never boots a slot whose content is not verified
 *   I2 if a verified bootable slot exists, 2 * max_tries + 2 boots by the
 *      boot-script logic reach one (checked in every state, so it "stays
 *      able to")
 *   I3 the booted slot is never written (content or erase counters of its
 *      partition)
 *   I4 every event does at most one env store
 *   I5 status's "next boot" is what the next boot does
 *   I6 a slot in a set BOOT_ORDER or recorded verified/good is read from
 *      the simulator and equals its signed image (the one its
 *      FLASHD_<x>_VERSION names): records never stand in for a read; a
 *      rotted slot is excused until flashd reads it (an operator's
 *      activate, mark-good or rollback of it: slot_verify_change)
 *   I7 never locked onto a failed slot while a verified one exists:
 *      BOOT_ORDER never lists a slot recorded bad ahead of one recorded
 *      verified or good that holds a verified bootable image
 * The slots' block records (the state dir, what a promotion is read
 * against) are part of each state, saved and restored with it.
 * A violation prints the shortest event trace leading to it (BFS).
 *
 * The board's slots are sealed ("seal": true): a slot's label covers its
 * image area, its seal block is read by the real seal code (slot_seal.c)
 * at each boot, as the script does; the shadow truth, never the env or
 * the seal, decides what is verified.
 *
 * Events that wait for a fix on another branch carry it in events[].until
 * and are left out (listed at the end; FLASHD_EXPLORE_UNTIL=1 explores
 * them anyway).
 *
 * Environment: FLASHD_EXPLORE_DEPTH (default 8: about 3,400 + 1,000 states,
 * 40 s of CPU on an idle machine), FLASHD_EXPLORE_SAMPLES=FILE writes env
 * states, their seals and the C mirror's boot decision for the real-U-Boot
 * agreement test (tests/uboot/test-uboot-agree.sh). Exit 77 without
 * mksquashfs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "abstate.h"
#include "cleanup.h"

/* ---- nodes ---- */

struct node *nodes;
size_t n_nodes, cap_nodes;
char **labels;
size_t n_labels_tr, cap_labels_tr;

static uint64_t *keys;         /* 2 x 64 bits per slot, 0,0 = free */
size_t keys_cap, n_keys;

static bool key_insert(uint64_t a, uint64_t b)
{
	size_t i;

	if (!a && !b)
		a = 1;
	if (n_keys * 2 >= keys_cap) {
		size_t ncap = keys_cap ? keys_cap * 2 : 1 << 14;
		uint64_t *nk = calloc(ncap * 2, sizeof(*nk));
		for (size_t k = 0; k < keys_cap; k++) {
			if (!keys[2 * k] && !keys[2 * k + 1])
				continue;
			size_t j = keys[2 * k] & (ncap - 1);
			while (nk[2 * j] || nk[2 * j + 1])
				j = (j + 1) & (ncap - 1);
			nk[2 * j] = keys[2 * k];
			nk[2 * j + 1] = keys[2 * k + 1];
		}
		free(keys);
		keys = nk;
		keys_cap = ncap;
	}
	for (i = a & (keys_cap - 1); keys[2 * i] || keys[2 * i + 1]; i = (i + 1) & (keys_cap - 1))
		if (keys[2 * i] == a && keys[2 * i + 1] == b)
			return false;
	keys[2 * i] = a;
	keys[2 * i + 1] = b;
	n_keys++;
	return true;
}

static uint32_t label_add(const char *s)
{
	if (n_labels_tr == cap_labels_tr) {
		cap_labels_tr = cap_labels_tr ? cap_labels_tr * 2 : 1024;
		labels = realloc(labels, cap_labels_tr * sizeof(*labels));
	}
	labels[n_labels_tr] = strdup(s);
	return (uint32_t)n_labels_tr++;
}

static size_t node_add(const struct node *n)
{
	if (n_nodes == cap_nodes) {
		cap_nodes = cap_nodes ? cap_nodes * 2 : 4096;
		nodes = realloc(nodes, cap_nodes * sizeof(*nodes));
	}
	nodes[n_nodes] = *n;
	return n_nodes++;
}

/* slot: -1 none (install: the inactive one), -2 the booted slot, -3 the other */
static const struct event events[] = {
	{ "boot", EV_BOOT, 0, -1, 0, NULL },
	{ "install v2", EV_INSTALL_START, B_V2, -1, 0, NULL },
	{ "install dud (verifies, does not boot)", EV_INSTALL_START, B_DUD, -1, 0, NULL },
	{ "install corrupt (hash fails)", EV_INSTALL_START, B_CORRUPT, -1, 0, NULL },
	{ "install v2 --slot <booted>", EV_INSTALL_START, B_V2, -2, 0, NULL },
	{ "install step", EV_INSTALL_STEP, 0, -1, 0, NULL },
	/* the same install in one event (its power cuts are the steps'), in
	 * the promotion pass only */
	{ "whole install of v2 (uninterrupted)", EV_INSTALL_WHOLE, B_V2, -1, 0, NULL },
	{ "cancel", EV_CANCEL, 0, -1, 0, NULL },
	{ "kill -9 flashd, restart (worker dies)", EV_DAEMON_RESTART, 0, -1, 0, NULL },
	{ "health check passes", EV_HEALTH_PASS, SLOT_OP_MARK_GOOD, -2, SLOT_FORCE, NULL },
	/* as manager_health.c: the last slot that boots stays, degraded */
	{ "health check fails", EV_HEALTH_FAIL, SLOT_OP_MARK_BAD, -2, SLOT_FORCE | SLOT_KEEP_LAST, NULL },
	{ "MarkGood", EV_DAEMON_OP, SLOT_OP_MARK_GOOD, -2, 0, NULL },
	{ "MarkBad <booted>", EV_DAEMON_OP, SLOT_OP_MARK_BAD, -2, 0, NULL },
	{ "MarkBad <other>", EV_DAEMON_OP, SLOT_OP_MARK_BAD, -3, 0, NULL },
	/* RAUC's mark-good of the slot not running (its mark-active is
	 * Activate): the daemon reads it against its block record first
	 * (slot_verify_change), intact or half-written as it is */
	{ "MarkGood <other>", EV_DAEMON_OP, SLOT_OP_MARK_GOOD, -3, 0, NULL },
	{ "flashctl slot mark-good <other> (offline)", EV_OFFLINE_OP, SLOT_OP_MARK_GOOD, -3, 0,
	  NULL },
	{ "Activate <other>", EV_DAEMON_OP, SLOT_OP_ACTIVATE, -3, 0, NULL },
	{ "Activate <booted>", EV_DAEMON_OP, SLOT_OP_ACTIVATE, -2, 0, NULL },
	{ "Rollback", EV_DAEMON_OP, SLOT_OP_ROLLBACK, -1, 0, NULL },
	{ "flashctl slot rollback (offline)", EV_OFFLINE_OP, SLOT_OP_ROLLBACK, -2, 0, NULL },
	{ "flashctl slot activate <other> (offline)", EV_OFFLINE_OP, SLOT_OP_ACTIVATE, -3, 0, NULL },
	{ "flashctl slot init (offline)", EV_OFFLINE_OP, SLOT_OP_INIT, -1, 0, NULL },
	/* media failures U-Boot's redundant env is meant to survive: the copy
	 * not in use, and both (U-Boot then runs on its built-in default) */
	{ "older env copy corrupted", EV_CORRUPT_ENV, 0, -1, 0, NULL },
	{ "both env copies corrupted", EV_CORRUPT_ENV, 1, -1, 0, NULL },
	/* the events that found issue 31's defects */
	{ "legacy env (records dropped, BOOT_ORDER kept, no FLASHD_ENV)", EV_LEGACY_ENV, 0, -1, 0, NULL },
	{ "bit flip in <other>'s image", EV_MEDIA, MEDIA_FLIP, -3, 0, NULL },
	/* no "uncorrectable block" event: this board is NOR (no ECC);
	 * tests/unit/test-install-adaptive and tests/daemon/test-kept-blocks cover it on NAND */
	{ "older env copy's block dies", EV_MEDIA, MEDIA_ENV_DEAD, -1, 0, NULL },
	{ "group member: env set --force BOOT_ORDER=<other> BOOT_<other>_LEFT=<max>", EV_RAW_ENV,
	  0, -3, 0, NULL },
	{ "booted by hand (root=PARTUUID=...): install v2 --slot <booted>", EV_UNKNOWN_BOOTED,
	  B_V2, -2, 0, NULL },
	/* not expressible here: a stale block record (this exploration installs
	 * from a stream without a state dir; tests/unit/test-install-adaptive covers it) */
};

#define N_EVENTS (sizeof(events) / sizeof(events[0]))

/* Operator actions and media failures: at most this many per trace, so the
 * depth goes to where installs, boots, health checks and power cuts
 * interleave (FLASHD_EXPLORE_MANUAL overrides). */
static unsigned manual_max = 1;

static bool n_health_due; /* health_due() of the node being expanded */

/* FLASHD_EXPLORE_UNTIL=1: explore the events left out until a fix is
 * merged too (to see what they find) */
static bool explore_until;

/* FLASHD_EXPLORE_SKIP=name,name: events left out (to see which defect
 * hides behind the shortest one) */
static bool skipped[64];

/* The passes: every event step by step, then the promotion pass: what
 * an installed slot meets after its install within the depth, where the
 * first pass's installs, a dozen steps with their power cuts, leave no
 * room (826bfe5's defect took boot, boot, install, boot, health check
 * fails, MarkGood <other>: depth 6 here, 11 step by step). Its events:
 * whole installs, boots, health checks, the operator's changes of the
 * other slot and their power cuts. Not the bit flip: it is an operator
 * event (manual), so with one per trace (FLASHD_EXPLORE_MANUAL=1) a
 * rotted slot is never also marked; and with it this pass finds I2 traces
 * still to be judged (a health check fails on B, then A's or B's image
 * rots unread: nothing left in BOOT_ORDER that boots well). */
enum pass { PASS_STEPS, PASS_PROMOTION, _PASS_MAX };
static const char *const pass_names[_PASS_MAX] = { "step by step", "promotion" };
static enum pass pass;

static bool in_pass(const struct event *ev)
{
	if (pass == PASS_STEPS)
		return ev->kind != EV_INSTALL_WHOLE;
	switch (ev->kind) {
	case EV_BOOT:
	case EV_INSTALL_WHOLE:
	case EV_HEALTH_PASS:
	case EV_HEALTH_FAIL:
		return true;
	case EV_DAEMON_OP:
	case EV_OFFLINE_OP:
		return ev->slot == -3;
	default:
		return false;
	}
}

static bool enabled(const struct node *n, const struct event *ev)
{
	bool busy = n->inf.bundle >= 0;

	if (skipped[ev - events] || (ev->until && !explore_until) || !in_pass(ev))
		return false;

	if (is_manual(ev) && n->manual >= manual_max)
		return false;

	switch (ev->kind) {
	case EV_BOOT:
	case EV_CORRUPT_ENV:
	case EV_MEDIA:
		return true;
	case EV_LEGACY_ENV:
	case EV_RAW_ENV:
	case EV_UNKNOWN_BOOTED:
		return running(n) && !busy;
	case EV_INSTALL_WHOLE:
	case EV_INSTALL_START:
	case EV_DAEMON_OP:
		return running(n) && !busy;
	case EV_INSTALL_STEP:
	case EV_CANCEL:
		return busy;
	case EV_DAEMON_RESTART:
		return running(n) && busy; /* idle: a restart changes nothing */
	case EV_HEALTH_PASS:
	case EV_HEALTH_FAIL:
		return running(n) && !busy && n_health_due;
	case EV_OFFLINE_OP:
		return running(n);
	}
	return false;
}

static uint64_t key_of(const struct node *n, const struct measure *m, uint64_t seed)
{
	uint64_t h = seed;

	/* the older copy matters only as "valid or not": nothing corrupts the
	 * newer one alone */
	for (int k = 0; k < 2; k++)
		h = fnv(&m->env[k].valid, sizeof(bool), h);
	if (m->active >= 0)
		h = fnv(&m->env[m->active].hash, sizeof(uint64_t), h);
	for (int s = 0; s < N_SLOTS; s++) {
		/* every unknown content is the same to the invariants */
		uint16_t l = n->sh.lbl[s] < LBL_FIRST_JUNK ? n->sh.lbl[s] : LBL_FIRST_JUNK;
		h = fnv(&l, sizeof(l), h);
	}
	h = fnv(n->sh.verified, sizeof(n->sh.verified), h);
	h = fnv(n->sh.judged_bad, sizeof(n->sh.judged_bad), h);
	h = fnv(n->sh.rotted, sizeof(n->sh.rotted), h);
	h = fnv(m->seal_hash, sizeof(m->seal_hash), h);
	h = fnv(&n->booted, 1, h);
	h = fnv(&n->manual, 1, h);
	h = fnv(&n->inf.bundle, 1, h);
	h = fnv(&n->inf.slot, 1, h);
	h = fnv(&n->inf.steps, 1, h);
	h = fnv(n->rec, sizeof(n->rec), h);
	return h;
}

static size_t n_transitions;

/* Apply event ev (with a power cut after `cut` flash ops, -1 = none) to
 * node idx; add the resulting state when new. Returns the mutations the
 * event did. */
static uint64_t transition(size_t idx, const struct event *ev, int cut, bool tear,
			   size_t *queue_tail)
{
	struct node from = nodes[idx], to;
	struct measure before, after;
	struct live lv;
	char label[320], lbl[2][32];
	unsigned stores;

	restore(&from, &lv);
	measure(&before);
	if (cut >= 0 && nsim_set_powercut(ns, cut, tear) < 0)
		die("nsim_set_powercut");
	run_event(&lv, ev);
	if (cut >= 0) {
		/* the power is gone: every process with it */
		live_drop_install(&lv);
		lv.booted = -1;
		lv.boot_result = -2;
		if (nsim_power_on(ns) < 0)
			die("nsim_power_on");
	}
	measure(&after);
	n_transitions++;

	to = (struct node){ .booted = (int8_t)lv.booted, .sh = lv.sh, .inf = lv.inf,
			    .parent = (uint32_t)idx, .depth = from.depth + 1,
			    .manual = from.manual + is_manual(ev) };
	records_take(to.rec);
	if (cut >= 0)
		snprintf(label, sizeof(label), "%s [power cut at flash op %d%s]", ev->name, cut + 1,
			 tear ? ", torn" : "");
	else
		snprintf(label, sizeof(label), "%s", ev->name);

	/* shadow truth: a slot whose partition changed holds new, unverified
	 * content; a read-back that passed verifies what is there */
	for (int s = 0; s < N_SLOTS; s++) {
		bool changed = before.slot_hash[s] != after.slot_hash[s] ||
			       before.slot_erases[s] != after.slot_erases[s];
		bool seal_changed = before.seal_hash[s] != after.seal_hash[s] ||
				    before.seal_erases[s] != after.seal_erases[s];
		if (changed) {
			to.sh.lbl[s] = (uint16_t)lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[s],
							img_size);
			to.sh.rotted[s] = ev->kind == EV_MEDIA;
			if (ev->kind != EV_MEDIA)
				to.sh.verified[s] = false;
		}
		if (changed || !recorded_bad(s))
			to.sh.judged_bad[s] = false;
		/* I3 (its seal is part of the slot) */
		if ((changed || seal_changed) && from.booted == s && ev->kind != EV_BOOT)
			violation(I3, idx, label, "slot %s is booted and was written",
				  G->slots[s].name);
	}
	if (lv.verified_now && cut < 0)
		to.sh.verified[lv.verified_slot] = true;
	lbl_name(to.sh.lbl[0], lbl[0], sizeof(lbl[0]));
	lbl_name(to.sh.lbl[1], lbl[1], sizeof(lbl[1]));
	{
		char *l2;
		if (asprintf(&l2, "%s%s%s  {A:%s%s B:%s%s, booted %s}", label, lv.note[0] ? ": " : "",
			     lv.note, lbl[0], to.sh.verified[0] ? "(verified)" : "", lbl[1],
			     to.sh.verified[1] ? "(verified)" : "",
			     to.booted >= 0 ? G->slots[to.booted].name : "-") < 0)
			die("oom");
		snprintf(label, sizeof(label), "%s", l2);
		free(l2);
	}

	/* I4: the redundant env's flags count the stores. One state change,
	 * one store; the one event with two changes is an install's first unit
	 * that also ends it (a payload of one erase block that fails its hash):
	 * "installing" before the first write, then "failed" - two stores, and
	 * the state between them is explored by the power cuts of this event. */
	stores = before.active >= 0 && after.active >= 0 ?
		 (uint8_t)(after.env[after.active].flags - before.env[before.active].flags) : 0;
	/* (a cut store is torn, the flags of what is left say nothing) */
	if (stores > allowed_stores(ev, &from, &to) && cut < 0 && ev->kind != EV_CORRUPT_ENV)
		violation(I4, idx, label, "%u env stores in one event", stores);
	/* I1 */
	if (lv.boot_result >= 0 && !to.sh.verified[lv.boot_result] &&
	    !to.sh.rotted[lv.boot_result]) {
		char l[32];
		lbl_name(to.sh.lbl[lv.boot_result], l, sizeof(l));
		violation(I1, idx, label, "booted slot %s, which holds %s, never verified",
			  G->slots[lv.boot_result].name, l);
	}

	uint64_t ka = key_of(&to, &after, FNV0), kb = key_of(&to, &after, 0x84222325cbf29ce4ULL);
	bool fresh = key_insert(ka, kb);
	to.label = label_add(label);
	if (fresh) {
		check_state(&to, idx, label, true);
		to.snap = snap_take();
		if (to.inf.bundle >= 0)
			to.inf.base = lv.inf.bundle >= 0 && ev->kind == EV_INSTALL_START ?
				      from.snap : from.inf.base;
		node_add(&to);
		(*queue_tail)++;
	}
	live_drop_install(&lv);
	return after.mutations - before.mutations;
}

/* One pass, breadth first from root (m: its measure) to depth. */
static void explore(const struct node *root, const struct measure *m, unsigned depth)
{
	size_t head = 0, tail = 1, n_tr = n_transitions;
	time_t t0 = time(NULL);

	n_nodes = 0;
	n_keys = 0;
	if (keys)
		memset(keys, 0, keys_cap * 2 * sizeof(*keys));
	key_insert(key_of(root, m, FNV0), key_of(root, m, 0x84222325cbf29ce4ULL));
	node_add(root);
	while (head < n_nodes) {
		size_t idx = head++;

		if (nodes[idx].depth >= depth)
			continue;
		snap_restore(nodes[idx].snap);
		n_health_due = running(&nodes[idx]) && health_due(&nodes[idx]);
		for (size_t e = 0; e < N_EVENTS; e++) {
			uint64_t muts;

			if (!enabled(&nodes[idx], &events[e]))
				continue;
			muts = transition(idx, &events[e], -1, false, &tail);
			if (events[e].kind == EV_INSTALL_WHOLE)
				continue; /* its cuts: the steps' (first pass) */
			for (uint64_t c = 0; c < muts; c++) {
				transition(idx, &events[e], (int)c, false, &tail);
				transition(idx, &events[e], (int)c, true, &tail);
			}
		}
	}
	printf("test-abstate: %s: %zu states, %zu transitions explored to depth %u in %lds\n",
	       pass_names[pass], n_nodes, n_transitions - n_tr, depth, (long)(time(NULL) - t0));
}

int main(void)
{
	const char *d = getenv("FLASHD_EXPLORE_DEPTH");
	unsigned depth = d ? (unsigned)atoi(d) : 8;
	const char *sp = getenv("FLASHD_EXPLORE_SAMPLES");
	const char *mm = getenv("FLASHD_EXPLORE_MANUAL");
	struct node root = { .booted = -1, .inf = { .bundle = -1, .slot = -1 } };
	struct measure m;
	time_t t0 = time(NULL);
	int failed = 0;

	if (mm)
		manual_max = (unsigned)atoi(mm);
	explore_until = getenv("FLASHD_EXPLORE_UNTIL") != NULL;
	if (getenv("FLASHD_EXPLORE_SKIP")) {
		char *list = strdup(getenv("FLASHD_EXPLORE_SKIP")), *save = NULL;
		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
			for (size_t e = 0; e < N_EVENTS; e++)
				if (strstr(events[e].name, t))
					skipped[e] = true;
		free(list);
	}
	setup();
	if (sp && !(samples = fopen(sp, "we")))
		die("%s: %m", sp);
	measure(&m);
	root.sh.lbl[0] = (uint16_t)lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[0], img_size);
	root.sh.lbl[1] = (uint16_t)lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[1], img_size);
	if (root.sh.lbl[0] != LBL_V1 || root.sh.lbl[1] != LBL_ERASED)
		die("provisioning did not leave v1 in A and B erased");
	root.sh.verified[0] = true; /* provisioning read it back */
	records_take(root.rec);
	if (!root.rec[0])
		die("provisioning kept no block record of A");
	root.snap = snap_take();
	root.label = label_add("provision");
	for (pass = 0; pass < _PASS_MAX; pass++)
		explore(&root, &m, depth);
	printf("test-abstate: %zu distinct slot contents, %zu snapshot chunks, %lds in all\n",
	       (size_t)n_labels, n_chunk_data, (long)(time(NULL) - t0));
	if (samples) {
		fclose(samples);
		printf("test-abstate: %zu env states written to %s\n", n_samples, sp);
	}
	for (int i = 0; i < _I_MAX; i++) {
		if (!violated[i]) {
			if (invariants[i].xfail) {
				printf("XPASS %s: listed as known to fail (%s) but holds: remove "
				       "its reason from invariants[]\n", invariants[i].name,
				       invariants[i].xfail);
				failed = 1;
			} else {
				printf("PASS  %s\n", invariants[i].name);
			}
			continue;
		}
		printf("%s %s: %zu violating transitions; shortest trace:\n%s",
		       invariants[i].xfail ? "XFAIL" : "FAIL ", invariants[i].name, violations[i],
		       violation_trace[i]);
		if (invariants[i].xfail)
			printf("      !!! known failure, not yet fixed: %s\n", invariants[i].xfail);
		else
			failed = 1;
	}
	for (size_t e = 0; e < N_EVENTS; e++)
		if (events[e].until)
			printf("LEFT OUT event '%s': %s\n", events[e].name, events[e].until);
	nsim_close(ns);
	board_close(board);
	return failed;
}
