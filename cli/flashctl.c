/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl: the technician's and script's front end to flashd.
 * Commands are dispatched from nested tables (cli.h). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "flashctl.h"
#include "proto.h"
#include "util.h"

static const struct cli_cmd top_cmds[] = {
	{ "status", "[--socket PATH]", "board, slots, last install, overlay and flash health",
	  cli_status, NULL },
	{ "install", "[--socket PATH] [--slot X] [--no-activate] [--allow-downgrade] "
	  "BUNDLE|URL|- or --url-file FILE|-",
	  "install a bundle into the inactive slot, with progress; Ctrl-C cancels", cli_install,
	  NULL },
	{ "history", "[--socket PATH] [--config FILE] [--offline] [--state-dir DIR]",
	  "the installs, newest first: when, version, slot, result, bytes, source",
	  cli_history, NULL },
	{ "cancel", "[--socket PATH]", "cancel the running install (the slot stays marked bad)",
	  cli_cancel, NULL },
	{ "overlay", NULL, "overlay status and factory reset", NULL, cli_overlay_cmds },
	CLI_HOST_TOOL("provision",
		"--layout FILE --bundle FILE (--keyring DIR|--allow-unsigned) [--both-slots] "
		"[--include-bootloader] [--initial-env FILE] [--cmdline FILE] [--state-dir DIR] [--dry-run] "
		"system|sim:PATH|image:PREFIX",
		"lay out a blank board: erase, initial env, slot A (and B), overlay, read back\n"
		"Every check runs before the first erase; --dry-run runs the same checks and\n"
		"exits 3 exactly when the real run would refuse.",
		cli_provision),
	{ "layout", NULL, "validate and convert board layouts", NULL, cli_layout_cmds },
	{ "flash", NULL, "inspect and write flash devices (MTD or simulator)", NULL, cli_flash_cmds },
	{ "slot", NULL, "A/B slots: status, mark-good, mark-bad, activate, rollback", NULL, cli_slot_cmds },
	{ "env", NULL, "read and change the U-Boot environment", NULL, cli_env_cmds },
	{ "bundle", NULL, "create, inspect and verify update bundles", NULL, cli_bundle_cmds },
	{ NULL },
};

