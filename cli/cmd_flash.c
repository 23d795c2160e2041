/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl flash: inspect, erase, write and read MTD devices and simulator
 * files, with bad-block skipping (mtd-utils semantics). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hash.h"
#include "cleanup_json.h"
#include "flash.h"
#include "flashio.h"
#include "jffs2.h"
#include "nsim.h"
#include "nsim_json.h"
#include "nsim_spec.h"
#include "util.h"

struct dev_opts {
	uint64_t offset;
	uint64_t size;
	bool have_window;
};

enum {
	OPT_OFFSET = 0x100,
	OPT_SIZE,
	OPT_CHANGED_ONLY,
	OPT_MARK_BAD,
	OPT_NO_VERIFY,
	OPT_JFFS2,
	OPT_LENGTH,
};

#define DEV_OPTIONS \
	{ "offset", required_argument, NULL, OPT_OFFSET }, \
	{ "size", required_argument, NULL, OPT_SIZE }

static int parse_size_opt(struct cli_ctx *ctx, const char *opt, const char *v, uint64_t *ret)
{
	struct error err = {};
	int r = util_parse_size_arg(opt, v, ret, &err);

	if (r < 0)
		cli_error(ctx, "%s", err.msg);
	return r;
}

/* Handles --offset/--size; returns 1 when the option was one of them. */
static int dev_opt(struct cli_ctx *ctx, int c, struct dev_opts *d)
{
	switch (c) {
	case OPT_OFFSET:
		d->have_window = true;
		return parse_size_opt(ctx, "--offset", optarg, &d->offset) < 0 ? -EINVAL : 1;
	case OPT_SIZE:
		d->have_window = true;
		return parse_size_opt(ctx, "--size", optarg, &d->size) < 0 ? -EINVAL : 1;
	}
	return 0;
}

static const char *open_hint(int r)
{
	switch (r) {
	case -EPROTONOSUPPORT:
		return " (use sim:PATH, /dev/mtdN or mtd:NAME)";
	case -EMEDIUMTYPE:
		return " (not a flash simulator - a regular file made by 'flashctl flash sim-create' - "
		       "or an unsupported MTD type)";
	case -ENOTTY:
		return " (not an MTD character device)";
	case -ENODEV:
		return " (no MTD device with that name)";
	case -EINVAL:
	case -ERANGE:
		return " (a window must be erase-block aligned and inside the device)";
	}
	return "";
}

static const char *io_hint(int r)
{
	switch (r) {
	case -EIO:
		return " (--mark-bad retires failing blocks)";
	case -ESHUTDOWN:
		return " (simulated power cut: writes are refused until 'nsimctl power-on')";
	case -EINVAL:
		return " (the flash refused the program: not erased, or a page written twice)";
	}
	return "";
}

static int open_dev(struct cli_ctx *ctx, const char *spec, const struct dev_opts *d,
		    bool writable, struct flash **ret)
{
	_cleanup_flash_ struct flash *f = NULL;
	struct flash *w;
	int r;

	r = flash_open(spec, writable, &f);
	if (r < 0) {
		cli_error(ctx, "cannot open %s: %s%s", spec, strerror(-r), open_hint(r));
		return r;
	}
	if (d->have_window) {
		uint64_t size = d->size;

		if (!size && d->offset <= f->info.size)
			size = f->info.size - d->offset;
		r = flash_open_window(f, NULL, d->offset, size, &w);
		if (r < 0) {
			cli_error(ctx, "%s: window offset %#" PRIx64 " size %#" PRIx64
				  " is not erase-block (%#" PRIx32 ") aligned or not inside the %#"
				  PRIx64 " byte device", spec, d->offset, size, f->info.erasesize,
				  f->info.size);
			return r;
		}
		flash_close(f);
		f = w;
	}
	*ret = TAKE_PTR(f);
	return 0;
}

static int usage_error(struct cli_ctx *ctx, const char *cmd, const char *msg)
{
	cli_error(ctx, "%s (see '%s flash %s --help')", msg, ctx->prog, cmd);
	return CLI_EXIT_USAGE;
}

