/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI images (lib/update/ubinize.c) byte for byte against ubinize from
 * mtd-utils for the same volume table and images (image_seq fixed with
 * -Q, erase counter with -e); streaming in odd pieces and in any volume
 * order; the read-back check; refusals. Exits 77 (skip) without ubinize. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "testlib.h"
#include "ubinize.h"

struct img {
	const char *name;
	bool is_static, autoresize;
	uint64_t size, image_size;
	uint8_t *data;
	char *path;
};

static int sink_file(void *userdata, uint64_t pnum, const void *peb, size_t len, struct error *err)
{
	int fd = *(int *)userdata;

	if (pwrite(fd, peb, len, (off_t)(pnum * len)) != (ssize_t)len)
		return error_set(err, -errno, "pwrite: %s", strerror(errno));
	return 0;
}

static void make_images(const char *dir, struct img *im, size_t n, unsigned seed)
{
	srandom(seed);
	for (size_t i = 0; i < n; i++) {
		_cleanup_close_ int fd = -1;

		if (!im[i].image_size)
			continue;
		im[i].data = malloc(im[i].image_size);
		assert_non_null(im[i].data);
		for (uint64_t b = 0; b < im[i].image_size; b++)
			im[i].data[b] = (uint8_t)random();
		im[i].path = testlib_asprintf("%s/%s.img", dir, im[i].name);
		fd = open(im[i].path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, im[i].data, im[i].image_size), (ssize_t)im[i].image_size);
	}
}

static void free_images(struct img *im, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (im[i].path)
			unlink(im[i].path);
		free(im[i].data);
		free(im[i].path);
		im[i].data = NULL;
		im[i].path = NULL;
	}
}

/* ubinize with an ini of the volumes in table order, vol_id = index */
static void run_ubinize(const char *dir, const struct ubinize_geometry *g, const struct img *im,
			size_t n, const char *out)
{
	_cleanup_free_ char *ini = testlib_asprintf("%s/ubi.ini", dir), *cmd = NULL;
	FILE *f = fopen(ini, "we");

	assert_non_null(f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "[%s]\nmode=ubi\nvol_id=%zu\nvol_type=%s\nvol_name=%s\nvol_size=%" PRIu64 "\n",
			im[i].name, i, im[i].is_static ? "static" : "dynamic", im[i].name, im[i].size);
		if (im[i].path)
			fprintf(f, "image=%s\n", im[i].path);
		if (im[i].autoresize)
			fprintf(f, "vol_flags=autoresize\n");
	}
	fclose(f);
	cmd = testlib_asprintf("ubinize -o %s -p %u -m %u %s%.0u -Q %u -e %" PRIu64 " %s >/dev/null 2>&1",
			       out, g->peb_size, g->min_io_size, g->subpage_size ? "-s " : "",
			       g->subpage_size, g->image_seq, g->ec, ini);
	assert_int_equal(system(cmd), 0);
	unlink(ini);
}

static void vols_of(const struct img *im, size_t n, struct ubinize_volume *v)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (struct ubinize_volume){ .id = (uint32_t)i, .name = im[i].name,
						.is_static = im[i].is_static,
						.autoresize = im[i].autoresize, .size = im[i].size,
						.image_size = im[i].image_size };
}

/* Our image of the table, the images fed in chunk-byte pieces, volumes
 * round-robin from the last: the output must not depend on the order. */
static void run_ours(const struct ubinize_geometry *g, const struct img *im, size_t n,
		     size_t chunk, const char *out)
{
	_cleanup_close_ int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	_cleanup_ubinize_ struct ubinize *u = NULL;
	struct ubinize_volume v[8];
	uint64_t off[8] = { 0 };
	struct error err = {};
	bool more = true;

	assert_true(fd >= 0 && n <= 8);
	vols_of(im, n, v);
	assert_int_equal(ubinize_new(g, v, n, sink_file, &fd, &u, &err), 0);
	while (more) {
		more = false;
		for (size_t i = n; i-- > 0;) {
			size_t len = MIN(chunk, im[i].image_size - off[i]);
			if (!len)
				continue;
			assert_int_equal(ubinize_write(u, i, im[i].data + off[i], len, &err), 0);
			off[i] += len;
			more = true;
		}
	}
	assert_int_equal(ubinize_finish(u, &err), 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), (off_t)(ubinize_pebs(u) * g->peb_size));
}

