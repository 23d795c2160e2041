#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "board.h"
#include "cleanup_json.h"
#include "env.h"
#include "install.h"
#include "keyring.h"
#include "layout.h"
#include "log.h"
#include "manager.h"
#include "oplock.h"
#include "proto.h"
#include "proto_flashd.h"
#include "record.h"
#include "slot.h"
#include "slot_boot.h"
#include "slot_change.h"
#include "ubi_image.h"
#include "util.h"
#include "worker.h"

#define OVERLAY_RESET_VAR SLOT_OVERLAY_RESET_VAR
#define BOOT_STATE_FILE "/run/flashd/boot.json"

/* What the install worker tells the daemon: a record of fixed size on the
 * report pipe (worker.h), progress or, once, the end. Strings are
 * NUL-terminated ("" = none). */
struct install_report {
	bool final;
	enum install_phase phase;
	unsigned percent;
	uint64_t done, total;
	char image[64];
	char slot[64];
	char version[BUNDLE_VERSION_MAX + 1];
	/* final only */
	int error;                     /* 0 or -errno; -ECANCELED: cancelled */
	bool invalid_bundle;           /* the bundle is what failed (flashctl exits 3) */
	char message[ERROR_MSG_MAX];
	char compatible[BUNDLE_COMPATIBLE_MAX + 1];
	char signer[256];
	struct install_stats stats;
};
_Static_assert(sizeof(struct install_report) <= WORKER_MSG_MAX, "one atomic pipe write");

static struct json_object *progress_json(const struct install_report *p);

struct operation {
	const char *name;              /* "install", "health-check"; NULL = idle */
	struct worker *worker;
	struct proto_call *call;
	int bundle_fd;
	char *slot;                    /* requested target */
	struct oplock *lock;           /* the board's lock, until the worker has it */
	bool activate;
	bool cancelled;
	int health_slot;               /* the booted slot the health check runs for */
	struct install_report final;   /* the worker's end report (final: true once it came) */
	struct install_report last;    /* the last progress report */
	bool has_progress;             /* last is set */
	sd_event_source *timeout;
	time_t started;
};

struct manager {
	struct conf *conf;
	struct layout *layout;
	const struct layout_slot_group *group;
	struct keyring *keyring;
	sd_event *event;
	struct proto_server *server;
	struct proto_method methods[_PROTO_FLASHD_METHOD_MAX + 1]; /* io.flashd, bound here */
	struct operation op;
	bool socket_owned;             /* bound by us (not systemd): unlink at exit */
	bool stopping;                 /* SIGTERM came during an install */
	sd_event_source *stop_timer;   /* gives up waiting for that install */
};

#define STOP_GRACE_USEC (10ULL * 1000000ULL)

/* ---- helpers ---- */

static struct json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static const char *param_str(struct json_object *params, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(params, k, &v) && v ? json_object_get_string(v) : NULL;
}

/* The board's operation lock for a change (oplock.h): taken without
 * waiting, the event loop never blocks on it. -EBUSY: why names the
 * holder. */
static int lock_board(struct manager *m, const char *what, struct oplock **ret, char *why,
		      size_t whylen)
{
	struct oplock_holder h;
	char who[96];
	int r = oplock_acquire(m->conf->target, what, ret, &h);

	if (r == -EBUSY)
		snprintf(why, whylen, "%s holds the lock of %s", oplock_holder_describe(&h, who,
			 sizeof(who)), m->conf->target);
	else if (r < 0)
		snprintf(why, whylen, "cannot take the lock of %s: %s", m->conf->target,
			 strerror(-r));
	return r;
}

/* Busy naming the holder, or InternalError. */
static int reply_lock_error(struct proto_call *call, int r, const char *why)
{
	if (r == -EBUSY)
		return proto_error_string(call, PROTO_ERROR_BUSY, "operation", why);
	return proto_error_errno(call, r, why);
}

static int open_env(struct manager *m, struct env **ret, struct error *err)
{
	return env_open_layout(m->layout, m->conf->target, NULL, 0, ret, err);
}

struct slots_view {
	struct slot_state st;
	struct slot_status status;
	char *versions[SLOT_MAX];
	char *health[SLOT_MAX];  /* FLASHD_<x>_HEALTH */
	bool reset_pending;
};

static void slots_view_done(struct slots_view *v)
{
	for (size_t i = 0; i < SLOT_MAX; i++) {
		free(v->versions[i]);
		free(v->health[i]);
	}
}

/* Slot state and status from the env and the kernel command line. */
static int load_slots(struct manager *m, struct env *e, struct slots_view *v, char *why,
		      size_t whylen)
{
	struct error serr = {};
	const char *by = NULL;
	char *reset;
	int booted, r;

	*v = (struct slots_view){ 0 };
	r = slot_state_load_group(&v->st, m->group, env_get_dup, e, &serr);
	if (r < 0) {
		snprintf(why, whylen, "%s", serr.msg);
		return r;
	}
	booted = slot_booted(m->conf->cmdline, m->layout, m->group, &by, &serr);
	slot_status_compute(&v->st, booted < 0 ? -1 : booted, booted < 0 ? NULL : by, &v->status);
	for (size_t i = 0; i < m->group->n_slots && i < SLOT_MAX; i++) {
		char var[64];
		slot_version_var(m->group->slots[i].name, var, sizeof(var));
		v->versions[i] = env_get_dup(e, var);
		slot_health_var(m->group->slots[i].name, var, sizeof(var));
		v->health[i] = env_get_dup(e, var);
	}
	reset = env_get_dup(e, OVERLAY_RESET_VAR);
	v->reset_pending = reset && !strcmp(reset, "1");
	free(reset);
	return 0;
}

static int reply_env_error(struct proto_call *call, int r, const struct error *err)
{
	/* the env lock stayed taken past its bounded wait: "env busy" */
	if (r == -EBUSY)
		return proto_error_string(call, PROTO_ERROR_BUSY, "operation", err->msg);
	return proto_error_errno(call, r, err->msg[0] ? err->msg : strerror(-r));
}

/* ---- status ---- */

static bool install_running(const struct manager *m)
{
	return m->op.name && !strcmp(m->op.name, "install");
}

/* A UBI volume whose update never ended holds part of an image, whatever
 * the env says (flashd boot refuses to mount it). */
static enum slot_view slot_view_ubi(enum slot_view view, const struct layout_slot *s)
{
	if (view != SLOT_VIEW_INSTALLING &&
	    (ubi_image_target_broken(&s->rootfs, FLASH_MTD_SYSFS, FLASH_UBI_SYSFS) ||
	     (s->has_kernel && ubi_image_target_broken(&s->kernel, FLASH_MTD_SYSFS, FLASH_UBI_SYSFS))))
		return SLOT_VIEW_INTERRUPTED;
	return view;
}

static struct json_object *slots_json(struct manager *m, const struct slots_view *v)
{
	struct json_object *arr = json_object_new_array();

