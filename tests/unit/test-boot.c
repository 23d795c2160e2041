/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* boot/boot.c, the "flashd boot" command: its arguments (every usage
 * error is exit 2 with the reason on stderr, --help is 0) and, through
 * --dry-run (which touches nothing), which slot and root it settles on
 * from --slot or the command line file, per mode; a layout or slot it
 * cannot use is exit 1 with a message naming it. The real assembly:
 * tests/boot/test-boot-state.sh and tests/vm/test-boot-*.sh. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "boot/boot.h"
#include "cleanup.h"
#include "testlib.h"
#include "util.h"

struct run {
	int status;
	char *out, *err;
};

static void run_done(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* file_with TEXT: a temp file holding TEXT (a kernel command line) */
static char *file_with(const char *text)
{
	char *path = testlib_tmp_file("boot-cmdline");
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* flashd boot ARGS... (NULL-terminated): exit status, stdout and stderr */
static struct run boot(const char *arg, ...)
{
	_cleanup_unlink_ char *out = testlib_tmp_file("boot-out");
	_cleanup_unlink_ char *err = testlib_tmp_file("boot-err");
	char *argv[32] = { (char *)"boot" };
	int argc = 1, fd1, fd2, o, e;
	struct run r = { 0 };
	va_list ap;

	va_start(ap, arg);
	for (const char *a = arg; a; a = va_arg(ap, const char *)) {
		assert_true(argc < 31);
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	fd1 = dup(1);
	fd2 = dup(2);
	o = open(out, O_WRONLY | O_CLOEXEC);
	e = open(err, O_WRONLY | O_CLOEXEC);
	assert_true(fd1 >= 0 && fd2 >= 0 && o >= 0 && e >= 0);
	dup2(o, 1);
	dup2(e, 2);
	r.status = boot_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(fd1, 1);
	dup2(fd2, 2);
	close(fd1);
	close(fd2);
	close(o);
	close(e);
	assert_int_equal(util_read_file(out, 1 << 20, &r.out, NULL), 0);
	assert_int_equal(util_read_file(err, 1 << 20, &r.err, NULL), 0);
	return r;
}

static void expect_in(const char *what, const char *text, const char *part)
{
	if (!strstr(text, part))
		fail_msg("%s does not say \"%s\":\n%s", what, part, text);
}

static char *layout_path(void)
{
	return testlib_src_path("layouts/nandsim-128m.json");
}

TEST(test_usage_errors)
{
	static const struct {
		const char *args[6];
		const char *says;
	} cases[] = {
		{ { NULL }, "--mode is required" },
		{ { "--dry-run", NULL }, "--mode is required" },
		{ { "--mode", "recovery", NULL }, "--mode recovery: expected initramfs, initramfs-tools or preinit" },
		{ { "--mode", "initramfs", "extra", NULL }, "unexpected argument" },
		{ { "--mode", "preinit", "--root-dev", "/dev/sda1", NULL },
		  "--root-dev is for initramfs mode" },
		{ { "--mode", "initramfs", "--frobnicate", NULL }, "Usage: flashd boot" },
		{ { "--mode", NULL }, "Usage: flashd boot" },
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		const char *const *a = cases[i].args;
		struct run r = boot(a[0], a[0] ? a[1] : NULL, a[0] && a[1] ? a[2] : NULL,
				    a[0] && a[1] && a[2] ? a[3] : NULL,
				    a[0] && a[1] && a[2] && a[3] ? a[4] : NULL, NULL);

		if (r.status != 2)
			fail_msg("case %zu: exit %d, expected 2 (usage)", i, r.status);
		expect_in("stderr", r.err, cases[i].says);
		assert_string_equal(r.out, "");
		run_done(&r);
	}
}

TEST(test_help)
{
	struct run r = boot("--help", NULL);

	(void)state;
	assert_int_equal(r.status, 0);
	expect_in("--help", r.out, "Usage: flashd boot --mode initramfs|initramfs-tools|preinit");
	assert_string_equal(r.err, "");
	run_done(&r);
}

/* --slot names the slot; the dry run says the root it would mount. */
TEST(test_dry_run_slot)
{
	_cleanup_free_ char *l = layout_path();
	struct run r = boot("--mode", "initramfs", "--layout", l, "--slot", "B", "--dry-run",
			    "--stage", "/tmp/flashd-test-stage", NULL);

	(void)state;
	assert_int_equal(r.status, 0);
	expect_in("dry run", r.out, "mode initramfs, slot B (--slot)");
	expect_in("dry run", r.out, "root: nand rootfs-b -> /tmp/flashd-test-stage/rom");
	expect_in("dry run", r.out, "overlay /: jffs2 on rootfs_data");
	expect_in("dry run", r.out, "then: switch_root, exec init");
	run_done(&r);

	r = boot("--mode", "preinit", "--layout", l, "--slot", "A", "--dry-run", "--no-exec", NULL);
	assert_int_equal(r.status, 0);
	expect_in("preinit dry run", r.out, "mode preinit, slot A (--slot)");
	expect_in("preinit dry run", r.out, "root: / (mounted by the kernel)");
	expect_in("preinit dry run", r.out, "then: stop (--no-exec)");
	run_done(&r);
}

/* Without --slot the kernel command line file names it. */
TEST(test_dry_run_cmdline)
{
	static const struct {
		const char *cmdline, *says;
	} cases[] = {
		{ "console=ttyS0 flashd.slot=B ro\n", "slot B" },
		{ "console=ttyS0 flashd.slot=A\n", "slot A" },
	};
	_cleanup_free_ char *l = layout_path();

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_unlink_ char *c = file_with(cases[i].cmdline);
		struct run r = boot("--mode", "initramfs", "--layout", l, "--cmdline", c,
				    "--dry-run", NULL);

		assert_int_equal(r.status, 0);
		expect_in(cases[i].cmdline, r.out, cases[i].says);
		run_done(&r);
	}
}

/* What it cannot use: exit 1, and the message names it. */
TEST(test_refusals)
{
	_cleanup_free_ char *l = layout_path();
	_cleanup_unlink_ char *none = file_with("console=ttyS0 quiet\n");
	_cleanup_unlink_ char *other = file_with("console=ttyS0 flashd.slot=C\n");
	struct run r;

	(void)state;
	r = boot("--mode", "initramfs", "--layout", l, "--slot", "Z", "--dry-run", NULL);
	assert_int_equal(r.status, 1);
	expect_in("--slot Z", r.err, "--slot Z: the layout's group rootfs has no such slot");
	run_done(&r);

	r = boot("--mode", "initramfs", "--layout", l, "--cmdline", none, "--dry-run", NULL);
	assert_int_equal(r.status, 1);
	expect_in("no slot on the command line", r.err, "names no slot of group rootfs");
	run_done(&r);

	r = boot("--mode", "initramfs", "--layout", l, "--cmdline", other, "--dry-run", NULL);
	assert_int_equal(r.status, 1);
	expect_in("an unknown slot on the command line", r.err, "which slot booted");
	run_done(&r);

	r = boot("--mode", "initramfs", "--layout", "/nonexistent/flashd-test.json", "--slot", "A",
		 "--dry-run", NULL);
	assert_int_equal(r.status, 1);
	expect_in("a missing layout", r.err, "/nonexistent/flashd-test.json");
	run_done(&r);

	r = boot("--mode", "initramfs", "--layout", l, "--cmdline", "/nonexistent/cmdline",
		 "--dry-run", NULL);
	assert_int_equal(r.status, 1);
	expect_in("a missing command line file", r.err, "/nonexistent/cmdline");
	run_done(&r);
}
