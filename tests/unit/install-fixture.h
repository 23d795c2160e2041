/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fixture of the update engine's tests (tests/unit/test-install*.c,
 * install-fixture.c): keys and the booted-slot cmdline, images and bundles,
 * a simulated board and its env, what U-Boot would boot, running the
 * engine, and the adaptive board the adaptive and chunk tests share. */
#pragma once
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <inttypes.h>
#include <sys/mman.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "bundle-test-helpers.h"
#include "board.h"
#include "bundle.h"
#include "bundle_create.h"
#include "cleanup.h"
#include "env.h"
#include "flashio.h"
#include "install.h"
#include "jffs2.h"
#include "keyring.h"
#include "layout.h"
#include "nsim.h"
#include "slot.h"
#include "source.h"
#include "testlib.h"
#include "util.h"

struct image {
	char *path;
	size_t len;
	uint8_t sha[32];
};

struct bspec {
	const char *version;
	const struct image *rootfs, *kernel;
	const char *member;        /* name of the second image; NULL = "kernel" */
	void *key;                 /* NULL: unsigned */
	const char *compatible;    /* NULL: the board's */
	bool gzip;
};

struct rig {
	struct layout *l;
	const struct layout_slot_group *g;
	char *sim, *target;
	uint32_t eb;
	char *base_env;           /* canonical env dump after provisioning */
	/* flash ops of one env store (measured on the provisioning store):
	 * env stores are simulator ops too, see sim_ops() */
	uint64_t env_store_erases, env_store_programs;
};

struct ropts {
	const char *slot;
	const char *cmdline;
	bool no_activate;
	volatile int *cancel;
	void (*progress)(void *userdata, const struct install_progress *p);
	void *userdata;
	const char *state_dir;     /* block records */
	bool source;               /* install_run_source (adaptive when it can) */
	enum install_downgrade_policy downgrade;
	bool allow_downgrade;
	const struct install_slot *decided; /* the target decided before, or NULL */
};

struct rres {
	struct install_stats stats;
	size_t mem_peak;
	enum install_phase phase;
	char slot[SLOT_NAME_MAX];
	struct error err;
};

struct progress_log {
	unsigned calls, last_percent;
	enum install_phase last_phase;
	bool regress;
	char slot[SLOT_NAME_MAX];
};

struct adaptive {
	struct rig r;
	char *state;
	struct image v1;
	char *b1;
	uint64_t n, prefix;       /* blocks of the image, bytes before its payload */
};

extern void *key_trusted, *key_untrusted;
extern struct keyring *ring;
extern char *cmdline_a;
extern char *cmdline_factory;
extern char *lock;

void sha256(const void *p, size_t n, uint8_t out[32]);
int group_setup(void **state);
int group_teardown(void **state);
void rnd_fill(uint8_t *buf, size_t len, uint64_t seed);
void image_hash(struct image *im);
void image_free(struct image *im);
struct image make_raw(const char *name, size_t len, uint64_t seed);
struct image make_sqfs_data(const char *name, const uint8_t *data, size_t len);
struct image make_sqfs(const char *name, size_t len, uint64_t seed);
char *make_bundle_ex(const char *name, const char *compatible, const struct bspec *s,
		     bool no_index);
char *make_bundle(const char *name, const char *compatible, const struct bspec *s);
char *craft_bundle(const char *name, const char *manifest, unsigned major, unsigned minor,
		   void *key, const void *payload, size_t plen);
char *mutate_bundle(const char *src, const char *name, size_t off, uint8_t xor,
		    size_t cut_len);
struct bundle_manifest bundle_manifest_of(const char *path);
char *trusted_bundle(struct rig *r, const char *name, const char *version,
		     const struct image *rootfs, const struct image *kernel, bool gzip);
void rig_new(struct rig *r, const char *layout, const char *simname);
void rig_free(struct rig *r);
const struct layout_partition *member_part(struct rig *r, int slot, const char *member);
uint64_t part_block(struct rig *r, const struct layout_partition *p, uint64_t i);
struct nsim *sim_open(struct rig *r);
struct nsim_info sim_info(struct rig *r);
uint64_t env_block_erases(struct rig *r);
struct nsim_counters sim_ops(struct rig *r);
int cmp_str(const void *a, const void *b);
char *env_canon(const char *dump, va_list ap);
char *env_with(const char *dump, ...);
char *env_dump(struct rig *r);
void expect_env(struct rig *r, const char *want, const char *ctx);
char *env_b_record(struct rig *r, const char *rec);
char *env_b_marked_bad(struct rig *r);
void env_copies_io(struct rig *r, uint8_t *buf, bool write);
uint8_t *env_raw(struct rig *r, size_t *ret_len);
void env_raw_restore(struct rig *r, uint8_t *raw);
int boot_pick(struct rig *r);
void boot_never_b(struct rig *r, const char *ctx);
void expect_b_marked_bad(struct rig *r, const char *ctx);
void member_sha(struct rig *r, int slot, const char *member, uint64_t len, uint8_t out[32]);
bool slot_holds(struct rig *r, int slot, const struct image *rootfs,
		const struct image *kernel);
int run_install(struct rig *r, const char *bundle, const struct ropts *o, struct rres *res);
void __attribute__((sentinel)) install_refused(struct rig *r, const char *bundle,
					       struct rres *res, int code, ...);
void install_ok(struct rig *r, const char *bundle, const struct ropts *o, struct rres *res);
void on_progress(void *userdata, const struct install_progress *p);
void expect_installed_b(struct rig *r, const char *version, const struct image *rootfs,
			const struct image *kernel);
void sim_powercut(struct rig *r, int64_t n, bool tear);
bool sim_power_on(struct rig *r);
unsigned blocks_differing(const struct image *a, const struct image *b, uint32_t eb);
struct image image_variant(struct rig *r, const struct image *base, const char *name,
			   const unsigned *blocks, size_t n);
void set_env_var(struct rig *r, const char *name, const char *value);
void xor_slot_byte(struct rig *r, int slot, uint64_t off, uint8_t mask);
void xor_b_byte(struct rig *r, unsigned k, uint32_t in_block, uint8_t mask);
void corrupt_b_block(struct rig *r, unsigned k);
char *adaptive_bundle(struct adaptive *a, const char *name, const char *version,
		      const struct image *img);
void adaptive_new(struct adaptive *a, const char *name);
void adaptive_free(struct adaptive *a);
void adaptive_ok(struct adaptive *a, const char *bundle, struct rres *res);
char *adaptive_v2(struct adaptive *a, const char *name, const unsigned *changed, size_t n,
		  struct image *ret_v2);
