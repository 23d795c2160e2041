/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fixture of the update engine's tests (install-fixture.h). */
#include "install-fixture.h"

/* ---- fixture: keys, keyring, the booted-slot cmdline ---- */

void *key_trusted, *key_untrusted;
struct keyring *ring;
char *cmdline_a;
char *cmdline_factory; /* no slot named: a board provisioned from outside */

void sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned len;

	assert_int_equal(EVP_Digest(p, n, out, &len, EVP_sha256(), NULL), 1);
}


char *lock;

int group_setup(void **state)
{
	if (th_sh("mksquashfs -version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "mksquashfs (squashfs-tools) missing: skipping\n");
		exit(77);
	}
	th_keys_new(false, &key_trusted, &key_untrusted, &ring);
	assert_int_equal(keyring_count(ring), 1);
	cmdline_a = th_path("cmdline-a");
	th_write(cmdline_a, "console=ttyS0,115200 flashd.slot=A ro\n", 39);
	cmdline_factory = th_path("cmdline-factory");
	th_write(cmdline_factory, "console=ttyS0\n", 14);
	setenv("SOURCE_DATE_EPOCH", "1767225600", 1);
	/* a private env lock: the host's is shared with every other test */
	lock = th_path("fw_printenv.lock");
	env_set_lock(lock, ENV_LOCK_TIMEOUT_MS);
	return 0;
}

int group_teardown(void **state)
{
	free(lock);
	th_keys_free(key_trusted, key_untrusted, ring);
	free(cmdline_a);
	free(cmdline_factory);
	return 0;
}

/* ---- images and bundles ---- */


/* Incompressible bytes, so image sizes are what the test asks for. */
void rnd_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		buf[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

void image_hash(struct image *im)
{
	uint8_t *buf = th_read(im->path, &im->len);

	sha256(buf, im->len, im->sha);
	free(buf);
}

void image_free(struct image *im)
{
	free(im->path);
	im->path = NULL;
}

struct image make_raw(const char *name, size_t len, uint64_t seed)
{
	struct image im = { th_path(name), 0, { 0 } };
	uint8_t *buf = malloc(len);

	assert_non_null(buf);
	rnd_fill(buf, len, seed);
	th_write(im.path, buf, len);
	free(buf);
	image_hash(&im);
	return im;
}

/* A real squashfs holding data as /payload (plus a small /etc), with fixed
 * timestamps so equal data gives an equal image. */
struct image make_sqfs_data(const char *name, const uint8_t *data, size_t len)
{
	struct image im = { th_path(name), 0, { 0 } };
	char *src = testlib_asprintf("%s.d", im.path), *f;

	assert_int_equal(th_sh("rm -rf '%s' && mkdir -p '%s/etc'", src, src), 0);
	f = testlib_asprintf("%s/payload", src);
	th_write(f, data, len);
	free(f);
	f = testlib_asprintf("%s/etc/os-release", src);
	th_write(f, "NAME=flashd-test\n", 17);
	free(f);
	assert_int_equal(th_sh("env -u SOURCE_DATE_EPOCH mksquashfs '%s' '%s' -noappend -quiet -no-progress -comp gzip "
			       "-all-root -mkfs-time 1700000000 -all-time 1700000000 >/dev/null",
			       src, im.path), 0);
	assert_int_equal(th_sh("rm -rf '%s'", src), 0);
	free(src);
	image_hash(&im);
	return im;
}

struct image make_sqfs(const char *name, size_t len, uint64_t seed)
{
	uint8_t *buf = malloc(len);
	struct image im;

	assert_non_null(buf);
	rnd_fill(buf, len, seed);
	im = make_sqfs_data(name, buf, len);
	free(buf);
	return im;
}


/* no_index: format 1.0 */
char *make_bundle_ex(const char *name, const char *compatible, const struct bspec *s,
		     bool no_index)
{
	struct bundle_create_image imgs[2];
	size_t n = 0;
	struct error err = {};
	struct bundle_create_result res;
	char *out = th_path(name);
	int fd, r;

	if (s->rootfs)
		imgs[n++] = (struct bundle_create_image){ "rootfs", s->rootfs->path,
			BUNDLE_IMAGE_SQUASHFS, s->gzip ? BUNDLE_COMPRESSION_GZIP : BUNDLE_COMPRESSION_NONE };
	if (s->kernel)
		imgs[n++] = (struct bundle_create_image){ s->member ? s->member : "kernel",
			s->kernel->path, BUNDLE_IMAGE_RAW,
			s->gzip ? BUNDLE_COMPRESSION_GZIP : BUNDLE_COMPRESSION_NONE };
	struct bundle_create_params p = {
		.compatible = s->compatible ? s->compatible : compatible,
		.version = s->version,
		.description = "install test",
		.images = imgs,
		.n_images = n,
		.keys = &s->key,
		.n_keys = s->key ? 1 : 0,
		.gzip_level = 1,
		.no_index = no_index,
	};
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	r = bundle_create(&p, fd, &res, &err);
	if (r < 0)
		fail_msg("bundle_create %s: %d %s", name, r, err.msg);
	close(fd);
	return out;
}

char *make_bundle(const char *name, const char *compatible, const struct bspec *s)
{
	return make_bundle_ex(name, compatible, s, false);
}

/* A hand-framed bundle (header, manifest as given, one signature by key,
 * payload): for manifests bundle_create will not write. */
char *craft_bundle(const char *name, const char *manifest, unsigned major, unsigned minor,
		   void *key, const void *payload, size_t plen)
{
	size_t mlen = strlen(manifest);
	size_t len = BUNDLE_HEADER_SIZE + mlen + BUNDLE_SIG_ENTRY_SIZE + plen;
	uint8_t *b = calloc(1, len);
	uint8_t *e = b + BUNDLE_HEADER_SIZE + mlen;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = KEYRING_SIG_SIZE;
	char *out = th_path(name);
	uint32_t c;

	memcpy(b, BUNDLE_MAGIC, 8);
	b[8] = major;
	b[10] = minor;
	b[12] = mlen & 0xff;
	b[13] = mlen >> 8;
	b[14] = mlen >> 16;
	b[16] = 1;
	c = crc32(0, b, 20);
	for (int i = 0; i < 4; i++)
		b[20 + i] = c >> (8 * i);
	memcpy(b + BUNDLE_HEADER_SIZE, manifest, mlen);
	assert_int_equal(bundle_create_key_id(key, e), 0);
	assert_int_equal(EVP_DigestSignInit(ctx, NULL, NULL, NULL, key), 1);
	assert_int_equal(EVP_DigestSign(ctx, e + KEYRING_ID_SIZE, &siglen,
					(const uint8_t *)manifest, mlen), 1);
	EVP_MD_CTX_free(ctx);
	memcpy(b + len - plen, payload, plen);
	th_write(out, b, len);
	free(b);
	return out;
}

/* Copy of a bundle file with one byte xor'ed (or cut to len). */
char *mutate_bundle(const char *src, const char *name, size_t off, uint8_t xor,
		    size_t cut_len)
{
	size_t len;
	uint8_t *b = th_read(src, &len);
	char *out = th_path(name);

	if (cut_len)
		len = MIN(len, cut_len);
	else
		b[off] ^= xor;
	th_write(out, b, len);
	free(b);
	return out;
}

struct bundle_manifest bundle_manifest_of(const char *path)
{
	size_t len;
	uint8_t *b = th_read(path, &len);
	uint32_t ms = b[12] | b[13] << 8 | b[14] << 16 | (uint32_t)b[15] << 24;
	struct bundle_manifest m;
	struct error err = {};

	assert_int_equal(bundle_manifest_parse(b + BUNDLE_HEADER_SIZE, ms, &m, &err), 0);
	m.manifest_size = ms;
	free(b);
	return m;
}

/* ---- a simulated board ---- */


/* A bundle for the rig's board signed by the trusted key: rootfs and
 * kernel (NULL: none), gzip'd or not. */
char *trusted_bundle(struct rig *r, const char *name, const char *version,
		     const struct image *rootfs, const struct image *kernel, bool gzip)
{
	return make_bundle(name, r->l->compatible, &(struct bspec){ version, rootfs, kernel, NULL,
			   key_trusted, NULL, gzip });
}


static const struct env_var base_vars[] = {
	{ "bootcmd", "run flashd_boot" },
	{ "bootdelay", "0" },
	{ "ethaddr", "02:00:00:00:00:01" },
	{ "BOOT_ORDER", "A B" },
	{ "BOOT_A_LEFT", "3" },
	{ "BOOT_B_LEFT", "3" },
	{ "FLASHD_A_VERSION", "1.0" },
	{ "FLASHD_B_VERSION", "0.9" },
	{ "FLASHD_A_STATE", "verified" },
	{ "FLASHD_B_STATE", "verified" },
};


void rig_new(struct rig *r, const char *layout, const char *simname)
{
	struct error eerr = {};
	struct env *e = NULL;
	const struct layout_device *d;

	*r = (struct rig){ 0 };
	r->l = testlib_layout_load(layout);
	r->g = &r->l->groups[0];
	d = &r->l->devices[0];
	r->eb = d->erasesize;
	r->sim = th_path(simname);
	r->target = testlib_asprintf("sim:%s", r->sim);
	struct nsim_geometry geo = testlib_sim_geometry(d);
	assert_int_equal(nsim_create(r->sim, &geo, NSIM_CREATE_FORCE), 0);
	if (env_open_layout(r->l, r->target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &eerr) < 0 ||
	    env_init_default(e, NULL, base_vars, ELEMENTSOF(base_vars), false, &eerr) < 0)
		fail_msg("provisioning the env of %s: %s", r->target, eerr.msg);
	env_close(e);
	r->env_store_erases = sim_info(r).cnt.erases;
	r->env_store_programs = sim_info(r).cnt.programs;
	assert_int_equal(env_block_erases(r), r->env_store_erases);
	assert_true(r->env_store_erases > 0 && r->env_store_programs > 0);
	r->base_env = env_dump(r);
}

void rig_free(struct rig *r)
{
	if (!getenv("FLASHD_TEST_KEEP"))
		unlink(r->sim);
	free(r->sim);
	free(r->target);
	free(r->base_env);
	layout_free(r->l);
}

const struct layout_partition *member_part(struct rig *r, int slot, const char *member)
{
	const struct layout_slot *s = &r->g->slots[slot];

	return !strcmp(member, "kernel") ? s->kernel.part : s->rootfs.part;
}

uint64_t part_block(struct rig *r, const struct layout_partition *p, uint64_t i)
{
	return p->offset / r->eb + i;
}

struct nsim *sim_open(struct rig *r)
{
	struct nsim *s = NULL;

	assert_int_equal(nsim_open(r->sim, true, &s), 0);
	return s;
}

struct nsim_info sim_info(struct rig *r)
{
	struct nsim *s = sim_open(r);
	struct nsim_info i;

	assert_int_equal(nsim_get_info(s, &i), 0);
	nsim_close(s);
	return i;
}

/* Erases of the blocks the env copies live in, since the chip was made. */
uint64_t env_block_erases(struct rig *r)
{
	struct nsim *s = sim_open(r);
	uint64_t n = 0;

	for (size_t i = 0; i < r->l->env.n_copies; i++) {
		const struct layout_env_copy *c = &r->l->env.copies[i];
		uint64_t first = (c->part->offset + c->offset) / r->eb;
		for (uint64_t b = first; b < first + c->sector_size / r->eb; b++) {
			struct nsim_block blk;
			assert_int_equal(nsim_get_block(s, b, &blk), 0);
			n += blk.erase_count;
		}
	}
	nsim_close(s);
	return n;
}

/* The chip's erase and program counters without the env stores' ops: what
 * the update engine's own flash handles did. */
struct nsim_counters sim_ops(struct rig *r)
{
	struct nsim_counters c = sim_info(r).cnt;
	uint64_t stores = env_block_erases(r) / r->env_store_erases;

	c.erases -= stores * r->env_store_erases;
	c.programs -= stores * r->env_store_programs;
	return c;
}

/* ---- the env: all variables, canonical (sorted lines) ---- */

int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* lines of dump (sorted, "name=value"), with changes applied: pairs of
 * name, value (NULL deletes), ended by NULL */
char *env_canon(const char *dump, va_list ap)
{
	char *lines[128], *copy = strdup(dump), *save = NULL, *buf = NULL;
	size_t n = 0, len = 0;
	const char *name;
	FILE *f;

	for (char *t = strtok_r(copy, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		assert_true(n < ELEMENTSOF(lines));
		lines[n++] = strdup(t);
	}
	while (ap && (name = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		size_t nl = strlen(name), k;
		for (k = 0; k < n; k++)
			if (!strncmp(lines[k], name, nl) && lines[k][nl] == '=')
				break;
		if (k < n) {
			free(lines[k]);
			lines[k] = lines[--n];
		}
		if (value) {
			assert_true(n < ELEMENTSOF(lines));
			lines[n++] = testlib_asprintf("%s=%s", name, value);
		}
	}
	qsort(lines, n, sizeof(lines[0]), cmp_str);
	f = open_memstream(&buf, &len);
	for (size_t k = 0; k < n; k++) {
		fprintf(f, "%s\n", lines[k]);
		free(lines[k]);
	}
	fclose(f);
	free(copy);
	return buf;
}

char *env_with(const char *dump, ...)
{
	va_list ap;
	char *s;

	va_start(ap, dump);
	s = env_canon(dump, ap);
	va_end(ap);
	return s;
}

/* Every variable; the env must open as valid (no ALLOW_BLANK). */
char *env_dump(struct rig *r)
{
	struct env *e = NULL;
	struct error err = {};
	void *it = NULL;
	const char *n, *v;
	char *buf = NULL, *canon;
	size_t len = 0;
	FILE *f;
	int k;

	k = env_open_layout(r->l, r->target, NULL, 0, &e, &err);
	if (k < 0)
		fail_msg("the env of %s does not open: %d %s", r->target, k, err.msg);
	f = open_memstream(&buf, &len);
	while (env_next(e, &it, &n, &v) > 0)
		fprintf(f, "%s=%s\n", n, v);
	fclose(f);
	env_close(e);
	canon = env_with(buf, NULL);
	free(buf);
	return canon;
}

void expect_env(struct rig *r, const char *want, const char *ctx)
{
	char *got = env_dump(r);

	if (strcmp(got, want))
		fail_msg("%s: env\n%s\nexpected\n%s", ctx, got, want);
	free(got);
}

/* The state after a failed install of slot B: out of BOOT_ORDER, no
 * version, its install record rec ("installing" when the end could not be
 * recorded: a power cut). */
char *env_b_record(struct rig *r, const char *rec)
{
	return env_with(r->base_env, "BOOT_ORDER", "A", "BOOT_B_LEFT", "0",
			"FLASHD_B_VERSION", NULL, "FLASHD_B_STATE", rec, NULL);
}

char *env_b_marked_bad(struct rig *r)
{
	return env_b_record(r, "failed");
}

/* The env copies in the simulator file, one after the other in buf:
 * read into it, or written from it. */
void env_copies_io(struct rig *r, uint8_t *buf, bool write)
{
	int fd = open(r->sim, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
	size_t pos = 0;

	assert_true(fd >= 0);
	for (size_t i = 0; i < r->l->env.n_copies; i++) {
		const struct layout_env_copy *c = &r->l->env.copies[i];
		off_t at = nsim_data_offset() + c->part->offset + c->offset;

		assert_int_equal(write ? util_pwrite_full(fd, buf + pos, c->size, at) :
					 util_pread_full(fd, buf + pos, c->size, at),
				 (ssize_t)c->size);
		pos += c->size;
	}
	close(fd);
}

/* Raw bytes of the env copies in the simulator file. */
uint8_t *env_raw(struct rig *r, size_t *ret_len)
{
	size_t total = 0;
	uint8_t *buf;

	for (size_t i = 0; i < r->l->env.n_copies; i++)
		total += r->l->env.copies[i].size;
	buf = malloc(total);
	assert_non_null(buf);
	env_copies_io(r, buf, false);
	*ret_len = total;
	return buf;
}

void env_raw_restore(struct rig *r, uint8_t *raw)
{
	env_copies_io(r, raw, true);
}

/* ---- what U-Boot boots, and what is in a slot ---- */

/* The shipped boot script's choice on the state in the env. */
int boot_pick(struct rig *r)
{
	struct env *e = NULL;
	struct error eerr = {};
	struct error serr = {};
	struct slot_env st, next;
	struct slot_changes ch;
	int k;

	assert_int_equal(env_open_layout(r->l, r->target, NULL, 0, &e, &eerr), 0);
	k = slot_env_load_group(&st, r->g, env_get_dup, e, &serr);
	env_close(e);
	if (k < 0)
		fail_msg("slot env: %s", serr.msg);
	return slot_boot_select(&st, &next, &ch);
}

/* The running slot A keeps failing to boot: the script uses up its tries
 * and resets the board; it must never try slot B, which holds a partial
 * or unverified image. */
void boot_never_b(struct rig *r, const char *ctx)
{
	struct env *e = NULL;
	struct error eerr = {};
	struct error serr = {};
	struct slot_env st, next;
	struct slot_changes ch;

	assert_int_equal(env_open_layout(r->l, r->target, NULL, 0, &e, &eerr), 0);
	assert_int_equal(slot_env_load_group(&st, r->g, env_get_dup, e, &serr), 0);
	env_close(e);
	for (unsigned i = 0; i <= st.max_tries; i++) {
		int k = slot_boot_select(&st, &next, &ch);
		if (k == -EAGAIN)
			return;
		if (k != 0)
			fail_msg("%s: boot %u after A failed %u times picks %d, not A", ctx, i + 1,
				 i, k);
		st = next;
	}
	fail_msg("%s: A failed %u times and the script still boots it", ctx, st.max_tries + 1);
}

/* After a failed install: slot B is marked bad (env_b_marked_bad), the
 * board boots A and never tries B. */
void expect_b_marked_bad(struct rig *r, const char *ctx)
{
	char *want = env_b_marked_bad(r);

	expect_env(r, want, ctx);
	free(want);
	if (boot_pick(r) != 0)
		fail_msg("%s: the board does not boot A", ctx);
	boot_never_b(r, ctx);
}

/* sha256 of the first len bytes of the logical stream (bad blocks
 * skipped, as the kernel's mtdblock/nanddump --bb=skipbad would see it). */
void member_sha(struct rig *r, int slot, const char *member, uint64_t len, uint8_t out[32])
{
	struct board *b = NULL;
	struct flash *f = NULL;
	struct flashio_reader *rd = NULL;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t *buf = malloc(r->eb);
	unsigned mdlen;

	assert_int_equal(board_open(r->l, r->target, false, &b), 0);
	assert_int_equal(board_open_partition(b, member_part(r, slot, member), &f), 0);
	assert_int_equal(flashio_reader_new(f, &rd), 0);
	assert_int_equal(EVP_DigestInit_ex(md, EVP_sha256(), NULL), 1);
	while (len > 0) {
		ssize_t n = flashio_reader_read(rd, buf, MIN(len, r->eb));
		if (n <= 0)
			fail_msg("reading %s of slot %s: %zd with %" PRIu64 " bytes to go", member,
				 r->g->slots[slot].name, n, len);
		EVP_DigestUpdate(md, buf, n);
		len -= n;
	}
	assert_int_equal(EVP_DigestFinal_ex(md, out, &mdlen), 1);
	EVP_MD_CTX_free(md);
	flashio_reader_free(rd);
	flash_close(f);
	board_close(b);
	free(buf);
}

bool slot_holds(struct rig *r, int slot, const struct image *rootfs,
		const struct image *kernel)
{
	uint8_t md[32];

	member_sha(r, slot, "rootfs", rootfs->len, md);
	if (memcmp(md, rootfs->sha, 32))
		return false;
	if (kernel) {
		member_sha(r, slot, "kernel", kernel->len, md);
		if (memcmp(md, kernel->sha, 32))
			return false;
	}
	return true;
}

/* ---- running the engine ---- */



int run_install(struct rig *r, const char *bundle, const struct ropts *o, struct rres *res)
{
	static const struct ropts none;
	struct board *b = NULL;
	struct install *in = NULL;
	int fd, k;

	if (!o)
		o = &none;
	*res = (struct rres){ .err = {} };
	assert_int_equal(board_open(r->l, r->target, true, &b), 0);
	struct install_params p = {
		.board = b,
		.target = r->target,
		.cmdline = o->cmdline ? o->cmdline : cmdline_a,
		.slot = o->slot,
		.keyring = ring,
		.activate = !o->no_activate,
		.progress = o->progress,
		.userdata = o->userdata,
		.state_dir = o->state_dir,
		.downgrade = o->downgrade,
		.allow_downgrade = o->allow_downgrade,
		.decided = o->decided,
	};
	assert_int_equal(install_new(&p, &in), 0);
	fd = open(bundle, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	if (o->source) {
		struct source *src = NULL;
		assert_int_equal(source_new_fd(fd, &src, NULL), 0);
		k = install_run_source(in, src, o->cancel, &res->err);
		source_free(src);
	} else {
		k = install_run_fd(in, fd, o->cancel, &res->err);
	}
	close(fd);
	res->stats = *install_get_stats(in);
	res->mem_peak = install_mem_peak(in);
	res->phase = install_get_phase(in);
	if (install_get_slot(in))
		snprintf(res->slot, sizeof(res->slot), "%s", install_get_slot(in));
	install_free(in);
	board_close(b);
	return k;
}

/* The install of bundle (into B) fails with code, its message holding
 * every one of the parts (up to NULL). */
void __attribute__((sentinel)) install_refused(struct rig *r, const char *bundle,
					       struct rres *res, int code, ...)
{
	const char *part;
	va_list ap;
	int k = run_install(r, bundle, NULL, res);

	if (k != code)
		fail_msg("got %d \"%s\", expected %d", k, res->err.msg, code);
	va_start(ap, code);
	while ((part = va_arg(ap, const char *)))
		if (!strstr(res->err.msg, part))
			fail_msg("\"%s\" does not say \"%s\"", res->err.msg, part);
	va_end(ap);
}

void install_ok(struct rig *r, const char *bundle, const struct ropts *o, struct rres *res)
{
	struct rres tmp;
	int k = run_install(r, bundle, o, res ? res : &tmp);

	if (k != 0)
		fail_msg("install of %s: %d %s", bundle, k, (res ? res : &tmp)->err.msg);
}

/* ---- good installs ---- */


void on_progress(void *userdata, const struct install_progress *p)
{
	struct progress_log *pl = userdata;

	if (pl->calls && (p->percent < pl->last_percent || p->phase < pl->last_phase))
		pl->regress = true;
	if (p->percent > 100 || (p->total && p->done > p->total))
		pl->regress = true;
	pl->calls++;
	pl->last_percent = p->percent;
	pl->last_phase = p->phase;
	if (p->slot)
		snprintf(pl->slot, sizeof(pl->slot), "%s", p->slot);
}

void expect_installed_b(struct rig *r, const char *version, const struct image *rootfs,
			const struct image *kernel)
{
	char *want = env_with(r->base_env, "BOOT_ORDER", "B A", "BOOT_B_LEFT", "3",
			      "FLASHD_B_VERSION", version, "FLASHD_B_STATE", "verified", NULL);

	/* U-Boot picks B, and B holds exactly the image bytes */
	assert_int_equal(boot_pick(r), 1);
	assert_true(slot_holds(r, 1, rootfs, kernel));
	expect_env(r, want, "after the install");
	free(want);
}

void sim_powercut(struct rig *r, int64_t n, bool tear)
{
	struct nsim *s = sim_open(r);

	assert_int_equal(nsim_set_powercut(s, n, tear), 0);
	nsim_close(s);
}

/* The board comes back: power on, then everything is opened afresh. */
bool sim_power_on(struct rig *r)
{
	struct nsim *s = sim_open(r);
	struct nsim_info i;

	assert_int_equal(nsim_get_info(s, &i), 0);
	assert_int_equal(nsim_power_on(s), 0);
	nsim_close(s);
	return i.power_cut;
}

/* ---- re-install: unchanged blocks cost nothing ---- */

unsigned blocks_differing(const struct image *a, const struct image *b, uint32_t eb)
{
	size_t la, lb;
	uint8_t *x = th_read(a->path, &la), *y = th_read(b->path, &lb);
	unsigned n = 0;

	for (size_t off = 0; off < MAX(la, lb); off += eb) {
		size_t na = off < la ? MIN(eb, la - off) : 0, nb = off < lb ? MIN(eb, lb - off) : 0;
		n += na != nb || memcmp(x + off, y + off, na);
	}
	free(x);
	free(y);
	return n;
}

/* ---- adaptive installs (install_run_source, format 2.0 index, block records) ---- */

/* A copy of base with one byte flipped in each block of blocks[] (past
 * the squashfs superblock: the image stays acceptable). */
struct image image_variant(struct rig *r, const struct image *base, const char *name,
			   const unsigned *blocks, size_t n)
{
	size_t len;
	uint8_t *b = th_read(base->path, &len);
	struct image im = { th_path(name), 0, { 0 } };

	for (size_t i = 0; i < n; i++)
		b[(size_t)blocks[i] * r->eb + 1000] ^= 0x5a;
	th_write(im.path, b, len);
	free(b);
	image_hash(&im);
	return im;
}

void set_env_var(struct rig *r, const char *name, const char *value)
{
	struct env *e = NULL;
	struct error err = {};

	assert_int_equal(env_open_layout(r->l, r->target, NULL, 0, &e, &err), 0);
	assert_int_equal(env_store_var(e, name, value, &err), 0);
	env_close(e);
}

/* XOR mask into byte off of slot's rootfs, behind flashd's back (no bad
 * blocks there). */
void xor_slot_byte(struct rig *r, int slot, uint64_t off, uint8_t mask)
{
	const struct layout_partition *p = member_part(r, slot, "rootfs");
	int fd = open(r->sim, O_RDWR | O_CLOEXEC);
	uint64_t at = nsim_data_offset() + p->offset + off;
	uint8_t c;

	assert_true(fd >= 0);
	assert_int_equal(util_pread_full(fd, &c, 1, at), 1);
	c ^= mask;
	assert_int_equal(util_pwrite_full(fd, &c, 1, at), 1);
	close(fd);
}

/* XOR mask into byte in_block of logical block k of slot B's rootfs. */
void xor_b_byte(struct rig *r, unsigned k, uint32_t in_block, uint8_t mask)
{
	xor_slot_byte(r, 1, (uint64_t)k * r->eb + in_block, mask);
}

/* A byte of block k changed (a write outside flashd) */
void corrupt_b_block(struct rig *r, unsigned k)
{
	xor_b_byte(r, k, 4000, 0xff);
}


/* A signed bundle NAME of the rootfs image img alone, for the adaptive board */
char *adaptive_bundle(struct adaptive *a, const char *name, const char *version,
		      const struct image *img)
{
	return trusted_bundle(&a->r, name, version, img, NULL, false);
}

void adaptive_new(struct adaptive *a, const char *name)
{
	char *sim = testlib_asprintf("%s.sim", name), *img = testlib_asprintf("%s-v1.sqfs", name);
	char *b = testlib_asprintf("%s-v1.fbd", name), *st = testlib_asprintf("%s-state", name);
	struct bundle_manifest m;

	rig_new(&a->r, "nandsim-128m", sim);
	a->state = th_path(st);
	a->v1 = make_sqfs(img, 20 * 128 * 1024 + 5000, 91);
	a->b1 = adaptive_bundle(a, b, "1.0", &a->v1);
	m = bundle_manifest_of(a->b1);
	bundle_manifest_layout(&m, 1);
	assert_int_equal(m.block_size, a->r.eb);
	a->n = m.images[0].n_blocks;
	a->prefix = m.payload_offset;
	free(sim);
	free(img);
	free(b);
	free(st);
}

void adaptive_free(struct adaptive *a)
{
	th_sh("rm -rf '%s'", a->state);
	free(a->state);
	free(a->b1);
	image_free(&a->v1);
	rig_free(&a->r);
}

void adaptive_ok(struct adaptive *a, const char *bundle, struct rres *res)
{
	struct progress_log pl = { 0 };

	install_ok(&a->r, bundle, &(struct ropts){ .state_dir = a->state, .source = true,
						  .progress = on_progress, .userdata = &pl }, res);
	assert_true(res->stats.adaptive);
	/* progress never steps back, whatever was skipped (it once fell from
	 * 98 % to the share of bytes written at the end of the image) */
	assert_false(pl.regress);
	assert_int_equal(pl.last_percent, 100);
}

/* The adaptive board NAME with v1 installed (adaptively), and ret_v2: v1
 * with the blocks changed[] changed, in the bundle returned (NAME-v2.fbd). */
char *adaptive_v2(struct adaptive *a, const char *name, const unsigned *changed, size_t n,
		  struct image *ret_v2)
{
	_cleanup_free_ char *img = testlib_asprintf("%s-v2.sqfs", name);
	_cleanup_free_ char *bundle = testlib_asprintf("%s-v2.fbd", name);
	struct rres res;

	adaptive_new(a, name);
	adaptive_ok(a, a->b1, &res);
	*ret_v2 = image_variant(&a->r, &a->v1, img, changed, n);
	return adaptive_bundle(a, bundle, "2.0", ret_v2);
}

TEST_GROUP(group_setup, group_teardown);
