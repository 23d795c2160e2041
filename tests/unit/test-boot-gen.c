/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include <sched.h>
#include <sys/mount.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "boot/boot_gen.h"
#include "cleanup.h"
#include "util.h"
#include "testlib.h"
#include "tree-digest.h"

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

/* ROOT + the keep-lists' dir (paths.h) + "/" NAME, in one of four buffers */
static const char *keep_path(const char *root, const char *name)
{
	static char buf[4][256];
	static unsigned n;
	char *b = buf[n++ % 4];

	snprintf(b, sizeof(buf[0]), "%s%s/%s", root, BOOT_GEN_KEEP_DIR, name);
	return b;
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

/* mkdir BASE/REL (its parent exists) */
static void mkdir_in(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

/* base/rel holds exactly text */
static void expect_text(const char *rel, const char *text)
{
	char path[512];
	_cleanup_free_ char *got = NULL;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	if (util_read_file(path, 1 << 20, &got, NULL) < 0 || strcmp(got, text))
		fail_msg("%s: \"%s\", expected \"%s\"", rel, got ? got : "(unreadable)", text);
}

static bool exists(const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	return lstat(path, &st) == 0;
}

/* None of dir/NAME... (up to NULL) exists */
static void __attribute__((sentinel)) expect_absent(const char *dir, ...)
{
	const char *name;
	char rel[256]; /* exists() adds base (256) */
	va_list ap;

	va_start(ap, dir);
	while ((name = va_arg(ap, const char *))) {
		snprintf(rel, sizeof(rel), "%s/%s", dir, name);
		if (exists(rel))
			fail_msg("%s: exists", rel);
	}
	va_end(ap);
}

static uint64_t tree_hash(const char *rel)
{
	char path[512];
	uint64_t h = 0;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(tree_digest(path, &h), 0);
	return h;
}

static void link_to(const char *target, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int prepare_subtree(const char *ov_rel, const char *gen, const char *rom_rel,
			   const char *subtree, struct error *err, struct boot_gen_result *res)
{
	char ov[512], rom[512];

	snprintf(ov, sizeof(ov), "%s/%s", base, ov_rel);
	snprintf(rom, sizeof(rom), "%s/%s", base, rom_rel);
	return boot_gen_prepare(ov, gen, rom, subtree, res, err);
}

static int prepare(const char *ov_rel, const char *gen, const char *rom_rel, struct error *err,
		   struct boot_gen_result *res)
{
	return prepare_subtree(ov_rel, gen, rom_rel, "/", err, res);
}

/* The overlay "ov" and its first generation gen-A-1 over "rom", whose
 * keep.d holds the file keep_name with the text keep. */
static void first_generation(const char *keep_name, const char *keep)
{
	struct boot_gen_result res;
	struct error err = {};
	char rel[128];

	mkdir_in("ov");
	snprintf(rel, sizeof(rel), "%s", keep_path("rom", keep_name));
	put(rel, keep);
	if (prepare("ov", "gen-A-1", "rom", &err, &res) < 0)
		fail_msg("gen-A-1: %s", error_message(&err));
}

/* The new upper takes a new file (the union would be writable). */
static void assert_writable(const char *rel)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s/.probe", base, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
}

/* The real union over the new generation takes a write (root: a private
 * mount namespace; otherwise the upper's own check above stands). */
static void assert_union_writable(const char *lower_rel, const char *gen_rel)
{
	char opts[2048], mnt[512], path[600], rel[128];
	int fd;

	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return;
	snprintf(mnt, sizeof(mnt), "%s/union", base);
	assert_int_equal(mkdir(mnt, 0755), 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s/%s,upperdir=%s/%s/upper,workdir=%s/%s/work", base,
		 lower_rel, base, gen_rel, base, gen_rel);
	if (mount("overlay", mnt, "overlay", 0, opts) < 0) {
		print_message("no overlayfs here (%s): union not checked\n", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/etc/written-through-the-union", mnt);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(umount2(mnt, 0), 0);
	snprintf(rel, sizeof(rel), "%s/upper/etc/written-through-the-union", gen_rel);
	assert_true(exists(rel));
}

/* Issue 14.1: ".[.]" matches ".." for glob(3): "/.[.]/.[.]" named the
 * overlay root as source and destination, and the O_TRUNC copy emptied
 * every file of every generation. */
TEST_FIXTURE(test_keep_dotdot_glob_no_self_copy, setup, teardown)
{
	struct boot_gen_result res;
	struct error err = {};
	uint64_t before;

	first_generation("evil", "/.[.]/.[.]\n/etc/.[.]/.[.]/.[.]\n/etc/.?/etc/a\n/etc/keep\n");
	put("ov/gen-A-1/upper/etc/keep", "kept\n");
	put("ov/gen-A-1/upper/etc/a", "user data\n");
	put("ov/gen-A-1/upper/data/big", "precious\n");
	before = tree_hash("ov/gen-A-1");
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	assert_int_equal(tree_hash("ov/gen-A-1"), before);
	expect_text("ov/gen-A-1/upper/data/big", "precious\n");
	expect_text("ov/gen-B-2/upper/etc/keep", "kept\n");
	expect_absent("ov/gen-B-2/upper", "data", "gen-A-1", NULL);
	assert_writable("ov/gen-B-2/upper");
}

/* Issue 14.1: symlinks in the old upper were followed as parents on both
 * sides: a link to the old upper's own data made a self-copy (O_TRUNC),
 * a link to the outside was read and written through. */
TEST_FIXTURE(test_keep_symlinks_not_followed, setup, teardown)
{
	struct boot_gen_result res;
	char target[512];
	struct error err = {};
	uint64_t before_old, before_out;
	struct stat st;

	put("outside/secret", "outside\n");
	first_generation("x", "/etc/config\n/etc/config/*\n/etc/out\n/etc/out/*\n"
			 "/etc/out/secret\n/etc/out/new/file\n");
	put("ov/gen-A-1/upper/data/d1", "user 1\n");
	put("ov/gen-A-1/upper/data/d2", "user 2\n");
	put("ov/gen-A-1/upper/etc/other", "x\n");
	snprintf(target, sizeof(target), "%s/ov/gen-A-1/upper/data", base);
	link_to(target, "ov/gen-A-1/upper/etc/config");
	snprintf(target, sizeof(target), "%s/outside", base);
	link_to(target, "ov/gen-A-1/upper/etc/out");
	before_old = tree_hash("ov/gen-A-1");
	before_out = tree_hash("outside");
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	assert_int_equal(tree_hash("ov/gen-A-1"), before_old);
	assert_int_equal(tree_hash("outside"), before_out);
	expect_text("ov/gen-A-1/upper/data/d1", "user 1\n");
	/* the links themselves are kept, as links */
	assert_int_equal(lstat(strcat(strcpy((char[512]){0}, base), "/ov/gen-B-2/upper/etc/config"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(lstat(strcat(strcpy((char[512]){0}, base), "/ov/gen-B-2/upper/etc/out"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_false(exists("ov/gen-B-2/upper/etc/other"));
	assert_writable("ov/gen-B-2/upper");
}

/* Issue 14.2: with GLOB_PERIOD "*" and ".*" matched "." and "..": the
 * line "/root/.*" migrated the whole old upper, and "/etc/config/ *"
 * (without the space) every change in /etc. */
TEST_FIXTURE(test_keep_star_never_dot_or_dotdot, setup, teardown)
{
	struct boot_gen_result res;
	struct error err = {};

	first_generation("x", "/root/.*\n/etc/config/*\n/*/nothing\n");
	put("ov/gen-A-1/upper/root/.profile", "profile\n");
	put("ov/gen-A-1/upper/root/notdot", "no\n");
	put("ov/gen-A-1/upper/etc/config/net", "net\n");
	put("ov/gen-A-1/upper/etc/config/.hidden", "hidden\n");
	put("ov/gen-A-1/upper/etc/notkept", "edit\n");
	put("ov/gen-A-1/upper/usr/lib/libold.so", "stale\n");
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	expect_text("ov/gen-B-2/upper/root/.profile", "profile\n");
	expect_text("ov/gen-B-2/upper/etc/config/.hidden", "hidden\n");
	assert_true(exists("ov/gen-B-2/upper/etc/config/net"));
	expect_absent("ov/gen-B-2/upper", "root/notdot", "etc/notkept", "usr", "upper", "gen-A-1",
		      NULL);
	assert_int_equal(res.migrated, 3); /* .profile, net, .hidden */
}

/* "." and ".." components are refused by the parser, with the line */
TEST(test_keep_parse_dots)
{
	struct boot_gen_list l = { 0 };
	unsigned line = 0;

	assert_int_equal(boot_gen_keep_parse("/a/./b\n", &l, &line), -EINVAL);
	assert_int_equal(boot_gen_keep_parse("/ok\n/.\n", &l, &line), -EINVAL);
	assert_int_equal(line, 2);
	assert_int_equal(boot_gen_keep_parse("//etc//x//\n", &l, &line), 0);
	assert_string_equal(l.v[l.n - 1], "/etc/x");
	boot_gen_list_done(&l);
}

/* Issue 14.9: sanitised names collided ("2.0~rc1" and "2.0_rc1"), "2.tmp"
 * took version 2's temporary directory, a long version failed. */
TEST(test_name_collisions)
{
	static const char *const invalid[] = { "gen-A-2.tmp", "../gen-A-1", "gen-A/../../x", "other" };
	char a[BOOT_GEN_NAME_MAX], b[BOOT_GEN_NAME_MAX], longv[600];

	assert_int_equal(boot_gen_name("A", "2.0~rc1", a, sizeof(a)), 0);
	assert_int_equal(boot_gen_name("A", "2.0_rc1", b, sizeof(b)), 0);
	assert_string_equal(b, "gen-A-2.0_rc1");
	assert_string_not_equal(a, b);
	assert_true(boot_gen_name_valid(a));
	assert_int_equal(boot_gen_name("A", "2.tmp", a, sizeof(a)), 0);
	assert_int_equal(boot_gen_name("A", "2", b, sizeof(b)), 0);
	strcat(b, ".tmp");
	assert_string_not_equal(a, b);
	assert_true(boot_gen_name_valid(a));
	memset(longv, 'v', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	assert_int_equal(boot_gen_name("A", longv, a, sizeof(a)), 0);
	assert_true(strlen(a) < BOOT_GEN_NAME_MAX && boot_gen_name_valid(a));
	longv[300] = 'w';
	assert_int_equal(boot_gen_name("A", longv, b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(boot_gen_name("A", "..", a, sizeof(a)), 0);
	assert_true(boot_gen_name_valid(a));
	for (size_t i = 0; i < ELEMENTSOF(invalid); i++)
		if (boot_gen_name_valid(invalid[i]))
			fail_msg("\"%s\" taken for a generation name", invalid[i]);
}

/* Issue 14.9: a planted "../" in .flashd-last made migration read outside
 * the overlay. */
TEST_FIXTURE(test_last_validated, setup, teardown)
{
	struct boot_gen_result res;
	struct error err = {};

	mkdir_in("ov");
	put(keep_path("rom", "x"), "/secret\n");
	put("elsewhere/upper/secret", "not yours\n");
	put("ov/.flashd-last", "../elsewhere\n");
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	assert_false(exists("ov/gen-B-2/upper/secret"));
	assert_string_equal(res.previous, "");
	assert_non_null(strstr(res.note, "names no generation"));
}

/* Issue 14.9: xattrs over 4 KiB failed the whole migration. Needs a
 * filesystem that takes big values: a private tmpfs (root only). */
TEST_FIXTURE(test_big_xattr, setup, teardown)
{
	struct boot_gen_result res;
	char path[512], value[9000], got[9000];
	struct error err = {};

	if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", base, "tmpfs", 0, "size=16m") < 0) {
		skip();
		return;
	}
	first_generation("x", "/etc/x\n");
	put("ov/gen-A-1/upper/etc/x", "x\n");
	snprintf(path, sizeof(path), "%s/ov/gen-A-1/upper/etc/x", base);
	memset(value, 'q', sizeof(value));
	assert_int_equal(setxattr(path, "trusted.big", value, sizeof(value), 0), 0);
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	snprintf(path, sizeof(path), "%s/ov/gen-B-2/upper/etc/x", base);
	assert_int_equal(getxattr(path, "trusted.big", got, sizeof(got)), sizeof(value));
	assert_memory_equal(got, value, sizeof(value));
	assert_int_equal(umount2(base, MNT_DETACH), 0);
}

/* The hostile keep-list corpus: thousands of entries built from globs
 * with brackets and dots, absolute and relative paths, very long names,
 * against an old upper with symlinks pointing inside and outside (and in
 * loops). Nothing outside the new generation may change, the old
 * generation keeps every byte, the new upper is writable. */
static const char *const hostile_parts[] = {
	".", "..", ".[.]", ".?", "?.", "*", ".*", "[.]", "[!a]*", "\\.", "\\.\\.", "[", "]", "[]]",
	"[.-.]", "etc", "config", "in", "out", "abs", "rel", "loop", "data", "[x]", "**", "?",
	"gen-A-1", "upper", "sentinel", "", "~", "$HOME", "*/..", "%s",
};

static void hostile_tree(void)
{
	char target[512], longname[300];

	put("sentinel/file", "sentinel\n");
	put("ov/gen-A-1/upper/etc/config/a", "a\n");
	put("ov/gen-A-1/upper/etc/config/.h", "h\n");
	put("ov/gen-A-1/upper/data/d", "d\n");
	put("ov/gen-A-1/upper/[x]/y", "bracket\n");
	memset(longname, 'n', 255);
	longname[255] = '\0';
	snprintf(target, sizeof(target), "ov/gen-A-1/upper/data/%s", longname);
	put(target, "long\n");
	link_to("../data", "ov/gen-A-1/upper/etc/in");
	snprintf(target, sizeof(target), "%s/ov/gen-A-1/upper/data", base);
	link_to(target, "ov/gen-A-1/upper/etc/abs");
	snprintf(target, sizeof(target), "%s/sentinel", base);
	link_to(target, "ov/gen-A-1/upper/etc/out");
	link_to("../../../../sentinel", "ov/gen-A-1/upper/etc/rel");
	link_to("loop", "ov/gen-A-1/upper/etc/loop");
	snprintf(target, sizeof(target), "%s/ov", base);
	link_to(target, "ov/gen-A-1/upper/ov");
}

static char *hostile_keep(unsigned n, uint32_t seed)
{
	size_t cap = n * 128 + 4096, len = 0;
	char *text = malloc(cap), longname[300];

	assert_non_null(text);
	memset(longname, 'n', 255);
	longname[255] = '\0';
	len += snprintf(text + len, cap - len, "/.[.]/.[.]\n/*\n/.*\n/etc/*/*\n/etc/in/*\n"
			"/etc/abs/*\n/etc/out/file\n/etc/rel/file\n/etc/loop/x\n/ov/*\n"
			"/data/%s\n/data/%sx\nrelative/path\n/\n", longname, longname);
	for (unsigned i = 0; i < n; i++) {
		unsigned depth;

		seed = seed * 1103515245u + 12345u;
		depth = 1 + (seed >> 16) % 5;
		if ((seed >> 8) % 7)
			text[len++] = '/';
		for (unsigned d = 0; d < depth; d++) {
			const char *part;

			seed = seed * 1103515245u + 12345u;
			part = hostile_parts[(seed >> 16) % ELEMENTSOF(hostile_parts)];
			len += snprintf(text + len, cap - len, "%s%s", d ? "/" : "", part);
		}
		text[len++] = '\n';
	}
	text[len] = '\0';
	return text;
}

TEST_FIXTURE(test_hostile_keep_corpus, setup, teardown)
{
	struct boot_gen_result res;
	struct boot_gen_list gens = { 0 };
	char path[512];
	struct error err = {};
	_cleanup_free_ char *keep = hostile_keep(3000, 14);
	uint64_t old_hash, sentinel_hash;
	FILE *f;

	first_generation("hostile", keep);
	hostile_tree();
	/* the user's own keep.d in the old upper is hostile too */
	snprintf(path, sizeof(path), "%s/ov/gen-A-1/upper%s", base, BOOT_GEN_KEEP_DIR);
	assert_int_equal(system(strcat(strcpy((char[600]){0}, "mkdir -p "), path)), 0);
	strcat(path, "/user");
	assert_non_null(f = fopen(path, "w"));
	fputs(keep, f);
	fclose(f);
	old_hash = tree_hash("ov/gen-A-1");
	sentinel_hash = tree_hash("sentinel");
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	assert_true(res.keep_rejected > 0);
	assert_true(res.migrated > 0);
	assert_int_equal(tree_hash("ov/gen-A-1"), old_hash);
	assert_int_equal(tree_hash("sentinel"), sentinel_hash);
	/* only the two generations: no .tmp, nothing copied beside them */
	assert_int_equal(boot_gen_list(strcat(strcpy((char[512]){0}, base), "/ov"), &gens), 0);
	assert_int_equal(gens.n, 2);
	assert_string_equal(gens.v[1], "gen-B-2");
	boot_gen_list_done(&gens);
	expect_absent("ov/gen-B-2/upper", "upper", "gen-A-1", NULL);
	assert_true(exists("ov/gen-B-2/upper/etc/config/.h"));
	assert_writable("ov/gen-B-2/upper");
	assert_writable("ov/gen-B-2/upper/etc/config");
	assert_union_writable("rom", "ov/gen-B-2");
}

/* Issue 14.3: one relative line in any keep.d file failed the whole
 * generation (and with it the writable root). It is skipped and named. */
TEST_FIXTURE(test_relative_line_skipped, setup, teardown)
{
	struct boot_gen_result res;
	struct error err = {};

	first_generation("10-x", "etc/relative\n/etc/keep\n");
	put("ov/gen-A-1/upper/etc/keep", "kept\n");
	assert_int_equal(prepare("ov", "gen-B-2", "rom", &err, &res), 0);
	assert_int_equal(res.keep_rejected, 1);
	assert_non_null(strstr(res.note, "keep.d/10-x:1:"));
	expect_text("ov/gen-B-2/upper/etc/keep", "kept\n");
}

TEST(test_name)
{
	char buf[64];

	assert_int_equal(boot_gen_name("A", "2.0", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gen-A-2.0");
	assert_int_equal(boot_gen_name("B", "1.0 beta/3", buf, sizeof(buf)), 0);
	assert_true(!strncmp(buf, "gen-B-1.0_beta_3-", 17) && strlen(buf) == 25);
	assert_int_equal(boot_gen_name("A", NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "gen-A-unknown");
	assert_int_equal(boot_gen_name("A", "x", buf, 6), -ENAMETOOLONG);
}

TEST(test_keep_parse)
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

TEST_FIXTURE(test_keep_load_names_file_and_line, setup, teardown)
{
	struct boot_gen_list l = { 0 };
	char d1[512], d2[512];
	struct error err = {};
	const char *dirs[3];

	put("k1/10-base", "/etc/a\n/etc/b\n");
	put("k2/20-user", "/etc/b\n/etc/c\n");
	snprintf(d1, sizeof(d1), "%s/k1", base);
	snprintf(d2, sizeof(d2), "%s/k2", base);
	dirs[0] = d1;
	dirs[1] = d2;
	dirs[2] = "/nonexistent/keep.d";
	assert_int_equal(boot_gen_keep_load(dirs, 3, &l, &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[2], "/etc/c");
	boot_gen_list_done(&l);
	put("k2/30-bad", "/fine\n\nnot-absolute\n");
	/* a bad line is skipped and named; the others still count */
	assert_int_equal(boot_gen_keep_load(dirs, 2, &l, &err), 1);
	assert_non_null(strstr(err.msg, "k2/30-bad:3:"));
	assert_int_equal(l.n, 4);
	boot_gen_list_done(&l);
}

TEST_FIXTURE(test_generations_migrate_and_gc, setup, teardown)
{
	const struct {
		const char *rel, *text;
		bool kept; /* by B (the keep-lists: rom's keep.d/base, the user's) */
	} files[] = {
		{ "etc/keep.conf", "mine\n", true },
		{ "etc/nokeep.conf", "not listed\n", false },
		{ "etc/keepdir/sub/file", "deep\n", true },
		{ "home/u/.profile", "profile\n", true },
		{ keep_path("", "user") + 1, "/etc/userkeep\n", false },
		{ "etc/userkeep", "user list\n", true },
	};
	struct boot_gen_result res;
	struct boot_gen_list gens = { 0 }, removed = { 0 };
	char ov[512], path[512];
	struct error err = {};

	snprintf(ov, sizeof(ov), "%s/overlay", base);
	mkdir_in("overlay");
	put(keep_path("rom", "base"), "/etc/keep.conf\n/etc/keepdir\n/etc/gone\n/home/*/.profile\n");

	/* first boot ever: nothing to migrate */
	assert_int_equal(prepare("overlay", "gen-A-1.0", "rom", &err, &res), 0);
	assert_true(res.created);
	assert_string_equal(res.previous, "");
	assert_int_equal(res.boots, 0);
	expect_text("overlay/.flashd-last", "gen-A-1.0\n");

	/* the user changes things in A's upper */
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		snprintf(path, sizeof(path), "overlay/gen-A-1.0/upper/%s", files[i].rel);
		put(path, files[i].text);
	}
	snprintf(path, sizeof(path), "%s/overlay/gen-A-1.0/upper/etc/keepdir/link", base);
	assert_int_equal(symlink("sub/file", path), 0);
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/overlay/gen-A-1.0/upper/etc/gone", base);
		assert_int_equal(mknod(path, S_IFCHR, makedev(0, 0)), 0);
	}
	/* second boot of A: same generation, counted */
	assert_int_equal(prepare("overlay", "gen-A-1.0", "rom", &err, &res), 0);
	assert_false(res.created);
	assert_int_equal(res.boots, 1);

	/* B's first boot: keep-list entries migrate, others do not */
	assert_int_equal(prepare("overlay", "gen-B-2.0", "rom", &err, &res), 0);
	assert_true(res.created);
	assert_string_equal(res.previous, "gen-A-1.0");
	assert_int_equal(res.keep_entries, 5);
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		if (!files[i].kept)
			continue;
		snprintf(path, sizeof(path), "overlay/gen-B-2.0/upper/%s", files[i].rel);
		expect_text(path, files[i].text);
	}
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
	expect_text("overlay/gen-A-1.0/upper/etc/nokeep.conf", "not listed\n");

	/* a half-built generation from a power cut is redone */
	put("overlay/gen-B-3.0.tmp/upper/junk", "x");
	assert_int_equal(prepare("overlay", "gen-B-3.0", "rom", &err, &res), 0);
	assert_true(res.created);
	assert_string_equal(res.previous, "gen-B-2.0");
	assert_false(exists("overlay/gen-B-3.0/upper/junk"));
	expect_text("overlay/gen-B-3.0/upper/etc/keep.conf", "mine\n");

	assert_int_equal(boot_gen_list(ov, &gens), 0);
	assert_int_equal(gens.n, 3);
	boot_gen_list_done(&gens);
	assert_int_equal(boot_gen_gc(ov, "gen-B-3.0", &removed, &err), 2);
	assert_int_equal(removed.n, 2);
	assert_string_equal(removed.v[0], "gen-A-1.0");
	assert_string_equal(removed.v[1], "gen-B-2.0");
	boot_gen_list_done(&removed);
	assert_false(exists("overlay/gen-A-1.0"));
	assert_true(exists("overlay/gen-B-3.0/upper/etc/keep.conf"));
}

TEST_FIXTURE(test_subtree_prefix, setup, teardown)
{
	struct boot_gen_result res;
	struct error err = {};

	mkdir_in("etcov");
	put(keep_path("rom2", "x"), "/etc/net.conf\n/var/log/keep\n");
	assert_int_equal(prepare_subtree("etcov", "gen-A-1", "rom2", "/etc", &err, &res), 0);
	put("etcov/gen-A-1/upper/net.conf", "net\n");
	assert_int_equal(prepare_subtree("etcov", "gen-B-2", "rom2", "/etc", &err, &res), 0);
	assert_int_equal(res.keep_entries, 1); /* /var/log/keep is outside /etc */
	expect_text("etcov/gen-B-2/upper/net.conf", "net\n");
}

TEST(test_slot_good_rule)
{
	/* max 3: the script decremented to 2 before this boot */
	assert_false(boot_gen_slot_good(2, 3, 0)); /* first boot of the image: trial */
	assert_true(boot_gen_slot_good(2, 3, 1));  /* booted before, tries restored: marked good */
	assert_false(boot_gen_slot_good(1, 3, 1)); /* rebooted without mark-good */
	assert_false(boot_gen_slot_good(0, 3, 2));
	assert_true(boot_gen_slot_good(3, 3, 4));  /* no decrement (no boot script) */
}
