/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsimctl: manage flash simulator files: create, inspect, inject faults,
 * arm and clear power cuts, dump pages. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "nsim.h"
#include "nsim_json.h"
#include "nsim_spec.h"
#include "tool.h"
#include "util.h"

enum { EXIT_USAGE = 2 };

struct cmd {
	const char *name;
	const char *usage;
	const char *help;
	int (*run)(int argc, char **argv);
};

#define fail(...) tool_fail("nsimctl", __VA_ARGS__)
/* "usage: nsimctl NAME USAGE" from the command table; EXIT_USAGE. */
static int usage_error(const char *name);

static int open_sim(const char *path, bool writable, struct nsim **ret)
{
	int r = nsim_open(path, writable, ret);

	if (r < 0)
		fail("cannot open %s: %s%s", path, strerror(-r),
		     r == -EMEDIUMTYPE ? " (not a simulator: a regular file made by 'nsimctl create')" :
		     "");
	return r;
}

static int parse_u64(const char *what, const char *s, uint64_t *ret)
{
	int r = util_parse_size(s, ret);

	if (r < 0)
		fail("invalid %s '%s'", what, s);
	return r;
}

static int cmd_create(int argc, char **argv)
{
	struct nsim_spec spec;
	struct error err = {};
	int r;

	if (nsim_spec_parse(argc, argv, &spec, &err) < 0)
		return fail("create: %s (usage: nsimctl create FILE --type nand|nor --size S "
			    "--erase-block S)", err.msg), EXIT_USAGE;
	r = nsim_spec_create(&spec, &err);
	if (r < 0)
		return fail("%s", err.msg), r == -EINVAL && spec.bad_blocks ? EXIT_USAGE : EXIT_FAILURE;
	return EXIT_SUCCESS;
}

