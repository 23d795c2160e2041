/* Preparing a JFFS2 partition the way `flash_erase -j` does: erase every
 * good block and write a clean marker, so that the kernel mounts the empty
 * partition without erasing it again (a block without a cleanmarker is
 * scheduled for erase at mount).
 *
 * Clean marker node (struct jffs2_unknown_node, host endianness as JFFS2
 * uses by default): magic 0x1985, nodetype 0x2003 (CLEANMARKER),
 *   NOR:  12 bytes in-band at offset 0 of the block, totlen 12,
 *         hdr_crc = crc32(0, first 8 bytes) (kernel crc32_le: seed 0,
 *         no final inversion, unlike zlib's crc32());
 *   NAND: the first 8 bytes, totlen 8, in the free OOB bytes (AUTO layout)
 *         of the first page of the block. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "flash.h"

#define JFFS2_MAGIC_BITMASK 0x1985
#define JFFS2_NODETYPE_CLEANMARKER 0x2003
#define JFFS2_CLEANMARKER_NOR_SIZE 12
#define JFFS2_CLEANMARKER_NAND_SIZE 8

enum {
	/* -EIO from an erase or the marker write: mark the block bad */
	JFFS2_ERASE_MARK_BAD = 1u << 0,
};

struct jffs2_erase_stats {
	uint64_t erased;       /* blocks erased and marked clean */
	uint64_t bad;          /* bad blocks skipped */
	uint64_t marked_bad;   /* blocks that failed now and were marked bad */
};

/* JFFS2's CRC: crc32_le(seed, ...) of the Linux kernel. */
uint32_t jffs2_crc32(uint32_t seed, const void *buf, size_t len);
void jffs2_cleanmarker_nor(uint8_t out[JFFS2_CLEANMARKER_NOR_SIZE]);
void jffs2_cleanmarker_nand(uint8_t out[JFFS2_CLEANMARKER_NAND_SIZE]);

/* One block (incremental form for the daemon): 0 erased and marked,
 * 1 skipped (bad, or marked bad now), -errno. */
int jffs2_erase_block(struct flash *f, uint64_t off, unsigned flags, struct jffs2_erase_stats *st);
/* Every block of f. ret may be NULL. */
int jffs2_erase_partition(struct flash *f, unsigned flags, struct jffs2_erase_stats *ret);
/* 1 when the block at off carries a valid clean marker, 0 when not. */
int jffs2_block_is_clean(struct flash *f, uint64_t off);