	for (size_t i = 0; i < m->group->n_slots; i++) {
		const struct layout_slot *s = &m->group->slots[i];
		struct json_object *o = json_object_new_object();
		const struct slot_info *si = &v->st.slots[i];

		json_object_object_add(o, "name", json_object_new_string(s->name));
		json_object_object_add(o, "partition", jstr(s->rootfs.part ? s->rootfs.part->name :
							       s->rootfs.ubi_volume));
		json_object_object_add(o, "state", json_object_new_string(slot_view_to_string(
			slot_view_ubi(slot_view_of(&v->st, i, install_running(m)), s))));
		json_object_object_add(o, "version", jstr(v->versions[i]));
		json_object_object_add(o, "health", jstr(v->health[i]));
		json_object_object_add(o, "tries_left", json_object_new_int(si->left));
		json_object_object_add(o, "priority", si->order_pos >= 0 ?
				       json_object_new_int(si->order_pos) : NULL);
		json_object_object_add(o, "booted", json_object_new_boolean(v->status.booted == (int)i));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *partition_json(struct board *b, const struct layout_partition *p)
{
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_free_ char *dev = NULL;
	struct flash_stats st = { 0 };
	struct json_object *o = json_object_new_object();
	uint64_t off;
	int r;

	json_object_object_add(o, "name", json_object_new_string(p->name));
	if (board_partition_path(b, p, &dev, &off) >= 0)
		json_object_object_add(o, "device", json_object_new_string(dev));
	json_object_object_add(o, "type", json_object_new_string(flash_type_to_string(p->dev->type)));
	json_object_object_add(o, "size", json_object_new_int64(p->size));
	json_object_object_add(o, "erase_size", json_object_new_int64(p->dev->erasesize));
	json_object_object_add(o, "write_size", json_object_new_int64(p->dev->writesize));
	json_object_object_add(o, "oob_size", json_object_new_int64(p->dev->oobsize));
	r = board_open_partition(b, p, &f);
	if (r >= 0)
		r = flash_get_stats(f, &st);
	if (r >= 0) {
		json_object_object_add(o, "bad_blocks", json_object_new_int64(st.badblocks));
		json_object_object_add(o, "ecc_corrected", json_object_new_int64(st.corrected));
		json_object_object_add(o, "ecc_failed", json_object_new_int64(st.failed));
	} else {
		json_object_object_add(o, "bad_blocks", json_object_new_int(0));
		json_object_object_add(o, "ecc_corrected", NULL);
		json_object_object_add(o, "ecc_failed", NULL);
		json_object_object_add(o, "error", json_object_new_string(strerror(-r)));
	}
	return o;
}

static struct json_object *flash_json(struct manager *m, const char *only)
{
	_cleanup_board_ struct board *b = NULL;
	struct json_object *arr = json_object_new_array();

	if (board_open(m->layout, m->conf->target, false, &b) < 0)
		return arr;
	for (size_t i = 0; i < m->layout->n_partitions; i++)
		if (!only || !strcmp(only, m->layout->partitions[i].name))
			json_object_array_add(arr, partition_json(b, &m->layout->partitions[i]));
	return arr;
}

/* Every layer flashd boot recorded, so a fallback of any one shows. */
static struct json_object *overlay_layers_json(struct json_object *boot, bool *degraded)
{
	static const char *const keys[] = { "path", "state", "fstype", "partition", "persistent",
					    "fallback", "fallback_reason", "generation_error" };
	struct json_object *arr = json_object_new_array(), *ovs, *v, *g;

	if (!boot || !json_object_object_get_ex(boot, "overlays", &ovs) ||
	    !json_object_is_type(ovs, json_type_array))
		return arr;
	for (size_t i = 0; i < json_object_array_length(ovs); i++) {
		struct json_object *ly = json_object_array_get_idx(ovs, i), *o = json_object_new_object();

		for (size_t k = 0; k < ELEMENTSOF(keys); k++)
			json_object_object_add(o, keys[k], json_object_object_get_ex(ly, keys[k], &v) ?
					       json_object_get(v) : NULL);
		json_object_object_add(o, "generation", json_object_object_get_ex(ly, "generation", &g) &&
				       json_object_object_get_ex(g, "name", &v) ? json_object_get(v) : NULL);
		if (json_object_object_get_ex(ly, "fallback", &v) && json_object_get_boolean(v))
			*degraded = true;
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *overlay_json(struct manager *m, bool reset_pending)
{
	_cleanup_json_ struct json_object *boot = NULL;
	_cleanup_free_ char *text = NULL;
	struct json_object *o = json_object_new_object(), *ov = NULL, *v, *layers;
	const struct layout_overlay *lo = m->layout->n_overlays ? &m->layout->overlays[0] : NULL;
	const char *state = lo ? "unknown" : "none";
	bool degraded = false;

	/* the "/" layer, else the layout's first: the one flashd boot records
	 * as "overlay" */
	for (size_t i = 0; i < m->layout->n_overlays; i++)
		if (!strcmp(m->layout->overlays[i].path, "/"))
			lo = &m->layout->overlays[i];
	/* flashd boot records what it mounted */
	if (util_read_file(BOOT_STATE_FILE, 1 << 16, &text, NULL) >= 0 &&
	    (boot = json_tokener_parse(text)) && json_object_object_get_ex(boot, "overlay", &ov) &&
	    json_object_object_get_ex(ov, "state", &v))
		state = json_object_get_string(v);
	layers = overlay_layers_json(boot, &degraded);
	if (boot && json_object_object_get_ex(boot, "degraded", &v) && json_object_get_boolean(v))
		degraded = true;
	if (reset_pending)
		state = "reset_pending";
	json_object_object_add(o, "state", json_object_new_string(state));
	json_object_object_add(o, "partition", jstr(lo && lo->part ? lo->part->name : NULL));
	json_object_object_add(o, "fstype", jstr(lo ? layout_overlay_type_to_string(lo->type) : NULL));
	if (ov && json_object_object_get_ex(ov, "size", &v))
		json_object_object_add(o, "size", json_object_get(v));
	else
		json_object_object_add(o, "size", NULL);
	if (ov && json_object_object_get_ex(ov, "used", &v))
		json_object_object_add(o, "used", json_object_get(v));
	else
		json_object_object_add(o, "used", NULL);
	/* mainline JFFS2 lacks RENAME_WHITEOUT; the boot probe says for sure */
	if (ov && json_object_object_get_ex(ov, "rename_whiteout", &v))
		json_object_object_add(o, "rename_whiteout", json_object_get(v));
	else
		json_object_object_add(o, "rename_whiteout",
				       json_object_new_boolean(lo && lo->type != LAYOUT_OVERLAY_JFFS2));
	json_object_object_add(o, "degraded", json_object_new_boolean(degraded));
	json_object_object_add(o, "layers", layers);
	return o;
}

static struct json_object *last_install_json(struct manager *m)
{
	_cleanup_json_ struct json_object *arr = NULL;
	struct json_object *r, *o, *v;
	static const char *const keys[] = { "slot", "version", "result", "started", "finished",
					    "bytes", "erases", "blocks_skipped", "signer" };

	if (record_load(m->conf->state_dir, &arr) < 0 || json_object_array_length(arr) == 0)
		return NULL;
	r = json_object_array_get_idx(arr, 0);
	o = json_object_new_object();
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (json_object_object_get_ex(r, keys[i], &v))
			json_object_object_add(o, keys[i], json_object_get(v));
	json_object_object_add(o, "reason", json_object_object_get_ex(r, "error", &v) ?
			       json_object_get(v) : NULL);
	json_object_object_add(o, "bundle_sha256", NULL);
	return o;
}

/* The env's health. With no valid copy U-Boot boots with its built-in
 * default env, in which the slot variables are unset: the boot script
 * then tries every slot with full tries (docs/boot-contract.md). */
static struct json_object *env_json(struct env *e)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	bool blank = env_is_blank(e);

	json_object_object_add(o, "readable", json_object_new_boolean(!blank));
	json_object_object_add(o, "device", json_object_new_string(env_describe(e)));
	for (size_t i = 0; i < env_n_devices(e); i++) {
		struct json_object *c = json_object_new_object();
		int err = 0;
		enum env_copy_state st = env_copy_state(e, i, &err);

		json_object_object_add(c, "state", json_object_new_string(env_copy_state_to_string(st)));
		json_object_object_add(c, "error", st == ENV_COPY_UNREADABLE ?
				       json_object_new_string(strerror(-err)) : NULL);
		json_object_array_add(arr, c);
	}
	json_object_object_add(o, "copies", arr);
	json_object_object_add(o, "next_boot", blank ? json_object_new_string(
		"no valid env copy: U-Boot boots with its built-in default env (slot variables "
		"unset: every slot, full tries); recover with 'flashctl env init' and "
		"'flashctl slot init'") : NULL);
	return o;
}

static int method_get_status(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct error eerr = {};
	struct json_object *envj;
	struct slots_view v;
	char why[256];
	bool blank;
	int r;

	/* both copies corrupt: status still answers (issue 13, item 6) */
	r = env_open_layout(m->layout, m->conf->target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &eerr);
	if (r < 0)
		return reply_env_error(call, r, &eerr);
	r = load_slots(m, e, &v, why, sizeof(why));
	blank = env_is_blank(e);
	envj = env_json(e);
	env_close(TAKE_PTR(e)); /* do not hold the env lock while reading flash */
	json_object_object_add(o, "env", envj);
	if (r < 0)
		return proto_error_errno(call, r, why);
	json_object_object_add(o, "layout", json_object_new_string(m->layout->path));
	json_object_object_add(o, "board", jstr(m->layout->board));
	json_object_object_add(o, "compatible", jstr(m->layout->compatible));
	struct json_object *slots = slots_json(m, &v);
	for (size_t i = 0; blank && i < m->group->n_slots; i++) /* no record is left */
		json_object_object_add(json_object_array_get_idx(slots, i), "state",
				       json_object_new_string("unknown"));
	json_object_object_add(o, "slots", slots);
	json_object_object_add(o, "booted", v.status.booted >= 0 ?
			       jstr(m->group->slots[v.status.booted].name) : NULL);
	json_object_object_add(o, "trial", json_object_new_boolean(v.status.on_trial));
	json_object_object_add(o, "fallback", json_object_new_boolean(v.status.fell_back));
	json_object_object_add(o, "switch_pending", json_object_new_boolean(v.status.switch_pending));
	json_object_object_add(o, "next", v.status.next >= 0 ?
			       jstr(m->group->slots[v.status.next].name) : NULL);
	json_object_object_add(o, "next_after_reset",
			       json_object_new_boolean(v.status.next_after_reset));
	json_object_object_add(o, "degraded", json_object_new_boolean(v.status.degraded));
	json_object_object_add(o, "last_good", v.status.last_good >= 0 ?
			       jstr(m->group->slots[v.status.last_good].name) : NULL);
	json_object_object_add(o, "last_install", last_install_json(m));
	json_object_object_add(o, "overlay", overlay_json(m, v.reset_pending));
	json_object_object_add(o, "flash", flash_json(m, NULL));
	json_object_object_add(o, "allow_unsigned", json_object_new_boolean(m->conf->allow_unsigned));
	json_object_object_add(o, "operation", jstr(m->op.name));
	if (m->op.has_progress)
		json_object_object_add(o, "progress", progress_json(&m->op.last));
	slots_view_done(&v);
	return proto_reply(call, o);
}

/* ---- install: a worker process does the flash I/O ---- */

static const char *const step_names[_INSTALL_PHASE_MAX] = {
	[INSTALL_PHASE_MANIFEST] = "verify",
	[INSTALL_PHASE_WRITE] = "write",
	[INSTALL_PHASE_VERIFY] = "readback",
	[INSTALL_PHASE_ACTIVATE] = "activate",
	[INSTALL_PHASE_DONE] = "done",
	[INSTALL_PHASE_FAILED] = "failed",
};

static const char *str_or_null(const char *s)
{
	return s && s[0] ? s : NULL;
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}
#define COPY(field, src) copy_str(field, sizeof(field), src)

/* The io.flashd Progress object of a report (GetStatus, Install's replies). */
static struct json_object *progress_json(const struct install_report *p)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "percent", json_object_new_int(p->percent));
	json_object_object_add(o, "bytes_done", json_object_new_int64(p->done));
	json_object_object_add(o, "bytes_total", json_object_new_int64(p->total));
	json_object_object_add(o, "step", json_object_new_string(step_names[p->phase]));
	json_object_object_add(o, "image", jstr(str_or_null(p->image)));
	json_object_object_add(o, "slot", jstr(str_or_null(p->slot)));
	json_object_object_add(o, "version", jstr(str_or_null(p->version)));
	return o;
}

struct job_ctx {
	int fd;
	unsigned last_percent;
	enum install_phase last_phase;
	struct install *in;
};

static void job_progress(void *userdata, const struct install_progress *p)
{
	struct job_ctx *ctx = userdata;
	const struct bundle_manifest *man = install_get_manifest(ctx->in);
	struct install_report rep = {
		.phase = p->phase, .percent = p->percent, .done = p->done, .total = p->total,
	};

	/* one report per percent or step keeps the pipe and the client calm */
	if (p->percent == ctx->last_percent && p->phase == ctx->last_phase)
		return;
	ctx->last_percent = p->percent;
	ctx->last_phase = p->phase;
	COPY(rep.image, p->image);
	COPY(rep.slot, p->slot);
	COPY(rep.version, man ? man->version : NULL);
	worker_report(ctx->fd, &rep, sizeof(rep));
}

/* the bundle is what failed: refused before anything was written (env
 * untouched) or found while streaming (hash, truncation, trailing data:
 * the target stays marked bad) */
static bool bundle_error_class(int r)
{
	static const int codes[] = { -EBADMSG, -EKEYREJECTED, -ENOKEY, -EPROTONOSUPPORT,
				     -EMEDIUMTYPE, -EFBIG, -ENXIO, -ENODATA };

	for (size_t i = 0; i < ELEMENTSOF(codes); i++)
		if (codes[i] == r)
			return true;
	return false;
}

static void final_report(struct install *in, int r, const struct error *err,
			 struct install_report *rep)
{
	const struct bundle_manifest *man = install_get_manifest(in);