static int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "blocks", no_argument, NULL, 'b' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_nsim_ struct nsim *s = NULL;
	bool json = false, blocks = false;
	struct nsim_info i;
	int c, r;

	while ((c = getopt_long(argc, argv, "jb", opts, NULL)) >= 0) {
		if (c == 'j')
			json = true;
		else if (c == 'b')
			blocks = true;
		else
			return EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error(argv[0]);
	if (open_sim(argv[optind], false, &s) < 0)
		return EXIT_FAILURE;
	r = nsim_get_info(s, &i);
	if (r < 0)
		return fail("%s: %s", argv[optind], strerror(-r));
	if (json) {
		struct json_object *j = json_object_new_object(), *cnt = json_object_new_object();
		struct json_object *arr = NULL;
#define U(o, k, v) json_object_object_add(o, k, json_object_new_uint64(v))
		json_object_object_add(j, "type", json_object_new_string(nsim_type_to_string(i.geo.type)));
		U(j, "version", i.version);
		U(j, "size", i.geo.size);
		U(j, "erasesize", i.geo.erasesize);
		U(j, "writesize", i.geo.writesize);
		U(j, "oobsize", i.geo.oobsize);
		U(j, "oobfree_offset", i.oobfree_off);
		U(j, "oobfree_length", i.oobfree_len);
		U(j, "blocks", i.blocks);
		U(j, "bad_blocks", i.bad_blocks);
		U(j, "data_offset", nsim_data_offset());
		nsim_json_add_state(j, &i);
		nsim_json_add_counters(cnt, &i.cnt);
		json_object_object_add(j, "counters", cnt);
		if (blocks) {
			arr = json_object_new_array();
			json_object_object_add(j, "block_list", arr);
		}
		for (uint64_t b = 0; blocks && b < i.blocks; b++) {
			struct json_object *o = json_object_new_object();
			struct nsim_block blk;

			if (nsim_get_block(s, b, &blk) < 0)
				break;
			U(o, "block", b);
			U(o, "erase_count", blk.erase_count);
			json_object_object_add(o, "bad", json_object_new_boolean(blk.bad));
			json_object_object_add(o, "factory_bad", json_object_new_boolean(blk.factory_bad));
			json_object_object_add(o, "fail_program",
					       json_object_new_boolean(blk.faults & NSIM_FAULT_PROGRAM));
			json_object_object_add(o, "fail_erase",
					       json_object_new_boolean(blk.faults & NSIM_FAULT_ERASE));
			json_object_object_add(o, "flip",
					       json_object_new_string(nsim_flip_to_string(blk.flip)));
			U(o, "next_page", blk.next_page);
			json_object_array_add(arr, o);
		}
#undef U
		puts(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY));
		json_object_put(j);
		return EXIT_SUCCESS;
	}
	printf("type:        %s\n", nsim_type_to_string(i.geo.type));
	printf("size:        %" PRIu64 " bytes, %" PRIu64 " blocks of %" PRIu32 "\n", i.geo.size,
	       i.blocks, i.geo.erasesize);
	if (i.geo.type == NSIM_NAND)
		printf("page:        %" PRIu32 " + %" PRIu32 " OOB (free %" PRIu32 "..%" PRIu32 ")\n",
		       i.geo.writesize, i.geo.oobsize, i.oobfree_off, i.oobfree_off + i.oobfree_len - 1);
	printf("bad blocks:  %" PRIu64 "\n", i.bad_blocks);
	printf("power:       %s", i.power_cut ? "CUT (run 'nsimctl power-on')" : "on");
	if (!i.power_cut && i.powercut_left >= 0)
		printf(", cut after %" PRId64 " more ops%s", i.powercut_left, i.tear ? " (tearing)" : "");
	printf("\nbitflips:    %" PRIu32 " ppm corrected, %" PRIu32 " ppm uncorrectable, seed %" PRIu64
	       "\n", i.flip_ppm, i.fail_ppm, i.seed);
	printf("counters:    %" PRIu64 " erases, %" PRIu64 " programs, %" PRIu64 " OOB programs, %"
	       PRIu64 " page reads, %" PRIu64 " corrected, %" PRIu64 " failed, %" PRIu64
	       " mutating ops\n", i.cnt.erases, i.cnt.programs, i.cnt.oob_programs,
	       i.cnt.page_reads, i.cnt.corrected, i.cnt.failed, i.cnt.mutations);
	for (uint64_t b = 0; blocks && b < i.blocks; b++) {
		struct nsim_block blk;

		if (nsim_get_block(s, b, &blk) < 0)
			break;
		printf("block %5" PRIu64 ": erases %6" PRIu32 "%s%s%s%s%s next_page %" PRIu32 "\n", b,
		       blk.erase_count, blk.bad ? (blk.factory_bad ? " BAD(factory)" : " BAD") : "",
		       blk.faults & NSIM_FAULT_PROGRAM ? " fail-program" : "",
		       blk.faults & NSIM_FAULT_ERASE ? " fail-erase" : "",
		       blk.flip != NSIM_FLIP_NONE ? " flip=" : "",
		       blk.flip != NSIM_FLIP_NONE ? nsim_flip_to_string(blk.flip) : "", blk.next_page);
	}
	return EXIT_SUCCESS;
}

static int cmd_fault(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block", required_argument, NULL, 'b' },
		{ "program", no_argument, NULL, 'p' },
		{ "erase", no_argument, NULL, 'e' },
		{ "flip", required_argument, NULL, 'F' },
		{ "clear", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_nsim_ struct nsim *s = NULL;
	uint64_t block = UINT64_MAX;
	unsigned faults = 0;
	int flip = -1, c, r;
	bool clear = false;

	while ((c = getopt_long(argc, argv, "b:pecF:", opts, NULL)) >= 0) {
		switch (c) {
		case 'b':
			if (parse_u64("--block", optarg, &block) < 0)
				return EXIT_USAGE;
			break;
		case 'p':
			faults |= NSIM_FAULT_PROGRAM;
			break;
		case 'e':
			faults |= NSIM_FAULT_ERASE;
			break;
		case 'F':
			flip = nsim_flip_from_string(optarg);
			if (flip < 0)
				return fail("--flip must be none, corrected or uncorrectable"), EXIT_USAGE;
			break;
		case 'c':
			clear = true;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || block == UINT64_MAX)
		return usage_error(argv[0]);
	if (open_sim(argv[optind], true, &s) < 0)
		return EXIT_FAILURE;
	if (faults || clear) {
		r = nsim_set_block_faults(s, block, clear ? 0 : faults);
		if (r < 0)
			return fail("block %" PRIu64 ": %s", block, strerror(-r));
	}
	if (flip >= 0 || clear) {
		r = nsim_set_block_flip(s, block, clear ? NSIM_FLIP_NONE : (enum nsim_flip)flip);
		if (r < 0 && !(clear && r == -EOPNOTSUPP))
			return fail("block %" PRIu64 ": %s", block, strerror(-r));
	}
	return EXIT_SUCCESS;
}

static int cmd_flip_rate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "corrected", required_argument, NULL, 'c' },
		{ "uncorrectable", required_argument, NULL, 'u' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_nsim_ struct nsim *s = NULL;
	uint64_t corr = 0, unc = 0, seed = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "c:u:s:", opts, NULL)) >= 0) {
		uint64_t *t = c == 'c' ? &corr : c == 'u' ? &unc : c == 's' ? &seed : NULL;
		if (!t || parse_u64("value", optarg, t) < 0)
			return EXIT_USAGE;
	}
	if (argc - optind != 1 || corr > 1000000 || unc > 1000000)
		return usage_error(argv[0]);
	if (open_sim(argv[optind], true, &s) < 0)
		return EXIT_FAILURE;
	r = nsim_set_flip_rate(s, corr, unc, seed);
	return r < 0 ? fail("%s: %s", argv[optind], strerror(-r)) : EXIT_SUCCESS;
}

