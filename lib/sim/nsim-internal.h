/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the simulator's files share (the API is include/nsim.h): the open
 * chip, the op framing and file access of nsim_op.c, the fault clock and
 * bitflips of nsim_fault.c. Every data op runs between nsim_op_begin() and
 * nsim_op_end() (or nsim_op_end_ro()), under the file's lock, with s->h
 * fresh from the file. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nsim.h"
#include "nsim_format.h"

#define NSIM_CHUNK (64u * 1024u) /* bounded scratch for NOR programs and erases */

struct nsim {
	int fd;
	bool writable;
	struct nsim_hdr h; /* host byte order, valid inside an op */
	uint64_t blocks;
	uint32_t pages_per_block; /* NAND; 0 on NOR */
	uint8_t *scratch;         /* NSIM_CHUNK bytes */
	uint8_t *ff;              /* NSIM_CHUNK bytes of 0xFF */
};

/* nsim_op.c: the op framing */
int nsim_op_begin(struct nsim *s, bool mutating);
int nsim_op_end(struct nsim *s, int r);
/* End of an op that did not change the header. */
int nsim_op_end_ro(struct nsim *s, int r);
/* nsim_op_begin for a data op on [off, off + len): -EINVAL (op ended)
 * outside the chip. */
int nsim_op_begin_range(struct nsim *s, bool mutating, uint64_t off, uint64_t len);
/* nsim_op_begin for a fault setting: allowed after a power cut, not read-only. */
int nsim_op_begin_setting(struct nsim *s);
/* nsim_op_begin_setting for a block's setting; -EINVAL (op ended) past the last block. */
int nsim_op_begin_block_setting(struct nsim *s, uint64_t block);
/* A framed mutating op on the block at off (aligned: its start). */
int nsim_op_block(struct nsim *s, uint64_t off, bool aligned,
		  int (*fn)(struct nsim *s, uint64_t b, struct nsim_meta *m));

/* nsim_op.c: the file, inside an op */
/* pread of exactly len bytes of the file: 0 or -errno (-EIO when short). */
int nsim_op_pread_exact(struct nsim *s, void *buf, size_t len, uint64_t fileoff);
int nsim_op_meta_load(struct nsim *s, uint64_t b, struct nsim_meta *m);
/* The metadata of blocks b .. b + n - 1, in one read. */
int nsim_op_meta_load_n(struct nsim *s, uint64_t b, size_t n, struct nsim_meta *m);
int nsim_op_meta_store(struct nsim *s, uint64_t b, const struct nsim_meta *m);
/* A block's metadata; -EIO for a bad block: reads and programs refuse it. */
int nsim_op_meta_load_good(struct nsim *s, uint64_t b, struct nsim_meta *m);
/* The metadata of the block holding off: -EINVAL past the end of the chip
 * (or, aligned, not at the start of a block). */
int nsim_op_block_at(struct nsim *s, uint64_t off, bool aligned, struct nsim_meta *m);
int nsim_op_page_state(struct nsim *s, uint64_t page, uint8_t *ret);
int nsim_op_page_state_set(struct nsim *s, uint64_t page, uint8_t v);

/* nsim_fault.c: the power-cut clock and injected faults, inside an op */
/* 0 = apply the op, 1 = the power fails now. */
int nsim_fault_powercut_tick(struct nsim *s);
/* Before a program or erase of a block: 0 apply whole, 1 the power fails
 * during it (apply half when tearing), -EIO (its fault) or -ESHUTDOWN. */
int nsim_fault_mutation_begin(struct nsim *s, const struct nsim_meta *m, unsigned fault);
/* After it: a torn op fails, a whole one counts (counter: CNT_*). */
int nsim_fault_mutation_end(struct nsim *s, int cut, unsigned counter);
/* The flip of this read of a page (moves the read sequence on). */
enum nsim_flip nsim_fault_page_flip(struct nsim *s, const struct nsim_meta *m, uint64_t page);
/* The global rate's flip of a read of a page's free OOB bytes (no ECC). */
void nsim_fault_oob_flip(struct nsim *s, const struct nsim_meta *m, uint64_t page,
			 uint8_t *buf, size_t len);
