/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashctl, the command line tool. flashd and flashctl are one program
 * (main/main.c picks by the name it was called by, as busybox does):
 * the library is linked once. */
#pragma once

int flashctl_main(int argc, char **argv);
