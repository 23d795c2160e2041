/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl slot status|mark-good|mark-bad|activate|rollback|reset-counters
 * |init|bootscript: A/B state in the U-Boot env; each change is one env
 * write (slot.h). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bundle_reader.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "client.h"
#include "cmd_env.h"
#include "keyring.h"
#include "proto_slot.h"
#include "slot.h"
#include "board.h"
#include "slot_boot.h"
#include "slot_seal.h"
#include "slot_change.h"
#include "slot_verify.h"
#include "ubi_image.h"


struct slot_ctx {
	struct cli_env_args a;
	struct env *env;
	struct layout *layout;
	const struct layout_slot_group *group;
	struct slot_env st;
	int booted;
	const char *booted_by;
	const char *lock_as;  /* a write: take the board's lock (as this) first */
	struct oplock *lock;
	const char *bundle;   /* init --bundle: a signed bundle to read slots against */
};

static void slot_ctx_done(struct slot_ctx *s)
{
	env_close(s->env);
	oplock_release(s->lock);
	cli_env_args_done(&s->a);
	if (s->layout)
		layout_free(s->layout);
}

#define OPT_BUNDLE 0x1b0
static const struct option slot_opts[] = { CLI_ENV_OPTIONS,
	{ "bundle", required_argument, NULL, OPT_BUNDLE }, { NULL, 0, NULL, 0 } };

