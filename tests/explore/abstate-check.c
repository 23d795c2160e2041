/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-abstate's invariants (I1-I6): what a transition measures, the checks
 * of each new state, the shortest trace of each violation, and the env
 * samples for the real-U-Boot agreement test. */
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
#include "slot_seal.h"

/* ---- the invariants and the ones known to fail (expected failures) ---- */

/* Each invariant, and why it is known to fail when it is (docs/boot-contract.md,
 * "Known gap"): a known failure is reported loudly as XFAIL, and an
 * unexpected pass fails the test so the reason gets removed. */
const struct invariant invariants[_I_MAX] = {
	[I1] = { "I1 never boots an unverified slot", NULL },
	[I2] = { "I2 a verified bootable slot is reached within 2*max_tries+2 boots", NULL },
	[I3] = { "I3 the booted slot is never written", NULL },
	[I4] = { "I4 every event is at most one env store", NULL },
	[I5] = { "I5 status's next boot is what the next boot does", NULL },
	[I6] = { "I6 a slot in BOOT_ORDER or recorded verified reads as its signed image", NULL },
	[I7] = { "I7 never locked onto a failed slot while a verified one exists", NULL },
};

/* ---- measuring and checking ---- */

static uint64_t erases_of(uint64_t off, uint64_t len)
{
	uint64_t n = 0;

	for (uint64_t b = 0; b < len / CHUNK; b++) {
		struct nsim_block blk;
		if (nsim_get_block(ns, off / CHUNK + b, &blk) < 0)
			die("nsim_get_block");
		n += blk.erase_count;
	}
	return n;
}

void measure(struct measure *m)
{
	struct nsim_info info;

	file_read();
	m->env[0] = envcopy_of(0);
	m->env[1] = envcopy_of(1);
	m->active = env_active(m->env);
	for (int s = 0; s < N_SLOTS; s++) {
		const uint8_t *p = fbuf + NSIM_HEADER_SIZE + slot_off[s];

		m->slot_hash[s] = fnv(p, img_size, FNV0);
		m->slot_erases[s] = erases_of(slot_off[s], img_size);
		m->seal_hash[s] = fnv(p + img_size, slot_size - img_size, FNV0);
		m->seal_erases[s] = erases_of(slot_off[s] + img_size, slot_size - img_size);
	}
	if (nsim_get_info(ns, &info) < 0)
		die("nsim_get_info");
	m->mutations = info.cnt.mutations;
}

/* The first (shortest) violation of each invariant. */
bool violated[_I_MAX];
char *violation_trace[_I_MAX];
size_t violations[_I_MAX];

static char *trace_of(size_t node_idx, const char *last)
{
	size_t chain[64], n = 0;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = node_idx; i != 0 && n < 64; i = nodes[i].parent)
		chain[n++] = i;
	fprintf(f, "    provision (v1 into A, B empty)\n");
	while (n--)
		fprintf(f, "    -> %s\n", labels[nodes[chain[n]].label]);
	if (last)
		fprintf(f, "    -> %s\n", last);
	fclose(f);
	return out;
}

void violation(enum inv i, size_t from, const char *label, const char *fmt, ...)
{
	char what[512];
	char *t, *all;
	va_list ap;

	violations[i]++;
	if (violated[i])
		return;
	violated[i] = true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	t = trace_of(from, label);
	if (asprintf(&all, "%s\n%s    => %s\n", invariants[i].name, t, what) < 0)
		die("oom");
	free(t);
	violation_trace[i] = all;
}

/* The slot the next power-on boots: slot_boot_select, once more after a
 * counter reset; -1 = none. ret_st gets the state after. */
static int next_boot(const struct slot_env *st, struct slot_env *ret_st, int *ret_resets)
{
	struct slot_env cur = *st, n;
	struct slot_changes ch;

	*ret_resets = 0;
	for (int k = 0; k < 2; k++) {
		int i = slot_boot_select(&cur, &n, &ch);
		cur = n;
		if (i >= 0) {
			if (ret_st)
				*ret_st = cur;
			return i;
		}
		(*ret_resets)++;
	}
	if (ret_st)
		*ret_st = cur;
	return -1;
}

