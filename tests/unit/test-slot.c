/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* slot and slot_env: loading the slot env, every transition over a
 * variable map, the states and the boot decision, and exactly one env
 * store per transition on a real (file-backed, redundant) env. The booted
 * slot and the boot script (slot_boot.c): test-slot-boot.c. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "slot.h"
#include "slot_boot.h"
#include "slot_change.h"
#include "slot-fake.h"
#include "testlib.h"
#include "util.h"

/* ---- count stores: fsyncs of the env file (libubootenv: one per store) ---- */
static char watched[PATH_MAX];
static unsigned n_fsync;

int fsync(int fd)
{
	static int (*real)(int);
	char link[64], target[PATH_MAX];
	ssize_t n;

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n > 0 && watched[0]) {
		target[n] = '\0';
		if (!strcmp(target, watched))
			n_fsync++;
	}
	return real(fd);
}

/* ---- a variable map standing in for the env ---- */
struct vars {
	const char *v[12][2];
};

static char *map_get(void *ud, const char *name)
{
	struct vars *m = ud;

	for (size_t i = 0; i < ELEMENTSOF(m->v) && m->v[i][0]; i++)
		if (!strcmp(m->v[i][0], name))
			return m->v[i][1] ? strdup(m->v[i][1]) : NULL;
	return NULL;
}


static void load(struct slot_env *st, const char *order, const char *a, const char *b)
{
	struct vars m = { { { "BOOT_ORDER", order }, { "BOOT_A_LEFT", a }, { "BOOT_B_LEFT", b } } };
	struct error err = {};

	assert_int_equal(slot_env_load(st, AB, 2, 3, map_get, &m, &err), 0);
}

/* load with install records: "NAME=VALUE" pairs after the three slot vars */
static void loadr(struct slot_env *st, const char *order, const char *a, const char *b,
		  const char *ra, const char *rb)
{
	struct vars m = { { { "BOOT_ORDER", order }, { "BOOT_A_LEFT", a }, { "BOOT_B_LEFT", b },
			    { "FLASHD_A_STATE", ra }, { "FLASHD_B_STATE", rb } } };
	struct error err = {};

	assert_int_equal(slot_env_load(st, AB, 2, 3, map_get, &m, &err), 0);
}

static void expect_state(const struct slot_env *st, const char *order, unsigned a, unsigned b)
{
	char o[64];

	slot_order_string(st, o, sizeof(o));
	assert_string_equal(o, order);
	assert_int_equal(st->slots[0].left, a);
	assert_int_equal(st->slots[1].left, b);
}

/* changes as "NAME=VALUE;..." in order */
static void expect_changes(const struct slot_changes *c, const char *want)
{
	char buf[256] = "";
	size_t off = 0;

	for (size_t i = 0; i < c->n; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "%s=%s;", c->vars[i].name,
				c->vars[i].value);
	assert_string_equal(buf, want);
}

static void run(const struct slot_env *st, enum slot_op op, int slot, unsigned flags,
		struct slot_env *n, struct slot_changes *c)
{
	struct error err = {};
	int r = slot_compute(st, op, slot, flags, n, c, &err);

	if (r < 0)
		fail_msg("%s: %s", slot_op_to_string(op), err.msg);
}

/* op on slot with flags is refused from st with code, the message holding msg */
static void refused(const struct slot_env *st, enum slot_op op, int slot, unsigned flags,
		    int code, const char *msg)
{
	struct slot_env n;
	struct slot_changes c;
	struct error err = {};
	int r = slot_compute(st, op, slot, flags, &n, &c, &err);

	if (r != code || (msg && !strstr(err.msg, msg)))
		fail_msg("%s of %d: %d \"%s\", expected %d \"%s\"", slot_op_to_string(op), slot, r,
			 err.msg, code, msg ? msg : "");
}

/* st = the state FROM: "ORDER|A_LEFT|B_LEFT[|A_STATE|B_STATE]" ("-": unset);
 * n, c = op on slot with flags, checked against TO "ORDER|A_LEFT|B_LEFT"
 * and the changes CHANGES (either NULL: not checked). */
static void step(struct slot_env *st, const char *from, enum slot_op op, int slot,
		 unsigned flags, struct slot_env *n, struct slot_changes *c, const char *to,
		 const char *changes)
{
	char buf[128], *p = buf, *f[5] = { NULL };
	unsigned a, b;
	char order[32];

	snprintf(buf, sizeof(buf), "%s", from);
	for (size_t i = 0; i < ELEMENTSOF(f) && p; i++) {
		f[i] = strsep(&p, "|");
		if (!strcmp(f[i], "-"))
			f[i] = NULL;
	}
	loadr(st, f[0], f[1], f[2], f[3], f[4]);
	run(st, op, slot, flags, n, c);
	if (to) {
		if (sscanf(to, "%31[^|]|%u|%u", order, &a, &b) != 3)
			fail_msg("bad TO \"%s\"", to);
		expect_state(n, order, a, b);
	}
	if (changes)
		expect_changes(c, changes);
}

