/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl bundle create|info|verify|keygen: host-side bundle tools and
 * offline verification (docs/bundle-format.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "bundle_create.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "cli.h"
#include "keyring.h"
#include "layout.h"
#include "squashfs_relayout.h"
#include "util.h"


#define OPT_COMPATIBLE 0x100
#define OPT_LAYOUT 0x101
#define OPT_VERSION 0x102
#define OPT_IMAGE 0x103
#define OPT_KEY 0x104
#define OPT_NO_SIGN 0x105
#define OPT_GZIP 0x106
#define OPT_DESCRIPTION 0x107
#define OPT_KEYRING 0x108
#define OPT_ALLOW_UNSIGNED 0x109
#define OPT_BUILD_DATE 0x10a
#define OPT_SLOT_SIZE 0x10b
#define OPT_BLOCK_SIZE 0x10c
#define OPT_NO_INDEX 0x10d
#define OPT_NO_CHUNKS 0x120
#define OPT_BASE 0x10e
#define OPT_BASE_KEYRING 0x10f
#define OPT_OUTPUT 'o'

static const char *human(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = v;
	unsigned u = 0;

	while (d >= 1024 && u + 1 < ELEMENTSOF(units)) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, "%.1f %s", d, units[u]);
	return buf;
}

static void hex32(const uint8_t *p, char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

/* Room per slot member from the layout: the smallest partition holding
 * that member in any slot of the first group (UBI volumes and files have
 * no fixed size here: the member is allowed, its size unchecked). */
struct limits {
	struct bundle_slot_limit l[2];
	size_t n;
	uint32_t erasesize;  /* of the raw partitions' chip (largest): the index block */
};

static void limits_add(struct limits *lim, const char *member, const struct layout_image_target *t,
		       const char *image_type)
{
	bool raw = (t->storage == LAYOUT_STORAGE_NOR || t->storage == LAYOUT_STORAGE_NAND) && t->part;
	size_t i;

	for (i = 0; i < lim->n; i++)
		if (!strcmp(lim->l[i].slot, member))
			break;
	if (i == lim->n) {
		if (lim->n >= ELEMENTSOF(lim->l))
			return;
		lim->l[lim->n++] = (struct bundle_slot_limit) { member, UINT64_MAX, image_type };
	}
	if (raw) {
		lim->l[i].max_size = MIN(lim->l[i].max_size, t->part->size);
		lim->erasesize = MAX(lim->erasesize, t->part->dev->erasesize);
	}
}

/* The type name in static storage: the limits outlive the layout. */
static const char *static_type(const char *t)
{
	int i = t ? bundle_image_type_from_string(t) : -EINVAL;

	return i >= 0 ? bundle_image_type_to_string(i) : t ? "unknown" : NULL;
}

/* The compatible string and the slot sizes and image types of a layout
 * (the group's image type is the root filesystem's). */
static int layout_info(struct cli_ctx *ctx, const char *path, char **ret_compat,
		       struct limits *lim)
{
	_cleanup_layout_ struct layout *l = NULL;
	struct error lerr = {};
	int r = layout_load(path, &l, &lerr);

	if (r < 0) {
		cli_error(ctx, "%s", lerr.msg);
		return CLI_EXIT_INVALID;
	}
	*ret_compat = l->compatible ? strdup(l->compatible) : NULL;
	if (lim && l->n_groups > 0) {
		for (size_t i = 0; i < l->groups[0].n_slots; i++) {
			const struct layout_slot *s = &l->groups[0].slots[i];
			limits_add(lim, "rootfs", &s->rootfs, static_type(l->groups[0].image_type));
			if (s->has_kernel)
				limits_add(lim, "kernel", &s->kernel, NULL);
		}
	}
	if (!*ret_compat) {
		cli_error(ctx, "%s: the layout has no \"compatible\" string", path);
		return CLI_EXIT_INVALID;
	}
	/* the limits point at member names in static storage: fine */
	return 0;
}

static int open_input(struct cli_ctx *ctx, const char *path)
{
	int fd;

	if (!strcmp(path, "-"))
		return dup(STDIN_FILENO);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		cli_error(ctx, "%s: %s", path, strerror(errno));
	return fd;
}

/* ---- create ---- */

static int bundle_exit(int r)
{
	return r == -EIO || r == -ENOMEM || r == -EINTR ? CLI_EXIT_FAIL : CLI_EXIT_INVALID;
}


/* A size as util_parse_size() reads them ("131072", "128K", "128KiB", "1M") */
static int parse_block_size(struct cli_ctx *ctx, const char *arg, uint32_t *ret)
{
	uint64_t v;

	if (util_parse_size(arg, &v) < 0 || v < BUNDLE_BLOCK_SIZE_MIN || v > BUNDLE_BLOCK_SIZE_MAX ||
	    (v & (v - 1))) {
		cli_error(ctx, "--block-size %s: must be a power of two from 4K to 16M", arg);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static void print_create_report(const char *out, const struct bundle_create_result *res,
				const struct bundle_create_image *imgs, size_t n_keys, FILE *f)
{
	const struct bundle_manifest *m = &res->manifest;
	char a[32], b[32], sha[65];
	uint64_t total_in = 0, total_stored = 0;

	fprintf(f, "Bundle %s: format %u.%u, compatible \"%s\", version \"%s\", built %s\n", out,
		m->format_major, m->format_minor, m->compatible, m->version, m->build_date);
	for (size_t i = 0; i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];

		hex32(img->sha256, sha);
		fprintf(f, "  image %-8s %s (%s)\n", img->slot, imgs[i].path,
			bundle_image_type_to_string(img->type));
		fprintf(f, "    size %s (%" PRIu64 " bytes), stored %s as %s, %.1f%% of the "
			"original\n", human(img->size, a, sizeof(a)), img->size,
			human(img->stored_size, b, sizeof(b)),
			bundle_compression_to_string(img->compression),
			100.0 * img->stored_size / img->size);
		fprintf(f, "    sha256 %s\n", sha);
		if (res->has_squashfs[i]) {
			const struct squashfs_info *s = &res->squashfs[i];
			fprintf(f, "    squashfs 4.0, %s, block size %" PRIu32 ", %" PRIu32 " inodes, "
				"%" PRIu64 " bytes used\n",
				squashfs_compression_to_string(s->compression), s->block_size,
				s->inode_count, s->bytes_used);
		}
		total_in += img->size;
		total_stored += img->stored_size;
	}
	fprintf(f, "  manifest %" PRIu32 " bytes, %zu signature%s\n", m->manifest_size, n_keys,
		n_keys == 1 ? "" : "s");
	if (m->block_size)
		fprintf(f, "  block index %" PRIu64 " bytes (a SHA-256 per %s block)\n",
			m->index_size, human(m->block_size, a, sizeof(a)));
	else
		fprintf(f, "  no block index (format 1.0)\n");
	fprintf(f, "  total %s (%" PRIu64 " bytes); images %s -> %s, ratio %.1f%%\n",
		human(m->total_size, a, sizeof(a)), m->total_size, human(total_in, b, sizeof(b)),
		human(total_stored, sha, sizeof(sha)), 100.0 * total_stored / total_in);
}

static int parse_image_arg(struct cli_ctx *ctx, char *arg, struct bundle_create_image *img)
{
	char *eq = strchr(arg, '='), *colon;
	int t;

	if (!eq || eq == arg || !eq[1]) {
		cli_error(ctx, "--image %s: expected MEMBER[:TYPE]=FILE", arg);
		return -EINVAL;
	}
	*eq = '\0';
	colon = strchr(arg, ':');
	if (colon) {
		*colon = '\0';
		t = bundle_image_type_from_string(colon + 1);
		if (t < 0) {
			cli_error(ctx, "--image %s: unknown type \"%s\" (squashfs, raw)", arg, colon + 1);
			return -EINVAL;
		}
	} else {
		/* the root filesystem is a squashfs unless said otherwise */
		t = !strcmp(arg, "rootfs") ? BUNDLE_IMAGE_SQUASHFS : BUNDLE_IMAGE_RAW;
	}
	if (!bundle_slot_name_valid(arg)) {
		cli_error(ctx, "--image: \"%s\" is not a slot member name ([a-z0-9_-]{1,32})", arg);
		return -EINVAL;
	}
	*img = (struct bundle_create_image) { .slot = arg, .path = eq + 1, .type = t };
	return 0;
}

/* The layout's slots take these members, of these types (sizes are
 * checked once the images were read). */
static int check_members(struct cli_ctx *ctx, const struct bundle_create_image *imgs, size_t n,
			 const struct limits *lim)
{
	_cleanup_free_ struct bundle_manifest *m = calloc(1, sizeof(*m));
	struct error err = {};
	int r;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		m->images[i].index = i;
		snprintf(m->images[i].slot, sizeof(m->images[i].slot), "%s", imgs[i].slot);
		m->images[i].type = imgs[i].type;
	}
	m->n_images = n;
	r = bundle_manifest_check(m, NULL, lim->l, lim->n, &err);
	if (r < 0)
		cli_error(ctx, "%s", err.msg);
	return r;
}

/* ---- create --base: the new squashfs laid out against the previous bundle's ---- */

/* A laid-out image may grow this much over the plain build before the
 * plain layout is taken instead (compaction, docs/bundle-format.md). */
#define BASE_MAX_GROWTH_PCT 5

/* The base bundle's image of one member, into a file, trusted only once
 * the reader matched its sha256 (and its signature, with a keyring). */
struct base_read {
	const char *member;
	int fd;
	bool active, found, complete, squashfs;
};

static int base_begin(void *u, const struct bundle_image *img, struct error *err)
{
	struct base_read *b = u;

	b->active = !strcmp(img->slot, b->member);
	if (b->active) {
		b->found = true;
		b->squashfs = img->type == BUNDLE_IMAGE_SQUASHFS;
	}
	return 0;
}

static int base_data(void *u, const struct bundle_image *img, const void *buf, size_t len,
		     struct error *err)
{
	struct base_read *b = u;

	if (b->active && util_write_full(b->fd, buf, len) < 0)
		return error_set(err, -errno, "writing a temporary file: %s", strerror(errno));
	return 0;
}

static int base_end(void *u, const struct bundle_image *img, struct error *err)
{
	struct base_read *b = u;

	b->complete |= b->active;
	b->active = false;
	return 0;
}

static void base_tmps_free(char **tmp)
{
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		if (tmp[i]) {
			unlink(tmp[i]);
			free(tmp[i]);
		}
}

static int base_tmp(char **ret)
{
	const char *dir = getenv("TMPDIR");
	char *p;
	int fd;

	if (asprintf(&p, "%s/flashctl-base-XXXXXX", dir && *dir ? dir : "/tmp") < 0)
		return -ENOMEM;
	fd = mkostemp(p, O_CLOEXEC);
	if (fd < 0) {
		free(p);
		return -errno;
	}
	*ret = p;
	return fd;
}

static int base_extract(struct cli_ctx *ctx, const char *base, const struct keyring *ring,
			const char *member, char **ret_path)
{
	static const struct bundle_reader_ops ops = { .image_begin = base_begin,
						      .image_data = base_data,
						      .image_end = base_end };
	const struct bundle_policy pol = { .keyring = ring, .allow_unsigned = !ring };
	_cleanup_bundle_reader_ struct bundle_reader *r = NULL;
	_cleanup_close_ int in = open_input(ctx, base);
	struct base_read b = { .member = member };
	struct error err = {};
	char *tmp = NULL;
	int ret;

	if (in < 0)
		return CLI_EXIT_FAIL;
	b.fd = base_tmp(&tmp);
	if (b.fd < 0) {
		cli_error(ctx, "--base: a temporary file: %s", strerror(-b.fd));
		return CLI_EXIT_FAIL;
	}
	if (bundle_reader_new(&pol, &ops, &b, &r) < 0)
		ret = -ENOMEM;
	else
		ret = bundle_reader_read_fd(r, in, &err);
	close(b.fd);
	if (ret < 0)
		cli_error(ctx, "--base %s: %s", base, err.msg[0] ? err.msg : strerror(-ret));
	else if (!b.found || !b.squashfs)
		cli_error(ctx, "--base %s: %s \"%s\"", base, b.found ?
			  "not a squashfs image: member" : "no image for member", member);
	if (ret < 0 || !b.found || !b.squashfs || !b.complete) {
		unlink(tmp);
		free(tmp);
		return ret < 0 ? bundle_exit(ret) : CLI_EXIT_INVALID;
	}
	*ret_path = tmp;
	return 0;
}

static void base_report(struct cli_ctx *ctx, const char *member,
			const struct squashfs_relayout_stats *st)
{
	if (ctx->quiet || ctx->json)
		return;
	fprintf(stderr, "flashctl: --base: %s: %" PRIu64 " files kept in place (%" PRIu64
		" bytes), %" PRIu64 " placed anew (%" PRIu64 " bytes), %" PRIu64 " bytes dead; "
		"image %" PRIu64 " bytes, %.3f of the plain build%s\n", member, st->files_kept,
		st->bytes_kept, st->files_new, st->bytes_new, st->bytes_dead, st->image_size,
		(double)st->image_size / st->plain_size,
		st->compacted ? " (compacted: laid out plainly, over the bound)" : "");
}

/* Each squashfs member's image laid out against the base bundle's image of
 * that member, into a temporary file that img->path then names (tmp[i]:
 * the caller unlinks them). */
static int base_relayout(struct cli_ctx *ctx, const char *base, const char *keyring,
			 struct bundle_create_image *imgs, size_t n, char **tmp)
{
	_cleanup_keyring_ struct keyring *ring = NULL;
	struct error kerr = {};

	if (keyring && keyring_load_dir(keyring, &ring, &kerr) < 0) {
		cli_error(ctx, "--base-keyring: %s", kerr.msg);
		return CLI_EXIT_INVALID;
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *old = NULL;
		struct squashfs_relayout_stats st;
		struct error err = {};
		int fd, r;

		if (imgs[i].type != BUNDLE_IMAGE_SQUASHFS)
			continue;
		r = base_extract(ctx, base, ring, imgs[i].slot, &old);
		if (r)
			return r;
		fd = base_tmp(&tmp[i]);
		if (fd < 0) {
			unlink(old);
			cli_error(ctx, "--base: a temporary file: %s", strerror(-fd));
			return CLI_EXIT_FAIL;
		}
		close(fd);
		r = squashfs_relayout(old, imgs[i].path, tmp[i], BASE_MAX_GROWTH_PCT, &st, &err);
		unlink(old);
		if (r == -EMEDIUMTYPE) {
			/* still a valid update, only not a small one */
			fprintf(stderr, "flashctl: warning: --base %s: %s: %s; laid out plainly\n",
				base, imgs[i].slot, err.msg);
			continue;
		}
		if (r < 0) {
			cli_error(ctx, "--base %s: %s: %s", base, imgs[i].slot, err.msg);
			return r == -ENOMEM || r == -EIO ? CLI_EXIT_FAIL : CLI_EXIT_INVALID;
		}
		base_report(ctx, imgs[i].slot, &st);
		imgs[i].path = tmp[i];
	}
	return 0;
}

static int cmd_create(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "compatible", required_argument, NULL, OPT_COMPATIBLE },
		{ "layout", required_argument, NULL, OPT_LAYOUT },
		{ "version", required_argument, NULL, OPT_VERSION },
		{ "image", required_argument, NULL, OPT_IMAGE },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "no-sign", no_argument, NULL, OPT_NO_SIGN },
		{ "gzip", optional_argument, NULL, OPT_GZIP },
		{ "description", required_argument, NULL, OPT_DESCRIPTION },
		{ "build-date", required_argument, NULL, OPT_BUILD_DATE },
		{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
		{ "no-index", no_argument, NULL, OPT_NO_INDEX },
		{ "no-chunks", no_argument, NULL, OPT_NO_CHUNKS },
		{ "base", required_argument, NULL, OPT_BASE },
		{ "base-keyring", required_argument, NULL, OPT_BASE_KEYRING },
		{ NULL, 0, NULL, 0 },
	};
	struct bundle_create_image imgs[BUNDLE_MAX_IMAGES];
	char *base_tmps[BUNDLE_MAX_IMAGES] = { NULL };
	const char *img_paths[BUNDLE_MAX_IMAGES];
	const char *base = NULL, *base_keyring = NULL;
	const char *key_paths[BUNDLE_MAX_SIGNATURES];
	void *keys[BUNDLE_MAX_SIGNATURES] = { NULL };
	struct bundle_create_params p = { .images = imgs, .keys = keys };
	_cleanup_free_ struct bundle_create_result *res = calloc(1, sizeof(*res));
	_cleanup_free_ char *compat = NULL;
	const char *out = NULL, *layout = NULL;
	struct error err = {};
	struct limits lim = { .n = 0 };
	bool no_sign = false, gzip = false;
	size_t n_keys = 0;
	int c, r, fd = -1, ret = CLI_EXIT_FAIL;

	if (!res)
		return CLI_EXIT_FAIL;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_OUTPUT: out = optarg; break;
		case OPT_COMPATIBLE: p.compatible = optarg; break;
		case OPT_LAYOUT: layout = optarg; break;
		case OPT_VERSION: p.version = optarg; break;
		case OPT_DESCRIPTION: p.description = optarg; break;
		case OPT_BUILD_DATE: p.build_date = optarg; break;
		case OPT_NO_SIGN: no_sign = true; break;
		case OPT_NO_INDEX: p.no_index = true; break;
		case OPT_NO_CHUNKS: p.no_chunks = true; break;
		case OPT_BASE: base = optarg; break;
		case OPT_BASE_KEYRING: base_keyring = optarg; break;
		case OPT_BLOCK_SIZE:
			if (parse_block_size(ctx, optarg, &p.block_size) < 0)
				return CLI_EXIT_USAGE;
			break;
		case OPT_GZIP:
			gzip = true;
			if (optarg && ((p.gzip_level = atoi(optarg)) < 1 || p.gzip_level > 9)) {
				cli_error(ctx, "--gzip=%s: level must be 1..9", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case OPT_IMAGE:
			if (p.n_images >= BUNDLE_MAX_IMAGES) {
				cli_error(ctx, "at most %d --image options", BUNDLE_MAX_IMAGES);
				return CLI_EXIT_USAGE;
			}
			if (parse_image_arg(ctx, optarg, &imgs[p.n_images]) < 0)
				return CLI_EXIT_USAGE;
			p.n_images++;
			break;
		case OPT_KEY:
			if (n_keys >= BUNDLE_MAX_SIGNATURES) {
				cli_error(ctx, "at most %d --key options", BUNDLE_MAX_SIGNATURES);
				return CLI_EXIT_USAGE;
			}
			key_paths[n_keys++] = optarg;
			break;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc || !out || !p.version || !p.n_images || (!p.compatible == !layout) ||
	    (n_keys == 0) == !no_sign) {
		cli_error(ctx, "usage: bundle create -o OUT (--compatible STR | --layout FILE) "
			  "--version V --image MEMBER[:TYPE]=FILE... (--key KEY.pem... | --no-sign) "
			  "[--gzip[=LEVEL]] [--description TEXT] [--block-size SIZE | --no-index] [--no-chunks] "
			  "[--base PREVIOUS.bundle [--base-keyring DIR]]");
		return CLI_EXIT_USAGE;
	}
	if (base_keyring && !base) {
		cli_error(ctx, "--base-keyring needs --base");
		return CLI_EXIT_USAGE;
	}
	if (p.no_index && p.block_size) {
		cli_error(ctx, "--block-size and --no-index exclude each other");
		return CLI_EXIT_USAGE;
	}
	if (layout) {
		r = layout_info(ctx, layout, &compat, &lim);
		if (r)
			return r;
		p.compatible = compat;
		/* the index's blocks are the board's erase blocks: what an
		 * adaptive install compares and skips */
		if (!p.block_size && lim.erasesize >= BUNDLE_BLOCK_SIZE_MIN &&
		    lim.erasesize <= BUNDLE_BLOCK_SIZE_MAX && !(lim.erasesize & (lim.erasesize - 1)))
			p.block_size = lim.erasesize;
		/* members and types first: no image is read for a bundle the board refuses */
		if (check_members(ctx, imgs, p.n_images, &lim) < 0)
			return CLI_EXIT_INVALID;
	}
	for (size_t i = 0; i < p.n_images; i++)
		imgs[i].compression = gzip ? BUNDLE_COMPRESSION_GZIP : BUNDLE_COMPRESSION_NONE;
	for (size_t i = 0; i < p.n_images; i++)
		img_paths[i] = imgs[i].path;
	/* before OUT is opened: a refused base leaves nothing behind */
	if (base && (ret = base_relayout(ctx, base, base_keyring, imgs, p.n_images, base_tmps))) {
		base_tmps_free(base_tmps);
		return ret;
	}
	ret = CLI_EXIT_FAIL;
	for (size_t i = 0; i < n_keys; i++) {
		r = bundle_create_key_load(key_paths[i], &keys[i], &err);
		if (r < 0) {
			cli_error(ctx, "%s", err.msg);
			ret = CLI_EXIT_INVALID;
			goto out;
		}
	}
	p.n_keys = n_keys;
	fd = !strcmp(out, "-") ? dup(STDOUT_FILENO) :
		open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		cli_error(ctx, "%s: %s", out, strerror(errno));
		goto out;
	}
	r = bundle_create(&p, fd, res, &err);
	for (size_t i = 0; i < p.n_images; i++)
		imgs[i].path = img_paths[i];  /* the report names the user's files */
	/* the sizes, now known, against the layout's slots */
	if (r >= 0 && layout)
		r = bundle_manifest_check(&res->manifest, NULL, lim.l, lim.n, &err);
	if (r >= 0 && fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno, snprintf(err.msg, sizeof(err.msg), "%s: %s", out, strerror(errno));
	if (r < 0) {
		cli_error(ctx, "%s", err.msg);
		if (strcmp(out, "-"))
			unlink(out);
		ret = r == -EBADMSG || r == -EINVAL || r == -EPROTONOSUPPORT || r == -EFBIG ||
		      r == -EMEDIUMTYPE || r == -ENXIO ? CLI_EXIT_INVALID : CLI_EXIT_FAIL;
		goto out;
	}
	ret = CLI_EXIT_OK;
	if (ctx->json) {
		struct json_object *j = NULL;
		if (bundle_manifest_to_json(&res->manifest, &j) == 0) {
			json_object_object_add(j, "path", json_object_new_string(out));
			if (strcmp(out, "-"))
				cli_print_json(j);
			else
				json_object_put(j);
		}
	} else if (!ctx->quiet) {
		print_create_report(out, res, imgs, n_keys, strcmp(out, "-") ? stdout : stderr);
	}
out:
	if (fd >= 0 && close(fd) < 0 && ret == CLI_EXIT_OK) {
		cli_error(ctx, "%s: %s", out, strerror(errno));
		ret = CLI_EXIT_FAIL;
	}
	for (size_t i = 0; i < n_keys; i++)
		bundle_create_key_free(keys[i]);
	base_tmps_free(base_tmps);
	return ret;
}

