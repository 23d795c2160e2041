/* lib/board: the target string ("system", "sim:FILE", "sim:DIR") -> the
 * board's devices, partition windows at the layout's offsets, and the env
 * location (file + byte offset) libubootenv is given. */
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

#include "board.h"
#include "cleanup.h"
#include "flash.h"
#include "layout.h"
#include "nsim.h"
#include "testlib.h"
#include "util.h"

/* two chips: the bootloader and its env on NOR, the slots on NAND */
static const char two_chips[] = "{\n"
	"\"board\": \"test: NOR + NAND\", \"compatible\": \"flashd,test-two-chips\",\n"
	"\"devices\": [\n"
	"  { \"name\": \"nor0\", \"type\": \"nor\", \"size\": \"1MiB\", \"erase_block\": \"64KiB\" },\n"
	"  { \"name\": \"nand0\", \"type\": \"nand\", \"size\": \"16MiB\", \"erase_block\": \"128KiB\",\n"
	"    \"page\": 2048, \"oob\": 64 } ],\n"
	"\"partitions\": [\n"
	"  { \"name\": \"u-boot\", \"device\": \"nor0\", \"offset\": \"0x0\", \"size\": \"768KiB\", \"readonly\": true },\n"
	"  { \"name\": \"u-boot-env\", \"device\": \"nor0\", \"offset\": \"0xc0000\", \"size\": \"64KiB\" },\n"
	"  { \"name\": \"u-boot-env-redund\", \"device\": \"nor0\", \"offset\": \"0xd0000\", \"size\": \"64KiB\" },\n"
	"  { \"name\": \"rootfs-a\", \"device\": \"nand0\", \"offset\": \"0x0\", \"size\": \"6MiB\" },\n"
	"  { \"name\": \"rootfs-b\", \"device\": \"nand0\", \"offset\": \"0x600000\", \"size\": \"6MiB\" },\n"
	"  { \"name\": \"rootfs_data\", \"device\": \"nand0\", \"offset\": \"0xc00000\", \"size\": \"-\" } ],\n"
	"\"bootloader\": \"u-boot\",\n"
	"\"env\": { \"copies\": [ { \"partition\": \"u-boot-env\", \"offset\": \"0\", \"size\": \"0x10000\" },\n"
	"  { \"partition\": \"u-boot-env-redund\", \"offset\": \"0\", \"size\": \"0x10000\" } ] },\n"
	"\"slots\": [ { \"name\": \"rootfs\", \"image\": \"squashfs\", \"slots\": {\n"
	"  \"A\": { \"rootfs\": { \"storage\": \"nand\", \"partition\": \"rootfs-a\" } },\n"
	"  \"B\": { \"rootfs\": { \"storage\": \"nand\", \"partition\": \"rootfs-b\" } } } } ],\n"
	"\"overlays\": [ { \"path\": \"/\", \"type\": \"jffs2\", \"partition\": \"rootfs_data\" } ]\n"
	"}\n";

struct fx {
	struct layout *one;   /* layouts/nandsim-128m.json */
	struct layout *two;   /* two_chips */
	char *sim;            /* a simulator of nandsim-128m */
	char *dir;            /* nor0.sim and nand0.sim of two_chips */
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct nsim_geometry g;
	char *p;

