/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl layout check|show|mtdparts|nandsim: validate a board layout
 * offline or against the running kernel's MTD table, and print the kernel
 * parameters that reproduce the board. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cleanup_json.h"
#include "layout.h"
#include "layout_kernel.h"
#include "util.h"

struct layout_args {
	const char *file;
	const char *sysfs;
	const char *device;
	bool system;
};

enum { OPT_SYSTEM = 0x100, OPT_SYSFS, OPT_DEVICE };

static const struct option layout_opts[] = {
	{ "system", no_argument, NULL, OPT_SYSTEM },
	{ "sysfs", required_argument, NULL, OPT_SYSFS },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ NULL, 0, NULL, 0 },
};

/* Parse options (those in allowed only) and the single FILE argument. */
static int parse_args(struct cli_ctx *ctx, int argc, char **argv, const char *allowed,
		      struct layout_args *a)
{
	int c;

	while ((c = getopt_long(argc, argv, "", layout_opts, NULL)) >= 0) {
		const char *name = c == OPT_SYSTEM ? "system" : c == OPT_SYSFS ? "sysfs" :
				   c == OPT_DEVICE ? "device" : NULL;

		if (!name || !strstr(allowed, name)) {
			if (name)
				cli_error(ctx, "%s: --%s is not an option of this command", argv[0], name);
			return CLI_EXIT_USAGE;
		}
		switch (c) {
		case OPT_SYSTEM: a->system = true; break;
		case OPT_SYSFS: a->sysfs = optarg; a->system = true; break;
		case OPT_DEVICE: a->device = optarg; break;
		}
	}
	if (optind != argc - 1) {
		cli_error(ctx, "%s: expected one layout FILE (see '%s layout %s --help')", argv[0],
			  ctx->prog, argv[0]);
		return CLI_EXIT_USAGE;
	}
	a->file = argv[optind];
	return 0;
}

/* A layout that does not load (system: that loads but differs from the
 * running kernel's MTD table): the JSON answer with --json, the message. */
static void check_failed(struct cli_ctx *ctx, const char *file, bool system, const char *msg)
{
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "valid", json_object_new_boolean(system));
		if (system)
			json_object_object_add(j, "system", json_object_new_boolean(false));
		json_object_object_add(j, "file", json_object_new_string(file));
		json_object_object_add(j, "error", json_object_new_string(msg));
		cli_print_json(j);
	}
	cli_error(ctx, "%s", msg);
}

static int load(struct cli_ctx *ctx, const char *file, struct layout **ret)
{
	struct error err = {};
	int r = layout_load(file, ret, &err);

	if (r < 0) {
		check_failed(ctx, file, false, err.msg);
		return r == -ENOENT || r == -EACCES ? CLI_EXIT_FAIL : CLI_EXIT_INVALID;
	}
	return 0;
}

static struct json_object *hex(uint64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return json_object_new_string(b);
}

static struct json_object *layout_json(const struct layout *l)
{
	struct json_object *j = json_object_new_object(), *a;
	char roles[256];