/* ---- info ------------------------------------------------------------------ */

/* Everything info reports, as JSON; text output is formatted from it. */
static int info_build(struct cli_ctx *ctx, const char *spec, struct flash *f,
		      struct json_object **ret)
{
	_cleanup_json_ struct json_object *j = json_object_new_object();
	struct json_object *bad = json_object_new_array();
	struct json_object *ecc = json_object_new_object();
	struct flash_stats st;
	struct nsim *s = flash_sim_nsim(f);
	struct flash_mtd_sysfs sys;
	int r;

	json_object_object_add(j, "device", json_object_new_string(spec));
	json_object_object_add(j, "backend", json_object_new_string(f->ops->name));
	json_object_object_add(j, "name", json_object_new_string(f->info.name));
	json_object_object_add(j, "type", json_object_new_string(flash_type_to_string(f->info.type)));
	json_add_u64(j, "offset", f->base);
	json_add_u64(j, "size", f->info.size);
	json_add_u64(j, "erasesize", f->info.erasesize);
	json_add_u64(j, "writesize", f->info.writesize);
	json_add_u64(j, "oobsize", f->info.oobsize);
	json_add_u64(j, "oobavail", f->info.oobavail);
	json_add_u64(j, "blocks", flash_blocks(f));
	json_object_object_add(j, "bad_blocks", bad);
	for (uint64_t b = 0; b < flash_blocks(f); b++) {
		r = flash_block_isbad(f, b * f->info.erasesize);
		if (r < 0) {
			cli_error(ctx, "%s: bad-block check of block %" PRIu64 " failed: %s", spec, b,
				  strerror(-r));
			json_object_put(ecc);
			return CLI_EXIT_FAIL;
		}
		if (r)
			json_object_array_add(bad, json_object_new_uint64(b));
	}
	json_object_object_add(j, "ecc", ecc);
	r = flash_get_stats(f, &st);
	if (r < 0) {
		cli_error(ctx, "%s: cannot read ECC statistics: %s", spec, strerror(-r));
		return CLI_EXIT_FAIL;
	}
	json_add_u64(ecc, "corrected", st.corrected);
	json_add_u64(ecc, "failed", st.failed);
	if (s) {
		struct json_object *o = json_object_new_object();
		struct nsim_info i;
		uint64_t first = f->base / f->info.erasesize, min = UINT64_MAX, max = 0, sum = 0;

		json_object_object_add(j, "sim", o);
		r = nsim_get_info(s, &i);
		if (r < 0) {
			cli_error(ctx, "%s: cannot read the simulator state: %s", spec, strerror(-r));
			return CLI_EXIT_FAIL;
		}
		for (uint64_t b = 0; b < flash_blocks(f); b++) {
			struct nsim_block blk;
			if (nsim_get_block(s, first + b, &blk) < 0)
				continue;
			min = MIN(min, (uint64_t)blk.erase_count);
			max = MAX(max, (uint64_t)blk.erase_count);
			sum += blk.erase_count;
		}
		json_add_u64(o, "erase_count_min", min == UINT64_MAX ? 0 : min);
		json_add_u64(o, "erase_count_max", max);
		json_add_u64(o, "erase_count_total", sum);
		nsim_json_add_state(o, &i);
		nsim_json_add_counters(o, &i.cnt);
	}
	if (flash_mtd_get_sysfs(f, &sys) >= 0) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(j, "mtd", o);
		json_add_u64(o, "index", sys.index);
		json_object_object_add(o, "name", json_object_new_string(sys.name));
		json_object_object_add(o, "type", json_object_new_string(sys.type));
		json_add_u64(o, "size", sys.size);
		json_add_u64(o, "offset", sys.offset);
		json_add_u64(o, "flags", sys.flags);
		if (sys.have_ecc) {
			json_add_u64(o, "bad_blocks", sys.bad_blocks);
			json_add_u64(o, "bbt_blocks", sys.bbt_blocks);
			json_add_u64(o, "corrected_bits", sys.corrected_bits);
			json_add_u64(o, "ecc_failures", sys.ecc_failures);
			json_add_u64(o, "ecc_strength", sys.ecc_strength);
			json_add_u64(o, "bitflip_threshold", sys.bitflip_threshold);
		}
	}
	*ret = TAKE_PTR(j);
	return CLI_EXIT_OK;
}