	assert_non_null(fx);
	fx->one = testlib_layout_load("nandsim-128m");
	fx->two = testlib_layout_parse(two_chips);
	g = testlib_sim_geometry(&fx->one->devices[0]);
	fx->sim = testlib_sim_new("board", &g, NULL, 0);
	fx->dir = testlib_tmp_dir("board-dir");
	for (size_t i = 0; i < fx->two->n_devices; i++) {
		g = testlib_sim_geometry(&fx->two->devices[i]);
		p = testlib_asprintf("%s/%s.sim", fx->dir, fx->two->devices[i].name);
		assert_int_equal(nsim_create(p, &g, NSIM_CREATE_FORCE), 0);
		free(p);
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	for (size_t i = 0; i < fx->two->n_devices; i++) {
		char *p = testlib_asprintf("%s/%s.sim", fx->dir, fx->two->devices[i].name);
		unlink(p);
		free(p);
	}
	rmdir(fx->dir);
	free(fx->dir);
	testlib_unlinkp(&fx->sim);
	layout_free(fx->one);
	layout_free(fx->two);
	free(fx);
	return 0;
}

/* Which targets name a board, and which kind. */
static void test_target_strings(void **state)
{
	static const struct {
		const char *target;
		int r;
		bool sim;
	} cases[] = {
		{ NULL, 0, false },         /* no target: the running system */
		{ "", 0, false },
		{ "system", 0, false },
		{ "sim:/nonexistent", 0, true }, /* opened lazily: no I/O yet */
		{ "System", -EINVAL, false },
		{ "system ", -EINVAL, false },
		{ "sim", -EINVAL, false },
		{ "simulator:/x", -EINVAL, false },
		{ "mtd:rootfs-a", -EINVAL, false },
	};
	struct fx *fx = *state;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_board_ struct board *b = NULL;
		int r = board_open(fx->one, cases[i].target, false, &b);

		if (r != cases[i].r)
			fail_msg("target \"%s\": %d, expected %d", cases[i].target ?: "(null)", r,
				 cases[i].r);
		if (r == 0) {
			assert_int_equal(board_is_sim(b), cases[i].sim);
			assert_ptr_equal(board_layout(b), fx->one);
		}
	}
}

/* A partition window reaches the chip at the layout's offset, and the
 * env location (file + offset) is the same bytes as the window. */
static void test_sim_window_and_env_location(void **state)
{
	struct fx *fx = *state;
	_cleanup_free_ char *target = testlib_asprintf("sim:%s", fx->sim);
	_cleanup_board_ struct board *b = NULL;
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_free_ char *path = NULL;
	const struct layout_partition *p = layout_find_partition(fx->one, "u-boot-env-redund");
	static const char msg[] = "the env copy lives here";
	char page[2048] = { 0 }; /* NAND programs whole pages */
	char back[sizeof(msg)] = { 0 };
	uint64_t off = 0;
	struct nsim *s;
	FILE *raw;

	assert_non_null(p);
	assert_int_equal(board_open(fx->one, target, true, &b), 0);
	assert_true(board_is_sim(b));
	assert_int_equal(board_open_partition(b, p, &f), 0);
	assert_int_equal(f->info.size, p->size);
	assert_int_equal(flash_erase_block(f, 0), 0);
	memcpy(page, msg, sizeof(msg));
	assert_int_equal(f->info.writesize, sizeof(page));
	assert_int_equal(flash_write(f, 0, page, sizeof(page)), 0);

	/* the chip has it at the partition's offset */
	assert_int_equal(nsim_open(fx->sim, false, &s), 0);
	assert_int_equal(nsim_read(s, p->offset, back, sizeof(back)), 0);
	nsim_close(s);
	assert_memory_equal(back, msg, sizeof(msg));

	/* and plain file I/O at the env location reads the same bytes */
	assert_int_equal(board_partition_path(b, p, &path, &off), 0);
	assert_string_equal(path, fx->sim);
	assert_int_equal(off, nsim_data_offset() + p->offset);
	raw = fopen(path, "re");
	assert_non_null(raw);
	memset(back, 0, sizeof(back));
	assert_int_equal(fseeko(raw, (off_t)off, SEEK_SET), 0);
	assert_int_equal(fread(back, 1, sizeof(back), raw), sizeof(back));
	fclose(raw);
	assert_memory_equal(back, msg, sizeof(msg));
}

/* A board opened read-only hands out windows that refuse writes. */
static void test_read_only_board(void **state)
{
	struct fx *fx = *state;
	_cleanup_free_ char *target = testlib_asprintf("sim:%s", fx->sim);
	_cleanup_board_ struct board *b = NULL;
	_cleanup_flash_ struct flash *f = NULL;
	uint8_t buf[16] = { 0 };

	assert_int_equal(board_open(fx->one, target, false, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "rootfs-b", &f), 0);
	assert_int_equal(flash_read(f, 0, buf, sizeof(buf)), 0);
	assert_true(flash_write(f, 0, buf, sizeof(buf)) < 0);
	assert_true(flash_erase_block(f, 0) < 0);
}

