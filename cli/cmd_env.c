/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl env get|set|list|init: the U-Boot environment through
 * libubootenv. set refuses flashd's variables (BOOT_ORDER, BOOT_x_LEFT,
 * FLASHD_*) but to root with --force: use 'flashctl slot' so the state is
 * changed whole. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cleanup_json.h"
#include "client.h"
#include "cmd_env.h"
#include "conf.h"
#include "proto.h"
#include "slot.h"
#include "slot_change.h"
#include "util.h"

bool cli_env_option(struct cli_env_args *a, int c, const char *arg)
{
	switch (c) {
	case 0x100: a->config = arg; return true;
	case 0x101: a->layout = arg; return true;
	case 0x102: a->target = arg; return true;
	case 0x103: a->env_config = arg; return true;
	case 0x104: a->sysfs = arg; return true;
	case 0x105: a->cmdline = arg; return true;
	case 0x106: a->offline = true; return true;
	case 'f': a->force = true; return true;
	}
	return false;
}

void cli_env_args_done(struct cli_env_args *a)
{
	conf_free(a->conf);
	a->conf = NULL;
}

/* a->conf, loaded on the first call: the --config file (it must exist)
 * or the default one (may be missing). Returns the load's result; a->conf
 * has the defaults when it failed. */
static int env_conf(struct cli_env_args *a)
{
	int r;

	if (a->conf)
		return a->conf_r;
	r = conf_new(&a->conf);
	if (r < 0)
		return r;
	a->conf_r = conf_load(a->conf, a->config ? a->config : CONF_DEFAULT_PATH, !a->config,
			      &a->conf_err);
	if (a->conf_r < 0) {
		/* the users that go on without it take the defaults */
		conf_free(a->conf);
		a->conf = NULL;
		r = conf_new(&a->conf);
		if (r < 0)
			return r;
	}
	return a->conf_r;
}

int cli_env_open(struct cli_ctx *ctx, struct cli_env_args *a, unsigned flags, bool need_layout,
		 struct env **ret_env, struct layout **ret_layout)
{
	_cleanup_layout_ struct layout *l = NULL;
	struct error eerr = {};
	const char *layout, *target;
	int r;

	r = env_conf(a);
	if (r < 0) {
		if (!a->conf)
			return CLI_EXIT_FAIL;
		cli_error(ctx, "%s", a->conf_err.msg);
		return CLI_EXIT_INVALID;
	}
	layout = a->layout ? a->layout : a->conf->layout;
	target = a->target ? a->target : a->conf->target;
	/* env commands need a layout only to find the env: not with
	 * --env-config, and a configured default that is absent means
	 * /etc/fw_env.config */
	if (!need_layout && (a->env_config || (!a->layout && layout && access(layout, F_OK) < 0)))
		layout = NULL;
	if (layout) {
		struct error lerr = {};
		r = layout_load(layout, &l, &lerr);
		if (r < 0) {
			cli_error(ctx, "%s", lerr.msg);
			return CLI_EXIT_INVALID;
		}
	} else if (need_layout) {
		cli_error(ctx, "no layout: give --layout FILE or set layout= in %s",
			  a->config ? a->config : CONF_DEFAULT_PATH);
		return CLI_EXIT_USAGE;
	}
	if (a->env_config || !l || l->env.n_copies == 0)
		r = env_open_config(a->env_config, flags, ret_env, &eerr);
	else
		r = env_open_layout(l, target, a->sysfs, flags, ret_env, &eerr);
	if (r < 0) {
		cli_error(ctx, "%s", eerr.msg);
		return cli_exit_code(NULL, r);
	}
	if (ret_layout)
		*ret_layout = TAKE_PTR(l);
	return CLI_EXIT_OK;
}

bool cli_env_names_board(const struct cli_env_args *a)
{
	return a->offline || a->layout || a->target || a->env_config || a->sysfs || a->cmdline;
}