TEST(test_parse)
{
	struct slot_env st, n;
	struct slot_changes c;
	struct vars none = { { { NULL, NULL } } };
	struct vars garbage = { { { "BOOT_A_LEFT", "x3" } } };
	struct error err = {};

	/* unset variables read as the boot script defaults them */
	assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &none, &err), 0);
	expect_state(&st, "A B", 3, 3);
	assert_false(st.order_set);
	assert_false(st.slots[0].left_set);

	load(&st, "B A", "0", "2");
	expect_state(&st, "B A", 0, 2);
	assert_int_equal(st.slots[1].order_pos, 0);
	assert_int_equal(slot_tries_of(&st, 0), SLOT_TRIES_EXHAUSTED);
	assert_int_equal(slot_tries_of(&st, 1), SLOT_TRIES_USED);

	/* duplicates and foreign names are skipped, as the script does */
	load(&st, "C B B", "3", "3");
	expect_state(&st, "B", 3, 3);
	assert_true(st.order_foreign);
	assert_int_equal(slot_tries_of(&st, 0), SLOT_TRIES_OUT);
	assert_int_equal(slot_tries_of(&st, 1), SLOT_TRIES_FULL);

	/* a malformed counter: loaded as the script reads it, and named
	 * (issue 31 item 11); "x3" reads as 0, "10" boots once more */
	assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &garbage, &err), 0);
	assert_int_equal(st.n_malformed, 1);
	assert_string_equal(st.malformed[0].name, "BOOT_A_LEFT");
	assert_string_equal(st.malformed[0].value, "x3");
	assert_non_null(strstr(st.malformed[0].effect, "skips slot A"));
	assert_int_equal(st.slots[0].left, 0);
	assert_false(st.slots[0].left_set);
	load(&st, "A B", "10", "3");
	assert_int_equal(st.n_malformed, 1);
	assert_int_equal(st.slots[0].left, 1);
	assert_non_null(strstr(st.malformed[0].effect, "once more"));
	/* the next operation writes it back as a digit */
	run(&st, SLOT_OP_ACTIVATE, 1, 0, &n, &c);
	expect_changes(&c, "BOOT_ORDER=B A;BOOT_A_LEFT=1;");
	assert_int_equal(slot_env_load(&st, AB, 2, 10, map_get, &none, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "setexpr"));
	const char *bad[] = { "A", "B C" };
	assert_int_equal(slot_env_load(&st, bad, 2, 3, map_get, &none, &err), -EINVAL);
	const char *dup[] = { "A", "A" };
	assert_int_equal(slot_env_load(&st, dup, 2, 3, map_get, &none, &err), -EINVAL);
}

TEST(test_activate)
{
	struct slot_env st, n;
	struct slot_changes c;

	step(&st, "A B|3|0", SLOT_OP_ACTIVATE, 1, 0, &n, &c,
	     "B A|3|3", "BOOT_ORDER=B A;BOOT_B_LEFT=3;");
	assert_int_equal(slot_next_boot(&n), 1);

	/* a verified slot marked bad comes back first, on trial again */
	step(&st, "A|2|0|-|bad", SLOT_OP_ACTIVATE, 1, 0, &n, &c, "B A|2|3", NULL);
	assert_int_equal(n.slots[1].record, SLOT_RECORD_VERIFIED);
	/* already active with full tries: nothing to write */
	load(&st, "B A", "3", "3");
	run(&st, SLOT_OP_ACTIVATE, 1, 0, &n, &c);
	assert_int_equal(c.n, 0);
}

TEST(test_mark_good)
{
	struct slot_env st, n;
	struct slot_changes c;

	step(&st, "B A|3|2", SLOT_OP_MARK_GOOD, 1, 0, &n, &c,
	     "B A|3|3", "BOOT_B_LEFT=3;FLASHD_B_STATE=good;FLASHD_LAST_GOOD=B;");
	/* a verified slot out of BOOT_ORDER goes back in, last: the primary stays */
	step(&st, "A|3|0|-|verified", SLOT_OP_MARK_GOOD, 1, 0, &n, &c,
	     "A B|3|3", "BOOT_ORDER=A B;BOOT_B_LEFT=3;FLASHD_B_STATE=good;FLASHD_LAST_GOOD=B;");
	/* the booted slot kept in BOOT_ORDER recorded bad (degraded: nothing
	 * else could boot) stays behind a slot marked good, which boots next;
	 * appended behind it, the board stayed locked on the failed slot
	 * (test-chain, CHAIN_SEED=5404: B bad kept last, A marked good after
	 * its read) */
	step(&st, "B|0|2|bad|bad", SLOT_OP_MARK_GOOD, 0, 0, &n, &c, "A B|3|2",
	     "BOOT_ORDER=A B;BOOT_A_LEFT=3;FLASHD_A_STATE=good;FLASHD_LAST_GOOD=A;");
	assert_int_equal(slot_next_boot(&n), 0);
}

TEST(test_mark_bad)
{
	struct slot_env st, n;
	struct slot_changes c;

	step(&st, "B A|3|2", SLOT_OP_MARK_BAD, 1, 0, &n, &c,
	     "A|3|0", "BOOT_ORDER=A;BOOT_B_LEFT=0;FLASHD_B_STATE=bad;");
	assert_int_equal(slot_tries_of(&n, 1), SLOT_TRIES_OUT);
	/* the last slot in BOOT_ORDER stays, even forced (issue 13 items 2, 15):
	 * an empty BOOT_ORDER makes the script boot every slot */
	refused(&n, SLOT_OP_MARK_BAD, 0, 0, -EBUSY, "last slot");
	refused(&n, SLOT_OP_MARK_BAD, 0, SLOT_FORCE, -EBUSY, NULL);
	refused(&n, SLOT_OP_MARK_BAD, -1, 0, -EINVAL, NULL);
}