/* ---- info / verify ---- */

static void print_manifest(const struct bundle_manifest *m, const char *path, bool full)
{
	char a[32], b[32], sha[65];

	printf("Bundle:      %s\n", path);
	printf("Format:      %u.%u\n", m->format_major, m->format_minor);
	printf("Compatible:  %s\n", m->compatible);
	printf("Version:     %s\n", m->version);
	printf("Build date:  %s\n", m->build_date);
	if (m->description[0])
		printf("Description: %s\n", m->description);
	printf("Size:        %s (%" PRIu64 " bytes)\n", human(m->total_size, a, sizeof(a)),
	       m->total_size);
	if (m->block_size)
		printf("Block index: %" PRIu64 " bytes, %s blocks\n", m->index_size,
		       human(m->block_size, b, sizeof(b)));
	switch (m->trust) {
	case BUNDLE_TRUST_VERIFIED:
		hex32(m->signer_id, sha);
		printf("Signature:   verified, key %.16s (%s)%s\n", sha, m->signer_name,
		       m->n_signatures > 1 ? ", more signatures present" : "");
		break;
	case BUNDLE_TRUST_UNSIGNED:
		printf("Signature:   NONE (accepted only because unsigned bundles are allowed)\n");
		break;
	case BUNDLE_TRUST_UNKNOWN_KEY:
		printf("Signature:   %u by unknown key(s), NOT verified (accepted only because "
		       "unsigned bundles are allowed)\n", m->n_signatures);
		break;
	case BUNDLE_TRUST_UNCHECKED:
		printf("Signature:   %u signature%s, not checked (use 'flashctl bundle verify "
		       "--keyring DIR')\n", m->n_signatures, m->n_signatures == 1 ? "" : "s");
		break;
	case _BUNDLE_TRUST_MAX:
		break;
	}
	printf("Images:      %zu\n", m->n_images);
	for (size_t i = 0; i < m->n_images; i++) {
		const struct bundle_image *img = &m->images[i];

		hex32(img->sha256, sha);
		printf("  [%zu] %-8s %-8s %-4s size %s, stored %s at offset %" PRIu64 "%s\n", i,
		       img->slot, bundle_image_type_to_string(img->type),
		       bundle_compression_to_string(img->compression),
		       human(img->size, a, sizeof(a)), human(img->stored_size, b, sizeof(b)),
		       img->offset, full ? ", sha256 ok" : "");
		printf("      sha256 %s\n", sha);
	}
}