int cli_env_daemon(struct cli_ctx *ctx, struct cli_env_args *a, struct client **ret)
{
	const char *env = getenv("FLASHD_SOCKET"), *sock;
	int r;

	if (cli_env_names_board(a))
		return 0;
	/* a broken flashd.conf is reported by cli_env_open() offline */
	env_conf(a);
	if (!a->conf)
		return 0;
	sock = env && *env ? env : a->conf->socket;
	r = client_connect(sock, ret);
	if (r >= 0)
		return 1;
	/* offline only when no daemon is there to answer: a daemon that
	 * refuses the connection (no rights) is not worked around */
	if (r != -ECONNREFUSED && r != -ENOENT) {
		cli_error(ctx, "cannot reach flashd at %s: %s (--offline works on the env "
			  "directly)", sock, strerror(-r));
		return r;
	}
	if (!ctx->quiet)
		cli_error(ctx, "no daemon at %s: working offline", sock);
	return 0;
}

int cli_env_daemon_call(struct cli_ctx *ctx, struct client *c, const char *method,
			struct json_object *params, const char *what, struct json_object **ret)
{
	char msg[128];
	int r = client_call_simple(c, method, params, ret);

	if (r >= 0)
		return CLI_EXIT_OK;
	snprintf(msg, sizeof(msg), "%s (through flashd)", what);
	return cli_call_failed(ctx, c, r, msg);
}

/* Take target's board lock without waiting (oplock_acquire). */
static int lock_target(struct cli_env_args *a, const char *what, struct oplock **ret,
		       struct oplock_holder *h, char **ret_target)
{
	/* a broken flashd.conf is reported by cli_env_open() */
	env_conf(a);
	if (!a->conf)
		return -ENOMEM;
	*ret_target = strdup(a->target ? a->target : a->conf->target);
	if (!*ret_target)
		return -ENOMEM;
	return oplock_acquire(*ret_target, what, ret, h);
}

bool cli_install_running(struct cli_env_args *a)
{
	struct oplock_holder h = { 0 };
	int r;

	if (a->env_config)
		return true;
	/* a broken flashd.conf is reported by cli_env_open() */
	env_conf(a);
	if (!a->conf)
		return true;
	/* the install worker holds the lock for the whole install (looked
	 * at, not taken: a reader must not make the daemon's Install busy);
	 * without rights to look, say what the record says */
	r = oplock_probe(a->target ? a->target : a->conf->target, &h);
	return r > 0 ? strstr(h.what, "install") || strstr(h.what, "provision") : r < 0;
}

int cli_env_lock(struct cli_ctx *ctx, struct cli_env_args *a, const char *what,
		 struct oplock **ret)
{
	_cleanup_free_ char *target = NULL;
	struct oplock_holder h;
	char who[96];
	int r;

	if (a->env_config)
		return CLI_EXIT_OK;
	r = lock_target(a, what, ret, &h, &target);
	if (r == -ENOMEM)
		return CLI_EXIT_FAIL;
	if (!strncmp(what, "flashctl ", 9))
		what += 9; /* cli_error() says flashctl already */
	if (r == -EBUSY) {
		cli_error(ctx, "%s: %s holds the lock of %s: flashd is installing (or another "
			  "writer is at work); nothing was written, try again when it has ended",
			  what, oplock_holder_describe(&h, who, sizeof(who)), target);
		return CLI_EXIT_DENIED;
	}
	if (r < 0) {
		cli_error(ctx, "%s: cannot take the lock of %s: %s", what, target, strerror(-r));
		return r == -EACCES || r == -EPERM ? CLI_EXIT_DENIED : CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

static const struct option env_opts[] = { CLI_ENV_OPTIONS, { NULL, 0, NULL, 0 } };

/* Parse the shared options; argv[optind..] are the operands. */
static int parse(struct cli_ctx *ctx, int argc, char **argv, struct cli_env_args *a)
{
	int c;

	while ((c = getopt_long(argc, argv, "f", env_opts, NULL)) >= 0)
		if (!cli_env_option(a, c, optarg))
			return CLI_EXIT_USAGE;
	return CLI_EXIT_OK;
}

/* NAME's value through flashd (GetEnv): 0 and *ret (NULL: not set), or
 * the exit code of the failed call. */
/* NAME=value (or the value alone) on stdout. On a terminal, escaped
 * (util_printable): a value anyone with SetEnv rights wrote must not drive
 * the operator's terminal; into a pipe, byte for byte, as fw_printenv. */
static void print_var(const char *name, const char *value, bool no_name)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = strlen(value) * 4 + 1;

	if (isatty(STDOUT_FILENO) && (buf = malloc(len)))
		value = util_printable(value, buf, len);
	if (no_name)
		printf("%s\n", value);
	else
		printf("%s=%s\n", name, value);
}

static int env_get_daemon(struct cli_ctx *ctx, struct client *c, const char *name, char **ret)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	_cleanup_json_ struct json_object *res = NULL;
	struct json_object *v;
	int r;