	*rep = (struct install_report) {
		.final = true,
		.phase = r < 0 ? INSTALL_PHASE_FAILED : INSTALL_PHASE_DONE,
		.percent = r < 0 ? 0 : 100,
		.error = r < 0 ? r : 0,
		.invalid_bundle = r < 0 && bundle_error_class(r),
		.stats = *install_get_stats(in),
	};
	rep->stats.finished = time(NULL);
	COPY(rep->message, r < 0 ? error_message(err) : NULL);
	COPY(rep->slot, install_get_slot(in));
	COPY(rep->version, man ? man->version : NULL);
	COPY(rep->compatible, man ? man->compatible : NULL);
	COPY(rep->signer, man && man->is_signed ? man->signer_name : NULL);
}

/* Runs in the worker process. */
static int install_job(int report_fd, volatile int *cancel, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_board_ struct board *b = NULL;
	_cleanup_install_ struct install *in = NULL;
	struct error err = {};
	struct install_report fin;
	struct job_ctx ctx = { .fd = report_fd, .last_percent = 101 };
	struct install_params p = {
		.target = m->conf->target,
		.group = m->group,
		.cmdline = m->conf->cmdline,
		.slot = m->op.slot,
		.keyring = m->keyring,
		.allow_unsigned = m->conf->allow_unsigned,
		.activate = m->op.activate,
		.progress = job_progress,
		.userdata = &ctx,
	};
	int r;

	proto_server_close_fds_in_child(m->server);
	/* the lock came with the fork; it is ours until we exit */
	if (m->op.lock)
		oplock_set_holder(m->op.lock, getpid(), "flashd install worker");
	r = board_open(m->layout, m->conf->target, true, &b);
	if (r < 0)
		return r;
	p.board = b;
	r = install_new(&p, &in);
	if (r < 0)
		return r;
	ctx.in = in;
	r = install_run_fd(in, m->op.bundle_fd, cancel, &err);
	final_report(in, r, &err, &fin);
	worker_report(report_fd, &fin, sizeof(fin));
	return r;
}

static void op_clear(struct manager *m)
{
	struct operation *op = &m->op;

	worker_free(op->worker);
	proto_call_unref(op->call);
	if (op->bundle_fd >= 0)
		close(op->bundle_fd);
	free(op->slot);
	oplock_release(op->lock);
	sd_event_source_disable_unref(op->timeout);
	*op = (struct operation){ .bundle_fd = -1 };
	sd_notify(0, "STATUS=idle");
}

static void install_on_msg(struct worker *w, const void *msg, void *userdata)
{
	struct manager *m = userdata;
	struct install_report rep;
	_cleanup_json_ struct json_object *o = NULL;

	memcpy(&rep, msg, sizeof(rep));
	if (rep.final) {
		m->op.final = rep;
		return;
	}
	m->op.last = rep;
	m->op.has_progress = true;
	sd_notifyf(0, "STATUS=installing: %u%%", rep.percent);
	o = progress_json(&rep);
	if (m->op.call)
		proto_reply_more(m->op.call, o);
}

static void install_record(struct manager *m, const char *result, const char *error)
{
	const struct install_report *f = &m->op.final;
	struct record r = {
		.started = m->op.started,
		.finished = time(NULL),
		.group = m->group->name,
		.slot = str_or_null(f->slot),
		.version = str_or_null(f->version),
		.compatible = str_or_null(f->compatible),
		.result = result,
		.error = error,
		.bytes = f->stats.bytes_written,
		.erases = f->stats.erases,
		.blocks_skipped = f->stats.blocks_skipped,
		.signer = str_or_null(f->signer),
	};
	int ret = record_append(m->conf->state_dir, &r);

	if (ret < 0)
		log_warning("cannot keep the install record in %s: %s", m->conf->state_dir,
			    strerror(-ret));
}

static int on_stop_now(sd_event_source *s, void *userdata)
{
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int manager_slot_change(struct manager *m, enum slot_op op, const char *name,
			       unsigned flags, const char *const extra[2], int *ret_idx,
			       enum slot_change_fail *ret_kind, char *why, size_t whylen);

/* The worker could not record the end of its install: the daemon does, so
 * the target is recorded failed and out of BOOT_ORDER again (an offline
 * write may have put it back meanwhile). */
static void install_record_died(struct manager *m)
{
	const char *slot = str_or_null(m->op.last.slot);
	enum slot_change_fail kind;
	char why[512];
	int idx;

	if (!slot)
		return; /* no target chosen yet */
	/* refused (-ESTALE) unless the env records it installing */
	if (manager_slot_change(m, SLOT_OP_INSTALL_FAILED, slot, 0, NULL, &idx, &kind, why, sizeof(why)) < 0 &&
	    kind != SLOT_CHANGE_REFUSED)
		log_error("cannot record the failed install of slot %s: %s", slot, why);
}

/* The client's final answer: the last Progress (step "done") or the error. */
static void install_reply(struct manager *m, struct proto_call *call, const char *error)
{
	struct install_report *f = &m->op.final;
	_cleanup_json_ struct json_object *o = NULL;

	if (f->final && f->error == -ECANCELED) {
		proto_error(call, PROTO_ERROR_CANCELLED, NULL);
		return;
	}
	if (f->final && f->error == 0) {
		struct install_report done = { .phase = INSTALL_PHASE_DONE, .percent = 100,
					       .done = m->op.last.total, .total = m->op.last.total };

		COPY(done.slot, f->slot);
		COPY(done.version, f->version);
		o = progress_json(&done);
		proto_reply(call, o);
		return;
	}
	proto_error_string(call, f->invalid_bundle ? PROTO_ERROR_INVALID_BUNDLE :
			   PROTO_ERROR_INSTALL_FAILED, "reason", error);
}

static void install_on_done(struct worker *w, int code, int status, void *userdata)
{
	struct manager *m = userdata;
	const struct install_report *f = &m->op.final;
	const char *result, *error = f->message;
	char why[160];
	struct proto_call *call = m->op.call;

	if (!f->final) {
		snprintf(why, sizeof(why), "the install worker died (%s %d) before it finished; "
			 "the target slot stays marked bad", code == CLD_EXITED ? "exit" : "signal",
			 status);
		result = "failed";
		error = why;
		install_record_died(m);
	} else {
		result = f->error == 0 ? "success" : f->error == -ECANCELED ? "cancelled" : "failed";
	}
	if (f->final && f->error == 0)
		log_info("installed version %s into slot %s (%" PRIu64 " bytes, %" PRIu64
			 " erases, %" PRIu64 " unchanged blocks skipped)", f->version, f->slot,
			 f->stats.bytes_written, f->stats.erases, f->stats.blocks_skipped);
	else
		log_error("install %s: %s", result, error);
	install_record(m, result, f->final && f->error == 0 ? NULL : error);
	if (m->stopping)
		log_info("install ended; stopping");
	if (call && proto_call_is_connected(call))
		install_reply(m, call, error);
	op_clear(m);
	if (m->stopping) {
		/* exit once the reply above went out: the connection's turn in
		 * the control socket's run queue (normal priority, or just below
		 * it for users without rights) writes it before this idle one runs */
		m->stop_timer = sd_event_source_disable_unref(m->stop_timer);
		if (sd_event_add_defer(m->event, &m->stop_timer, on_stop_now, m) < 0 ||
		    sd_event_source_set_priority(m->stop_timer, SD_EVENT_PRIORITY_IDLE) < 0)
			sd_event_exit(m->event, 0);
	}
}

static void install_on_disconnect(struct proto_call *call, void *userdata)
{
	struct manager *m = userdata;

	if (m->op.call != call)
		return;
	log_warning("install client went away: cancelling");
	m->op.cancelled = true;
	worker_cancel(m->op.worker);
}

static int busy(struct manager *m, struct proto_call *call)
{
	return proto_error_string(call, PROTO_ERROR_BUSY, "operation", m->op.name);
}

static int install_open_bundle(struct proto_call *call, struct json_object *params)
{
	struct json_object *v;

	if (json_object_object_get_ex(params, "fd", &v) && v)
		return proto_call_take_fd(call, json_object_get_int(v));
	if (json_object_object_get_ex(params, "path", &v) && v) {
		const char *path = json_object_get_string(v);
		struct stat st;
		int fd;
		if (path[0] != '/')
			return -EINVAL;
		/* the root daemon opens what a caller names: never block on a
		 * FIFO, never open a device (opening some has side effects) */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    fcntl(fd, F_SETFL, 0) < 0) {
			close(fd);
			return -EINVAL;
		}
		return fd;
	}
	return -ENOENT;
}

static bool group_has_slot(const struct layout_slot_group *g, const char *name)
{
	for (size_t i = 0; i < g->n_slots; i++)
		if (!strcmp(g->slots[i].name, name))
			return true;
	return false;
}

/* The A/B policy's answer before a worker starts and before the bundle is
 * read, so a refusal is a refusal (SlotRefused, flashctl exit 3) and not a
 * failed install: never the booted slot, never the last slot of BOOT_ORDER
 * while the booted one is out of it. The engine checks the same again
 * under its own env open; env trouble is left to it to report. */
static int install_precheck(struct manager *m, const char *slot, int *ret_target, char *why,
			    size_t whylen)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct error serr = {};
	struct slots_view v;
	struct slot_state nst;
	struct slot_changes ch;
	int r, target;

