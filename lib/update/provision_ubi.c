/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI partitions for provisioning (see include/provision_ubi.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "flash.h"
#include "flash_ubi.h"
#include "hash.h"
#include "provision_ubi.h"
#include "ubinize.h"
#include "util.h"

#define UBIFORMAT "ubiformat"

static uint64_t bad_limit(const struct layout_ubi *u)
{
	const struct layout_device *d = u->part->dev;

	/* CONFIG_MTD_UBI_BEB_LIMIT (20 per 1024) of the whole chip, NAND only */
	return d->type == FLASH_NAND ? DIV_ROUND_UP(d->size / d->erasesize * 20, 1024) : 0;
}

int provision_ubi_plan(const struct layout_ubi *u, uint64_t bad_pebs,
		       struct provision_ubi_plan *ret, struct error *err)
{
	struct provision_ubi_plan p = { .pebs = u->part->size / u->part->dev->erasesize,
					.bad_pebs = bad_pebs, .bad_limit = bad_limit(u) };
	uint64_t lebs;

	if (layout_ubi_capacity(u, &p.leb_size, &lebs) < 0)
		return error_set(err, -EINVAL, "partition %s: erase blocks too small for UBI",
				 u->part->name);
	/* the reserve covers bad blocks up to the limit; more eat volume space */
	p.lebs_avail = bad_pebs > p.bad_limit ?
		(lebs > bad_pebs - p.bad_limit ? lebs - (bad_pebs - p.bad_limit) : 0) : lebs;
	for (size_t i = 0; i < u->n_volumes; i++)
		p.lebs_needed += DIV_ROUND_UP(u->volumes[i].size, p.leb_size);
	if (p.lebs_needed > p.lebs_avail)
		return error_set(err, -ENOSPC, "partition %s: the UBI volumes need %" PRIu64 " LEBs "
				 "of %" PRIu64 " bytes, %" PRIu64 " are left (%" PRIu64 " erase blocks, "
				 "%" PRIu64 " bad, reserve for %" PRIu64 " bad)", u->part->name,
				 p.lebs_needed, p.leb_size, p.lebs_avail, p.pebs, bad_pebs, p.bad_limit);
	*ret = p;
	return 0;
}

void provision_ubi_describe(const struct layout_ubi *u, bool factory, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "%s, %zu volumes:", factory ?
				    "UBI image (ubinize semantics) on the erased partition" :
				    "UBI: ubiformat (erase counters kept)", u->n_volumes);

	for (size_t i = 0; i < u->n_volumes && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s %s %" PRIu64 " KiB %s", i ? "," : "",
				      u->volumes[i].name, u->volumes[i].size / 1024,
				      layout_ubi_vol_type_to_string(u->volumes[i].type));
}

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	for (const char *p = path ? path : "/usr/sbin:/usr/bin:/sbin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);
		if (access(buf, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/* A mount from ubiN: a volume ("ubi0:name", "/dev/ubi0_3") or its ubiblock. */
static int check_unmounted(int ubi, const char *mounts, struct error *err)
{
	_cleanup_fclose_ FILE *f = fopen(mounts, "re");
	char line[1024], a[32], b[32], c[32];

	if (!f)
		return 0;
	snprintf(a, sizeof(a), "ubi%d:", ubi);
	snprintf(b, sizeof(b), "/dev/ubi%d_", ubi);
	snprintf(c, sizeof(c), "/dev/ubiblock%d_", ubi);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, a, strlen(a)) || !strncmp(line, b, strlen(b)) ||
		    !strncmp(line, c, strlen(c))) {
			line[strcspn(line, "\n")] = '\0';
			return error_set(err, -EBUSY, "ubi%d is in use (%s): provisioning reformats "
					 "it; unmount it first", ubi, line);
		}
	return 0;
}

int provision_ubi_check_system(const struct layout_ubi *u, const char *mtd_sysfs,
			       const char *mounts, struct error *err)
{
	char dev[64];
	unsigned mtd;
	int r, ubi;

	if ((r = flash_mtd_find_partition(mtd_sysfs, u->part->name, dev, sizeof(dev), &mtd, err)) < 0)
		return r;
	if (access(FLASH_UBI_CTRL, F_OK) < 0)
		return error_set(err, -errno, "partition %s: %s: %s (the kernel's ubi driver is not "
				 "loaded)", u->part->name, FLASH_UBI_CTRL, strerror(errno));
	if (!in_path(UBIFORMAT))
		return error_set(err, -ENOENT, "partition %s: %s not found in PATH (mtd-utils): it "
				 "formats UBI keeping the erase counters", u->part->name, UBIFORMAT);
	ubi = flash_ubi_find(FLASH_UBI_SYSFS, mtd);
	return ubi >= 0 ? check_unmounted(ubi, mounts, err) : 0;
}

int provision_ubi_detach(const struct layout_ubi *u, const char *mtd_sysfs, struct error *err)
{
	char dev[64];
	unsigned mtd;
	int r;

	if ((r = flash_mtd_find_partition(mtd_sysfs, u->part->name, dev, sizeof(dev), &mtd, err)) < 0)
		return r;
	r = flash_ubi_detach(FLASH_UBI_SYSFS, mtd, err);
	return r < 0 ? error_prefix(err, r, "partition %s", u->part->name) : 0;
}

/* ubiformat DEV -y: its output is kept for the error message only. */
static int run_ubiformat(const char *dev, struct error *err)
{
	char out[4096] = "";
	size_t len = 0;
	int pfd[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return error_set(err, -errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return error_set(err, -errno, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		execlp(UBIFORMAT, UBIFORMAT, dev, "-y", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], out + len, sizeof(out) - 1 - len)) > 0 ||
	       (n < 0 && errno == EINTR)) {
		len += n > 0 ? (size_t)n : 0;
		if (len == sizeof(out) - 1) /* keep the end: the error is last */
			memmove(out, out + 2048, len -= 2048);
	}
	out[len] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return error_set(err, -errno, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return error_set(err, -EIO, "%s %s -y failed (%s %d): %.400s", UBIFORMAT, dev,
				 WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				 len > 400 ? out + len - 400 : out);
	return 0;
}

int provision_ubi_format(const struct layout_ubi *u, const char *mtd_sysfs, struct error *err)
{
	char dev[64];
	unsigned mtd;
	int r, ubi;

	if ((r = flash_mtd_find_partition(mtd_sysfs, u->part->name, dev, sizeof(dev), &mtd, err)) < 0)
		return r;
	if ((r = run_ubiformat(dev, err)) < 0)
		return error_prefix(err, r, "partition %s", u->part->name);
	ubi = flash_ubi_attach(FLASH_UBI_SYSFS, mtd, err);
	if (ubi < 0)
		return error_prefix(err, ubi, "partition %s", u->part->name);
	for (size_t i = 0; i < u->n_volumes; i++) {
		const struct layout_ubi_volume *v = &u->volumes[i];
		/* the volume id is the layout's index: the boot script's
		 * root=/dev/ubiblockN_<id> and the booted-slot lookup rely on it */
		r = flash_ubi_mkvol(ubi, (int)i, v->name, v->type == LAYOUT_UBI_STATIC, v->size, err);
		if (r < 0)
			return error_prefix(err, r, "partition %s", u->part->name);
	}
	return ubi;
}

int provision_ubi_check(const struct layout_ubi *u, const char *mtd_sysfs, struct error *err)
{
	char dev[64];
	unsigned mtd;
	int r, ubi;

	if ((r = flash_mtd_find_partition(mtd_sysfs, u->part->name, dev, sizeof(dev), &mtd, err)) < 0)
		return r;
	ubi = flash_ubi_find(FLASH_UBI_SYSFS, mtd);
	if (ubi < 0)
		return error_set(err, ubi, "partition %s: UBI not attached", u->part->name);
	for (size_t i = 0; i < u->n_volumes; i++) {
		const struct layout_ubi_volume *lv = &u->volumes[i];
		struct flash_ubi_volume v;
		const char *why;

		r = flash_ubi_volume_find(FLASH_UBI_SYSFS, ubi, lv->name, &v);
		if (r < 0)
			return error_set(err, r, "ubi%d (%s): volume %s missing", ubi, u->part->name,
					 lv->name);
		if (v.is_static != (lv->type == LAYOUT_UBI_STATIC) ||
		    flash_ubi_volume_size(&v) < lv->size)
			return error_set(err, -EIO, "ubi%d (%s): volume %s is %s of %" PRIu64 " bytes, "
					 "the layout says %s of %" PRIu64, ubi, u->part->name, lv->name,
					 v.is_static ? "static" : "dynamic", flash_ubi_volume_size(&v),
					 layout_ubi_vol_type_to_string(lv->type), lv->size);
		why = flash_ubi_volume_broken(&v);
		if (why)
			return error_set(err, -EIO, "ubi%d (%s): volume %s: %s", ubi, u->part->name,
					 lv->name, why);
	}
	return 0;
}

/* ---- factory images: the partition as ubinize makes it ---- */

struct provision_ubi_image {
	const struct layout_ubi *u;
	struct flash *f;
	struct ubinize *z;
	uint64_t *good;          /* offsets of the partition's good blocks: PEB n goes to good[n] */
	uint64_t n_good;
};

static int image_sink(void *userdata, uint64_t pnum, const void *peb, size_t len,
		      struct error *err)
{
	struct provision_ubi_image *pi = userdata;
	int r;

	if (pnum >= pi->n_good)
		return error_set(err, -ENOSPC, "PEB %" PRIu64 " of the UBI image: the partition has "
				 "%" PRIu64 " good erase blocks", pnum, pi->n_good);
	r = flash_write(pi->f, pi->good[pnum], peb, len);
	if (r < 0)
		return error_set(err, r, "writing PEB %" PRIu64 " at 0x%" PRIx64 ": %s", pnum,
				 pi->good[pnum], strerror(-r));
	return 0;
}

int provision_ubi_image_new(const struct layout_ubi *u, struct flash *f,
			    const uint64_t *image_sizes, uint32_t image_seq,
			    struct provision_ubi_image **ret, struct error *err)
{
	_cleanup_(provision_ubi_image_freep) struct provision_ubi_image *pi = NULL;
	_cleanup_free_ struct ubinize_volume *vols = calloc(u->n_volumes, sizeof(*vols));
	const struct layout_device *d = u->part->dev;
	struct ubinize_geometry g = {
		.peb_size = d->erasesize,
		.min_io_size = d->type == FLASH_NAND ? d->writesize : 1,
		.subpage_size = d->type == FLASH_NAND ? d->subpage : 1,
		.image_seq = image_seq,
	};
	int r;

	pi = calloc(1, sizeof(*pi));
	if (!pi || !vols || !(pi->good = calloc(flash_blocks(f), sizeof(*pi->good))))
		return -ENOMEM;
	pi->u = u;
	pi->f = f;
	for (uint64_t off = 0; off < f->info.size; off += f->info.erasesize)
		if (flash_block_isbad(f, off) != 1)
			pi->good[pi->n_good++] = off;
	/* the volume id is the layout's index, as provision_ubi_format makes them */
	for (size_t i = 0; i < u->n_volumes; i++)
		vols[i] = (struct ubinize_volume){ .id = (uint32_t)i, .name = u->volumes[i].name,
			.is_static = u->volumes[i].type == LAYOUT_UBI_STATIC,
			.autoresize = u->volumes[i].autoresize, .size = u->volumes[i].size,
			.image_size = image_sizes[i] };
	r = ubinize_new(&g, vols, u->n_volumes, image_sink, pi, &pi->z, err);
	if (r < 0)
		return error_prefix(err, r, "partition %s", u->part->name);
	if (ubinize_pebs(pi->z) > pi->n_good)
		return error_set(err, -ENOSPC, "partition %s: the UBI image needs %" PRIu64 " erase "
				 "blocks, %" PRIu64 " are good", u->part->name, ubinize_pebs(pi->z),
				 pi->n_good);
	*ret = TAKE_PTR(pi);
	return 0;
}

void provision_ubi_image_free(struct provision_ubi_image *pi)
{
	if (!pi)
		return;
	ubinize_free(pi->z);
	free(pi->good);
	free(pi);
}

int provision_ubi_image_write(struct provision_ubi_image *pi, size_t vol, const void *buf,
			      size_t len, struct error *err)
{
	int r = ubinize_write(pi->z, vol, buf, len, err);

	return r < 0 ? error_prefix(err, r, "partition %s", pi->u->part->name) : 0;
}

int provision_ubi_image_finish(struct provision_ubi_image *pi, struct error *err)
{
	int r = ubinize_finish(pi->z, err);

	return r < 0 ? error_prefix(err, r, "partition %s", pi->u->part->name) : 0;
}

uint64_t provision_ubi_image_pebs(const struct provision_ubi_image *pi)
{
	return ubinize_pebs(pi->z);
}

/* Through the headers as the kernel reads them: every LEB's EC and VID
 * header, the static volume's data CRCs, then the image's sha256. */
int provision_ubi_image_verify(struct provision_ubi_image *pi, size_t vol,
			       const uint8_t sha256[32], struct error *err)
{
	_cleanup_free_ uint8_t *peb = malloc(pi->f->info.erasesize);
	uint64_t first = ubinize_first_peb(pi->z, vol);
	uint8_t out[HASH_SIZE];
	struct hash md;
	int r = peb ? 0 : -ENOMEM;

	hash_init(&md);

	for (uint64_t l = 0; r >= 0 && l < ubinize_used_ebs(pi->z, vol); l++) {
		const uint8_t *data;
		size_t len;

		r = flash_read(pi->f, pi->good[first + l], peb, pi->f->info.erasesize);
		if (r < 0 && r != -EUCLEAN) {
			error_set(err, r, "reading PEB %" PRIu64 ": %s", first + l, strerror(-r));
			break;
		}
		r = ubinize_check_peb(pi->z, vol, l, peb, &data, &len, err);
		if (r >= 0)
			hash_update(&md, data, len);
	}
	if (r >= 0)
		hash_final(&md, out);
	if (r >= 0 && memcmp(out, sha256, HASH_SIZE))
		r = error_set(err, -EBADMSG, "the volume's data does not match the image's sha256");
	if (r < 0)
		return error_prefix(err, r, "read-back of UBI volume %s (partition %s)",
				    pi->u->volumes[vol].name, pi->u->part->name);
	return 0;
}

/* The UBI image alone (what ubinize writes): for ubiformat -f, U-Boot's
 * "ubi write" or a programmer that places the partition's blocks itself. */
int provision_ubi_image_export(struct provision_ubi_image *pi, int fd, struct error *err)
{
	_cleanup_free_ uint8_t *peb = malloc(pi->f->info.erasesize);
	int r;

	if (!peb)
		return -ENOMEM;
	for (uint64_t p = 0; p < ubinize_pebs(pi->z); p++) {
		r = flash_read(pi->f, pi->good[p], peb, pi->f->info.erasesize);
		if (r < 0 && r != -EUCLEAN)
			return error_set(err, r, "partition %s: reading PEB %" PRIu64 ": %s",
					 pi->u->part->name, p, strerror(-r));
		if (util_write_full(fd, peb, pi->f->info.erasesize) < 0)
			return error_set(err, -errno, "writing the UBI image: %s", strerror(errno));
	}
	return 0;
}
