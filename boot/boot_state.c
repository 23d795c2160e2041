/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd boot's state record (/run/flashd/boot.json, boot_state.h): what
 * was assembled, how, the warnings, and why it failed, for the daemon's
 * status. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "boot.h"
#include "boot_assemble.h"
#include "boot_state.h"
#include "cleanup.h"
#include "cleanup_json.h"
#include "util.h"

#define jstr json_string_or_null

static struct json_object *root_json(const struct boot_root *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "kind", jstr(boot_root_kind_to_string(r->kind)));
	json_object_object_add(o, "device", jstr(r->device));
	json_object_object_add(o, "source", jstr(r->source));
	json_object_object_add(o, "image_bytes", json_object_new_int64((int64_t)r->image_bytes));
	json_object_object_add(o, "bad_blocks", json_object_new_int64((int64_t)r->bad_blocks));
	json_object_object_add(o, "bad_blocks_skipped", json_object_new_int64((int64_t)r->bad_inside));
	if (r->dm_name[0]) {
		json_object_object_add(o, "dm_name", jstr(r->dm_name));
		json_object_object_add(o, "dm_table", jstr(r->dm_table));
	}
	return o;
}

static struct json_object *layer_json(struct boot *b, const struct boot_layer *ly)
{
	struct json_object *o = json_object_new_object(), *p, *g, *rm;
	const struct boot_overlay_result *r = &ly->res;

	json_object_object_add(o, "path", jstr(ly->ov->path));
	json_object_object_add(o, "state", jstr(r->state));
	json_object_object_add(o, "layout_type", jstr(layout_overlay_type_to_string(ly->ov->type)));
	json_object_object_add(o, "fstype", jstr(r->fstype));
	json_object_object_add(o, "partition", jstr(ly->ov->part ? ly->ov->part->name : NULL));
	json_object_object_add(o, "source", jstr(r->source));
	json_object_object_add(o, "mountpoint", jstr(ly->final[0] ? ly->final : ly->mnt));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)r->size));
	json_object_object_add(o, "used", json_object_new_int64((int64_t)r->used));
	json_object_object_add(o, "persistent", json_object_new_boolean(!strcmp(r->state, "mounted") &&
									 ly->gen_ok));
	json_object_object_add(o, "fallback", json_object_new_boolean(r->fallback));
	json_object_object_add(o, "fallback_reason", r->fallback ? jstr(r->fallback_reason.msg) : NULL);
	json_object_object_add(o, "medium", jstr(r->medium));
	json_object_object_add(o, "formatted", json_object_new_boolean(r->formatted));
	json_object_object_add(o, "reset_done", json_object_new_boolean(r->reset_done));
	json_object_object_add(o, "reset_done_earlier", json_object_new_boolean(ly->reset_earlier));
	json_object_object_add(o, "generation_error", ly->gen_ok ? NULL : jstr(ly->gen_error));
	json_object_object_add(o, "writable", json_object_new_boolean(ly->gen_ok || ly->vol[0]));
	json_object_object_add(o, "rename_whiteout", json_object_new_boolean(r->probe.rename_whiteout));
	p = json_object_new_object();
	json_object_object_add(p, "whiteout", json_object_new_boolean(r->probe.whiteout));
	json_object_object_add(p, "rename_whiteout", json_object_new_boolean(r->probe.rename_whiteout));
	json_object_object_add(p, "xattr_trusted", json_object_new_boolean(r->probe.xattr_trusted));
	json_object_object_add(p, "xattr_user", json_object_new_boolean(r->probe.xattr_user));
	json_object_object_add(p, "tmpfile", json_object_new_boolean(r->probe.tmpfile));
	json_object_object_add(o, "probe", p);
	if (ly->gen_ok) {
		g = json_object_new_object();
		json_object_object_add(g, "name", jstr(ly->gen.name));
		json_object_object_add(g, "created", json_object_new_boolean(ly->gen.created));
		json_object_object_add(g, "boots_before", json_object_new_int((int)ly->gen.boots));
		json_object_object_add(g, "previous", ly->gen.previous[0] ? jstr(ly->gen.previous) : NULL);
		json_object_object_add(g, "migrated", json_object_new_int(ly->gen.migrated));
		json_object_object_add(g, "keep_entries", json_object_new_int((int)ly->gen.keep_entries));
		json_object_object_add(g, "keep_rejected", json_object_new_int((int)ly->gen.keep_rejected));
		json_object_object_add(g, "slot_good", json_object_new_boolean(ly->gc_done));
		rm = json_object_new_array();
		for (size_t i = 0; i < ly->removed.n; i++)
			json_object_array_add(rm, jstr(ly->removed.v[i]));
		json_object_object_add(g, "removed", rm);
		json_object_object_add(o, "generation", g);
	}
	(void)b;
	return o;
}