	json_object_object_add(j, "file", json_object_new_string(l->path));
	json_object_object_add(j, "board", json_object_new_string(l->board));
	json_object_object_add(j, "compatible", json_object_new_string(l->compatible));
	a = json_object_new_array();
	for (size_t i = 0; i < l->n_devices; i++) {
		const struct layout_device *d = &l->devices[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(d->name));
		json_object_object_add(o, "type", json_object_new_string(flash_type_to_string(d->type)));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)d->size));
		json_object_object_add(o, "erase_block", json_object_new_int64(d->erasesize));
		json_object_object_add(o, "page", json_object_new_int64(d->writesize));
		json_object_object_add(o, "oob", json_object_new_int64(d->oobsize));
		json_object_object_add(o, "mtd_id", json_object_new_string(layout_device_mtd_id(d)));
		json_object_array_add(a, o);
	}
	json_object_object_add(j, "devices", a);
	a = json_object_new_array();
	for (size_t i = 0; i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];
		struct json_object *o = json_object_new_object();

		layout_partition_roles(l, p, roles, sizeof(roles));
		json_object_object_add(o, "name", json_object_new_string(p->name));
		json_object_object_add(o, "device", json_object_new_string(p->dev->name));
		json_object_object_add(o, "mtd_index", json_object_new_int(layout_partition_index(l, p)));
		json_object_object_add(o, "offset", json_object_new_int64((int64_t)p->offset));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)p->size));
		json_object_object_add(o, "offset_hex", hex(p->offset));
		json_object_object_add(o, "size_hex", hex(p->size));
		json_object_object_add(o, "readonly", json_object_new_boolean(p->readonly));
		json_object_object_add(o, "roles", json_object_new_string(roles));
		json_object_array_add(a, o);
	}
	json_object_object_add(j, "partitions", a);
	a = json_object_new_array();
	for (size_t i = 0; i < l->n_groups; i++) {
		const struct layout_slot_group *g = &l->groups[i];
		struct json_object *o = json_object_new_object(), *s = json_object_new_array();

		json_object_object_add(o, "name", json_object_new_string(g->name));
		json_object_object_add(o, "image", json_object_new_string(g->image_type));
		json_object_object_add(o, "max_tries", json_object_new_int((int)g->max_tries));
		for (size_t k = 0; k < g->n_slots; k++)
			json_object_array_add(s, json_object_new_string(g->slots[k].name));
		json_object_object_add(o, "slots", s);
		json_object_array_add(a, o);
	}
	json_object_object_add(j, "slot_groups", a);
	a = json_object_new_array();
	for (size_t i = 0; i < l->n_overlays; i++) {
		const struct layout_overlay *ov = &l->overlays[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "path", json_object_new_string(ov->path));
		json_object_object_add(o, "type", json_object_new_string(layout_overlay_type_to_string(ov->type)));
		if (ov->part)
			json_object_object_add(o, "partition", json_object_new_string(ov->part->name));
		if (ov->ubi_volume)
			json_object_object_add(o, "volume", json_object_new_string(ov->ubi_volume));
		json_object_array_add(a, o);
	}
	json_object_object_add(j, "overlays", a);
	return j;
}

static void print_target(const struct layout_image_target *t)
{
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		printf("%s:%s", layout_storage_to_string(t->storage), t->part->name);
		break;
	case LAYOUT_STORAGE_UBI:
		printf("ubi:%s/%s", t->part->name, t->ubi_volume);
		break;
	case LAYOUT_STORAGE_FILE:
		printf("file:%s", t->file);
		break;
	case _LAYOUT_STORAGE_MAX:
		break;
	}
}