static void print_kv_size(const char *k, uint64_t v)
{
	char b[32];

	printf("%-16s %s (%" PRIu64 " bytes)\n", k, util_format_size(v, b, sizeof(b)), v);
}

static int info_text(const char *spec, struct flash *f, struct json_object *j)
{
	struct json_object *bad, *o, *v;

	printf("%-16s %s (%s backend)\n", "device:", spec,
	       json_object_get_string(json_object_object_get(j, "backend")));
	printf("%-16s %s\n", "name:", f->info.name);
	printf("%-16s %s\n", "type:", flash_type_to_string(f->info.type));
	if (f->root != f)
		printf("%-16s %#" PRIx64 " on the device\n", "window offset:", f->base);
	print_kv_size("size:", f->info.size);
	print_kv_size("erase block:", f->info.erasesize);
	print_kv_size("write size:", f->info.writesize);
	if (f->info.type == FLASH_NAND)
		printf("%-16s %" PRIu32 " bytes (%" PRIu32 " free in the AUTO layout)\n", "oob:",
		       f->info.oobsize, f->info.oobavail);
	bad = json_object_object_get(j, "bad_blocks");
	printf("%-16s %" PRIu64 " (%zu bad", "blocks:", flash_blocks(f), json_object_array_length(bad));
	for (size_t i = 0; i < json_object_array_length(bad); i++)
		printf("%s%s", i ? ", " : ": ", json_object_get_string(json_object_array_get_idx(bad, i)));
	printf(")\n");
	o = json_object_object_get(j, "ecc");
	printf("%-16s %s corrected, %s uncorrectable\n", "ecc:",
	       json_object_get_string(json_object_object_get(o, "corrected")),
	       json_object_get_string(json_object_object_get(o, "failed")));
	if (json_object_object_get_ex(j, "sim", &o)) {
		printf("%-16s min %s, max %s, total %s\n", "erase counts:",
		       json_object_get_string(json_object_object_get(o, "erase_count_min")),
		       json_object_get_string(json_object_object_get(o, "erase_count_max")),
		       json_object_get_string(json_object_object_get(o, "erase_count_total")));
		if (json_object_get_boolean(json_object_object_get(o, "power_cut")))
			printf("%-16s CUT (mutating ops refused until 'nsimctl power-on')\n", "power:");
		else if (json_object_get_int64(json_object_object_get(o, "powercut_left")) >= 0)
			printf("%-16s cut armed after %s more ops%s\n", "power:",
			       json_object_get_string(json_object_object_get(o, "powercut_left")),
			       json_object_get_boolean(json_object_object_get(o, "tear")) ?
			       " (tearing)" : "");
		if (json_object_get_int64(json_object_object_get(o, "flip_ppm")) ||
		    json_object_get_int64(json_object_object_get(o, "fail_ppm")))
			printf("%-16s %s ppm corrected, %s ppm uncorrectable per page read\n",
			       "bitflips:", json_object_get_string(json_object_object_get(o, "flip_ppm")),
			       json_object_get_string(json_object_object_get(o, "fail_ppm")));
	}
	if (json_object_object_get_ex(j, "mtd", &o)) {
		printf("%-16s mtd%s \"%s\" type %s\n", "mtd:",
		       json_object_get_string(json_object_object_get(o, "index")),
		       json_object_get_string(json_object_object_get(o, "name")),
		       json_object_get_string(json_object_object_get(o, "type")));
		if (json_object_object_get_ex(o, "ecc_strength", &v))
			printf("%-16s strength %s, corrected_bits %s, ecc_failures %s, bad_blocks %s\n",
			       "mtd ecc:", json_object_get_string(v),
			       json_object_get_string(json_object_object_get(o, "corrected_bits")),
			       json_object_get_string(json_object_object_get(o, "ecc_failures")),
			       json_object_get_string(json_object_object_get(o, "bad_blocks")));
	}
	return CLI_EXIT_OK;
}