static void assert_same_files(const char *a, const char *b)
{
	_cleanup_free_ char *cmd = testlib_asprintf("cmp %s %s", a, b);

	assert_int_equal(system(cmd), 0);
}

static void compare(const struct ubinize_geometry *g, struct img *im, size_t n, unsigned seed)
{
	_cleanup_free_ char *dir = testlib_tmp_dir("ubinize");
	_cleanup_free_ char *ref = testlib_asprintf("%s/ref.ubi", dir);
	_cleanup_free_ char *ours = testlib_asprintf("%s/ours.ubi", dir);
	static const size_t chunks[] = { 1 << 20, 4093, 126976 };

	make_images(dir, im, n, seed);
	run_ubinize(dir, g, im, n, ref);
	for (size_t c = 0; c < ELEMENTSOF(chunks); c++) {
		run_ours(g, im, n, chunks[c], ours);
		assert_same_files(ref, ours);
	}
	free_images(im, n);
	unlink(ref);
	unlink(ours);
	rmdir(dir);
}

/* layouts/nand-ubi.json's table on nandsim's geometry (2 KiB pages, 512
 * byte sub-pages): static slot volumes, the dynamic overlay, autoresize */
TEST(test_nand_ubi_table)
{
	struct ubinize_geometry g = { .peb_size = 128 * 1024, .min_io_size = 2048,
				      .subpage_size = 512, .image_seq = 0x1234abcd };
	struct img im[] = {
		{ "kernel_a", true, false, 8 << 20, 300 * 1024 + 17, NULL, NULL },
		{ "rootfs_a", true, false, 96 << 20, 1400 * 1024 + 3, NULL, NULL },
		{ "kernel_b", true, false, 8 << 20, 126976, NULL, NULL },
		{ "rootfs_b", true, false, 96 << 20, 2 * 126976 + 1, NULL, NULL },
		{ "overlay", false, true, 24 << 20, 0, NULL, NULL },
	};

	compare(&g, im, ELEMENTSOF(im), 1);
}

/* no sub-pages, an erase counter, a dynamic volume with an image ending
 * on a LEB boundary, volume ids with the static one last */
TEST(test_no_subpage_dynamic_image)
{
	struct ubinize_geometry g = { .peb_size = 128 * 1024, .min_io_size = 2048,
				      .ec = 7, .image_seq = 1 };
	struct img im[] = {
		{ "data", false, false, 4 << 20, 2 * (128 * 1024 - 4096), NULL, NULL },
		{ "rootfs", true, false, 2 << 20, 5000, NULL, NULL },
	};

	compare(&g, im, ELEMENTSOF(im), 2);
}

/* NOR: 1-byte I/O, the VID header right after the EC header */
TEST(test_nor)
{
	struct ubinize_geometry g = { .peb_size = 64 * 1024, .min_io_size = 1,
				      .image_seq = 0xffffffffu };
	struct img im[] = {
		{ "rootfs", true, false, 1 << 20, 200000, NULL, NULL },
		{ "cfg", false, true, 64 * 1024, 0, NULL, NULL },
	};

	compare(&g, im, ELEMENTSOF(im), 3);
}

static int sink_mem(void *userdata, uint64_t pnum, const void *peb, size_t len, struct error *err)
{
	uint8_t *mem = userdata;

	(void)err;
	memcpy(mem + pnum * len, peb, len);
	return 0;
}