static int cmd_info(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct bundle_reader_ops ops = { .manifest = bundle_reader_stop_at_manifest };
	const struct bundle_policy pol = { .skip_signatures = true };
	_cleanup_bundle_reader_ struct bundle_reader *r = NULL;
	_cleanup_close_ int fd = -1;
	struct error err = {};
	const struct bundle_manifest *m;
	int ret;

	if (argc != 2) {
		cli_error(ctx, "usage: bundle info FILE|-");
		return CLI_EXIT_USAGE;
	}
	fd = open_input(ctx, argv[1]);
	if (fd < 0)
		return CLI_EXIT_FAIL;
	if (bundle_reader_new(&pol, &ops, NULL, &r) < 0)
		return CLI_EXIT_FAIL;
	ret = bundle_reader_read_fd(r, fd, &err);
	m = bundle_reader_manifest(r);
	if (ret < 0 || !m) {
		cli_error(ctx, "%s: %s", argv[1], err.msg);
		return bundle_exit(ret);
	}
	if (ctx->json) {
		struct json_object *j = NULL;
		if (bundle_manifest_to_json(m, &j) < 0)
			return CLI_EXIT_FAIL;
		cli_print_json(j);
	} else {
		print_manifest(m, argv[1], false);
	}
	return CLI_EXIT_OK;
}

