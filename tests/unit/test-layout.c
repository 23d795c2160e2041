/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Board layouts: every shipped layout validates, every fixture in
 * tests/layouts/ is rejected with its exact file/JSON-path/reason, the
 * kernel conversions (mtdparts=, nandsim/mtdram parameters) are exact, and
 * the sysfs comparison catches each kind of difference. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "layout.h"
#include "layout_kernel.h"
#include "layout_parse.h"
#include "testlib.h"

static struct layout *load_ok(const char *rel)
{
	_cleanup_free_ char *path = testlib_src_path(rel);
	struct error err = {};
	struct layout *l = NULL;
	int r = layout_load(path, &l, &err);

	if (r < 0)
		fail_msg("%s: %s", rel, err.msg);
	assert_non_null(l);
	return l;
}

static int parse_err(const char *json, struct error *err)
{
	struct layout *l = NULL;
	int r = layout_parse(json, "t.json", &l, err);

	layout_free(l);
	return r;
}

/* ---------- shipped layouts ---------- */

TEST(test_shipped_layouts_valid)
{
	_cleanup_free_ char *dir = testlib_src_path("layouts");
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		_cleanup_free_ char *rel = NULL;
		struct layout *l;
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		assert_true(asprintf(&rel, "layouts/%s", de->d_name) > 0);
		l = load_ok(rel);
		assert_true(l->n_groups >= 1);
		assert_true(l->n_overlays >= 1);
		/* every shipped NAND/NOR board is reproducible in the VM harness */
		for (size_t i = 0; i < l->n_devices; i++) {
			const char *mod;
			_cleanup_free_ char *params = NULL;
			assert_int_equal(layout_kernel_nandsim(l, &l->devices[i], &mod, &params), 0);
		}
		layout_free(l);
		n++;
	}
	closedir(d);
	assert_true(n >= 6);
}

TEST(test_default_board)
{
	struct layout *l = load_ok("layouts/nandsim-128m.json");
	struct layout_slot_group *g;
	struct layout_partition *p;
	char roles[128];

	(void)state;
	assert_string_equal(l->compatible, "flashd,nandsim-128m");
	assert_int_equal(l->n_devices, 1);
	assert_int_equal(l->devices[0].type, FLASH_NAND);
	assert_int_equal(l->devices[0].size, 128u << 20);
	assert_int_equal(l->devices[0].erasesize, 128 * 1024);
	assert_int_equal(l->devices[0].writesize, 2048);
	assert_int_equal(l->devices[0].oobsize, 64);
	assert_string_equal(layout_device_mtd_id(&l->devices[0]), "NAND 128MiB 3,3V 8-bit");
	assert_int_equal(l->n_partitions, 8);
	assert_ptr_equal(l->bootloader, layout_find_partition(l, "u-boot"));
	assert_true(l->bootloader->readonly);
	assert_int_equal(l->env.n_copies, 2);
	assert_string_equal(l->env.copies[1].part->name, "u-boot-env-redund");
	assert_int_equal(l->env.copies[1].size, 0x20000);
	assert_int_equal(l->env.copies[1].sector_size, 0x20000);

	p = layout_find_partition(l, "rootfs_data");
	assert_non_null(p);
	assert_int_equal(p->offset, 0x5940000);
	assert_int_equal(p->size, (128u << 20) - 0x5940000); /* "-" = rest of the device */
	assert_int_equal(layout_partition_index(l, p), 7);
	assert_int_equal(layout_partition_roles(l, p, roles, sizeof(roles)), 1);
	assert_string_equal(roles, "overlay / (jffs2)");

	g = layout_find_group(l, "rootfs");
	assert_non_null(g);
	assert_string_equal(g->image_type, "squashfs");
	assert_int_equal(g->max_tries, 3);
	assert_int_equal(g->n_slots, 2);
	assert_string_equal(g->slots[0].name, "A");
	assert_string_equal(g->slots[1].name, "B");
	assert_ptr_equal(layout_find_slot(g, "B")->rootfs.part, layout_find_partition(l, "rootfs-b"));
	assert_true(layout_find_slot(g, "A")->has_kernel);
	assert_int_equal(layout_find_slot(g, "A")->kernel.storage, LAYOUT_STORAGE_NAND);
	assert_null(layout_find_slot(g, "C"));
	assert_null(layout_find_group(l, "appfs"));
	assert_null(layout_find_partition(l, "nope"));
	assert_int_equal(layout_partition_roles(l, layout_find_partition(l, "kernel-b"), roles,
						sizeof(roles)), 1);
	assert_string_equal(roles, "slot rootfs.B kernel");
	layout_free(l);
}