static int cmd_powercut(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "after", required_argument, NULL, 'a' },
		{ "tear", no_argument, NULL, 't' },
		{ "off", no_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_nsim_ struct nsim *s = NULL;
	uint64_t after = UINT64_MAX;
	bool tear = false, off = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "a:to", opts, NULL)) >= 0) {
		if (c == 'a') {
			if (parse_u64("--after", optarg, &after) < 0 || after > INT64_MAX)
				return EXIT_USAGE;
		} else if (c == 't') {
			tear = true;
		} else if (c == 'o') {
			off = true;
		} else {
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || (after == UINT64_MAX) == !off)
		return usage_error(argv[0]);
	if (open_sim(argv[optind], true, &s) < 0)
		return EXIT_FAILURE;
	r = nsim_set_powercut(s, off ? -1 : (int64_t)after, tear);
	return r < 0 ? fail("%s: %s", argv[optind], strerror(-r)) : EXIT_SUCCESS;
}

static int cmd_power_on(int argc, char **argv)
{
	_cleanup_nsim_ struct nsim *s = NULL;
	int r;

	if (argc != 2)
		return usage_error(argv[0]);
	if (open_sim(argv[1], true, &s) < 0)
		return EXIT_FAILURE;
	r = nsim_power_on(s);
	return r < 0 ? fail("%s: %s", argv[1], strerror(-r)) : EXIT_SUCCESS;
}

static int cmd_markbad(int argc, char **argv)
{
	_cleanup_nsim_ struct nsim *s = NULL;
	uint64_t b;
	int r;

	if (argc != 3)
		return usage_error(argv[0]);
	if (parse_u64("BLOCK", argv[2], &b) < 0)
		return EXIT_USAGE;
	if (open_sim(argv[1], true, &s) < 0)
		return EXIT_FAILURE;
	r = nsim_set_factory_bad(s, b);
	return r < 0 ? fail("block %" PRIu64 ": %s", b, strerror(-r)) : EXIT_SUCCESS;
}

static void hexdump(uint64_t base, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 16) {
		size_t n = MIN((size_t)16, len - i);

		printf("%08" PRIx64 " ", base + i);
		for (size_t k = 0; k < 16; k++)
			printf(k < n ? " %02x" : "   ", p[i + k]);
		printf("  |");
		for (size_t k = 0; k < n; k++)
			putchar(p[i + k] >= 0x20 && p[i + k] < 0x7f ? p[i + k] : '.');
		printf("|\n");
	}
}

