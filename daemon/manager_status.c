/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The board's state as io.flashd shows it: GetStatus, OverlayStatus and
 * FlashInfo, rendered from what the daemon keeps (struct manager_status)
 * instead of walking the env and the flash on every call: a status applet
 * polling the daemon costs a JSON rendering, not two env reads and a walk
 * of every partition (issue 18: GetStatus p99 was 40 ms idle, 93 ms during
 * an install, against 0.2 ms for the bare round trip).
 *
 * The answer stays exact: the daemon loads the state again after each of
 * its own env stores and install events, when inotify reports a write to
 * a file the state comes from (the env devices or the simulator, the
 * kernel command line, the state dir, flashd boot's record) by anyone
 * else (fw_setenv, flashctl --offline, nsimctl), and when a client asks
 * and the state is older than STATUS_MAX_AGE_USEC (what no inotify
 * event tells: counters of bitflips found by reads, a write during an
 * install, whose own writes to the simulator are not told apart). Events
 * queued before a call are read before it is answered. A client cannot
 * cause a load by asking more often: at most one per STATUS_MAX_AGE_USEC
 * comes from callers, whoever they are. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "board.h"
#include "cleanup_json.h"
#include "log.h"
#include "manager-internal.h"
#include "proto_slot.h"
#include "record.h"
#include "ubi_image.h"
#include "util.h"

#define jstr json_string_or_null
#define STATUS_MAX_AGE_USEC (2ULL * 1000000ULL)

void manager_status_slots_done(struct manager_slots *v)
{
	for (size_t i = 0; i < SLOT_MAX; i++) {
		free(v->versions[i]);
		free(v->health[i]);
	}
}

/* The slot env and the boot decision from the env and the kernel command line. */
int manager_status_load_slots(struct manager *m, struct env *e, struct manager_slots *v,
			      struct error *err)
{
	struct error berr = {};
	const char *by = NULL;
	char *reset;
	int booted, r;

	*v = (struct manager_slots){ 0 };
	r = slot_env_load_group(&v->st, m->group, env_get_dup, e, err);
	if (r < 0)
		return r;
	booted = manager_booted(m, &by, &berr);
	if (booted < 0 && booted != -ENOENT)
		util_snprintf(v->booted_unknown, sizeof(v->booted_unknown), "%s", berr.msg);
	ubi_image_mark_unfinished(&v->st, m->group, FLASH_MTD_SYSFS, FLASH_UBI_SYSFS);
	slot_decide(&v->st, booted < 0 ? -1 : booted, booted < 0 ? NULL : by, &v->decision);
	for (size_t i = 0; i < m->group->n_slots && i < SLOT_MAX; i++) {
		char var[64];
		slot_version_var(m->group->slots[i].name, var, sizeof(var));
		v->versions[i] = env_get_dup(e, var);
		slot_health_var(m->group->slots[i].name, var, sizeof(var));
		v->health[i] = env_get_dup(e, var);
	}
	reset = env_get_dup(e, MANAGER_OVERLAY_RESET_VAR);
	v->reset_pending = reset && !strcmp(reset, "1");
	free(reset);
	return 0;
}

/* GetStatus's slots[], Slot each; with no env record left (blank) every
 * state is unknown. */
static struct json_object *slots_json(struct manager *m, const struct manager_slots *v, bool blank)
{
	struct proto_flashd_slot_info items[SLOT_MAX];
	size_t n = m->group->n_slots < SLOT_MAX ? m->group->n_slots : SLOT_MAX;
	bool installing = manager_install_running(m) || m->status.installer[0];

	for (size_t i = 0; i < n; i++) {
		const struct layout_slot *s = &m->group->slots[i];
		const struct slot_vars *si = &v->st.slots[i];

		items[i] = (struct proto_flashd_slot_info){
			.name = s->name,
			.partition = s->rootfs.part ? s->rootfs.part->name : s->rootfs.ubi_volume,
			.state = blank ? "unknown" :
				 slot_state_to_string(slot_state_of(&v->st, i, installing)),
			.version = v->versions[i],
			.health = v->health[i],
			.tries_left.value = si->left,
			.priority = { si->order_pos, si->order_pos >= 0 },
			.booted.value = v->decision.booted == (int)i,
		};
	}
	return proto_typed_array(proto_flashd_slot_fields, items, n, sizeof(items[0]));
}

/* Partition; device left out when unknown, error when the statistics were read. */
static struct json_object *partition_json(struct board *b, const struct layout_partition *p)
{
	_cleanup_flash_ struct flash *f = NULL;
	_cleanup_free_ char *dev = NULL;
	struct flash_stats st = { 0 };
	const char *device;
	uint64_t off;
	int r;

	device = board_partition_path(b, p, &dev, &off) >= 0 ? dev : NULL;
	r = board_open_partition(b, p, &f);
	if (r >= 0)
		r = flash_get_stats(f, &st);
	return proto_typed_build(proto_flashd_partition_fields, &(struct proto_flashd_partition){
		.name = p->name, .device = device, .type = flash_type_to_string(p->dev->type),
		.size.value = (int64_t)p->size, .erase_size.value = p->dev->erasesize,
		.write_size.value = p->dev->writesize, .oob_size.value = p->dev->oobsize,
		.bad_blocks.value = r >= 0 ? (int64_t)st.badblocks : 0,
		.ecc_corrected = { (int64_t)st.corrected, r >= 0 },
		.ecc_failed = { (int64_t)st.failed, r >= 0 },
		.error = r >= 0 ? NULL : strerror(-r) });
}

static struct json_object *flash_json(struct manager *m)
{
	_cleanup_board_ struct board *b = NULL;
	struct json_object *arr = json_object_new_array();

	if (board_open(m->layout, m->conf->target, false, &b) < 0)
		return arr;
	for (size_t i = 0; i < m->layout->n_partitions; i++)
		json_object_array_add(arr, partition_json(b, &m->layout->partitions[i]));
	return arr;
}

/* One layer of the boot record as OverlayLayer. */
static struct json_object *overlay_layer_json(struct json_object *ly)
{
	struct json_object *g = NULL;

	json_object_object_get_ex(ly, "generation", &g);
	return proto_typed_build(proto_flashd_overlay_layer_fields,
		&(struct proto_flashd_overlay_layer){
			.path = proto_typed_string_at(ly, "path"),
			.state = proto_typed_string_at(ly, "state"),
			.fstype = proto_typed_string_at(ly, "fstype"),
			.partition = proto_typed_string_at(ly, "partition"),
			.persistent = proto_typed_bool_at(ly, "persistent"),
			.fallback = proto_typed_bool_at(ly, "fallback"),
			.fallback_reason = proto_typed_string_at(ly, "fallback_reason"),
			.generation = proto_typed_string_at(g, "name"),
			.generation_error = proto_typed_string_at(ly, "generation_error") });
}

/* Every layer flashd boot recorded, so a fallback of any one shows. */
static struct json_object *overlay_layers_json(struct json_object *boot, bool *degraded)
{
	_cleanup_json_ struct json_object *arr = json_object_new_array();
	struct json_object *ovs;

	if (!arr || !boot || !json_object_object_get_ex(boot, "overlays", &ovs) ||
	    !json_object_is_type(ovs, json_type_array))
		return TAKE_PTR(arr);
	for (size_t i = 0; i < json_object_array_length(ovs); i++) {
		struct json_object *ly = json_object_array_get_idx(ovs, i);
		struct json_object *o = overlay_layer_json(ly);

		if (!o || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			return NULL;
		}
		if (proto_typed_bool_at(ly, "fallback").value)
			*degraded = true;
	}
	return TAKE_PTR(arr);
}

/* The "/" layer, else the layout's first: the one flashd boot records as
 * "overlay". */
static const struct layout_overlay *root_overlay(const struct layout *l)
{
	for (size_t i = 0; i < l->n_overlays; i++)
		if (!strcmp(l->overlays[i].path, "/"))
			return &l->overlays[i];
	return l->n_overlays ? &l->overlays[0] : NULL;
}

struct json_object *manager_status_overlay_json(struct manager *m, bool reset_pending)
{
	struct json_object *boot = m->status.boot, *ov = NULL;
	_cleanup_json_ struct json_object *layers = NULL;
	const struct layout_overlay *lo = root_overlay(m->layout);
	const char *state = lo ? "unknown" : "none";
	struct proto_bool whiteout;
	bool degraded = false;

	/* flashd boot records what it mounted */
	if (boot && json_object_object_get_ex(boot, "overlay", &ov) && proto_typed_string_at(ov, "state"))
		state = proto_typed_string_at(ov, "state");
	layers = overlay_layers_json(boot, &degraded);
	if (boot && proto_typed_bool_at(boot, "degraded").value)
		degraded = true;
	if (reset_pending)
		state = "reset_pending";
	/* mainline JFFS2 lacks RENAME_WHITEOUT; the boot probe says for sure */
	whiteout = ov ? proto_typed_bool_at(ov, "rename_whiteout") : (struct proto_bool){ 0 };
	if (!whiteout.given)
		whiteout.value = lo && lo->type != LAYOUT_OVERLAY_JFFS2;
	return proto_typed_build(proto_flashd_overlay_fields, &(struct proto_flashd_overlay){
		.state = state, .partition = lo && lo->part ? lo->part->name : NULL,
		.fstype = lo ? layout_overlay_type_to_string(lo->type) : NULL,
		.size = proto_typed_int_at(ov, "size"), .used = proto_typed_int_at(ov, "used"),
		.rename_whiteout = whiteout, .degraded = { degraded, true }, .layers = layers });
}

static struct json_object *last_install_json(struct manager *m)
{
	_cleanup_json_ struct json_object *arr = NULL;

	if (m->status.unsaved_install)
		return proto_install_record(m->status.unsaved_install);
	if (record_load(m->conf->state_dir, &arr) < 0 || json_object_array_length(arr) == 0)
		return NULL;
	return proto_install_record(json_object_array_get_idx(arr, 0));
}

void manager_status_unsaved_install(struct manager *m, const struct record *r, int error)
{
	char why[PATH_MAX + 128];

	json_object_put(m->status.unsaved_install);
	m->status.unsaved_install = r ? record_to_json(r) : NULL;
	if (m->status.unsaved_install) {
		snprintf(why, sizeof(why), "the install record could not be written to %s: %s; "
			 "it is lost at the daemon's next start", m->conf->state_dir,
			 strerror(-error));
		json_object_object_add(m->status.unsaved_install, "record_error",
				       json_object_new_string(why));
	}
	manager_status_invalidate(m, MANAGER_STATUS_BOARD);
}

/* EnvStatus's copies[], EnvCopy each; dead: the dead copy (0-based), or -1. */
static struct json_object *env_copies_json(struct env *e, int *dead)
{
	_cleanup_json_ struct json_object *arr = json_object_new_array();

	*dead = -1;
	for (size_t i = 0; arr && i < env_n_devices(e); i++) {
		int err = 0;
		enum env_copy_state st = env_copy_state(e, i, &err);
		struct json_object *c = proto_typed_build(proto_flashd_env_copy_fields,
			&(struct proto_flashd_env_copy){ env_copy_state_to_string(st),
				st == ENV_COPY_UNREADABLE || st == ENV_COPY_DEAD ? strerror(-err) : NULL });

		if (!c || json_object_array_add(arr, c) < 0) {
			json_object_put(c);
			return NULL;
		}
		if (st == ENV_COPY_DEAD)
			*dead = (int)i;
	}
	return TAKE_PTR(arr);
}

/* Variables of the slot env written by hand that do not read as flashd
 * and the boot script read them: named, with what becomes of them. */
static struct json_object *malformed_json(const struct slot_env *st)
{
	struct proto_flashd_malformed_var items[SLOT_MAX];
	size_t n = st->n_malformed < SLOT_MAX ? st->n_malformed : SLOT_MAX;

	for (size_t i = 0; i < n; i++)
		items[i] = (struct proto_flashd_malformed_var){ st->malformed[i].name,
			st->malformed[i].value, st->malformed[i].effect };
	return proto_typed_array(proto_flashd_malformed_var_fields, items, n, sizeof(items[0]));
}

/* The env's health. With no valid copy U-Boot boots with its built-in
 * default env, in which the slot variables are unset: the boot script
 * then tries every slot with full tries (docs/boot-contract.md). */
static struct json_object *env_json(struct env *e, const struct slot_env *st)
{
	_cleanup_json_ struct json_object *copies = NULL, *malformed = malformed_json(st);
	bool blank = env_is_blank(e);
	int dead;

	copies = env_copies_json(e, &dead);
	if (!copies || !malformed)
		return NULL;
	return proto_typed_build(proto_flashd_env_status_fields, &(struct proto_flashd_env_status){
		.readable.value = !blank,
		.device = env_describe(e),
		.copies = copies,
		.dead_copy = { dead + 1, dead >= 0 },
		.next_boot = blank ? "no valid env copy: U-Boot boots with its built-in default env "
			"(slot variables unset: every slot, full tries); recover with 'flashctl env "
			"init' and 'flashctl slot init'" : NULL,
		.malformed = malformed });
}

/* flashd boot records what it mounted */
static struct json_object *boot_record(void)
{
	_cleanup_free_ char *text = NULL;

	if (util_read_file(MANAGER_BOOT_STATE_FILE, 1 << 16, &text, NULL) < 0)
		return NULL;
	return json_tokener_parse(text);
}

/* Watches on what the state is read from; added again at each load, so
 * a file replaced since (a new simulator, a renamed record) is watched
 * again. Missing ones are left to the age bound. */
static void status_watch(struct manager *m, struct env *e)
{
	static const uint32_t file_mask = IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
	static const uint32_t dir_mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_CREATE;
	int fd = m->status.inotify_fd;

	if (fd < 0)
		return;
	for (size_t i = 0; e && i < env_n_devices(e); i++)
		(void)inotify_add_watch(fd, env_device(e, i)->path, file_mask);
	if (m->conf->cmdline)
		(void)inotify_add_watch(fd, m->conf->cmdline, file_mask);
	(void)inotify_add_watch(fd, m->conf->state_dir, dir_mask);
	(void)inotify_add_watch(fd, paths_run_dir, dir_mask);
}

/* Reads what inotify queued; true when someone wrote. During an install
 * the worker writes the simulator file the env lives in: its own env
 * stores come as install events, anyone else's within the age bound. */
static bool status_events(struct manager *m)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;
	ssize_t n;

	if (m->status.inotify_fd < 0)
		return false;
	while ((n = read(m->status.inotify_fd, buf, sizeof(buf))) > 0)
		any = true;
	return any && !manager_install_running(m);
}