static int slot_parse(int argc, char **argv, struct slot_ctx *s)
{
	int c;

	while ((c = getopt_long(argc, argv, "f", slot_opts, NULL)) >= 0) {
		if (c == OPT_BUNDLE)
			s->bundle = optarg;
		else if (!cli_env_option(&s->a, c, optarg))
			return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* The env and the slot env, after slot_parse() filled s->a. */
static int slot_load(struct cli_ctx *ctx, struct slot_ctx *s)
{
	struct error err = {};
	int r;

	s->booted = -1;
	/* before reading: the state a write computes from must be current */
	if (s->lock_as && (r = cli_env_lock(ctx, &s->a, s->lock_as, &s->lock)))
		return r;
	r = cli_env_open(ctx, &s->a, 0, true, &s->env, &s->layout);
	if (r)
		return r;
	if (s->layout->n_groups < 1) {
		cli_error(ctx, "%s: no slot group", s->layout->path);
		return CLI_EXIT_INVALID;
	}
	s->group = &s->layout->groups[0];
	r = slot_env_load_group(&s->st, s->group, env_get_dup, s->env, &err);
	if (r < 0) {
		cli_error(ctx, "U-Boot env %s: %s", env_describe(s->env), err.msg);
		return CLI_EXIT_INVALID;
	}
	/* as flashd's status: a volume UBI says is not whole is interrupted */
	ubi_image_mark_unfinished(&s->st, s->group, FLASH_MTD_SYSFS, FLASH_UBI_SYSFS);
	/* the kernel command line flashd reads (flashd.conf cmdline=), as
	 * its SlotStatus does */
	r = slot_booted(&(const struct slot_boot_where){ .cmdline = s->a.cmdline ? s->a.cmdline :
							 s->a.conf->cmdline,
							 .target = s->a.target ? s->a.target :
									   s->a.conf->target },
			s->layout, s->group, &s->booted_by, &err);
	s->booted = r >= 0 ? r : -1;
	return CLI_EXIT_OK;
}

static const char *slot_name(const struct slot_ctx *s, int i)
{
	return i >= 0 ? s->st.slots[i].name : NULL;
}

/* The state offline, as flashd's SlotStatus gives it (one reply shape). */
static struct json_object *status_json(struct slot_ctx *s)
{
	return proto_slot_status(&s->st, s->group->name, env_describe(s->env), s->booted,
					s->booted_by, cli_install_running(&s->a));
}

static void print_slot_lines(struct json_object *j)
{
	struct json_object *slots, *v;
	int max = json_object_object_get_ex(j, "max_tries", &v) ? json_object_get_int(v) : 0;

	if (!json_object_object_get_ex(j, "slots", &slots))
		return;
	for (size_t i = 0; i < json_object_array_length(slots); i++) {
		struct json_object *o = json_object_array_get_idx(slots, i);
		const char *state = json_get_string(o, "state");
		int view = slot_state_from_string(state);

		printf("  %c %-8s %d/%d tries left, %s\n", json_get_bool(o, "booted") ? '*' : ' ', json_str(o, "name"),
		       json_object_object_get_ex(o, "tries_left", &v) ? json_object_get_int(v) : 0,
		       max, view >= 0 ? slot_state_describe(view) : state ? state : "?");
	}
}

/* j: SlotStatus's reply (taken); via: how a change was made ("offline"),
 * NULL for status. The same output whichever path made j. */
static int print_status(struct cli_ctx *ctx, struct json_object *j, const char *via)
{
	_cleanup_json_ struct json_object *own = j;
	const char *booted = json_get_string(j, "booted"), *by = json_get_string(j, "booted_by"), *next = json_get_string(j, "next_boot");

	if (ctx->json) {
		if (via)
			json_object_object_add(j, "via", json_object_new_string(via));
		cli_print_json(TAKE_PTR(own));
		return CLI_EXIT_OK;
	}
	cli_printable_json(j); /* the daemon's words, before the terminal sees them */
	printf("group:      %s (U-Boot env %s)\n", json_str(j, "group"), json_str(j, "env"));
	printf("BOOT_ORDER: %s%s\n", json_str(j, "boot_order"),
	       json_get_bool(j, "boot_order_set") ? "" : " (unset: boot script default)");
	printf("booted:     %s%s%s%s\n", booted ? booted : "unknown", by ? " (from " : "",
	       by ? by : "", by ? "=)" : "");
	printf("next boot:  %s%s\n", next ? next :
	       "none: BOOT_ORDER names no slot, the boot script resets forever",
	       json_get_bool(j, "next_after_reset") ? " (after U-Boot resets the counters and the board)" :
	       "");
	if (json_get_bool(j, "degraded"))
		printf("DEGRADED:   BOOT_ORDER keeps a slot marked bad: no other verified slot can "
		       "boot; install a new image\n");
	if (json_get_bool(j, "fell_back"))
		printf("warning:    fell back: the booted slot is not first in BOOT_ORDER\n");
	if (json_get_bool(j, "on_trial"))
		printf("trial:      the booted slot is not marked good yet\n");
	print_slot_lines(j);
	return CLI_EXIT_OK;
}

/* Through flashd when it runs (SlotStatus: every local user may read),
 * else from the env directly. */
static int slot_status_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_(slot_ctx_done) struct slot_ctx s = {};
	_cleanup_client_ struct client *client = NULL;
	_cleanup_json_ struct json_object *res = NULL;
	int r = slot_parse(argc, argv, &s);

	if (r)
		return r;
	r = cli_env_daemon(ctx, &s.a, &client);
	if (r < 0)
		return cli_exit_code(NULL, r);
	if (r) {
		r = cli_env_daemon_call(ctx, client, "io.flashd.SlotStatus", NULL, "slot status",
					&res);
		return r ? r : print_status(ctx, TAKE_PTR(res), NULL);
	}
	r = slot_load(ctx, &s);
	return r ? r : print_status(ctx, status_json(&s), NULL);
}

/* The daemon's method for an operation, and what it takes: the slot
 * (Activate), an optional slot (MarkBad, MarkGood; Rollback: the slot to
 * go back from). The other operations (init, reset-counters) and --force
 * have no method: they are made offline, under the board's lock (refused
 * while flashd installs). */
static const struct {
	enum slot_op op;
	const char *method;
	bool slot_param;   /* the operand is passed as "slot" */
	bool operand_ok;   /* a named operand (not "booted") can be sent */
} daemon_ops[] = {
	{ SLOT_OP_ACTIVATE, "io.flashd.Activate", true, true },
	{ SLOT_OP_MARK_BAD, "io.flashd.MarkBad", true, true },
	{ SLOT_OP_MARK_GOOD, "io.flashd.MarkGood", true, true },
	{ SLOT_OP_ROLLBACK, "io.flashd.Rollback", true, true },
};

/* 1 when the daemon can do op on operand (NULL or "booted": the default slot) */
static int daemon_op(enum slot_op op, const char *operand, bool force)
{
	bool named = operand && strcmp(operand, "booted");

	for (size_t i = 0; i < ELEMENTSOF(daemon_ops); i++)
		if (daemon_ops[i].op == op)
			return !force && (!named || daemon_ops[i].operand_ok) ? (int)i : -1;
	return -1;
}

/* The operation through flashd: its busy check and authorization apply. */
static int run_op_daemon(struct cli_ctx *ctx, struct client *c, int i, const char *operand)
{
	_cleanup_json_ struct json_object *params = json_object_new_object();
	_cleanup_json_ struct json_object *res = NULL;
	const char *op = slot_op_to_string(daemon_ops[i].op), *slot = NULL;
	struct json_object *v;
	char what[64];
	int r;

	if (daemon_ops[i].slot_param && operand && strcmp(operand, "booted"))
		json_object_object_add(params, "slot", json_object_new_string(operand));
	snprintf(what, sizeof(what), "slot %s", op);
	r = cli_env_daemon_call(ctx, c, daemon_ops[i].method, params, what, &res);
	if (r)
		return r;
	if (json_object_object_get_ex(res, "slot", &v))
		slot = json_object_get_string(v);
	else if (daemon_ops[i].slot_param)
		slot = operand;
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "via", json_object_new_string("daemon"));
		json_object_object_add(j, "operation", json_object_new_string(op));
		json_object_object_add(j, "slot", json_string_or_null(slot));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("%s%s%s: done by flashd (one env store; 'flashctl status' shows the "
		       "state)\n", op, slot ? " " : "", slot ? slot : "");
	}
	return CLI_EXIT_OK;
}