	json_object_object_add(p, "name", json_object_new_string(name));
	r = cli_env_daemon_call(ctx, c, "io.flashd.GetEnv", p, "env get", &res);
	if (r)
		return r;
	*ret = json_object_object_get_ex(res, "value", &v) && v ?
	       strdup(json_object_get_string(v)) : NULL;
	return CLI_EXIT_OK;
}

/* get [-n] NAME...: "NAME=value" lines as fw_printenv prints them; -n
 * (--no-name) the value alone, as fw_printenv -n. Through flashd when it
 * runs (GetEnv: every local user may read), else the env directly. */
static int env_get_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { CLI_ENV_OPTIONS,
		{ "no-name", no_argument, NULL, 'n' }, { NULL, 0, NULL, 0 } };
	_cleanup_cli_env_args_ struct cli_env_args a = {};
	_cleanup_client_ struct client *client = NULL;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *j = NULL;
	bool no_name = false;
	int c, r, ret = CLI_EXIT_OK;

	while ((c = getopt_long(argc, argv, "fn", opts, NULL)) >= 0) {
		if (c == 'n')
			no_name = true;
		else if (!cli_env_option(&a, c, optarg))
			return CLI_EXIT_USAGE;
	}
	if (optind >= argc) {
		cli_error(ctx, "env get: give one or more variable names");
		return CLI_EXIT_USAGE;
	}
	r = cli_env_daemon(ctx, &a, &client);
	if (r < 0)
		return cli_exit_code(NULL, r);
	if (!r && (r = cli_env_open(ctx, &a, 0, false, &e, NULL)))
		return r;
	j = json_object_new_object();
	for (int i = optind; i < argc; i++) {
		_cleanup_free_ char *v = NULL;

		if (client && (r = env_get_daemon(ctx, client, argv[i], &v)))
			return r;
		if (!client)
			env_get(e, argv[i], &v);
		if (!v) {
			cli_error(ctx, "%s: not set in the U-Boot env%s%s", argv[i], e ? " " : "",
				  e ? env_describe(e) : "");
			json_object_object_add(j, argv[i], NULL);
			ret = CLI_EXIT_FAIL;
			continue;
		}
		if (!ctx->json)
			print_var(argv[i], v, no_name);
		json_object_object_add(j, argv[i], json_object_new_string(v));
	}
	if (ctx->json)
		cli_print_json(TAKE_PTR(j));
	return ret;
}

/* list through flashd (ListEnv): {"via": "daemon", "variables": {...}} */
static int env_list_daemon(struct cli_ctx *ctx, struct client *c)
{
	_cleanup_json_ struct json_object *res = NULL;
	struct json_object *vars;
	int r = cli_env_daemon_call(ctx, c, "io.flashd.ListEnv", NULL, "env list", &res);

	if (r)
		return r;
	if (ctx->json) {
		json_object_object_add(res, "via", json_object_new_string("daemon"));
		cli_print_json(TAKE_PTR(res));
		return CLI_EXIT_OK;
	}
	if (json_object_object_get_ex(res, "variables", &vars) && vars) {
		json_object_object_foreach(vars, name, value)
			print_var(name, json_object_get_string(value), false);
	}
	return CLI_EXIT_OK;
}

