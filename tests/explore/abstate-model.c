/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-abstate's model: the board (tiny-ab.json provisioned on the simulator),
 * what a slot holds (content labels), snapshots of the simulator file, the
 * env copies as U-Boot reads them, the live state of a transition and what
 * each event does, with the real slot, env and install code. */
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

#include "abstate.h"
#include "bundle.h"
#include "bundle_create.h"
#include "cleanup.h"
#include "provision.h"
#include "slot_change.h"
#include "slot_seal.h"
#include "slot_verify.h"
#include "util.h"

/* ---- content labels: what a slot holds ---- */

static const char *const lbl_names[] = { "erased", "v1", "v2", "dud" };
#define MAX_LABELS 4096
static uint64_t lbl_hash[MAX_LABELS];
unsigned n_labels;

bool lbl_bootable(unsigned l) { return l == LBL_V1 || l == LBL_V2; }

void lbl_name(unsigned l, char *buf, size_t len)
{
	if (l < LBL_FIRST_JUNK)
		snprintf(buf, len, "%s", lbl_names[l]);
	else
		snprintf(buf, len, "junk#%u", l - LBL_FIRST_JUNK);
}

uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

unsigned lbl_of(const uint8_t *data, size_t len)
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

struct layout *L;
const struct layout_slot_group *G;
char dir[64], *sim, *target, *cmdline[N_SLOTS], *cmdline_unknown, *state_dir;
static const char *cmdline_override; /* install_begin: instead of the booted slot's */
struct board *board;
struct nsim *ns;
size_t fsize, n_chunks;
uint8_t *fbuf;
/* img_size: the slot's image area, its partition without the seal block
 * (the last erase block, which the real seal code reads and writes) */
uint64_t slot_off[N_SLOTS], slot_size, img_size, env_off[2];
unsigned max_tries;

static const char *const bundle_names[_B_MAX] = { "v2", "dud", "corrupt" };
static uint8_t *bundle_data[_B_MAX];
static size_t bundle_len[_B_MAX], bundle_hdr[_B_MAX];

_Noreturn void die(const char *fmt, ...)
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