FILE *samples;
size_t n_samples;

/* Env state sample for the real-U-Boot agreement test: the slot variables
 * and what slot_boot_select does with them (one power-on). */
static void sample(const struct slot_env *st, struct env *e)
{
	static const char *const names[] = { "BOOT_ORDER", "BOOT_A_LEFT", "BOOT_B_LEFT" };
	struct slot_env n;
	struct slot_changes ch;
	int i;

	struct slot_env sealed = *st;

	if (!samples)
		return;
	slot_seal_load(board, G, &sealed);
	i = slot_boot_select(&sealed, &n, &ch);
	fprintf(samples, "state %zu", n_samples++);
	for (size_t k = 0; k < 3; k++) {
		char *v = env_get_dup(e, names[k]);
		fprintf(samples, " %s=%s%s%s", names[k], v ? "'" : "", v ? v : "-", v ? "'" : "");
		free(v);
	}
	fprintf(samples, " sealed=%s%s%s", sealed.slots[0].unsealed ? "" : "A",
		!sealed.slots[0].unsealed && !sealed.slots[1].unsealed ? "," : "",
		sealed.slots[1].unsealed ? (sealed.slots[0].unsealed ? "-" : "") : "B");
	fprintf(samples, " => %s A=%u B=%u\n", i >= 0 ? G->slots[i].name : "reset",
		n.slots[0].left, n.slots[1].left);
}

/* A slot I2 must reach: verified, bootable, not judged bad by the operator. */
static bool candidate(const struct node *n, int s)
{
	return n->sh.verified[s] && lbl_bootable(n->sh.lbl[s]) && !n->sh.judged_bad[s];
}

/* The label of the image a FLASHD_<x>_VERSION names; -1 = any signed one. */
static int version_label(struct env *e, int s)
{
	char var[64];
	_cleanup_free_ char *v = NULL;

	slot_version_var(G->slots[s].name, var, sizeof(var));
	v = env_get_dup(e, var);
	if (!v)
		return -1;
	return !strcmp(v, "1") ? LBL_V1 : !strcmp(v, "2") ? LBL_V2 : !strcmp(v, "3") ? LBL_DUD : -1;
}

/* I6: trust only what was read. A slot the boot script may reach (in a set
 * BOOT_ORDER) or the records call verified is READ from the simulator now
 * and compared with its signed image, whatever the shadow or the env say. */
static void check_read(const struct node *n, struct env *e, const struct slot_env *st,
		       size_t from, const char *label)
{
	for (int s = 0; s < N_SLOTS; s++) {
		const struct slot_vars *si = &st->slots[s];
		bool listed = st->order_set && si->order_pos >= 0;
		bool recorded = si->record == SLOT_RECORD_VERIFIED || si->record == SLOT_RECORD_GOOD;
		unsigned got;
		int want;
		char l[32];

		if ((!listed && !recorded) || n->sh.rotted[s])
			continue;
		got = lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[s], img_size);
		want = version_label(e, s);
		if (want < 0 ? got == LBL_V1 || got == LBL_V2 || got == LBL_DUD : got == (unsigned)want)
			continue;
		lbl_name(got, l, sizeof(l));
		violation(I6, from, label, "slot %s is %s but reads as %s, not its signed image",
			  G->slots[s].name, listed ? "in BOOT_ORDER" : "recorded verified", l);
	}
}

/* I7: a slot recorded bad (kept as the last resort, degraded) stays
 * behind every slot in BOOT_ORDER that holds a verified bootable image and
 * is recorded so: the board never boots the failed one first. */
