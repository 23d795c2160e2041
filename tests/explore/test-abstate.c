/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Exhaustive exploration of the A/B state machine (issue 13).
 *
 * A tiny two-slot NOR board (tests/explore/tiny-ab.json: 4 KiB erase
 * blocks, 8 KiB slots, 4 KiB squashfs images) is provisioned by the real
 * provision code on the userspace simulator, then every sequence of events
 * up to a bounded depth is explored breadth first, with the real slot, env
 * and install code doing the work on the simulator file:
 *
 *   boot (U-Boot's choice: slot_boot_select, one saveenv), install start /
 *   each install step (one erase block of payload, the read-back, the
 *   activation store), cancel, daemon killed and restarted (its worker dies
 *   with it), health check pass / fail, mark-good, mark-bad, activate,
 *   rollback (daemon and offline), offline slot init / activate during an
 *   install, install into either slot, an env copy corrupted, and a power
 *   cut at every flash operation of every event (torn and clean).
 *
 * States are deduplicated by an abstract key: both env copies (valid?,
 * variables), what each slot holds, which of those contents were verified,
 * the booted slot and the install in flight. A state is rebuilt from a
 * snapshot of the simulator file (4 KiB chunks, interned) and, for an
 * install in flight, by replaying its steps from the snapshot taken when it
 * started (deterministic, and nothing else writes its target).
 *
 * The shadow truth (what each slot really holds, and whether an install's
 * read-back verified exactly that) is kept here, not read from the env.
 * Invariants checked in every state:
 *   I1 the board never boots a slot whose content is not verified
 *   I2 if a verified bootable slot exists, 2 * max_tries + 2 boots by the
 *      boot-script logic reach one (checked in every state, so it "stays
 *      able to")
 *   I3 the booted slot is never written (content or erase counters of its
 *      partition)
 *   I4 every event does at most one env store
 *   I5 status's "next boot" is what the next boot does
 *   I6 a slot in a set BOOT_ORDER or recorded verified/good is read from
 *      the simulator and equals its signed image (the one its
 *      FLASHD_<x>_VERSION names): records never stand in for a read
 * A violation prints the shortest event trace leading to it (BFS).
 *
 * The board's slots are sealed ("seal": true): a slot's label covers its
 * image area, its seal block is read by the real seal code (slot_seal.c)
 * at each boot, as the script does; the shadow truth, never the env or
 * the seal, decides what is verified.
 *
 * Events that wait for a fix on another branch carry it in events[].until
 * and are left out (listed at the end; FLASHD_EXPLORE_UNTIL=1 explores
 * them anyway).
 *
 * Environment: FLASHD_EXPLORE_DEPTH (default 8: about 2,500 states, 25 s
 * of CPU on an idle machine), FLASHD_EXPLORE_SAMPLES=FILE writes env
 * states, their seals and the C mirror's boot decision for the real-U-Boot
 * agreement test (tests/uboot/test-uboot-agree.sh). Exit 77 without
 * mksquashfs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "board.h"
#include "cleanup.h"
#include "bundle.h"
#include "bundle_create.h"
#include "env.h"
#include "install.h"
#include "layout.h"
#include "nsim.h"
#include "provision.h"
#include "slot.h"
#include "slot_change.h"
#include "slot_seal.h"
#include "util.h"

#define CHUNK 4096u
#define N_SLOTS 2
#define ENV_SIZE 0x1000u

/* ---- the invariants and the ones known to fail (expected failures) ---- */

enum inv { I1, I2, I3, I4, I5, I6, _I_MAX };

/* Each invariant, and why it is known to fail when it is (docs/boot-contract.md,
 * "Known gap"): a known failure is reported loudly as XFAIL, and an
 * unexpected pass fails the test so the reason gets removed. */
static const struct {
	const char *name;
	const char *xfail;
} invariants[_I_MAX] = {
	[I1] = { "I1 never boots an unverified slot", NULL },
	[I2] = { "I2 a verified bootable slot is reached within 2*max_tries+2 boots", NULL },
	[I3] = { "I3 the booted slot is never written", NULL },
	[I4] = { "I4 every event is at most one env store", NULL },
	[I5] = { "I5 status's next boot is what the next boot does", NULL },
	[I6] = { "I6 a slot in BOOT_ORDER or recorded verified reads as its signed image", NULL },
};

/* ---- content labels: what a slot holds ---- */

enum { LBL_ERASED, LBL_V1, LBL_V2, LBL_DUD, LBL_FIRST_JUNK };
static const char *const lbl_names[] = { "erased", "v1", "v2", "dud" };
#define MAX_LABELS 4096
static uint64_t lbl_hash[MAX_LABELS];
static unsigned n_labels;

static bool lbl_bootable(unsigned l) { return l == LBL_V1 || l == LBL_V2; }

static void lbl_name(unsigned l, char *buf, size_t len)
{
	if (l < LBL_FIRST_JUNK)
		snprintf(buf, len, "%s", lbl_names[l]);
	else
		snprintf(buf, len, "junk#%u", l - LBL_FIRST_JUNK);
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}
#define FNV0 0xcbf29ce484222325ULL

static unsigned lbl_of(const uint8_t *data, size_t len)
{
	uint64_t h = fnv(data, len, FNV0);

	for (unsigned i = 0; i < n_labels; i++)
		if (lbl_hash[i] == h)
			return i;
	if (n_labels == MAX_LABELS) {
		fprintf(stderr, "too many distinct slot contents\n");
		exit(1);
	}
	lbl_hash[n_labels] = h;
	return n_labels++;
}

/* ---- the board ---- */

static struct layout *L;
static const struct layout_slot_group *G;
static char dir[64], *sim, *target, *cmdline[N_SLOTS], *cmdline_unknown;
static const char *cmdline_override; /* install_begin: instead of the booted slot's */
static struct board *board;
static struct nsim *ns;
static size_t fsize, n_chunks;
static uint8_t *fbuf;
/* img_size: the slot's image area, its partition without the seal block
 * (the last erase block, which the real seal code reads and writes) */
static uint64_t slot_off[N_SLOTS], slot_size, img_size, env_off[2];
static unsigned max_tries;

enum { B_V2, B_DUD, B_CORRUPT, _B_MAX };
static const char *const bundle_names[_B_MAX] = { "v2", "dud", "corrupt" };
static uint8_t *bundle_data[_B_MAX];
static size_t bundle_len[_B_MAX], bundle_hdr[_B_MAX];

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "test-abstate: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		die("command failed: %s", cmd);
}

static char *path_in(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		die("oom");
	return p;
}

static void cleanup_dir(void)
{
	if (dir[0] && !getenv("FLASHD_TEST_KEEP"))
		sh("rm -rf '%s'", dir);
}

static void file_read(void)
{
	int fd = open(sim, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || util_pread_full(fd, fbuf, fsize, 0) != (ssize_t)fsize)
		die("reading %s", sim);
	close(fd);
}

/* mksquashfs of a payload from seed: 4 KiB images (one erase block) */
static char *make_image(const char *name, unsigned seed)
{
	char *src = path_in("src"), *out = path_in(name), *f;
	uint8_t buf[2500];
	uint32_t x = seed * 2654435761u + 1;
	FILE *fp;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
	sh("rm -rf '%s' && mkdir -p '%s'", src, src);
	f = path_in("src/payload");
	fp = fopen(f, "we");
	if (!fp || fwrite(buf, 1, sizeof(buf), fp) != sizeof(buf) || fclose(fp))
		die("writing %s", f);
	free(f);
	sh("env -u SOURCE_DATE_EPOCH mksquashfs '%s' '%s' -noappend -quiet -no-progress -comp gzip -all-root "
	   "-mkfs-time 1700000000 -all-time 1700000000 >/dev/null", src, out);
	free(src);
	return out;
}

static void make_bundle(const char *img, const char *version, const char *out)
{
	struct bundle_create_image im = { "rootfs", img, BUNDLE_IMAGE_SQUASHFS,
					  BUNDLE_COMPRESSION_NONE };
	struct bundle_create_params p = {
		.compatible = L->compatible, .version = version, .description = "explore",
		.images = &im, .n_images = 1,
	};
	struct bundle_create_result res;
	struct error err = {};
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || bundle_create(&p, fd, &res, &err) < 0)
		die("bundle %s: %s", out, err.msg);
	close(fd);
}