static int cmd_info(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { DEV_OPTIONS, { NULL, 0, NULL, 0 } };
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_json_ struct json_object *j = NULL;
	struct dev_opts d = { 0 };
	int c, r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		r = dev_opt(ctx, c, &d);
		if (r <= 0)
			return CLI_EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error(ctx, "info", "expected one DEVICE");
	if (open_dev(ctx, argv[optind], &d, false, &f) < 0)
		return CLI_EXIT_FAIL;
	r = info_build(ctx, argv[optind], f, &j);
	if (r != CLI_EXIT_OK)
		return r;
	if (!ctx->json)
		return info_text(argv[optind], f, j);
	cli_print_json(TAKE_PTR(j));
	return CLI_EXIT_OK;
}

/* ---- erase ----------------------------------------------------------------- */

static int cmd_erase(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		DEV_OPTIONS,
		{ "jffs2", no_argument, NULL, OPT_JFFS2 },
		{ "mark-bad", no_argument, NULL, OPT_MARK_BAD },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_flash_ struct flash *f = NULL;
	struct dev_opts d = { 0 };
	bool jffs2 = false, markbad = false;
	struct flashio_stats st = { 0 };
	flashio_erase_fn *erase;
	const char *spec;
	int c, r;

	while ((c = getopt_long(argc, argv, "j", opts, NULL)) >= 0) {
		if (c == OPT_JFFS2 || c == 'j')
			jffs2 = true;
		else if (c == OPT_MARK_BAD)
			markbad = true;
		else if (dev_opt(ctx, c, &d) <= 0)
			return CLI_EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error(ctx, "erase", "expected one DEVICE");
	spec = argv[optind];
	if (open_dev(ctx, spec, &d, true, &f) < 0)
		return CLI_EXIT_FAIL;
	r = flash_unlock(f);
	if (r < 0) {
		cli_error(ctx, "%s: cannot unlock: %s", spec, strerror(-r));
		return CLI_EXIT_FAIL;
	}
	/* block by block, not flashio_erase_each: a failure names its offset */
	erase = jffs2 ? jffs2_erase_block : flashio_erase_block;
	for (uint64_t off = 0; off < f->info.size; off += f->info.erasesize) {
		r = erase(f, off, markbad ? FLASHIO_MARK_BAD : 0, &st);
		if (r < 0) {
			cli_error(ctx, "%s: erase%s failed at offset %#" PRIx64 ": %s%s", spec,
				  jffs2 ? " with clean marker" : "", off, strerror(-r), io_hint(r));
			return CLI_EXIT_FAIL;
		}
	}
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "device", json_object_new_string(spec));
		json_object_object_add(j, "jffs2", json_object_new_boolean(jffs2));
		json_add_u64(j, "erased", st.erases);
		json_add_u64(j, "bad_skipped", st.blocks_bad_skipped);
		json_add_u64(j, "marked_bad", st.blocks_marked_bad);
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("%s: erased %" PRIu64 " blocks%s, skipped %" PRIu64 " bad, marked %" PRIu64
		       " bad\n", spec, st.erases, jffs2 ? " with JFFS2 clean markers" : "",
		       st.blocks_bad_skipped, st.blocks_marked_bad);
	}
	return CLI_EXIT_OK;
}

/* ---- write ----------------------------------------------------------------- */

