/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "util.h"

#define LOG_FIELDS_MAX 16
#define LOG_LINE_MAX 2048
#define LOG_FIELD_MAX 512

static bool log_journal;
static int log_max = LOG_INFO;

static const char *const log_prefix[] = {
	[LOG_EMERG] = "emergency", [LOG_ALERT] = "alert", [LOG_CRIT] = "critical",
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

#define LOG_EVENT_ID(v, s, id, level) [v] = id,
#define LOG_EVENT_LEVEL(v, s, id, level) [v] = level,
static const char *const log_event_table[] = { LOG_EVENT_LIST(STRING_TABLE_NAME) };
static const char *const log_event_ids[] = { LOG_EVENT_LIST(LOG_EVENT_ID) };
static const int log_event_levels[] = { LOG_EVENT_LIST(LOG_EVENT_LEVEL) };
DEFINE_STRING_TABLE_TO(log_event, enum log_event)

const char *log_event_id(enum log_event ev)
{
	return (size_t)ev < ELEMENTSOF(log_event_ids) ? log_event_ids[ev] : NULL;
}

void log_open(void)
{
	/* systemd sets JOURNAL_STREAM when stderr goes to the journal */
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_max_level(int level)
{
	log_max = level;
}

/* "NAME=value" in buf, the value made printable and cut to fit (a long
 * error or URL is still found by its field); false when it has no value. */
static bool log_field_format(const struct log_field *f, char *buf, size_t len)
{
	char shown[LOG_FIELD_MAX];
	int n;

	if (!f->value)
		return false;
	util_printable(f->value, shown, sizeof(shown));
	n = snprintf(buf, len, "%s=%s", f->name, shown);
	return n > 0 && strlen(f->name) + 2 < len;
}

static void log_journal_send(int level, const char *id, const struct log_field *fields,
			     const char *msg)
{
	char message[LOG_LINE_MAX + 16], head[2][64], text[LOG_FIELDS_MAX][LOG_FIELD_MAX];
	struct iovec iov[LOG_FIELDS_MAX + 3];
	size_t n = 0, k = 0;

	snprintf(message, sizeof(message), "MESSAGE=%s", msg);
	snprintf(head[0], sizeof(head[0]), "PRIORITY=%d", level);
	snprintf(head[1], sizeof(head[1]), "MESSAGE_ID=%s", id ? id : "");
	iov[n++] = (struct iovec){ .iov_base = message, .iov_len = strlen(message) };
	iov[n++] = (struct iovec){ .iov_base = head[0], .iov_len = strlen(head[0]) };
	if (id)
		iov[n++] = (struct iovec){ .iov_base = head[1], .iov_len = strlen(head[1]) };
	for (size_t i = 0; fields && fields[i].name && k < LOG_FIELDS_MAX; i++)
		if (log_field_format(&fields[i], text[k], sizeof(text[k]))) {
			iov[n++] = (struct iovec){ .iov_base = text[k], .iov_len = strlen(text[k]) };
			k++;
		}
	sd_journal_sendv(iov, (int)n);
}

static void log_vsend(int level, const char *id, const struct log_field *fields,
		      const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX], shown[LOG_LINE_MAX];

	if (level > log_max)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* a message may carry what a server, a bundle or a file said: no
	 * escape codes into a terminal, no forged lines into the journal */
	util_printable(msg, shown, sizeof(shown));
	if (log_journal)
		log_journal_send(level, id, fields, shown);
	else
		fprintf(stderr, "flashd[%s]: %s\n", log_prefix[level & 7], shown);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vsend(level, NULL, NULL, fmt, ap);
	va_end(ap);
}

void log_event(enum log_event ev, const struct log_field *fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vsend(log_event_levels[ev], log_event_ids[ev], fields, fmt, ap);
	va_end(ap);
}