static void print_human(const struct layout *l)
{
	char s1[32], s2[32], roles[256];

	printf("Board:      %s\nCompatible: %s\nFile:       %s\n\n", l->board, l->compatible, l->path);
	printf("%-10s %-5s %10s %10s %6s %6s  %s\n", "DEVICE", "TYPE", "SIZE", "ERASE", "PAGE", "OOB",
	       "MTD-ID");
	for (size_t i = 0; i < l->n_devices; i++) {
		const struct layout_device *d = &l->devices[i];

		printf("%-10s %-5s %10s %10s %6" PRIu32 " %6" PRIu32 "  %s\n", d->name,
		       flash_type_to_string(d->type), util_format_size(d->size, s1, sizeof(s1)),
		       util_format_size(d->erasesize, s2, sizeof(s2)), d->writesize, d->oobsize,
		       layout_device_mtd_id(d));
	}
	printf("\n%-4s %-20s %-8s %12s %12s %10s %-3s %s\n", "MTD", "PARTITION", "DEVICE", "OFFSET",
	       "END", "SIZE", "RO", "ROLES");
	for (size_t i = 0; i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];

		layout_partition_roles(l, p, roles, sizeof(roles));
		printf("%-4d %-20s %-8s   0x%08" PRIx64 "   0x%08" PRIx64 " %10s %-3s %s\n",
		       layout_partition_index(l, p), p->name, p->dev->name, p->offset,
		       p->offset + p->size, util_format_size(p->size, s1, sizeof(s1)),
		       p->readonly ? "ro" : "", *roles ? roles : "-");
	}
	for (size_t i = 0; i < l->n_ubis; i++) {
		const struct layout_ubi *u = &l->ubis[i];
		uint64_t leb = 0, lebs = 0;

		layout_ubi_capacity(u, &leb, &lebs);
		printf("\nUBI on %s (LEB %" PRIu64 " bytes, %" PRIu64 " LEBs for volumes):\n",
		       u->part->name, leb, lebs);
		for (size_t k = 0; k < u->n_volumes; k++)
			printf("  %-20s %10s %s\n", u->volumes[k].name,
			       util_format_size(u->volumes[k].size, s1, sizeof(s1)),
			       layout_ubi_vol_type_to_string(u->volumes[k].type));
	}
	for (size_t i = 0; i < l->n_groups; i++) {
		const struct layout_slot_group *g = &l->groups[i];

		printf("\nSlot group %s (%s, max_tries %u):\n", g->name, g->image_type, g->max_tries);
		for (size_t k = 0; k < g->n_slots; k++) {
			printf("  %-3s rootfs ", g->slots[k].name);
			print_target(&g->slots[k].rootfs);
			if (g->slots[k].has_kernel) {
				printf("  kernel ");
				print_target(&g->slots[k].kernel);
			}
			putchar('\n');
		}
	}
	printf("\nOverlays:\n");
	for (size_t i = 0; i < l->n_overlays; i++) {
		const struct layout_overlay *ov = &l->overlays[i];

		printf("  %-10s %-6s", ov->path, layout_overlay_type_to_string(ov->type));
		if (ov->type == LAYOUT_OVERLAY_JFFS2)
			printf(" %s", ov->part->name);
		else if (ov->type == LAYOUT_OVERLAY_UBIFS)
			printf(" ubi:%s/%s", ov->part->name, ov->ubi_volume);
		else if (ov->tmpfs_size)
			printf(" %s", util_format_size(ov->tmpfs_size, s1, sizeof(s1)));
		putchar('\n');
	}
	if (l->n_lowers) {
		printf("\nExtra lower images:\n");
		for (size_t i = 0; i < l->n_lowers; i++) {
			printf("  %-10s ", l->lowers[i].name);
			print_target(&l->lowers[i].target);
			putchar('\n');
		}
	}
}

static int cmd_check(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_layout_ struct layout *l = NULL;
	struct layout_args a = { 0 };
	struct error err = {};
	const char *root;
	int r;

	if ((r = parse_args(ctx, argc, argv, "system sysfs", &a)) || (r = load(ctx, a.file, &l)))
		return r;
	root = a.sysfs ? a.sysfs : "/sys/class/mtd";
	if (a.system) {
		r = layout_kernel_check_system(l, root, &err);
		if (r < 0) {
			check_failed(ctx, a.file, true, err.msg);
			return CLI_EXIT_INVALID;
		}
	}
	if (ctx->json) {
		struct json_object *j = layout_json(l);

		json_object_object_add(j, "valid", json_object_new_boolean(true));
		if (a.system)
			json_object_object_add(j, "system", json_object_new_boolean(true));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		print_human(l);
		printf("\n%s: valid%s\n", a.file,
		       a.system ? ", and matches the running kernel's MTD table" : "");
		if (a.system)
			printf("(compared with %s)\n", root);
	}
	return CLI_EXIT_OK;
}

static int cmd_show(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_layout_ struct layout *l = NULL;
	struct layout_args a = { 0 };
	int r;

	if ((r = parse_args(ctx, argc, argv, "", &a)) || (r = load(ctx, a.file, &l)))
		return r;
	if (ctx->json)
		cli_print_json(layout_json(l));
	else
		print_human(l);
	return CLI_EXIT_OK;
}

/* --device NAME, else dflt. */
static int device_arg(struct cli_ctx *ctx, const struct layout_args *a, const struct layout *l,
		      const struct layout_device *dflt, const struct layout_device **ret)
{
	const struct layout_device *d = a->device ? layout_find_device(l, a->device) : dflt;

	if (a->device && !d) {
		cli_error(ctx, "%s: no device named \"%s\"", a->file, a->device);
		return CLI_EXIT_USAGE;
	}
	*ret = d;
	return 0;
}