TEST(test_ubi_board)
{
	struct layout *l = load_ok("layouts/nand-ubi.json");
	struct layout_slot *a;
	uint64_t leb, lebs;

	(void)state;
	assert_int_equal(l->n_ubis, 1);
	assert_int_equal(l->ubis[0].n_volumes, 5);
	assert_int_equal(l->ubis[0].volumes[1].type, LAYOUT_UBI_STATIC);
	assert_int_equal(l->devices[0].subpage, 512);
	assert_false(l->ubis[0].volumes[4].autoresize);
	assert_int_equal(layout_ubi_capacity(&l->ubis[0], &leb, &lebs), 0);
	assert_int_equal(leb, 128 * 1024 - 2 * 2048);
	/* 2024 PEBs - 2 layout - 4 reserved - 20/1024 of the 2048-block chip */
	assert_int_equal(lebs, 2024 - 2 - 4 - 40);
	a = layout_find_slot(&l->groups[0], "A");
	assert_int_equal(a->rootfs.storage, LAYOUT_STORAGE_UBI);
	assert_string_equal(a->rootfs.ubi_volume, "rootfs_a");
	assert_ptr_equal(a->rootfs.part, layout_find_partition(l, "ubi"));
	assert_int_equal(layout_target_size(l, &a->rootfs), 96u << 20);
	assert_int_equal(l->overlays[0].type, LAYOUT_OVERLAY_UBIFS);
	assert_string_equal(l->overlays[0].ubi_volume, "overlay");
	layout_free(l);
}

TEST(test_split_board)
{
	struct layout *l = load_ok("layouts/nand-256m-split.json");

	(void)state;
	assert_int_equal(l->n_overlays, 2);
	assert_string_equal(l->overlays[0].path, "/etc");
	assert_int_equal(l->overlays[0].type, LAYOUT_OVERLAY_JFFS2);
	assert_string_equal(l->overlays[1].path, "/var");
	assert_int_equal(l->overlays[1].type, LAYOUT_OVERLAY_TMPFS);
	assert_int_equal(l->overlays[1].tmpfs_size, 32u << 20);
	assert_int_equal(l->n_lowers, 1);
	assert_string_equal(l->lowers[0].name, "apps");
	assert_string_equal(l->lowers[0].target.part->name, "apps");
	/* offsets omitted: each partition follows the previous one */
	assert_int_equal(layout_find_partition(l, "kernel-a")->offset, 3u << 20);
	layout_free(l);
}

/* ---------- invalid layouts ---------- */

struct bad {
	const char *file;
	const char *path;    /* JSON path, "" for syntax errors */
	const char *reason;  /* substring of the reason */
};

