/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_record.h"
#include "bundle_reader.h"
#include "cleanup.h"
#include "env.h"
#include "hash.h"
#include "install.h"
#include "install_index.h"
#include "install-internal.h"
#include "slot.h"
#include "slot_seal.h"
#include "slot_boot.h"
#include "slot_change.h"
#include "util.h"
#include "version.h"

static const char *const install_phase_table[] = { INSTALL_PHASE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(install_phase, enum install_phase)
static const char *const install_downgrade_policy_table[] = {
	INSTALL_DOWNGRADE_POLICY_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE(install_downgrade_policy, enum install_downgrade_policy)
static const char *const install_downgrade_table[] = { INSTALL_DOWNGRADE_LIST(STRING_TABLE_NAME) };
DEFINE_STRING_TABLE_TO(install_downgrade, enum install_downgrade)
static const char *const install_version_from_table[] = {
	INSTALL_VERSION_FROM_LIST(STRING_TABLE_NAME)
};
DEFINE_STRING_TABLE(install_version_from, enum install_version_from)

static int env_change(struct install *in, enum slot_op op, const char *version);

/* Once the target is marked bad, the end of the install is recorded in
 * one more store: failed or cancelled, and (again) out of BOOT_ORDER,
 * whatever another writer did to the env in between. */
static void record_end(struct install *in, int r)
{
	struct error failure, recording;

	if (!in->marked_bad || in->recorded)
		return;
	in->recorded = true;
	error_copy(&failure, &in->err);
	in->error = 0; /* env_change reports through install_fail() */
	if (env_change(in, r == -ECANCELED ? SLOT_OP_INSTALL_CANCELLED : SLOT_OP_INSTALL_FAILED,
		       NULL) < 0) {
		error_copy(&recording, &in->err);
		error_set(&in->err, r, "%s (and recording it failed: %.160s)", failure.msg,
			  recording.msg);
	} else {
		error_copy(&in->err, &failure);
	}
	in->error = r;
}

/* The install failed with r, in->err says why (set by the caller, or by
 * the part that failed writing into in->err directly). */
int install_failed(struct install *in, int r)
{
	if (in->error)
		return in->error;
	in->error = r;
	in->phase = INSTALL_PHASE_FAILED;
	in->stats.finished = time(NULL);
	record_end(in, r);
	return r;
}

int install_fail(struct install *in, int r, const char *fmt, ...)
{
	va_list ap;

	if (in->error)
		return in->error;
	va_start(ap, fmt);
	error_setv(&in->err, r, fmt, ap);
	va_end(ap);
	return install_failed(in, r);
}

int install_report(struct install *in, int r, struct error *err)
{
	if (r < 0)
		error_copy(err, &in->err);
	return r;
}

const char *install_slot_name(const struct install *in)
{
	return in->slot >= 0 ? in->group->slots[in->slot].name : NULL;
}

void install_progress_at(struct install *in, const char *image, uint64_t done)
{
	struct install_progress pr = {
		.phase = in->phase,
		.total = in->total,
		.image = image,
		.slot = install_slot_name(in),
	};

	if (!in->p.progress)
		return;
	/* an adaptive install's ticks count blocks skipped as done too */
	pr.done = in->done_shown = MAX(done, in->done_shown);
	pr.percent = in->phase == INSTALL_PHASE_DONE ? 100 :
		     pr.total ? (unsigned)(pr.done * 99 / pr.total) : 0;
	in->p.progress(in->p.userdata, &pr);
}

void install_progress(struct install *in, const char *image)
{
	install_progress_at(in, image, in->stats.bytes_written + in->stats.bytes_verified);
}

/* ---- env transactions: exactly one store each ---- */

static int env_change(struct install *in, enum slot_op op, const char *version)
{
	_cleanup_env_ struct env *e = NULL;
	struct slot_change_result res;
	char var[64];
	int r;

	if (in->error)
		return in->error;
	/* the parts below write their message into in->err directly */
	error_clear(&in->err);
	r = env_open_layout(in->layout, in->p.target, NULL, 0, &e, &in->err);
	if (r < 0)
		return install_failed(in, error_prefix(&in->err, r, "cannot open the U-Boot env"));
	/* the version goes with the content: forgotten when writing starts,
	 * set when the read-back verified */
	slot_version_var(in->group->slots[in->slot].name, var, sizeof(var));
	r = slot_change(e, in->group, &(struct slot_change) {
			.op = op, .slot = in->slot, .booted = -1,
			.flags = op == SLOT_OP_INSTALL_FAILED || op == SLOT_OP_INSTALL_CANCELLED ?
				 SLOT_FORCE : 0,
			.extra_name = op == SLOT_OP_INSTALL_BEGIN || version ? var : NULL,
			.extra_value = version }, &res, &in->err);
	if (r < 0 && res.fail == SLOT_CHANGE_ENV && res.before.n_slots)
		return install_failed(in, error_prefix(&in->err, r, "writing the U-Boot env (%s)",
						       env_describe(e)));
	if (r < 0)
		return install_failed(in, error_prefix(&in->err, r, "slot env"));
	return 0;
}

/* ---- manifest: pick the target, check room, mark it bad ---- */

static _printf_(4, 5) int slot_decided(struct install_slot *d, int target, int r,
					const char *fmt, ...)
{
	va_list ap;

	d->target = target;
	d->error = r;
	va_start(ap, fmt);
	error_setv(&d->err, r, fmt, ap);
	va_end(ap);
	return r;
}

int install_slot_decide(const struct layout *l, const struct layout_slot_group *g,
			const char *cmdline, const char *target, const char *slot,
			struct install_slot *ret)
{
	const struct slot_boot_where w = { .cmdline = cmdline, .target = target };
	int booted;

	*ret = (struct install_slot){ .target = -1, .booted = -1 };
	booted = slot_booted(&w, l, g, NULL, &ret->err);
	/* any failure but "on no slot" is a refusal: a slot that could be
	 * running is never written */
	if (booted < 0 && booted != -ENOENT)
		return ret->error = error_prefix(&ret->err, -EBUSY, "refusing to write a slot: "
						 "it could be the running root");
	error_clear(&ret->err);
	ret->booted = booted < 0 ? -1 : booted;
	if (slot) {
		for (size_t i = 0; i < g->n_slots; i++) {
			if (strcmp(g->slots[i].name, slot))
				continue;
			/* the running root is never written (a root on no slot
			 * is a board being provisioned from outside) */
			if ((int)i == booted)
				return slot_decided(ret, (int)i, -EBUSY, "refusing to install into slot "
					       "%s: it is the booted slot (the running root), never "
					       "written; the env is unchanged", slot);
			ret->target = (int)i;
			return 0;
		}
		return slot_decided(ret, -1, -ENOENT, "slot group '%s' has no slot '%s'", g->name, slot);
	}
	if (booted < 0)
		return slot_decided(ret, -1, -ENOENT, "cannot tell which slot is booted: the running "
			       "root is on no slot (and %s has no flashd.slot= or rauc.slot=): "
			       "refusing to guess the target; name it (--slot)",
			       cmdline ? cmdline : "/proc/cmdline");
	/* A/B: the target is the one that is not running */
	if (g->n_slots != 2)
		return slot_decided(ret, -1, -EINVAL, "slot group '%s' has %zu slots; name the target",
			       g->name, g->n_slots);
	ret->target = 1 - booted;
	return 0;
}

/* The target: the decision handed down, or this install's own. */
static int pick_slot(struct install *in, int *ret_booted)
{
	struct install_slot own;
	const struct install_slot *d = in->p.decided;

	if (!d) {
		install_slot_decide(in->layout, in->group, in->p.cmdline, in->p.target, in->p.slot,
				    &own);
		d = &own;
	}
	*ret_booted = d->booted;
	if (d->error) {
		error_copy(&in->err, &d->err);
		return install_failed(in, d->error);
	}
	return d->target;
}

/* The version the env records for the running slot (FLASHD_<slot>_VERSION,
 * what status shows): only the activation store sets it, after the
 * read-back verified the slot; the mark-bad store before any write clears
 * it; a raw write of it is root's alone (slot_change_check_raw). A record,
 * not a read: used only where no signed manifest was kept. */
static void env_version(struct install *in, const char *slot)
{
	_cleanup_env_ struct env *e = NULL;
	_cleanup_free_ char *v = NULL;
	char var[64];

	if (env_open_layout(in->layout, in->p.target, NULL, 0, &e, NULL) < 0)
		return;
	slot_version_var(slot, var, sizeof(var));
	v = env_get_dup(e, var);
	if (!v || !*v)
		return;
	snprintf(in->stats.running_version, sizeof(in->stats.running_version), "%s", v);
	in->stats.running_version_from = INSTALL_VERSION_FROM_ENV;
}

/* The running slot's version, to compare the bundle's with, into stats:
 * the signed manifest kept for it, verified again against the keyring and
 * its block records (block_record.h); where none can be verified because
 * none is kept or no key of the keyring signed it (deleting the file does
 * as much), the env's record. A kept manifest that does not verify is
 * trusted for nothing, and the env is not taken in its place: -errno, err
 * says why. It decides a policy that root may override, never what boots. */
static int running_version(struct install *in, int booted, struct error *err)
{
	const char *slot = in->group->slots[booted].name;
	struct install_stats *st = &in->stats;
	struct bundle_manifest m;
	int r = in->p.state_dir ? block_record_manifest_load(in->p.state_dir, in->group->name, slot,
							     in->p.keyring, in->layout->compatible,
							     &m, err) : -ENOENT;

	if (r >= 0) {
		snprintf(st->running_version, sizeof(st->running_version), "%s", m.version);
		st->running_version_from = INSTALL_VERSION_FROM_MANIFEST;
		return 0;
	}
	if (r != -ENOENT && r != -ENOKEY) {
		st->running_version_from = INSTALL_VERSION_FROM_UNVERIFIED;
		return error_prefix(err, r, "its kept manifest");
	}
	error_clear(err);
	env_version(in, slot);
	return 0;
}

/* The refusal of downgrade=refuse, before anything is written. */
static int refuse_downgrade(struct install *in, int booted, const struct bundle_manifest *m,
			    int unverified)
{
	const char *slot = in->group->slots[booted].name;

	in->stats.downgrade = INSTALL_DOWNGRADE_REFUSED;
	if (unverified < 0)
		return install_failed(in, error_prefix(&in->err, -EPERM, "refusing to install "
				      "version %s, it could be a downgrade (downgrade=refuse; "
				      "nothing was written, the env is unchanged; install it anyway "
				      "with --allow-downgrade): the version of the running slot %s "
				      "cannot be trusted", m->version, slot));
	return install_fail(in, -EPERM, "refusing to downgrade: bundle version %s is older than "
			    "version %s of the running slot %s (downgrade=refuse); nothing was "
			    "written, the env is unchanged; allow it once with --allow-downgrade",
			    m->version, in->stats.running_version, slot);
}

/* The downgrade policy, before anything is written: a bundle older than
 * the running slot's version, or compared with a version that cannot be
 * trusted, is refused (-EPERM, the env untouched), warned about or
 * allowed, as in->p says; stats say what was decided. */
static int check_downgrade(struct install *in, int booted, const struct bundle_manifest *m)
{
	struct install_stats *st = &in->stats;
	int unverified;

	if (booted < 0)
		return 0;
	unverified = running_version(in, booted, &in->err);
	if (unverified >= 0 && (!st->running_version[0] ||
				version_compare(m->version, st->running_version) >= 0))
		return 0;
	switch (in->p.downgrade) {
	case INSTALL_DOWNGRADE_POLICY_ALLOW:
		st->downgrade = INSTALL_DOWNGRADE_ALLOWED;
		break;
	case INSTALL_DOWNGRADE_POLICY_WARN:
		st->downgrade = INSTALL_DOWNGRADE_WARNED;
		break;
	case INSTALL_DOWNGRADE_POLICY_REFUSE:
		if (!in->p.allow_downgrade)
			return refuse_downgrade(in, booted, m, unverified);
		st->downgrade = INSTALL_DOWNGRADE_OVERRIDDEN;
		break;
	case _INSTALL_DOWNGRADE_POLICY_MAX:
		return install_fail(in, -EINVAL, "unknown downgrade policy %d", in->p.downgrade);
	}
	error_clear(&in->err);
	return 0;
}

const struct layout_image_target *install_member_target(const struct layout_slot *s,
							const char *member)
{
	if (!strcmp(member, "rootfs"))
		return &s->rootfs;
	if (!strcmp(member, "kernel") && s->has_kernel)
		return &s->kernel;
	return NULL;
}

static int on_manifest(void *userdata, const struct bundle_manifest *m, struct error *err)
{
	struct install *in = userdata;
	const struct layout_slot *s;
	int r, booted;

	r = pick_slot(in, &booted);
	if (r < 0)
		goto refuse;
	in->slot = r;
	r = check_downgrade(in, booted, m);
	if (r < 0)
		goto refuse;
	s = &in->group->slots[in->slot];
	for (size_t i = 0; i < m->n_images; i++) {
		struct install_target *t = &in->targets[i];
		t->img = &m->images[i];
		t->lt = install_member_target(s, t->img->slot);
		if (!t->lt) {
			r = install_fail(in, -ENXIO, "bundle image '%s' has no place in slot %s "
					 "of group '%s'", t->img->slot, s->name, in->group->name);
			goto refuse;
		}
		/* the group's image type is the root filesystem's; the env is untouched yet */
		if (!strcmp(t->img->slot, "rootfs") && in->group->image_type &&
		    strcmp(bundle_image_type_to_string(t->img->type), in->group->image_type)) {
			r = install_fail(in, -EMEDIUMTYPE, "image 'rootfs' is of type %s; slot "
					 "group '%s' takes %s images",
					 bundle_image_type_to_string(t->img->type),
					 in->group->name, in->group->image_type);
			goto refuse;
		}
		if (t->lt->storage != LAYOUT_STORAGE_UBI && t->lt->part &&
		    t->img->size > install_target_room(in, t)) {
			r = install_fail(in, -EFBIG, "image '%s' (%" PRIu64 " bytes) is larger "
					 "than partition '%s' (%" PRIu64 " bytes%s)", t->img->slot,
					 t->img->size, t->lt->part->name, install_target_room(in, t),
					 install_target_sealed(in, t) ? " before its seal block" : "");
			goto refuse;
		}
		in->total += 2 * t->img->size;
	}
	in->n_targets = m->n_images;
	for (size_t i = 0; i < in->n_targets; i++)
		if ((r = install_target_open(in, &in->targets[i])) < 0)
			goto refuse;
	/* The slot is marked bad right before its first byte is written
	 * (install_mark_bad_once), not here: a bundle refused for its first image's
	 * squashfs superblock, or cut short before any payload, leaves the env
	 * as it was. */
	in->phase = INSTALL_PHASE_WRITE;
	install_progress(in, NULL);
	return 0;
refuse:
	return r;
}

static struct install_target *target_of(struct install *in, const struct bundle_image *img)
{
	return img->index < in->n_targets ? &in->targets[img->index] : NULL;
}

/* A block record never outlives the first write of what it describes:
 * each target's goes (durably) before the mark-bad store, and the slot's
 * kept manifest with them. */
static int drop_records(struct install *in)
{
	int r = in->p.state_dir ? block_record_manifest_drop(in->p.state_dir, in->group->name,
							      install_slot_name(in)) : 0;

	if (r < 0)
		return install_fail(in, r, "cannot delete the kept manifest of slot %s in %s: %s; "
				    "nothing was written", install_slot_name(in), in->p.state_dir,
				    strerror(-r));
	for (size_t i = 0; in->p.state_dir && i < in->n_targets; i++) {
		r = block_record_drop(in->p.state_dir, in->group->name, install_slot_name(in),
				      in->targets[i].img->slot);
		if (r < 0)
			return install_fail(in, r, "cannot delete the block record of image "
					    "'%s' in %s: %s; nothing was written",
					    in->targets[i].img->slot, in->p.state_dir,
					    strerror(-r));
	}
	return 0;
}

/* A sealed group's seal (slot_seal.h): gone before the first payload
 * byte, back only after the read-back verified, so that the boot script
 * of a lost env never boots what this install left half-written. */
static int set_seal(struct install *in, bool sealed)
{
	const struct layout_slot *s = &in->group->slots[in->slot];
	int r;

	if (!in->group->seal)
		return 0;
	error_clear(&in->err);
	r = slot_seal_set(in->p.board, s, sealed, &in->err);
	return r < 0 ? install_failed(in, r) : 0;
}

/* Nothing on flash changes before this single store. */
int install_mark_bad_once(struct install *in, struct error *err)
{
	int r;

	if (in->marked_bad)
		return 0;
	r = drop_records(in);
	if (r < 0)
		return r;
	r = env_change(in, SLOT_OP_INSTALL_BEGIN, NULL);
	if (r < 0)
		return r;
	in->marked_bad = true;
	return set_seal(in, false);
}

/* One writer at a time: memory stays at one erase block (and its compare
 * copy) however many images the bundle has. */
static int on_image_begin(void *userdata, const struct bundle_image *img, struct error *err)
{
	struct install *in = userdata;
	struct install_target *t = target_of(in, img);
	int r;

	if (!t) {
		r = install_fail(in, -EINVAL, "image %u '%s' is not in the manifest the "
				 "install planned for", img->index, img->slot);
		return r;
	}
	/* the adaptive path reads no payload through the reader */
	if (in->adaptive)
		return 0;
	r = t->ops->begin(in, t);
	if (r < 0)
		return r;
	in->current = t;
	return 0;
}

/* The image being written, once its slot is marked bad (install_mark_bad_once). */
static int current_target(struct install *in, struct install_target **ret, struct error *err)
{
	int r = install_mark_bad_once(in, err);

	if (r < 0)
		return r;
	*ret = in->current;
	return 0;
}

static int on_image_data(void *userdata, const struct bundle_image *img, const void *buf,
			 size_t len, struct error *err)
{
	struct install *in = userdata;
	struct install_target *t;
	int r = current_target(in, &t, err);

	if (r >= 0)
		r = t->ops->data(in, t, buf, len);
	if (r < 0)
		return r;
	in->stats.bytes_written += len;
	install_progress(in, img->slot);
	return 0;
}

static int on_image_end(void *userdata, const struct bundle_image *img, struct error *err)
{
	struct install *in = userdata;
	struct install_target *t;
	/* an empty image still changes the slot: never written unmarked */
	int r = current_target(in, &t, err);

	if (r >= 0)
		r = t->ops->end(in, t);
	if (r < 0)
		return r;
	in->closed = in->stats;
	in->current = NULL;
	return 0;
}

static const struct bundle_reader_ops reader_ops = {
	.manifest = on_manifest,
	.image_begin = on_image_begin,
	.image_data = on_image_data,
	.image_end = on_image_end,
};

/* ---- life cycle ---- */

int install_new(const struct install_params *p, struct install **ret)
{
	_cleanup_(install_freep) struct install *in = calloc(1, sizeof(*in));
	int r;

	if (!in)
		return -ENOMEM;
	in->p = *p;
	in->layout = board_layout(p->board);
	in->group = p->group ? p->group : in->layout->n_groups ? &in->layout->groups[0] : NULL;
	if (!in->group)
		return -ENOENT;
	in->slot = -1;
	in->policy = (struct bundle_policy){
		.keyring = p->keyring,
		.allow_unsigned = p->allow_unsigned,
		.compatible = in->layout->compatible,
	};
	r = bundle_reader_new(&in->policy, &reader_ops, in, &in->reader);
	if (r < 0)
		return r;
	in->stats.started = time(NULL);
	*ret = TAKE_PTR(in);
	return 0;
}

void install_free(struct install *in)
{
	if (!in)
		return;
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++)
		if (in->targets[i].ops)
			in->targets[i].ops->close(&in->targets[i]);
	for (size_t i = 0; i < BUNDLE_MAX_IMAGES; i++) {
		block_record_free(in->recs[i]);
		block_record_free(in->other_recs[i]);
		flash_close(in->other_flash[i]);
		flash_close(in->verify_flash[i]);
	}
	board_close(in->verify_board);
	free(in->vbuf);
	bundle_reader_free(in->reader);
	free(in);
}

int install_feed(struct install *in, const void *buf, size_t len, struct error *err)
{
	int r;

	if (in->error)
		return install_report(in, in->error, err);
	if (in->phase != INSTALL_PHASE_MANIFEST && in->phase != INSTALL_PHASE_WRITE)
		return install_report(in, install_fail(in, -EINVAL, "bundle data after the end "
						       "of the bundle"), err);
	/* the reader and the callbacks below it write into in->err */
	r = bundle_reader_feed(in->reader, buf, len, &in->err);
	if (r < 0)
		return install_report(in, install_failed(in, r), err);
	return 0;
}

int install_finish_input(struct install *in, struct error *err)
{
	int r;

	if (in->error)
		return install_report(in, in->error, err);
	r = bundle_reader_finish(in->reader, &in->err);
	if (r < 0)
		return install_report(in, install_failed(in, r), err);
	if (in->phase != INSTALL_PHASE_WRITE)
		return install_report(in, install_fail(in, -ENODATA, "the bundle ended before "
						       "its manifest"), err);
	in->phase = INSTALL_PHASE_VERIFY;
	install_progress(in, NULL);
	return 0;
}

int install_finish_adaptive(struct install *in)
{
	if (in->error)
		return in->error;
	if (in->phase != INSTALL_PHASE_WRITE)
		return install_fail(in, -EINVAL, "adaptive write ended in phase %s",
				    install_phase_to_string(in->phase));
	/* every block was read back after its write, or read and hashed
	 * against the signed index before it was kept: nothing is left to
	 * read back */
	in->verify_idx = in->n_targets;
	in->phase = INSTALL_PHASE_VERIFY;
	return 0;
}

void install_cancel(struct install *in)
{
	/* done means activated: there is nothing left to stop */
	if (in->phase == INSTALL_PHASE_DONE)
		return;
	if (in->marked_bad)
		install_fail(in, -ECANCELED, "cancelled; slot %s stays marked bad",
			     install_slot_name(in));
	else if (install_slot_name(in))
		install_fail(in, -ECANCELED, "cancelled before anything was written to slot "
			     "%s; the env is unchanged", install_slot_name(in));
	else
		install_fail(in, -ECANCELED, "cancelled before the manifest (no slot chosen "
			     "yet); the env is unchanged");
}

/* ---- verify: read every written byte back, one erase block per step ----
 * Raw partitions need no step here: their writer read each programmed block
 * back as it went (WRITE_FLAGS, install_target.c). UBI volumes are read back
 * and hashed. */

static int verify_begin(struct install *in, struct install_target *t)
{
	size_t unit = t->ops->read_unit(t);
	int r;

	if (in->vbuf_size < unit) {
		free(in->vbuf);
		in->vbuf = malloc(unit);
		if (!in->vbuf)
			return -ENOMEM;
		in->vbuf_size = unit;
	}
	in->buf_peak = MAX(in->buf_peak, in->vbuf_size);
	r = t->ops->verify_begin(in, t);
	if (r < 0)
		return r;
	hash_init(&in->md);
	in->vleft = t->img->size;
	in->verifying = true;
	return 0;
}

static int verify_end(struct install *in, struct install_target *t)
{
	uint8_t md[HASH_SIZE];

	hash_final(&in->md, md);
	/* what was written matched the signed sha256: the flash's fault */
	if (memcmp(md, t->img->sha256, sizeof(md)))
		return install_fail(in, -EIO, "flash I/O error: read-back of image '%s' from %s "
				    "does not match its sha256: the flash did not keep what was "
				    "written; slot %s stays marked bad", t->img->slot, t->where,
				    install_slot_name(in));
	in->verifying = false;
	in->verify_idx++;
	return 0;
}

static int verify_step(struct install *in)
{
	struct install_target *t = &in->targets[in->verify_idx];
	ssize_t n;
	int r;

	if (!t->ops->read || (t->ops->read_back_done && t->ops->read_back_done(t))) {
		in->verify_idx++;
		return 0;
	}
	if (!in->verifying && (r = verify_begin(in, t)) < 0)
		return install_fail(in, r, "verify of image '%s': %s", t->img->slot, strerror(-r));
	if (in->vleft == 0)
		return verify_end(in, t);
	n = t->ops->read(in, t, in->vbuf, MIN(in->vleft, in->vbuf_size));
	if (n < 0)
		return (int)n;
	hash_update(&in->md, in->vbuf, n);
	in->vleft -= n;
	in->stats.bytes_verified += n;
	install_progress(in, t->img->slot);
	return 0;
}

/* What each raw target now holds, for the next adaptive install, and the
 * signed manifest of it all, for the downgrade check once the slot runs:
 * saved after the read-back verified and before the activation store, so
 * a power cut in between leaves a record the env does not vouch for
 * (installing, no version): unsure, read and compared. A record that
 * cannot be saved only costs the next install reads, a manifest the next
 * comparison falls back on the env's version. An unsigned bundle's is not
 * kept: nothing would verify it. */
static void save_records(struct install *in)
{
	const struct bundle_manifest *m = bundle_reader_manifest(in->reader);
	const uint8_t *index = bundle_reader_index(in->reader);
	const uint8_t *head;
	size_t head_size;

	head = in->p.state_dir && m->is_signed ? bundle_reader_head(in->reader, &head_size) : NULL;
	if (head)
		(void)block_record_manifest_save(in->p.state_dir, in->group->name,
						 install_slot_name(in), head, head_size);

	for (size_t i = 0; in->p.state_dir && index && i < in->n_targets; i++) {
		struct install_target *t = &in->targets[i];
		_cleanup_block_record_ struct block_record *rec = NULL;

		if (!t->flash || t->flash->info.erasesize != m->block_size ||
		    install_index_record(t->flash, t->img, index, &rec) < 0)
			continue;
		(void)block_record_save(in->p.state_dir, in->group->name, install_slot_name(in),
					t->img->slot, rec);
	}
}

int install_step(struct install *in, struct error *err)
{
	int r;

	if (in->error)
		return install_report(in, in->error, err);
	switch (in->phase) {
	case INSTALL_PHASE_VERIFY:
		r = in->verify_idx < in->n_targets ? verify_step(in) : 0;
		if (r < 0)
			return install_report(in, r, err);
		if (in->verify_idx == in->n_targets) {
			in->phase = INSTALL_PHASE_ACTIVATE;
			install_progress(in, NULL);
		}
		return 1;
	case INSTALL_PHASE_ACTIVATE:
		save_records(in);
		r = set_seal(in, true);
		if (r < 0)
			return install_report(in, r, err);
		/* --no-activate still records the verified content and its version */
		r = env_change(in, in->p.activate ? SLOT_OP_INSTALL_ACTIVATE :
			       SLOT_OP_INSTALL_VERIFIED, bundle_reader_manifest(in->reader)->version);
		if (r < 0)
			return install_report(in, r, err);
		in->phase = INSTALL_PHASE_DONE;
		in->stats.finished = time(NULL);
		install_progress(in, NULL);
		return 0;
	case INSTALL_PHASE_DONE:
		return 0;
	case INSTALL_PHASE_MANIFEST:
	case INSTALL_PHASE_WRITE:
	case INSTALL_PHASE_FAILED:
	case _INSTALL_PHASE_MAX:
		break;
	}
	return install_report(in, install_fail(in, -EINVAL, "install_step in phase %s",
					       install_phase_to_string(in->phase)), err);
}

enum install_phase install_get_phase(const struct install *in) { return in->phase; }
const struct install_stats *install_get_stats(const struct install *in) { return &in->stats; }
const struct bundle_manifest *install_get_manifest(const struct install *in)
{
	return bundle_reader_manifest(in->reader);
}
const char *install_get_slot(const struct install *in)
{
	return install_slot_name(in);
}
size_t install_mem_peak(const struct install *in)
{
	/* writers and the read-back buffer never coexist (writers are freed
	 * at their image's end, verify starts after the last one) */
	return in->buf_peak + bundle_reader_mem_peak(in->reader);
}