	*ret_target = -1;
	if (open_env(m, &e, &eerr) < 0 || load_slots(m, e, &v, why, whylen) < 0)
		return 0;
	slots_view_done(&v);
	target = slot ? slot_find(&v.st, slot) :
		 v.status.booted >= 0 && v.st.n_slots == 2 ? 1 - v.status.booted : -1;
	if (target < 0)
		return 0;
	*ret_target = target;
	if (target == v.status.booted) {
		snprintf(why, whylen, "refusing to install into slot %s: it is the booted slot "
			 "(the running root), never written; the env is unchanged",
			 v.st.slots[target].name);
		return -EBUSY;
	}
	r = slot_compute_booted(&v.st, v.status.booted, SLOT_OP_INSTALL_BEGIN, target, 0, &nst,
				&ch, &serr);
	if (r < 0)
		snprintf(why, whylen, "%s", serr.msg);
	return r < 0 ? r : 0;
}

static int method_install(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_oplock_ struct oplock *lock = NULL;
	struct json_object *v;
	const char *slot;
	char why[512];
	int fd, r, target;

	if (m->op.name)
		return busy(m, call);
	/* a wrong name is the caller's mistake, not a failed install: say so
	 * before a worker starts (and before the bundle is opened) */
	slot = param_str(params, "slot");
	if (slot && !group_has_slot(m->group, slot))
		return proto_error_string(call, PROTO_ERROR_NO_SUCH_SLOT, "slot", slot);
	r = install_precheck(m, slot, &target, why, sizeof(why));
	if (r < 0) {
		_cleanup_json_ struct json_object *o = json_object_new_object();
		json_object_object_add(o, "slot", target >= 0 ?
				       json_object_new_string(m->group->slots[target].name) : NULL);
		json_object_object_add(o, "reason", json_object_new_string(why));
		return proto_error(call, PROTO_ERROR_SLOT_REFUSED, o);
	}
	/* another writer (a second daemon, an offline flashctl, a worker of a
	 * daemon that died) must be gone before this one starts */
	r = lock_board(m, "flashd install", &lock, why, sizeof(why));
	if (r < 0)
		return reply_lock_error(call, r, why);
	fd = install_open_bundle(call, params);
	if (fd == -ENOENT && !json_object_object_get_ex(params, "path", NULL))
		return proto_error_string(call, PROTO_ERROR_INVALID_PARAMETER, "parameter", "fd");
	if (fd < 0)
		return proto_error_errno(call, fd, "cannot open the bundle (pass an fd, or an "
					 "absolute path the daemon can read)");
	m->op = (struct operation){ .name = "install", .bundle_fd = fd, .activate = true,
				    .started = time(NULL), .lock = TAKE_PTR(lock) };
	if (slot)
		m->op.slot = strdup(slot);
	if (json_object_object_get_ex(params, "activate", &v) && v)
		m->op.activate = json_object_get_boolean(v);
	m->op.call = proto_call_ref(call);
	proto_call_set_disconnect_handler(call, install_on_disconnect, m);
	r = worker_start(m->event, sizeof(struct install_report), install_job, install_on_msg,
			 install_on_done, m, &m->op.worker);
	if (r < 0) {
		op_clear(m);
		return proto_error_errno(call, r, "cannot start the install worker");
	}
	/* the worker holds the lock now, until it exits however it exits */
	oplock_release(m->op.lock);
	m->op.lock = NULL;
	log_info("install started by uid %u (worker pid %d)", proto_call_peer(call)->uid,
		 (int)worker_pid(m->op.worker));
	sd_notify(0, "STATUS=installing");
	return 0;
}

