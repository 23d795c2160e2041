/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A board = a layout bound to real storage: the running system's MTD
 * devices ("system") or simulator files ("sim:PATH", PATH a file for a
 * one-device layout or a directory holding <device>.sim per device).
 * Hands out partitions as flash windows. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "flash.h"
#include "layout.h"

struct board;

/* The target string, parsed in one place: NULL, "" or "system" = the
 * running system's MTD devices; "sim:PATH" (PATH not empty) = simulator
 * files. Returns the kind, *ret_sim_path (may be NULL) = PATH, pointing
 * into target (NULL for system); -EINVAL for anything else. */
enum board_target {
	BOARD_TARGET_SYSTEM,
	BOARD_TARGET_SIM,
	_BOARD_TARGET_MAX,
};
#define BOARD_TARGET_SYSTEM_NAME "system"
#define BOARD_TARGET_SIM_PREFIX "sim:"
int board_target_parse(const char *target, const char **ret_sim_path);
/* A file of a simulated board's own, beside its simulator files, for what
 * a real board keeps machine-wide (its locks): PATH.NAME, or
 * PATH/flashd.NAME when PATH is a directory; so that boards simulated on
 * one machine (tests, CI jobs side by side) never wait for each other.
 * -EINVAL for a target that is not sim:. */
int board_sim_side_path(const char *target, const char *name, char **ret);

int board_open(const struct layout *l, const char *target, bool writable, struct board **ret);
void board_close(struct board *b);
static inline void board_closep(struct board **b) { if (*b) board_close(*b); }
#define _cleanup_board_ __attribute__((cleanup(board_closep)))

bool board_is_sim(const struct board *b);
const struct layout *board_layout(const struct board *b);
/* The flash window of partition p (caller closes it). */
int board_open_partition(struct board *b, const struct layout_partition *p, struct flash **ret);
int board_open_partition_by_name(struct board *b, const char *name, struct flash **ret);
/* A file and byte offset through which plain file I/O reaches the
 * partition's data (libubootenv needs one): "/dev/mtdN" + 0 on a real
 * board, the simulator file + its data offset + the partition offset on
 * a simulated one. */
int board_partition_path(struct board *b, const struct layout_partition *p, char **ret_path,
			 uint64_t *ret_offset);
/* Simulator file holding device d (sim boards only). */
int board_sim_device_path(const char *target, const struct layout *l,
			  const struct layout_device *d, char **ret);