/* The board the slots are read on: named on the command line, else flashd.conf's. */
static const char *slot_target(const struct slot_ctx *s)
{
	return s->a.target ? s->a.target : s->a.conf->target;
}

/* Slot i read against its recorded signed index (slot_verify.h): 1 read
 * and equal, 0 not (err says why). */
static int read_slot(struct slot_ctx *s, size_t i, struct error *err)
{
	return slot_verify_read(s->layout, slot_target(s), s->group, i, s->a.conf->state_dir,
				&s->st, err) > 0;
}

/* --bundle: read whole (signature, index, every image hash) with the
 * keyring of flashd.conf, for the board of the layout. */
static int init_bundle(struct cli_ctx *ctx, struct slot_ctx *s, struct bundle_reader **ret)
{
	_cleanup_keyring_ struct keyring *ring = NULL;
	_cleanup_close_ int fd = -1;
	struct bundle_policy pol = { .compatible = s->layout->compatible };
	struct error err = {};
	int r;

	if (keyring_load_dir(s->a.conf->keyring, &ring, &err) < 0) {
		cli_error(ctx, "slot init: %s", err.msg);
		return CLI_EXIT_INVALID;
	}
	pol.keyring = ring;
	fd = open(s->bundle, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_error(ctx, "slot init: %s: %s", s->bundle, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (bundle_reader_new(&pol, NULL, NULL, ret) < 0)
		return CLI_EXIT_FAIL;
	r = bundle_reader_read_fd(*ret, fd, &err);
	if (r < 0) {
		cli_error(ctx, "slot init: %s: refused: %s", s->bundle, err.msg);
		return CLI_EXIT_INVALID;
	}
	return CLI_EXIT_OK;
}

/* Slot i read against the bundle's signed index, if one was given. */
static bool read_slot_bundle(struct slot_ctx *s, const struct bundle_reader *br, size_t i,
			     struct error *err)
{
	return br && slot_verify_index(s->layout, slot_target(s), s->group, i, bundle_reader_manifest(br),
				       bundle_reader_index(br), err) > 0;
}

/* init: the flags saying which slots were read (or run); each other one
 * is said, on stderr, with why it is left unknown. */
static unsigned init_reads(struct cli_ctx *ctx, struct slot_ctx *s, const struct bundle_reader *br)
{
	unsigned flags = SLOT_INIT_READ;

	for (size_t i = 0; i < s->st.n_slots; i++) {
		struct error err = {};

		if ((int)i == s->booted)
			flags |= SLOT_RUNNING(i);
		else if (read_slot(s, i, &err) || read_slot_bundle(s, br, i, &err))
			flags |= SLOT_READ_OK(i);
		else if (!ctx->quiet)
			fprintf(stderr, "flashctl: slot init: slot %s is not bootable until an install "
				"verifies it (recorded unknown, out of BOOT_ORDER): %s\n",
				slot_name(s, (int)i), error_message(&err));
	}
	return flags;
}

/* One operation: through flashd when it runs (and has a method for it),
 * else offline: resolve the slot operand, compute, write once, show. */
static int run_op(struct cli_ctx *ctx, int argc, char **argv, enum slot_op op)
{
	char what[64];
	_cleanup_(slot_ctx_done) struct slot_ctx s = { .lock_as = what };
	_cleanup_client_ struct client *client = NULL;
	_cleanup_bundle_reader_ struct bundle_reader *br = NULL;
	struct slot_change_result res;
	struct error err = { 0 };
	unsigned flags;
	int slot = -1, r, i;

	snprintf(what, sizeof(what), "flashctl slot %s", slot_op_to_string(op));
	r = slot_parse(argc, argv, &s);
	if (r)
		return r;
	if (s.bundle && op != SLOT_OP_INIT) {
		cli_error(ctx, "%s: --bundle is for slot init", slot_op_to_string(op));
		return CLI_EXIT_USAGE;
	}
	/* these act on every slot: a slot named would be ignored */
	if ((op == SLOT_OP_RESET_COUNTERS || op == SLOT_OP_INIT) && optind < argc) {
		cli_error(ctx, "%s takes no slot ('%s')", slot_op_to_string(op), argv[optind]);
		return CLI_EXIT_USAGE;
	}
	i = daemon_op(op, optind < argc ? argv[optind] : NULL, s.a.force);
	r = i >= 0 ? cli_env_daemon(ctx, &s.a, &client) : 0;
	if (r < 0)
		return cli_exit_code(NULL, r);
	if (r)
		return run_op_daemon(ctx, client, i, optind < argc ? argv[optind] : NULL);
	r = slot_load(ctx, &s);
	if (r)
		return r;
	if (optind < argc) {
		if (!strcmp(argv[optind], "booted"))
			slot = s.booted;
		else if ((slot = slot_find(&s.st, argv[optind])) < 0)
			return cli_refused(ctx, PROTO_ERROR_NO_SUCH_SLOT, "%s: no slot '%s' in "
					   "group %s", slot_op_to_string(op), argv[optind],
					   s.group->name);
	} else if (op == SLOT_OP_MARK_GOOD || op == SLOT_OP_MARK_BAD) {
		slot = s.booted; /* RAUC's default: the booted slot */
	} /* rollback: from the primary (what boots next), as the daemon's Rollback */
	if (slot < 0 && op != SLOT_OP_ROLLBACK && op != SLOT_OP_RESET_COUNTERS &&
	    op != SLOT_OP_INIT) {
		return cli_refused(ctx, PROTO_ERROR_NO_SUCH_SLOT, "%s: the booted slot is unknown "
				   "(kernel command line has no flashd.slot=); name the slot",
				   slot_op_to_string(op));
	}
	flags = s.a.force ? SLOT_FORCE : 0;
	if (s.bundle && (r = init_bundle(ctx, &s, &br)))
		return r;
	if (op == SLOT_OP_INIT)
		flags |= init_reads(ctx, &s, br);
	/* activate or mark-good of a slot that is not running, rollback onto
	 * one: read first (slot_verify_change); a fallback not recorded yet
	 * (no daemon ran) joins this store */
	r = slot_verify_change(s.env, s.layout, slot_target(&s), s.group, s.a.conf->state_dir, &(struct slot_change) {
			.op = op, .slot = slot, .booted = s.booted, .flags = flags }, &res, &err);
	if (r < 0 && res.fail == SLOT_CHANGE_ENV) {
		cli_error(ctx, "%s", error_message(&err));
		return cli_exit_code(NULL, r);
	}
	/* the daemon's error for the same refusal (ForceRequired: --force
	 * would pass), and so its exit code */
	if (r < 0)
		return cli_refused(ctx, proto_slot_error(res.fail, res.forcible), "%s",
				   error_message(&err));
	s.st = res.after;
	if (ctx->quiet)
		return CLI_EXIT_OK;
	if (!ctx->json)
		printf("%s%s%s: %zu variable(s) written in one env store (offline: %s)\n",
		       slot_op_to_string(op), slot >= 0 ? " " : "", slot >= 0 ? slot_name(&s, slot) : "",
		       res.n_written, s.a.force ? "a forced change is made offline" :
		       i < 0 ? "flashd has no method for this" :
		       cli_env_names_board(&s.a) ? "the board is named on the command line" :
		       "no flashd answers");
	return print_status(ctx, status_json(&s), "offline");
}

/* The commands named as their slot_op (mark-good, activate, ...). */
static int slot_op_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	int op = slot_op_from_string(argv[0]);

	assert(op >= 0);
	return run_op(ctx, argc, argv, op);
}

static const struct option boot_select_opts[] = {
	CLI_ENV_OPTIONS, { "sealed", required_argument, NULL, 'S' }, { NULL, 0, NULL, 0 }
};

/* The seals the script reads, for a sealed group (slot_seal.h): --sealed
 * names them ("-" none), else the board's flash. */
static int boot_select_seals(struct cli_ctx *ctx, struct slot_ctx *s, const char *list)
{
	_cleanup_board_ struct board *b = NULL;
	_cleanup_free_ char *copy = NULL;
	bool sealed[SLOT_MAX] = { false };
	const char *target = s->a.target ? s->a.target : s->a.conf ? s->a.conf->target : NULL;
	char *save = NULL;

	if (!s->group->seal)
		return CLI_EXIT_OK;
	if (!list) {
		if (!target || board_open(s->layout, target, false, &b) < 0) {
			cli_error(ctx, "slot group %s is sealed: name the sealed slots (--sealed) or "
				  "a board to read the seals from (--target)", s->group->name);
			return CLI_EXIT_USAGE;
		}
		slot_seal_load(b, s->group, &s->st);
		return CLI_EXIT_OK;
	}
	copy = strdup(list);
	if (!copy)
		return CLI_EXIT_FAIL;
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		int i = slot_find(&s->st, t);
		if (i < 0 && strcmp(t, "-")) {
			cli_error(ctx, "--sealed: '%s' is not a slot of group %s", t, s->group->name);
			return CLI_EXIT_USAGE;
		}
		if (i >= 0)
			sealed[i] = true;
	}
	slot_env_seal(&s->st, sealed);
	return CLI_EXIT_OK;
}

