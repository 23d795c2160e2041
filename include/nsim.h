/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsim: a file-backed NAND/NOR flash chip with real semantics, used as the
 * "sim:" flash backend and by the tests. Everything (contents, OOB, bad
 * blocks, erase counters, injected faults, power-cut state, counters)
 * lives in the file, so a new process opening it is a "reboot".
 * The file format is documented in nandsim/README.md.
 *
 * Semantics (all return 0/positive or -errno):
 *   - program only clears bits; a program that would set a 0 bit to 1
 *     fails with -EINVAL and changes nothing (real NOR would AND silently;
 *     failing catches the bug of writing without erasing).
 *   - NAND: program whole pages, each page once per erase (-EINVAL) and in
 *     increasing order inside a block (-EINVAL); pages may be skipped.
 *     The free OOB bytes of a page (AUTO layout) may be programmed once
 *     per erase, independently of the page data (like JFFS2 cleanmarkers).
 *   - bad blocks refuse read, program and erase with -EIO.
 *   - faults: program/erase failure of a block (-EIO, nothing applied),
 *     or a program that silently leaves one bit erased (a stuck cell);
 *     bitflips on read (per block, or a seeded global rate per page read):
 *     corrected -> data correct + -EUCLEAN, uncorrectable -> data with a
 *     flipped bit + -EBADMSG.
 *   - power cut: after N more mutating ops (page program, NOR program
 *     chunk, OOB program, erase, markbad) the next one fails with
 *     -ESHUTDOWN (optionally half applied: "tearing"), and every later
 *     mutating op fails with -ESHUTDOWN until nsim_power_on(). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "error.h"

#define NSIM_HEADER_SIZE 4096u

/* Stored in the file's header: append only. */
#define NSIM_TYPE_LIST(X) X(NSIM_NOR, "nor") X(NSIM_NAND, "nand")

enum nsim_type {
	NSIM_TYPE_LIST(STRING_TABLE_ENUM)
	_NSIM_TYPE_MAX,
};

/* Per-block injected read behaviour (stored in the file: append only). */
#define NSIM_FLIP_LIST(X)                                   \
	X(NSIM_FLIP_NONE, "none")                           \
	/* -EUCLEAN, data correct */                        \
	X(NSIM_FLIP_CORRECTED, "corrected")                 \
	/* -EBADMSG, data corrupted */                      \
	X(NSIM_FLIP_UNCORRECTABLE, "uncorrectable")

enum nsim_flip {
	NSIM_FLIP_LIST(STRING_TABLE_ENUM)
	_NSIM_FLIP_MAX,
};

/* Per-block injected failures (bit mask). */
enum {
	NSIM_FAULT_PROGRAM = 1u << 0,
	NSIM_FAULT_ERASE = 1u << 1,
	/* A program reports success but one cell of it stays erased: in each
	 * program op the lowest bit that should go to 0 in the first byte that
	 * has one stays 1. No ECC notices on NOR; only a read-back does. */
	NSIM_FAULT_STUCK_BIT = 1u << 2,
};

struct nsim_geometry {
	enum nsim_type type;
	uint64_t size;
	uint32_t erasesize;
	uint32_t writesize; /* NAND page; must be 1 on NOR */
	uint32_t oobsize;   /* NAND OOB per page; must be 0 on NOR */
};

struct nsim_counters {
	uint64_t erases;
	uint64_t programs;    /* page programs (NAND) / program chunks (NOR) */
	uint64_t oob_programs;
	uint64_t page_reads;
	uint64_t corrected;   /* bitflips corrected on read */
	uint64_t failed;      /* uncorrectable page reads */
	uint64_t mutations;   /* mutating ops applied (the power-cut clock) */
};

struct nsim_info {
	struct nsim_geometry geo;
	uint32_t version;
	uint32_t oobfree_off;  /* AUTO OOB layout: free bytes [off, off+len) */
	uint32_t oobfree_len;
	uint64_t blocks;
	uint64_t bad_blocks;
	/* fault settings */
	int64_t powercut_left; /* mutating ops left before the cut, -1 = off */
	bool power_cut;        /* a cut happened; mutating ops refused */
	bool tear;             /* the cutting op is half applied */
	uint32_t flip_ppm;     /* global corrected-bitflip rate per page read */
	uint32_t fail_ppm;     /* global uncorrectable rate per page read */
	uint64_t seed;
	struct nsim_counters cnt;
};