static const struct bad bad_layouts[] = {
	{ "overlap", "partitions[4]", "partition \"rootfs-a\" [0x500000-0x2d00000) overlaps partition \"kernel-a\"" },
	{ "offset-unaligned", "partitions[3].offset", "0x150000 is not a multiple of the erase block size 0x20000 of device \"nand0\"" },
	{ "size-unaligned", "partitions[7].size", "0xfa000 is not a multiple of the erase block size 0x20000" },
	{ "past-end", "partitions[7].size", "ends at 0x9940000, past the end of device \"nand0\" (0x8000000)" },
	{ "slot-size-differs", "slots[0].slots.B.rootfs", "size 0x2400000 differs from slot A's 0x2800000" },
	{ "missing-slots", "slots", "required key is missing" },
	{ "missing-overlays", "overlays", "required key is missing" },
	{ "unknown-key-top", "colour", "unknown key (allowed here: board, compatible," },
	{ "unknown-key-partition", "partitions[2].sise", "unknown key (allowed here: name, device, offset, size, readonly)" },
	{ "wrong-type-size", "devices[0].size", "expected a size (number or string like \"16MiB\"), got boolean" },
	{ "wrong-type-board", "board", "expected a string, got int" },
	{ "duplicate-partition", "partitions[6].name", "duplicate partition name \"rootfs-a\" (also partitions[4])" },
	{ "storage-mismatch", "slots[0].slots.A.rootfs.storage", "storage \"nor\" but partition \"rootfs-a\" is on nand device \"nand0\"" },
	{ "same-partition-ab", "slots[0].slots.B.rootfs", "partition \"rootfs-a\" is already used by slots[0].slots.A.rootfs" },
	{ "two-roles", "overlays[0]", "partition \"kernel-b\" is already used by slots[0].slots.B.kernel" },
	{ "env-outside", "env.copies[0].offset", "env sector [0x20000-0x40000) is not inside partition \"u-boot-env\"" },
	{ "env-unaligned", "env.copies[1].offset", "0x1000 is not aligned to the erase block size 0x20000" },
	{ "env-three-copies", "env.copies", "has 3 entries" },
	{ "unknown-bootloader", "bootloader", "no partition named \"uboot\"" },
	{ "single-slot", "slots", "no slot group has exactly 2 slots" },
	{ "overlay-relative", "overlays[0].path", "\"data\" is not an absolute path" },
	{ "overlay-duplicate-path", "overlays[1].path", "\"/\" already has an overlay (overlays[0])" },
	{ "device-type", "devices[0].type", "\"emmc\" is not one of \"nor\", \"nand\"" },
	{ "nandsim-id-mismatch", "devices[0].nandsim_id", "is a chip with 512-byte pages, 16-byte OOB and 16 KiB erase blocks" },
	{ "negative-size", "partitions[1].size", "must not be negative" },
	{ "bad-size-string", "partitions[1].size", "\"128 kilobytes\" is not a size" },
	{ "lower-relative-file", "lowers[0].path", "\"img/apps.sqfs\" is not an absolute path" },
	{ "slot-name", "slots[0].slots.B-1", "slot name \"B-1\" may only contain letters, digits and '_'" },
	{ "target-unknown-key", "slots[0].slots.A.rootfs.volume", "unknown key (allowed here: storage, partition)" },
	{ "max-tries", "slots[0].max_tries", "0 is not between 1 and 99" },
	{ "unknown-device", "partitions[0].device", "no device named \"nand1\"" },
	{ "nor-oob", "devices[0].oob", "NOR flash has no OOB area" },
	{ "ubi-too-small", "ubi[0].volumes", "volumes need 2315 LEBs of 126976 bytes but partition \"ubi\" offers only 1978" },
	{ "ubifs-static", "overlays[0].volume", "UBIFS needs a dynamic volume; \"overlay\" is static" },
	{ "ubi-unknown-volume", "slots[0].slots.A.rootfs.volume", "UBI device \"ubi\" has no volume \"rootfs_c\"" },
	{ "ubi-duplicate-volume", "ubi[0].volumes[2].name", "duplicate UBI volume name \"kernel_a\"" },
	{ "ubi-subpage", "devices[0].subpage", "4096 is not a power of two no larger than the page (2048)" },
	{ "ubi-two-autoresize", "ubi[0].volumes[4].autoresize", "only one volume may grow at attach (also ubi[0].volumes[3])" },
	{ "syntax-error", "", "line 4, column 2: JSON syntax error: object value separator ',' expected" },
	{ "truncated", "", "JSON syntax error: unexpected end of data" },
};