void manager_status_invalidate(struct manager *m, unsigned what)
{
	if (what & MANAGER_STATUS_ENV)
		m->status.env_valid = false;
	if (what & MANAGER_STATUS_BOARD)
		m->status.board_valid = false;
}

/* A second flashd's worker installing on this board holds its lock: the
 * slot it writes is being installed, not interrupted. */
static void status_probe_installer(struct manager *m)
{
	struct oplock_holder h;

	m->status.installer[0] = '\0';
	if (manager_install_running(m) || oplock_probe(m->conf->target, &h) <= 0 ||
	    !strstr(h.what, "install"))
		return;
	oplock_holder_describe(&h, m->status.installer, sizeof(m->status.installer));
}

/* "A,B" of the slots a predicate holds for; "" when none. */
static void slot_names(const struct manager *m, const struct slot_env *st,
		       bool (*pred)(const struct slot_env *, size_t), char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < m->group->n_slots; i++)
		if (pred(st, i))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
				 m->group->slots[i].name);
}

static void malformed_names(const struct slot_env *st, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < st->n_malformed && i < SLOT_MAX; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
			 st->malformed[i].name);
}

/* A dead env copy, no valid copy, lost records, malformed variables or a
 * legacy env: the journal hears of it once, and again when it changes. */
static void env_degraded_event(struct manager *m, struct env *e, const struct slot_env *st)
{
	char dead[24] = "", malformed[192], legacy[64], text[sizeof(m->status.env_degraded)];
	bool blank = env_is_blank(e), lost = !blank && slot_records_lost(st);

	for (size_t i = 0; i < env_n_devices(e); i++)
		if (env_copy_state(e, i, NULL) == ENV_COPY_DEAD)
			snprintf(dead, sizeof(dead), "%zu", i + 1);
	malformed_names(st, malformed, sizeof(malformed));
	slot_names(m, st, slot_legacy, legacy, sizeof(legacy));
	snprintf(text, sizeof(text), "%s%s%s%s%s%s%s%s%s%s", blank ? "; no valid copy: U-Boot "
		 "boots its built-in default env" : "", dead[0] ? "; copy " : "", dead,
		 dead[0] ? " is dead (its erase blocks cannot be written)" : "",
		 lost ? "; the slot records were lost (a default env)" : "",
		 malformed[0] ? "; malformed variables: " : "", malformed,
		 legacy[0] ? "; legacy env (slots without flashd records: " : "", legacy,
		 legacy[0] ? ")" : "");
	if (!strcmp(text, m->status.env_degraded))
		return;
	snprintf(m->status.env_degraded, sizeof(m->status.env_degraded), "%s", text);
	if (!text[0])
		return;
	log_event(LOG_EVENT_ENV_DEGRADED, (const struct log_field[]){
			{ "ENV_DEVICE", env_describe(e) }, { "ENV_NO_VALID_COPY", blank ? "yes" : NULL },
			{ "ENV_DEAD_COPY", dead[0] ? dead : NULL },
			{ "ENV_RECORDS_LOST", lost ? "yes" : NULL },
			{ "MALFORMED", malformed[0] ? malformed : NULL },
			{ "LEGACY_SLOTS", legacy[0] ? legacy : NULL }, { NULL } },
		  "the U-Boot env is degraded: %s", text + 2);
}