/* The read-back check finds a flipped data byte and a wrong LEB. */
TEST(test_check_peb)
{
	struct ubinize_geometry g = { .peb_size = 16384, .min_io_size = 512, .image_seq = 9 };
	struct ubinize_volume v = { .id = 3, .name = "rootfs", .is_static = true, .size = 65536,
				    .image_size = 20000 };
	_cleanup_ubinize_ struct ubinize *u = NULL;
	_cleanup_free_ uint8_t *mem = calloc(8, g.peb_size), *img = malloc(v.image_size);
	struct error err = {};
	const uint8_t *data;
	size_t len;

	memset(img, 0x5a, v.image_size);
	assert_int_equal(ubinize_new(&g, &v, 1, sink_mem, mem, &u, &err), 0);
	assert_int_equal(ubinize_write(u, 0, img, v.image_size, &err), 0);
	assert_int_equal(ubinize_finish(u, &err), 0);
	assert_int_equal(ubinize_used_ebs(u, 0), 2);
	assert_int_equal(ubinize_first_peb(u, 0), 2);
	assert_int_equal(ubinize_check_peb(u, 0, 1, mem + 3 * g.peb_size, &data, &len, &err), 0);
	assert_int_equal(len, 20000 - ubinize_leb_size(u));
	assert_memory_equal(data, img, len);
	assert_int_equal(ubinize_check_peb(u, 0, 0, mem + 3 * g.peb_size, &data, &len, &err),
			 -EBADMSG);
	mem[2 * g.peb_size + ubinize_data_offset(u) + 100] ^= 1;
	assert_int_equal(ubinize_check_peb(u, 0, 0, mem + 2 * g.peb_size, &data, &len, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "CRC"));
}

static int sink_null(void *userdata, uint64_t pnum, const void *peb, size_t len, struct error *err)
{
	(void)userdata, (void)pnum, (void)peb, (void)len, (void)err;
	return 0;
}

static void refused(const struct ubinize_geometry *g, const struct ubinize_volume *v, size_t n,
		    int code, const char *msg)
{
	struct ubinize *u = NULL;
	struct error err = {};

	assert_int_equal(ubinize_new(g, v, n, sink_null, NULL, &u, &err), code);
	assert_null(u);
	if (!strstr(err.msg, msg))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, msg);
}

TEST(test_refusals)
{
	struct ubinize_geometry g = { .peb_size = 128 * 1024, .min_io_size = 2048 };
	struct ubinize_geometry bad = { .peb_size = 128 * 1024, .min_io_size = 3000 };
	struct ubinize_volume two[] = {
		{ .id = 0, .name = "a", .size = 1 << 20, .autoresize = true },
		{ .id = 1, .name = "b", .size = 1 << 20, .autoresize = true },
	};
	struct ubinize_volume same_id[] = {
		{ .id = 4, .name = "a", .size = 1 << 20 },
		{ .id = 4, .name = "b", .size = 1 << 20 },
	};
	struct ubinize_volume big = { .id = 0, .name = "rootfs", .size = 1 << 20,
				      .image_size = (1 << 20) + 1 };
	struct ubinize_volume v = { .id = 0, .name = "rootfs", .is_static = true, .size = 1 << 20,
				    .image_size = 1000 };
	_cleanup_ubinize_ struct ubinize *u = NULL;
	struct error err = {};
	uint8_t buf[1001] = { 0 };

	refused(&bad, &v, 1, -EINVAL, "powers of 2");
	refused(&g, two, 2, -EINVAL, "only one volume may have the autoresize flag");
	refused(&g, same_id, 2, -EINVAL, "volume b (id 4): the id is also volume a's");
	refused(&g, &big, 1, -EFBIG, "UBI volume rootfs: the image (1048577 bytes) is larger");
	assert_int_equal(ubinize_new(&g, &v, 1, sink_null, NULL, &u, &err), 0);
	assert_int_equal(ubinize_write(u, 0, buf, 1001, &err), -EFBIG);
	assert_int_equal(ubinize_write(u, 0, buf, 999, &err), 0);
	assert_int_equal(ubinize_finish(u, &err), -ENODATA);
	assert_non_null(strstr(err.msg, "999 of the image's 1000 bytes"));
}

/* Without the reference tool there is nothing to compare with: skip
 * (automake's 77) loudly rather than pass. */
static int need_ubinize(void **state)
{
	(void)state;
	if (system("command -v ubinize >/dev/null 2>&1")) {
		fprintf(stderr, "SKIP: ubinize (mtd-utils) not found: the UBI image cannot be "
			"compared with the reference tool\n");
		exit(77);
	}
	return 0;
}
TEST_GROUP(need_ubinize, NULL);
