/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup_json.h"
#include "install.h"
#include "record.h"
#include "util.h"

/* A time up to 9999-12-31T23:59:59Z, a count up to 2^50: what a client
 * prints and subtracts without overflow. */
#define RECORD_TIME_MAX INT64_C(253402300799)
#define RECORD_COUNT_MAX (INT64_C(1) << 50)

/* Every field of an element and its JSON type (an integer's range): what
 * record_load keeps of a file someone may have edited. */
static const struct {
	const char *key;
	enum json_type type;
	int64_t max;
} record_fields[] = {
	{ "started", json_type_int, RECORD_TIME_MAX },
	{ "finished", json_type_int, RECORD_TIME_MAX },
	{ "group", json_type_string, 0 },
	{ "slot", json_type_string, 0 },
	{ "version", json_type_string, 0 },
	{ "compatible", json_type_string, 0 },
	{ "result", json_type_string, 0 },
	{ "error_name", json_type_string, 0 },
	{ "error", json_type_string, 0 },
	{ "source", json_type_string, 0 },
	{ "signer", json_type_string, 0 },
	{ "running_version", json_type_string, 0 },
	{ "running_version_from", json_type_string, 0 },
	{ "downgrade", json_type_string, 0 },
	{ "history_reset", json_type_string, 0 },
	{ "bytes", json_type_int, RECORD_COUNT_MAX },
	{ "bytes_fetched", json_type_int, RECORD_COUNT_MAX },
	{ "erases", json_type_int, RECORD_COUNT_MAX },
	{ "blocks_skipped", json_type_int, RECORD_COUNT_MAX },
};

static struct json_object *typed_copy(struct json_object *e)
{
	struct json_object *o, *v;

	if (!json_object_is_type(e, json_type_object))
		return NULL;
	o = json_object_new_object();
	for (size_t i = 0; o && i < ELEMENTSOF(record_fields); i++)
		if (json_object_object_get_ex(e, record_fields[i].key, &v) &&
		    json_object_is_type(v, record_fields[i].type) &&
		    (record_fields[i].type != json_type_int ||
		     (json_object_get_int64(v) >= 0 &&
		      json_object_get_int64(v) <= record_fields[i].max)))
			json_object_object_add(o, record_fields[i].key, json_object_get(v));
	return o;
}

int record_load(const char *dir, struct json_object **ret)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	_cleanup_json_ struct json_object *j = NULL;
	struct json_object *arr;
	int r;

	if (asprintf(&path, "%s/%s", dir, RECORD_FILE) < 0)
		return -ENOMEM;
	r = util_read_file(path, 1 << 20, &text, NULL);
	if (r == -ENOENT) {
		*ret = json_object_new_array();
		return *ret ? 0 : -ENOMEM;
	}
	if (r < 0)
		return r == -EFBIG ? -EBADMSG : r;
	j = json_tokener_parse(text);
	if (!j || !json_object_is_type(j, json_type_array))
		return -EBADMSG;
	arr = json_object_new_array();
	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(j) && i < RECORD_MAX; i++) {
		struct json_object *o = typed_copy(json_object_array_get_idx(j, i));
		if (o)
			json_object_array_add(arr, o);
	}
	*ret = arr;
	return 0;
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
	if (v)
		json_object_object_add(o, k, json_object_new_string(v));
}

struct json_object *record_to_json(const struct record *r)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "started", json_object_new_int64(r->started));
	json_object_object_add(o, "finished", json_object_new_int64(r->finished));
	add_str(o, "group", r->group);
	add_str(o, "slot", r->slot);
	add_str(o, "version", r->version);
	add_str(o, "compatible", r->compatible);
	add_str(o, "result", r->result);
	add_str(o, "error_name", r->error_name);
	add_str(o, "error", r->error);
	add_str(o, "source", r->source);
	add_str(o, "signer", r->signer);
	add_str(o, "running_version", r->running_version);
	add_str(o, "running_version_from", r->running_version_from);
	add_str(o, "downgrade", r->downgrade);
	add_str(o, "history_reset", r->history_reset);
	json_object_object_add(o, "bytes", json_object_new_int64(r->bytes));
	json_object_object_add(o, "bytes_fetched", json_object_new_int64(r->bytes_fetched));
	json_object_object_add(o, "erases", json_object_new_int64(r->erases));
	json_object_object_add(o, "blocks_skipped", json_object_new_int64(r->blocks_skipped));
	return o;
}

