/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The simulator's injected faults: the power-cut clock, a block's program and
 * erase failures, bitflips on read (per block or a seeded global rate), and
 * the hooks that set them (not flash operations: never refused by a cut). */
#include <errno.h>

#include "nsim-internal.h"

#define NSIM_FAULTS (NSIM_FAULT_PROGRAM | NSIM_FAULT_ERASE | NSIM_FAULT_STUCK_BIT)

/* The power-cut clock: 0 = apply the op, 1 = the power fails now. */
int nsim_fault_powercut_tick(struct nsim *s)
{
	if (s->h.powercut_left < 0)
		return 0;
	if (s->h.powercut_left == 0) {
		s->h.flags |= HDR_CUT;
		return 1;
	}
	s->h.powercut_left--;
	return 0;
}

/* Before a program or erase of a block: its injected fault, then the
 * power-cut clock. 0: apply the op whole; 1: the power fails during it
 * (HDR_TEAR: apply half, then nsim_fault_mutation_end() answers -ESHUTDOWN);
 * -ESHUTDOWN: it fails before the op. */
int nsim_fault_mutation_begin(struct nsim *s, const struct nsim_meta *m, unsigned fault)
{
	if (m->faults & fault)
		return -EIO;
	if (!nsim_fault_powercut_tick(s))
		return 0;
	return s->h.flags & HDR_TEAR ? 1 : -ESHUTDOWN;
}

/* After it: a torn op fails, a whole one counts (counter: CNT_*). */
int nsim_fault_mutation_end(struct nsim *s, int cut, unsigned counter)
{
	if (cut)
		return -ESHUTDOWN;
	s->h.cnt[counter]++;
	s->h.cnt[CNT_MUTATIONS]++;
	return 0;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Reproducible: depends only on the seed, the page and the read sequence
 * number (stored in the header). */
enum nsim_flip nsim_fault_page_flip(struct nsim *s, const struct nsim_meta *m, uint64_t page)
{
	uint64_t x;
	uint32_t v;

	s->h.read_seq++;
	if (m->flip != NSIM_FLIP_NONE)
		return m->flip;
	if (!s->h.flip_ppm && !s->h.fail_ppm)
		return NSIM_FLIP_NONE;
	x = splitmix64(s->h.seed ^ splitmix64(page ^ splitmix64(s->h.read_seq)));
	v = x % 1000000u;
	if (v < s->h.fail_ppm)
		return NSIM_FLIP_UNCORRECTABLE;
	if (v < (uint64_t)s->h.fail_ppm + s->h.flip_ppm)
		return NSIM_FLIP_CORRECTED;
	return NSIM_FLIP_NONE;
}

/* The free OOB bytes have no ECC (as on real chips and the kernel's
 * nandsim, whose flips land anywhere in what is read): a read the global
 * rate flips returns one bit wrong and no error. The next read may not. */
void nsim_fault_oob_flip(struct nsim *s, const struct nsim_meta *m, uint64_t page,
		     uint8_t *buf, size_t len)
{
	uint64_t bit;

	if (m->flip != NSIM_FLIP_NONE || nsim_fault_page_flip(s, m, page) == NSIM_FLIP_NONE)
		return;
	bit = splitmix64(s->h.seed ^ s->h.read_seq) % (len * 8);
	buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

/* Change one block's metadata outside of the flash-op rules. */
static int meta_update(struct nsim *s, uint64_t block, int (*fn)(struct nsim *s, uint64_t b,
								    struct nsim_meta *m, uintptr_t v),
		       uintptr_t v)
{
	struct nsim_meta m;
	int r = nsim_op_begin_block_setting(s, block);

	if (r < 0)
		return r;
	r = nsim_op_meta_load(s, block, &m);
	if (r >= 0)
		r = fn(s, block, &m, v);
	if (r >= 0)
		r = nsim_op_meta_store(s, block, &m);
	return nsim_op_end(s, r);
}

static int set_faults_fn(struct nsim *s, uint64_t b, struct nsim_meta *m, uintptr_t v)
{
	m->faults = v & NSIM_FAULTS;
	return 0;
}

static int set_flip_fn(struct nsim *s, uint64_t b, struct nsim_meta *m, uintptr_t v)
{
	if (s->h.type != NSIM_NAND)
		return -EOPNOTSUPP; /* NOR has no ECC */
	m->flip = v;
	return 0;
}

int nsim_set_block_faults(struct nsim *s, uint64_t block, unsigned faults)
{
	if (faults & ~(unsigned)NSIM_FAULTS)
		return -EINVAL;
	return meta_update(s, block, set_faults_fn, faults);
}

int nsim_set_block_flip(struct nsim *s, uint64_t block, enum nsim_flip flip)
{
	if ((unsigned)flip >= _NSIM_FLIP_MAX)
		return -EINVAL;
	return meta_update(s, block, set_flip_fn, flip);
}

int nsim_set_flip_rate(struct nsim *s, uint32_t flip_ppm, uint32_t fail_ppm, uint64_t seed)
{
	int r;

	if (!s->writable)
		return -EROFS;
	if ((uint64_t)flip_ppm + fail_ppm > 1000000u)
		return -EINVAL;
	if (s->h.type != NSIM_NAND && (flip_ppm || fail_ppm))
		return -EOPNOTSUPP;
	r = nsim_op_begin(s, false);
	if (r < 0)
		return r;
	s->h.flip_ppm = flip_ppm;
	s->h.fail_ppm = fail_ppm;
	s->h.seed = seed;
	s->h.read_seq = 0;
	return nsim_op_end(s, 0);
}

int nsim_set_powercut(struct nsim *s, int64_t ops, bool tear)
{
	int r;

	r = nsim_op_begin_setting(s);
	if (r < 0)
		return r;
	s->h.powercut_left = ops < 0 ? -1 : ops;
	if (tear)
		s->h.flags |= HDR_TEAR;
	else
		s->h.flags &= ~HDR_TEAR;
	return nsim_op_end(s, 0);
}

int nsim_power_on(struct nsim *s)
{
	int r;

	r = nsim_op_begin_setting(s);
	if (r < 0)
		return r;
	s->h.flags &= ~(uint32_t)HDR_CUT;
	s->h.powercut_left = -1;
	return nsim_op_end(s, 0);
}
