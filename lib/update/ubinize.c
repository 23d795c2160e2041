/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* UBI images with ubinize's semantics (see include/ubinize.h). */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cleanup.h"
#include "ubinize.h"
#include "util.h"

/* drivers/mtd/ubi/ubi-media.h */
#define UBI_VERSION 1
#define UBI_EC_HDR_MAGIC 0x55424923u  /* "UBI#" */
#define UBI_VID_HDR_MAGIC 0x55424921u /* "UBI!" */
#define UBI_VID_DYNAMIC 1
#define UBI_VID_STATIC 2
#define UBI_VTBL_AUTORESIZE_FLG 0x01
#define UBI_COMPAT_REJECT 5
#define UBI_LAYOUT_VOLUME_ID (0x7fffffffu - 4096)
#define UBI_LAYOUT_VOLUME_NAME "layout volume"

struct ubi_ec_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t padding1[3];
	uint64_t ec;
	uint32_t vid_hdr_offset;
	uint32_t data_offset;
	uint32_t image_seq;
	uint8_t padding2[32];
	uint32_t hdr_crc;
} __attribute__((packed));

struct ubi_vid_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t vol_type;
	uint8_t copy_flag;
	uint8_t compat;
	uint32_t vol_id;
	uint32_t lnum;
	uint8_t padding1[4];
	uint32_t data_size;
	uint32_t used_ebs;
	uint32_t data_pad;
	uint32_t data_crc;
	uint8_t padding2[4];
	uint64_t sqnum;
	uint8_t padding3[12];
	uint32_t hdr_crc;
} __attribute__((packed));

struct ubi_vtbl_record {
	uint32_t reserved_pebs;
	uint32_t alignment;
	uint32_t data_pad;
	uint8_t vol_type;
	uint8_t upd_marker;
	uint16_t name_len;
	char name[UBINIZE_VOL_NAME_MAX + 1];
	uint8_t flags;
	uint8_t padding[23];
	uint32_t crc;
} __attribute__((packed));

_Static_assert(sizeof(struct ubi_ec_hdr) == UBINIZE_EC_HDR_SIZE, "EC header");
_Static_assert(sizeof(struct ubi_vid_hdr) == UBINIZE_VID_HDR_SIZE, "VID header");
_Static_assert(sizeof(struct ubi_vtbl_record) == UBINIZE_VTBL_RECORD_SIZE, "vtbl record");

struct vol {
	struct ubinize_volume v;
	char *name;
	uint64_t first;          /* first PEB of its LEBs */
	uint64_t used_ebs;
	uint64_t written;        /* image bytes taken so far */
	uint8_t *leb;            /* the LEB being filled (while streaming) */
};

struct ubinize {
	struct ubinize_geometry g;
	uint32_t vid_off, data_off, leb_size, max_volumes;
	struct vol *vols;
	size_t n;
	uint64_t pebs;
	uint8_t *peb;            /* output buffer */
	ubinize_sink_t sink;
	void *userdata;
};

uint32_t ubinize_crc32(uint32_t crc, const void *buf, size_t len)
{
	/* zlib's crc32() inverts before and after: undo both */
	return ~(uint32_t)crc32(~crc, buf, (uInt)len);
}

static uint32_t hdr_crc(const void *hdr, size_t len)
{
	return htobe32(ubinize_crc32(0xffffffffu, hdr, len - sizeof(uint32_t)));
}

static int check_geometry(const struct ubinize_geometry *g, struct error *err)
{
	uint32_t sp = g->subpage_size ? g->subpage_size : g->min_io_size;

	if (!g->peb_size || !g->min_io_size || (g->min_io_size & (g->min_io_size - 1)) ||
	    (sp & (sp - 1)) || sp > g->min_io_size || g->peb_size % g->min_io_size)
		return error_set(err, -EINVAL, "UBI geometry: erase block %" PRIu32 ", min. I/O %"
				 PRIu32 ", sub-page %" PRIu32 ": the I/O sizes must be powers of 2, "
				 "the sub-page no larger than the min. I/O unit, the erase block a "
				 "multiple of it", g->peb_size, g->min_io_size, sp);
	if (g->vid_hdr_offset % 8)
		return error_set(err, -EINVAL, "UBI geometry: VID header offset %" PRIu32
				 " is not a multiple of 8", g->vid_hdr_offset);
	return 0;
}