static int parse_slot_size(struct cli_ctx *ctx, char *arg, struct limits *lim)
{
	char *eq = strchr(arg, '=');
	uint64_t v;

	if (!eq || lim->n >= ELEMENTSOF(lim->l)) {
		cli_error(ctx, "--slot-size %s: expected MEMBER=SIZE (at most %zu)", arg,
			  ELEMENTSOF(lim->l));
		return -EINVAL;
	}
	*eq = '\0';
	if (util_parse_size(eq + 1, &v) < 0) {
		cli_error(ctx, "--slot-size %s: bad size \"%s\"", arg, eq + 1);
		return -EINVAL;
	}
	lim->l[lim->n++] = (struct bundle_slot_limit) { arg, v, NULL };
	return 0;
}

static int cmd_verify(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "compatible", required_argument, NULL, OPT_COMPATIBLE },
		{ "layout", required_argument, NULL, OPT_LAYOUT },
		{ "allow-unsigned", no_argument, NULL, OPT_ALLOW_UNSIGNED },
		{ "slot-size", required_argument, NULL, OPT_SLOT_SIZE },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_bundle_reader_ struct bundle_reader *r = NULL;
	_cleanup_keyring_ struct keyring *ring = NULL;
	_cleanup_free_ char *compat = NULL;
	_cleanup_close_ int fd = -1;
	struct bundle_policy pol = { 0 };
	struct error kerr = {};
	struct error err = {};
	struct limits lim = { .n = 0 };
	const char *keyring = NULL, *layout = NULL;
	const struct bundle_manifest *m;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case OPT_KEYRING: keyring = optarg; break;
		case OPT_COMPATIBLE: pol.compatible = optarg; break;
		case OPT_LAYOUT: layout = optarg; break;
		case OPT_ALLOW_UNSIGNED: pol.allow_unsigned = true; break;
		case OPT_SLOT_SIZE:
			if (parse_slot_size(ctx, optarg, &lim) < 0)
				return CLI_EXIT_USAGE;
			break;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || (!keyring && !pol.allow_unsigned) ||
	    (pol.compatible && layout)) {
		cli_error(ctx, "usage: bundle verify FILE|- --keyring DIR [--compatible STR | "
			  "--layout FILE] [--slot-size MEMBER=SIZE...] [--allow-unsigned]");
		return CLI_EXIT_USAGE;
	}
	if (keyring && keyring_load_dir(keyring, &ring, &kerr) < 0) {
		cli_error(ctx, "%s", kerr.msg);
		return CLI_EXIT_INVALID;
	}
	if (layout) {
		ret = layout_info(ctx, layout, &compat, lim.n ? NULL : &lim);
		if (ret)
			return ret;
		pol.compatible = compat;
	}
	pol.keyring = ring;
	pol.slots = lim.l;
	pol.n_slots = lim.n;
	fd = open_input(ctx, argv[optind]);
	if (fd < 0)
		return CLI_EXIT_FAIL;
	if (bundle_reader_new(&pol, NULL, NULL, &r) < 0)
		return CLI_EXIT_FAIL;
	ret = bundle_reader_read_fd(r, fd, &err);
	m = bundle_reader_manifest(r);
	if (ctx->json) {
		struct json_object *j = NULL;
		if (m && bundle_manifest_to_json(m, &j) < 0)
			return CLI_EXIT_FAIL;
		if (!j)
			j = json_object_new_object();
		json_object_object_add(j, "valid", json_object_new_boolean(ret == 0));
		if (ret < 0)
			json_object_object_add(j, "error", json_object_new_string(err.msg));
		cli_print_json(j);
	}
	if (ret < 0) {
		cli_error(ctx, "%s: refused: %s", argv[optind], err.msg);
		return bundle_exit(ret);
	}
	if (!ctx->json && !ctx->quiet) {
		print_manifest(m, argv[optind], true);
		printf("Result:      OK, %s\n", m->is_signed ? "signature and all image hashes "
		       "verified" : "image hashes verified, but the bundle is NOT signed by a "
		       "trusted key");
	}
	return CLI_EXIT_OK;
}

