/* The board's state as io.flashd shows it: GetStatus, OverlayStatus and
 * FlashInfo. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "cleanup_json.h"
#include "manager-internal.h"
#include "record.h"
#include "util.h"

#define jstr manager_jstr

void manager_status_slots_done(struct slots_view *v)
{
	for (size_t i = 0; i < SLOT_MAX; i++) {
		free(v->versions[i]);
		free(v->health[i]);
	}
}

/* Slot state and status from the env and the kernel command line. */
int manager_status_load_slots(struct manager *m, struct env *e, struct slots_view *v,
			      struct error *err)
{
	const char *by = NULL;
	char *reset;
	int booted, r;

	*v = (struct slots_view){ 0 };
	r = slot_state_load_group(&v->st, m->group, env_get_dup, e, err);
	if (r < 0)
		return r;
	booted = slot_booted(m->conf->cmdline, m->layout, m->group, &by, NULL);
	slot_status_compute(&v->st, booted < 0 ? -1 : booted, booted < 0 ? NULL : by, &v->status);
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
			slot_view_of(&v->st, i, manager_install_running(m)))));
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

struct json_object *manager_status_overlay_json(struct manager *m, bool reset_pending)
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
	if (util_read_file(MANAGER_BOOT_STATE_FILE, 1 << 16, &text, NULL) >= 0 &&
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


int manager_status_get(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	struct error eerr = {};
	struct json_object *envj;
	struct slots_view v;
	bool blank;
	int r;

	/* both copies corrupt: status still answers (issue 13, item 6) */
	r = env_open_layout(m->layout, m->conf->target, NULL, ENV_OPEN_ALLOW_BLANK, &e, &eerr);
	if (r < 0)
		return manager_reply_env_error(call, r, &eerr);
	r = manager_status_load_slots(m, e, &v, &eerr);
	blank = env_is_blank(e);
	envj = env_json(e);
	env_close(TAKE_PTR(e)); /* do not hold the env lock while reading flash */
	json_object_object_add(o, "env", envj);
	if (r < 0)
		return proto_error_errno(call, r, error_message(&eerr));
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
	json_object_object_add(o, "overlay", manager_status_overlay_json(m, v.reset_pending));
	json_object_object_add(o, "flash", flash_json(m, NULL));
	json_object_object_add(o, "allow_unsigned", json_object_new_boolean(m->conf->allow_unsigned));
	json_object_object_add(o, "operation", jstr(m->op.name));
	if (m->op.has_progress)
		json_object_object_add(o, "progress", manager_install_progress_json(&m->op.last));
	manager_status_slots_done(&v);
	return proto_reply(call, o);
}

int manager_status_overlay(struct proto_call *call, struct json_object *params, void *userdata)
{
	struct manager *m = userdata;
	_cleanup_env_ struct env *e = NULL;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *reset = NULL;
	struct error eerr = {};
	int r;

	r = manager_open_env(m, &e, &eerr);
	if (r < 0)
		return manager_reply_env_error(call, r, &eerr);
	reset = env_get_dup(e, MANAGER_OVERLAY_RESET_VAR);
	json_object_object_add(o, "overlay", manager_status_overlay_json(m, reset &&
				!strcmp(reset, "1")));
	return proto_reply(call, o);
}

int manager_status_flash_info(struct proto_call *call, struct json_object *params,
			      void *userdata)
{
	struct manager *m = userdata;
	_cleanup_json_ struct json_object *o = json_object_new_object();
	const char *part = manager_param_str(params, "partition");

	if (part && !layout_find_partition(m->layout, part))
		return proto_error_string(call, PROTO_ERROR_NO_SUCH_PARTITION, "partition", part);
	json_object_object_add(o, "partitions", flash_json(m, part));
	return proto_reply(call, o);
}
