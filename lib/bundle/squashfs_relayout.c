/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A rebuilt squashfs laid out against the previous one (include/
 * squashfs_relayout.h, docs/bundle-format.md "Laying an image out against
 * the previous one"). The new image's tree, inodes and ids are taken as
 * they are; only where file data lives changes: content found in the old
 * image (by the SHA-256 of the uncompressed file) points at the old
 * compressed blocks at their old offsets, whose bytes are copied from the
 * old image, never recompressed. libsquashfs reads both images and writes
 * every table. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqfs/block.h>
#include <sqfs/compressor.h>
#include <sqfs/data_reader.h>
#include <sqfs/dir_reader.h>
#include <sqfs/dir_writer.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_writer.h>
#include <sqfs/super.h>
#include <sqfs/xattr.h>
#include <sqfs/xattr_reader.h>
#include <sqfs/xattr_writer.h>

#include "cleanup.h"
#include "hash.h"
#include "squashfs_relayout.h"
#include "util.h"

#define RL_SUPER_SIZE 96        /* the on-disk superblock */
#define RL_PAD 4096             /* mksquashfs pads the image to 4 KiB */
#define RL_NO_FRAG 0xFFFFFFFFu
#define RL_NO_XATTR 0xFFFFFFFFu
#define RL_NO_TABLE 0xFFFFFFFFFFFFFFFFull
#define RL_COPY_CHUNK (1u << 20)

static void rl_destroy(void *obj)
{
	if (obj)
		sqfs_destroy(obj);
}

/* libsquashfs returns its own negative codes */
static int rl_err(struct error *err, int r, const char *path, const char *what)
{
	int e = r == SQFS_ERROR_ALLOC ? -ENOMEM : r == SQFS_ERROR_IO ? -EIO : -EBADMSG;

	return error_set(err, e, "%s: %s (libsquashfs error %d)", path, what, r);
}

/* Room for one more element in *arr (n used, *cap allocated) */
static int rl_grow(void **arr, size_t n, size_t *cap, size_t size)
{
	size_t c = *cap ? 2 * *cap : 256;
	void *p;

	if (n < *cap)
		return 0;
	p = reallocarray(*arr, c, size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = c;
	return 0;
}

/* One image, opened through libsquashfs */
struct rl_image {
	const char *path;
	sqfs_file_t *file;
	sqfs_super_t super;
	sqfs_compressor_t *cmp;         /* decompresses */
	sqfs_id_table_t *ids;
	sqfs_dir_reader_t *dr;
	sqfs_data_reader_t *data;
	sqfs_frag_table_t *frags;
	sqfs_tree_node_t *root;
	uint8_t *opts;                  /* the raw compressor options block */
	size_t opts_len;
	uint64_t data_start, data_end;  /* file data and fragment blocks */
	struct rl_file *files;          /* regular files, one per inode */
	size_t n_files;
};

/* A regular file's content and where its data goes */
struct rl_file {
	uint8_t sha[HASH_SIZE];
	uint64_t size;
	sqfs_inode_generic_t *inode;    /* the one written (the first link) */
	const struct rl_file *old;      /* the old file of this content, or NULL */
	const struct rl_file *same;     /* an earlier new file of this content */
};

static void rl_image_done(struct rl_image *im)
{
	if (im->root)
		sqfs_dir_tree_destroy(im->root);
	rl_destroy(im->frags);
	rl_destroy(im->data);
	rl_destroy(im->dr);
	rl_destroy(im->ids);
	rl_destroy(im->cmp);
	rl_destroy(im->file);
	free(im->opts);
	free(im->files);
}

static uint64_t rl_block_bytes(const sqfs_inode_generic_t *inode)
{
	uint64_t n = 0;

	for (size_t i = 0; i < sqfs_inode_get_file_block_count(inode); i++)
		n += SQFS_ON_DISK_BLOCK_SIZE(inode->extra[i]);
	return n;
}

/* Where the data ends: the first table (mksquashfs and this module write
 * the inode table first, but the order is not the format's promise). */
static uint64_t rl_tables_start(const sqfs_super_t *s)
{
	const uint64_t t[] = { s->inode_table_start, s->directory_table_start,
			       s->fragment_table_start, s->export_table_start, s->id_table_start,
			       s->xattr_id_table_start };
	uint64_t m = s->bytes_used;

	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		if (t[i] != RL_NO_TABLE && t[i] < m)
			m = t[i];
	return m;
}

static int rl_read_options(struct rl_image *im, struct error *err)
{
	uint8_t h[2];
	int r;

	if (!(im->super.flags & SQFS_FLAG_COMPRESSOR_OPTIONS))
		return 0;
	r = im->cmp->read_options(im->cmp, im->file);
	if (r == 0)
		r = im->file->read_at(im->file, RL_SUPER_SIZE, h, sizeof(h));
	if (r)
		return rl_err(err, r, im->path, "compressor options");
	im->opts_len = 2 + ((h[0] | h[1] << 8) & 0x7fff);
	im->opts = malloc(im->opts_len);
	if (!im->opts)
		return -ENOMEM;
	r = im->file->read_at(im->file, RL_SUPER_SIZE, im->opts, im->opts_len);
	return r ? rl_err(err, r, im->path, "compressor options") : 0;
}

static int rl_image_open(struct rl_image *im, const char *path, struct error *err)
{
	sqfs_compressor_config_t cfg;
	int r;

	im->path = path;
	im->file = sqfs_open_file(path, SQFS_FILE_OPEN_READ_ONLY);
	if (!im->file)
		return error_set(err, -errno ?: -EIO, "%s: %s", path, strerror(errno));
	r = sqfs_super_read(&im->super, im->file);
	if (r)
		return rl_err(err, r, path, "not a squashfs 4.0 image");
	r = sqfs_compressor_config_init(&cfg, im->super.compression_id, im->super.block_size,
					SQFS_COMP_FLAG_UNCOMPRESS);
	if (r == 0)
		r = sqfs_compressor_create(&cfg, &im->cmp);
	if (r)
		return rl_err(err, r, path, "compressor not supported");
	r = rl_read_options(im, err);
	if (r < 0)
		return r;
	im->data_start = RL_SUPER_SIZE + im->opts_len;
	im->data_end = rl_tables_start(&im->super);
	im->ids = sqfs_id_table_create(0);
	im->dr = sqfs_dir_reader_create(&im->super, im->cmp, im->file, 0);
	im->data = sqfs_data_reader_create(im->file, im->super.block_size, im->cmp, 0);
	im->frags = sqfs_frag_table_create(0);
	if (!im->ids || !im->dr || !im->data || !im->frags)
		return -ENOMEM;
	if ((r = sqfs_id_table_read(im->ids, im->file, &im->super, im->cmp)))
		return rl_err(err, r, path, "id table");
	if ((r = sqfs_frag_table_read(im->frags, im->file, &im->super, im->cmp)) ||
	    (r = sqfs_data_reader_load_fragment_table(im->data, &im->super)))
		return rl_err(err, r, path, "fragment table");
	if ((r = sqfs_dir_reader_get_full_hierarchy(im->dr, im->ids, NULL, 0, &im->root)))
		return rl_err(err, r, path, "directory tree");
	return 0;
}

/* ---- content ---- */

static bool rl_is_file(const sqfs_inode_generic_t *inode)
{
	return inode->base.type == SQFS_INODE_FILE || inode->base.type == SQFS_INODE_EXT_FILE;
}

/* The regular files in the order they are written (children first), each
 * inode once: hard links share the first one's. */
static int rl_collect(struct rl_image *im, sqfs_tree_node_t *n, uint8_t *seen, size_t *cap)
{
	uint32_t ino = n->inode->base.inode_number;

	for (sqfs_tree_node_t *c = n->children; c; c = c->next) {
		int r = rl_collect(im, c, seen, cap);
		if (r < 0)
			return r;
	}
	if (!rl_is_file(n->inode) || ino > im->super.inode_count || seen[ino])
		return 0;
	seen[ino] = 1;
	if (rl_grow((void **)&im->files, im->n_files, cap, sizeof(*im->files)) < 0)
		return -ENOMEM;
	im->files[im->n_files++] = (struct rl_file) { .inode = n->inode };
	return 0;
}

static int rl_hash_files(struct rl_image *im, struct error *err)
{
	_cleanup_free_ uint8_t *buf = malloc(im->super.block_size);
	_cleanup_free_ uint8_t *seen = calloc(im->super.inode_count + 1, 1);
	size_t cap = 0;
	int r;

	if (!buf || !seen)
		return -ENOMEM;
	r = rl_collect(im, im->root, seen, &cap);
	if (r < 0)
		return r;
	for (size_t i = 0; i < im->n_files; i++) {
		struct rl_file *f = &im->files[i];
		struct hash h;

		sqfs_inode_get_file_size(f->inode, &f->size);
		hash_init(&h);
		for (uint64_t off = 0; off < f->size;) {
			uint32_t n = MIN(f->size - off, (uint64_t)im->super.block_size);
			sqfs_s32 got = sqfs_data_reader_read(im->data, f->inode, off, buf, n);
			if (got <= 0)
				return error_set(err, -EBADMSG, "%s: inode %u: data at %" PRIu64
						 " unreadable (libsquashfs error %d)", im->path,
						 f->inode->base.inode_number, off, got);
			hash_update(&h, buf, got);
			off += got;
		}
		hash_final(&h, f->sha);
	}
	return 0;
}

static int rl_file_cmp(const void *a, const void *b)
{
	const struct rl_file *x = a, *y = b;
	int c = memcmp(x->sha, y->sha, HASH_SIZE);

	return c ? c : x->size < y->size ? -1 : x->size > y->size;
}

/* ---- where the data goes ---- */

struct rl_extent {
	uint64_t start, len;
};

static int rl_extent_cmp(const void *a, const void *b)
{
	const struct rl_extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct rl_space {
	struct rl_extent *live, *holes;
	size_t n_live, n_holes;
	uint64_t end;                   /* where appended data goes */
	uint64_t data_end;              /* the end of all data */
	uint64_t bytes_new;
};

static int rl_space_add(struct rl_space *s, uint64_t start, uint64_t len, size_t *cap)
{
	if (!len)
		return 0;
	if (rl_grow((void **)&s->live, s->n_live, cap, sizeof(*s->live)) < 0)
		return -ENOMEM;
	s->live[s->n_live++] = (struct rl_extent) { start, len };
	return 0;
}

/* The live extents merged; the holes are what lies between them in the
 * old data region. Returns the live bytes. */
static int rl_space_holes(struct rl_space *s, uint64_t data_start, uint64_t *ret_live)
{
	uint64_t pos = data_start, live = 0;
	size_t m = 0;

	qsort(s->live, s->n_live, sizeof(*s->live), rl_extent_cmp);
	for (size_t i = 0; i < s->n_live; i++) {
		struct rl_extent *e = &s->live[i];
		if (m && e->start <= s->live[m - 1].start + s->live[m - 1].len) {
			struct rl_extent *l = &s->live[m - 1];
			l->len = MAX(l->len, e->start + e->len - l->start);
		} else {
			s->live[m++] = *e;
		}
	}
	s->n_live = m;
	s->holes = calloc(m + 1, sizeof(*s->holes));
	if (!s->holes)
		return -ENOMEM;
	for (size_t i = 0; i < m; i++) {
		if (s->live[i].start > pos)
			s->holes[s->n_holes++] = (struct rl_extent) { pos, s->live[i].start - pos };
		pos = MAX(pos, s->live[i].start + s->live[i].len);
		live += s->live[i].len;
	}
	/* what follows the last kept extent is open: new data goes there
	 * before it goes further */
	s->end = pos;
	s->data_end = pos;
	*ret_live = live;
	return 0;
}

/* The first hole that takes len bytes, else the end */
static uint64_t rl_space_place(struct rl_space *s, uint64_t len)
{
	uint64_t off = s->end;
	size_t i;

	for (i = 0; i < s->n_holes && s->holes[i].len < len; i++)
		;
	if (i < s->n_holes) {
		off = s->holes[i].start;
		s->holes[i].start += len;
		s->holes[i].len -= len;
	} else {
		s->end += len;
	}
	s->data_end = MAX(s->data_end, off + len);
	s->bytes_new += len;
	return off;
}

/* ---- the output ---- */

struct rl_out {
	const char *path;
	sqfs_file_t *file;
	sqfs_compressor_t *cmp;         /* compresses */
	sqfs_frag_table_t *frags;
	uint32_t *old_frag;             /* old fragment index -> new */
	uint8_t *fbuf, *cbuf;           /* the fragment block being filled */
	size_t fused;
	struct rl_file **fpending;      /* files whose tail is in fbuf */
	uint32_t *fpending_off;
	size_t n_fpending;
};

static int rl_copy(sqfs_file_t *from, const char *from_path, struct rl_out *o, uint64_t start,
		   uint64_t len, uint64_t to, struct error *err)
{
	_cleanup_free_ uint8_t *buf = malloc(MIN(len, (uint64_t)RL_COPY_CHUNK) ?: 1);
	int r;

	if (!buf)
		return -ENOMEM;
	for (uint64_t done = 0; done < len;) {
		size_t n = MIN(len - done, (uint64_t)RL_COPY_CHUNK);
		if ((r = from->read_at(from, start + done, buf, n)))
			return rl_err(err, r, from_path, "read");
		if ((r = o->file->write_at(o->file, to + done, buf, n)))
			return rl_err(err, r, o->path, "write");
		done += n;
	}
	return 0;
}

/* Unchanged content: the old blocks and the old fragment block, where
 * they are. */
static int rl_keep(struct rl_file *f, const struct rl_image *old, struct rl_out *o,
		   struct rl_space *s, size_t *cap)
{
	const sqfs_inode_generic_t *oi = f->old->inode;
	uint64_t start;
	uint32_t idx, off;
	sqfs_fragment_t fr;
	int r;

	sqfs_inode_get_file_block_start(oi, &start);
	r = rl_space_add(s, start, rl_block_bytes(oi), cap);
	if (r < 0)
		return r;
	memcpy(f->inode->extra, oi->extra, sqfs_inode_get_file_block_count(oi) * sizeof(uint32_t));
	if (sqfs_inode_set_file_block_start(f->inode, start))
		return -EINVAL;
	sqfs_inode_get_frag_location(oi, &idx, &off);
	if (idx == RL_NO_FRAG || f->size % old->super.block_size == 0)
		return sqfs_inode_set_frag_location(f->inode, RL_NO_FRAG, 0xFFFFFFFF) ? -EINVAL : 0;
	if (sqfs_frag_table_lookup(old->frags, idx, &fr))
		return -EBADMSG;
	if (o->old_frag[idx] == RL_NO_FRAG) {
		if (sqfs_frag_table_append(o->frags, fr.start_offset, fr.size, &o->old_frag[idx]))
			return -ENOMEM;
		r = rl_space_add(s, fr.start_offset, SQFS_ON_DISK_BLOCK_SIZE(fr.size), cap);
		if (r < 0)
			return r;
	}
	return sqfs_inode_set_frag_location(f->inode, o->old_frag[idx], off) ? -EINVAL : 0;
}

static int rl_frag_flush(struct rl_out *o, struct rl_space *s, uint32_t block_size,
			 struct error *err)
{
	sqfs_s32 n;
	uint32_t size, idx;
	uint64_t off;
	const uint8_t *p = o->cbuf;
	int r;

	if (!o->fused)
		return 0;
	n = o->cmp->do_block(o->cmp, o->fbuf, o->fused, o->cbuf, block_size);
	if (n < 0)
		return rl_err(err, n, o->path, "compressing a fragment block");
	size = n;
	if (n == 0) {   /* does not shrink: stored as it is */
		size = o->fused | (1u << 24);
		p = o->fbuf;
		n = o->fused;
	}
	off = rl_space_place(s, n);
	if ((r = o->file->write_at(o->file, off, p, n)))
		return rl_err(err, r, o->path, "write");
	if (sqfs_frag_table_append(o->frags, off, size, &idx))
		return -ENOMEM;
	for (size_t i = 0; i < o->n_fpending; i++)
		sqfs_inode_set_frag_location(o->fpending[i]->inode, idx, o->fpending_off[i]);
	o->fused = 0;
	o->n_fpending = 0;
	return 0;
}

/* Changed or new content: its compressed blocks copied from the new
 * image into a hole or to the end; its tail into a new fragment block. */
static int rl_place_new(struct rl_file *f, struct rl_image *new, struct rl_out *o,
			struct rl_space *s, struct error *err)
{
	uint64_t len = rl_block_bytes(f->inode), start, to;
	uint32_t idx, off;
	size_t fsize;
	sqfs_u8 *tail = NULL;
	int r;

	sqfs_inode_get_file_block_start(f->inode, &start);
	to = len ? rl_space_place(s, len) : 0;
	r = rl_copy(new->file, new->path, o, start, len, to, err);
	if (r < 0)
		return r;
	if (sqfs_inode_set_file_block_start(f->inode, to))
		return -EINVAL;
	sqfs_inode_get_frag_location(f->inode, &idx, &off);
	if (idx == RL_NO_FRAG || f->size % new->super.block_size == 0)
		return 0;
	r = sqfs_data_reader_get_fragment(new->data, f->inode, &fsize, &tail);
	if (r)
		return rl_err(err, r, new->path, "fragment");
	if (o->fused + fsize > new->super.block_size)
		r = rl_frag_flush(o, s, new->super.block_size, err);
	if (r == 0) {
		memcpy(o->fbuf + o->fused, tail, fsize);
		o->fpending[o->n_fpending] = f;
		o->fpending_off[o->n_fpending++] = o->fused;
		o->fused += fsize;
	}
	free(tail);
	return r;
}

/* Content of an earlier new file (mksquashfs's deduplication, kept) */
static void rl_place_same(struct rl_file *f)
{
	const sqfs_inode_generic_t *si = f->same->inode;
	uint64_t start;
	uint32_t idx, off;

	sqfs_inode_get_file_block_start(si, &start);
	sqfs_inode_set_file_block_start(f->inode, start);
	memcpy(f->inode->extra, si->extra, sqfs_inode_get_file_block_count(si) * sizeof(uint32_t));
	sqfs_inode_get_frag_location(si, &idx, &off);
	sqfs_inode_set_frag_location(f->inode, idx, off);
}

/* ---- the tables ---- */

struct rl_tables {
	sqfs_meta_writer_t *im, *dm;
	sqfs_dir_writer_t *dirw;
	sqfs_xattr_reader_t *xr;
	sqfs_xattr_writer_t *xw;
	uint64_t *refs;                 /* inode number -> reference + 1 */
};

static int rl_xattr(struct rl_tables *t, sqfs_inode_generic_t *inode)
{
	sqfs_xattr_id_t desc;
	uint32_t idx, nidx;
	int r;

	if (sqfs_inode_get_xattr_index(inode, &idx) || idx == RL_NO_XATTR || !t->xr)
		return 0;
	if ((r = sqfs_xattr_reader_get_desc(t->xr, idx, &desc)) ||
	    (r = sqfs_xattr_reader_seek_kv(t->xr, &desc)) ||
	    (r = sqfs_xattr_writer_begin(t->xw, 0)))
		return r;
	for (uint32_t i = 0; i < desc.count; i++) {
		sqfs_xattr_entry_t *key = NULL;
		sqfs_xattr_value_t *val = NULL;

		r = sqfs_xattr_reader_read_key(t->xr, &key);
		if (r == 0)
			r = sqfs_xattr_reader_read_value(t->xr, key, &val);
		if (r == 0)
			r = sqfs_xattr_writer_add(t->xw, (const char *)key->key, val->value,
						  val->size);
		free(key);
		free(val);
		if (r)
			return r;
	}
	if ((r = sqfs_xattr_writer_end(t->xw, &nidx)))
		return r;
	return sqfs_inode_set_xattr_index(inode, nidx);
}

static int rl_emit(struct rl_tables *t, sqfs_tree_node_t *n, uint64_t *ret_ref);

/* A directory: its children first, then its listing, then its inode */
static int rl_emit_dir(struct rl_tables *t, sqfs_tree_node_t *n, sqfs_inode_generic_t **ret)
{
	const sqfs_inode_generic_t *o = n->inode;
	sqfs_inode_generic_t *d;
	uint32_t xattr, parent;
	uint64_t ref;
	int r;

	for (sqfs_tree_node_t *c = n->children; c; c = c->next)
		if ((r = rl_emit(t, c, &ref)))
			return r;
	if ((r = sqfs_dir_writer_begin(t->dirw, 0)))
		return r;
	for (sqfs_tree_node_t *c = n->children; c; c = c->next)
		if ((r = sqfs_dir_writer_add_entry(t->dirw, (const char *)c->name,
						   c->inode->base.inode_number,
						   t->refs[c->inode->base.inode_number] - 1,
						   c->inode->base.mode)))
			return r;
	if ((r = sqfs_dir_writer_end(t->dirw)))
		return r;
	sqfs_inode_get_xattr_index(o, &xattr);
	parent = o->base.type == SQFS_INODE_DIR ? o->data.dir.parent_inode :
		 o->data.dir_ext.parent_inode;
	d = sqfs_dir_writer_create_inode(t->dirw, 0, xattr, parent);
	if (!d)
		return SQFS_ERROR_ALLOC;
	d->base.mode = o->base.mode;
	d->base.uid_idx = o->base.uid_idx;
	d->base.gid_idx = o->base.gid_idx;
	d->base.mod_time = o->base.mod_time;
	d->base.inode_number = o->base.inode_number;
	if (d->base.type == SQFS_INODE_DIR)
		d->data.dir.nlink = o->base.type == SQFS_INODE_DIR ? o->data.dir.nlink :
				    o->data.dir_ext.nlink;
	else
		d->data.dir_ext.nlink = o->base.type == SQFS_INODE_DIR ? o->data.dir.nlink :
					o->data.dir_ext.nlink;
	*ret = d;
	return 0;
}

/* Post-order: every inode is written before the listing that names it.
 * A hard link's second name takes the reference of the first. */
static int rl_emit(struct rl_tables *t, sqfs_tree_node_t *n, uint64_t *ret_ref)
{
	uint32_t ino = n->inode->base.inode_number;
	sqfs_inode_generic_t *dir = NULL, *inode = n->inode;
	sqfs_u64 block;
	sqfs_u32 offset;
	int r;

	if (t->refs[ino]) {
		*ret_ref = t->refs[ino] - 1;
		return 0;
	}
	if (S_ISDIR(n->inode->base.mode)) {
		r = rl_emit_dir(t, n, &dir);
		if (r)
			return r;
		inode = dir;
	}
	r = rl_xattr(t, inode);
	if (r == 0) {
		sqfs_meta_writer_get_position(t->im, &block, &offset);
		*ret_ref = block << 16 | offset;
		t->refs[ino] = *ret_ref + 1;
		r = sqfs_meta_writer_write_inode(t->im, inode);
	}
	free(dir);
	return r;
}

static int rl_write_tables(struct rl_image *new, struct rl_out *o, sqfs_super_t *super,
			   struct error *err)
{
	struct rl_tables t = {};
	uint64_t root_ref = 0;
	int r = -ENOMEM;

	bool exportable = super->flags & SQFS_FLAG_EXPORTABLE &&
			  super->export_table_start != RL_NO_TABLE;
	t.refs = calloc(super->inode_count + 1, sizeof(*t.refs));
	t.im = sqfs_meta_writer_create(o->file, o->cmp, 0);
	t.dm = sqfs_meta_writer_create(o->file, o->cmp, SQFS_META_WRITER_KEEP_IN_MEMORY);
	t.dirw = t.dm ? sqfs_dir_writer_create(t.dm, exportable ?
					       SQFS_DIR_WRITER_CREATE_EXPORT_TABLE : 0) : NULL;
	t.xw = sqfs_xattr_writer_create(0);
	if (!t.refs || !t.im || !t.dm || !t.dirw || !t.xw)
		goto out;
	if (!(super->flags & SQFS_FLAG_NO_XATTRS) && super->xattr_id_table_start != RL_NO_TABLE) {
		t.xr = sqfs_xattr_reader_create(0);
		if (!t.xr)
			goto out;
		if ((r = sqfs_xattr_reader_load(t.xr, &new->super, new->file, new->cmp))) {
			r = rl_err(err, r, new->path, "xattr table");
			goto out;
		}
	}
	super->inode_table_start = o->file->get_size(o->file);
	r = rl_emit(&t, new->root, &root_ref);
	if (r == 0)
		r = sqfs_meta_writer_flush(t.im);
	if (r == 0)
		r = sqfs_meta_writer_flush(t.dm);
	super->root_inode_ref = root_ref;
	super->directory_table_start = o->file->get_size(o->file);
	if (r == 0)
		r = sqfs_meta_write_write_to_file(t.dm);
	if (r == 0)
		r = sqfs_frag_table_write(o->frags, o->file, super, o->cmp);
	if (r == 0 && exportable)
		r = sqfs_dir_writer_write_export_table(t.dirw, o->file, o->cmp,
						       new->root->inode->base.inode_number,
						       root_ref, super);
	if (r == 0 && !exportable)
		super->export_table_start = RL_NO_TABLE;
	if (r == 0)
		r = sqfs_id_table_write(new->ids, o->file, super, o->cmp);
	if (r == 0)
		r = sqfs_xattr_writer_flush(t.xw, o->file, super, o->cmp);
	if (r)
		r = rl_err(err, r, o->path, "writing the tables");
out:
	rl_destroy(t.xw);
	rl_destroy(t.xr);
	rl_destroy(t.dirw);
	rl_destroy(t.dm);
	rl_destroy(t.im);
	free(t.refs);
	return r;
}

/* ---- the whole ---- */

static bool rl_has_frag(const sqfs_inode_generic_t *inode)
{
	uint32_t idx, off;

	sqfs_inode_get_frag_location(inode, &idx, &off);
	return idx != RL_NO_FRAG;
}

/* The old file with f's content, stored the same way (blocks and tail) */
static const struct rl_file *rl_find_old(const struct rl_image *old, const struct rl_file *f)
{
	const struct rl_file *o = bsearch(f, old->files, old->n_files, sizeof(*f), rl_file_cmp);

	if (!o || !f->size ||
	    sqfs_inode_get_file_block_count(o->inode) != sqfs_inode_get_file_block_count(f->inode) ||
	    rl_has_frag(o->inode) != rl_has_frag(f->inode))
		return NULL;
	return o;
}

/* The same compressor, options and block size: the old compressed
 * blocks are what the new image's compressor would have written. */
static int rl_check_compat(const struct rl_image *old, const struct rl_image *new,
			   struct error *err)
{
	if (old->super.compression_id != new->super.compression_id)
		return error_set(err, -EMEDIUMTYPE, "%s is compressed with %s, %s with %s",
				 old->path, sqfs_compressor_name_from_id(old->super.compression_id),
				 new->path, sqfs_compressor_name_from_id(new->super.compression_id));
	if (old->super.block_size != new->super.block_size)
		return error_set(err, -EMEDIUMTYPE, "%s has blocks of %u bytes, %s of %u",
				 old->path, old->super.block_size, new->path,
				 new->super.block_size);
	/* no options (the default ones) on both: no buffer to compare */
	if (old->opts_len != new->opts_len ||
	    (old->opts_len && memcmp(old->opts, new->opts, old->opts_len)))
		return error_set(err, -EMEDIUMTYPE, "%s and %s differ in their compressor options",
				 old->path, new->path);
	return 0;
}

static int rl_out_open(struct rl_out *o, const struct rl_image *new, const struct rl_image *old,
		       struct error *err)
{
	sqfs_compressor_config_t cfg;
	uint32_t bs = new->super.block_size;
	int r;

	o->file = sqfs_open_file(o->path, SQFS_FILE_OPEN_OVERWRITE);
	if (!o->file)
		return error_set(err, -errno ?: -EIO, "%s: %s", o->path, strerror(errno));
	r = sqfs_compressor_config_init(&cfg, new->super.compression_id, bs, 0);
	if (r == 0)
		r = sqfs_compressor_create(&cfg, &o->cmp);
	/* the new image's options (dictionary size, filters) for the tables too */
	if (r == 0 && new->opts_len)
		r = o->cmp->read_options(o->cmp, new->file);
	if (r)
		return rl_err(err, r, new->path, "compressor");
	o->frags = sqfs_frag_table_create(0);
	o->old_frag = malloc((sqfs_frag_table_get_size(old->frags) + 1) * sizeof(uint32_t));
	o->fbuf = malloc(bs);
	o->cbuf = malloc(bs);
	o->fpending = calloc(new->n_files + 1, sizeof(*o->fpending));
	o->fpending_off = calloc(new->n_files + 1, sizeof(*o->fpending_off));
	if (!o->frags || !o->old_frag || !o->fbuf || !o->cbuf || !o->fpending || !o->fpending_off)
		return -ENOMEM;
	memset(o->old_frag, 0xff, (sqfs_frag_table_get_size(old->frags) + 1) * sizeof(uint32_t));
	return 0;
}

static void rl_out_done(struct rl_out *o)
{
	rl_destroy(o->frags);
	rl_destroy(o->cmp);
	rl_destroy(o->file);
	free(o->old_frag);
	free(o->fbuf);
	free(o->cbuf);
	free(o->fpending);
	free(o->fpending_off);
}

/* The data region: the old image's bytes (so that holes nobody fills
 * stay as they were on the flash), kept extents, then the new data. */
static int rl_layout_data(struct rl_image *old, struct rl_image *new, struct rl_out *o,
			  struct rl_space *s, struct squashfs_relayout_stats *st,
			  struct error *err)
{
	size_t cap = 0;
	uint64_t live;
	int r;

	for (size_t i = 0; i < new->n_files; i++) {
		struct rl_file *f = &new->files[i];
		if (i && !rl_file_cmp(f, f - 1))
			f->same = (f - 1)->same ?: f - 1;
		else
			f->old = rl_find_old(old, f);
		if (f->old && (r = rl_keep(f, old, o, s, &cap)) < 0)
			return error_prefix(err, r, "%s: keeping inode %u", new->path,
					    f->inode->base.inode_number);
		st->files_kept += !!f->old;
	}
	r = rl_space_holes(s, new->data_start, &live);
	if (r < 0)
		return r;
	st->bytes_kept = live;
	r = rl_copy(old->file, old->path, o, 0, MAX(old->data_end, new->data_start), 0, err);
	if (r == 0 && new->opts_len)
		r = rl_copy(new->file, new->path, o, RL_SUPER_SIZE, new->opts_len, RL_SUPER_SIZE, err);
	for (size_t i = 0; r == 0 && i < new->n_files; i++) {
		struct rl_file *f = &new->files[i];
		if (f->old || f->same)
			continue;
		r = rl_place_new(f, new, o, s, err);
		st->files_new++;
	}
	if (r == 0)
		r = rl_frag_flush(o, s, new->super.block_size, err);
	for (size_t i = 0; r == 0 && i < new->n_files; i++)
		if (new->files[i].same && !new->files[i].old)
			rl_place_same(&new->files[i]);
	if (r < 0)
		return r;
	st->bytes_new = s->bytes_new;
	st->bytes_dead = s->data_end - new->data_start - live - s->bytes_new;
	if ((r = o->file->truncate(o->file, s->data_end)))
		return rl_err(err, r, o->path, "truncate");
	return 0;
}

static int rl_finish(struct rl_out *o, sqfs_super_t *super, struct error *err)
{
	static const uint8_t zero[RL_PAD];
	int r;

	super->bytes_used = o->file->get_size(o->file);
	r = sqfs_super_write(super, o->file);
	if (r == 0 && super->bytes_used % RL_PAD)
		r = o->file->write_at(o->file, super->bytes_used, zero,
				      RL_PAD - super->bytes_used % RL_PAD);
	return r ? rl_err(err, r, o->path, "write") : 0;
}

static int rl_relayout(struct rl_image *old, struct rl_image *new, struct rl_out *o,
		       struct squashfs_relayout_stats *st, struct error *err)
{
	struct rl_space s = {};
	sqfs_super_t super = new->super;
	int r;

	r = rl_out_open(o, new, old, err);
	if (r == 0)
		r = rl_layout_data(old, new, o, &s, st, err);
	if (r == 0)
		r = rl_write_tables(new, o, &super, err);
	if (r == 0)
		r = rl_finish(o, &super, err);
	st->image_size = o->file ? o->file->get_size(o->file) : 0;
	free(s.live);
	free(s.holes);
	return r;
}

static int rl_plain(const struct rl_image *new, const char *out_path, struct error *err)
{
	struct rl_out o = { .path = out_path };
	int r;

	o.file = sqfs_open_file(out_path, SQFS_FILE_OPEN_OVERWRITE);
	if (!o.file)
		return error_set(err, -errno ?: -EIO, "%s: %s", out_path, strerror(errno));
	r = rl_copy(new->file, new->path, &o, 0, new->file->get_size(new->file), 0, err);
	rl_destroy(o.file);
	return r;
}

int squashfs_relayout(const char *base_path, const char *new_path, const char *out_path,
		      unsigned max_growth_pct, struct squashfs_relayout_stats *ret,
		      struct error *err)
{
	struct rl_image old = {}, new = {};
	struct rl_out o = { .path = out_path };
	struct squashfs_relayout_stats st = {};
	int r;

	r = rl_image_open(&old, base_path, err);
	if (r == 0)
		r = rl_image_open(&new, new_path, err);
	if (r == 0)
		r = rl_check_compat(&old, &new, err);
	if (r == 0)
		r = rl_hash_files(&old, err);
	if (r == 0)
		r = rl_hash_files(&new, err);
	if (r == 0) {
		qsort(old.files, old.n_files, sizeof(*old.files), rl_file_cmp);
		/* by content: equal files side by side (the data order of
		 * new content is the order of its hashes) */
		qsort(new.files, new.n_files, sizeof(*new.files), rl_file_cmp);
		st.plain_size = new.file->get_size(new.file);
		r = rl_relayout(&old, &new, &o, &st, err);
	}
	rl_out_done(&o);
	/* compaction: past the bound the plain layout is the better start */
	if (r == 0 && st.image_size * 100 > st.plain_size * (100 + (uint64_t)max_growth_pct)) {
		st.compacted = true;
		r = rl_plain(&new, out_path, err);
		st.image_size = st.plain_size;
	}
	rl_image_done(&old);
	rl_image_done(&new);
	if (r < 0)
		return r;
	*ret = st;
	return 0;
}