static uint8_t *slurp(const char *path, size_t *ret_len)
{
	struct stat s;
	uint8_t *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &s) < 0)
		die("%s: %m", path);
	b = malloc(s.st_size);
	if (!b || util_pread_full(fd, b, s.st_size, 0) != s.st_size)
		die("%s: read", path);
	close(fd);
	*ret_len = s.st_size;
	return b;
}

/* The image area of a slot holding image path (rest erased). */
static void register_label(unsigned want, const char *img)
{
	size_t n;
	uint8_t *b = slurp(img, &n), *part = malloc(img_size);

	if (n > img_size)
		die("image %s larger than its slot", img);
	memset(part, 0xff, img_size);
	memcpy(part, b, n);
	if (lbl_of(part, img_size) != want)
		die("label %u registered twice", want);
	free(part);
	free(b);
}

static void setup(void)
{
	const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : TOP_SRCDIR;
	struct error lerr = {};
	struct error perr = {};
	char *lpath, *img[4], *b1;
	uint8_t *erased;

	if (system("mksquashfs -version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "test-abstate: mksquashfs (squashfs-tools) missing: SKIP\n");
		exit(77);
	}
	snprintf(dir, sizeof(dir), "/tmp/flashd-abstate-XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp: %m");
	atexit(cleanup_dir);
	setenv("SOURCE_DATE_EPOCH", "1767225600", 1);
	if (asprintf(&lpath, "%s/tests/explore/tiny-ab.json", top) < 0)
		die("oom");
	if (layout_load(lpath, &L, &lerr) < 0)
		die("layout %s: %s", lpath, lerr.msg);
	free(lpath);
	G = &L->groups[0];
	max_tries = G->max_tries ? G->max_tries : SLOT_DEFAULT_MAX_TRIES;
	for (size_t i = 0; i < N_SLOTS; i++) {
		const struct layout_partition *p = G->slots[i].rootfs.part;
		char name[32];
		FILE *f;

		slot_off[i] = p->offset;
		slot_size = p->size;
		img_size = G->seal ? slot_seal_offset(&G->slots[i]) : slot_size;
		snprintf(name, sizeof(name), "cmdline-%s", G->slots[i].name);
		cmdline[i] = path_in(name);
		f = fopen(cmdline[i], "we");
		if (!f || fprintf(f, "console=ttyS0 flashd.slot=%s ro\n", G->slots[i].name) < 0 ||
		    fclose(f))
			die("writing %s", cmdline[i]);
	}
	cmdline_unknown = path_in("cmdline-unknown");
	{
		FILE *f = fopen(cmdline_unknown, "we");
		if (!f || fprintf(f, "console=ttyS0 root=PARTUUID=0a0b0c0d-02 ro\n") < 0 || fclose(f))
			die("writing %s", cmdline_unknown);
	}
	env_off[0] = layout_find_partition(L, "u-boot-env")->offset;
	env_off[1] = layout_find_partition(L, "u-boot-env-redund")->offset;

	erased = malloc(img_size);
	memset(erased, 0xff, img_size);
	if (lbl_of(erased, img_size) != LBL_ERASED)
		die("label");
	free(erased);
	img[0] = make_image("v1.sqfs", 1);
	img[1] = make_image("v2.sqfs", 2);
	img[2] = make_image("dud.sqfs", 3);
	register_label(LBL_V1, img[0]);
	register_label(LBL_V2, img[1]);
	register_label(LBL_DUD, img[2]);
	b1 = path_in("v1.bundle");
	make_bundle(img[0], "1", b1);
	for (int b = 0; b < _B_MAX; b++) {
		char name[32], *out;

		snprintf(name, sizeof(name), "%s.bundle", bundle_names[b]);
		out = path_in(name);
		make_bundle(img[b == B_DUD ? 2 : 1], b == B_DUD ? "3" : "2", out);
		bundle_data[b] = slurp(out, &bundle_len[b]);
		free(out);
		/* header, manifest, no signatures: the payload follows */
		bundle_hdr[b] = BUNDLE_HEADER_SIZE + (bundle_data[b][12] | bundle_data[b][13] << 8 |
						      bundle_data[b][14] << 16);
	}
	/* corrupt: one payload byte near its end flipped (the hash check fails
	 * after the whole image was written) */
	bundle_data[B_CORRUPT][bundle_len[B_CORRUPT] - 100] ^= 0x40;
	for (int i = 0; i < 3; i++)
		free(img[i]);

	/* fresh provision: v1 into A, B left empty (real provision code) */
	sim = path_in("board.sim");
	if (asprintf(&target, "sim:%s", sim) < 0)
		die("oom");
	struct provision_params pp = {
		.layout = L, .target = target, .bundle = b1, .allow_unsigned = true,
	};
	if (provision_run(&pp, NULL, &perr) < 0)
		die("provision: %s", perr.msg);
	free(b1);
	if (board_open(L, target, true, &board) < 0)
		die("board_open %s", target);
	if (nsim_open(sim, true, &ns) < 0)
		die("nsim_open %s", sim);
	{
		struct stat s;
		if (stat(sim, &s) < 0)
			die("stat %s", sim);
		fsize = s.st_size;
	}
	n_chunks = (fsize + CHUNK - 1) / CHUNK;
	fbuf = calloc(1, n_chunks * CHUNK);
}

/* ---- snapshots: the simulator file as interned 4 KiB chunks ---- */

static uint8_t **chunks;
static size_t n_chunk_data, cap_chunk_data;
static uint32_t *chunk_tab;   /* open addressing: chunk id + 1, 0 = free */
static size_t chunk_tab_cap;
static uint32_t *snaps;        /* n_chunks ids per snapshot */
static size_t n_snaps, cap_snaps;

static uint32_t chunk_intern(const uint8_t *p)
{
	uint64_t h = fnv(p, CHUNK, FNV0);
	size_t i;

	if (n_chunk_data * 2 >= chunk_tab_cap) {
		size_t ncap = chunk_tab_cap ? chunk_tab_cap * 2 : 4096;
		uint32_t *nt = calloc(ncap, sizeof(*nt));
		for (size_t k = 0; k < n_chunk_data; k++) {
			size_t j = fnv(chunks[k], CHUNK, FNV0) & (ncap - 1);
			while (nt[j])
				j = (j + 1) & (ncap - 1);
			nt[j] = (uint32_t)k + 1;
		}
		free(chunk_tab);
		chunk_tab = nt;
		chunk_tab_cap = ncap;
	}
	for (i = h & (chunk_tab_cap - 1); chunk_tab[i]; i = (i + 1) & (chunk_tab_cap - 1))
		if (!memcmp(chunks[chunk_tab[i] - 1], p, CHUNK))
			return chunk_tab[i] - 1;
	if (n_chunk_data == cap_chunk_data) {
		cap_chunk_data = cap_chunk_data ? cap_chunk_data * 2 : 1024;
		chunks = realloc(chunks, cap_chunk_data * sizeof(*chunks));
	}
	chunks[n_chunk_data] = malloc(CHUNK);
	memcpy(chunks[n_chunk_data], p, CHUNK);
	chunk_tab[i] = (uint32_t)n_chunk_data + 1;
	return (uint32_t)n_chunk_data++;
}

/* Snapshot of the file as it is now (fbuf must hold it). */
static uint32_t snap_take(void)
{
	if (n_snaps == cap_snaps) {
		cap_snaps = cap_snaps ? cap_snaps * 2 : 1024;
		snaps = realloc(snaps, cap_snaps * n_chunks * sizeof(*snaps));
	}
	for (size_t c = 0; c < n_chunks; c++)
		snaps[n_snaps * n_chunks + c] = chunk_intern(fbuf + c * CHUNK);
	return (uint32_t)n_snaps++;
}

static void snap_restore(uint32_t id)
{
	int fd = open(sim, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		die("open %s: %m", sim);
	for (size_t c = 0; c < n_chunks; c++) {
		size_t len = MIN((size_t)CHUNK, fsize - c * CHUNK);
		if (util_pwrite_full(fd, chunks[snaps[id * n_chunks + c]], len, c * CHUNK) !=
		    (ssize_t)len)
			die("restoring %s", sim);
	}
	close(fd);
}

/* ---- env copies as U-Boot reads them (redundant: crc, flags, data) ---- */

struct envcopy {
	bool valid;
	uint8_t flags;
	uint64_t hash;
};

static struct envcopy envcopy_of(int k)
{
	const uint8_t *p = fbuf + NSIM_HEADER_SIZE + env_off[k];
	uint32_t crc = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
	struct envcopy c = { 0 };

	c.valid = crc32(0, p + 5, ENV_SIZE - 5) == crc;
	c.flags = p[4];
	c.hash = c.valid ? fnv(p + 5, ENV_SIZE - 5, FNV0) : 0;
	return c;
}

/* Index of the copy U-Boot and libubootenv use, -1 = none valid. */
static int env_active(const struct envcopy *c)
{
	if (!c[0].valid || !c[1].valid)
		return c[0].valid ? 0 : c[1].valid ? 1 : -1;
	if (c[0].flags == 255 && c[1].flags == 0)
		return 1;
	if (c[1].flags == 255 && c[0].flags == 0)
		return 0;
	return c[1].flags > c[0].flags ? 1 : 0;
}

/* ---- nodes ---- */

struct shadow {
	uint16_t lbl[N_SLOTS];
	bool verified[N_SLOTS];
	/* the operator marked it bad (and nothing made it a candidate again):
	 * their verdict, not a slot I2 must reach */
	bool judged_bad[N_SLOTS];
	/* a media fault changed it after flashd last wrote it: flashd cannot
	 * know of rot it has not read, so I1 and I6 leave the slot to the boot
	 * counting (a rotted image does not boot) until flashd writes it again,
	 * and its install then reads every block it keeps */
	bool rotted[N_SLOTS];
};

struct inflight {
	int8_t bundle;           /* -1 = none */
	int8_t slot;             /* requested target: -1 = the inactive one */
	uint8_t steps;           /* units done */
	uint32_t base;           /* snapshot when it started */
};

struct node {
	uint32_t snap;
	int8_t booted;           /* -1 = off */
	struct shadow sh;
	struct inflight inf;
	uint32_t parent;
	uint32_t label;          /* index into the transition labels */
	uint8_t depth;
	uint8_t manual;          /* operator events used (daemon/offline ops, env corruption) */
};

static struct node *nodes;
static size_t n_nodes, cap_nodes;
static char **labels;
static size_t n_labels_tr, cap_labels_tr;

static uint64_t *keys;         /* 2 x 64 bits per slot, 0,0 = free */
static size_t keys_cap, n_keys;

static bool key_insert(uint64_t a, uint64_t b)
{
	size_t i;

	if (!a && !b)
		a = 1;
	if (n_keys * 2 >= keys_cap) {
		size_t ncap = keys_cap ? keys_cap * 2 : 1 << 14;
		uint64_t *nk = calloc(ncap * 2, sizeof(*nk));
		for (size_t k = 0; k < keys_cap; k++) {
			if (!keys[2 * k] && !keys[2 * k + 1])
				continue;
			size_t j = keys[2 * k] & (ncap - 1);
			while (nk[2 * j] || nk[2 * j + 1])
				j = (j + 1) & (ncap - 1);
			nk[2 * j] = keys[2 * k];
			nk[2 * j + 1] = keys[2 * k + 1];
		}
		free(keys);
		keys = nk;
		keys_cap = ncap;
	}
	for (i = a & (keys_cap - 1); keys[2 * i] || keys[2 * i + 1]; i = (i + 1) & (keys_cap - 1))
		if (keys[2 * i] == a && keys[2 * i + 1] == b)
			return false;
	keys[2 * i] = a;
	keys[2 * i + 1] = b;
	n_keys++;
	return true;
}

static uint32_t label_add(const char *s)
{
	if (n_labels_tr == cap_labels_tr) {
		cap_labels_tr = cap_labels_tr ? cap_labels_tr * 2 : 1024;
		labels = realloc(labels, cap_labels_tr * sizeof(*labels));
	}
	labels[n_labels_tr] = strdup(s);
	return (uint32_t)n_labels_tr++;
}

static size_t node_add(const struct node *n)
{
	if (n_nodes == cap_nodes) {
		cap_nodes = cap_nodes ? cap_nodes * 2 : 4096;
		nodes = realloc(nodes, cap_nodes * sizeof(*nodes));
	}
	nodes[n_nodes] = *n;
	return n_nodes++;
}

/* ---- the live state during a transition ---- */

struct live {
	int booted;
	struct shadow sh;
	struct inflight inf;
	struct install *in;
	size_t fed;
	bool finished;
	/* what the event did */
	int boot_result;         /* boot: slot booted, -1 reset, -2 not a boot */
	bool verified_now;
	int verified_slot;
	char note[160];
};

static void live_drop_install(struct live *lv)
{
	install_free(lv->in);
	lv->in = NULL;
	lv->inf = (struct inflight){ .bundle = -1, .slot = -1 };
	lv->fed = 0;
	lv->finished = false;
}

static int install_begin(struct live *lv, int bundle, int slot)
{
	struct install_params p = {
		.board = board, .target = target, .group = G,
		.cmdline = cmdline_override ? cmdline_override : cmdline[lv->booted],
		.allow_unsigned = true, .activate = true,
		.slot = slot == -2 ? G->slots[lv->booted].name : slot >= 0 ? G->slots[slot].name :
			NULL,
	};
	int r = install_new(&p, &lv->in);

	if (r < 0)
		die("install_new: %d", r);
	lv->inf = (struct inflight){ .bundle = (int8_t)bundle, .slot = (int8_t)slot, .steps = 0 };
	lv->fed = 0;
	lv->finished = false;
	return 0;
}

/* One unit of install work: the manifest, one erase block of payload, the
 * end of input, or one install_step (read-back block, activation store).
 * Returns 1 = more to do, 0 = done, <0 = failed. */
static int install_unit(struct live *lv)
{
	struct error err = {};
	int b = lv->inf.bundle, r;
	enum install_phase before = install_get_phase(lv->in);

	if (lv->fed < bundle_len[b]) {
		size_t n = lv->fed == 0 ? bundle_hdr[b] : MIN((size_t)CHUNK, bundle_len[b] - lv->fed);
		r = install_feed(lv->in, bundle_data[b] + lv->fed, n, &err);
		lv->fed += n;
		if (r >= 0)
			r = 1;
	} else if (!lv->finished) {
		r = install_finish_input(lv->in, &err);
		lv->finished = true;
		if (r >= 0)
			r = 1;
	} else {
		r = install_step(lv->in, &err);
	}
	lv->inf.steps++;
	if (before == INSTALL_PHASE_VERIFY) {
		enum install_phase now = install_get_phase(lv->in);
		if (now == INSTALL_PHASE_ACTIVATE || now == INSTALL_PHASE_DONE) {
			const char *s = install_get_slot(lv->in);
			lv->verified_now = true;
			lv->verified_slot = s && !strcmp(s, G->slots[1].name) ? 1 : 0;
		}
	}
	if (r < 0)
		snprintf(lv->note, sizeof(lv->note), "install failed: %.140s", err.msg);
	return r;
}

/* Rebuild the node's concrete state in the file and in memory: an install
 * in flight is replayed from the snapshot taken when it started (its steps
 * are deterministic and nothing else writes its target), then the node's
 * own snapshot goes back under it. */
static void restore(const struct node *n, struct live *lv)
{
	*lv = (struct live){ .booted = n->booted, .sh = n->sh, .boot_result = -2,
			     .inf = { .bundle = -1, .slot = -1 } };
	if (n->inf.bundle >= 0) {
		snap_restore(n->inf.base);
		install_begin(lv, n->inf.bundle, n->inf.slot);
		for (unsigned k = 0; k < n->inf.steps; k++)
			if (install_unit(lv) <= 0)
				die("install replay ended early at unit %u", k);
		lv->inf.base = n->inf.base;
		lv->verified_now = false;
		lv->note[0] = '\0';
	}
	snap_restore(n->snap);
}

/* ---- events ---- */

static int slot_state_now(struct env *e, struct slot_env *st)
{
	struct error serr = {};

	return slot_env_load_group(st, G, env_get_dup, e, &serr);
}

/* One slot operation as the daemon / flashctl do it: load, compute, one
 * store. slot -2 = the booted slot. */
static int do_slot_op(struct live *lv, enum slot_op op, int slot, unsigned flags)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct error serr = {};
	struct slot_env st, nst;
	struct slot_changes ch;
	int r;

	if (slot == -2)
		slot = lv->booted;
	else if (slot == -3)
		slot = 1 - lv->booted;
	r = env_open_layout(L, target, NULL, 0, &e, &eerr);
	if (r < 0) {
		snprintf(lv->note, sizeof(lv->note), "env: %.140s", eerr.msg);
		return r;
	}
	r = slot_env_load_group(&st, G, env_get_dup, e, &serr);
	if (r >= 0)
		r = slot_compute_booted(&st, lv->booted, op, slot, flags, &nst, &ch, &serr);
	if (r < 0) {
		snprintf(lv->note, sizeof(lv->note), "refused: %.140s", serr.msg);
		return r;
	}
	return slot_apply(e, &ch, &eerr);
}

/* flashd.service starts with the booted system (WantedBy=multi-user):
 * its start-up store, when there is one (manager.c record_fallback). */
static void daemon_start(struct live *lv)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct error serr = {};
	struct slot_env st;

	if (lv->booted < 0 || !lbl_bootable(lv->sh.lbl[lv->booted]))
		return;
	if (env_open_layout(L, target, NULL, 0, &e, &eerr) < 0 ||
	    slot_env_load_group(&st, G, env_get_dup, e, &serr) < 0)
		return;
	if (slot_needs_fallback(&st, lv->booted))
		do_slot_op(lv, SLOT_OP_FALLBACK, -2, 0);
}

