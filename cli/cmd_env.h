/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by cmd_env.c and cmd_slot.c: where the U-Boot env and the slot
 * layout come from (command-line options over flashd.conf). */
#pragma once
#include <getopt.h>
#include "cli.h"
#include "conf.h"
#include "env.h"
#include "layout.h"
#include "oplock.h"

struct cli_env_args {
	const char *config;      /* flashd.conf (default CONF_DEFAULT_PATH, may be missing) */
	const char *layout;      /* --layout, else flashd.conf's layout= */
	const char *target;      /* --target system|sim:PATH, else flashd.conf's target= */
	const char *env_config;  /* --env-config fw_env.config: overrides the layout's env */
	const char *sysfs;       /* --sysfs (tests): instead of /sys/class/mtd */
	const char *cmdline;     /* --cmdline (slot): instead of /proc/cmdline */
	bool force;
	bool offline;            /* --offline: the env directly, even when flashd runs */
	/* flashd.conf, read once by whichever of cli_env_open, cli_env_daemon and
	 * cli_env_lock needs it first; conf_r < 0 when it could not be read
	 * (conf holds the defaults then, conf_err says why) */
	struct conf *conf;
	int conf_r;
	struct error conf_err;
};

void cli_env_args_done(struct cli_env_args *a);
#define _cleanup_cli_env_args_ __attribute__((cleanup(cli_env_args_done)))

/* Long options every env/slot command takes; values 0x100.. */
#define CLI_ENV_OPTIONS \
	{ "config", required_argument, NULL, 0x100 }, \
	{ "layout", required_argument, NULL, 0x101 }, \
	{ "target", required_argument, NULL, 0x102 }, \
	{ "env-config", required_argument, NULL, 0x103 }, \
	{ "sysfs", required_argument, NULL, 0x104 }, \
	{ "cmdline", required_argument, NULL, 0x105 }, \
	{ "offline", no_argument, NULL, 0x106 }, \
	{ "force", no_argument, NULL, 'f' }
#define CLI_ENV_USAGE "[--layout FILE] [--target system|sim:PATH] [--env-config FILE] " \
	"[--config FILE] [--offline]"

/* Handle one getopt result; false when c is not one of the shared options. */
bool cli_env_option(struct cli_env_args *a, int c, const char *arg);
/* A change goes through a running flashd when the command leaves the
 * board to it: its busy check (an install in progress) and its
 * authorization apply, as a technician expects. Not with --offline, nor
 * when the command names a board or env of its own (--layout, --target,
 * --env-config, --sysfs, --cmdline: a simulated board, a board provisioned
 * from outside). The socket: $FLASHD_SOCKET, else flashd.conf's socket=.
 * 1 and the client when a daemon answers there, 0 when the change is made
 * offline (the env directly, under the board's lock): with --offline or
 * a board named, or when no daemon is there (no socket, connection
 * refused: said once on stderr, unless -q). -errno when one is there but
 * cannot be reached (no rights to its socket): said on stderr. */
int cli_env_daemon(struct cli_ctx *ctx, struct cli_env_args *a, struct client **ret);
/* --offline, or a board or env named on the command line (see above). */
bool cli_env_names_board(const struct cli_env_args *a);
/* One io.flashd call through it; params borrowed. On failure the error is
 * reported (what, "through flashd") and flashctl's exit code returned. */
int cli_env_daemon_call(struct cli_ctx *ctx, struct client *c, const char *method,
			struct json_object *params, const char *what, struct json_object **ret);

/* Take the board's operation lock (oplock.h) for an offline write, as
 * what, without waiting: while flashd installs (or another writer holds
 * it) the write is refused, naming the holder. Not with --env-config,
 * which names an env outside any board target. Returns a CLI exit code. */
/* Does an install hold the board's lock (flashd's worker)? Unknown (no
 * rights, env config file) counts as yes: the record is shown as written. */
bool cli_install_running(struct cli_env_args *a);
int cli_env_lock(struct cli_ctx *ctx, struct cli_env_args *a, const char *what,
		 struct oplock **ret);
/* Open the env (and load the layout when one is configured; *ret_layout
 * may be NULL then). Logs the error; returns a CLI exit code. */
int cli_env_open(struct cli_ctx *ctx, struct cli_env_args *a, unsigned flags, bool need_layout,
		 struct env **ret_env, struct layout **ret_layout);
