/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command line that describes a simulator to create, shared by
 * 'flashctl flash sim-create' and 'nsimctl create' so that both take the
 * same options with the same meaning:
 *   FILE --type nand|nor --size S --erase-block S [--page S] [--oob S]
 *        [--bad-blocks 3,17] [--force]
 * Sizes as util_parse_size() reads them (4096, 0x1000, 128KiB). */
#pragma once
#include <stdint.h>

#include "error.h"
#include "nsim.h"

struct nsim_spec {
	const char *path;
	struct nsim_geometry geo;    /* writesize/oobsize 0 = the defaults */
	const char *bad_blocks;      /* "3,17" or NULL */
	unsigned flags;              /* NSIM_CREATE_FORCE */
};

/* Parse argv (getopt_long from optind; argv[0] is the command). -EINVAL
 * with err naming the option on a usage error. Does not print. */
int nsim_spec_parse(int argc, char **argv, struct nsim_spec *ret, struct error *err);
/* nsim_create_spec() of a parsed spec (fills in the default page/OOB). */
int nsim_spec_create(struct nsim_spec *s, struct error *err);