static int cmd_dump(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "block", required_argument, NULL, 'b' },
		{ "page", required_argument, NULL, 'p' },
		{ "offset", required_argument, NULL, 'O' },
		{ "length", required_argument, NULL, 'l' },
		{ "oob", no_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_nsim_ struct nsim *s = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	uint64_t block = UINT64_MAX, page = UINT64_MAX, off = 0, len = 0;
	bool oob = false;
	struct nsim_info i;
	int c, r;

	while ((c = getopt_long(argc, argv, "b:p:O:l:o", opts, NULL)) >= 0) {
		uint64_t *t = c == 'b' ? &block : c == 'p' ? &page : c == 'O' ? &off :
			      c == 'l' ? &len : NULL;
		if (c == 'o')
			oob = true;
		else if (!t || parse_u64("value", optarg, t) < 0)
			return EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error(argv[0]);
	if (open_sim(argv[optind], false, &s) < 0 || nsim_get_info(s, &i) < 0)
		return EXIT_FAILURE;
	if (block != UINT64_MAX) {
		off = block * i.geo.erasesize;
		len = i.geo.erasesize;
	} else if (page != UINT64_MAX) {
		if (i.geo.type != NSIM_NAND)
			return fail("--page needs a NAND simulator"), EXIT_USAGE;
		off = page * i.geo.writesize;
		len = i.geo.writesize;
	} else if (!len) {
		len = MIN(i.geo.size, (uint64_t)256);
	}
	if (off >= i.geo.size || len > i.geo.size - off || len > 64u * 1024 * 1024)
		return fail("range %#" PRIx64 "+%#" PRIx64 " is outside the chip", off, len), EXIT_USAGE;
	if (oob) {
		if (i.geo.type != NSIM_NAND)
			return fail("NOR has no OOB"), EXIT_USAGE;
		buf = malloc(i.geo.oobsize);
		if (!buf)
			return EXIT_FAILURE;
		for (uint64_t p = off / i.geo.writesize; p < DIV_ROUND_UP(off + len, i.geo.writesize); p++) {
			r = nsim_read_oob_raw(s, p * i.geo.writesize, buf, i.geo.oobsize);
			if (r < 0)
				return fail("page %" PRIu64 ": %s", p, strerror(-r));
			printf("page %" PRIu64 " OOB:\n", p);
			hexdump(0, buf, i.geo.oobsize);
		}
		return EXIT_SUCCESS;
	}
	buf = malloc(len);
	if (!buf)
		return EXIT_FAILURE;
	r = nsim_read(s, off, buf, len);
	if (r < 0 && r != -EUCLEAN && r != -EBADMSG)
		return fail("read %#" PRIx64 "+%#" PRIx64 ": %s", off, len, strerror(-r));
	if (r < 0)
		fprintf(stderr, "nsimctl: note: read returned %s\n", strerror(-r));
	hexdump(off, buf, len);
	return EXIT_SUCCESS;
}

static const struct cmd cmds[] = {
	{ "create", "FILE --type nand|nor --size S --erase-block S [--page S] [--oob S] "
	  "[--bad-blocks 3,17] [--force]", "create an erased chip", cmd_create },
	{ "info", "FILE [--json] [--blocks]", "geometry, fault settings, counters", cmd_info },
	{ "fault", "FILE --block N [--program] [--erase] [--flip none|corrected|uncorrectable] "
	  "[--clear]", "inject per-block faults", cmd_fault },
	{ "flip-rate", "FILE --corrected PPM --uncorrectable PPM [--seed N]",
	  "random bitflips per page read (reproducible)", cmd_flip_rate },
	{ "powercut", "FILE --after N [--tear] | --off", "cut the power after N more mutating ops",
	  cmd_powercut },
	{ "power-on", "FILE", "clear a power cut", cmd_power_on },
	{ "markbad", "FILE BLOCK", "make a block factory-bad", cmd_markbad },
	{ "dump", "FILE [--block N | --page N | --offset O --length L] [--oob]",
	  "hex dump of data or raw OOB", cmd_dump },
};

static int usage_error(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
		if (!strcmp(cmds[i].name, name))
			fail("usage: nsimctl %s %s", name, cmds[i].usage);
	return EXIT_USAGE;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: nsimctl COMMAND ARGS\n\nCommands:\n");
	for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
		fprintf(out, "  %-10s %s\n             %s\n", cmds[i].name, cmds[i].usage, cmds[i].help);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	for (size_t i = 0; i < ELEMENTSOF(cmds); i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		optind = 0;
		return cmds[i].run(argc - 1, argv + 1);
	}
	fail("unknown command '%s' (see 'nsimctl --help')", argv[1]);
	return EXIT_USAGE;
}