static int env_list_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_cli_env_args_ struct cli_env_args a = {};
	_cleanup_client_ struct client *client = NULL;
	_cleanup_env_ struct env *e = NULL;
	struct json_object *j, *vars;
	const char *name, *value;
	void *it = NULL;
	int r = parse(ctx, argc, argv, &a);

	if (r)
		return r;
	r = cli_env_daemon(ctx, &a, &client);
	if (r < 0)
		return cli_exit_code(NULL, r);
	if (r)
		return env_list_daemon(ctx, client);
	r = cli_env_open(ctx, &a, 0, false, &e, NULL);
	if (r)
		return r;
	j = json_object_new_object();
	vars = json_object_new_object();
	json_object_object_add(j, "via", json_object_new_string("offline"));
	json_object_object_add(j, "device", json_object_new_string(env_describe(e)));
	json_object_object_add(j, "redundant", json_object_new_boolean(env_is_redundant(e)));
	json_object_object_add(j, "variables", vars);
	while (env_next(e, &it, &name, &value) > 0) {
		if (!ctx->json)
			print_var(name, value, false);
		json_object_object_add(vars, name, json_object_new_string(value));
	}
	if (ctx->json)
		cli_print_json(j);
	else
		json_object_put(j);
	return CLI_EXIT_OK;
}

/* "NAME=VALUE" or "NAME VALUE": one variable */
static bool one_assignment(int n, char **args)
{
	return (n == 1 && strchr(args[0], '=')) || (n == 2 && !strchr(args[0], '='));
}

/* env set of one variable through flashd (SetEnv): its busy check, its
 * authorization and its own refusals (EnvRefused) apply. */
static int env_set_daemon(struct cli_ctx *ctx, struct client *c, const struct cli_env_args *a,
			  int n, char **args)
{
	_cleanup_json_ struct json_object *p = json_object_new_object();
	_cleanup_json_ struct json_object *res = NULL;
	_cleanup_free_ char *name = strdup(args[0]);
	char *eq = name ? strchr(name, '=') : NULL;
	const char *value = n == 2 ? args[1] : eq + 1;
	int r;

	if (!name)
		return CLI_EXIT_FAIL;
	if (eq)
		*eq = '\0';
	json_object_object_add(p, "name", json_object_new_string(name));
	json_object_object_add(p, "value", *value ? json_object_new_string(value) : NULL);
	if (a->force)
		json_object_object_add(p, "force", json_object_new_boolean(true));
	r = cli_env_daemon_call(ctx, c, "io.flashd.SetEnv", p, "env set", &res);
	if (r)
		return r;
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "via", json_object_new_string("daemon"));
		json_object_object_add(j, "written", json_object_new_int64(1));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("1 variable(s) written by flashd\n");
	}
	return CLI_EXIT_OK;
}

/* A raw write of flashd's own variables offline: root with --force only,
 * said loudly (docs/security.md, "Who writes the env"). */
static int check_flashd_var(struct cli_ctx *ctx, const struct cli_env_args *a, const char *name)
{
	if (!slot_env_is_flashd_var(name))
		return CLI_EXIT_OK;
	if (!a->force)
		return cli_refused(ctx, PROTO_ERROR_FORCE_REQUIRED, "env set: %s is managed by "
				   "flashd (slot env, install record); use 'flashctl slot "
				   "activate|mark-good|mark-bad|rollback' (root: --force)", name);
	if (geteuid() != 0)
		return cli_refused(ctx, PROTO_ERROR_DENIED, "env set: %s: flashd's records and the "
				   "boot selection are written only by flashd's own operations; a "
				   "raw write needs root", name);
	fprintf(stderr, "flashctl: WARNING: writing %s by hand: flashd's records and the boot "
		"selection no longer say what flashd verified; the board may boot what this "
		"write says\n", name);
	return CLI_EXIT_OK;
}