/* mtdparts= of device d, or of every device when d is NULL. */
static int mtdparts_arg(struct cli_ctx *ctx, const struct layout_args *a, const struct layout *l,
			const struct layout_device *d, char **ret)
{
	int r = d ? layout_kernel_mtdparts_device(l, d, ret) : layout_kernel_mtdparts(l, ret);

	if (r < 0) {
		cli_error(ctx, "%s: cannot build mtdparts: %s", a->file, strerror(-r));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static int cmd_mtdparts(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_layout_ struct layout *l = NULL;
	_cleanup_free_ char *s = NULL;
	const struct layout_device *d;
	struct layout_args a = { 0 };
	int r;

	if ((r = parse_args(ctx, argc, argv, "device", &a)) || (r = load(ctx, a.file, &l)) ||
	    (r = device_arg(ctx, &a, l, NULL, &d)) || (r = mtdparts_arg(ctx, &a, l, d, &s)))
		return r;
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "mtdparts", json_object_new_string(s));
		cli_print_json(j);
	} else {
		puts(s);
	}
	return CLI_EXIT_OK;
}

static int cmd_nandsim(struct cli_ctx *ctx, int argc, char **argv)
{
	_cleanup_layout_ struct layout *l = NULL;
	_cleanup_free_ char *params = NULL, *mtdparts = NULL;
	const struct layout_device *d;
	struct layout_args a = { 0 };
	const char *module = NULL;
	int r;

	if ((r = parse_args(ctx, argc, argv, "device", &a)) || (r = load(ctx, a.file, &l)) ||
	    (r = device_arg(ctx, &a, l, &l->devices[0], &d)))
		return r;
	r = layout_kernel_nandsim(l, d, &module, &params);
	if (r == -E2BIG) {
		cli_error(ctx, "%s: device \"%s\" needs more than 32 nandsim partitions "
			  "(CONFIG_NANDSIM_MAX_PARTS); use mtdparts= instead", a.file, d->name);
		return CLI_EXIT_FAIL;
	}
	if (r < 0) {
		cli_error(ctx, "%s: device \"%s\" (%s, %" PRIu32 "-byte pages, %" PRIu32 " OOB, %" PRIu32
			  " KiB blocks) cannot be simulated by %s: %s", a.file, d->name,
			  flash_type_to_string(d->type), d->writesize, d->oobsize,
			  d->erasesize / 1024, d->type == FLASH_NAND ? "nandsim (pages of 512, 2048 "
			  "or 4096 bytes, 8 or 16 OOB bytes per 512)" : "mtdram (KiB sizes)",
			  strerror(-r));
		return CLI_EXIT_FAIL;
	}
	r = mtdparts_arg(ctx, &a, l, d, &mtdparts);
	if (r)
		return r;
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "module", json_object_new_string(module));
		json_object_object_add(j, "params", json_object_new_string(params));
		json_object_object_add(j, "mtdparts", json_object_new_string(mtdparts));
		json_object_object_add(j, "mtd_id", json_object_new_string(layout_device_mtd_id(d)));
		cli_print_json(j);
	} else {
		printf("%s %s\n", module, params);
		if (!ctx->quiet && d->type == FLASH_NOR)
			printf("# partitions: %s\n", mtdparts);
	}
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_layout_cmds[] = {
	{ "check", "FILE [--system] [--sysfs DIR]",
	  "validate a board layout; with --system also compare it with the running kernel's MTD\n"
	  "table (names, sizes, erase sizes, types; --sysfs DIR instead of /sys/class/mtd).\n"
	  "Exit 0 valid, 3 invalid or different (the reason on stderr).", cmd_check, NULL },
	{ "show", "FILE", "print the devices, partitions with their roles, slots and overlays",
	  cmd_show, NULL },
	{ "mtdparts", "FILE [--device NAME]",
	  "print the kernel mtdparts= argument reproducing the layout's partitions", cmd_mtdparts,
	  NULL },
	{ "nandsim", "FILE [--device NAME]",
	  "print the simulator module and parameters reproducing a device: \"nandsim id_bytes=...\n"
	  "[overridesize=N] parts=N,...\" for NAND (parts in erase blocks), \"mtdram total_size=KiB\n"
	  "erase_size=KiB\" for NOR (partitions then come from mtdparts=, shown too).\n"
	  "--json: {\"module\", \"params\", \"mtdparts\", \"mtd_id\"}.", cmd_nandsim, NULL },
	{ NULL },
};
