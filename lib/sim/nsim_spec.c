/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The create options of a simulator, one parser for flashctl and nsimctl
 * (nsim_spec.h). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>

#include "cleanup.h"
#include "nsim_spec.h"
#include "util.h"

static int size_arg(const char *opt, const char *v, uint64_t max, uint64_t *ret,
		    struct error *err)
{
	int r = util_parse_size_arg(opt, v, ret, err);

	if (r < 0)
		return r;
	if (*ret > max)
		return error_set(err, -EINVAL, "%s %s is too large", opt, v);
	return 0;
}

int nsim_spec_parse(int argc, char **argv, struct nsim_spec *ret, struct error *err)
{
	static const struct option opts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "erase-block", required_argument, NULL, 'e' },
		{ "page", required_argument, NULL, 'p' },
		{ "oob", required_argument, NULL, 'o' },
		{ "bad-blocks", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct nsim_spec s = { .geo.type = _NSIM_TYPE_MAX };
	uint64_t es = 0, page = 0, oob = 0;
	int c, r = 0;

	while (r >= 0 && (c = getopt_long(argc, argv, "t:s:e:p:o:b:f", opts, NULL)) >= 0) {
		switch (c) {
		case 't':
			r = nsim_type_from_string(optarg);
			if (r < 0)
				return error_set(err, -EINVAL, "--type must be nand or nor");
			s.geo.type = r;
			break;
		case 's': r = size_arg("--size", optarg, UINT64_MAX, &s.geo.size, err); break;
		case 'e': r = size_arg("--erase-block", optarg, UINT32_MAX, &es, err); break;
		case 'p': r = size_arg("--page", optarg, UINT32_MAX, &page, err); break;
		case 'o': r = size_arg("--oob", optarg, UINT32_MAX, &oob, err); break;
		case 'b': s.bad_blocks = optarg; break;
		case 'f': s.flags |= NSIM_CREATE_FORCE; break;
		default: return error_set(err, -EINVAL, "unknown option");
		}
	}
	if (r < 0)
		return r;
	if (argc - optind != 1)
		return error_set(err, -EINVAL, "expected one FILE");
	if (s.geo.type == _NSIM_TYPE_MAX || !s.geo.size || !es)
		return error_set(err, -EINVAL, "--type, --size and --erase-block are required");
	s.path = argv[optind];
	s.geo.erasesize = es;
	s.geo.writesize = page;
	s.geo.oobsize = oob;
	*ret = s;
	return 0;
}

int nsim_spec_create(struct nsim_spec *s, struct error *err)
{
	return nsim_create_spec(s->path, &s->geo, s->flags, s->bad_blocks, err);
}