/* Something the user would not expect: a layer in RAM instead of flash,
 * or a path of the union without a writable upper. */
bool boot_state_degraded(const struct boot *b)
{
	if (b->read_only)
		return true;
	for (size_t i = 0; i < b->n_layers; i++)
		if (b->layers[i].res.fallback)
			return true;
	return false;
}

static struct json_object *state_json(struct boot *b, const char *result)
{
	struct json_object *o = json_object_new_object(), *arr, *lo;

	if (!strcmp(result, "ok") && boot_state_degraded(b))
		result = "degraded";
	json_object_object_add(o, "result", jstr(result));
	json_object_object_add(o, "mode", jstr(boot_mode_to_string(b->mode)));
	json_object_object_add(o, "layout", jstr(b->layout_path));
	json_object_object_add(o, "group", jstr(b->g ? b->g->name : NULL));
	json_object_object_add(o, "slot", b->g && b->slot >= 0 ? jstr(b->g->slots[b->slot].name) : NULL);
	json_object_object_add(o, "booted_by", jstr(b->booted_by));
	json_object_object_add(o, "version", b->version[0] ? jstr(b->version) : NULL);
	json_object_object_add(o, "env", b->env_ok ? jstr("ok") : jstr(b->env_error));
	json_object_object_add(o, "tries_left", b->env_ok ? json_object_new_int((int)b->left) : NULL);
	json_object_object_add(o, "root", b->have_rootdev ? root_json(&b->rootdev) : NULL);
	json_object_object_add(o, "rom", jstr(b->mode == BOOT_MODE_PREINIT ? "/" : b->rom));
	json_object_object_add(o, "union", jstr(b->root[0] ? b->root : NULL));
	arr = json_object_new_array();
	for (size_t i = 0; i < b->n_lowers; i++) {
		lo = root_json(&b->lowers[i]);
		json_object_object_add(lo, "name", jstr(b->l->lowers[i].name));
		json_object_array_add(arr, lo);
	}
	json_object_object_add(o, "lowers", arr);
	arr = json_object_new_array();
	for (size_t i = 0; i < b->n_layers; i++)
		json_object_array_add(arr, layer_json(b, &b->layers[i]));
	json_object_object_add(o, "overlays", arr);
	/* "overlay": the "/" one, else the layout's first (the one whose
	 * partition the daemon names); "overlays" has them all */
	for (size_t i = 0; i < b->n_layers; i++)
		if (!strcmp(b->layers[i].ov->path, "/") || b->layers[i].ov == &b->l->overlays[0]) {
			json_object_object_add(o, "overlay", layer_json(b, &b->layers[i]));
			break;
		}
	json_object_object_add(o, "degraded", json_object_new_boolean(boot_state_degraded(b)));
	json_object_object_add(o, "read_only", json_object_new_boolean(b->read_only));
	json_object_object_add(o, "error", strcmp(result, "failed") ? NULL :
			       jstr(boot_log_first_error()[0] ? boot_log_first_error() : "unknown"));
	json_object_object_add(o, "reset_pending", json_object_new_boolean(b->reset_pending));
	json_object_object_add(o, "reset_cleared", json_object_new_boolean(b->reset_cleared));
	json_object_object_add(o, "warnings", json_object_get(b->warnings));
	json_object_object_add(o, "ms_root", json_object_new_double(b->ms_root));
	json_object_object_add(o, "ms_overlay", json_object_new_double(b->ms_overlay));
	json_object_object_add(o, "ms_total", json_object_new_double(boot_ms_since(b->t0)));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	return o;
}

int boot_state_write(struct boot *b, const char *result, bool print)
{
	_cleanup_json_ struct json_object *o = state_json(b, result);
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
	char dir[PATH_MAX], tmp[PATH_MAX + 8];
	_cleanup_close_ int fd = -1;
	char *slash;

	if (print)
		printf("%s\n", text);
	util_snprintf(dir, sizeof(dir), "%s", b->state_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		util_mkdir_p(dir, 0755);
	}
	util_snprintf(tmp, sizeof(tmp), "%s.new", b->state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || util_write_full(fd, text, strlen(text)) < 0 ||
	    util_write_full(fd, "\n", 1) < 0 || rename(tmp, b->state_path) < 0) {
		boot_log_err("writing the state file %s: %s", b->state_path, strerror(errno));
		return -errno;
	}
	return 0;
}
