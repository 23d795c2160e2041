/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/log.c: every journal event has a MESSAGE_ID of its own, made as
 * systemd-id128 makes them, and an entry in the catalog that ships
 * (systemd/flashd.catalog) and a line in flashd(8); the catalog has no
 * entry for an ID the code lost; the stderr line of an event is the plain text line. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cleanup.h"
#include "daemon/log.h"
#include "util.h"
#include "testlib.h"

static bool id_valid(const char *id)
{
	if (!id || strlen(id) != 32)
		return false;
	for (size_t i = 0; i < 32; i++)
		if (!isxdigit((unsigned char)id[i]) || isupper((unsigned char)id[i]))
			return false;
	return true;
}

static char *read_catalog(void)
{
	char *text = NULL;

	assert_int_equal(util_read_file(TOP_SRCDIR "/systemd/flashd.catalog", 1 << 20, &text,
					NULL), 0);
	return text;
}

TEST(test_event_ids)
{
	for (int i = 0; i < _LOG_EVENT_MAX; i++) {
		const char *id = log_event_id(i);

		assert_non_null(log_event_to_string(i));
		if (!id_valid(id))
			fail_msg("event %s: MESSAGE_ID '%s' is not 32 lowercase hex digits",
				 log_event_to_string(i), id ? id : "(null)");
		for (int j = 0; j < i; j++)
			if (!strcmp(id, log_event_id(j)))
				fail_msg("events %s and %s share MESSAGE_ID %s",
					 log_event_to_string(j), log_event_to_string(i), id);
	}
	assert_null(log_event_id(_LOG_EVENT_MAX));
}

TEST(test_catalog_has_every_event)
{
	_cleanup_free_ char *text = read_catalog();

	for (int i = 0; i < _LOG_EVENT_MAX; i++) {
		char head[64];

		snprintf(head, sizeof(head), "\n-- %s\nSubject: ", log_event_id(i));
		if (!strstr(text, head))
			fail_msg("systemd/flashd.catalog has no entry (\"-- %s\" and a Subject) "
				 "for event %s", log_event_id(i), log_event_to_string(i));
	}
}

TEST(test_catalog_has_no_stale_entry)
{
	_cleanup_free_ char *text = read_catalog();
	unsigned entries = 0;

	for (char *p = strstr(text, "\n-- "); p; p = strstr(p + 1, "\n-- ")) {
		char id[33] = "";
		bool known = false;

		memcpy(id, p + 4, strnlen(p + 4, 32));
		for (int i = 0; i < _LOG_EVENT_MAX; i++)
			known = known || !strcmp(id, log_event_id(i));
		if (!known)
			fail_msg("systemd/flashd.catalog: entry %s is no event of daemon/log.h", id);
		entries++;
	}
	assert_int_equal(entries, _LOG_EVENT_MAX);
}

/* flashd(8) lists the IDs for operators: none may be missing there */
TEST(test_man_page_lists_every_event)
{
	_cleanup_free_ char *text = NULL;

	assert_int_equal(util_read_file(TOP_SRCDIR "/man/flashd.8.scd", 1 << 20, &text, NULL), 0);
	for (int i = 0; i < _LOG_EVENT_MAX; i++)
		if (!strstr(text, log_event_id(i)))
			fail_msg("man/flashd.8.scd (LOGGING) does not list event %s (%s)",
				 log_event_to_string(i), log_event_id(i));
}

/* Off the journal, an event is the text line it always was. */
TEST(test_event_on_stderr)
{
	char path[] = "/tmp/test-log-XXXXXX";
	_cleanup_free_ char *text = NULL;
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);

	assert_true(fd >= 0 && saved >= 0);
	unsetenv("JOURNAL_STREAM");
	log_open();
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	log_event(LOG_EVENT_SLOT_BAD, (const struct log_field[]){ { "SLOT", "B" }, { NULL } },
		  "mark-bad of slot %s by uid %u\x1b[2J", "B", 0U);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	assert_int_equal(util_read_file(path, 4096, &text, NULL), 0);
	unlink(path);
	assert_string_equal(text, "flashd[notice]: mark-bad of slot B by uid 0\\x1b[2J\n");
}
