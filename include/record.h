/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Installation records: what was installed when, from which bundle
 * version, into which slot, with what result. Kept as JSON in the
 * daemon's state dir (on the persistent overlay), replaced atomically
 * (write temp, fsync, rename, fsync dir), newest first, bounded. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <json-c/json.h>

#define RECORD_FILE "installs.json"
#define RECORD_MAX 16

struct record {
	time_t started;
	time_t finished;
	const char *group;        /* slot group */
	const char *slot;         /* target slot */
	const char *version;      /* bundle version */
	const char *compatible;
	const char *result;       /* "success", "failed", "cancelled" */
	const char *error;        /* NULL on success */
	uint64_t bytes;           /* payload bytes written */
	uint64_t erases;          /* erase operations */
	uint64_t blocks_skipped;  /* unchanged erase blocks not rewritten */
	const char *signer;       /* key id or NULL (unsigned) */
};

/* r as installs.json keeps it (one element). */
struct json_object *record_to_json(const struct record *r);
/* Prepend r to DIR/installs.json (creating DIR), keeping RECORD_MAX. */
int record_append(const char *dir, const struct record *r);
/* Write buf to path (in dir) so that a power cut leaves either the old or
 * the new file, never a torn one: temp file, fsync, rename, fsync dir. */
int record_write_atomic(const char *dir, const char *path, const void *buf, size_t len);
/* The records, newest first (a JSON array; an empty one if none). */
int record_load(const char *dir, struct json_object **ret);
