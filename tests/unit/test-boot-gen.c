/* boot_gen: generation names, keep-list parsing, migration on the first
 * boot of a new generation, the "slot is good" rule, cleanup. Works on a
 * scratch directory standing in for the mounted overlay filesystem. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "boot_gen.h"
#include "cleanup.h"
#include "util.h"

static char base[256];

static int setup(void **state)
{
	snprintf(base, sizeof(base), "%s/test-boot-gen-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	return boot_gen_rmtree(base);
}

static void put(const char *rel, const char *text)
{
	char path[512], dir[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	snprintf(dir, sizeof(dir), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(dir), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *get(const char *rel)
{
	char path[512];
	char *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	if (util_read_file(path, 1 << 20, &text, NULL) < 0)
		return NULL;
	return text;
}

static bool exists(const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	return lstat(path, &st) == 0;
}

static void test_name(void **state)
{
	char buf[64];

	assert_int_equal(boot_gen_name("A", "2.0", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gen-A-2.0");
	assert_int_equal(boot_gen_name("B", "1.0 beta/3", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gen-B-1.0_beta_3");
	assert_int_equal(boot_gen_name("A", NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gen-A-unknown");
	assert_int_equal(boot_gen_name("A", "x", buf, 6), -ENAMETOOLONG);
}

static void test_keep_parse(void **state)
{
	struct boot_gen_list l = { 0 };
	unsigned line = 0;

	assert_int_equal(boot_gen_keep_parse("# comment\n\n  /etc/config/  \n/etc/passwd # users\n"
					     "/etc/config\n\t/root/*.key\n", &l, &line), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0], "/etc/config");
	assert_string_equal(l.v[1], "/etc/passwd");
	assert_string_equal(l.v[2], "/root/*.key");
	assert_int_equal(boot_gen_keep_parse("/ok\netc/relative\n", &l, &line), -EINVAL);
	assert_int_equal(line, 2);
	assert_int_equal(boot_gen_keep_parse("/etc/../shadow\n", &l, &line), -EINVAL);
	assert_int_equal(line, 1);
	assert_int_equal(boot_gen_keep_parse("/etc/..hidden\n", &l, &line), 0);
	boot_gen_list_done(&l);
}

static void test_keep_load_names_file_and_line(void **state)
{
	struct boot_gen_list l = { 0 };
	char d1[512], d2[512], err[512] = "";
	const char *dirs[3];

	put("k1/10-base", "/etc/a\n/etc/b\n");
	put("k2/20-user", "/etc/b\n/etc/c\n");
	snprintf(d1, sizeof(d1), "%s/k1", base);
	snprintf(d2, sizeof(d2), "%s/k2", base);
	dirs[0] = d1;
	dirs[1] = d2;
	dirs[2] = "/nonexistent/keep.d";
	assert_int_equal(boot_gen_keep_load(dirs, 3, &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[2], "/etc/c");
	boot_gen_list_done(&l);
	put("k2/30-bad", "/fine\n\nnot-absolute\n");
	assert_int_equal(boot_gen_keep_load(dirs, 2, &l, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "k2/30-bad:3:"));
}

static void test_generations_migrate_and_gc(void **state)
{
	struct boot_gen_result res;
	struct boot_gen_list gens = { 0 }, removed = { 0 };
	char ov[512], rom[512], err[512] = "", path[512];
	_cleanup_free_ char *t = NULL;

	snprintf(ov, sizeof(ov), "%s/overlay", base);
	snprintf(rom, sizeof(rom), "%s/rom", base);
	assert_int_equal(mkdir(ov, 0755), 0);
	put("rom/etc/flashd/keep.d/base", "/etc/keep.conf\n/etc/keepdir\n/etc/gone\n/home/*/.profile\n");

	/* first boot ever: nothing to migrate */
	assert_int_equal(boot_gen_prepare(ov, "gen-A-1.0", rom, "/", &res, err, sizeof(err)), 0);
	assert_true(res.created);
	assert_string_equal(res.previous, "");
	assert_int_equal(res.boots, 0);
	t = get("overlay/.flashd-last");
	assert_string_equal(t, "gen-A-1.0\n");
	free(TAKE_PTR(t));

	/* the user changes things in A's upper */
	put("overlay/gen-A-1.0/upper/etc/keep.conf", "mine\n");
	put("overlay/gen-A-1.0/upper/etc/nokeep.conf", "not listed\n");
	put("overlay/gen-A-1.0/upper/etc/keepdir/sub/file", "deep\n");
	put("overlay/gen-A-1.0/upper/home/u/.profile", "profile\n");
	put("overlay/gen-A-1.0/upper/etc/flashd/keep.d/user", "/etc/userkeep\n");
	put("overlay/gen-A-1.0/upper/etc/userkeep", "user list\n");
	snprintf(path, sizeof(path), "%s/overlay/gen-A-1.0/upper/etc/keepdir/link", base);
	assert_int_equal(symlink("sub/file", path), 0);
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/overlay/gen-A-1.0/upper/etc/gone", base);
		assert_int_equal(mknod(path, S_IFCHR, makedev(0, 0)), 0);
	}
	/* second boot of A: same generation, counted */
	assert_int_equal(boot_gen_prepare(ov, "gen-A-1.0", rom, "/", &res, err, sizeof(err)), 0);
	assert_false(res.created);
	assert_int_equal(res.boots, 1);

	/* B's first boot: keep-list entries migrate, others do not */
	assert_int_equal(boot_gen_prepare(ov, "gen-B-2.0", rom, "/", &res, err, sizeof(err)), 0);
	assert_true(res.created);
	assert_string_equal(res.previous, "gen-A-1.0");
	assert_int_equal(res.keep_entries, 5);
	t = get("overlay/gen-B-2.0/upper/etc/keep.conf");
	assert_string_equal(t, "mine\n");
	free(TAKE_PTR(t));
	t = get("overlay/gen-B-2.0/upper/etc/keepdir/sub/file");
	assert_string_equal(t, "deep\n");
	free(TAKE_PTR(t));
	t = get("overlay/gen-B-2.0/upper/home/u/.profile");
	assert_string_equal(t, "profile\n");
	free(TAKE_PTR(t));
	t = get("overlay/gen-B-2.0/upper/etc/userkeep");
	assert_string_equal(t, "user list\n");
	free(TAKE_PTR(t));
	assert_true(exists("overlay/gen-B-2.0/upper/etc/keepdir/link"));
	assert_false(exists("overlay/gen-B-2.0/upper/etc/nokeep.conf"));
	assert_true(exists("overlay/gen-B-2.0/work"));
	assert_false(exists("overlay/gen-B-2.0.tmp"));
	if (geteuid() == 0) {
		struct stat st;
		snprintf(path, sizeof(path), "%s/overlay/gen-B-2.0/upper/etc/gone", base);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
	}
	/* A's generation is untouched (rollback finds it as it was) */
	t = get("overlay/gen-A-1.0/upper/etc/nokeep.conf");
	assert_string_equal(t, "not listed\n");
	free(TAKE_PTR(t));

	/* a half-built generation from a power cut is redone */
	put("overlay/gen-B-3.0.tmp/upper/junk", "x");
	assert_int_equal(boot_gen_prepare(ov, "gen-B-3.0", rom, "/", &res, err, sizeof(err)), 0);
	assert_true(res.created);
	assert_string_equal(res.previous, "gen-B-2.0");
	assert_false(exists("overlay/gen-B-3.0/upper/junk"));
	t = get("overlay/gen-B-3.0/upper/etc/keep.conf");
	assert_string_equal(t, "mine\n");
	free(TAKE_PTR(t));

	assert_int_equal(boot_gen_list(ov, &gens), 0);
	assert_int_equal(gens.n, 3);
	boot_gen_list_done(&gens);
	assert_int_equal(boot_gen_gc(ov, "gen-B-3.0", &removed, err, sizeof(err)), 2);
	assert_int_equal(removed.n, 2);
	assert_string_equal(removed.v[0], "gen-A-1.0");
	assert_string_equal(removed.v[1], "gen-B-2.0");
	boot_gen_list_done(&removed);
	assert_false(exists("overlay/gen-A-1.0"));
	assert_true(exists("overlay/gen-B-3.0/upper/etc/keep.conf"));
}