int record_write_atomic(const char *dir, const char *path, const void *buf, size_t len)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;
	ssize_t n;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = util_write_full(fd, buf, len);
	if (n < 0 || fsync(fd) < 0 || rename(tmp, path) < 0) {
		int r = n < 0 ? (int)n : -errno;
		unlink(tmp);
		return r;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
	return 0;
}

/* A damaged file is moved aside, not overwritten: what it still holds is
 * someone's to read. *ret_note says where it went (for the new record). */
static int set_aside(const char *dir, const char *path, time_t when, char **ret_note)
{
	_cleanup_free_ char *aside = NULL;
	char stamp[32];
	struct tm tm;

	int r = -EEXIST;

	if (!gmtime_r(&when, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm))
		snprintf(stamp, sizeof(stamp), "%lld", (long long)when);
	/* never over an earlier damaged copy set aside in the same second */
	for (unsigned k = 0; r == -EEXIST && k < 100; k++) {
		free(aside);
		aside = NULL;
		if ((k ? asprintf(&aside, "%s.damaged-%s-%u", path, stamp, k) :
			 asprintf(&aside, "%s.damaged-%s", path, stamp)) < 0)
			return -ENOMEM;
		r = renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE) < 0 ? -errno : 0;
	}
	if (r < 0)
		return r;
	if (asprintf(ret_note, "%s was damaged (not a JSON array of records): kept as %s; the "
		     "history starts again here", path, aside) < 0)
		return -ENOMEM;
	return 0;
}

int record_append(const char *dir, const struct record *r)
{
	_cleanup_json_ struct json_object *old = NULL, *arr = NULL;
	_cleanup_free_ char *path = NULL, *note = NULL;
	struct record rec = *r;
	struct json_object *o;
	const char *text;
	int ret;

	ret = util_mkdir_p(dir, 0755);
	if (ret < 0)
		return ret;
	if (asprintf(&path, "%s/%s", dir, RECORD_FILE) < 0)
		return -ENOMEM;
	/* a damaged record file never blocks an install: it is set aside */
	ret = record_load(dir, &old);
	if (ret == -EBADMSG) {
		ret = set_aside(dir, path, r->finished, &note);
		if (ret < 0)
			return ret;
		rec.history_reset = note;
	} else if (ret < 0) {
		return ret;
	}
	if (!old)
		old = json_object_new_array();
	arr = json_object_new_array();
	o = record_to_json(&rec);
	if (!old || !arr || !o) {
		json_object_put(o);
		return -ENOMEM;
	}
	json_object_array_add(arr, o);
	for (size_t i = 0; i < json_object_array_length(old) && i + 1 < RECORD_MAX; i++)
		json_object_array_add(arr, json_object_get(json_object_array_get_idx(old, i)));
	text = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY);
	return record_write_atomic(dir, path, text, strlen(text));
}

static const char *const result_names[] = { "success", "failed", "cancelled" };
static const char *const downgrade_names[] = { "refused", "warned", "allowed", "overridden" };

static bool one_of(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return true;
	return false;
}

bool record_result_known(const char *s)
{
	return one_of(s, result_names, ELEMENTSOF(result_names));
}

bool record_downgrade_known(const char *s)
{
	return one_of(s, downgrade_names, ELEMENTSOF(downgrade_names));
}

bool record_version_from_known(const char *s)
{
	return s && install_version_from_from_string(s) > INSTALL_VERSION_FROM_NONE;
}

int record_history(const char *dir, struct json_object *unsaved, struct json_object **ret,
		   char *why, size_t len)
{
	_cleanup_json_ struct json_object *arr = NULL, *records = json_object_new_array();
	int r;

	if (!records)
		return -ENOMEM;
	why[0] = '\0';
	r = record_load(dir, &arr);
	if (r == -ENOMEM)
		return r;
	if (r == -EBADMSG)
		snprintf(why, len, "%s/%s is damaged (not a JSON array of records): the next "
			 "install keeps it aside as %s.damaged-TIME and starts a new history", dir,
			 RECORD_FILE, RECORD_FILE);
	else if (r < 0)
		snprintf(why, len, "cannot read %s/%s: %s", dir, RECORD_FILE, strerror(-r));
	if (unsaved && json_object_array_add(records, json_object_get(unsaved)) < 0) {
		json_object_put(unsaved);
		return -ENOMEM;
	}
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);

		if (json_object_array_add(records, json_object_get(e)) < 0) {
			json_object_put(e);
			return -ENOMEM;
		}
	}
	*ret = TAKE_PTR(records);
	return 0;
}