static int cmd_write(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		DEV_OPTIONS,
		{ "changed-only", no_argument, NULL, OPT_CHANGED_ONLY },
		{ "mark-bad", no_argument, NULL, OPT_MARK_BAD },
		{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_(flashio_writer_freep) struct flashio_writer *w = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	struct dev_opts d = { 0 };
	unsigned flags = 0;
	bool verify = true;
	const char *spec, *img;
	char want[65] = "", got[65] = "";
	uint8_t sha[HASH_SIZE];
	struct hash md;
	const struct flashio_stats *st;
	int64_t total;
	int c, r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		if (c == OPT_CHANGED_ONLY)
			flags |= FLASHIO_CHANGED_ONLY;
		else if (c == OPT_MARK_BAD)
			flags |= FLASHIO_MARK_BAD;
		else if (c == OPT_NO_VERIFY)
			verify = false;
		else if (dev_opt(ctx, c, &d) <= 0)
			return CLI_EXIT_USAGE;
	}
	if (argc - optind != 2)
		return usage_error(ctx, "write", "expected DEVICE and IMAGE");
	spec = argv[optind];
	img = argv[optind + 1];
	fd = strcmp(img, "-") ? open(img, O_RDONLY | O_CLOEXEC) : fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		cli_error(ctx, "cannot open image %s: %m", img);
		return CLI_EXIT_FAIL;
	}
	hash_init(&md);
	if (open_dev(ctx, spec, &d, true, &f) < 0)
		return CLI_EXIT_FAIL;
	buf = malloc(f->info.erasesize);
	if (!buf)
		return CLI_EXIT_FAIL;
	r = flash_unlock(f);
	if (r >= 0)
		r = flashio_writer_new(f, flags, &w);
	if (r < 0) {
		cli_error(ctx, "%s: %s", spec, strerror(-r));
		return CLI_EXIT_FAIL;
	}
	for (;;) {
		ssize_t n = util_read_full(fd, buf, f->info.erasesize);

		if (n < 0) {
			cli_error(ctx, "reading %s: %s", img, strerror((int)-n));
			return CLI_EXIT_FAIL;
		}
		if (n == 0)
			break;
		hash_update(&md, buf, n);
		r = flashio_writer_write_all(w, buf, n);
		if (r < 0)
			break;
	}
	total = r < 0 ? r : flashio_writer_finish(w);
	if (total < 0) {
		r = (int)total;
		if (r == -ENOSPC)
			cli_error(ctx, "%s: %s does not fit: no good erase block left at offset %#"
				  PRIx64 " (%" PRIu64 " bad blocks skipped)", spec, img,
				  flashio_writer_offset(w), flashio_writer_stats(w)->blocks_bad_skipped);
		else
			cli_error(ctx, "%s: writing %s failed at block offset %#" PRIx64 ": %s%s", spec,
				  img, flashio_writer_offset(w), strerror(-r), io_hint(r));
		return CLI_EXIT_FAIL;
	}
	st = flashio_writer_stats(w);
	hash_final(&md, sha);
	util_hex(sha, sizeof(sha), want);
	if (verify) {
		uint64_t at = 0;

		r = flashio_read_sha256(f, total, sha, &at);
		if (r >= 0)
			util_hex(sha, sizeof(sha), got);
		if (r < 0) {
			cli_error(ctx, "%s: read-back of %s failed at offset %#" PRIx64 ": %s", spec,
				  img, at, strerror(-r));
			return CLI_EXIT_FAIL;
		}
		if (strcmp(want, got)) {
			cli_error(ctx, "%s: verification failed: wrote sha256 %s, read back %s", spec,
				  want, got);
			return CLI_EXIT_FAIL;
		}
	}
	if (ctx->json) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "device", json_object_new_string(spec));
		json_object_object_add(j, "image", json_object_new_string(img));
		json_add_u64(j, "bytes", total);
		json_object_object_add(j, "sha256", json_object_new_string(want));
		json_object_object_add(j, "verified", json_object_new_boolean(verify));
		json_add_u64(j, "blocks_written", st->blocks_written);
		json_add_u64(j, "blocks_identical", st->blocks_identical);
		json_add_u64(j, "blocks_bad_skipped", st->blocks_bad_skipped);
		json_add_u64(j, "blocks_marked_bad", st->blocks_marked_bad);
		json_add_u64(j, "erases", st->erases);
		json_add_u64(j, "erases_skipped", st->erases_skipped);
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("%s: wrote %" PRId64 " bytes: %" PRIu64 " blocks written, %" PRIu64
		       " identical (skipped), %" PRIu64 " bad skipped, %" PRIu64 " marked bad, %"
		       PRIu64 " erases%s\n", spec, total, st->blocks_written, st->blocks_identical,
		       st->blocks_bad_skipped, st->blocks_marked_bad, st->erases,
		       verify ? "; verified" : "");
	}
	return CLI_EXIT_OK;
}