TEST(test_rollback)
{
	struct slot_env st, n;
	struct slot_changes c;

	/* booted B (the new one) rolls back to A with full tries */
	step(&st, "B A|1|2", SLOT_OP_ROLLBACK, 1, 0, &n, &c,
	     "A B|3|2", "BOOT_ORDER=A B;BOOT_A_LEFT=3;");
	/* without a booted slot: from the primary */
	run(&st, SLOT_OP_ROLLBACK, -1, 0, &n, &c);
	expect_state(&n, "A B", 3, 2);
	/* booted A after a fallback: rollback makes B primary again */
	step(&st, "A B|3|0", SLOT_OP_ROLLBACK, 0, 0, &n, &c, "B A|3|3", NULL);
	/* never to a slot marked bad, unless forced */
	loadr(&st, "A", "3", "0", NULL, "bad");
	refused(&st, SLOT_OP_ROLLBACK, 0, 0, -ENOENT, "marked bad");
	run(&st, SLOT_OP_ROLLBACK, 0, SLOT_FORCE, &n, &c);
	expect_state(&n, "B A", 3, 3);
	/* never, even forced, to a slot whose install did not verify (item 3) */
	loadr(&st, "A", "3", "0", NULL, "failed");
	refused(&st, SLOT_OP_ROLLBACK, 0, SLOT_FORCE, -ENOENT, NULL);
	/* item 19: an update pending (B primary, booted A): rollback is from
	 * the primary, and a rollback that changes nothing is an error */
	step(&st, "B A|2|3", SLOT_OP_ROLLBACK, -1, 0, &n, &c, "A B|3|3", NULL);
	load(&st, "A B", "3", "3");
	refused(&st, SLOT_OP_ROLLBACK, 1, 0, -EALREADY, NULL);
}

TEST(test_reset_and_init)
{
	struct slot_env st, n;
	struct slot_changes c;
	struct vars none = { { { NULL, NULL } } };
	struct error err = {};

	load(&st, "A", "0", "0");
	run(&st, SLOT_OP_RESET_COUNTERS, -1, 0, &n, &c);
	expect_state(&n, "A", 3, 0); /* a bad slot stays bad */
	expect_changes(&c, "BOOT_A_LEFT=3;");

	assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &none, &err), 0);
	run(&st, SLOT_OP_INIT, -1, 0, &n, &c);
	expect_state(&n, "A B", 3, 3);
	expect_changes(&c, "BOOT_ORDER=A B;BOOT_A_LEFT=3;BOOT_B_LEFT=3;FLASHD_A_STATE=good;FLASHD_B_STATE=good;");
	assert_int_equal(slot_op_from_string("mark-good"), SLOT_OP_MARK_GOOD);
	assert_int_equal(slot_op_from_string("nope"), -EINVAL);
}

TEST(test_status)
{
	struct slot_env st;
	struct slot_decision s;

	/* booted B on its first try after activation */
	load(&st, "B A", "3", "2");
	slot_decide(&st, 1, "flashd.slot", &s);
	assert_int_equal(s.booted, 1);
	assert_true(s.on_trial);
	assert_false(s.fell_back);
	assert_true(s.needs_health_check);
	assert_int_equal(s.primary, 1);
	assert_int_equal(s.next_boot, 1);

	/* B ran out of tries, U-Boot fell back to A */
	load(&st, "B A", "2", "0");
	slot_decide(&st, 0, "root", &s);
	assert_true(s.fell_back);
	assert_true(s.on_trial);
	assert_true(s.needs_health_check);
	assert_int_equal(s.next_boot, 0);
	assert_false(s.switch_pending);

	/* B was just activated while A runs: a pending switch, not a fallback */
	load(&st, "B A", "2", "3");
	slot_decide(&st, 0, "flashd.slot", &s);
	assert_false(s.fell_back);
	assert_true(s.switch_pending);
	assert_int_equal(s.next_boot, 1);

	/* none left: the script resets the counters, then boots A (item 22) */
	load(&st, "A B", "0", "0");
	slot_decide(&st, -1, NULL, &s);
	assert_int_equal(s.booted, -1);
	assert_int_equal(s.next_boot, 0);
	assert_true(s.next_after_reset);
	assert_false(s.fell_back);

	/* a booted slot marked bad is not on trial: no health check (item 17) */
	loadr(&st, "A", "3", "0", NULL, "bad");
	slot_decide(&st, 1, "flashd.slot", &s);
	assert_false(s.on_trial);
	assert_false(s.needs_health_check);
	/* on its last try (0 left) in BOOT_ORDER: it is checked */
	load(&st, "B A", "3", "0");
	slot_decide(&st, 1, "flashd.slot", &s);
	assert_true(s.needs_health_check);
	/* BOOT_ORDER names no slot: the script resets forever */
	load(&st, "C", "3", "3");
	slot_decide(&st, -1, NULL, &s);
	assert_int_equal(s.next_boot, -1);
}