TEST(test_invalid_layouts)
{
	_cleanup_free_ char *dir = testlib_src_path("tests/layouts");
	DIR *d;
	struct dirent *de;
	size_t files = 0;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad_layouts); i++) {
		const struct bad *b = &bad_layouts[i];
		_cleanup_free_ char *rel = testlib_asprintf("tests/layouts/%s.json", b->file);
		_cleanup_free_ char *path = testlib_src_path(rel), *prefix = NULL;
		struct error err = {};
		struct layout *l = NULL;
		int r;

		r = layout_load(path, &l, &err);
		if (r != -EINVAL)
			fail_msg("%s: expected -EINVAL, got %d (%s)", b->file, r, err.msg);
		assert_null(l);
		if (*b->path)
			assert_true(asprintf(&prefix, "%s: %s: ", path, b->path) > 0);
		else
			assert_true(asprintf(&prefix, "%s: ", path) > 0);
		if (strncmp(err.msg, prefix, strlen(prefix)) || !strstr(err.msg, b->reason))
			fail_msg("%s:\n  got      \"%s\"\n  expected \"%s...%s...\"", b->file, err.msg,
				 prefix, b->reason);
	}
	/* and every fixture in the directory has an expectation above */
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name), k;

		if (len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		for (k = 0; k < ELEMENTSOF(bad_layouts); k++)
			if (strlen(bad_layouts[k].file) == len - 5 &&
			    !strncmp(bad_layouts[k].file, de->d_name, len - 5))
				break;
		if (k == ELEMENTSOF(bad_layouts))
			fail_msg("tests/layouts/%s has no expected message in test-layout.c", de->d_name);
		files++;
	}
	closedir(d);
	assert_int_equal(files, ELEMENTSOF(bad_layouts));
	assert_true(files >= 15);
}

#define MINI_DEV "\"devices\": [{\"name\": \"n\", \"type\": \"nand\", \"size\": \"64MiB\", " \
	"\"erase_block\": \"128KiB\", \"page\": 2048, \"oob\": 64}]"
#define MINI_REST "\"slots\": [{\"name\": \"rootfs\", \"slots\": {" \
	"\"A\": {\"rootfs\": {\"storage\": \"nand\", \"partition\": \"a\"}}, " \
	"\"B\": {\"rootfs\": {\"storage\": \"nand\", \"partition\": \"b\"}}}}], " \
	"\"overlays\": [{\"type\": \"tmpfs\"}]"

TEST(test_inline_errors)
{
	struct error err;
	struct layout *l = NULL;

	(void)state;
	assert_int_equal(parse_err("[1, 2]", &err), -EINVAL);
	assert_string_equal(err.msg, "t.json: the layout must be a JSON object, not array");
	assert_int_equal(parse_err("{} junk", &err), -EINVAL);
	assert_string_equal(err.msg, "t.json: line 1, column 4: trailing data after the JSON object");
	assert_int_equal(parse_err("{\"board\": \"x\"}", &err), -EINVAL);
	assert_string_equal(err.msg, "t.json: compatible: required key is missing");
	/* two devices: partitions must name theirs */
	assert_int_equal(parse_err("{\"board\": \"b\", \"compatible\": \"c\", \"devices\": ["
				   "{\"name\": \"n\", \"type\": \"nor\", \"size\": 65536, \"erase_block\": 65536},"
				   "{\"name\": \"n\", \"type\": \"nor\", \"size\": 65536, \"erase_block\": 65536}]}",
				   &err), -EINVAL);
	assert_string_equal(err.msg, "t.json: devices[1].name: duplicate device name \"n\" (also devices[0])");
	assert_int_equal(parse_err("{\"board\": \"b\", \"compatible\": \"c\", " MINI_DEV ", "
				   "\"partitions\": [{\"name\": \"a\", \"size\": \"16MiB\"}, "
				   "{\"name\": \"b\", \"size\": \"16MiB\"}], \"slots\": ["
				   "{\"name\": \"rootfs\", \"slots\": {\"A\": {\"rootfs\": {\"storage\": \"nand\", "
				   "\"partition\": \"a\"}}, \"B\": {\"rootfs\": {\"storage\": \"nand\", "
				   "\"partition\": \"b\"}}}}, {\"name\": \"rootfs\", \"slots\": {}}]}",
				   &err), -EINVAL);
	assert_string_equal(err.msg, "t.json: slots[1].name: duplicate slot group name \"rootfs\" "
			    "(also slots[0])");
	/* the minimal valid layout: defaults */
	assert_int_equal(layout_parse("{\"board\": \"b\", \"compatible\": \"c\", " MINI_DEV ", "
				      "\"partitions\": [{\"name\": \"a\", \"size\": \"16MiB\"}, "
				      "{\"name\": \"b\", \"size\": \"16MiB\"}], " MINI_REST "}",
				      "t.json", &l, &err), 0);
	assert_int_equal(l->partitions[1].offset, 16u << 20);
	assert_ptr_equal(l->partitions[1].dev, &l->devices[0]);
	assert_int_equal(l->env.n_copies, 0);
	assert_null(l->bootloader);
	assert_int_equal(l->groups[0].max_tries, 3);
	assert_false(l->groups[0].slots[0].has_kernel);
	assert_string_equal(l->overlays[0].path, "/");
	assert_string_equal(layout_device_mtd_id(&l->devices[0]), "n");
	layout_free(l);
	assert_int_equal(layout_load("/nonexistent/board.json", &l, &err), -ENOENT);
	assert_string_equal(err.msg, "/nonexistent/board.json: cannot read: No such file or directory");
}