/* What U-Boot does at power-on, for simulated boards: choose, decrement,
 * save once; prints the kernel argument the script would pass. */
static int slot_boot_select_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_(slot_ctx_done) struct slot_ctx s = { .lock_as = "flashctl slot boot-select" };
	const char *sealed = NULL;
	struct slot_env n;
	struct slot_changes c;
	struct error eerr = {};
	int i, r;

	while ((r = getopt_long(argc, argv, "f", boot_select_opts, NULL)) >= 0) {
		if (r == 'S')
			sealed = optarg;
		else if (!cli_env_option(&s.a, r, optarg))
			return CLI_EXIT_USAGE;
	}
	r = slot_load(ctx, &s);
	if (!r)
		r = boot_select_seals(ctx, &s, sealed);
	if (r)
		return r;
	i = slot_boot_select(&s.st, &n, &c);
	r = slot_apply(s.env, &c, &eerr);
	if (r < 0) {
		cli_error(ctx, "%s", eerr.msg);
		return CLI_EXIT_FAIL;
	}
	if (i == -ELOOP) {
		cli_error(ctx, "BOOT_ORDER names no slot of group %s: the boot script finds "
			  "nothing to boot and resets forever (nothing written)", s.group->name);
		return CLI_EXIT_FAIL;
	}
	if (i < 0) {
		cli_error(ctx, "no slot has tries left: the boot script gave the slots of "
			  "BOOT_ORDER their tries back (%zu variable(s) saved) and resets the board; "
			  "run boot-select again", c.n);
		return CLI_EXIT_FAIL;
	}
	if (ctx->json) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "slot", json_object_new_string(slot_name(&s, i)));
		json_object_object_add(o, "tries_left", json_object_new_int(n.slots[i].left));
		char arg[64];
		snprintf(arg, sizeof(arg), "flashd.slot=%s", slot_name(&s, i));
		json_object_object_add(o, "cmdline", json_object_new_string(arg));
		cli_print_json(o);
	} else {
		printf("flashd.slot=%s\n", slot_name(&s, i));
	}
	return CLI_EXIT_OK;
}