/* What the boot script does at power-on (slot_boot_select). */
TEST(test_boot_select)
{
	struct slot_env st, n;
	struct slot_changes c;

	/* first in order with tries: decremented, one variable saved */
	load(&st, "B A", "3", "3");
	assert_int_equal(slot_boot_select(&st, &n, &c), 1);
	expect_state(&n, "B A", 3, 2);
	assert_int_equal(c.n, 1);

	/* B exhausted: falls back to A */
	load(&st, "B A", "3", "0");
	assert_int_equal(slot_boot_select(&st, &n, &c), 0);
	expect_state(&n, "B A", 2, 0);

	/* none left: counters of the slots in BOOT_ORDER restored... */
	load(&st, "A B", "0", "0");
	assert_int_equal(slot_boot_select(&st, &n, &c), -EAGAIN);
	expect_state(&n, "A B", 3, 3);

	/* ...but a slot out of the order (an interrupted install marked it
	 * bad) stays out: its image was never verified */
	load(&st, "B", "0", "0");
	assert_int_equal(slot_boot_select(&st, &n, &c), -EAGAIN);
	expect_state(&n, "B", 0, 3);
	assert_int_equal(slot_boot_select(&n, &st, &c), 1);
}

TEST(test_state_vars)
{
	assert_true(slot_env_is_var("BOOT_ORDER"));
	assert_true(slot_env_is_var("FLASHD_A_STATE"));
	assert_true(slot_env_is_var("FLASHD_LAST_GOOD"));
	assert_false(slot_env_is_var("FLASHD_A_VERSION"));
	assert_true(slot_env_is_var("BOOT_A_LEFT"));
	assert_true(slot_env_is_var("BOOT_rootfs_1_LEFT"));
	assert_false(slot_env_is_var("BOOT__LEFT"));
	assert_false(slot_env_is_var("bootcmd"));
	assert_false(slot_env_is_var("BOOT_ORDERX"));
}

/* NOR device: u-boot, rootfs_a, rootfs_b; NAND device: ubi (rootfs_a/b volumes) */
static enum slot_state view(const char *order, const char *a, const char *ra, bool running)
{
	struct slot_env st;

	loadr(&st, order, a, "3", ra, NULL);
	return slot_state_of(&st, 0, running);
}

/* Items 3, 22: status names what a slot holds. */
TEST(test_records_and_views)
{
	struct slot_env st;
	struct vars bad = { { { "FLASHD_A_STATE", "ok" } } };
	struct vars ver = { { { "FLASHD_B_VERSION", "1.0" } } };
	struct error err = {};

	assert_int_equal(view("B", "0", NULL, false), SLOT_STATE_EMPTY);
	assert_int_equal(view("B", "0", "installing", true), SLOT_STATE_INSTALLING);
	assert_int_equal(view("B", "0", "installing", false), SLOT_STATE_INTERRUPTED);
	assert_int_equal(view("B", "0", "failed", false), SLOT_STATE_FAILED);
	assert_int_equal(view("B", "0", "cancelled", false), SLOT_STATE_CANCELLED);
	assert_int_equal(view("B", "0", "verified", false), SLOT_STATE_INSTALLED);
	assert_int_equal(view("A B", "3", "verified", false), SLOT_STATE_PENDING);
	assert_int_equal(view("A B", "2", "verified", false), SLOT_STATE_TRIAL);
	assert_int_equal(view("A B", "3", "good", false), SLOT_STATE_GOOD);
	assert_int_equal(view("A B", "2", "good", false), SLOT_STATE_TRIAL);
	assert_int_equal(view("B", "0", "bad", false), SLOT_STATE_BAD);
	/* legacy (no record): in BOOT_ORDER = what the board boots */
	assert_int_equal(view("A B", "3", NULL, false), SLOT_STATE_GOOD);
	assert_string_equal(slot_state_to_string(SLOT_STATE_PENDING), "pending");
	assert_non_null(strstr(slot_state_describe(SLOT_STATE_FAILED), "failed"));
	for (int v = 0; v < _SLOT_STATE_MAX; v++)
		assert_non_null(slot_state_to_string(v));

	/* an old flashd emptied BOOT_ORDER while writing A: A is not trusted */
	assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &ver, &err), 0);
	assert_false(slot_verified(&st, 0));
	assert_true(slot_verified(&st, 1));
	/* an unknown record is no proof: unknown, named (item 11) */
	assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &bad, &err), 0);
	assert_int_equal(st.slots[0].record, SLOT_RECORD_UNKNOWN);
	assert_false(slot_verified(&st, 0));
	assert_int_equal(st.n_malformed, 1);
	assert_string_equal(st.malformed[0].name, "FLASHD_A_STATE");
	assert_string_equal(st.malformed[0].value, "ok");
}

/* Item 3: only a slot whose last install verified enters BOOT_ORDER. */
TEST(test_verified_only)
{
	struct slot_env st, n;
	struct slot_changes c;
	static const char *const unverified[] = { "failed", "cancelled", "installing" };

	for (size_t k = 0; k < ELEMENTSOF(unverified); k++) {
		loadr(&st, "A", "3", "0", NULL, unverified[k]);
		refused(&st, SLOT_OP_ACTIVATE, 1, SLOT_FORCE, -EPERM, "no verified image");
		refused(&st, SLOT_OP_MARK_GOOD, 1, SLOT_FORCE, -EPERM, NULL);
		/* init puts the verified slots in, only them */
		run(&st, SLOT_OP_INIT, -1, 0, &n, &c);
		expect_state(&n, "A", 3, 0);
	}
	loadr(&st, "A", "3", "0", "failed", "failed");
	refused(&st, SLOT_OP_INIT, -1, 0, -EPERM, NULL);
}