static void init_offsets(struct ubinize *u)
{
	uint32_t sp = u->g.subpage_size ? u->g.subpage_size : u->g.min_io_size;

	u->vid_off = u->g.vid_hdr_offset ? u->g.vid_hdr_offset :
		DIV_ROUND_UP(UBINIZE_EC_HDR_SIZE, sp) * sp;
	u->data_off = DIV_ROUND_UP(u->vid_off + UBINIZE_VID_HDR_SIZE, u->g.min_io_size) *
		u->g.min_io_size;
	u->leb_size = u->data_off < u->g.peb_size ? u->g.peb_size - u->data_off : 0;
	u->max_volumes = MIN(u->leb_size / UBINIZE_VTBL_RECORD_SIZE, UBINIZE_MAX_VOLUMES);
}

static int check_volume(const struct ubinize *u, size_t i, struct error *err)
{
	const struct ubinize_volume *v = &u->vols[i].v;

	if (!v->name || !*v->name || strlen(v->name) > UBINIZE_VOL_NAME_MAX)
		return error_set(err, -EINVAL, "UBI volume %zu: the name must have 1 to %d characters",
				 i, UBINIZE_VOL_NAME_MAX);
	if (v->id >= u->max_volumes)
		return error_set(err, -EINVAL, "UBI volume %s: id %" PRIu32 " is too high (max. %"
				 PRIu32 ")", v->name, v->id, u->max_volumes - 1);
	if (!v->size || v->image_size > v->size)
		return error_set(err, -EFBIG, "UBI volume %s: the image (%" PRIu64 " bytes) is larger "
				 "than the volume (%" PRIu64 " bytes)", v->name, v->image_size, v->size);
	for (size_t j = 0; j < i; j++) {
		const struct ubinize_volume *w = &u->vols[j].v;
		if (w->id == v->id || !strcmp(w->name, v->name))
			return error_set(err, -EINVAL, "UBI volume %s (id %" PRIu32 "): the %s is also "
					 "volume %s's", v->name, v->id, w->id == v->id ? "id" : "name",
					 w->name);
		if (w->autoresize && v->autoresize)
			return error_set(err, -EINVAL, "UBI volumes %s and %s: only one volume may "
					 "have the autoresize flag", w->name, v->name);
	}
	return 0;
}

int ubinize_new(const struct ubinize_geometry *g, const struct ubinize_volume *vols, size_t n,
		ubinize_sink_t sink, void *userdata, struct ubinize **ret, struct error *err)
{
	_cleanup_ubinize_ struct ubinize *u = NULL;
	uint64_t pnum = UBINIZE_LAYOUT_PEBS;
	int r;

	if ((r = check_geometry(g, err)) < 0)
		return r;
	u = calloc(1, sizeof(*u));
	if (!u || !(u->vols = calloc(n ? n : 1, sizeof(*u->vols))))
		return -ENOMEM;
	u->g = *g;
	u->sink = sink;
	u->userdata = userdata;
	init_offsets(u);
	if (u->vid_off + UBINIZE_VID_HDR_SIZE > g->peb_size || !u->max_volumes)
		return error_set(err, -EINVAL, "UBI geometry: no room for data in an erase block of %"
				 PRIu32 " bytes (VID header at %" PRIu32 ")", g->peb_size, u->vid_off);
	if (!(u->peb = malloc(g->peb_size)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct vol *v = &u->vols[i];

		v->v = vols[i];
		if (vols[i].name && !(v->name = strdup(vols[i].name)))
			return -ENOMEM;
		v->v.name = v->name;
		u->n = i + 1;
		if ((r = check_volume(u, i, err)) < 0)
			return r;
		v->first = pnum;
		v->used_ebs = DIV_ROUND_UP(v->v.image_size, u->leb_size);
		pnum += v->used_ebs;
	}
	u->pebs = pnum;
	*ret = TAKE_PTR(u);
	return 0;
}

void ubinize_free(struct ubinize *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		free(u->vols[i].name);
		free(u->vols[i].leb);
	}
	free(u->vols);
	free(u->peb);
	free(u);
}