/* U-Boot at power-on: the boot script's choice (slot_boot_select), one
 * saveenv; with no valid env copy U-Boot runs on its built-in default env
 * (no slot variables) and saveenv writes that with the script's changes. */
static int do_boot(struct live *lv)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st, nst;
	struct slot_changes ch;
	int i, r;

	live_drop_install(lv);
	lv->booted = -1;
	r = env_open_layout(L, target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &eerr);
	if (r < 0)
		die("boot: env: %s", eerr.msg);
	r = slot_state_now(e, &st);
	if (r < 0) {
		snprintf(lv->note, sizeof(lv->note), "boot: slot env unreadable");
		lv->boot_result = -1;
		return r;
	}
	/* the script reads the seals from flash (a lost env's default order) */
	slot_seal_load(board, G, &st);
	i = slot_boot_select(&st, &nst, &ch);
	if (env_is_blank(e)) {
		/* the built-in env carries the integrator's marker
		 * (dist/u-boot-env-flashd.txt) */
		struct env_var v[SLOT_CHANGES_MAX + 1] = {
			{ SLOT_ENV_MARK_VAR, SLOT_ENV_MARK_DEFAULT } };
		for (size_t k = 0; k < ch.n; k++)
			v[k + 1] = (struct env_var){ ch.vars[k].name, ch.vars[k].value };
		r = env_init_default(e, NULL, v, ch.n + 1, true, &eerr);
	} else {
		r = slot_apply(e, &ch, &eerr);
	}
	if (r < 0)
		snprintf(lv->note, sizeof(lv->note), "boot: saveenv failed: %.120s", eerr.msg);
	lv->boot_result = i < 0 ? -1 : i;
	lv->booted = i < 0 ? -1 : i;
	return 0;
}