/* Items 1, 13, 18: the install's stores. */
TEST(test_install_ops)
{
	struct slot_env st, n, n2;
	struct slot_changes c;

	step(&st, "A B|2|3", SLOT_OP_INSTALL_BEGIN, 1, 0, &n, &c,
	     "A|2|0", "BOOT_ORDER=A;BOOT_B_LEFT=0;FLASHD_B_STATE=installing;");
	run(&n, SLOT_OP_INSTALL_ACTIVATE, 1, 0, &n2, &c);
	expect_state(&n2, "B A", 2, 3);
	expect_changes(&c, "BOOT_ORDER=B A;BOOT_B_LEFT=3;FLASHD_B_STATE=verified;");
	assert_int_equal(slot_state_of(&n2, 1, false), SLOT_STATE_PENDING);
	/* --no-activate (item 4): verified, stays out, activatable later */
	run(&n, SLOT_OP_INSTALL_VERIFIED, 1, 0, &n2, &c);
	expect_changes(&c, "FLASHD_B_STATE=verified;");
	assert_int_equal(slot_state_of(&n2, 1, false), SLOT_STATE_INSTALLED);
	run(&n2, SLOT_OP_ACTIVATE, 1, 0, &n, &c);
	expect_state(&n, "B A", 2, 3);

	/* item 18: an offline init put the target back in during the install;
	 * the failure store takes it out again */
	step(&st, "B A|3|3|-|installing", SLOT_OP_INSTALL_FAILED, 1, 0, &n, &c,
	     "A|3|0", "BOOT_ORDER=A;BOOT_B_LEFT=0;FLASHD_B_STATE=failed;");
	run(&st, SLOT_OP_INSTALL_CANCELLED, 1, 0, &n, &c);
	assert_int_equal(slot_state_of(&n, 1, false), SLOT_STATE_CANCELLED);
	/* provisioning wrote only A: B leaves BOOT_ORDER and reads "empty" */
	load(&st, "A B", "3", "3");
	run(&st, SLOT_OP_RETIRE, 1, 0, &n, &c);
	expect_changes(&c, "BOOT_ORDER=A;BOOT_B_LEFT=0;");
	assert_int_equal(slot_state_of(&n, 1, false), SLOT_STATE_EMPTY);
	/* the daemon recording a dead worker's install: only if still installing */
	loadr(&st, "B A", "3", "3", NULL, "verified");
	refused(&st, SLOT_OP_INSTALL_FAILED, 1, 0, -ESTALE, NULL);

	/* item 13: booted B failed its check (out), A is the last slot of
	 * BOOT_ORDER: installing into A is refused, nothing written */
	loadr(&st, "A", "3", "0", NULL, "bad");
	refused(&st, SLOT_OP_INSTALL_BEGIN, 0, SLOT_FORCE, -EBUSY, "last slot in BOOT_ORDER");
}

/* Items 2, 15: the health check never empties BOOT_ORDER; a fallback takes
 * the exhausted primary out. */
TEST(test_degraded_and_fallback)
{
	struct slot_env st, n, n2;
	struct slot_changes c;
	struct slot_decision s;
	struct error err = {};

	/* item 15: freshly provisioned, only A; its check fails */
	loadr(&st, "A", "2", "0", "verified", NULL);
	assert_int_equal(slot_compute(&st, SLOT_OP_MARK_BAD, 0, SLOT_FORCE | SLOT_KEEP_LAST,
				      &n, &c, &err), 1);
	expect_state(&n, "A", 2, 0);
	expect_changes(&c, "FLASHD_A_STATE=bad;");
	slot_decide(&n, 0, "flashd.slot", &s);
	assert_true(s.degraded);
	assert_int_equal(s.next_boot, 0);
	assert_false(s.needs_health_check); /* it failed already (item 17) */
	/* a later pass clears it */
	run(&n, SLOT_OP_MARK_GOOD, 0, 0, &n2, &c);
	slot_decide(&n2, 0, "flashd.slot", &s);
	assert_false(s.degraded);
	assert_int_equal(n2.last_good, 0);

	/* item 2: B activated, used up its tries, the board fell back to A */
	loadr(&st, "B A", "2", "0", "good", "verified");
	assert_true(slot_fell_back(&st, 0));
	run(&st, SLOT_OP_FALLBACK, 0, 0, &n, &c);
	expect_state(&n, "A", 2, 0);
	expect_changes(&c, "BOOT_ORDER=A;FLASHD_B_STATE=bad;");
	/* a failing check on A then keeps A: never BOOT_ORDER=B */
	assert_int_equal(slot_compute_booted(&st, 0, SLOT_OP_MARK_BAD, 0,
					     SLOT_FORCE | SLOT_KEEP_LAST, &n, &c, &err), 1);
	expect_state(&n, "A", 2, 0);
	assert_int_equal(slot_next_boot(&n), 0);
	/* and the operator's mark-bad of A is refused, forced or not */
	assert_int_equal(slot_compute_booted(&st, 0, SLOT_OP_MARK_BAD, 0, SLOT_FORCE, &n, &c,
					     &err), -EBUSY);
	/* two good slots: a failing check takes the booted one out */
	loadr(&st, "B A", "3", "2", "good", "verified");
	assert_int_equal(slot_compute_booted(&st, 1, SLOT_OP_MARK_BAD, 1, SLOT_KEEP_LAST, &n,
					     &c, &err), 0);
	expect_state(&n, "A", 3, 0);
}

/* Both env copies lost: U-Boot booted its default env ("A B", full tries,
 * no records). The booted slot alone stays in BOOT_ORDER; the other one,
 * whatever it holds (never written, half-written), can no longer be booted
 * by the script, and a failing health check keeps the booted slot. */