static void check_bad_behind(const struct node *n, const struct slot_env *st, size_t from,
			     const char *label)
{
	for (size_t k = 0; st->order_set && k < st->n_order; k++) {
		size_t bad = st->order[k];

		if (st->slots[bad].record != SLOT_RECORD_BAD)
			continue;
		for (size_t j = k + 1; j < st->n_order; j++) {
			size_t s = st->order[j];
			enum slot_record rec = st->slots[s].record;

			if ((rec == SLOT_RECORD_VERIFIED || rec == SLOT_RECORD_GOOD) &&
			    candidate(n, (int)s) && !n->sh.rotted[s])
				violation(I7, from, label, "BOOT_ORDER boots slot %s, recorded bad, "
					  "ahead of slot %s, recorded %s and verified",
					  G->slots[bad].name, G->slots[s].name,
					  slot_record_to_string(rec));
		}
	}
}

/* I2, I5, I6 and I7 on the state now in the file. */
void check_state(const struct node *n, size_t from, const char *label, bool new_state)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st, cur;
	bool any_good = false, reached = false;
	int resets, nb;

	for (int s = 0; s < N_SLOTS; s++)
		any_good |= candidate(n, s);
	if (env_open_layout(L, target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &eerr) < 0)
		return;
	if (slot_state_now(e, &st) < 0)
		return;
	if (new_state && !env_is_blank(e) && n_samples < 400 && (n_keys % 7) == 0)
		sample(&st, e);
	if (!env_is_blank(e)) {
		check_read(n, e, &st, from, label);
		check_bad_behind(n, &st, from, label);
	}
	/* I2: boots with nothing else happening (every boot that does not reach
	 * a verified bootable slot is one the board resets from); the script
	 * reads the seals */
	cur = st;
	slot_seal_load(board, G, &cur);
	for (unsigned b = 0; b < 2 * max_tries + 2 && any_good && !reached; b++) {
		struct slot_env nx;
		struct slot_changes ch;
		int i = slot_boot_select(&cur, &nx, &ch);
		cur = nx;
		if (i >= 0 && candidate(n, i))
			reached = true;
	}
	if (any_good && !reached)
		violation(I2, from, label, "a verified bootable slot exists but %u boots never "
			  "reach one", 2 * max_tries + 2);
	/* I5: status on the running board */
	if (n->booted >= 0 && running(n) && !env_is_blank(e)) {
		struct slot_decision s;
		struct slot_env sealed = st;
		slot_decide(&st, n->booted, "flashd.slot", &s);
		slot_seal_load(board, G, &sealed);
		nb = next_boot(&sealed, NULL, &resets);
		if (s.next_boot != nb)
			violation(I5, from, label, "status says next boot %s, the next boot%s %s",
				  s.next_boot >= 0 ? G->slots[s.next_boot].name : "none",
				  resets ? " (after a counter reset)" : "",
				  nb >= 0 ? G->slots[nb].name : "boots nothing");
	}
}

/* The env records slot s bad (an operator's verdict still stands). */
bool recorded_bad(int s)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st;

	if (env_open_layout(L, target, NULL, 0, &e, &eerr) < 0 || slot_state_now(e, &st) < 0)
		return false;
	return st.slots[s].record == SLOT_RECORD_BAD;
}

/* How many boot-state changes (env stores) ev may make from -> to. */
unsigned allowed_stores(const struct event *ev, const struct node *from,
			       const struct node *to)
{
	/* unit 0 (in the start event) is the manifest: nothing stored yet */
	bool began = from->inf.bundle >= 0 && from->inf.steps <= 1;
	bool ended = to->inf.bundle < 0;

	/* a boot: U-Boot's saveenv, then the daemon's start-up store; a
	 * whole install: its begin and its activation (each one store, as the
	 * install steps check one by one) */
	if (ev->kind == EV_BOOT || ev->kind == EV_INSTALL_WHOLE)
		return 2;
	return ev->kind == EV_INSTALL_STEP && began && ended ? 2 : 1;
}
