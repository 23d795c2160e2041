/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

/* A new conf with text loaded from a file: the result of conf_load(),
 * the conf and the error for the caller to check. An error message
 * starts with the file's name. */
static int load(const char *text, struct conf **ret, struct error *err)
{
	_cleanup_unlink_ char *path = testlib_tmp_file("config");
	FILE *f = fopen(path, "we");
	int r;

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(conf_new(ret), 0);
	r = conf_load(*ret, path, false, err);
	if (r < 0 && strncmp(err->msg, path, strlen(path)))
		fail_msg("error '%s' does not start with the file name", err->msg);
	return r;
}

TEST(test_defaults)
{
	_cleanup_conf_ struct conf *c = NULL;

	assert_int_equal(conf_new(&c), 0);
	/* the configured paths (paths.h), where flashd boot and flashctl look too */
	assert_string_equal(c->socket, paths_socket);
	assert_string_equal(c->target, "system");
	assert_string_equal(c->layout, paths_layout);
	assert_string_equal(c->keyring, paths_keyring);
	assert_string_equal(c->state_dir, paths_state_dir);
	assert_false(c->allow_unsigned);
	assert_int_equal(c->health_timeout, 60);
	assert_null(c->health_command);
	assert_null(c->headers);
	assert_int_equal(c->retries, 5);
	assert_int_equal(c->stall_timeout, 60);
	assert_false(c->redirect_other_origin);
	assert_null(c->netrc_file);
	assert_int_equal(c->min_rate, 1024);
	assert_int_equal(c->min_rate_time, 60);
	assert_int_equal(c->deadline, 6 * 3600);
}

/* Issue 32.3-5: the network's new keys */
TEST(test_load_network_limits)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};

	assert_int_equal(load("[network]\nmin-rate=4K\nmin-rate-time=2\ndownload-deadline=0\n"
			      "netrc-file=/etc/flashd/netrc\nredirect-other-origin=yes\n", &c, &err), 0);
	assert_int_equal(c->min_rate, 4096);
	assert_int_equal(c->min_rate_time, 2);
	assert_int_equal(c->deadline, 0);
	assert_string_equal(c->netrc_file, "/etc/flashd/netrc");
	assert_true(c->redirect_other_origin);
}

TEST(test_load_values)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};

	assert_int_equal(load("# comment\nlayout = /x/board.json\n target=sim:/tmp/b.sim\n"
			      "allow-unsigned=yes\n[health]\ncommand=/bin/true\ntimeout=5\n"
			      "reboot-on-failure=no\n"
			      /* header= repeats */
			      "[network]\nca-file=/etc/ca.pem\nheader=X-Device: 42\n"
			      "header=Authorization: Bearer t\nretries=0\nretry-delay=250\n"
			      "stall-timeout=7\nredirect-other-host=yes\n", &c, &err), 0);
	assert_string_equal(c->layout, "/x/board.json");
	assert_string_equal(c->target, "sim:/tmp/b.sim");
	assert_true(c->allow_unsigned);
	assert_string_equal(c->health_command, "/bin/true");
	assert_int_equal(c->health_timeout, 5);
	assert_false(c->health_reboot);
	assert_string_equal(c->ca_file, "/etc/ca.pem");
	assert_string_equal(c->headers[0], "X-Device: 42");
	assert_string_equal(c->headers[1], "Authorization: Bearer t");
	assert_null(c->headers[2]);
	assert_int_equal(c->retries, 0);
	assert_int_equal(c->retry_delay_ms, 250);
	assert_int_equal(c->stall_timeout, 7);
	assert_true(c->redirect_other_origin);
}

static void expect_error(const char *text, const char *msg)
{
	_cleanup_conf_ struct conf *c = NULL;
	struct error err = {};
	int r = load(text, &c, &err);

	if (r != -EINVAL || !strstr(err.msg, msg))
		fail_msg("%s: %d '%s', expected -EINVAL '%s'", text, r, err.msg, msg);
}

TEST(test_errors)
{
	static const char *const cases[][2] = { /* text, what the error says */
		{ "bogus=1\n", ":1: unknown key 'bogus' in section [flashd]" },
		{ "\n[nope]\n", ":2: unknown section [nope]" },
		{ "allow-unsigned=maybe\n", "'maybe' is not a boolean" },
		{ "[health]\ntimeout=-3\n", ":2: [health] timeout: '-3' is not a number" },
		{ "[health]\ntimeout=0\n", "is not a number of seconds" },
		{ "layout\n", "expected key=value" },
		{ "[flashd\n", "malformed section header" },
		{ "layout=\n", "[flashd] layout: empty value" },
		{ "[health]\nlayout=/x\n", "unknown key 'layout' in section [health]" },
		/* [network]: the numbers have their ranges */
		{ "[network]\nretries=1001\n", "[network] retries: '1001' is not a count (0..1000)" },
		{ "[network]\nretry-delay=0\n", "is not a number of milliseconds" },
		{ "[network]\nheader=\n", "[network] header: empty value" },
		{ "[network]\nproxy=x\n", "unknown key 'proxy' in section [network]" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		expect_error(cases[i][0], cases[i][1]);
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