/* ---------- conversions ---------- */

TEST(test_mtdparts)
{
	struct layout *l = load_ok("layouts/nandsim-128m.json");
	_cleanup_free_ char *s = NULL, *s2 = NULL, *s3 = NULL;

	(void)state;
	assert_int_equal(layout_kernel_mtdparts(l, &s), 0);
	assert_string_equal(s, "mtdparts=NAND 128MiB 3,3V 8-bit:1m@0(u-boot)ro,128k@1m(u-boot-env),"
			    "128k@1152k(u-boot-env-redund),4m@1280k(kernel-a),40m@5376k(rootfs-a),"
			    "4m@46336k(kernel-b),40m@50432k(rootfs-b),39680k@91392k(rootfs_data)");
	assert_int_equal(layout_kernel_mtdparts_device(l, &l->devices[0], &s2), 0);
	assert_string_equal(s, s2);
	layout_free(l);

	l = load_ok("layouts/nor-router-16m.json");
	assert_int_equal(layout_kernel_mtdparts(l, &s3), 0);
	assert_string_equal(s3, "mtdparts=mtdram test device:256k@0(u-boot)ro,64k@256k(u-boot-env),"
			    "64k@320k(u-boot-env-redund),2m@384k(kernel-a),5m@2432k(rootfs-a),"
			    "2m@7552k(kernel-b),5m@9600k(rootfs-b),1664k@14720k(rootfs_data)");
	layout_free(l);
}

static void check_nandsim(const char *rel, const char *module, const char *params)
{
	struct layout *l = load_ok(rel);
	_cleanup_free_ char *p = NULL;
	const char *m = NULL;

	assert_int_equal(layout_kernel_nandsim(l, NULL, &m, &p), 0);
	assert_string_equal(m, module);
	assert_string_equal(p, params);
	layout_free(l);
}

TEST(test_nandsim_params)
{
	(void)state;
	check_nandsim("layouts/nandsim-128m.json", "nandsim",
		      "id_bytes=0x20,0xf1,0x00,0x15 parts=8,1,1,32,320,32,320,310");
	check_nandsim("layouts/nandsim-256m-16k.json", "nandsim",
		      "id_bytes=0x20,0x71 parts=32,1,1,256,3072,256,3072,9694");
	check_nandsim("layouts/nand-ubi.json", "nandsim", "id_bytes=0x20,0xaa,0x00,0x15 parts=16,4,4,2024");
	check_nandsim("layouts/nor-router-16m.json", "mtdram", "total_size=16384 erase_size=64");
}

static struct layout *mini(const char *dev, const char *parts)
{
	_cleanup_free_ char *json = NULL;
	struct error err = {};
	struct layout *l = NULL;