static void test_subtree_prefix(void **state)
{
	struct boot_gen_result res;
	char ov[512], rom[512], err[512] = "";
	_cleanup_free_ char *t = NULL;

	snprintf(ov, sizeof(ov), "%s/etcov", base);
	snprintf(rom, sizeof(rom), "%s/rom2", base);
	assert_int_equal(mkdir(ov, 0755), 0);
	put("rom2/etc/flashd/keep.d/x", "/etc/net.conf\n/var/log/keep\n");
	assert_int_equal(boot_gen_prepare(ov, "gen-A-1", rom, "/etc", &res, err, sizeof(err)), 0);
	put("etcov/gen-A-1/upper/net.conf", "net\n");
	assert_int_equal(boot_gen_prepare(ov, "gen-B-2", rom, "/etc", &res, err, sizeof(err)), 0);
	assert_int_equal(res.keep_entries, 1); /* /var/log/keep is outside /etc */
	t = get("etcov/gen-B-2/upper/net.conf");
	assert_string_equal(t, "net\n");
}

static void test_slot_good_rule(void **state)
{
	/* max 3: the script decremented to 2 before this boot */
	assert_false(boot_gen_slot_good(2, 3, 0)); /* first boot of the image: trial */
	assert_true(boot_gen_slot_good(2, 3, 1));  /* booted before, tries restored: marked good */
	assert_false(boot_gen_slot_good(1, 3, 1)); /* rebooted without mark-good */
	assert_false(boot_gen_slot_good(0, 3, 2));
	assert_true(boot_gen_slot_good(3, 3, 4));  /* no decrement (no boot script) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_keep_parse),
		cmocka_unit_test_setup_teardown(test_keep_load_names_file_and_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generations_migrate_and_gc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subtree_prefix, setup, teardown),
		cmocka_unit_test(test_slot_good_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