uint32_t ubinize_leb_size(const struct ubinize *u) { return u->leb_size; }
uint32_t ubinize_vid_hdr_offset(const struct ubinize *u) { return u->vid_off; }
uint32_t ubinize_data_offset(const struct ubinize *u) { return u->data_off; }
uint64_t ubinize_pebs(const struct ubinize *u) { return u->pebs; }
uint64_t ubinize_first_peb(const struct ubinize *u, size_t idx) { return u->vols[idx].first; }
uint64_t ubinize_used_ebs(const struct ubinize *u, size_t idx) { return u->vols[idx].used_ebs; }

static void put_ec_hdr(const struct ubinize *u, uint8_t *peb)
{
	struct ubi_ec_hdr h = {
		.magic = htobe32(UBI_EC_HDR_MAGIC),
		.version = UBI_VERSION,
		.ec = htobe64(u->g.ec),
		.vid_hdr_offset = htobe32(u->vid_off),
		.data_offset = htobe32(u->data_off),
		.image_seq = htobe32(u->g.image_seq),
	};

	h.hdr_crc = hdr_crc(&h, sizeof(h));
	memcpy(peb, &h, sizeof(h));
}

/* LEB lnum of a volume: headers, len bytes of data (in place at data_off), 0xff after. */
static int emit(struct ubinize *u, uint64_t pnum, const struct ubi_vid_hdr *tmpl, uint32_t lnum,
		size_t len, struct error *err)
{
	struct ubi_vid_hdr h = *tmpl;

	memset(u->peb, 0xff, u->data_off);
	memset(u->peb + u->data_off + len, 0xff, u->g.peb_size - u->data_off - len);
	put_ec_hdr(u, u->peb);
	h.magic = htobe32(UBI_VID_HDR_MAGIC);
	h.version = UBI_VERSION;
	h.lnum = htobe32(lnum);
	if (h.vol_type == UBI_VID_STATIC) {
		h.data_size = htobe32((uint32_t)len);
		h.data_crc = htobe32(ubinize_crc32(0xffffffffu, u->peb + u->data_off, len));
	}
	h.hdr_crc = hdr_crc(&h, sizeof(h));
	memcpy(u->peb + u->vid_off, &h, sizeof(h));
	return u->sink(u->userdata, pnum, u->peb, u->g.peb_size, err);
}

static int emit_leb(struct ubinize *u, struct vol *v, size_t len, struct error *err)
{
	uint64_t lnum = (v->written - 1) / u->leb_size;
	struct ubi_vid_hdr tmpl = {
		.vol_type = v->v.is_static ? UBI_VID_STATIC : UBI_VID_DYNAMIC,
		.vol_id = htobe32(v->v.id),
		.used_ebs = v->v.is_static ? htobe32((uint32_t)v->used_ebs) : 0,
	};

	memcpy(u->peb + u->data_off, v->leb, len);
	return emit(u, v->first + lnum, &tmpl, (uint32_t)lnum, len, err);
}

int ubinize_write(struct ubinize *u, size_t idx, const void *buf, size_t len, struct error *err)
{
	struct vol *v = &u->vols[idx];
	const uint8_t *p = buf;
	int r;

	if (len > v->v.image_size - v->written)
		return error_set(err, -EFBIG, "UBI volume %s: more than the image's %" PRIu64
				 " bytes", v->name, v->v.image_size);
	if (!v->leb && len && !(v->leb = malloc(u->leb_size)))
		return -ENOMEM;
	while (len) {
		size_t at = v->written % u->leb_size, n = MIN(len, u->leb_size - at);

		memcpy(v->leb + at, p, n);
		v->written += n;
		p += n;
		len -= n;
		/* a full LEB, or the image's last bytes */
		if ((at + n == u->leb_size || v->written == v->v.image_size) &&
		    (r = emit_leb(u, v, at + n, err)) < 0)
			return error_prefix(err, r, "UBI volume %s, LEB %" PRIu64, v->name,
					    (v->written - 1) / u->leb_size);
	}
	if (v->written == v->v.image_size) {
		free(v->leb);
		v->leb = NULL;
	}
	return 0;
}

