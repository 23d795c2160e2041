/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Daemon logging: the journal when started by systemd (JOURNAL_STREAM is
 * set), stderr otherwise. Only the daemon's top level and its method
 * handlers log; library modules return errors instead. */
#pragma once
#include <syslog.h>
#include "cleanup.h"

void log_open(void);
void log_set_max_level(int level);
void log_msg(int level, const char *fmt, ...) _printf_(2, 3);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