/* The env part: the slot env and the env copies. Both copies corrupt: the
 * state still loads (blank), status still answers (issue 13, item 6). */
static int status_load_env(struct manager *m, uint64_t now, struct error *err)
{
	struct manager_status *st = &m->status;
	_cleanup_env_ struct env *e = NULL;
	struct manager_slots v;
	int r;

	r = env_open_layout(m->layout, m->conf->target, NULL, ENV_OPEN_ALLOW_BLANK, &e, err);
	if (r < 0)
		return r;
	status_watch(m, e);
	r = manager_status_load_slots(m, e, &v, err);
	if (r < 0)
		return r;
	manager_status_slots_done(&st->v);
	st->v = v;
	st->blank = env_is_blank(e);
	json_object_put(st->env);
	st->env = env_json(e, &v.st);
	env_degraded_event(m, e, &v.st);
	status_probe_installer(m);
	st->env_valid = true;
	st->env_loaded = now;
	return 0;
}

static void status_load_board(struct manager *m, uint64_t now)
{
	struct manager_status *st = &m->status;

	json_object_put(st->flash);
	st->flash = flash_json(m);
	json_object_put(st->last_install);
	st->last_install = last_install_json(m);
	json_object_put(st->boot);
	st->boot = boot_record();
	st->board_valid = true;
	st->board_loaded = now;
}