/* Collect the assignments of argv[optind..] into vars (at most max). */
static int parse_assignments(struct cli_ctx *ctx, const struct cli_env_args *a,
			     const struct layout_slot_group *group, int argc, char **argv,
			     struct env_var *vars, size_t max, size_t *ret_n)
{
	bool pair = argc - optind == 2 && !strchr(argv[optind], '=');
	struct error serr = {};
	size_t n = 0;
	int r;

	for (int i = optind; i < argc; i += pair ? 2 : 1) {
		char *eq = strchr(argv[i], '=');
		const char *value = pair ? argv[i + 1] : eq ? eq + 1 : NULL;

		if ((!pair && !eq) || n == max) {
			cli_error(ctx, "env set: '%s': expected NAME=VALUE (at most %zu)", argv[i],
				  max);
			return CLI_EXIT_USAGE;
		}
		if (eq)
			*eq = '\0';
		if (value && !*value)
			value = NULL;
		if (!env_name_valid(argv[i])) {
			cli_error(ctx, "env set: '%s' is not a valid variable name", argv[i]);
			return CLI_EXIT_USAGE;
		}
		r = check_flashd_var(ctx, a, argv[i]);
		if (r)
			return r;
		/* forced or not, never a value the boot script reads otherwise */
		if (slot_env_var_check(group, argv[i], value, &serr) < 0)
			return cli_refused(ctx, PROTO_ERROR_ENV_REFUSED, "env set: %s", serr.msg);
		vars[n++] = (struct env_var){ argv[i], value };
	}
	*ret_n = n;
	return CLI_EXIT_OK;
}

/* BOOT_ORDER keeps to slots recorded verified (slot_change_check_raw). */
static int check_order(struct cli_ctx *ctx, struct env *e, const struct layout_slot_group *group,
		       const struct env_var *vars, size_t n)
{
	struct error err = {};
	bool flashd = false;

	for (size_t i = 0; i < n; i++)
		flashd |= slot_env_is_flashd_var(vars[i].name);
	if (!group || !flashd || slot_change_check_raw(e, group, vars, n, &err) >= 0)
		return CLI_EXIT_OK;
	return cli_refused(ctx, PROTO_ERROR_ENV_REFUSED, "env set: %s; nothing was written",
			   err.msg);
}

static int print_set(struct cli_ctx *ctx, struct env *e, size_t n)
{
	if (ctx->json) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "via", json_object_new_string("offline"));
		json_object_object_add(j, "written", json_object_new_int64(n));
		json_object_object_add(j, "env", json_object_new_string(env_describe(e)));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("%zu variable(s) written to %s (offline)\n", n, env_describe(e));
	}
	return CLI_EXIT_OK;
}

/* set NAME=VALUE... | set NAME VALUE; NAME= deletes. One store for all. */
static int env_set_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_cli_env_args_ struct cli_env_args a = {};
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	_cleanup_layout_ struct layout *l = NULL;
	_cleanup_client_ struct client *client = NULL;
	const struct layout_slot_group *group;
	struct env_var vars[64];
	struct error err = {};
	size_t n = 0;
	int r = parse(ctx, argc, argv, &a);

	if (r)
		return r;
	if (optind >= argc) {
		cli_error(ctx, "env set: give NAME=VALUE... or NAME VALUE (NAME= deletes)");
		return CLI_EXIT_USAGE;
	}
	/* one variable: through flashd when it runs (SetEnv sets one; several
	 * go into one store offline, under the board's lock) */
	if (one_assignment(argc - optind, argv + optind)) {
		r = cli_env_daemon(ctx, &a, &client);
		if (r < 0)
			return cli_exit_code(NULL, r);
		if (r)
			return env_set_daemon(ctx, client, &a, argc - optind, argv + optind);
	}
	r = cli_env_lock(ctx, &a, "flashctl env set", &lock);
	if (!r)
		r = cli_env_open(ctx, &a, 0, false, &e, &l);
	if (r)
		return r;
	group = l && l->n_groups ? &l->groups[0] : NULL;
	r = parse_assignments(ctx, &a, group, argc, argv, vars, ELEMENTSOF(vars), &n);
	if (!r)
		r = check_order(ctx, e, group, vars, n);
	if (r)
		return r;
	if (env_txn_new(e, &t) < 0 || env_txn_set_many(t, vars, n) < 0)
		return CLI_EXIT_FAIL;
	r = env_txn_commit(t, &err);
	if (r < 0) {
		cli_error(ctx, "%s", err.msg);
		return cli_exit_code(NULL, r);
	}
	return print_set(ctx, e, env_txn_size(t));
}

