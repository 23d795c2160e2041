/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's file: header (NSIM_HEADER_SIZE), the data area, the OOB
 * area (NAND), per-block metadata, one state byte per page (NAND). All
 * little-endian; nsim_op.c reads and writes it under an flock. */
#pragma once
#include <stdint.h>

#include "nsim.h"

#define NSIM_MAGIC "FLSHSIM\n"
#define NSIM_VERSION 1u

/* header flags */
enum {
	HDR_TEAR = 1u << 0,
	HDR_CUT = 1u << 1,
};

/* block meta flags */
enum {
	BLK_BAD = 1u << 0,
	BLK_FACTORY_BAD = 1u << 1,
};

/* page state bits (NAND) */
enum {
	PAGE_DATA = 1u << 0,
	PAGE_OOB = 1u << 1,
};

enum {
	CNT_ERASES,
	CNT_PROGRAMS,
	CNT_OOB_PROGRAMS,
	CNT_PAGE_READS,
	CNT_CORRECTED,
	CNT_FAILED,
	CNT_MUTATIONS,
	_CNT_MAX,
};

/* On-disk header, little-endian, naturally aligned (no padding). */
struct nsim_hdr {
	char magic[8];
	uint32_t version;
	uint32_t type;
	uint64_t size;
	uint32_t erasesize;
	uint32_t writesize;
	uint32_t oobsize;
	uint32_t oobfree_off;
	uint32_t oobfree_len;
	uint32_t flags;
	uint64_t oob_offset;
	uint64_t meta_offset;
	uint64_t pages_offset;
	int64_t powercut_left;
	uint32_t flip_ppm;
	uint32_t fail_ppm;
	uint64_t seed;
	uint64_t read_seq;
	uint64_t cnt[_CNT_MAX];
};
_Static_assert(sizeof(struct nsim_hdr) == 104 + 8 * _CNT_MAX, "nsim header has padding");
_Static_assert(sizeof(struct nsim_hdr) <= NSIM_HEADER_SIZE, "nsim header too big");

/* On-disk per-block metadata, 16 bytes. */
struct nsim_meta {
	uint8_t flags;
	uint8_t faults;
	uint8_t flip;
	uint8_t reserved0;
	uint32_t erase_count;
	uint32_t next_page;
	uint32_t reserved1;
};
_Static_assert(sizeof(struct nsim_meta) == 16, "nsim meta size");

/* le <-> host (its own inverse). */
void nsim_format_hdr_swap(struct nsim_hdr *h);
void nsim_format_meta_swap(struct nsim_meta *m);
/* -EINVAL for a geometry the simulator cannot make. */
int nsim_format_geometry_check(const struct nsim_geometry *g);
/* A fresh header for g (areas laid out, no power cut armed). */
void nsim_format_hdr_init(struct nsim_hdr *h, const struct nsim_geometry *g);
/* Bytes the file needs for header h. */
uint64_t nsim_format_file_size(const struct nsim_hdr *h);
int nsim_format_hdr_write(int fd, const struct nsim_hdr *h);
/* Write len bytes of 0xff at off (erased data and OOB). */
int nsim_format_fill_ff(int fd, uint64_t off, uint64_t len);
