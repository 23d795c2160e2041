/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup_json.h"
#include "record.h"
#include "util.h"

int record_load(const char *dir, struct json_object **ret)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	struct json_object *j;
	int r;

	if (asprintf(&path, "%s/%s", dir, RECORD_FILE) < 0)
		return -ENOMEM;
	r = util_read_file(path, 1 << 20, &text, NULL);
	if (r == -ENOENT) {
		*ret = json_object_new_array();
		return *ret ? 0 : -ENOMEM;
	}
	if (r < 0)
		return r;
	j = json_tokener_parse(text);
	if (!j || !json_object_is_type(j, json_type_array)) {
		json_object_put(j);
		return -EBADMSG;
	}
	*ret = j;
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
	add_str(o, "error", r->error);
	add_str(o, "signer", r->signer);
	json_object_object_add(o, "bytes", json_object_new_int64(r->bytes));
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

int record_append(const char *dir, const struct record *r)
{
	_cleanup_json_ struct json_object *old = NULL, *arr = NULL;
	_cleanup_free_ char *path = NULL;
	struct json_object *o;
	const char *text;
	int ret;

	ret = util_mkdir_p(dir, 0755);
	if (ret < 0)
		return ret;
	/* a damaged record file is replaced rather than blocking installs */
	if (record_load(dir, &old) < 0)
		old = json_object_new_array();
	arr = json_object_new_array();
	o = record_to_json(r);
	if (!old || !arr || !o) {
		json_object_put(o);
		return -ENOMEM;
	}
	json_object_array_add(arr, o);
	for (size_t i = 0; i < json_object_array_length(old) && i + 1 < RECORD_MAX; i++)
		json_object_array_add(arr, json_object_get(json_object_array_get_idx(old, i)));
	if (asprintf(&path, "%s/%s", dir, RECORD_FILE) < 0)
		return -ENOMEM;
	text = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY);
	return record_write_atomic(dir, path, text, strlen(text));
}