static void put_vtbl(const struct ubinize *u, uint8_t *data)
{
	for (uint32_t i = 0; i < u->max_volumes; i++) {
		struct ubi_vtbl_record rec = { 0 };
		const struct vol *v = NULL;

		for (size_t j = 0; j < u->n; j++)
			if (u->vols[j].v.id == i)
				v = &u->vols[j];
		if (v) {
			rec.reserved_pebs = htobe32((uint32_t)DIV_ROUND_UP(v->v.size, u->leb_size));
			rec.alignment = htobe32(1);
			rec.vol_type = v->v.is_static ? UBI_VID_STATIC : UBI_VID_DYNAMIC;
			rec.flags = v->v.autoresize ? UBI_VTBL_AUTORESIZE_FLG : 0;
			rec.name_len = htobe16((uint16_t)strlen(v->name));
			memcpy(rec.name, v->name, strlen(v->name));
		}
		rec.crc = hdr_crc(&rec, sizeof(rec));
		memcpy(data + (size_t)i * UBINIZE_VTBL_RECORD_SIZE, &rec, sizeof(rec));
	}
}

int ubinize_finish(struct ubinize *u, struct error *err)
{
	struct ubi_vid_hdr tmpl = {
		.vol_type = UBI_VID_DYNAMIC,
		.compat = UBI_COMPAT_REJECT,
		.vol_id = htobe32(UBI_LAYOUT_VOLUME_ID),
	};
	size_t vtbl = (size_t)u->max_volumes * UBINIZE_VTBL_RECORD_SIZE;
	int r;

	for (size_t i = 0; i < u->n; i++)
		if (u->vols[i].written != u->vols[i].v.image_size)
			return error_set(err, -ENODATA, "UBI volume %s: %" PRIu64 " of the image's %"
					 PRIu64 " bytes", u->vols[i].name, u->vols[i].written,
					 u->vols[i].v.image_size);
	/* both copies of the volume table: LEB 0 and 1 of the layout volume */
	for (uint32_t lnum = 0; lnum < UBINIZE_LAYOUT_PEBS; lnum++) {
		put_vtbl(u, u->peb + u->data_off);
		if ((r = emit(u, lnum, &tmpl, lnum, vtbl, err)) < 0)
			return error_prefix(err, r, "UBI volume table");
	}
	return 0;
}

int ubinize_check_peb(const struct ubinize *u, size_t idx, uint64_t lnum, const uint8_t *peb,
		      const uint8_t **ret_data, size_t *ret_len, struct error *err)
{
	const struct vol *v = &u->vols[idx];
	struct ubi_ec_hdr ec;
	struct ubi_vid_hdr vid;
	size_t len;

	memcpy(&ec, peb, sizeof(ec));
	memcpy(&vid, peb + u->vid_off, sizeof(vid));
	if (be32toh(ec.magic) != UBI_EC_HDR_MAGIC || ec.hdr_crc != hdr_crc(&ec, sizeof(ec)) ||
	    be32toh(ec.image_seq) != u->g.image_seq)
		return error_set(err, -EBADMSG, "UBI volume %s, LEB %" PRIu64 ": bad EC header",
				 v->name, lnum);
	if (be32toh(vid.magic) != UBI_VID_HDR_MAGIC || vid.hdr_crc != hdr_crc(&vid, sizeof(vid)) ||
	    be32toh(vid.vol_id) != v->v.id || be32toh(vid.lnum) != lnum)
		return error_set(err, -EBADMSG, "UBI volume %s, LEB %" PRIu64 ": bad VID header",
				 v->name, lnum);
	len = MIN(v->v.image_size - lnum * u->leb_size, (uint64_t)u->leb_size);
	if (v->v.is_static && (be32toh(vid.data_size) != len ||
			       be32toh(vid.data_crc) != ubinize_crc32(0xffffffffu, peb + u->data_off, len)))
		return error_set(err, -EBADMSG, "UBI volume %s, LEB %" PRIu64 ": the data does "
				 "not match its size or CRC in the VID header", v->name, lnum);
	*ret_data = peb + u->data_off;
	*ret_len = len;
	return 0;
}