/* Media failure: the older env copy's CRC no longer matches (both = the
 * newer one too). */
static void corrupt_copy(int fd, int k)
{
	uint8_t b;
	off_t off = NSIM_HEADER_SIZE + env_off[k] + 16;

	if (util_pread_full(fd, &b, 1, off) != 1)
		die("corrupt env");
	b ^= 0x01;
	if (util_pwrite_full(fd, &b, 1, off) != 1)
		die("corrupt env");
}

static int do_corrupt_env(bool both)
{
	int fd = open(sim, O_RDWR | O_CLOEXEC), act;
	struct envcopy c[2];

	if (fd < 0)
		die("corrupt env: %m");
	file_read();
	c[0] = envcopy_of(0);
	c[1] = envcopy_of(1);
	act = env_active(c);
	for (int k = 0; k < 2; k++)
		if (c[k].valid && (both || k != act))
			corrupt_copy(fd, k);
	close(fd);
	return 0;
}

/* Another updater (RAUC, a factory image) rewrote the env: the slot
 * variables as they are, no flashd records, no FLASHD_ENV marker: one
 * store. The daemon must keep that BOOT_ORDER (issue 31 item 9). */
static void do_legacy_env(struct live *lv)
{
	_cleanup_env_ struct env *e = NULL;
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	struct error eerr = {};
	char var[64];

	if (env_open_layout(L, target, NULL, 0, &e, &eerr) < 0 || env_txn_new(e, &t) < 0)
		return;
	for (int s = 0; s < N_SLOTS; s++) {
		slot_record_var(G->slots[s].name, var, sizeof(var));
		env_txn_set(t, var, NULL);
		slot_version_var(G->slots[s].name, var, sizeof(var));
		env_txn_set(t, var, NULL);
		slot_health_var(G->slots[s].name, var, sizeof(var));
		env_txn_set(t, var, NULL);
	}
	env_txn_set(t, SLOT_LAST_GOOD_VAR, NULL);
	env_txn_set(t, SLOT_ENV_MARK_VAR, NULL);
	if (env_txn_commit(t, &eerr) < 0)
		snprintf(lv->note, sizeof(lv->note), "legacy env: %.140s", eerr.msg);
}

/* EV_MEDIA faults */
enum { MEDIA_FLIP, MEDIA_UNCORRECTABLE, MEDIA_ENV_DEAD };

/* Media faults: a bit flipped in the other slot's image, an uncorrectable
 * block there, the older env copy's block failing erase and program. */
static void media_fault(struct live *lv, int what)
{
	int other = lv->booted >= 0 ? 1 - lv->booted : 1;
	uint64_t blk = (slot_off[other] + img_size / 2) / CHUNK;
	uint8_t b;

	switch (what) {
	case MEDIA_FLIP:
		if (nsim_read(ns, blk * CHUNK + 100, &b, 1) < 0)
			die("nsim_read");
		b ^= 0x10;
		{
			int fd = open(sim, O_WRONLY | O_CLOEXEC);
			if (fd < 0 || util_pwrite_full(fd, &b, 1, NSIM_HEADER_SIZE + blk * CHUNK + 100) != 1)
				die("bit flip");
			close(fd);
		}
		return;
	case MEDIA_UNCORRECTABLE:
		if (nsim_set_block_flip(ns, blk, NSIM_FLIP_UNCORRECTABLE) < 0)
			die("nsim_set_block_flip");
		return;
	case MEDIA_ENV_DEAD: {
		struct envcopy c[2];
		file_read();
		c[0] = envcopy_of(0);
		c[1] = envcopy_of(1);
		if (nsim_set_block_faults(ns, env_off[env_active(c) == 0 ? 1 : 0] / CHUNK,
					  NSIM_FAULT_ERASE | NSIM_FAULT_PROGRAM) < 0)
			die("nsim_set_block_faults");
		return;
	}
	}
}

