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
/* overlay reset [--yes] [--cancel] (cmd_overlay.c), with the env
 * commands' board options for the offline path */
int cli_overlay_reset(struct cli_ctx *ctx, int argc, char **argv);
#define CLI_OVERLAY_RESET_USAGE "[--layout FILE] [--target system|sim:PATH] [--config FILE] " \
	"[--offline]"
/* The install history (cmd_history.c). */
int cli_history(struct cli_ctx *ctx, int argc, char **argv);

struct client;
/* The daemon's socket: opt, else $FLASHD_SOCKET, else dflt (flashd.conf's
 * socket=), else the built-in default (paths_socket). */
const char *cli_socket_path(const char *opt, const char *dflt);
/* A failed daemon call: one message naming what, and flashctl(1)'s exit
 * code for the Varlink error (Busy, PermissionDenied: 4; ...). */
int cli_call_failed(struct cli_ctx *ctx, struct client *c, int r, const char *what);

/* flashctl(1)'s exit code for a refusal, from the one table of
 * flashctl.c: by the io.flashd error name (the daemon's reply, or the
 * name an offline command gives the same refusal), else by the errno r
 * (offline, or io.flashd.InternalError). So one refusal has one exit code
 * whatever the path. */
int cli_exit_code(const char *error, int r);
/* An offline refusal: "flashctl: <msg> [<error>]" on stderr, labelled
 * with the io.flashd error the daemon gives for it; its exit code. */
int cli_refused(struct cli_ctx *ctx, const char *error, const char *fmt, ...) _printf_(3, 4);
/* "flashctl: <msg>" on stderr. */
void cli_error(struct cli_ctx *ctx, const char *fmt, ...) _printf_(2, 3);
/* Every string of o made printable (util_printable), for the human
 * output: the daemon's replies carry what servers and bundles said (JSON
 * output escapes them itself). */
void cli_printable_json(struct json_object *o);
/* t (seconds since the epoch) in buf: ISO 8601 UTC ("...Z") or local
 * "YYYY-MM-DD HH:MM:SS"; "-" for a time the C library cannot break down. */
const char *cli_time(char *buf, size_t n, int64_t t, bool utc);
/* Print a JSON object (pretty) on stdout and drop the reference. */
void cli_print_json(struct json_object *j);
/* True when argv asks for help (-h/--help anywhere). */
bool cli_wants_help(int argc, char **argv);
/* Print "Usage: flashctl <path> <usage>\n<help>" for a leaf command. */
void cli_print_cmd_help(struct cli_ctx *ctx, const char *path, const struct cli_cmd *c);