static int method_cancel(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	bool running = m->op.name && m->op.worker && !strcmp(m->op.name, "install");

	if (running) {
		log_notice("install cancelled by uid %u", proto_call_peer(call)->uid);
		m->op.cancelled = true;
		worker_cancel(m->op.worker);
	}
	json_object_object_add(o, "cancelled", json_object_new_boolean(running));
	return proto_reply(call, o);
}

/* ---- slot operations: one env store each ---- */



/* op on slot name (NULL = booted) in one env store, under the board's
 * lock; 1 = mark-bad with SLOT_KEEP_LAST kept the slot (degraded). On
 * failure *ret_kind and why say what went wrong. */
/* extra: one more variable {name, value} for the same store, or NULL */
static int manager_slot_change(struct manager *m, enum slot_op op, const char *name,
			       unsigned flags, const char *const extra[2], int *ret_idx,
			       enum slot_change_fail *ret_kind, char *why, size_t whylen)
{
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slot_change_result res;
	struct error err = {};
	int booted, r;

	*ret_kind = SLOT_CHANGE_ENV;
	r = lock_board(m, slot_op_to_string(op), &lock, why, whylen);
	if (r < 0)
		return r;
	r = open_env(m, &e, &eerr);
	if (r < 0) {
		snprintf(why, whylen, "%s", eerr.msg[0] ? eerr.msg : strerror(-r));
		return r;
	}
	booted = slot_booted(m->conf->cmdline, m->layout, m->group, NULL, NULL);
	if (booted < 0)
		booted = -1;
	if (!name && op != SLOT_OP_ROLLBACK && booted < 0) {
		*ret_kind = SLOT_CHANGE_NO_SLOT;
		snprintf(why, whylen, "(booted slot unknown)");
		return -ENOENT;
	}
	/* a fallback the daemon has not recorded yet goes into the same store */
	r = slot_change(e, m->group, &(struct slot_change) {
			.op = op, .slot_name = name, .booted = booted, .flags = flags,
			.slot = op == SLOT_OP_ROLLBACK ? -1 : booted,
			.extra_name = extra ? extra[0] : NULL,
			.extra_value = extra ? extra[1] : NULL }, &res, &err);
	if (r < 0) {
		*ret_kind = res.fail;
		snprintf(why, whylen, "%s", error_message(&err));
		return r;
	}
	*ret_idx = res.slot;
	return r;
}