/* A raw write of the slot variables (env set --force): the other slot
 * first with full tries. A socket-group member is refused before anything
 * is read (manager_env.c: uid 0 only); root's forced write passes the same
 * check the daemon and flashctl make (slot_change_check_raw), so this is
 * the strongest raw write anyone can make over the socket. */
static void do_raw_env(struct live *lv)
{
	_cleanup_env_ struct env *e = NULL;
	_cleanup_(env_txn_freep) struct env_txn *t = NULL;
	struct error eerr = {};
	const char *other = G->slots[1 - lv->booted].name;
	char var[64], max[4];

	if (env_open_layout(L, target, NULL, 0, &e, &eerr) < 0 || env_txn_new(e, &t) < 0)
		return;
	slot_left_var(other, var, sizeof(var));
	snprintf(max, sizeof(max), "%u", max_tries);
	const struct env_var vars[] = { { SLOT_ORDER_VAR, other }, { var, max } };
	if (slot_change_check_raw(e, G, vars, 2, &eerr) < 0) {
		snprintf(lv->note, sizeof(lv->note), "raw env refused: %.140s", eerr.msg);
		return;
	}
	env_txn_set_many(t, vars, 2);
	if (env_txn_commit(t, &eerr) < 0)
		snprintf(lv->note, sizeof(lv->note), "raw env: %.140s", eerr.msg);
}

/* A whole install, in one event, on a board whose cmdline names no slot
 * (booted by hand): nothing may write the running root (I3). */
static void unknown_booted_install(struct live *lv, int bundle)
{
	cmdline_override = cmdline_unknown;
	install_begin(lv, bundle, -2);
	cmdline_override = NULL;
	while (install_unit(lv) > 0)
		;
	live_drop_install(lv);
}

enum ev_kind {
	EV_BOOT,
	EV_INSTALL_START,
	EV_INSTALL_STEP,
	EV_CANCEL,
	EV_DAEMON_RESTART,
	EV_HEALTH_PASS,
	EV_HEALTH_FAIL,
	EV_DAEMON_OP,            /* mark-good, mark-bad, activate, rollback over the socket */
	EV_OFFLINE_OP,           /* flashctl slot ... without the daemon */
	EV_CORRUPT_ENV,
	EV_LEGACY_ENV,           /* RAUC / a factory image rewrote the env: records gone */
	EV_MEDIA,                /* a fault in a slot or env block (media_fault) */
	EV_RAW_ENV,              /* a socket-group member's raw env write */
	EV_UNKNOWN_BOOTED,       /* booted by hand: the cmdline names no slot; install --slot A */
};


struct event {
	const char *name;
	enum ev_kind kind;
	int arg;                 /* bundle, slot op, env copy */
	int slot;                /* -1 none / inactive, -2 booted, 0/1 */
	unsigned flags;
	/* NULL: explored. Otherwise the fix it waits for on another branch:
	 * the event is left out (listed at the end) until the lead merges
	 * that fix and deletes this string. */
	const char *until;
};

/* slot: -1 none (install: the inactive one), -2 the booted slot, -3 the other */
static const struct event events[] = {
	{ "boot", EV_BOOT, 0, -1, 0, NULL },
	{ "install v2", EV_INSTALL_START, B_V2, -1, 0, NULL },
	{ "install dud (verifies, does not boot)", EV_INSTALL_START, B_DUD, -1, 0, NULL },
	{ "install corrupt (hash fails)", EV_INSTALL_START, B_CORRUPT, -1, 0, NULL },
	{ "install v2 --slot <booted>", EV_INSTALL_START, B_V2, -2, 0, NULL },
	{ "install step", EV_INSTALL_STEP, 0, -1, 0, NULL },
	{ "cancel", EV_CANCEL, 0, -1, 0, NULL },
	{ "kill -9 flashd, restart (worker dies)", EV_DAEMON_RESTART, 0, -1, 0, NULL },
	{ "health check passes", EV_HEALTH_PASS, SLOT_OP_MARK_GOOD, -2, SLOT_FORCE, NULL },
	/* as manager_health.c: the last slot that boots stays, degraded */
	{ "health check fails", EV_HEALTH_FAIL, SLOT_OP_MARK_BAD, -2, SLOT_FORCE | SLOT_KEEP_LAST, NULL },
	{ "MarkGood", EV_DAEMON_OP, SLOT_OP_MARK_GOOD, -2, 0, NULL },
	{ "MarkBad <booted>", EV_DAEMON_OP, SLOT_OP_MARK_BAD, -2, 0, NULL },
	{ "MarkBad <other>", EV_DAEMON_OP, SLOT_OP_MARK_BAD, -3, 0, NULL },
	{ "Activate <other>", EV_DAEMON_OP, SLOT_OP_ACTIVATE, -3, 0, NULL },
	{ "Activate <booted>", EV_DAEMON_OP, SLOT_OP_ACTIVATE, -2, 0, NULL },
	{ "Rollback", EV_DAEMON_OP, SLOT_OP_ROLLBACK, -1, 0, NULL },
	{ "flashctl slot rollback (offline)", EV_OFFLINE_OP, SLOT_OP_ROLLBACK, -2, 0, NULL },
	{ "flashctl slot activate <other> (offline)", EV_OFFLINE_OP, SLOT_OP_ACTIVATE, -3, 0, NULL },
	{ "flashctl slot init (offline)", EV_OFFLINE_OP, SLOT_OP_INIT, -1, 0, NULL },
	/* media failures U-Boot's redundant env is meant to survive: the copy
	 * not in use, and both (U-Boot then runs on its built-in default) */
	{ "older env copy corrupted", EV_CORRUPT_ENV, 0, -1, 0, NULL },
	{ "both env copies corrupted", EV_CORRUPT_ENV, 1, -1, 0, NULL },
	/* the events that found issue 31's defects */
	{ "legacy env (records dropped, BOOT_ORDER kept, no FLASHD_ENV)", EV_LEGACY_ENV, 0, -1, 0, NULL },
	{ "bit flip in <other>'s image", EV_MEDIA, MEDIA_FLIP, -3, 0, NULL },
	/* no "uncorrectable block" event: this board is NOR (no ECC);
	 * tests/unit/test-install and tests/daemon/test-kept-blocks cover it on NAND */
	{ "older env copy's block dies", EV_MEDIA, MEDIA_ENV_DEAD, -1, 0, NULL },
	{ "group member: env set --force BOOT_ORDER=<other> BOOT_<other>_LEFT=<max>", EV_RAW_ENV,
	  0, -3, 0, NULL },
	{ "booted by hand (root=PARTUUID=...): install v2 --slot <booted>", EV_UNKNOWN_BOOTED,
	  B_V2, -2, 0, NULL },
	/* not expressible here: a stale block record (this exploration installs
	 * from a stream without a state dir; tests/unit/test-install covers it) */
};
#define N_EVENTS (sizeof(events) / sizeof(events[0]))

/* Is the booted system up (a daemon and a shell)? A slot that does not
 * boot (dud, junk, erased) panics: only a reset follows. */
static bool running(const struct node *n)
{
	return n->booted >= 0 && lbl_bootable(n->sh.lbl[n->booted]);
}

/* The daemon runs the health check at start when status says so. */
static bool health_due(const struct node *n)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st;
	struct slot_decision s;

	if (env_open_layout(L, target, NULL, 0, &e, &eerr) < 0 || slot_state_now(e, &st) < 0)
		return false;
	slot_decide(&st, n->booted, "flashd.slot", &s);
	return s.needs_health_check;
}