	assert_true(asprintf(&json, "{\"board\": \"b\", \"compatible\": \"c\", \"devices\": [%s], "
			     "\"partitions\": [%s], " MINI_REST "}", dev, parts) > 0);
	if (layout_parse(json, "mini.json", &l, &err) < 0)
		fail_msg("%s", err.msg);
	return l;
}

TEST(test_nandsim_synthesized)
{
	static const struct {
		const char *why, *device, *parts;
		int r;
		const char *params;
	} cases[] = {
		{ "no nandsim_id: a 64 MiB large-page chip from the id table; a gap before "
		  "\"b\" becomes a filler partition",
		  "\"size\": \"64MiB\", \"erase_block\": \"128KiB\", \"page\": 2048, \"oob\": 64",
		  "{\"name\": \"a\", \"size\": \"16MiB\"}, "
		  "{\"name\": \"b\", \"offset\": \"32MiB\", \"size\": \"16MiB\"}",
		  0, "id_bytes=0x20,0xa2,0x00,0x15 parts=128,128,128" },
		{ "no chip of 32 MiB with 4 KiB pages and 256 KiB blocks: overridesize",
		  "\"size\": \"32MiB\", \"erase_block\": \"256KiB\", \"page\": 4096, \"oob\": 128",
		  "{\"name\": \"a\", \"size\": \"8MiB\"}, {\"name\": \"b\", \"size\": \"8MiB\"}",
		  0, "id_bytes=0x20,0xf1,0x00,0x26 overridesize=7 parts=32,32" },
		{ "1 KiB pages: nandsim cannot",
		  "\"size\": \"64MiB\", \"erase_block\": \"64KiB\", \"page\": 1024, \"oob\": 32",
		  "{\"name\": \"a\", \"size\": \"8MiB\"}, {\"name\": \"b\", \"size\": \"8MiB\"}",
		  -EOPNOTSUPP, NULL },
	};
	struct layout *l;
	_cleanup_free_ char *p3 = NULL;
	const char *m;
	char parts[4096];
	size_t o = 0;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *dev = testlib_asprintf("{\"name\": \"n\", \"type\": \"nand\", %s}",
							    cases[i].device);
		_cleanup_free_ char *params = NULL;
		int r;

		l = mini(dev, cases[i].parts);
		r = layout_kernel_nandsim(l, NULL, &m, &params);
		if (r != cases[i].r)
			fail_msg("%s: %d, expected %d", cases[i].why, r, cases[i].r);
		if (r == 0)
			assert_string_equal(params, cases[i].params);
		layout_free(l);
	}

	/* nandsim takes at most 32 partitions (CONFIG_NANDSIM_MAX_PARTS) */
	o = snprintf(parts, sizeof(parts), "{\"name\": \"a\", \"size\": \"128KiB\"}, "
		     "{\"name\": \"b\", \"size\": \"128KiB\"}");
	for (int i = 0; i < 31; i++)
		o += snprintf(parts + o, sizeof(parts) - o, ", {\"name\": \"p%d\", \"size\": \"128KiB\"}", i);
	l = mini("{\"name\": \"n\", \"type\": \"nand\", \"size\": \"64MiB\", \"erase_block\": \"128KiB\", "
		 "\"page\": 2048, \"oob\": 64}", parts);
	assert_int_equal(layout_kernel_nandsim(l, NULL, &m, &p3), -E2BIG);
	layout_free(l);
}

/* ---------- comparison with a (fake) sysfs MTD table ---------- */

static void put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[512];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* One mtdN per partition as the kernel would create it from mtdparts=. */
static void fake_sysfs(const char *root, const struct layout *l, const char *type)
{
	for (size_t i = 0; i < l->n_partitions; i++) {
		const struct layout_partition *p = &l->partitions[i];
		char dir[512];

		snprintf(dir, sizeof(dir), "%s/mtd%d", root, layout_partition_index(l, p));
		assert_int_equal(mkdir(dir, 0755), 0);
		put(dir, "name", "%s", p->name);
		put(dir, "type", "%s", type);
		put(dir, "size", "%llu", (unsigned long long)p->size);
		put(dir, "erasesize", "%u", p->dev->erasesize);
		put(dir, "writesize", "%u", p->dev->writesize);
		put(dir, "oobsize", "%u", p->dev->oobsize);
		put(dir, "offset", "%llu", (unsigned long long)p->offset);
		/* the read-only char device entry must be ignored */
		snprintf(dir, sizeof(dir), "%s/mtd%dro", root, layout_partition_index(l, p));
		assert_int_equal(mkdir(dir, 0755), 0);
	}
}

