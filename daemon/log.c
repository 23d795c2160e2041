/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "util.h"

static bool log_journal;
static int log_max = LOG_INFO;

static const char *const log_prefix[] = {
	[LOG_EMERG] = "emergency", [LOG_ALERT] = "alert", [LOG_CRIT] = "critical",
	[LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_open(void)
{
	/* systemd sets JOURNAL_STREAM when stderr goes to the journal */
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void log_set_max_level(int level)
{
	log_max = level;
}

void log_msg(int level, const char *fmt, ...)
{
	char msg[2048], shown[2048];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* a message may carry what a server, a bundle or a file said: no
	 * escape codes into a terminal, no forged lines into the journal */
	util_printable(msg, shown, sizeof(shown));
	if (log_journal)
		sd_journal_print(level, "%s", shown);
	else
		fprintf(stderr, "flashd[%s]: %s\n", log_prefix[level & 7], shown);
}
