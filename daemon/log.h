/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Daemon logging: the journal when started by systemd (JOURNAL_STREAM is
 * set), stderr otherwise. Only the daemon's top level and its method
 * handlers log; library modules return errors instead. */
#pragma once
#include <syslog.h>
#include "cleanup.h"

/* The events an operator looks up in the journal (journalctl
 * MESSAGE_ID=...): name, MESSAGE_ID (made once with 'systemd-id128 new';
 * systemd/flashd.catalog explains each, test-log checks that none lacks
 * an entry) and priority. */
#define LOG_EVENT_LIST(X)                                                                      \
	X(LOG_EVENT_INSTALL_STARTED, "install-started", "fb126c091c1a46fa895998394b0d83c8",   \
	  LOG_INFO)                                                                            \
	X(LOG_EVENT_INSTALL_FINISHED, "install-finished", "f4232f33ab244a8f9f2cbd54b3ad5232", \
	  LOG_INFO)                                                                            \
	X(LOG_EVENT_INSTALL_FAILED, "install-failed", "908266becc304b509c545b3f07a7b009",     \
	  LOG_ERR)                                                                             \
	X(LOG_EVENT_SLOT_GOOD, "slot-good", "ec962981d26644dd825fd0f843be1db7", LOG_NOTICE)    \
	X(LOG_EVENT_SLOT_BAD, "slot-bad", "af1c71e1f4c04294b52dbae87c77ab0c", LOG_NOTICE)      \
	X(LOG_EVENT_SLOT_ACTIVATED, "slot-activated", "c756873954984d5a8551a41773abdcad",      \
	  LOG_NOTICE)                                                                          \
	X(LOG_EVENT_ROLLBACK, "rollback", "70268cd8c91b4066ab5d3f16e7f6d221", LOG_NOTICE)      \
	X(LOG_EVENT_BOOT_FALLBACK, "boot-fallback", "f46c2d0755724f05a43b2905d47d3687",        \
	  LOG_WARNING)                                                                         \
	X(LOG_EVENT_HEALTH_PASSED, "health-passed", "c5216f9e9cd449188b9b790b43fa9516",        \
	  LOG_NOTICE)                                                                          \
	X(LOG_EVENT_HEALTH_FAILED, "health-failed", "a800bcf8b88244e69742e5b9dde21b78",        \
	  LOG_ERR)                                                                             \
	X(LOG_EVENT_ENV_DEGRADED, "env-degraded", "66b9f51f33214133959ee7bf6ebbcd9a",          \
	  LOG_WARNING)

enum log_event { LOG_EVENT_LIST(STRING_TABLE_ENUM) _LOG_EVENT_MAX };

/* A journal field of an event (SLOT=A); a NULL value leaves it out. The
 * value is made printable as the message is. */
struct log_field {
	const char *name;
	const char *value;
};

void log_open(void);
void log_set_max_level(int level);
void log_msg(int level, const char *fmt, ...) _printf_(2, 3);
/* The event's text line (the same on stderr), with its MESSAGE_ID and
 * fields, ended by { NULL }, in the journal. */
void log_event(enum log_event ev, const struct log_field *fields, const char *fmt, ...)
	_printf_(3, 4);
const char *log_event_to_string(enum log_event ev);
const char *log_event_id(enum log_event ev);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