void cli_error(struct cli_ctx *ctx, const char *fmt, ...)
{
	char msg[2048], shown[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* messages carry the daemon's, a server's or a file's words */
	fprintf(stderr, "%s: %s\n", ctx && ctx->prog ? ctx->prog : "flashctl",
		util_printable(msg, shown, sizeof(shown)));
}

void cli_print_json(struct json_object *j)
{
	puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(j);
}

/* THE table of flashctl(1)'s exit codes for a refusal, whatever the path:
 * the io.flashd error the daemon replied, or that an offline command
 * names for the same refusal (cli_refused), or an errno (offline, or the
 * daemon's InternalError). Anything else failed (1). */
static const struct {
	const char *error; /* io.flashd or org.varlink.service error, NULL: errno only */
	int err;           /* the errno of the same refusal, 0 none */
	int code;
} exit_codes[] = {
	{ PROTO_ERROR_PERMISSION_DENIED, -EACCES, CLI_EXIT_DENIED },
	{ PROTO_ERROR_DENIED, -EPERM, CLI_EXIT_DENIED },
	{ PROTO_ERROR_BUSY, -EBUSY, CLI_EXIT_DENIED },
	{ PROTO_ERROR_FORCE_REQUIRED, 0, CLI_EXIT_FORCE },
	{ PROTO_ERROR_INVALID_BUNDLE, -EBADMSG, CLI_EXIT_INVALID },
	{ PROTO_ERROR_INVALID_PARAMETER, -EINVAL, CLI_EXIT_INVALID },
	{ PROTO_ERROR_ENV_REFUSED, -ENOSPC, CLI_EXIT_INVALID },
	{ PROTO_ERROR_NO_SUCH_SLOT, 0, CLI_EXIT_INVALID },
	{ PROTO_ERROR_NO_ROLLBACK, 0, CLI_EXIT_INVALID },
	{ PROTO_ERROR_SLOT_REFUSED, 0, CLI_EXIT_INVALID },
	{ PROTO_ERROR_NO_SUCH_PARTITION, 0, CLI_EXIT_INVALID },
	{ PROTO_ERROR_DOWNGRADE_REFUSED, 0, CLI_EXIT_FORCE },
	{ NULL, -ENODATA, CLI_EXIT_INVALID }, /* no valid env copy */
};

int cli_exit_code(const char *error, int r)
{
	bool by_name = error && strcmp(error, PROTO_ERROR_INTERNAL);

	for (size_t i = 0; i < ELEMENTSOF(exit_codes); i++)
		if (by_name ? exit_codes[i].error && !strcmp(exit_codes[i].error, error) :
			      exit_codes[i].err && exit_codes[i].err == r)
			return exit_codes[i].code;
	return CLI_EXIT_FAIL;
}

int cli_refused(struct cli_ctx *ctx, const char *error, const char *fmt, ...)
{
	char msg[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_error(ctx, "%s [%s]", msg, error);
	return cli_exit_code(error, 0);
}

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

void cli_print_cmd_help(struct cli_ctx *ctx, const char *path, const struct cli_cmd *c)
{
	printf("Usage: %s %s%s%s\n\n%s\n", ctx->prog, path, c->usage ? " " : "",
	       c->usage ? c->usage : "", c->help);
}

static void print_table(struct cli_ctx *ctx, const char *path, const struct cli_cmd *t, FILE *out)
{
	fprintf(out, "Usage: %s [--json] %s%sCOMMAND [ARGS]\n\nCommands:\n", ctx->prog,
		path, *path ? " " : "");
	/* the table shows the first line of each help text; not the host
	 * tools a device build left out */
	for (; t->name; t++)
		if (t->run || t->sub)
			fprintf(out, "  %-15s %.*s\n", t->name, (int)strcspn(t->help, "\n"),
				t->help);
	fprintf(out, "\nRun '%s %s%sCOMMAND --help' for details.\n", ctx->prog, path,
		*path ? " " : "");
}

static int dispatch(struct cli_ctx *ctx, const struct cli_cmd *table, char *path,
		    size_t pathlen, int argc, char **argv)
{
	const struct cli_cmd *c;

	if (argc < 1 || !strcmp(argv[0], "help") || !strcmp(argv[0], "-h") ||
	    !strcmp(argv[0], "--help")) {
		print_table(ctx, path, table, argc < 1 ? stderr : stdout);
		return argc < 1 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
	}
	for (c = table; c->name; c++)
		if (!strcmp(c->name, argv[0]))
			break;
	if (c->name && !c->run && !c->sub) { /* CLI_HOST_TOOL in a device build */
		cli_error(ctx, "'%s%s%s' is a host tool, left out of this device build "
			  "(configure --disable-host-tools): run it on the build host", path,
			  *path ? " " : "", argv[0]);
		return CLI_EXIT_USAGE;
	}
	if (!c->name) {
		cli_error(ctx, "unknown command '%s%s%s' (see '%s %s%s--help')", path,
			  *path ? " " : "", argv[0], ctx->prog, path, *path ? " " : "");
		return CLI_EXIT_USAGE;
	}
	if (*path)
		strncat(path, " ", pathlen - strlen(path) - 1);
	strncat(path, c->name, pathlen - strlen(path) - 1);
	if (c->sub)
		return dispatch(ctx, c->sub, path, pathlen, argc - 1, argv + 1);
	if (cli_wants_help(argc, argv)) {
		cli_print_cmd_help(ctx, path, c);
		return CLI_EXIT_OK;
	}
	optind = 0; /* reset getopt for the subcommand */
	return c->run(ctx, argc, argv);
}

static void usage_main(struct cli_ctx *ctx)
{
	char path[1] = "";

	print_table(ctx, path, top_cmds, stdout);
	printf("\nGlobal options:\n"
	       "  -j, --json     machine-readable output (JSON on stdout)\n"
	       "  -q, --quiet    print only errors\n"
	       "  -h, --help     this help\n"
	       "  -V, --version  print the version\n"
	       "\nExit status: 0 ok, 1 failed, 2 usage error, 3 input rejected"
	       " (invalid layout, bundle, env; a failed check), 4 permission denied or busy,\n"
	       "5 refused without --force (install: an older version, without\n"
	       "--allow-downgrade).\n");
}

int flashctl_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_ctx ctx = { .prog = "flashctl" };
	char path[128] = "";
	int c;

	/* '+' stops at the first non-option: the command's own options follow */
	while ((c = getopt_long(argc, argv, "+jqhV", opts, NULL)) >= 0) {
		switch (c) {
		case 'j': ctx.json = true; break;
		case 'q': ctx.quiet = true; break;
		case 'h': usage_main(&ctx); return CLI_EXIT_OK;
		case 'V': printf("flashctl %s\n", PACKAGE_VERSION); return CLI_EXIT_OK;
		default: return CLI_EXIT_USAGE;
		}
	}
	/* --json is also accepted after the command, as scripts tend to write it */
	for (int i = optind; i < argc; i++)
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			ctx.json = true;
			memmove(argv + i, argv + i + 1, (argc - i - 1) * sizeof(*argv));
			argc--;
			i--;
		}
	return dispatch(&ctx, top_cmds, path, sizeof(path), argc - optind, argv + optind);
}
