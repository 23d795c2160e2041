/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the env state decoder (slot_env_load over the
 * U-Boot variables BOOT_ORDER / BOOT_<x>_LEFT) and everything computed
 * from a decoded state: every slot operation, the boot script's choice,
 * the status, the order string.
 *
 * Input: byte 0 = board (bits 0-1: 1..4 slots A..D; bits 2-5: max tries
 * 1..9; bit 7: go through a real env blob, see below), byte 1 = the
 * operation to apply and re-check (op, slot, force), then "NAME=VALUE"
 * lines (or NUL-separated entries, as in the env itself).
 *
 * Map mode: the variables are a plain map. Blob mode: they are written
 * into a single-copy U-Boot env image (crc32 + NUL-separated entries, as
 * U-Boot stores it) in a tmpfs file, opened through env.c/libubootenv,
 * decoded with env_get_dup, and the operation is stored with slot_apply
 * (one env store) and decoded again.
 *
 * Invariant in both modes: the state decoded after applying an
 * operation's changes is the state slot_compute said it would be (same
 * BOOT_ORDER, same tries left for every slot). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "env.h"
#include "slot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_VARS 64
#define ENV_SIZE 0x2000

struct map {
	size_t n;
	char *name[MAX_VARS + SLOT_CHANGES_MAX];
	char *value[MAX_VARS + SLOT_CHANGES_MAX];
};

static char *map_get(void *userdata, const char *name)
{
	struct map *m = userdata;

	for (size_t i = m->n; i > 0; i--) /* the last one wins */
		if (!strcmp(m->name[i - 1], name))
			return strdup(m->value[i - 1]);
	return NULL;
}

static void map_parse(struct map *m, char *text, size_t len)
{
	char *p = text, *end = text + len;

	m->n = 0;
	while (p < end && m->n < MAX_VARS) {
		char *e = p, *eq;

		while (e < end && *e != '\n' && *e != '\0')
			e++;
		*e = '\0';
		eq = strchr(p, '=');
		if (eq && eq != p) {
			*eq = '\0';
			m->name[m->n] = p;
			m->value[m->n] = eq + 1;
			m->n++;
		}
		p = e + 1;
	}
}

static const char *const names[SLOT_MAX] = { "A", "B", "C", "D" };

static void same_state(const struct slot_env *want, const struct slot_env *got)
{
	if (want->n_order != got->n_order)
		abort();
	for (size_t k = 0; k < want->n_order; k++)
		if (want->order[k] != got->order[k])
			abort();
	for (size_t i = 0; i < want->n_slots; i++)
		if (want->slots[i].left != got->slots[i].left ||
		    want->slots[i].order_pos != got->slots[i].order_pos)
			abort();
}

/* Everything that only reads a state. */
static void exercise(const struct slot_env *st)
{
	char order[SLOT_MAX * (SLOT_NAME_MAX + 1) + 1];
	struct slot_env ns;
	struct slot_changes ch;
	struct slot_decision status;
	int next, r;

	slot_order_string(st, order, sizeof(order));
	next = slot_next_boot(st);
	if (next >= (int)st->n_slots || (next < 0 && next != -ENOENT))
		abort();
	for (size_t i = 0; i < st->n_slots; i++)
		if (!slot_tries_to_string(slot_tries_of(st, i)))
			abort();
	for (int b = -1; b < (int)st->n_slots; b++)
		slot_decide(st, b, b < 0 ? NULL : "flashd.slot", &status);
	r = slot_boot_select(st, &ns, &ch);
	if (r >= 0 && (r >= (int)st->n_slots || r != next))
		abort(); /* the boot script boots what slot_next_boot says */
	if (r < 0 && r != -EAGAIN && r != -ELOOP)
		abort();
	for (int op = 0; op < _SLOT_OP_MAX; op++)
		for (int s = -1; s < (int)st->n_slots; s++)
			for (unsigned f = 0; f <= SLOT_FORCE; f += SLOT_FORCE) {
				struct error err = {};

				r = slot_compute(st, op, s, f, &ns, &ch, &err);
				if (r >= 0 && ch.n > SLOT_CHANGES_MAX)
					abort();
				if (r < 0 && !err.msg[0])
					abort();
			}
}

