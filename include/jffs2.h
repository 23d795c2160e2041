/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
#include "flashio.h"

#define JFFS2_MAGIC_BITMASK 0x1985
#define JFFS2_NODETYPE_CLEANMARKER 0x2003
#define JFFS2_CLEANMARKER_NOR_SIZE 12
#define JFFS2_CLEANMARKER_NAND_SIZE 8

/* JFFS2's CRC: crc32_le(seed, ...) of the Linux kernel. */
uint32_t jffs2_crc32(uint32_t seed, const void *buf, size_t len);
void jffs2_cleanmarker_nor(uint8_t out[JFFS2_CLEANMARKER_NOR_SIZE]);
void jffs2_cleanmarker_nand(uint8_t out[JFFS2_CLEANMARKER_NAND_SIZE]);

/* One block, a flashio_erase_fn: erased and marked clean (counted in
 * erases), or skipped; FLASHIO_MARK_BAD: -EIO from the erase or the marker
 * write marks the block bad. */
int jffs2_erase_block(struct flash *f, uint64_t off, unsigned flags, struct flashio_stats *st);
/* Every block of f (flashio_erase_each). ret may be NULL. */
int jffs2_erase_partition(struct flash *f, unsigned flags, struct flashio_stats *ret);
/* 1 when the block at off carries a valid clean marker, 0 when not. */
int jffs2_block_is_clean(struct flash *f, uint64_t off);