TEST(test_records_lost)
{
	struct slot_env st, n, n2;
	struct slot_changes c;
	struct slot_decision s;
	struct error err = {};

	/* the script's first saveenv on the default env, booted A: without
	 * the FLASHD_ENV=default marker it reads as a legacy board's env
	 * (its BOOT_ORDER kept, issue 31 item 9); with it, records lost */
	load(&st, "A B", "2", "3");
	assert_false(slot_records_lost(&st));
	assert_false(slot_needs_fallback(&st, 0));
	st.env_default = true;
	assert_true(slot_records_lost(&st));
	assert_true(slot_needs_fallback(&st, 0));
	assert_false(slot_needs_fallback(&st, -1)); /* booted slot unknown: nothing */
	run(&st, SLOT_OP_FALLBACK, 0, 0, &n, &c);
	expect_state(&n, "A", 2, 3);
	expect_changes(&c, "BOOT_ORDER=A;FLASHD_A_STATE=verified;FLASHD_B_STATE=unknown;");
	assert_false(slot_records_lost(&n));
	assert_false(slot_needs_fallback(&n, 0));
	assert_int_equal(slot_state_of(&n, 0, false), SLOT_STATE_TRIAL);
	assert_int_equal(slot_state_of(&n, 1, false), SLOT_STATE_UNKNOWN);
	slot_decide(&n, 0, "flashd.slot", &s);
	assert_int_equal(s.next_boot, 0);
	assert_true(s.needs_health_check);
	/* B's content is unknown: not activatable, forced or not */
	assert_true(slot_compute(&n, SLOT_OP_ACTIVATE, 1, SLOT_FORCE, &n2, &c, &err) < 0);
	/* the daemon's ops record it in their own store too (compute_booted) */
	assert_int_equal(slot_compute_booted(&st, 0, SLOT_OP_MARK_BAD, 0,
					     SLOT_FORCE | SLOT_KEEP_LAST, &n2, &c, &err), 1);
	expect_state(&n2, "A", 2, 3);
	assert_int_equal(slot_next_boot(&n2), 0);
	/* U-Boot never saved (BOOT_ORDER unset) and A booted: the same */
	step(&st, "|-|-", SLOT_OP_FALLBACK, 0, 0, &n, &c, "A|3|3", NULL);
	assert_int_equal(slot_next_boot(&n), 0);
	/* the operator's slot init of a legacy board writes the records, so
	 * that board is not taken for one whose records were lost */
	load(&st, "A B", "3", "3");
	run(&st, SLOT_OP_INIT, -1, 0, &n, &c);
	expect_changes(&c, "FLASHD_A_STATE=good;FLASHD_B_STATE=good;");
	assert_false(slot_records_lost(&n));
	/* a version alone (an older flashd) is a record too */
	{
		struct vars ver = { { { "BOOT_ORDER", "A B" }, { "FLASHD_B_VERSION", "1.0" } } };
		assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &ver, &err), 0);
		assert_false(slot_records_lost(&st));
	}
}

/* Item 5: boot-select does what the script does on every odd env. */
TEST(test_boot_select_odd)
{
	struct slot_env st, n;
	struct slot_changes c;

	/* empty = unset: every slot, and the default is saved */
	load(&st, "", "3", "3");
	assert_false(st.order_set);
	assert_int_equal(slot_boot_select(&st, &n, &c), 0);
	expect_changes(&c, "BOOT_ORDER=A B;BOOT_A_LEFT=2;");
	/* names the script does not know stay as they are */
	load(&st, "C B", "3", "3");
	assert_int_equal(slot_boot_select(&st, &n, &c), 1);
	expect_changes(&c, "BOOT_B_LEFT=2;");
	/* nothing the script knows: it resets forever, saving nothing new */
	load(&st, "C", "3", "3");
	assert_int_equal(slot_boot_select(&st, &n, &c), -ELOOP);
	assert_int_equal(c.n, 0);
	/* unset counters default to the maximum and are saved */
	load(&st, "A B", NULL, NULL);
	assert_int_equal(slot_boot_select(&st, &n, &c), 0);
	expect_changes(&c, "BOOT_A_LEFT=2;BOOT_B_LEFT=3;");
}

/* Item 20: slot variables are checked even when forced. */
TEST(test_var_check)
{
	struct fake_layout f;
	struct error err = {};
	static const char *const bad[][2] = {
		{ "BOOT_ORDER", "B,A" }, { "BOOT_ORDER", "a b" }, { "BOOT_ORDER", "" },
		{ "BOOT_ORDER", NULL }, { "BOOT_ORDER", "A  B" }, { "BOOT_ORDER", "A B " },
		{ "BOOT_ORDER", "A A" }, { "BOOT_ORDER", "C" },
		{ "BOOT_A_LEFT", "10" }, { "BOOT_A_LEFT", "0x2" }, { "BOOT_A_LEFT", "2 " },
		{ "BOOT_A_LEFT", "-1" }, { "BOOT_A_LEFT", "4" }, { "BOOT_C_LEFT", "1" },
		{ "FLASHD_A_STATE", "ok" }, { "FLASHD_LAST_GOOD", "C" },
	};
	static const char *const good[][2] = {
		{ "BOOT_ORDER", "B A" }, { "BOOT_ORDER", "A" }, { "BOOT_A_LEFT", "0" },
		{ "BOOT_B_LEFT", "3" }, { "BOOT_B_LEFT", NULL }, { "FLASHD_B_STATE", "verified" },
		{ "bootcmd", "x" }, { "FLASHD_LAST_GOOD", "A" },
	};

	fake_layout(&f, false);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (slot_env_var_check(&f.g, bad[i][0], bad[i][1], &err) != -EINVAL)
			fail_msg("%s='%s' accepted", bad[i][0], bad[i][1] ? bad[i][1] : "(unset)");
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		if (slot_env_var_check(&f.g, good[i][0], good[i][1], &err) != 0)
			fail_msg("%s='%s' refused: %s", good[i][0], good[i][1], err.msg);
	assert_int_equal(slot_env_var_check(NULL, "BOOT_X_LEFT", "9", &err), 0);
	assert_int_equal(slot_env_var_check(NULL, "BOOT_ORDER", "x,y", &err), -EINVAL);
}