static void test_unknown_partition(void **state)
{
	struct fx *fx = *state;
	_cleanup_free_ char *target = testlib_asprintf("sim:%s", fx->sim);
	_cleanup_board_ struct board *b = NULL;
	struct flash *f = NULL;

	assert_int_equal(board_open(fx->one, target, false, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "rootfs-c", &f), -ENOENT);
	assert_null(f);
}

/* A simulator that is not the chip the layout describes is refused. */
static void test_sim_of_another_chip(void **state)
{
	struct fx *fx = *state;
	struct nsim_geometry g = testlib_sim_geometry(&fx->one->devices[0]);
	_cleanup_unlink_ char *small = NULL;
	_cleanup_free_ char *target = NULL;
	_cleanup_board_ struct board *b = NULL;
	struct flash *f = NULL;

	g.size /= 2;
	small = testlib_sim_new("board-small", &g, NULL, 0);
	target = testlib_asprintf("sim:%s", small);
	assert_int_equal(board_open(fx->one, target, false, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "u-boot-env", &f), -EMEDIUMTYPE);
	assert_null(f);
}

static void test_missing_sim(void **state)
{
	struct fx *fx = *state;
	_cleanup_board_ struct board *b = NULL;
	struct flash *f = NULL;

	assert_int_equal(board_open(fx->one, "sim:/nonexistent/board.sim", false, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "u-boot-env", &f), -ENOENT);
}

/* sim:DIR holds DEVICE.sim per device: each partition lands on its chip. */
static void test_sim_directory(void **state)
{
	struct fx *fx = *state;
	_cleanup_free_ char *target = testlib_asprintf("sim:%s", fx->dir);
	_cleanup_board_ struct board *b = NULL;
	static const struct {
		const char *part, *device;
	} cases[] = {
		{ "u-boot-env", "nor0" }, { "u-boot-env-redund", "nor0" },
		{ "rootfs-a", "nand0" }, { "rootfs_data", "nand0" },
	};

	assert_int_equal(board_open(fx->two, target, true, &b), 0);
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const struct layout_partition *p = layout_find_partition(fx->two, cases[i].part);
		_cleanup_flash_ struct flash *f = NULL;
		_cleanup_free_ char *path = NULL, *want = NULL;
		uint64_t off;

		assert_non_null(p);
		assert_int_equal(board_open_partition(b, p, &f), 0);
		assert_int_equal(f->info.size, p->size);
		assert_int_equal(f->info.type, p->dev->type);
		assert_int_equal(board_partition_path(b, p, &path, &off), 0);
		want = testlib_asprintf("%s/%s.sim", fx->dir, cases[i].device);
		assert_string_equal(path, want);
		assert_int_equal(off, nsim_data_offset() + p->offset);
	}
}

/* One file cannot hold two chips: sim:FILE of a two-device layout. */
static void test_sim_file_for_two_chips(void **state)
{
	struct fx *fx = *state;
	_cleanup_free_ char *target = testlib_asprintf("sim:%s", fx->sim);
	_cleanup_board_ struct board *b = NULL;
	_cleanup_free_ char *path = NULL;
	struct flash *f = NULL;
	uint64_t off;

	assert_int_equal(board_open(fx->two, target, false, &b), 0);
	assert_int_equal(board_open_partition_by_name(b, "rootfs-a", &f), -EISDIR);
	assert_int_equal(board_partition_path(b, layout_find_partition(fx->two, "u-boot-env"),
					      &path, &off), -EISDIR);
	assert_int_equal(board_sim_device_path("system", fx->two, &fx->two->devices[0], &path),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target_strings),
		cmocka_unit_test(test_sim_window_and_env_location),
		cmocka_unit_test(test_read_only_board),
		cmocka_unit_test(test_unknown_partition),
		cmocka_unit_test(test_sim_of_another_chip),
		cmocka_unit_test(test_missing_sim),
		cmocka_unit_test(test_sim_directory),
		cmocka_unit_test(test_sim_file_for_two_chips),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