/* ---- keygen ---- */

static int cmd_keygen(struct cli_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, OPT_OUTPUT },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_free_ char *priv = NULL, *pub = NULL;
	struct error err = {};
	uint8_t id[KEYRING_ID_SIZE];
	const char *base = NULL;
	char idhex[65];
	int c, r;

	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) >= 0) {
		if (c != OPT_OUTPUT)
			return CLI_EXIT_USAGE;
		base = optarg;
	}
	if (!base || optind != argc) {
		cli_error(ctx, "usage: bundle keygen --out DIR/NAME  (writes NAME.key and NAME.pub)");
		return CLI_EXIT_USAGE;
	}
	if (asprintf(&priv, "%s.key", base) < 0 || asprintf(&pub, "%s.pub", base) < 0)
		return CLI_EXIT_FAIL;
	r = bundle_create_keygen(priv, pub, id, &err);
	if (r < 0) {
		cli_error(ctx, "%s", err.msg);
		return CLI_EXIT_FAIL;
	}
	hex32(id, idhex);
	if (ctx->json) {
		struct json_object *j = json_object_new_object();
		json_object_object_add(j, "private_key", json_object_new_string(priv));
		json_object_object_add(j, "public_key", json_object_new_string(pub));
		json_object_object_add(j, "key_id", json_object_new_string(idhex));
		cli_print_json(j);
	} else if (!ctx->quiet) {
		printf("Private key: %s (keep it off the device)\nPublic key:  %s (copy into the "
		       "device keyring)\nKey id:      %s\n", priv, pub, idhex);
	}
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_bundle_cmds[] = {
	CLI_HOST_TOOL("create",
		"-o OUT (--compatible STR | --layout FILE) --version V "
		"--image MEMBER[:TYPE]=FILE... (--key KEY.pem... | --no-sign) [--gzip[=LEVEL]] "
		"[--description TEXT] [--build-date YYYY-MM-DDTHH:MM:SSZ] [--block-size SIZE | --no-index] [--no-chunks] "
		"[--base PREVIOUS.bundle [--base-keyring DIR]]",
		"build a signed update bundle (host side); OUT may be - for stdout", cmd_create),
	{ "info", "FILE|-", "show a bundle's manifest (signatures are not checked)", cmd_info, NULL },
	{ "verify", "FILE|- --keyring DIR [--compatible STR | --layout FILE] "
	  "[--slot-size MEMBER=SIZE...] [--allow-unsigned]",
	  "verify signature and every image hash, streaming; exit 3 when refused", cmd_verify,
	  NULL },
	CLI_HOST_TOOL("keygen", "--out DIR/NAME",
		"make an Ed25519 signing key pair (NAME.key, NAME.pub)", cmd_keygen),
	{ NULL },
};