/* The FLASHD_ENV marker of a reset env (slot_records_lost), unless the
 * command line gives it: "FLASHD_ENV=" leaves it out (a legacy env). */
static size_t add_env_mark(struct env_var *v, size_t n, size_t max)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, SLOT_ENV_MARK_VAR)) {
			if (!*v[i].value)
				v[i] = v[--n];
			return n;
		}
	if (n < max)
		v[n++] = (struct env_var){ SLOT_ENV_MARK_VAR, SLOT_ENV_MARK_DEFAULT };
	return n;
}

/* Provision an erased env: U-Boot defaults file + NAME=VALUE, one store. */
static int env_init_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { CLI_ENV_OPTIONS,
		{ "defaults", required_argument, NULL, 'd' }, { NULL, 0, NULL, 0 } };
	_cleanup_cli_env_args_ struct cli_env_args a = {};
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	struct error err = {};
	struct env_var vars[64];
	const char *defaults = NULL;
	size_t n = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "fd:", opts, NULL)) >= 0) {
		if (c == 'd')
			defaults = optarg;
		else if (!cli_env_option(&a, c, optarg))
			return CLI_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq || n == ELEMENTSOF(vars)) {
			cli_error(ctx, "env init: '%s': expected NAME=VALUE (at most %zu)", argv[i],
				  ELEMENTSOF(vars));
			return CLI_EXIT_USAGE;
		}
		*eq = '\0';
		vars[n++] = (struct env_var){ argv[i], eq + 1 };
	}
	/* a reset env, not a legacy one: the daemon adopts the booted slot */
	n = add_env_mark(vars, n, ELEMENTSOF(vars));
	r = cli_env_lock(ctx, &a, "flashctl env init", &lock);
	if (!r)
		r = cli_env_open(ctx, &a, ENV_OPEN_ALLOW_BLANK, false, &e, NULL);
	if (r)
		return r;
	r = env_init_default(e, defaults, vars, n, a.force, &err);
	if (r < 0) {
		cli_error(ctx, "%s", err.msg);
		return r == -EEXIST ? CLI_EXIT_FORCE : CLI_EXIT_FAIL;
	}
	if (!ctx->quiet && !ctx->json)
		printf("U-Boot env %s initialised\n", env_describe(e));
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_env_cmds[] = {
	{ "get", "[-n|--no-name] NAME... " CLI_ENV_USAGE,
	  "print NAME=value for each variable (-n: the value alone, as fw_printenv -n)",
	  env_get_cmd, NULL },
	{ "set", "NAME=VALUE... | NAME VALUE [--force] " CLI_ENV_USAGE,
	  "change variables with one env write (NAME= deletes; slot variables need --force)",
	  env_set_cmd, NULL },
	{ "list", CLI_ENV_USAGE, "print the whole U-Boot env", env_list_cmd, NULL },
	{ "init", "[--defaults u-boot-initial-env] [NAME=VALUE...] [--force] " CLI_ENV_USAGE,
	  "provision an erased env (defaults file + variables, one write)", env_init_cmd, NULL },
	{ NULL },
};