/* Brings the parts of the kept state an answer needs up to date; reads
 * the flash only when something changed or the part is older than the
 * bound. */
static int status_refresh(struct manager *m, unsigned need, struct error *err)
{
	struct manager_status *st = &m->status;
	uint64_t now = util_now_usec();
	bool env, board;
	int r;

	if (status_events(m))
		manager_status_invalidate(m, MANAGER_STATUS_ALL);
	env = (need & MANAGER_STATUS_ENV) &&
	      (!st->env_valid || now - st->env_loaded > STATUS_MAX_AGE_USEC);
	board = (need & MANAGER_STATUS_BOARD) &&
		(!st->board_valid || now - st->board_loaded > STATUS_MAX_AGE_USEC);
	if (!env && !board)
		return 0;
	st->loads++;
	log_debug("status: loading the board's state from flash (%s%s, load %u)",
		  env ? "env" : "", board ? (env ? " and board" : "board") : "", st->loads);
	if (env) {
		r = status_load_env(m, now, err);
		if (r < 0)
			return r;
	}
	if (board)
		status_load_board(m, now);
	return 0;
}

static const char *slot_name(struct manager *m, int idx)
{
	return idx >= 0 ? m->group->slots[idx].name : NULL;
}

/* GetStatus: the one place the answer is made, from the kept state and
 * the running operation. */
