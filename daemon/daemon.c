/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd: the daemon's command line. daemon_main() only parses options,
 * loads the configuration and hands over to the manager; main/main.c
 * calls it when the program is neither flashctl nor "flashd boot". */
#include <getopt.h>
#include <stdio.h>

#include "conf.h"
#include "daemon.h"
#include "env.h"
#include "log.h"
#include "manager.h"
#include "paths.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: flashd [OPTIONS]\n"
		"\n"
		"Flash layout and A/B update daemon; answers the Varlink control socket.\n"
		"\n"
		"  -c, --config FILE      configuration (default %s)\n"
		"      --layout FILE      board layout (overrides [flashd] layout=)\n"
		"      --target T         system | sim:PATH (overrides target=)\n"
		"      --socket PATH      control socket (overrides socket=)\n"
		"      --keyring DIR      trusted keys (overrides keyring=)\n"
		"      --state-dir DIR    install records (overrides state-dir=)\n"
		"      --cmdline FILE     kernel command line to read the booted slot from\n"
		"      --allow-unsigned   accept unsigned bundles\n"
		"  -v, --verbose          debug logging\n"
		"  -h, --help             this help\n"
		"  -V, --version          print the version\n"
		"      --paths            print the configured paths (NAME PATH lines)\n"
		"\nSee flashd(8) and flashd.conf(5).\n", CONF_DEFAULT_PATH);
}

enum {
	OPT_LAYOUT = 0x100, OPT_TARGET, OPT_SOCKET, OPT_KEYRING, OPT_STATE_DIR, OPT_CMDLINE,
	OPT_ALLOW_UNSIGNED, OPT_PATHS,
};

/* What --paths prints: where this build looks (paths.h), for the initramfs
 * builders (tools/flashd-mkinitramfs puts the layout where flashd boot
 * reads it), integrators and the tests. */
static const struct {
	const char *name, *path;
} paths[] = {
	{ "config", paths_conf }, { "layout", paths_layout }, { "keyring", paths_keyring },
	{ "keep-dir", paths_keep_dir }, { "state-dir", paths_state_dir },
	{ "run-dir", paths_run_dir }, { "socket", paths_socket }, { "boot-state", paths_boot_state },
	{ "lock-dir", paths_lock_dir }, { "layouts", paths_layouts_dir }, { "sbindir", paths_sbindir },
	{ "fw-env-config", ENV_DEFAULT_CONFIG },
};

static void print_paths(void)
{
	for (size_t i = 0; i < ELEMENTSOF(paths); i++)
		printf("%-14s %s\n", paths[i].name, paths[i].path);
}

/* Command-line options that override a flashd.conf key. */
static const struct {
	int opt;
	const char *key;
} overrides[] = {
	{ OPT_LAYOUT, "layout" }, { OPT_TARGET, "target" }, { OPT_SOCKET, "socket" },
	{ OPT_KEYRING, "keyring" }, { OPT_STATE_DIR, "state-dir" }, { OPT_CMDLINE, "cmdline" },
	{ OPT_ALLOW_UNSIGNED, "allow-unsigned" },
};

static int apply_override(struct conf *c, int opt, const char *arg, struct error *err)
{
	for (size_t i = 0; i < ELEMENTSOF(overrides); i++)
		if (overrides[i].opt == opt)
			return conf_set(c, "flashd", overrides[i].key, arg ? arg : "yes", err);
	return -EINVAL;
}

int daemon_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "layout", required_argument, NULL, OPT_LAYOUT },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "cmdline", required_argument, NULL, OPT_CMDLINE },
		{ "allow-unsigned", no_argument, NULL, OPT_ALLOW_UNSIGNED },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "paths", no_argument, NULL, OPT_PATHS },
		{ NULL, 0, NULL, 0 },
	};
	struct { int opt; const char *arg; } pending[16];
	size_t n_pending = 0;
	_cleanup_(conf_freep) struct conf *conf = NULL;
	_cleanup_manager_ struct manager *m = NULL;
	struct error cerr = {};
	struct error merr = {};
	const char *config = NULL;
	int c, r;

	log_open();
	while ((c = getopt_long(argc, argv, "c:vhV", opts, NULL)) >= 0) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'v': log_set_max_level(LOG_DEBUG); break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("flashd %s\n", PACKAGE_VERSION); return 0;
		case OPT_PATHS: print_paths(); return 0;
		case '?': usage(stderr); return 2;
		default:
			if (n_pending == ELEMENTSOF(pending))
				return 2;
			pending[n_pending].opt = c;
			pending[n_pending++].arg = optarg;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flashd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (conf_new(&conf) < 0)
		return 1;
	/* the default file may be missing; an explicit one may not */
	r = conf_load(conf, config ? config : CONF_DEFAULT_PATH, !config, &cerr);
	for (size_t i = 0; r >= 0 && i < n_pending; i++)
		r = apply_override(conf, pending[i].opt, pending[i].arg, &cerr);
	if (r < 0) {
		log_error("configuration: %s", cerr.msg);
		return 1;
	}
	r = manager_new(TAKE_PTR(conf), &m, &merr);
	if (r >= 0)
		r = manager_startup(m, &merr);
	if (r < 0) {
		log_error("%s", merr.msg);
		return 1;
	}
	r = manager_run(m);
	return r < 0 ? 1 : 0;
}
