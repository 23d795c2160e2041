/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl command tables and shared output helpers. */
#pragma once
#include <stdbool.h>
#include <json-c/json.h>
#include "cleanup.h"

/* Exit codes (documented in flashctl(1)). */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,    /* the operation failed */
	CLI_EXIT_USAGE = 2,   /* bad command line */
	CLI_EXIT_INVALID = 3, /* input rejected: layout/bundle/env invalid, check failed */
	CLI_EXIT_DENIED = 4,  /* not permitted / daemon busy */
	CLI_EXIT_FORCE = 5,   /* refused by a safety check that --force overrides
			       * (install: --allow-downgrade) */
};

struct cli_ctx {
	bool json;
	bool quiet;
	const char *prog;
};

/* A command either runs (run != NULL) or has subcommands (sub != NULL,
 * terminated by an entry with name == NULL). run gets argv with argv[0]
 * = the command's own name, so getopt_long works as usual. */
struct cli_cmd {
	const char *name;
	const char *usage;  /* arguments, e.g. "FILE [--system]" */
	const char *help;   /* one line */
	int (*run)(struct cli_ctx *ctx, int argc, char **argv);
	const struct cli_cmd *sub;
};

/* A command for the build host or the factory. A device build (configure
 * --disable-host-tools) keeps its name only, with neither run nor sub:
 * flashctl names it as left out, and the linker drops its code. */
#if FLASHD_HOST_TOOLS
#define CLI_HOST_TOOL(name, usage, help, run) { name, usage, help, run, NULL }
#else
#define CLI_HOST_TOOL(name, usage, help, run) { name, NULL, NULL, NULL, NULL }
#endif

extern const struct cli_cmd cli_layout_cmds[];
extern const struct cli_cmd cli_flash_cmds[];
extern const struct cli_cmd cli_slot_cmds[];
extern const struct cli_cmd cli_env_cmds[];
extern const struct cli_cmd cli_bundle_cmds[];
extern const struct cli_cmd cli_overlay_cmds[];
/* Commands answered by the running daemon (cmd_daemon.c). */
int cli_status(struct cli_ctx *ctx, int argc, char **argv);
int cli_install(struct cli_ctx *ctx, int argc, char **argv);
int cli_cancel(struct cli_ctx *ctx, int argc, char **argv);
int cli_provision(struct cli_ctx *ctx, int argc, char **argv);
/* The install history (cmd_history.c). */
int cli_history(struct cli_ctx *ctx, int argc, char **argv);

struct client;
/* The daemon's socket: opt, else $FLASHD_SOCKET, else the default. */
const char *cli_socket_path(const char *opt);
/* A failed daemon call: one message naming what, and flashctl(1)'s exit
 * code for the Varlink error (Busy, PermissionDenied: 4; ...). */
int cli_call_failed(struct cli_ctx *ctx, struct client *c, int r, const char *what);

/* Exit code of a state change the slot logic refused: 5 when the same
 * change with --force would pass (the caller tried it); -EBUSY, -ENOENT,
 * -EPERM, -EALREADY (last slot, nothing to do, no verified image) are
 * failed checks (3); anything else failed (1). */
int cli_refusal_exit(int r, bool forcible);
/* "flashctl: <msg>" on stderr. */
void cli_error(struct cli_ctx *ctx, const char *fmt, ...) _printf_(2, 3);
/* Print a JSON object (pretty) on stdout and drop the reference. */
void cli_print_json(struct json_object *j);
/* True when argv asks for help (-h/--help anywhere). */
bool cli_wants_help(int argc, char **argv);
/* Print "Usage: flashctl <path> <usage>\n<help>" for a leaf command. */
void cli_print_cmd_help(struct cli_ctx *ctx, const char *path, const struct cli_cmd *c);