static char *mkroot(void)
{
	char *root = strdup("/tmp/flashd-test-sysfs-XXXXXX");

	assert_non_null(mkdtemp(root));
	return root;
}

static void rmroot(char *root)
{
	testlib_rm_rf(root);
	free(root);
}

TEST(test_check_system)
{
	struct layout *l = load_ok("layouts/nandsim-128m.json");
	struct error err = {};
	char *root = mkroot(), dir[600];
	int idx = layout_partition_index(l, layout_find_partition(l, "rootfs-a"));

	(void)state;
	fake_sysfs(root, l, "nand");
	assert_int_equal(layout_kernel_check_system(l, root, &err), 0);

	/* size differs */
	snprintf(dir, sizeof(dir), "%s/mtd%d", root, idx);
	put(dir, "size", "%u", 20u << 20);
	assert_int_equal(layout_kernel_check_system(l, root, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "partition \"rootfs-a\""));
	assert_non_null(strstr(err.msg, "partitions[4]"));
	assert_non_null(strstr(err.msg, "size 0x2800000 in the layout, 0x1400000 in"));
	put(dir, "size", "%u", 40u << 20);

	/* erase size differs */
	put(dir, "erasesize", "%u", 16384);
	assert_int_equal(layout_kernel_check_system(l, root, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "erase size 0x20000 in the layout, 0x4000 in"));
	put(dir, "erasesize", "%u", 128 * 1024);

	/* offset differs */
	put(dir, "offset", "%u", 0x500000);
	assert_int_equal(layout_kernel_check_system(l, root, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "offset 0x540000 in the layout, 0x500000 in"));
	put(dir, "offset", "%u", 0x540000);

	/* type differs */
	put(dir, "type", "nor");
	assert_int_equal(layout_kernel_check_system(l, root, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "is of type \"nor\", the layout says nand"));
	put(dir, "type", "nand");

	/* name missing (e.g. nandsim's default partition names) */
	put(dir, "name", "NAND simulator partition 4");
	assert_int_equal(layout_kernel_check_system(l, root, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "partition \"rootfs-a\""));
	assert_non_null(strstr(err.msg, "no MTD device of that name"));
	put(dir, "name", "rootfs-a");
	assert_int_equal(layout_kernel_check_system(l, root, &err), 0);
	rmroot(root);

	/* no MTD at all */
	assert_int_equal(layout_kernel_check_system(l, "/nonexistent/mtd", &err), -ENODEV);
	assert_non_null(strstr(err.msg, "/nonexistent/mtd: cannot open"));
	layout_free(l);

	/* mtdram reports type "ram": a NOR board matches */
	l = load_ok("layouts/nor-router-16m.json");
	root = mkroot();
	fake_sysfs(root, l, "ram");
	assert_int_equal(layout_kernel_check_system(l, root, &err), 0);
	rmroot(root);
	layout_free(l);
}

TEST(test_strings)
{
	(void)state;
	assert_string_equal(layout_storage_to_string(LAYOUT_STORAGE_UBI), "ubi");
	assert_string_equal(layout_storage_to_string(LAYOUT_STORAGE_FILE), "file");
	assert_null(layout_storage_to_string(_LAYOUT_STORAGE_MAX));
	assert_string_equal(layout_overlay_type_to_string(LAYOUT_OVERLAY_TMPFS), "tmpfs");
	assert_string_equal(flash_type_to_string(FLASH_NOR), "nor");
	assert_string_equal(layout_ubi_vol_type_to_string(LAYOUT_UBI_STATIC), "static");
	layout_free(NULL);
}
