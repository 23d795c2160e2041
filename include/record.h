/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Installation records, the install history: what was installed when,
 * from where, which bundle version, into which slot, with what result.
 * Kept as JSON in the daemon's state dir (on the persistent overlay),
 * replaced atomically (write temp, fsync, rename, fsync dir), newest
 * first, the last RECORD_MAX kept. A damaged file never stops an
 * install: the next record starts a new file and the damaged one is kept
 * aside (RECORD_FILE.damaged-TIME), which that record names. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <json-c/json.h>

#define RECORD_FILE "installs.json"
#define RECORD_MAX 100

struct record {
	time_t started;
	time_t finished;
	const char *group;        /* slot group */
	const char *slot;         /* target slot */
	const char *version;      /* bundle version (as signed in its manifest) */
	const char *compatible;
	const char *result;       /* "success", "failed", "cancelled" */
	const char *error_name;   /* the io.flashd error the install ended with, NULL on success */
	const char *error;        /* its message, NULL on success */
	const char *source;       /* the bundle's path or URL (credentials and query
				   * removed), NULL when unknown */
	uint64_t bytes;           /* payload bytes written */
	uint64_t bytes_fetched;   /* bundle bytes read from the source */
	uint64_t erases;          /* erase operations */
	uint64_t blocks_skipped;  /* unchanged erase blocks not rewritten */
	const char *signer;       /* key id or NULL (unsigned) */
	const char *running_version; /* the booted slot's version it was compared with */
	const char *running_version_from; /* install_version_from_to_string(): where that
					   * came from; NULL when none was compared */
	const char *downgrade;    /* install_downgrade_to_string(): what the policy did
				   * with a downgrade; NULL when it was none */
	const char *history_reset; /* set by record_append: the damaged file set aside */
};

/* r as installs.json keeps it (one element). */
struct json_object *record_to_json(const struct record *r);
/* Prepend r to DIR/installs.json (creating DIR), keeping RECORD_MAX. A
 * damaged file is renamed aside first and the new record says so. */
int record_append(const char *dir, const struct record *r);
/* Write buf to path (in dir) so that a power cut leaves either the old or
 * the new file, never a torn one: temp file, fsync, rename, fsync dir. */
int record_write_atomic(const char *dir, const char *path, const void *buf, size_t len);
/* The records, newest first (a JSON array; an empty one if none), each
 * element made again from its typed fields (a hand-edited field of the
 * wrong type is left out). -EBADMSG: the file is damaged (not a JSON
 * array); the next record_append sets it aside. */
int record_load(const char *dir, struct json_object **ret);
/* The words a record's result and downgrade may hold (an unknown one is
 * no value io.flashd's InstallRecord can name). */
bool record_result_known(const char *s);
bool record_downgrade_known(const char *s);
bool record_version_from_known(const char *s);
/* The install history of DIR, the records newest first (record_load()),
 * unsaved (a record_to_json() the state dir could not keep, or NULL) in
 * front; why says why the file cannot be read ("" when it can: a damaged
 * or unreadable file gives an empty history, not a failure). -ENOMEM
 * only. GetHistory shows it through proto_history(). */
int record_history(const char *dir, struct json_object *unsaved, struct json_object **ret,
		   char *why, size_t len);