/* Operator actions and media failures: at most this many per trace, so the
 * depth goes to where installs, boots, health checks and power cuts
 * interleave (FLASHD_EXPLORE_MANUAL overrides). */
static unsigned manual_max = 1;

static bool is_manual(const struct event *ev)
{
	return ev->kind == EV_DAEMON_OP || ev->kind == EV_OFFLINE_OP || ev->kind == EV_CORRUPT_ENV ||
	       ev->kind == EV_LEGACY_ENV || ev->kind == EV_MEDIA || ev->kind == EV_RAW_ENV ||
	       ev->kind == EV_UNKNOWN_BOOTED;
}

static bool n_health_due; /* health_due() of the node being expanded */

/* FLASHD_EXPLORE_UNTIL=1: explore the events left out until a fix is
 * merged too (to see what they find) */
static bool explore_until;

/* FLASHD_EXPLORE_SKIP=name,name: events left out (to see which defect
 * hides behind the shortest one) */
static bool skipped[64];

static bool enabled(const struct node *n, const struct event *ev)
{
	bool busy = n->inf.bundle >= 0;

	if (skipped[ev - events] || (ev->until && !explore_until))
		return false;

	if (is_manual(ev) && n->manual >= manual_max)
		return false;

	switch (ev->kind) {
	case EV_BOOT:
	case EV_CORRUPT_ENV:
	case EV_MEDIA:
		return true;
	case EV_LEGACY_ENV:
	case EV_RAW_ENV:
	case EV_UNKNOWN_BOOTED:
		return running(n) && !busy;
	case EV_INSTALL_START:
	case EV_DAEMON_OP:
		return running(n) && !busy;
	case EV_INSTALL_STEP:
	case EV_CANCEL:
		return busy;
	case EV_DAEMON_RESTART:
		return running(n) && busy; /* idle: a restart changes nothing */
	case EV_HEALTH_PASS:
	case EV_HEALTH_FAIL:
		return running(n) && !busy && n_health_due;
	case EV_OFFLINE_OP:
		return running(n);
	}
	return false;
}

static void run_event(struct live *lv, const struct event *ev)
{
	int r;

	switch (ev->kind) {
	case EV_BOOT:
		do_boot(lv);
		daemon_start(lv);
		return;
	case EV_INSTALL_START:
		install_begin(lv, ev->arg, ev->slot);
		/* the manifest is the first unit */
		__attribute__((fallthrough));
	case EV_INSTALL_STEP:
		r = install_unit(lv);
		if (r <= 0) {
			if (r == 0)
				snprintf(lv->note, sizeof(lv->note), "install done");
			live_drop_install(lv);
		}
		return;
	case EV_CANCEL:
		install_cancel(lv->in);
		live_drop_install(lv);
		return;
	case EV_DAEMON_RESTART:
		live_drop_install(lv);
		daemon_start(lv);
		return;
	case EV_HEALTH_PASS:
	case EV_HEALTH_FAIL:
	case EV_DAEMON_OP:
	case EV_OFFLINE_OP:
		r = do_slot_op(lv, (enum slot_op)ev->arg, ev->slot, ev->flags);
		/* the operator's verdict (a health check's is the daemon's) */
		if (r >= 0 && ev->arg == SLOT_OP_MARK_BAD && is_manual(ev))
			lv->sh.judged_bad[ev->slot == -2 ? lv->booted : 1 - lv->booted] = true;
		return;
	case EV_CORRUPT_ENV:
		do_corrupt_env(ev->arg);
		return;
	case EV_LEGACY_ENV:
		do_legacy_env(lv);
		return;
	case EV_MEDIA:
		media_fault(lv, ev->arg);
		return;
	case EV_RAW_ENV:
		do_raw_env(lv);
		return;
	case EV_UNKNOWN_BOOTED:
		/* what install_begin does, with a cmdline naming no slot */
		unknown_booted_install(lv, ev->arg);
		return;
	}
}

/* ---- measuring and checking ---- */

struct measure {
	struct envcopy env[2];
	int active;
	uint64_t slot_hash[N_SLOTS];     /* the image area */
	uint64_t slot_erases[N_SLOTS];
	uint64_t seal_hash[N_SLOTS];     /* the seal block (none: 0) */
	uint64_t seal_erases[N_SLOTS];
	uint64_t mutations;
};

static uint64_t erases_of(uint64_t off, uint64_t len)
{
	uint64_t n = 0;

	for (uint64_t b = 0; b < len / CHUNK; b++) {
		struct nsim_block blk;
		if (nsim_get_block(ns, off / CHUNK + b, &blk) < 0)
			die("nsim_get_block");
		n += blk.erase_count;
	}
	return n;
}

static void measure(struct measure *m)
{
	struct nsim_info info;

	file_read();
	m->env[0] = envcopy_of(0);
	m->env[1] = envcopy_of(1);
	m->active = env_active(m->env);
	for (int s = 0; s < N_SLOTS; s++) {
		const uint8_t *p = fbuf + NSIM_HEADER_SIZE + slot_off[s];

		m->slot_hash[s] = fnv(p, img_size, FNV0);
		m->slot_erases[s] = erases_of(slot_off[s], img_size);
		m->seal_hash[s] = fnv(p + img_size, slot_size - img_size, FNV0);
		m->seal_erases[s] = erases_of(slot_off[s] + img_size, slot_size - img_size);
	}
	if (nsim_get_info(ns, &info) < 0)
		die("nsim_get_info");
	m->mutations = info.cnt.mutations;
}

/* The first (shortest) violation of each invariant. */
static bool violated[_I_MAX];
static char *violation_trace[_I_MAX];
static size_t violations[_I_MAX];

static char *trace_of(size_t node_idx, const char *last)
{
	size_t chain[64], n = 0;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (size_t i = node_idx; i != 0 && n < 64; i = nodes[i].parent)
		chain[n++] = i;
	fprintf(f, "    provision (v1 into A, B empty)\n");
	while (n--)
		fprintf(f, "    -> %s\n", labels[nodes[chain[n]].label]);
	if (last)
		fprintf(f, "    -> %s\n", last);
	fclose(f);
	return out;
}

