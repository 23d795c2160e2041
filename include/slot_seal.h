/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seal of a slot (layout "seal": true): the last erase block of the
 * slot's raw rootfs partition starts with SLOT_SEAL_MAGIC when, and only
 * when, the slot holds an image whose read-back verified. An install
 * erases it before the first payload byte and writes it after the
 * read-back verified, before the activation store; provisioning installs
 * the same way. The boot script reads it with 'mtd read' when the env was
 * lost (BOOT_ORDER unset): the default BOOT_ORDER is then the sealed
 * slots only, so U-Boot's built-in env never reaches a slot nobody
 * verified (docs/boot-contract.md, "The seal"). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "board.h"
#include "error.h"
#include "layout.h"
#include "slot.h"

#define SLOT_SEAL_MAGIC "FLSHSEAL"
#define SLOT_SEAL_MAGIC_LEN 8
/* the two 32-bit words of the magic as U-Boot's itest.l reads them on a
 * little-endian CPU ("FLSH", "SEAL") */
#define SLOT_SEAL_WORD0 0x48534c46u
#define SLOT_SEAL_WORD1 0x4c414553u

/* Offset of the seal block in the slot's rootfs partition; also the room
 * an image has there. */
uint64_t slot_seal_offset(const struct layout_slot *s);
/* Bytes the boot script reads: a NAND page, 16 bytes on NOR. */
uint32_t slot_seal_read_len(const struct layout_slot *s);
/* 1 sealed, 0 not (erased, anything else, an unreadable or bad block). */
int slot_seal_get(struct board *b, const struct layout_slot *s, struct error *err);
/* Erase the seal block, then (sealed) program the magic. */
int slot_seal_set(struct board *b, const struct layout_slot *s, bool sealed,
		  struct error *err);
/* The group's seals into st (slot_env_seal); no-op for a group without
 * seals. A seal that cannot be read counts as missing, as for the script. */
int slot_seal_load(struct board *b, const struct layout_slot_group *g, struct slot_env *st);
