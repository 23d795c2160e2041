#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/flashd-test-config-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_defaults(void **state)
{
	_cleanup_conf_ struct conf *c = NULL;

	assert_int_equal(conf_new(&c), 0);
	assert_string_equal(c->socket, "/run/flashd/flashd.sock");
	assert_string_equal(c->target, "system");
	/* where flashd boot looks too, whatever the build's prefix */
	assert_string_equal(c->layout, "/etc/flashd/layout.json");
	assert_false(c->allow_unsigned);
	assert_int_equal(c->health_timeout, 60);
	assert_null(c->health_command);
}

static void test_load_values(void **state)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};
	char *p = write_tmp("# comment\nlayout = /x/board.json\n target=sim:/tmp/b.sim\n"
			    "allow-unsigned=yes\n[health]\ncommand=/bin/true\ntimeout=5\n"
			    "reboot-on-failure=no\n");

	assert_int_equal(conf_new(&c), 0);
	assert_int_equal(conf_load(c, p, false, &err), 0);
	assert_string_equal(c->layout, "/x/board.json");
	assert_string_equal(c->target, "sim:/tmp/b.sim");
	assert_true(c->allow_unsigned);
	assert_string_equal(c->health_command, "/bin/true");
	assert_int_equal(c->health_timeout, 5);
	assert_false(c->health_reboot);
	unlink(p);
	free(p);
}

static void expect_error(const char *text, const char *msg)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};
	char *p = write_tmp(text);

	assert_int_equal(conf_new(&c), 0);
	assert_int_equal(conf_load(c, p, false, &err), -EINVAL);
	if (!strstr(err.msg, msg) || strncmp(err.msg, p, strlen(p)))
		fail_msg("error '%s' lacks '%s' or the file name", err.msg, msg);
	unlink(p);
	free(p);
}

static void test_errors(void **state)
{
	expect_error("bogus=1\n", ":1: unknown key 'bogus' in section [flashd]");
	expect_error("\n[nope]\n", ":2: unknown section [nope]");
	expect_error("allow-unsigned=maybe\n", "'maybe' is not a boolean");
	expect_error("[health]\ntimeout=-3\n", ":2: [health] timeout: '-3' is not a number");
	expect_error("[health]\ntimeout=0\n", "is not a number of seconds");
	expect_error("layout\n", "expected key=value");
	expect_error("[flashd\n", "malformed section header");
	expect_error("layout=\n", "[flashd] layout: empty value");
	expect_error("[health]\nlayout=/x\n", "unknown key 'layout' in section [health]");
}

static void test_missing(void **state)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};

	assert_int_equal(conf_new(&c), 0);
	assert_int_equal(conf_load(c, "/nonexistent/flashd.conf", true, &err), 0);
	assert_int_equal(conf_load(c, "/nonexistent/flashd.conf", false, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/flashd.conf"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_load_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_missing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
