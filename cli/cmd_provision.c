/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl provision: a board from blank to first boot. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cleanup_json.h"
#include "conf.h"
#include "cli.h"
#include "keyring.h"
#include "layout.h"
#include "provision.h"
#include "util.h"

struct prov_out {
	struct cli_ctx *ctx;
	struct json_object *regions;
	bool dry_run;
};

static void on_region(void *userdata, const struct provision_region *r)
{
	struct prov_out *o = userdata;
	char size[32], off[32];

	if (o->ctx->quiet && !o->ctx->json)
		return;
	if (o->ctx->json) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "partition", json_object_new_string(r->part->name));
		json_object_object_add(j, "offset", json_object_new_int64(r->part->offset));
		json_object_object_add(j, "size", json_object_new_int64(r->part->size));
		json_object_object_add(j, "action", json_object_new_string(
					       provision_action_to_string(r->action)));
		json_object_object_add(j, "detail", json_object_new_string(r->detail));
		json_object_object_add(j, "blocks_erased", json_object_new_int64(r->erased));
		json_object_object_add(j, "bad_blocks", json_object_new_int64(r->bad));
		json_object_array_add(o->regions, j);
		return;
	}
	snprintf(off, sizeof(off), "0x%08" PRIx64, r->part->offset);
	printf("  %-18s %s %10s  %-8s %s", r->part->name, off,
	       util_format_size(r->part->size, size, sizeof(size)),
	       provision_action_to_string(r->action), r->detail);
	if (!o->dry_run && r->action != PROVISION_KEEP)
		printf(" (%" PRIu64 " blocks erased%s)", r->erased, r->bad ? ", bad blocks" : "");
	if (r->bad)
		printf(" [%" PRIu64 " bad]", r->bad);
	printf("\n");
}

/* flashd.conf's state dir (its default when the file is missing or bad:
 * the records there are what a stale one would be read from). */
static const char *system_state_dir(struct conf **conf)
{
	struct error err = {};

	if (conf_new(conf) < 0)
		return NULL;
	(void)conf_load(*conf, CONF_DEFAULT_PATH, true, &err);
	return (*conf)->state_dir;
}

static int provision_cmd(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "layout", required_argument, NULL, 'l' },
		{ "bundle", required_argument, NULL, 'b' },
		{ "keyring", required_argument, NULL, 'k' },
		{ "allow-unsigned", no_argument, NULL, 'u' },
		{ "both-slots", no_argument, NULL, '2' },
		{ "include-bootloader", no_argument, NULL, 'B' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "initial-env", required_argument, NULL, 'e' },
		{ "sysfs", required_argument, NULL, 's' },
		{ "cmdline", required_argument, NULL, 'c' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_layout_ struct layout *l = NULL;
	_cleanup_(keyring_freep) struct keyring *k = NULL;
	_cleanup_conf_ struct conf *conf = NULL;
	_cleanup_json_ struct json_object *out = NULL;
	struct error lerr = {};
	struct error kerr = {};
	struct error perr = {};
	bool written;
	struct provision_params p = { 0 };
	struct prov_out po = { .ctx = ctx };
	const char *layout = NULL, *keyring = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, "l:b:k:un", opts, NULL)) >= 0) {
		switch (c) {
		case 'l': layout = optarg; break;
		case 'b': p.bundle = optarg; break;
		case 'k': keyring = optarg; break;
		case 'u': p.allow_unsigned = true; break;
		case '2': p.both_slots = true; break;
		case 'B': p.include_bootloader = true; break;
		case 'n': p.dry_run = true; break;
		case 'e': p.initial_env = optarg; break;
		case 's': p.sysfs = optarg; break;
		case 'c': p.cmdline = optarg; break;
		case 'S': p.state_dir = optarg; break;
		default: return CLI_EXIT_USAGE;
		}
	}
	if (!layout || !p.bundle || optind + 1 != argc) {
		cli_error(ctx, "provision needs --layout FILE, --bundle FILE and one TARGET "
			  "(system, sim:PATH or image:PREFIX)");
		return CLI_EXIT_USAGE;
	}
	if (!keyring && !p.allow_unsigned) {
		cli_error(ctx, "give --keyring DIR to check the bundle's signature (or "
			  "--allow-unsigned)");
		return CLI_EXIT_USAGE;
	}
	r = layout_load(layout, &l, &lerr);
	if (r < 0) {
		cli_error(ctx, "%s", lerr.msg);
		return CLI_EXIT_INVALID;
	}
	r = keyring ? keyring_load_dir(keyring, &k, &kerr) : keyring_new(&k);
	if (r < 0) {
		cli_error(ctx, "keyring %s: %s", keyring, kerr.msg[0] ? kerr.msg : strerror(-r));
		return CLI_EXIT_INVALID;
	}
	p.layout = l;
	p.target = argv[optind];
	/* on the running system, the daemon's block records of the slots */
	if (!p.state_dir && !strcmp(p.target, "system"))
		p.state_dir = system_state_dir(&conf);
	p.keyring = k;
	p.report = on_region;
	p.userdata = &po;
	po.dry_run = p.dry_run;
	po.regions = json_object_new_array();
	if (!ctx->json && !ctx->quiet)
		printf("%s %s with %s (%s):\n", p.dry_run ? "Would provision" : "Provisioning",
		       p.target, p.bundle, l->board ? l->board : l->path);
	r = provision_run(&p, &written, &perr);
	if (r < 0) {
		json_object_put(po.regions);
		if (!written) {
			/* refused by a check: nothing was touched, and a dry run says the same */
			cli_error(ctx, "provision %s refused, nothing was written: %s", p.target,
				  perr.msg);
			return r == -EACCES || r == -EPERM ? CLI_EXIT_DENIED : CLI_EXIT_INVALID;
		}
		cli_error(ctx, "provision %s failed: %s", p.target, perr.msg);
		return CLI_EXIT_FAIL;
	}
	if (ctx->json) {
		out = json_object_new_object();
		json_object_object_add(out, "target", json_object_new_string(p.target));
		json_object_object_add(out, "dry_run", json_object_new_boolean(p.dry_run));
		json_object_object_add(out, "regions", po.regions);
		cli_print_json(json_object_get(out));
	} else {
		json_object_put(po.regions);
		if (!ctx->quiet)
			printf(p.dry_run ? "Nothing was written.\n" :
			       "Done: slot %s boots first; every image was read back and "
			       "verified.\n", l->groups[0].slots[0].name);
	}
	return CLI_EXIT_OK;
}

int cli_provision(struct cli_ctx *ctx, int argc, char **argv)
{
	return provision_cmd(ctx, argc, argv);
}
