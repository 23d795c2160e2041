/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* squashfs_relayout() of a build without libsquashfs (configure
 * --without-libsquashfs, or a device build). */
#include <errno.h>

#include "squashfs_relayout.h"

int squashfs_relayout(const char *base_path, const char *new_path, const char *out_path,
		      unsigned max_growth_pct, struct squashfs_relayout_stats *ret,
		      struct error *err)
{
	return error_set(err, -EOPNOTSUPP, "flashctl was built without libsquashfs "
			 "(configure --with-libsquashfs): --base is not available");
}