/* A redundant env in a file under dir (created), written once with a
 * bootcmd; fsyncs of the file are counted (n_fsync). Open, for the caller. */
static struct env *file_env(char *dir, char *file, size_t len, struct env_device devs[2])
{
	static const struct env_var init[] = { { "bootcmd", "run flashd" } };
	struct error eerr = {};
	struct env *e = NULL;
	char cmd[160];

	assert_non_null(mkdtemp(dir));
	snprintf(file, len, "%s/env.bin", dir);
	snprintf(cmd, sizeof(cmd), "head -c 65536 /dev/zero | tr '\\0' '\\377' > %s", file);
	assert_int_equal(system(cmd), 0);
	assert_non_null(realpath(file, watched));
	devs[0] = (struct env_device){ .path = file, .offset = 0, .size = 0x4000 };
	devs[1] = (struct env_device){ .path = file, .offset = 0x8000, .size = 0x4000 };
	assert_int_equal(env_open_devices(devs, 2, ENV_OPEN_ALLOW_BLANK, &e, &eerr), 0);
	assert_int_equal(env_init_default(e, NULL, init, 1, false, &eerr), 0);
	return e;
}

/* Every transition, applied to a redundant file env, is exactly one store
 * and reads back as computed. */
TEST(test_apply_one_store)
{
	char dir[] = "/tmp/flashd-test-slot-XXXXXX", file[64];
	struct error eerr = {};
	struct error serr = {};
	struct env_device devs[2];
	static const struct { enum slot_op op; int slot; const char *order; unsigned a, b; } steps[] = {
		{ SLOT_OP_INIT, -1, "A B", 3, 3 },
		{ SLOT_OP_MARK_BAD, 1, "A", 3, 0 },      /* before writing B */
		{ SLOT_OP_ACTIVATE, 1, "B A", 3, 3 },    /* after verifying B */
		{ SLOT_OP_MARK_GOOD, 1, "B A", 3, 3 },
		{ SLOT_OP_ROLLBACK, 1, "A B", 3, 3 },
		{ SLOT_OP_MARK_BAD, 0, "B", 0, 3 },
		{ SLOT_OP_RESET_COUNTERS, -1, "B", 0, 3 },
		{ SLOT_OP_MARK_GOOD, 0, "B A", 3, 3 },
	};
	struct env *e = NULL;

	e = file_env(dir, file, sizeof(file), devs);
	env_close(e);

	for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
		struct slot_env st, n;
		struct slot_changes c;

		assert_int_equal(env_open_devices(devs, 2, 0, &e, &eerr), 0);
		assert_int_equal(slot_env_load(&st, AB, 2, 3, env_get_dup, e, &serr), 0);
		assert_int_equal(slot_compute(&st, steps[i].op, steps[i].slot, 0, &n, &c, &serr), 0);
		n_fsync = 0;
		assert_int_equal(slot_apply(e, &c, &eerr), 0);
		if (n_fsync != (c.n ? 1u : 0u))
			fail_msg("step %zu (%s): %u stores for %zu changes", i,
				 slot_op_to_string(steps[i].op), n_fsync, c.n);
		env_close(e);

		assert_int_equal(env_open_devices(devs, 2, 0, &e, &eerr), 0);
		assert_int_equal(slot_env_load(&st, AB, 2, 3, env_get_dup, e, &serr), 0);
		expect_state(&st, steps[i].order, steps[i].a, steps[i].b);
		assert_true(st.order_set && st.slots[0].left_set && st.slots[1].left_set);
		char *v = NULL;
		assert_int_equal(env_get(e, "bootcmd", &v), 0); /* the rest of the env is kept */
		free(v);
		env_close(e);
	}
	watched[0] = '\0';
	testlib_rm_rf(dir);
}

static char *env_str(struct env *e, const char *name)
{
	return env_get_dup(e, name);
}

/* slot_change(): load, compute, one store with the extra variable; a
 * refusal or an unknown slot writes nothing. */
