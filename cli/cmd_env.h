/* Shared by cmd_env.c and cmd_slot.c: where the U-Boot env and the slot
 * layout come from (command-line options over flashd.conf). */
#pragma once
#include <getopt.h>
#include "cli.h"
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
};

/* Long options every env/slot command takes; values 0x100.. */
#define CLI_ENV_OPTIONS \
	{ "config", required_argument, NULL, 0x100 }, \
	{ "layout", required_argument, NULL, 0x101 }, \
	{ "target", required_argument, NULL, 0x102 }, \
	{ "env-config", required_argument, NULL, 0x103 }, \
	{ "sysfs", required_argument, NULL, 0x104 }, \
	{ "cmdline", required_argument, NULL, 0x105 }, \
	{ "force", no_argument, NULL, 'f' }
#define CLI_ENV_USAGE "[--layout FILE] [--target system|sim:PATH] [--env-config FILE] [--config FILE]"

/* Handle one getopt result; false when c is not one of the shared options. */
bool cli_env_option(struct cli_env_args *a, int c, const char *arg);
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