static int slot_op(struct manager *m, struct proto_call *call, enum slot_op op, const char *name,
		   unsigned flags)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	enum slot_change_fail kind;
	char why[512];
	int idx, r;

	if (m->op.name)
		return busy(m, call);
	r = manager_slot_change(m, op, name, flags, NULL, &idx, &kind, why, sizeof(why));
	if (r < 0 && kind == SLOT_CHANGE_ENV)
		return reply_lock_error(call, r, why);
	if (r < 0) {
		switch (kind) {
		case SLOT_CHANGE_NO_SLOT:
			return proto_error_string(call, PROTO_ERROR_NO_SUCH_SLOT, "slot", why);
		case SLOT_CHANGE_REFUSED:
			return proto_error_string(call, PROTO_ERROR_DENIED, "reason", why);
		case SLOT_CHANGE_OK:
		case SLOT_CHANGE_ENV:
			break;
		}
		return proto_error_errno(call, r, why);
	}
	log_notice("%s of slot %s by uid %u", slot_op_to_string(op), m->group->slots[idx].name,
		   proto_call_peer(call)->uid);
	if (op != SLOT_OP_ACTIVATE)
		json_object_object_add(o, "slot", json_object_new_string(m->group->slots[idx].name));
	return proto_reply(call, o);
}

static int method_mark_good(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_MARK_GOOD, NULL, 0);
}

static int method_mark_bad(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_MARK_BAD, param_str(params, "slot"), 0);
}

static int method_activate(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_ACTIVATE, param_str(params, "slot"), 0);
}

static int method_rollback(struct proto_call *call, struct json_object *params, void *userdata)
{
	return slot_op(userdata, call, SLOT_OP_ROLLBACK, NULL, 0);
}

/* ---- env ---- */

static int method_get_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *value = NULL;
	struct error eerr = {};
	const char *name = param_str(params, "name");
	int r;

	/* no such variable can exist: the caller's mistake, not the env's */
	if (!env_name_valid(name))
		return proto_error_invalid_parameter(call, "name");
	r = open_env(m, &e, &eerr);
	if (r < 0)
		return reply_env_error(call, r, &eerr);
	r = env_get(e, name, &value);
	if (r < 0 && r != -ENOENT)
		return proto_error_errno(call, r, "reading the U-Boot env");
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "value", jstr(value));
	return proto_reply(call, o);
}

static bool env_protected(const char *name)
{
	return slot_is_state_var(name) || !strncmp(name, "FLASHD_", 7);
}

/* EnvRefused {name, reason}; proto_error() borrows the parameters. */
static int env_refused(struct proto_call *call, const char *name, const char *reason)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "reason", json_object_new_string(reason));
	return proto_error(call, PROTO_ERROR_ENV_REFUSED, o);
}

static int method_set_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_env_txn_ struct env_txn *t = NULL;
	struct error eerr = {};
	struct error serr = {};
	const char *name = param_str(params, "name"), *value = param_str(params, "value");
	char why[256];
	struct json_object *v;
	bool force = json_object_object_get_ex(params, "force", &v) && v &&
		     json_object_get_boolean(v);
	int r;
	const char *nv = value && *value ? value : NULL; /* "" deletes */

	if (m->op.name)
		return busy(m, call);
	if (!env_name_valid(name))
		return env_refused(call, name, "not a valid U-Boot variable name (empty, too long, "
				   "or contains '=' or a control character)");
	if (env_protected(name) && !force)
		return env_refused(call, name, "managed by flashd (boot selection / install "
				   "state): use mark-good, activate, rollback, or force");
	/* even forced, a slot variable must read as the boot script reads it */
	if (slot_var_check(m->group, name, nv, &serr) < 0)
		return env_refused(call, name, serr.msg);
	r = lock_board(m, "flashd SetEnv", &lock, why, sizeof(why));
	if (r < 0)
		return reply_lock_error(call, r, why);
	r = open_env(m, &e, &eerr);
	if (r >= 0)
		r = env_txn_new(e, &t);
	if (r >= 0)
		r = env_txn_set(t, name, nv);
	if (r >= 0)
		r = env_txn_commit(t, &eerr);
	if (r < 0)
		return env_refused(call, name, eerr.msg[0] ? eerr.msg : strerror(-r));
	log_notice("env %s %s by uid %u%s", value ? "set" : "delete", name,
		   proto_call_peer(call)->uid, force ? " (forced)" : "");
	return proto_reply(call, NULL);
}

static int method_list_env(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct json_object *vars = json_object_new_object();
	struct error eerr = {};
	const char *name, *value;
	void *it = NULL;
	int r;

	json_object_object_add(o, "variables", vars);
	r = open_env(m, &e, &eerr);
	if (r < 0)
		return reply_env_error(call, r, &eerr);
	while (env_next(e, &it, &name, &value) > 0)
		json_object_object_add(vars, name, json_object_new_string(value));
	return proto_reply(call, o);
}

/* ---- overlay and flash ---- */

static int method_overlay_status(struct proto_call *call, struct json_object *params,
				 void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *reset = NULL;
	struct error eerr = {};
	int r;

	r = open_env(m, &e, &eerr);
	if (r < 0)
		return reply_env_error(call, r, &eerr);
	reset = env_get_dup(e, OVERLAY_RESET_VAR);
	json_object_object_add(o, "overlay", overlay_json(m, reset && !strcmp(reset, "1")));
	return proto_reply(call, o);
}

static int method_overlay_reset(struct proto_call *call, struct json_object *params,
				void *userdata)
{
	struct manager *m = userdata;
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_env_txn_ struct env_txn *t = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct error eerr = {};
	char why[256];
	int r;

	if (m->op.name)
		return busy(m, call);
	if (!m->layout->n_overlays)
		return proto_error_string(call, PROTO_ERROR_DENIED, "reason",
					  "the layout has no overlay");
	r = lock_board(m, "flashd OverlayReset", &lock, why, sizeof(why));
	if (r < 0)
		return reply_lock_error(call, r, why);
	/* flashd boot erases the overlay at the next boot, then clears this */
	r = open_env(m, &e, &eerr);
	if (r >= 0)
		r = env_txn_new(e, &t);
	if (r >= 0)
		r = env_txn_set(t, OVERLAY_RESET_VAR, "1");
	if (r >= 0)
		r = env_txn_commit(t, &eerr);
	if (r < 0)
		return reply_env_error(call, r, &eerr);
	log_notice("overlay reset requested by uid %u: takes effect at the next boot",
		   proto_call_peer(call)->uid);
	json_object_object_add(o, "overlay", overlay_json(m, true));
	return proto_reply(call, o);
}