static void violation(enum inv i, size_t from, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void violation(enum inv i, size_t from, const char *label, const char *fmt, ...)
{
	char what[512];
	char *t, *all;
	va_list ap;

	violations[i]++;
	if (violated[i])
		return;
	violated[i] = true;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	t = trace_of(from, label);
	if (asprintf(&all, "%s\n%s    => %s\n", invariants[i].name, t, what) < 0)
		die("oom");
	free(t);
	violation_trace[i] = all;
}

/* The slot the next power-on boots: slot_boot_select, once more after a
 * counter reset; -1 = none. ret_st gets the state after. */
static int next_boot(const struct slot_env *st, struct slot_env *ret_st, int *ret_resets)
{
	struct slot_env cur = *st, n;
	struct slot_changes ch;

	*ret_resets = 0;
	for (int k = 0; k < 2; k++) {
		int i = slot_boot_select(&cur, &n, &ch);
		cur = n;
		if (i >= 0) {
			if (ret_st)
				*ret_st = cur;
			return i;
		}
		(*ret_resets)++;
	}
	if (ret_st)
		*ret_st = cur;
	return -1;
}

static FILE *samples;
static size_t n_samples;

/* Env state sample for the real-U-Boot agreement test: the slot variables
 * and what slot_boot_select does with them (one power-on). */
static void sample(const struct slot_env *st, struct env *e)
{
	static const char *const names[] = { "BOOT_ORDER", "BOOT_A_LEFT", "BOOT_B_LEFT" };
	struct slot_env n;
	struct slot_changes ch;
	int i;

	struct slot_env sealed = *st;

	if (!samples)
		return;
	slot_seal_load(board, G, &sealed);
	i = slot_boot_select(&sealed, &n, &ch);
	fprintf(samples, "state %zu", n_samples++);
	for (size_t k = 0; k < 3; k++) {
		char *v = env_get_dup(e, names[k]);
		fprintf(samples, " %s=%s%s%s", names[k], v ? "'" : "", v ? v : "-", v ? "'" : "");
		free(v);
	}
	fprintf(samples, " sealed=%s%s%s", sealed.slots[0].unsealed ? "" : "A",
		!sealed.slots[0].unsealed && !sealed.slots[1].unsealed ? "," : "",
		sealed.slots[1].unsealed ? (sealed.slots[0].unsealed ? "-" : "") : "B");
	fprintf(samples, " => %s A=%u B=%u\n", i >= 0 ? G->slots[i].name : "reset",
		n.slots[0].left, n.slots[1].left);
}

/* A slot I2 must reach: verified, bootable, not judged bad by the operator. */
static bool candidate(const struct node *n, int s)
{
	return n->sh.verified[s] && lbl_bootable(n->sh.lbl[s]) && !n->sh.judged_bad[s];
}

/* The label of the image a FLASHD_<x>_VERSION names; -1 = any signed one. */
static int version_label(struct env *e, int s)
{
	char var[64];
	_cleanup_free_ char *v = NULL;

	slot_version_var(G->slots[s].name, var, sizeof(var));
	v = env_get_dup(e, var);
	if (!v)
		return -1;
	return !strcmp(v, "1") ? LBL_V1 : !strcmp(v, "2") ? LBL_V2 : !strcmp(v, "3") ? LBL_DUD : -1;
}

/* I6: trust only what was read. A slot the boot script may reach (in a set
 * BOOT_ORDER) or the records call verified is READ from the simulator now
 * and compared with its signed image, whatever the shadow or the env say. */
static void check_read(const struct node *n, struct env *e, const struct slot_env *st,
		       size_t from, const char *label)
{
	for (int s = 0; s < N_SLOTS; s++) {
		const struct slot_vars *si = &st->slots[s];
		bool listed = st->order_set && si->order_pos >= 0;
		bool recorded = si->record == SLOT_RECORD_VERIFIED || si->record == SLOT_RECORD_GOOD;
		unsigned got;
		int want;
		char l[32];

		if ((!listed && !recorded) || n->sh.rotted[s])
			continue;
		got = lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[s], img_size);
		want = version_label(e, s);
		if (want < 0 ? got == LBL_V1 || got == LBL_V2 || got == LBL_DUD : got == (unsigned)want)
			continue;
		lbl_name(got, l, sizeof(l));
		violation(I6, from, label, "slot %s is %s but reads as %s, not its signed image",
			  G->slots[s].name, listed ? "in BOOT_ORDER" : "recorded verified", l);
	}
}

/* I2, I5 and I6 on the state now in the file. */
static void check_state(const struct node *n, size_t from, const char *label, bool new_state)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st, cur;
	bool any_good = false, reached = false;
	int resets, nb;

	for (int s = 0; s < N_SLOTS; s++)
		any_good |= candidate(n, s);
	if (env_open_layout(L, target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &eerr) < 0)
		return;
	if (slot_state_now(e, &st) < 0)
		return;
	if (new_state && !env_is_blank(e) && n_samples < 400 && (n_keys % 7) == 0)
		sample(&st, e);
	if (!env_is_blank(e))
		check_read(n, e, &st, from, label);
	/* I2: boots with nothing else happening (every boot that does not reach
	 * a verified bootable slot is one the board resets from); the script
	 * reads the seals */
	cur = st;
	slot_seal_load(board, G, &cur);
	for (unsigned b = 0; b < 2 * max_tries + 2 && any_good && !reached; b++) {
		struct slot_env nx;
		struct slot_changes ch;
		int i = slot_boot_select(&cur, &nx, &ch);
		cur = nx;
		if (i >= 0 && candidate(n, i))
			reached = true;
	}
	if (any_good && !reached)
		violation(I2, from, label, "a verified bootable slot exists but %u boots never "
			  "reach one", 2 * max_tries + 2);
	/* I5: status on the running board */
	if (n->booted >= 0 && running(n) && !env_is_blank(e)) {
		struct slot_decision s;
		struct slot_env sealed = st;
		slot_decide(&st, n->booted, "flashd.slot", &s);
		slot_seal_load(board, G, &sealed);
		nb = next_boot(&sealed, NULL, &resets);
		if (s.next_boot != nb)
			violation(I5, from, label, "status says next boot %s, the next boot%s %s",
				  s.next_boot >= 0 ? G->slots[s.next_boot].name : "none",
				  resets ? " (after a counter reset)" : "",
				  nb >= 0 ? G->slots[nb].name : "boots nothing");
	}
}

static uint64_t key_of(const struct node *n, const struct measure *m, uint64_t seed)
{
	uint64_t h = seed;

	/* the older copy matters only as "valid or not": nothing corrupts the
	 * newer one alone */
	for (int k = 0; k < 2; k++)
		h = fnv(&m->env[k].valid, sizeof(bool), h);
	if (m->active >= 0)
		h = fnv(&m->env[m->active].hash, sizeof(uint64_t), h);
	for (int s = 0; s < N_SLOTS; s++) {
		/* every unknown content is the same to the invariants */
		uint16_t l = n->sh.lbl[s] < LBL_FIRST_JUNK ? n->sh.lbl[s] : LBL_FIRST_JUNK;
		h = fnv(&l, sizeof(l), h);
	}
	h = fnv(n->sh.verified, sizeof(n->sh.verified), h);
	h = fnv(n->sh.judged_bad, sizeof(n->sh.judged_bad), h);
	h = fnv(n->sh.rotted, sizeof(n->sh.rotted), h);
	h = fnv(m->seal_hash, sizeof(m->seal_hash), h);
	h = fnv(&n->booted, 1, h);
	h = fnv(&n->manual, 1, h);
	h = fnv(&n->inf.bundle, 1, h);
	h = fnv(&n->inf.slot, 1, h);
	h = fnv(&n->inf.steps, 1, h);
	return h;
}

static size_t n_transitions;

/* The env records slot s bad (an operator's verdict still stands). */
static bool recorded_bad(int s)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_env st;

	if (env_open_layout(L, target, NULL, 0, &e, &eerr) < 0 || slot_state_now(e, &st) < 0)
		return false;
	return st.slots[s].record == SLOT_RECORD_BAD;
}

/* How many boot-state changes (env stores) ev may make from -> to. */
static unsigned allowed_stores(const struct event *ev, const struct node *from,
			       const struct node *to)
{
	/* unit 0 (in the start event) is the manifest: nothing stored yet */
	bool began = from->inf.bundle >= 0 && from->inf.steps <= 1;
	bool ended = to->inf.bundle < 0;

	/* a boot: U-Boot's saveenv, then the daemon's start-up store */
	if (ev->kind == EV_BOOT)
		return 2;
	return ev->kind == EV_INSTALL_STEP && began && ended ? 2 : 1;
}

/* Apply event ev (with a power cut after `cut` flash ops, -1 = none) to
 * node idx; add the resulting state when new. Returns the mutations the
 * event did. */
