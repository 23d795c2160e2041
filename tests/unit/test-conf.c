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
#include "testlib.h"

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/flashd-test-config-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

TEST(test_defaults)
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

TEST(test_load_values)
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

TEST(test_errors)
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

/* [network]: header= repeats, the numbers have their ranges */
TEST(test_network)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};
	char *p = write_tmp("[network]\nca-file=/etc/ca.pem\nheader=X-Device: 42\n"
			    "header=Authorization: Bearer t\nretries=0\nretry-delay=250\n"
			    "stall-timeout=7\nredirect-other-host=yes\n");

	assert_int_equal(conf_new(&c), 0);
	assert_null(c->headers);
	assert_int_equal(c->retries, 5);
	assert_int_equal(c->stall_timeout, 60);
	assert_false(c->redirect_other_host);
	assert_int_equal(conf_load(c, p, false, &err), 0);
	assert_string_equal(c->ca_file, "/etc/ca.pem");
	assert_string_equal(c->headers[0], "X-Device: 42");
	assert_string_equal(c->headers[1], "Authorization: Bearer t");
	assert_null(c->headers[2]);
	assert_int_equal(c->retries, 0);
	assert_int_equal(c->retry_delay_ms, 250);
	assert_int_equal(c->stall_timeout, 7);
	assert_true(c->redirect_other_host);
	unlink(p);
	free(p);
	expect_error("[network]\nretries=1001\n", "[network] retries: '1001' is not a count (0..1000)");
	expect_error("[network]\nretry-delay=0\n", "is not a number of milliseconds");
	expect_error("[network]\nheader=\n", "[network] header: empty value");
	expect_error("[network]\nproxy=x\n", "unknown key 'proxy' in section [network]");
}

TEST(test_missing)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};

	assert_int_equal(conf_new(&c), 0);
	assert_int_equal(conf_load(c, "/nonexistent/flashd.conf", true, &err), 0);
	assert_int_equal(conf_load(c, "/nonexistent/flashd.conf", false, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/flashd.conf"));
}