static int method_flash_info(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	const char *part = param_str(params, "partition");

	if (part && !layout_find_partition(m->layout, part))
		return proto_error_string(call, PROTO_ERROR_NO_SUCH_PARTITION, "partition", part);
	json_object_object_add(o, "partitions", flash_json(m, part));
	return proto_reply(call, o);
}

static const proto_method_fn manager_handlers[_PROTO_FLASHD_METHOD_MAX] = {
	[PROTO_FLASHD_GET_STATUS] = method_get_status,
	[PROTO_FLASHD_INSTALL] = method_install,
	[PROTO_FLASHD_CANCEL] = method_cancel,
	[PROTO_FLASHD_MARK_GOOD] = method_mark_good,
	[PROTO_FLASHD_MARK_BAD] = method_mark_bad,
	[PROTO_FLASHD_ACTIVATE] = method_activate,
	[PROTO_FLASHD_ROLLBACK] = method_rollback,
	[PROTO_FLASHD_OVERLAY_RESET] = method_overlay_reset,
	[PROTO_FLASHD_OVERLAY_STATUS] = method_overlay_status,
	[PROTO_FLASHD_GET_ENV] = method_get_env,
	[PROTO_FLASHD_SET_ENV] = method_set_env,
	[PROTO_FLASHD_LIST_ENV] = method_list_env,
	[PROTO_FLASHD_FLASH_INFO] = method_flash_info,
};

/* ---- health check of a slot on trial ---- */

static int health_job(int report_fd, volatile int *cancel, void *userdata)
{
	struct manager *m = userdata;

	execl("/bin/sh", "sh", "-c", m->conf->health_command, (char *)NULL);
	return -errno;
}

/* The slot the check ran for is still the booted one, in BOOT_ORDER with
 * tries used: an operator's mark-bad (or anything else) since the check
 * started wins over its verdict. */
static int health_still_on_trial(struct manager *m, char *why, size_t whylen)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slots_view v;
	int r;

	r = open_env(m, &e, &eerr);
	if (r < 0) {
		snprintf(why, whylen, "cannot read the U-Boot env: %s", error_message(&eerr));
		return r;
	}
	r = load_slots(m, e, &v, why, whylen);
	if (r < 0)
		return r;
	slots_view_done(&v);
	if (v.status.booted != m->op.health_slot || !v.status.needs_health_check) {
		snprintf(why, whylen, "slot %s is no longer on trial (changed while the check ran)",
			 m->group->slots[m->op.health_slot].name);
		return -ESTALE;
	}
	return 0;
}

/* FLASHD_<x>_HEALTH of the checked slot: "passed|failed UTC-TIME[: what]". */
static void health_note(struct manager *m, bool good, const char *what, char *var,
			size_t varlen, char *note, size_t notelen)
{
	time_t now = time(NULL);
	char when[32];
	struct tm tm;

	slot_health_var(m->group->slots[m->op.health_slot].name, var, varlen);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	if (good)
		snprintf(note, notelen, "passed %s", when);
	else
		snprintf(note, notelen, "failed %s: %s", when, what);
}

static void health_verdict(struct manager *m, bool good, const char *what)
{
	enum slot_change_fail kind;
	char why[512], var[64], note[128];
	int idx, r;

	r = health_still_on_trial(m, why, sizeof(why));
	if (r < 0) {
		log_warning("health check %s, verdict not applied: %s", what, why);
		return;
	}
	health_note(m, good, what, var, sizeof(var), note, sizeof(note));
	r = manager_slot_change(m, good ? SLOT_OP_MARK_GOOD : SLOT_OP_MARK_BAD, NULL,
			SLOT_FORCE | SLOT_KEEP_LAST, (const char *const[2]){ var, note }, &idx,
			&kind, why, sizeof(why));
	if (r < 0) {
		log_error("health check %s, but the slot state could not be changed: %s", what, why);
		return;
	}
	if (good) {
		log_notice("health check passed: slot %s marked good", m->group->slots[idx].name);
		return;
	}
	if (r == 1) {
		/* rebooting would boot the same slot: keep running, say so */
		log_error("health check %s: slot %s recorded bad but kept in BOOT_ORDER: no other "
			  "verified slot can boot; the board is DEGRADED until an image passes",
			  what, m->group->slots[idx].name);
		return;
	}
	log_error("health check %s: slot %s marked bad", what, m->group->slots[idx].name);
	if (!m->conf->health_reboot)
		return;
	if (!strncmp(m->conf->target, "sim:", 4)) {
		log_notice("not rebooting: the board is simulated (%s); reboot it with 'flashctl "
			   "slot boot-select'", m->conf->target);
		return;
	}
	log_notice("rebooting into the other slot");
	sync();
	if (reboot(RB_AUTOBOOT) < 0)
		log_error("reboot failed: %s", strerror(errno));
}

static void health_on_done(struct worker *w, int code, int status, void *userdata)
{
	struct manager *m = userdata;
	char what[64];

	if (code == CLD_EXITED && status == 0) {
		health_verdict(m, true, "passed");
	} else {
		snprintf(what, sizeof(what), "failed (%s %d)",
			 code == CLD_EXITED ? "exit status" : "signal", status);
		health_verdict(m, false, what);
	}
	op_clear(m);
}

static int health_on_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	health_verdict(m, false, "timed out");
	op_clear(m); /* kills the check */
	return 0;
}

/* The boot script skipped the primaries before the booted slot (no tries
 * left): they failed to boot. Out of BOOT_ORDER in one store, so neither a
 * health check nor mark-bad of the booted slot can lock the board onto
 * them. With the records lost (default env), the booted slot alone stays
 * (slot_needs_fallback). v is reloaded. */
static int record_fallback(struct manager *m, struct env *e, struct slots_view *v, char *why,
			   size_t whylen)
{
	struct error serr = {};
	struct error eerr = {};
	struct slot_state nst;
	struct slot_changes ch;
	char order[128];
	int r;

	r = slot_compute(&v->st, SLOT_OP_FALLBACK, v->status.booted, 0, &nst, &ch, &serr);
	if (r >= 0)
		r = slot_apply(e, &ch, &eerr);
	if (r < 0) {
		snprintf(why, whylen, "recording the fallback: %s", serr.msg[0] ? error_message(&serr) :
			 eerr.msg[0] ? error_message(&eerr) : strerror(-r));
		return r;
	}
	slot_order_string(&nst, order, sizeof(order));
	if (slot_records_lost(&v->st))
		log_warning("the U-Boot env holds no slot records (both copies were lost, U-Boot "
			    "booted its default env): only the booted slot %s is known to boot, the "
			    "others are recorded unknown (BOOT_ORDER=%s)",
			    m->group->slots[v->status.booted].name, order);
	else
		log_warning("booted slot %s after the slots before it in BOOT_ORDER ran out of "
			    "tries: they failed to boot and are marked bad (BOOT_ORDER=%s)",
			    m->group->slots[v->status.booted].name, order);
	slots_view_done(v);
	return load_slots(m, e, v, why, whylen);
}

