/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd, the daemon: its command line (main/main.c hands over when the
 * program is neither flashctl nor "flashd boot"). */
#pragma once

/* Parses the options, loads flashd.conf and runs the manager until it
 * stops. Returns the exit status (0 ok, 1 failed, 2 usage). */
int daemon_main(int argc, char **argv);