/* ---- read ------------------------------------------------------------------ */

static int cmd_read(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		DEV_OPTIONS,
		{ "length", required_argument, NULL, OPT_LENGTH },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_(flashio_reader_freep) struct flashio_reader *rd = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	struct dev_opts d = { 0 };
	uint64_t len = UINT64_MAX, done = 0;
	const char *spec, *out;
	int c, r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		if (c == OPT_LENGTH) {
			if (parse_size_opt(ctx, "--length", optarg, &len) < 0)
				return CLI_EXIT_USAGE;
		} else if (dev_opt(ctx, c, &d) <= 0) {
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 2)
		return usage_error(ctx, "read", "expected DEVICE and OUTFILE");
	spec = argv[optind];
	out = argv[optind + 1];
	if (open_dev(ctx, spec, &d, false, &f) < 0)
		return CLI_EXIT_FAIL;
	fd = strcmp(out, "-") ? open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
			      : fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		cli_error(ctx, "cannot create %s: %m", out);
		return CLI_EXIT_FAIL;
	}
	buf = malloc(f->info.erasesize);
	r = buf ? flashio_reader_new(f, &rd) : -ENOMEM;
	if (r < 0)
		return CLI_EXIT_FAIL;
	while (done < len) {
		ssize_t n = flashio_reader_read(rd, buf, MIN(len - done, (uint64_t)f->info.erasesize));

		if (n < 0) {
			cli_error(ctx, "%s: read failed at offset %#" PRIx64 ": %s", spec,
				  flashio_reader_offset(rd), strerror((int)-n));
			return CLI_EXIT_FAIL;
		}
		if (n == 0)
			break;
		r = util_write_full(fd, buf, n);
		if (r < 0) {
			cli_error(ctx, "writing %s: %s", out, strerror(-r));
			return CLI_EXIT_FAIL;
		}
		done += n;
	}
	if (len != UINT64_MAX && done < len) {
		cli_error(ctx, "%s: only %" PRIu64 " of %" PRIu64 " bytes in good blocks", spec, done,
			  len);
		return CLI_EXIT_FAIL;
	}
	if (ctx->json) {
		struct json_object *j = json_object_new_object();
		const struct flashio_stats *st = flashio_reader_stats(rd);

		json_object_object_add(j, "device", json_object_new_string(spec));
		json_add_u64(j, "bytes", done);
		json_add_u64(j, "blocks_bad_skipped", st->blocks_bad_skipped);
		json_add_u64(j, "corrected", st->corrected);
		cli_print_json(j);
	}
	return CLI_EXIT_OK;
}

/* ---- markbad --------------------------------------------------------------- */

static int cmd_markbad(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { DEV_OPTIONS, { NULL, 0, NULL, 0 } };
	_cleanup_flash_ struct flash *f = NULL;
	struct dev_opts d = { 0 };
	uint64_t off;
	int c, r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
		if (dev_opt(ctx, c, &d) <= 0)
			return CLI_EXIT_USAGE;
	if (argc - optind != 2)
		return usage_error(ctx, "markbad", "expected DEVICE and OFFSET");
	if (parse_size_opt(ctx, "OFFSET", argv[optind + 1], &off) < 0)
		return CLI_EXIT_USAGE;
	if (open_dev(ctx, argv[optind], &d, true, &f) < 0)
		return CLI_EXIT_FAIL;
	r = flash_block_markbad(f, off);
	if (r < 0) {
		cli_error(ctx, "%s: cannot mark the block at %#" PRIx64 " bad: %s%s", argv[optind], off,
			  strerror(-r), io_hint(r));
		return CLI_EXIT_FAIL;
	}
	if (ctx->json) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "device", json_object_new_string(argv[optind]));
		json_object_object_add(j, "block", json_object_new_int64(off / f->info.erasesize));
		json_object_object_add(j, "offset", json_object_new_int64(off - off % f->info.erasesize));
		json_object_object_add(j, "bad", json_object_new_boolean(true));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("%s: block %" PRIu64 " (offset %#" PRIx64 ") marked bad\n", argv[optind],
		       off / f->info.erasesize, off - off % f->info.erasesize);
	}
	return CLI_EXIT_OK;
}