TEST(test_slot_change)
{
	char dir[] = "/tmp/flashd-test-slot-XXXXXX", file[64];
	struct env_device devs[2];
	struct slot_change_result res;
	struct error err = { 0 };
	struct fake_layout f;
	struct env *e = NULL;
	char *v;

	fake_layout(&f, false);
	e = file_env(dir, file, sizeof(file), devs);

	n_fsync = 0;
	assert_int_equal(slot_change(e, &f.g, &(struct slot_change){ .op = SLOT_OP_INIT, .slot = -1,
				     .booted = -1 }, &res, &err), 0);
	assert_int_equal(n_fsync, 1);
	assert_true(res.n_written > 0);

	/* by name, with the extra variable in the same store */
	n_fsync = 0;
	assert_int_equal(slot_change(e, &f.g, &(struct slot_change){ .op = SLOT_OP_MARK_BAD,
				     .slot_name = "B", .booted = 0, .extra_name = "FLASHD_B_VERSION",
				     .extra_value = "2.0" }, &res, &err), 0);
	assert_int_equal(n_fsync, 1);
	assert_int_equal(res.slot, 1);
	assert_string_equal((v = env_str(e, "BOOT_ORDER")), "A");
	free(v);
	assert_string_equal((v = env_str(e, "FLASHD_B_VERSION")), "2.0");
	free(v);

	/* no such slot, a refusal: nothing written, typed failures */
	n_fsync = 0;
	assert_int_equal(slot_change(e, &f.g, &(struct slot_change){ .op = SLOT_OP_ACTIVATE,
				     .slot_name = "C", .booted = 0 }, &res, &err), -ENOENT);
	assert_int_equal(res.fail, SLOT_CHANGE_NO_SLOT);
	assert_string_equal(error_message(&err), "C");
	assert_true(slot_change(e, &f.g, &(struct slot_change){ .op = SLOT_OP_MARK_BAD,
			       .slot_name = "A", .booted = 0, .extra_name = "X", .extra_value = "1" },
			       &res, &err) < 0);
	assert_int_equal(res.fail, SLOT_CHANGE_REFUSED);
	assert_false(res.forcible); /* the last slot of BOOT_ORDER stays, even forced */
	assert_int_equal(n_fsync, 0);
	assert_null(env_str(e, "X"));
	env_close(e);
	watched[0] = '\0';
	testlib_rm_rf(dir);
	(void) state;
}

/* Issue 31 item 4: BOOT_ORDER names only slots recorded verified; item
 * 10: a new install deletes the old image's health verdict. */
TEST(test_order_check_and_health)
{
	struct slot_env st, n;
	struct slot_changes c;
	struct error err = {};
	struct vars m = { { { "BOOT_ORDER", "A" }, { "FLASHD_A_STATE", "good" },
			    { "FLASHD_B_STATE", "verified" },
			    { "FLASHD_B_HEALTH", "failed 2026-01-01T00:00:00Z: exit status 1" } } };

	loadr(&st, "A B", "3", "3", "good", "failed");
	assert_int_equal(slot_order_check(&st, &err), -EPERM);
	assert_non_null(strstr(err.msg, "slot B"));
	loadr(&st, "A", "3", "0", "good", "failed");
	assert_int_equal(slot_order_check(&st, &err), 0);
	/* legacy: no records, what the script boots is trusted */
	load(&st, "A B", "3", "3");
	assert_int_equal(slot_order_check(&st, &err), 0);

	assert_int_equal(slot_env_load(&st, AB, 2, 3, map_get, &m, &err), 0);
	assert_true(st.slots[1].has_health);
	run(&st, SLOT_OP_INSTALL_BEGIN, 1, 0, &n, &c);
	expect_changes(&c, "BOOT_A_LEFT=3;BOOT_B_LEFT=0;FLASHD_B_STATE=installing;FLASHD_B_HEALTH=;");
	/* other operations leave it */
	run(&st, SLOT_OP_ACTIVATE, 1, 0, &n, &c);
	expect_changes(&c, "BOOT_ORDER=B A;BOOT_A_LEFT=3;BOOT_B_LEFT=3;");
	assert_true(slot_env_is_flashd_var("FLASHD_B_HEALTH"));
	assert_true(slot_env_is_flashd_var("FLASHD_A_VERSION"));
	assert_true(slot_env_is_flashd_var("BOOT_ORDER"));
	assert_false(slot_env_is_flashd_var("bootdelay"));
}

/* The factory reset flag: set once (a second request stores nothing),
 * cancelled once (a cancel with none pending stores nothing), each in one
 * store; the rest of the env is kept. */
TEST(test_overlay_reset_flag)
{
	char dir[] = "/tmp/flashd-test-slot-XXXXXX", file[64];
	static const struct { bool cancel, changed; const char *after; } steps[] = {
		{ true, false, NULL }, { false, true, "1" }, { false, false, "1" },
		{ true, true, NULL }, { true, false, NULL },
	};
	struct env_device devs[2];
	struct error eerr = {};
	struct env *e = file_env(dir, file, sizeof(file), devs);

	env_close(e);
	for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
		_cleanup_free_ char *v = NULL, *boot = NULL;
		bool changed = !steps[i].changed;

		assert_int_equal(env_open_devices(devs, 2, 0, &e, &eerr), 0);
		n_fsync = 0;
		assert_int_equal(slot_change_overlay_reset(e, steps[i].cancel, &changed, &eerr), 0);
		if (changed != steps[i].changed || n_fsync != (steps[i].changed ? 1u : 0u))
			fail_msg("step %zu (%s): changed %d, %u stores", i,
				 steps[i].cancel ? "cancel" : "reset", changed, n_fsync);
		env_close(e);
		assert_int_equal(env_open_devices(devs, 2, 0, &e, &eerr), 0);
		v = env_get_dup(e, SLOT_OVERLAY_RESET_VAR);
		if (steps[i].after)
			assert_string_equal(v, steps[i].after);
		else
			assert_null(v);
		boot = env_get_dup(e, "bootcmd");
		assert_string_equal(boot, "run flashd");
		env_close(e);
	}
	watched[0] = '\0';
	testlib_rm_rf(dir);
}