static int status_reply(struct proto_call *call, struct manager *m)
{
	const struct manager_status *st = &m->status;
	const struct slot_decision *ss = &st->v.decision;
	_cleanup_json_ struct json_object *slots = slots_json(m, &st->v, st->blank),
		*overlay = manager_status_overlay_json(m, st->v.reset_pending), *progress = NULL;

	if (m->op.has_progress)
		progress = manager_install_progress_json(&m->op.last);
	return proto_reply_typed(call, &(struct proto_flashd_status_reply){
		.layout = m->layout->path, .board = m->layout->board,
		.compatible = m->layout->compatible, .slots = slots,
		.booted = slot_name(m, ss->booted),
		.booted_unknown = st->v.booted_unknown[0] ? st->v.booted_unknown : NULL,
		.on_trial.value = ss->on_trial, .fell_back.value = ss->fell_back,
		.switch_pending.value = ss->switch_pending, .next_boot = slot_name(m, ss->next_boot),
		.next_after_reset.value = ss->next_after_reset, .degraded.value = ss->degraded,
		.last_good = slot_name(m, ss->last_good), .last_install = st->last_install,
		.overlay = overlay, .flash = st->flash,
		.allow_unsigned.value = m->conf->allow_unsigned, .operation = m->op.name,
		.installing_elsewhere = st->installer[0] ? st->installer : NULL,
		.progress = progress, .env = st->env });
}