/* --json: {"layout": FILE, "script": TEXT} */
static int bootscript_json(const struct layout *l)
{
	_cleanup_free_ char *buf = NULL;
	struct json_object *j;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return -errno;
	r = slot_bootscript(l, f);
	if (fclose(f) != 0 && r >= 0)
		r = -errno;
	if (r < 0)
		return r;
	j = json_object_new_object();
	json_object_object_add(j, "layout", json_object_new_string(l->path));
	json_object_object_add(j, "script", json_object_new_string_len(buf, len));
	cli_print_json(j);
	return 0;
}

static int slot_bootscript_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_cli_env_args_ struct cli_env_args a = {};
	_cleanup_layout_ struct layout *l = NULL;
	struct error err = {};
	int c, r;

	while ((c = getopt_long(argc, argv, "f", slot_opts, NULL)) >= 0)
		if (!cli_env_option(&a, c, optarg))
			return CLI_EXIT_USAGE;
	if (!a.layout) {
		cli_error(ctx, "slot bootscript: give --layout FILE");
		return CLI_EXIT_USAGE;
	}
	r = layout_load(a.layout, &l, &err);
	if (r < 0) {
		cli_error(ctx, "%s", err.msg);
		return CLI_EXIT_INVALID;
	}
	r = ctx->json ? bootscript_json(l) : slot_bootscript(l, stdout);
	if (r < 0) {
		cli_error(ctx, "%s: cannot make a boot script: %s", a.layout, strerror(-r));
		return CLI_EXIT_INVALID;
	}
	return CLI_EXIT_OK;
}