struct nsim_block {
	bool bad;
	bool factory_bad;
	unsigned faults;       /* NSIM_FAULT_* */
	enum nsim_flip flip;
	uint32_t erase_count;
	uint32_t next_page;    /* NAND: lowest page that may still be programmed */
};

struct nsim;

/* nsim_create() flags */
enum {
	NSIM_CREATE_FORCE = 1u << 0, /* overwrite an existing file */
};

/* Create a fresh chip (all 0xFF, no bad blocks) at path. */
int nsim_create(const char *path, const struct nsim_geometry *geo, unsigned flags);
/* The one way the tools make a simulator (nsimctl create, flashctl flash
 * sim-create): a geometry whose writesize/oobsize are 0 takes the
 * defaults (NAND: 2048-byte pages, 1/32 of that OOB; NOR: 1 and 0), and
 * bad lists factory-bad block numbers ("3,17", NULL: none). Nothing is
 * left behind on failure. -EINVAL for a bad geometry or list, -EEXIST
 * without NSIM_CREATE_FORCE, -EMEDIUMTYPE when path is not a file. */
int nsim_create_spec(const char *path, struct nsim_geometry *geo, unsigned flags,
		     const char *bad, struct error *err);
int nsim_open(const char *path, bool writable, struct nsim **ret);
/* How long each op of this process waits for the file's lock: 0 (the
 * default) forever, as a tool or an install worker may; an event loop
 * sets a bound, because anyone who can open the file can hold its lock
 * (a user, on a file created readable by others before simulators were
 * created 0600): an op that would wait longer fails with -EWOULDBLOCK. */
void nsim_set_lock_wait(uint64_t usec);
void nsim_close(struct nsim *s);
static inline void nsim_closep(struct nsim **s) { if (*s) nsim_close(*s); }
#define _cleanup_nsim_ __attribute__((cleanup(nsim_closep)))

/* File offset of the flash contents: they are stored verbatim, so other
 * code (libubootenv) may access them as a plain file. Always 4096. */
uint64_t nsim_data_offset(void);

const char *nsim_type_to_string(enum nsim_type t);
int nsim_type_from_string(const char *s);
const char *nsim_flip_to_string(enum nsim_flip f);
int nsim_flip_from_string(const char *s);

int nsim_get_info(struct nsim *s, struct nsim_info *ret);
int nsim_get_block(struct nsim *s, uint64_t block, struct nsim_block *ret);

int nsim_read(struct nsim *s, uint64_t off, void *buf, size_t len);
int nsim_write(struct nsim *s, uint64_t off, const void *buf, size_t len);
int nsim_erase(struct nsim *s, uint64_t off);
int nsim_block_isbad(struct nsim *s, uint64_t off);
int nsim_block_markbad(struct nsim *s, uint64_t off);
/* Free OOB bytes of the page at off (AUTO layout), len <= oobfree_len. */
int nsim_read_oob(struct nsim *s, uint64_t off, void *buf, size_t len);
int nsim_write_oob(struct nsim *s, uint64_t off, const void *buf, size_t len);
/* The whole raw OOB of a page (bad-block marker, free bytes, ECC area). */
int nsim_read_oob_raw(struct nsim *s, uint64_t off, void *buf, size_t len);

/* Test/fault hooks; these are not flash operations and are never refused
 * by a power cut. */
int nsim_set_factory_bad(struct nsim *s, uint64_t block);
int nsim_set_block_faults(struct nsim *s, uint64_t block, unsigned faults);
int nsim_set_block_flip(struct nsim *s, uint64_t block, enum nsim_flip flip);
int nsim_set_flip_rate(struct nsim *s, uint32_t flip_ppm, uint32_t fail_ppm, uint64_t seed);
/* ops < 0 disables; tear: the cutting op is half applied. */
int nsim_set_powercut(struct nsim *s, int64_t ops, bool tear);
/* Clear a power cut (and disarm the counter): the device boots again. */
int nsim_power_on(struct nsim *s);