int manager_status_refresh(struct manager *m, unsigned need, struct error *err)
{
	return status_refresh(m, need, err);
}

int manager_status_get(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	struct error err = {};
	int r;

	r = status_refresh(m, MANAGER_STATUS_ALL, &err);
	if (r < 0)
		return manager_reply_env_error(call, r, &err);
	return status_reply(call, m);
}

/* SlotStatus: the A/B state of the kept view, as flashctl slot status
 * shows it offline (the same reply, proto_slot_status). */
int manager_status_slots(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	const struct manager_status *st = &m->status;
	_cleanup_json_ struct json_object *o = NULL;
	struct json_object *dev;
	struct error err = {};
	int r;

	r = status_refresh(m, MANAGER_STATUS_ENV, &err);
	if (r < 0)
		return manager_reply_env_error(call, r, &err);
	o = proto_slot_status(&st->v.st, m->group->name,
				     json_object_object_get_ex(st->env, "device", &dev) ?
				     json_object_get_string(dev) : "", st->v.decision.booted,
				     st->v.decision.booted_by,
				     manager_install_running(m) || st->installer[0]);
	return proto_reply(call, o);
}

int manager_status_overlay(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_json_ struct json_object *overlay = NULL;
	struct error err = {};
	int r;

	r = status_refresh(m, MANAGER_STATUS_ALL, &err);
	if (r < 0)
		return manager_reply_env_error(call, r, &err);
	overlay = manager_status_overlay_json(m, m->status.v.reset_pending);
	return proto_reply_typed(call, &(struct proto_flashd_overlay_reply){ .overlay = overlay });
}

int manager_status_flash_info(struct proto_call *call, struct json_object *params,
			      void *userdata)
{
	struct manager *m = userdata;
	const struct proto_flashd_flash_info *in = proto_call_input(call);
	const char *part = in->partition;
	_cleanup_json_ struct json_object *arr = NULL;
	struct error err = {};
	int r;

	if (part && !layout_find_partition(m->layout, part))
		return proto_error_string(call, PROTO_ERROR_NO_SUCH_PARTITION, "partition", part);
	r = status_refresh(m, MANAGER_STATUS_BOARD, &err);
	if (r < 0)
		return manager_reply_env_error(call, r, &err);
	arr = json_object_new_array();
	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(m->status.flash); i++) {
		struct json_object *p = json_object_array_get_idx(m->status.flash, i), *n;

		if (!part || (json_object_object_get_ex(p, "name", &n) &&
			      !strcmp(json_object_get_string(n), part)))
			json_object_array_add(arr, json_object_get(p));
	}
	return proto_reply_typed(call, &(struct proto_flashd_flash_info_reply){ .partitions = arr });
}

int manager_status_init(struct manager *m)
{
	m->status.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (m->status.inotify_fd < 0)
		log_warning("no inotify (%s): status follows changes made outside flashd within "
			    "%llu s", strerror(errno), STATUS_MAX_AGE_USEC / 1000000ULL);
	return 0;
}

void manager_status_done(struct manager *m)
{
	struct manager_status *st = &m->status;

	manager_status_slots_done(&st->v);
	json_object_put(st->env);
	json_object_put(st->flash);
	json_object_put(st->last_install);
	json_object_put(st->boot);
	json_object_put(st->unsaved_install);
	if (st->inotify_fd >= 0)
		close(st->inotify_fd);
	*st = (struct manager_status){ .inotify_fd = -1 };
}

void manager_status_check_env(struct manager *m)
{
	struct error err = {};

	if (status_refresh(m, MANAGER_STATUS_ENV, &err) < 0)
		log_warning("cannot read the U-Boot env: %s", error_message(&err));
}
