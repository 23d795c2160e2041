/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Debian version comparison (include/version.h), after dpkg's
 * lib/dpkg/version.c: the same order, written for NUL-terminated parts. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

/* The weight of one character in a non-digit run: '~' first (before the
 * end of the run), then the end, then letters, then everything else. */
static int order(int c)
{
	if (isdigit(c))
		return 0;
	if (isalpha(c))
		return c;
	if (c == '~')
		return -1;
	if (c)
		return c + 256;
	return 0;
}

/* One part (upstream or revision), [a, a_end) against [b, b_end). */
static int verrevcmp(const char *a, const char *a_end, const char *b, const char *b_end)
{
	while (a < a_end || b < b_end) {
		int first_diff = 0;

		while ((a < a_end && !isdigit((unsigned char)*a)) ||
		       (b < b_end && !isdigit((unsigned char)*b))) {
			int ac = a < a_end ? order((unsigned char)*a) : 0;
			int bc = b < b_end ? order((unsigned char)*b) : 0;

			if (ac != bc)
				return ac - bc;
			a++;
			b++;
		}
		while (a < a_end && *a == '0')
			a++;
		while (b < b_end && *b == '0')
			b++;
		while (a < a_end && isdigit((unsigned char)*a) && b < b_end &&
		       isdigit((unsigned char)*b)) {
			if (!first_diff)
				first_diff = *a - *b;
			a++;
			b++;
		}
		/* the longer number is the larger one */
		if (a < a_end && isdigit((unsigned char)*a))
			return 1;
		if (b < b_end && isdigit((unsigned char)*b))
			return -1;
		if (first_diff)
			return first_diff;
	}
	return 0;
}

struct parts {
	unsigned long epoch;
	const char *up, *up_end, *rev, *rev_end;
};

/* epoch: digits before the first ':' (none: 0); revision: after the last
 * '-' (none: empty, which sorts as dpkg's "0"... as an empty part). */
static void split(const char *v, struct parts *p)
{
	const char *colon = strchr(v, ':'), *dash;
	char *end;

	p->epoch = 0;
	if (colon) {
		p->epoch = strtoul(v, &end, 10);
		if (end == colon && colon > v)
			v = colon + 1;
		else
			p->epoch = 0;
	}
	dash = strrchr(v, '-');
	p->up = v;
	p->up_end = dash ? dash : v + strlen(v);
	p->rev = dash ? dash + 1 : p->up_end;
	p->rev_end = v + strlen(v);
}

int version_compare(const char *a, const char *b)
{
	struct parts pa, pb;
	int r;

	split(a, &pa);
	split(b, &pb);
	if (pa.epoch != pb.epoch)
		return pa.epoch > pb.epoch ? 1 : -1;
	r = verrevcmp(pa.up, pa.up_end, pb.up, pb.up_end);
	if (r)
		return r;
	return verrevcmp(pa.rev, pa.rev_end, pb.rev, pb.rev_end);
}

bool version_is_debian(const char *v)
{
	struct parts p;

	split(v, &p);
	return p.up < p.up_end && isdigit((unsigned char)*p.up);
}
