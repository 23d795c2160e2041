/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI images as ubinize (mtd-utils) makes them: the PEBs a programmer
 * writes onto an erased MTD partition so that the kernel attaches it with
 * the volumes already made and filled. PEB 0 and 1 hold the volume table
 * (the layout volume), then each volume's LEBs in the order given, every
 * PEB with its EC header, VID header (static volumes: data_size, data_crc,
 * used_ebs per LEB) and the data padded with 0xff -- byte for byte what
 * `ubinize -Q SEQ -e EC` writes for the same volume table and images
 * (tests/unit/test-ubinize checks it against ubinize).
 *
 * The on-flash structures are the kernel's (drivers/mtd/ubi/ubi-media.h;
 * no distribution ships that header, so they are spelled out here),
 * big-endian, each CRC as UBI computes it: crc32 (reflected, 0xedb88320)
 * started at 0xffffffff with no final xor.
 *
 * Images stream in: ubinize_write() takes a volume's bytes in pieces of
 * any size and hands each PEB to the sink as soon as its LEB is full, at
 * its place in the image (pnum); several volumes may be filled at once
 * (the same bundle image into slot A's and B's volumes). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define UBINIZE_EC_HDR_SIZE 64
#define UBINIZE_VID_HDR_SIZE 64
#define UBINIZE_VTBL_RECORD_SIZE 172
#define UBINIZE_MAX_VOLUMES 128
#define UBINIZE_VOL_NAME_MAX 127
#define UBINIZE_LAYOUT_PEBS 2

struct ubinize_geometry {
	uint32_t peb_size;        /* erase block */
	uint32_t min_io_size;     /* NAND page, 1 for NOR */
	uint32_t subpage_size;    /* 0: min_io_size (ubinize's default) */
	uint32_t vid_hdr_offset;  /* 0: the EC header rounded up to the sub-page */
	uint64_t ec;              /* erase counter in every EC header (ubinize -e) */
	uint32_t image_seq;       /* ubinize -Q */
};

struct ubinize_volume {
	uint32_t id;              /* vol_id */
	const char *name;
	bool is_static;
	bool autoresize;          /* UBI_VTBL_AUTORESIZE_FLG: grows to the free space at attach */
	uint64_t size;            /* reserved bytes (rounded up to LEBs) */
	uint64_t image_size;      /* bytes written into it, 0: left empty */
};

/* A finished PEB of the image: pnum counts from the image's first PEB. */
typedef int (*ubinize_sink_t)(void *userdata, uint64_t pnum, const void *peb, size_t len,
			      struct error *err);

struct ubinize;

/* Checks the geometry and the volume table (ids, names, sizes, at most one
 * autoresize) with a message naming the volume. The table is copied
 * (names too). */
int ubinize_new(const struct ubinize_geometry *g, const struct ubinize_volume *vols, size_t n,
		ubinize_sink_t sink, void *userdata, struct ubinize **ret, struct error *err);
void ubinize_free(struct ubinize *u);
static inline void ubinize_freep(struct ubinize **u) { ubinize_free(*u); }
#define _cleanup_ubinize_ __attribute__((cleanup(ubinize_freep)))

/* The next bytes of volume idx's image (idx into the table given). */
int ubinize_write(struct ubinize *u, size_t idx, const void *buf, size_t len, struct error *err);
/* Every image complete: its last LEB, then the two PEBs of the layout volume. */
int ubinize_finish(struct ubinize *u, struct error *err);

uint32_t ubinize_leb_size(const struct ubinize *u);
uint32_t ubinize_vid_hdr_offset(const struct ubinize *u);
uint32_t ubinize_data_offset(const struct ubinize *u);
/* PEBs of the whole image: the layout volume's and every image's LEBs. */
uint64_t ubinize_pebs(const struct ubinize *u);
/* The first PEB of volume idx's LEBs and how many it has. */
uint64_t ubinize_first_peb(const struct ubinize *u, size_t idx);
uint64_t ubinize_used_ebs(const struct ubinize *u, size_t idx);

/* Read-back of one PEB of volume idx: magic and CRC of both headers, the
 * volume id, LEB number lnum, image_seq and, for static volumes, data_size
 * and data_crc; *ret_data and *ret_len: the LEB's data inside peb. */
int ubinize_check_peb(const struct ubinize *u, size_t idx, uint64_t lnum, const uint8_t *peb,
		      const uint8_t **ret_data, size_t *ret_len, struct error *err);

/* crc32 as UBI computes it: ubinize_crc32(0xffffffff, buf, len), no final xor. */
uint32_t ubinize_crc32(uint32_t crc, const void *buf, size_t len);