static int health_start(struct manager *m)
{
	_cleanup_env_ struct env *e = NULL;
	struct error eerr = {};
	struct slots_view v;
	char why[256];
	int r;

	r = open_env(m, &e, &eerr);
	if (r < 0) {
		log_warning("no health check: cannot read the U-Boot env: %s", eerr.msg);
		return 0;
	}
	r = load_slots(m, e, &v, why, sizeof(why));
	if (r >= 0 && slot_needs_fallback(&v.st, v.status.booted))
		r = record_fallback(m, e, &v, why, sizeof(why));
	env_close(TAKE_PTR(e));
	if (r < 0) {
		log_warning("no health check: %s", why);
		return 0;
	}
	slots_view_done(&v);
	if (!v.status.needs_health_check)
		return 0;
	if (!m->conf->health_command) {
		log_notice("slot %s is on trial; no health check configured: mark it good with "
			   "'flashctl slot mark-good'", m->group->slots[v.status.booted].name);
		return 0;
	}
	log_info("slot %s is on trial: running the health check '%s'",
		 m->group->slots[v.status.booted].name, m->conf->health_command);
	m->op = (struct operation){ .name = "health-check", .bundle_fd = -1, .started = time(NULL),
				    .health_slot = v.status.booted };
	r = worker_start(m->event, 1, health_job, NULL, health_on_done, m, &m->op.worker);
	if (r >= 0)
		r = sd_event_add_time_relative(m->event, &m->op.timeout, CLOCK_MONOTONIC,
					       (uint64_t)m->conf->health_timeout * 1000000, 0,
					       health_on_timeout, m);
	if (r < 0) {
		op_clear(m);
		log_error("cannot run the health check: %s", strerror(-r));
	}
	return r;
}

/* ---- life cycle ---- */

static void proto_log(void *userdata, const struct proto_peer *peer, const char *msg)
{
	/* no peer for problems before a connection exists (accept failed,
	 * connection limit reached) */
	if (!peer)
		log_warning("control socket: %s", msg);
	else
		log_warning("control socket (pid %d uid %u): %s", (int)peer->pid, peer->uid, msg);
}

int manager_new(struct conf *conf, struct manager **ret, struct error *err)
{
	_cleanup_(manager_freep) struct manager *m = calloc(1, sizeof(*m));
	int r;

	if (!m) {
		conf_free(conf);
		return -ENOMEM;
	}
	m->conf = conf;
	m->op.bundle_fd = -1;
	/* env access on the event loop waits for the env lock 1 s at most */
	env_set_lock(NULL, ENV_LOCK_TIMEOUT_LOOP_MS);
	r = layout_load(conf->layout, &m->layout, err);
	if (r < 0)
		return error_prefix(err, r, "layout");
	if (!m->layout->n_groups) {
		snprintf(err->msg, sizeof(err->msg), "layout %s has no slot group", conf->layout);
		return -EINVAL;
	}
	m->group = &m->layout->groups[0];
	r = keyring_load_dir(conf->keyring, &m->keyring, err);
	if (r == -ENOKEY || r == -ENOENT) {
		/* no keys: only unsigned bundles could pass, and only when allowed */
		log_warning("no trusted keys in %s: signed bundles will be refused%s",
			    conf->keyring, conf->allow_unsigned ? "" : ", and so will unsigned ones");
		error_clear(err);
		r = keyring_new(&m->keyring);
	}
	if (r < 0)
		return error_prefix(err, r, "keyring");
	*ret = TAKE_PTR(m);
	return 0;
}

void manager_free(struct manager *m)
{
	if (!m)
		return;
	op_clear(m);
	sd_event_source_disable_unref(m->stop_timer);
	proto_server_free(m->server);
	if (m->socket_owned)
		unlink(m->conf->socket);
	sd_event_unref(m->event);
	keyring_free(m->keyring);
	layout_free(m->layout);
	conf_free(m->conf);
	free(m);
}

static int on_stop_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	log_error("the install did not stop within %llu s: killing it; the target slot stays "
		  "marked bad", STOP_GRACE_USEC / 1000000ULL);
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;
	int r;

	sd_notify(0, "STOPPING=1");
	if (!m->stopping && m->op.worker && m->op.name && !strcmp(m->op.name, "install")) {
		/* Let the worker stop between two erase blocks (never inside an env
		 * store), record the install as cancelled and answer its client;
		 * then exit. A second signal, or the grace time, exits at once. */
		log_info("received %s: cancelling the install, then stopping",
			 strsignal(si->ssi_signo));
		m->stopping = true;
		m->op.cancelled = true;
		worker_cancel(m->op.worker);
		r = sd_event_add_time_relative(m->event, &m->stop_timer, CLOCK_MONOTONIC,
					       STOP_GRACE_USEC, 0, on_stop_timeout, m);
		if (r >= 0)
			return 0;
	}
	log_info("received %s, stopping", strsignal(si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int listen_socket(struct manager *m, int *ret_fd, struct error *err)
{
	int r = proto_listen_activated(ret_fd);

	if (r > 0) {
		log_info("listening on the socket passed by systemd");
		return 0;
	}
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "socket activation: expected one AF_UNIX "
			 "stream socket from systemd");
		return r;
	}
	r = proto_listen(m->conf->socket, ret_fd);
	m->socket_owned = r >= 0;
	if (r < 0)
		snprintf(err->msg, sizeof(err->msg), "cannot listen on %s: %s%s", m->conf->socket,
			 strerror(-r), r == -EADDRINUSE ? " (another flashd is running)" : "");
	else
		log_info("listening on %s", m->conf->socket);
	return r;
}

int manager_startup(struct manager *m, struct error *err)
{
	sigset_t mask;
	int fd = -1, r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = sd_event_default(&m->event);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGTERM, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGINT, on_signal, m);
	if (r >= 0)
		r = sd_event_set_watchdog(m->event, true);
	if (r < 0) {
		snprintf(err->msg, sizeof(err->msg), "event loop: %s", strerror(-r));
		return r;
	}
	r = listen_socket(m, &fd, err);
	if (r < 0)
		return r;
	proto_flashd_bind(m->methods, manager_handlers);
	r = proto_server_new(m->event, fd, m->methods, m, &m->server);
	if (r < 0) {
		close(fd);
		snprintf(err->msg, sizeof(err->msg), "control socket: %s", strerror(-r));
		return r;
	}
	proto_server_set_info(m->server, "flashd project", "flashd", PACKAGE_VERSION, NULL);
	proto_server_set_log(m->server, proto_log, m);
	proto_server_set_idle_timeout(m->server, (uint64_t)m->conf->idle_timeout * 1000000);
	if (m->conf->socket_group) {
		r = proto_server_set_auth_group_name(m->server, m->conf->socket_group);
		if (r < 0) {
			snprintf(err->msg, sizeof(err->msg), "socket-group=%s: no such group",
				 m->conf->socket_group);
			return r;
		}
	}
	health_start(m);
	return 0;
}

int manager_run(struct manager *m)
{
	int r;

	sd_notifyf(0, "READY=1\nSTATUS=idle, board %s", m->layout->board ? m->layout->board : "?");
	log_info("ready: board %s, layout %s, target %s", m->layout->board ? m->layout->board : "?",
		 m->conf->layout, m->conf->target);
	r = sd_event_loop(m->event);
	sd_notify(0, "STOPPING=1");
	return r;
}