void file_read(void)
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
	/* the index in the erase blocks of the board: the install keeps the
	 * block record a promotion is read against (slot_verify.h) */
	struct bundle_create_params p = {
		.compatible = L->compatible, .version = version, .description = "explore",
		.images = &im, .n_images = 1, .block_size = CHUNK,
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

void setup(void)
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
	/* in RAM where there is a tmpfs: every transition rewrites the
	 * simulator file and the records, and on a disk each rewritten file's
	 * close starts its writeback (ext4's auto_da_alloc): 47 -> 38 CPU-s */
	snprintf(dir, sizeof(dir), "%s/flashd-abstate-XXXXXX",
		 access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp");
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
	state_dir = path_in("state");
	struct provision_params pp = {
		.layout = L, .target = target, .bundle = b1, .allow_unsigned = true,
		.state_dir = state_dir,
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
size_t n_chunk_data, cap_chunk_data;
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
uint32_t snap_take(void)
{
	if (n_snaps == cap_snaps) {
		cap_snaps = cap_snaps ? cap_snaps * 2 : 1024;
		snaps = realloc(snaps, cap_snaps * n_chunks * sizeof(*snaps));
	}
	for (size_t c = 0; c < n_chunks; c++)
		snaps[n_snaps * n_chunks + c] = chunk_intern(fbuf + c * CHUNK);
	return (uint32_t)n_snaps++;
}

void snap_restore(uint32_t id)
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

/* ---- the block records: each slot's file in the state dir, interned ---- */

#define MAX_RECS 256
static uint8_t *rec_data[MAX_RECS]; /* id 0: no record */
static size_t rec_len[MAX_RECS], n_recs = 1;

static char *record_path(int s)
{
	char *p;

	if (asprintf(&p, "%s/blocks-%s-%s-rootfs.bin", state_dir, G->name, G->slots[s].name) < 0)
		die("oom");
	return p;
}

static uint16_t record_intern(const uint8_t *b, size_t n)
{
	for (size_t i = 1; i < n_recs; i++)
		if (rec_len[i] == n && !memcmp(rec_data[i], b, n))
			return (uint16_t)i;
	if (n_recs == MAX_RECS)
		die("too many distinct block records");
	rec_data[n_recs] = malloc(n);
	memcpy(rec_data[n_recs], b, n);
	rec_len[n_recs] = n;
	return (uint16_t)n_recs++;
}

void records_take(uint16_t ret[N_SLOTS])
{
	for (int s = 0; s < N_SLOTS; s++) {
		_cleanup_free_ char *p = record_path(s);
		struct stat st;
		uint8_t *b;
		size_t n;

		ret[s] = 0;
		if (stat(p, &st) < 0)
			continue;
		b = slurp(p, &n);
		ret[s] = record_intern(b, n);
		free(b);
	}
}

void records_restore(const uint16_t rec[N_SLOTS])
{
	for (int s = 0; s < N_SLOTS; s++) {
		_cleanup_free_ char *p = record_path(s);
		int fd;

		if (!rec[s]) {
			if (unlink(p) < 0 && errno != ENOENT)
				die("unlink %s: %m", p);
			continue;
		}
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || util_pwrite_full(fd, rec_data[rec[s]], rec_len[rec[s]], 0) !=
		    (ssize_t)rec_len[rec[s]])
			die("restoring %s", p);
		close(fd);
	}
}

/* ---- env copies as U-Boot reads them (redundant: crc, flags, data) ---- */

struct envcopy envcopy_of(int k)
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
int env_active(const struct envcopy *c)
{
	if (!c[0].valid || !c[1].valid)
		return c[0].valid ? 0 : c[1].valid ? 1 : -1;
	if (c[0].flags == 255 && c[1].flags == 0)
		return 1;
	if (c[1].flags == 255 && c[0].flags == 0)
		return 0;
	return c[1].flags > c[0].flags ? 1 : 0;
}

/* ---- the live state during a transition ---- */

void live_drop_install(struct live *lv)
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
		.allow_unsigned = true, .activate = true, .state_dir = state_dir,
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
void restore(const struct node *n, struct live *lv)
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
	records_restore(n->rec);
}

/* ---- events ---- */

int slot_state_now(struct env *e, struct slot_env *st)
{
	struct error serr = {};

	return slot_env_load_group(st, G, env_get_dup, e, &serr);
}

/* One slot operation as the daemon / flashctl do it: load, compute, one
 * store (slot_change), after the read of a slot it promotes when read
 * (slot_verify_change: an operator's activate, mark-good, rollback; the
 * health check changes the booted slot, unread). slot -2 = the booted slot,
 * -3 the other. A slot read and found equal to its signed image is
 * known to flashd now: its rot no longer excuses it (I6). */
static int do_slot_op(struct live *lv, enum slot_op op, int slot, unsigned flags, bool read)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_change_result res;
	int r, p;

	if (slot == -2)
		slot = lv->booted;
	else if (slot == -3)
		slot = 1 - lv->booted;
	r = env_open_layout(L, target, NULL, 0, &e, &eerr);
	if (r < 0) {
		snprintf(lv->note, sizeof(lv->note), "env: %.140s", eerr.msg);
		return r;
	}
	const struct slot_change c = { .op = op, .slot = slot, .booted = lv->booted,
				       .flags = flags };
	r = read ? slot_verify_change(e, L, target, G, state_dir, &c, &res, &eerr) :
		   slot_change(e, G, &c, &res, &eerr);
	if (r < 0) {
		snprintf(lv->note, sizeof(lv->note), "refused: %.140s", eerr.msg);
		return r;
	}
	p = read ? slot_change_promotes(&res.before, lv->booted, op, slot, flags) : -1;
	if (p >= 0) {
		lv->sh.rotted[p] = false;
		snprintf(lv->note, sizeof(lv->note), "slot %s read as its signed image",
			 G->slots[p].name);
	}
	return r;
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
		do_slot_op(lv, SLOT_OP_FALLBACK, -2, 0, false);
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

/* A whole install, in one event: its units one after the other. */
static void whole_install(struct live *lv, int bundle, int slot)
{
	install_begin(lv, bundle, slot);
	while (install_unit(lv) > 0)
		;
	live_drop_install(lv);
}

/* A whole install on a board whose cmdline names no slot (booted by
 * hand): nothing may write the running root (I3). */
static void unknown_booted_install(struct live *lv, int bundle)
{
	cmdline_override = cmdline_unknown;
	whole_install(lv, bundle, -2);
	cmdline_override = NULL;
}

/* Is the booted system up (a daemon and a shell)? A slot that does not
 * boot (dud, junk, erased) panics: only a reset follows. */
bool running(const struct node *n)
{
	return n->booted >= 0 && lbl_bootable(n->sh.lbl[n->booted]);
}

/* The daemon runs the health check at start when status says so. */
bool health_due(const struct node *n)
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

bool is_manual(const struct event *ev)
{
	return ev->kind == EV_DAEMON_OP || ev->kind == EV_OFFLINE_OP || ev->kind == EV_CORRUPT_ENV ||
	       ev->kind == EV_LEGACY_ENV || ev->kind == EV_MEDIA || ev->kind == EV_RAW_ENV ||
	       ev->kind == EV_UNKNOWN_BOOTED;
}

void run_event(struct live *lv, const struct event *ev)
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
	case EV_INSTALL_WHOLE:
		whole_install(lv, ev->arg, ev->slot);
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
		r = do_slot_op(lv, (enum slot_op)ev->arg, ev->slot, ev->flags, is_manual(ev));
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
