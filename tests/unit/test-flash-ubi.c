/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI through sysfs: devices by MTD number, volumes by name, what UBI
 * says about a volume's content (update marker, corrupted), the status
 * state of a slot whose volume holds an unfinished update; on a fake /sys/class/{mtd,ubi} tree. */
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

#include "cleanup_json.h"
#include "flash_ubi.h"
#include "layout.h"
#include "proto_slot.h"
#include "slot.h"
#include "ubi_image.h"
#include "util.h"
#include "testlib.h"

struct fx {
	char dir[64];
	char mtd[96], ubi[96];
};

static void put(const char *dir, const char *name, const char *value)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", value);
	fclose(f);
}

static void mkd(const char *a, const char *b, char *ret, size_t len)
{
	snprintf(ret, len, "%s/%s", a, b);
	assert_int_equal(util_mkdir_p(ret, 0755), 0);
}

/* mtd3 "ubi" attached as ubi1 with volumes 0 rootfs_a (static), 1 overlay */
static void volume(struct fx *f, int id, const char *name, const char *type, const char *upd,
		   const char *cor)
{
	char d[256], n[32];

	snprintf(n, sizeof(n), "ubi1/ubi1_%d", id);
	mkd(f->ubi, n, d, sizeof(d));
	put(d, "name", name);
	put(d, "type", type);
	put(d, "usable_eb_size", "126976");
	put(d, "reserved_ebs", "10");
	put(d, "data_bytes", "1000");
	put(d, "upd_marker", upd);
	put(d, "corrupted", cor);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char d[256];

	snprintf(f->dir, sizeof(f->dir), "/tmp/test-flash-ubi-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->mtd, sizeof(f->mtd), "%s/mtd", f->dir);
	snprintf(f->ubi, sizeof(f->ubi), "%s/ubi", f->dir);
	mkd(f->mtd, "mtd3", d, sizeof(d));
	put(d, "name", "ubi");
	mkd(f->mtd, "mtd2", d, sizeof(d));
	put(d, "name", "env");
	mkd(f->ubi, "ubi0", d, sizeof(d));
	put(d, "mtd_num", "7");
	mkd(f->ubi, "ubi1", d, sizeof(d));
	put(d, "mtd_num", "3");
	volume(f, 0, "rootfs_a", "static", "0", "0");
	volume(f, 1, "overlay", "dynamic", "0", "0");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	testlib_rm_rf(f->dir);
	free(f);
	return 0;
}

TEST_FIXTURE(test_find_device, setup, teardown)
{
	struct fx *f = *state;

	assert_int_equal(flash_ubi_find(f->ubi, 3), 1);
	assert_int_equal(flash_ubi_find(f->ubi, 7), 0);
	assert_int_equal(flash_ubi_find(f->ubi, 4), -ENODEV);
	assert_int_equal(flash_ubi_find("/nonexistent/ubi", 3), -ENODEV);
}

TEST_FIXTURE(test_volume_by_name, setup, teardown)
{
	struct fx *f = *state;
	struct flash_ubi_volume v;

	assert_int_equal(flash_ubi_volume_find(f->ubi, 1, "overlay", &v), 0);
	assert_int_equal(v.id, 1);
	assert_false(v.is_static);
	assert_int_equal(flash_ubi_volume_find(f->ubi, 1, "rootfs_a", &v), 0);
	assert_int_equal(v.id, 0);
	assert_true(v.is_static);
	assert_int_equal(v.leb_size, 126976);
	assert_int_equal(flash_ubi_volume_size(&v), 1269760);
	assert_int_equal(v.data_bytes, 1000);
	assert_string_equal(v.dev, "/dev/ubi1_0");
	assert_null(flash_ubi_volume_broken(&v));
	assert_int_equal(flash_ubi_volume_find(f->ubi, 1, "rootfs_b", &v), -ENOENT);
	/* a volume of another device is not this device's */
	assert_int_equal(flash_ubi_volume_find(f->ubi, 0, "rootfs_a", &v), -ENOENT);
}

TEST_FIXTURE(test_broken, setup, teardown)
{
	struct fx *f = *state;
	struct flash_ubi_volume v;
	const char *why;

	volume(f, 0, "rootfs_a", "static", "1", "0");
	assert_int_equal(flash_ubi_volume_find(f->ubi, 1, "rootfs_a", &v), 0);
	why = flash_ubi_volume_broken(&v);
	assert_non_null(why);
	assert_non_null(strstr(why, "update interrupted"));
	volume(f, 0, "rootfs_a", "static", "0", "1");
	assert_int_equal(flash_ubi_volume_find(f->ubi, 1, "rootfs_a", &v), 0);
	why = flash_ubi_volume_broken(&v);
	assert_non_null(why);
	assert_non_null(strstr(why, "corrupted"));
}

/* status: the slot target's volume, found through the MTD name */
TEST_FIXTURE(test_target_broken, setup, teardown)
{
	struct fx *f = *state;
	struct layout_partition part = { .name = "ubi" }, other = { .name = "env" };
	struct layout_image_target t = { .storage = LAYOUT_STORAGE_UBI, .part = &part,
					 .ubi_volume = (char *)"rootfs_a" };
	const char *why;

	assert_null(ubi_image_target_broken(&t, f->mtd, f->ubi));
	volume(f, 0, "rootfs_a", "static", "1", "0");
	why = ubi_image_target_broken(&t, f->mtd, f->ubi);
	assert_non_null(why);
	assert_non_null(strstr(why, "update interrupted"));
	/* not attached (mtd2 has no UBI), or no such volume: nothing known */
	t.part = &other;
	assert_null(ubi_image_target_broken(&t, f->mtd, f->ubi));
	t.part = &part;
	t.ubi_volume = (char *)"nope";
	assert_null(ubi_image_target_broken(&t, f->mtd, f->ubi));
	t.storage = LAYOUT_STORAGE_NAND;
	t.ubi_volume = (char *)"rootfs_a";
	assert_null(ubi_image_target_broken(&t, f->mtd, f->ubi));
}

static char *map_get(void *userdata, const char *name)
{
	const char *const *kv = userdata;

	for (; kv[0]; kv += 2)
		if (!strcmp(kv[0], name))
			return strdup(kv[1]);
	return NULL;
}

static const char *reply_state(struct json_object *reply, size_t i)
{
	struct json_object *slots, *v;

	assert_true(json_object_object_get_ex(reply, "slots", &slots));
	assert_true(json_object_object_get_ex(json_object_array_get_idx(slots, i), "state", &v));
	return json_object_get_string(v);
}

/* A slot whose UBI volume holds an unfinished update is "interrupted" in
 * every status, whatever the env records: the daemon's GetStatus
 * (slot_state_of) and the SlotStatus reply that flashd and offline flashctl
 * both give (proto_slot_status). Issue 36: only GetStatus said so, SlotStatus
 * and offline 'flashctl slot status' called slot A "good". */
TEST_FIXTURE(test_unfinished_state, setup, teardown)
{
	struct fx *f = *state;
	struct layout_partition part = { .name = "ubi" };
	struct layout_slot slots[2] = {
		{ .name = (char *)"A", .rootfs = { .storage = LAYOUT_STORAGE_UBI, .part = &part,
						   .ubi_volume = (char *)"rootfs_a" } },
		{ .name = (char *)"B", .rootfs = { .storage = LAYOUT_STORAGE_UBI, .part = &part,
						   .ubi_volume = (char *)"rootfs_b" } },
	};
	struct layout_slot_group g = { .name = (char *)"rootfs", .slots = slots, .n_slots = 2 };
	const char *env[] = { "BOOT_ORDER", "A B", "FLASHD_A_STATE", "good",
			      "FLASHD_B_STATE", "verified", NULL };
	_cleanup_json_ struct json_object *reply = NULL;
	struct error err = {};
	struct slot_env st;

	volume(f, 0, "rootfs_a", "static", "1", "0");
	volume(f, 1, "rootfs_b", "static", "0", "0");
	assert_int_equal(slot_env_load_group(&st, &g, map_get, env, &err), 0);
	assert_int_equal(slot_state_of(&st, 0, false), SLOT_STATE_GOOD);
	ubi_image_mark_unfinished(&st, &g, f->mtd, f->ubi);
	assert_true(st.slots[0].unfinished);
	assert_false(st.slots[1].unfinished);
	assert_int_equal(slot_state_of(&st, 0, false), SLOT_STATE_INTERRUPTED);
	/* an install running into another slot does not make it "installing" */
	assert_int_equal(slot_state_of(&st, 0, true), SLOT_STATE_INTERRUPTED);
	assert_int_equal(slot_state_of(&st, 1, false), SLOT_STATE_PENDING);
	reply = proto_slot_status(&st, g.name, "env", 1, "root", false);
	assert_string_equal(reply_state(reply, 0), "interrupted");
	assert_string_equal(reply_state(reply, 1), "pending");
}
