/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lay a rebuilt squashfs out against the previous one (bundle create
 * --base, docs/bundle-format.md): every file whose content did not change
 * keeps the offset of its compressed data in the old image, changed and new
 * data fill the holes of removed or changed files or go to the end, the
 * metadata tables follow the data. Host side only, through libsquashfs; a
 * build without it has squashfs_relayout_none.c (-EOPNOTSUPP). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct squashfs_relayout_stats {
	uint64_t files_kept;     /* unchanged content: data left where it was */
	uint64_t files_new;      /* changed or new content: placed anew */
	uint64_t bytes_kept;     /* file data and fragment blocks kept in place */
	uint64_t bytes_new;      /* data written into holes or at the end */
	uint64_t bytes_dead;     /* old bytes no inode points at (holes left) */
	uint64_t image_size;     /* the laid-out image (padded to 4 KiB) */
	uint64_t plain_size;     /* the plain image, as given */
	bool compacted;          /* over the bound: out is the plain image */
};

/* Write to out_path the image at new_path laid out against base_path.
 * When the laid-out image would be more than max_growth_pct percent
 * larger than the plain one, out_path gets the plain image instead
 * (compaction: ret->compacted). -EMEDIUMTYPE: the images' compressor,
 * its options or block size differ (the caller may fall back to the
 * plain image); other -errno on bad images or I/O. */
int squashfs_relayout(const char *base_path, const char *new_path, const char *out_path,
		      unsigned max_growth_pct, struct squashfs_relayout_stats *ret,
		      struct error *err);