/* ---- sim-create ------------------------------------------------------------ */

static int cmd_sim_create(struct cli_ctx *ctx, int argc, char **argv)
{
	struct nsim_spec spec;
	struct nsim_geometry g;
	struct error err = {};
	int r;

	if (nsim_spec_parse(argc, argv, &spec, &err) < 0)
		return usage_error(ctx, "sim-create", err.msg);
	r = nsim_spec_create(&spec, &err);
	if (r < 0) {
		cli_error(ctx, "%s", err.msg);
		return r == -EEXIST ? CLI_EXIT_FORCE : r == -EINVAL ? CLI_EXIT_USAGE :
		       r == -EMEDIUMTYPE ? CLI_EXIT_INVALID : CLI_EXIT_FAIL;
	}
	g = spec.geo;
	if (ctx->json) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "path", json_object_new_string(argv[optind]));
		json_object_object_add(j, "type", json_object_new_string(nsim_type_to_string(g.type)));
		json_object_object_add(j, "size", json_object_new_int64(g.size));
		json_object_object_add(j, "erase_block", json_object_new_int64(g.erasesize));
		json_object_object_add(j, "page", json_object_new_int64(g.writesize));
		json_object_object_add(j, "oob", json_object_new_int64(g.oobsize));
		json_object_object_add(j, "blocks", json_object_new_int64(g.size / g.erasesize));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("created %s: %s, %" PRIu64 " blocks\n", argv[optind],
		       nsim_type_to_string(g.type), g.size / g.erasesize);
	}
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_flash_cmds[] = {
	{ "info", "DEVICE [--offset O] [--size S] [--json]",
	  "geometry, bad blocks and ECC counters of an MTD device or simulator file\n"
	  "DEVICE: sim:PATH, /dev/mtdN or mtd:NAME; PATH@OFFSET+SIZE or --offset/--size\n"
	  "select an erase-block aligned window.", cmd_info, NULL },
	{ "erase", "[--jffs2] [--mark-bad] [--offset O] [--size S] DEVICE",
	  "erase every good block (flash_erase); --jffs2 writes JFFS2 clean markers\n"
	  "(NOR in-band, NAND in OOB); --mark-bad marks blocks failing to erase bad.",
	  cmd_erase, NULL },
	{ "write", "[--changed-only] [--mark-bad] [--no-verify] [--offset O] [--size S] DEVICE IMAGE",
	  "write IMAGE ('-' = stdin) over the good blocks (nandwrite semantics), then read it\n"
	  "back and compare SHA-256. --changed-only leaves identical blocks alone;\n"
	  "--mark-bad retires blocks failing to erase/program and moves on.", cmd_write, NULL },
	{ "read", "[--length N] [--offset O] [--size S] DEVICE OUTFILE",
	  "read the good blocks (nanddump --bb=skipbad) into OUTFILE ('-' = stdout).",
	  cmd_read, NULL },
	{ "markbad", "DEVICE OFFSET", "mark the erase block containing OFFSET bad.", cmd_markbad, NULL },
	CLI_HOST_TOOL("sim-create",
		"FILE --type nand|nor --size S --erase-block S [--page S] [--oob S] "
		"[--bad-blocks 3,17] [--force]",
		"create a simulator file (all erased). NAND defaults: 2 KiB pages, page/32 OOB.\n"
		"Fault injection and power cuts: see nsimctl(1).", cmd_sim_create),
	{ NULL },
};