/* Apply the changes to the map and decode again. */
static void map_roundtrip(struct map *m, const struct slot_env *st, size_t n_slots,
			  unsigned max_tries, const struct slot_changes *ch)
{
	struct slot_env again;
	struct error err;

	for (size_t i = 0; i < ch->n && m->n < MAX_VARS + SLOT_CHANGES_MAX; i++) {
		m->name[m->n] = (char *)ch->vars[i].name;
		m->value[m->n] = (char *)ch->vars[i].value;
		m->n++;
	}
	if (slot_env_load(&again, names, n_slots, max_tries, map_get, m, &err) < 0)
		abort(); /* our own changes must decode */
	same_state(st, &again);
}

static char blob_path[64];

static void remove_blob(void)
{
	unlink(blob_path);
}

static int write_blob(const char *path, const uint8_t *text, size_t len)
{
	uint8_t blob[ENV_SIZE];
	uint32_t crc;
	size_t n = len < ENV_SIZE - 4 - 2 ? len : ENV_SIZE - 4 - 2;
	int fd, ok;

	memset(blob, 0, sizeof(blob));
	for (size_t i = 0; i < n; i++)
		blob[4 + i] = text[i] == '\n' ? 0 : text[i];
	/* U-Boot's env ends with two NULs; the rest stays zero */
	crc = crc32(0, blob + 4, ENV_SIZE - 4);
	memcpy(blob, &crc, 4);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ok = write(fd, blob, sizeof(blob)) == (ssize_t)sizeof(blob);
	close(fd);
	return ok ? 0 : -EIO;
}

static void blob_mode(const uint8_t *text, size_t len, size_t n_slots, unsigned max_tries,
		      int op, int slot, unsigned flags)
{
	struct env_device dev = { .size = ENV_SIZE };
	struct error eerr;
	struct error err;
	struct slot_env st, ns, again;
	struct slot_changes ch;
	struct env *e = NULL;
	void *it = NULL;
	const char *name, *value;

	if (!blob_path[0]) {
		snprintf(blob_path, sizeof(blob_path), "/dev/shm/fuzz-env.%d", (int)getpid());
		atexit(remove_blob);
	}
	if (write_blob(blob_path, text, len) < 0)
		return;
	dev.path = blob_path;
	if (env_open_devices(&dev, 1, 0, &e, &eerr) < 0)
		return; /* libubootenv refused the image: fine, as long as it said so */
	while (env_next(e, &it, &name, &value) > 0)
		if (!name || !value)
			abort();
	if (slot_env_load(&st, names, n_slots, max_tries, env_get_dup, e, &err) < 0)
		goto out;
	exercise(&st);
	if (slot_compute(&st, op, slot, flags, &ns, &ch, &err) < 0)
		goto out;
	if (slot_apply(e, &ch, &eerr) < 0)
		goto out; /* e.g. the env is full */
	env_close(e);
	e = NULL;
	if (env_open_devices(&dev, 1, 0, &e, &eerr) < 0)
		abort(); /* our own store must be readable */
	if (slot_env_load(&again, names, n_slots, max_tries, env_get_dup, e, &err) < 0)
		abort();
	same_state(&ns, &again);
out:
	env_close(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slot_env st, ns;
	struct slot_changes ch;
	struct error err;
	struct map m;
	size_t n_slots;
	unsigned max_tries, flags;
	int op, slot;
	char *text;

	if (size < 2)
		return 0;
	n_slots = (data[0] & 3) + 1;
	max_tries = ((data[0] >> 2) & 15) % SLOT_MAX_TRIES_LIMIT + 1;
	op = (data[1] & 7) % _SLOT_OP_MAX;
	slot = (int)((data[1] >> 3) & 7) - 1;
	slot = slot >= (int)n_slots ? (int)n_slots - 1 : slot;
	flags = (data[1] & 0x80) ? SLOT_FORCE : 0;

	if (data[0] & 0x80) {
		blob_mode(data + 2, size - 2, n_slots, max_tries, op, slot, flags);
		return 0;
	}

	text = malloc(size - 2 + 1);
	if (!text)
		return 0;
	memcpy(text, data + 2, size - 2);
	text[size - 2] = 0;
	map_parse(&m, text, size - 2);
	err.msg[0] = 0;
	if (slot_env_load(&st, names, n_slots, max_tries, map_get, &m, &err) < 0) {
		if (!err.msg[0])
			abort();
		goto out;
	}
	if (st.n_order > st.n_slots)
		abort();
	exercise(&st);
	if (slot_compute(&st, op, slot, flags, &ns, &ch, &err) >= 0)
		map_roundtrip(&m, &ns, n_slots, max_tries, &ch);
out:
	free(text);
	return 0;
}