#define SLOT_USAGE "[SLOT|booted] [--force] [--cmdline FILE] " CLI_ENV_USAGE
#define SLOT_ALL_USAGE "[--force] [--cmdline FILE] " CLI_ENV_USAGE /* no operand */

const struct cli_cmd cli_slot_cmds[] = {
	{ "status", "[--cmdline FILE] " CLI_ENV_USAGE,
	  "booted slot, BOOT_ORDER, tries left, trial and fallback state", slot_status_cmd, NULL },
	{ "mark-good", SLOT_USAGE, "full tries for SLOT (default: the booted one)",
	  slot_op_cmd, NULL },
	{ "mark-bad", SLOT_USAGE, "take SLOT (default: booted) out of BOOT_ORDER, 0 tries",
	  slot_op_cmd, NULL },
	{ "activate", SLOT_USAGE, "make SLOT primary with full tries", slot_op_cmd, NULL },
	{ "rollback", SLOT_USAGE, "make the next verified slot primary (from SLOT, default: "
	  "the primary); fails when nothing changes", slot_op_cmd, NULL },
	{ "reset-counters", SLOT_ALL_USAGE, "full tries for every slot in BOOT_ORDER", slot_op_cmd,
	  NULL },
	{ "init", "[--bundle FILE] " SLOT_ALL_USAGE, "after an env loss: BOOT_ORDER = the running "
	  "slot and the slots read against their signed index (recorded, or FILE's)",
	  slot_op_cmd, NULL },
	{ "boot-select", "[--cmdline FILE] [--sealed SLOT,...] " CLI_ENV_USAGE,
	  "do what the boot script does at power-on (pick, decrement, save); for simulated boards",
	  slot_boot_select_cmd, NULL },
	{ "bootscript", "--layout FILE", "print the U-Boot boot script for a layout",
	  slot_bootscript_cmd, NULL },
	{ NULL },
};
