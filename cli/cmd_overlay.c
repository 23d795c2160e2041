/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl overlay reset [--yes] [--cancel]: the factory reset, through a
 * running flashd (its authorization: root or socket-group=) or offline
 * (the env directly: root, flashd's variable), as the env commands choose
 * (cmd_env.h). It asks on a terminal and refuses without one unless --yes
 * (OpenWrt's firstboot -y); --cancel takes a pending reset back before
 * the boot that would do it, without asking: nothing is lost by that. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cleanup_json.h"
#include "client.h"
#include "cmd_env.h"
#include "slot_change.h"

#define RESET_PROMPT "Reset the overlay: all changes on the writable overlay are lost at the " \
	"next boot. Continue? [y/N] "

struct reset_args {
	struct cli_env_args env;
	const char *socket;
	bool yes, cancel;
};

static const struct option reset_opts[] = {
	CLI_ENV_OPTIONS,
	{ "yes", no_argument, NULL, 'y' },
	{ "cancel", no_argument, NULL, 0x200 },
	{ "socket", required_argument, NULL, 's' },
	{ NULL, 0, NULL, 0 },
};

static int reset_parse(struct cli_ctx *ctx, int argc, char **argv, struct reset_args *a)
{
	int c;

	while ((c = getopt_long(argc, argv, "fy", reset_opts, NULL)) >= 0) {
		if (c == 'y')
			a->yes = true;
		else if (c == 0x200)
			a->cancel = true;
		else if (c == 's')
			a->socket = optarg;
		else if (!cli_env_option(&a->env, c, optarg))
			return CLI_EXIT_USAGE;
	}
	if (optind != argc) {
		cli_error(ctx, "overlay reset: unexpected argument '%s'", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* Asked on the terminal; "y" or "yes" confirms, anything else (the
 * default, an empty line, EOF) does not. */
static int reset_confirm(struct cli_ctx *ctx)
{
	char line[32];

	if (!isatty(STDIN_FILENO)) {
		cli_error(ctx, "overlay reset erases all changes on the writable overlay at the next "
			  "boot and asks first on a terminal; stdin is not one: pass --yes to reset "
			  "without asking");
		return CLI_EXIT_USAGE;
	}
	fputs(RESET_PROMPT, stderr);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (!strcasecmp(line, "y") || !strcasecmp(line, "yes"))
		return CLI_EXIT_OK;
	fprintf(stderr, "Not reset: the overlay is kept.\n");
	return CLI_EXIT_FAIL;
}

static void reset_print(struct cli_ctx *ctx, bool cancel, bool changed, const char *via)
{
	if (ctx->quiet)
		return;
	if (cancel)
		printf(changed ? "Overlay reset cancelled%s: the overlay is kept.\n" :
		       "No overlay reset was pending%s: the overlay is kept.\n", via);
	else
		printf("%s%s: all changes on the writable overlay are erased at the next boot.\n"
		       "Take it back before then with 'flashctl overlay reset --cancel'.\n",
		       changed ? "Overlay reset requested" : "An overlay reset was already pending",
		       via);
}

static int reset_daemon(struct cli_ctx *ctx, struct client *c, bool cancel)
{
	_cleanup_json_ struct json_object *params = json_object_new_object(), *res = NULL;
	struct json_object *v;
	int r;

	if (cancel)
		json_object_object_add(params, "cancel", json_object_new_boolean(true));
	r = cli_env_daemon_call(ctx, c, "io.flashd.OverlayReset", params,
				cancel ? "overlay reset --cancel" : "overlay reset", &res);
	if (r)
		return r;
	if (ctx->json)
		cli_print_json(json_object_get(res));
	else
		reset_print(ctx, cancel, json_object_object_get_ex(res, "changed", &v) &&
			    json_object_get_boolean(v), "");
	return CLI_EXIT_OK;
}

static int reset_offline(struct cli_ctx *ctx, struct cli_env_args *a, bool cancel)
{
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_layout_ struct layout *l = NULL;
	struct error err = {};
	bool changed;
	int r;

	/* the flag is flashd's variable: a raw write of it is root's alone
	 * (docs/security.md); a running flashd lets its socket-group= ask */
	if (geteuid() != 0) {
		cli_error(ctx, "overlay reset: offline, FLASHD_OVERLAY_RESET is written directly "
			  "into the env, which needs root (a running flashd also lets its "
			  "socket-group= ask)");
		return CLI_EXIT_DENIED;
	}
	r = cli_env_lock(ctx, a, "flashctl overlay reset", &lock);
	if (!r)
		r = cli_env_open(ctx, a, 0, true, &e, &l);
	if (r)
		return r;
	if (!l->n_overlays) {
		cli_error(ctx, "overlay reset: the layout %s has no overlay", l->path);
		return CLI_EXIT_DENIED;
	}
	r = slot_change_overlay_reset(e, cancel, &changed, &err);
	if (r < 0) {
		cli_error(ctx, "overlay reset: %s", err.msg);
		return CLI_EXIT_FAIL;
	}
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "via", json_object_new_string("offline"));
		json_object_object_add(j, "changed", json_object_new_boolean(changed));
		json_object_object_add(j, "reset_pending", json_object_new_boolean(!cancel));
		cli_print_json(j);
	} else {
		reset_print(ctx, cancel, changed, " (offline)");
	}
	return CLI_EXIT_OK;
}

int cli_overlay_reset(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_client_ struct client *c = NULL;
	struct reset_args a = {};
	int r = reset_parse(ctx, argc, argv, &a);

	if (!r && !a.cancel && !a.yes)
		r = reset_confirm(ctx);
	if (r) {
		cli_env_args_done(&a.env);
		return r;
	}
	if (a.socket && client_connect(a.socket, &c) < 0) {
		cli_error(ctx, "cannot reach flashd at %s (is it running?)", a.socket);
		r = CLI_EXIT_FAIL;
	} else if (!c && (r = cli_env_daemon(ctx, &a.env, &c)) < 0) {
		r = cli_exit_code(NULL, r);
	} else if (c) {
		r = reset_daemon(ctx, c, a.cancel);
	} else {
		r = reset_offline(ctx, &a.env, a.cancel);
	}
	cli_env_args_done(&a.env);
	return r;
}