static uint64_t transition(size_t idx, const struct event *ev, int cut, bool tear,
			   size_t *queue_tail)
{
	struct node from = nodes[idx], to;
	struct measure before, after;
	struct live lv;
	char label[320], lbl[2][32];
	unsigned stores;

	restore(&from, &lv);
	measure(&before);
	if (cut >= 0 && nsim_set_powercut(ns, cut, tear) < 0)
		die("nsim_set_powercut");
	run_event(&lv, ev);
	if (cut >= 0) {
		/* the power is gone: every process with it */
		live_drop_install(&lv);
		lv.booted = -1;
		lv.boot_result = -2;
		if (nsim_power_on(ns) < 0)
			die("nsim_power_on");
	}
	measure(&after);
	n_transitions++;

	to = (struct node){ .booted = (int8_t)lv.booted, .sh = lv.sh, .inf = lv.inf,
			    .parent = (uint32_t)idx, .depth = from.depth + 1,
			    .manual = from.manual + is_manual(ev) };
	if (cut >= 0)
		snprintf(label, sizeof(label), "%s [power cut at flash op %d%s]", ev->name, cut + 1,
			 tear ? ", torn" : "");
	else
		snprintf(label, sizeof(label), "%s", ev->name);

	/* shadow truth: a slot whose partition changed holds new, unverified
	 * content; a read-back that passed verifies what is there */
	for (int s = 0; s < N_SLOTS; s++) {
		bool changed = before.slot_hash[s] != after.slot_hash[s] ||
			       before.slot_erases[s] != after.slot_erases[s];
		bool seal_changed = before.seal_hash[s] != after.seal_hash[s] ||
				    before.seal_erases[s] != after.seal_erases[s];
		if (changed) {
			to.sh.lbl[s] = (uint16_t)lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[s],
							img_size);
			to.sh.rotted[s] = ev->kind == EV_MEDIA;
			if (ev->kind != EV_MEDIA)
				to.sh.verified[s] = false;
		}
		if (changed || !recorded_bad(s))
			to.sh.judged_bad[s] = false;
		/* I3 (its seal is part of the slot) */
		if ((changed || seal_changed) && from.booted == s && ev->kind != EV_BOOT)
			violation(I3, idx, label, "slot %s is booted and was written",
				  G->slots[s].name);
	}
	if (lv.verified_now && cut < 0)
		to.sh.verified[lv.verified_slot] = true;
	lbl_name(to.sh.lbl[0], lbl[0], sizeof(lbl[0]));
	lbl_name(to.sh.lbl[1], lbl[1], sizeof(lbl[1]));
	{
		char *l2;
		if (asprintf(&l2, "%s%s%s  {A:%s%s B:%s%s, booted %s}", label, lv.note[0] ? ": " : "",
			     lv.note, lbl[0], to.sh.verified[0] ? "(verified)" : "", lbl[1],
			     to.sh.verified[1] ? "(verified)" : "",
			     to.booted >= 0 ? G->slots[to.booted].name : "-") < 0)
			die("oom");
		snprintf(label, sizeof(label), "%s", l2);
		free(l2);
	}

	/* I4: the redundant env's flags count the stores. One state change,
	 * one store; the one event with two changes is an install's first unit
	 * that also ends it (a payload of one erase block that fails its hash):
	 * "installing" before the first write, then "failed" - two stores, and
	 * the state between them is explored by the power cuts of this event. */
	stores = before.active >= 0 && after.active >= 0 ?
		 (uint8_t)(after.env[after.active].flags - before.env[before.active].flags) : 0;
	/* (a cut store is torn, the flags of what is left say nothing) */
	if (stores > allowed_stores(ev, &from, &to) && cut < 0 && ev->kind != EV_CORRUPT_ENV)
		violation(I4, idx, label, "%u env stores in one event", stores);
	/* I1 */
	if (lv.boot_result >= 0 && !to.sh.verified[lv.boot_result] &&
	    !to.sh.rotted[lv.boot_result]) {
		char l[32];
		lbl_name(to.sh.lbl[lv.boot_result], l, sizeof(l));
		violation(I1, idx, label, "booted slot %s, which holds %s, never verified",
			  G->slots[lv.boot_result].name, l);
	}

	uint64_t ka = key_of(&to, &after, FNV0), kb = key_of(&to, &after, 0x84222325cbf29ce4ULL);
	bool fresh = key_insert(ka, kb);
	to.label = label_add(label);
	if (fresh) {
		check_state(&to, idx, label, true);
		to.snap = snap_take();
		if (to.inf.bundle >= 0)
			to.inf.base = lv.inf.bundle >= 0 && ev->kind == EV_INSTALL_START ?
				      from.snap : from.inf.base;
		node_add(&to);
		(*queue_tail)++;
	}
	live_drop_install(&lv);
	return after.mutations - before.mutations;
}

int main(void)
{
	const char *d = getenv("FLASHD_EXPLORE_DEPTH");
	unsigned depth = d ? (unsigned)atoi(d) : 8;
	const char *sp = getenv("FLASHD_EXPLORE_SAMPLES");
	const char *mm = getenv("FLASHD_EXPLORE_MANUAL");
	struct node root = { .booted = -1, .inf = { .bundle = -1, .slot = -1 } };
	struct measure m;
	size_t head = 0, tail;
	time_t t0 = time(NULL);
	int failed = 0;

	if (mm)
		manual_max = (unsigned)atoi(mm);
	explore_until = getenv("FLASHD_EXPLORE_UNTIL") != NULL;
	if (getenv("FLASHD_EXPLORE_SKIP")) {
		char *list = strdup(getenv("FLASHD_EXPLORE_SKIP")), *save = NULL;
		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
			for (size_t e = 0; e < N_EVENTS; e++)
				if (strstr(events[e].name, t))
					skipped[e] = true;
		free(list);
	}
	setup();
	if (sp && !(samples = fopen(sp, "we")))
		die("%s: %m", sp);
	measure(&m);
	root.sh.lbl[0] = (uint16_t)lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[0], img_size);
	root.sh.lbl[1] = (uint16_t)lbl_of(fbuf + NSIM_HEADER_SIZE + slot_off[1], img_size);
	if (root.sh.lbl[0] != LBL_V1 || root.sh.lbl[1] != LBL_ERASED)
		die("provisioning did not leave v1 in A and B erased");
	root.sh.verified[0] = true; /* provisioning read it back */
	root.snap = snap_take();
	root.label = label_add("provision");
	key_insert(key_of(&root, &m, FNV0), key_of(&root, &m, 0x84222325cbf29ce4ULL));
	node_add(&root);
	tail = 1;

	while (head < n_nodes) {
		size_t idx = head++;

		if (nodes[idx].depth >= depth)
			continue;
		snap_restore(nodes[idx].snap);
		n_health_due = running(&nodes[idx]) && health_due(&nodes[idx]);
		for (size_t e = 0; e < N_EVENTS; e++) {
			uint64_t muts;

			if (!enabled(&nodes[idx], &events[e]))
				continue;
			muts = transition(idx, &events[e], -1, false, &tail);
			for (uint64_t c = 0; c < muts; c++) {
				transition(idx, &events[e], (int)c, false, &tail);
				transition(idx, &events[e], (int)c, true, &tail);
			}
		}
	}

	printf("test-abstate: %zu states, %zu transitions explored to depth %u "
	       "(%zu distinct slot contents, %zu snapshot chunks) in %lds\n",
	       n_nodes, n_transitions, depth, (size_t)n_labels, n_chunk_data,
	       (long)(time(NULL) - t0));
	if (samples) {
		fclose(samples);
		printf("test-abstate: %zu env states written to %s\n", n_samples, sp);
	}
	for (int i = 0; i < _I_MAX; i++) {
		if (!violated[i]) {
			if (invariants[i].xfail) {
				printf("XPASS %s: listed as known to fail (%s) but holds: remove "
				       "its reason from invariants[]\n", invariants[i].name,
				       invariants[i].xfail);
				failed = 1;
			} else {
				printf("PASS  %s\n", invariants[i].name);
			}
			continue;
		}
		printf("%s %s: %zu violating transitions; shortest trace:\n%s",
		       invariants[i].xfail ? "XFAIL" : "FAIL ", invariants[i].name, violations[i],
		       violation_trace[i]);
		if (invariants[i].xfail)
			printf("      !!! known failure, not yet fixed: %s\n", invariants[i].xfail);
		else
			failed = 1;
	}
	for (size_t e = 0; e < N_EVENTS; e++)
		if (events[e].until)
			printf("LEFT OUT event '%s': %s\n", events[e].name, events[e].until);
	nsim_close(ns);
	board_close(board);
	return failed;
}
