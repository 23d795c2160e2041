/* What the bootloader and the kernel see of the slots: which slot the
 * kernel command line names (flashd boot and the daemon both ask here, so
 * they never disagree on the running root), and the U-Boot boot script
 * that implements the contract (docs/boot-contract.md). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "slot.h"
#include "slot_boot.h"
#include "slot_seal.h"
#include "util.h"

/* Does root= value name slot s's rootfs? */
static bool root_matches(const struct layout *l, const struct layout_slot *s, const char *root)
{
	const struct layout_image_target *t = &s->rootfs;
	char buf[128];

	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND: {
		int idx = layout_partition_index(l, t->part);
		if (idx >= 0) {
			snprintf(buf, sizeof(buf), "/dev/mtdblock%d", idx);
			if (!strcmp(root, buf))
				return true;
		}
		snprintf(buf, sizeof(buf), "mtd:%s", t->part ? t->part->name : "");
		return !strcmp(root, buf);
	}
	case LAYOUT_STORAGE_UBI:
		for (size_t u = 0; u < l->n_ubis; u++) {
			if (l->ubis[u].part != t->part)
				continue;
			for (size_t v = 0; v < l->ubis[u].n_volumes; v++) {
				if (strcmp(l->ubis[u].volumes[v].name, t->ubi_volume))
					continue;
				snprintf(buf, sizeof(buf), "ubi%zu:%s", u, t->ubi_volume);
				if (!strcmp(root, buf))
					return true;
				snprintf(buf, sizeof(buf), "/dev/ubiblock%zu_%zu", u, v);
				if (!strcmp(root, buf))
					return true;
			}
		}
		return false;
	case LAYOUT_STORAGE_FILE:
		return false;
	case _LAYOUT_STORAGE_MAX:
		break;
	}
	return false;
}

/* Next cmdline word (double quotes group, as the kernel parses them). */
static const char *next_word(const char *p, char *buf, size_t len)
{
	size_t n = 0;
	bool quoted = false;

	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (!*p)
		return NULL;
	for (; *p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (n + 1 < len)
			buf[n++] = *p;
	}
	buf[n] = '\0';
	return p;
}

int slot_booted_from_cmdline(const char *cmdline, const struct layout *l,
			     const struct layout_slot_group *g, const char **ret_by,
			     struct error *err)
{
	static const char *const keys[] = { "flashd.slot=", "rauc.slot=", "root=" };
	char found[ELEMENTSOF(keys)][256] = { "", "", "" };
	bool have[ELEMENTSOF(keys)] = { false, false, false };
	char word[256];

	/* the last occurrence of a parameter wins, as in the kernel; the
	 * kernel hands every word after "--" to init; an empty value names no
	 * slot (a rauc.slot= or root= decides then). flashd boot and the
	 * daemon both ask here, so they never disagree on the running root. */
	for (const char *p = cmdline; (p = next_word(p, word, sizeof(word)));) {
		if (!strcmp(word, "--"))
			break;
		for (size_t k = 0; k < ELEMENTSOF(keys); k++)
			if (!strncmp(word, keys[k], strlen(keys[k])) && word[strlen(keys[k])]) {
				snprintf(found[k], sizeof(found[k]), "%s", word + strlen(keys[k]));
				have[k] = true;
			}
	}
	for (size_t k = 0; k < 2; k++) {
		if (!have[k])
			continue;
		for (size_t i = 0; i < g->n_slots; i++)
			if (!strcmp(g->slots[i].name, found[k])) {
				if (ret_by)
					*ret_by = k == 0 ? "flashd.slot" : "rauc.slot";
				return (int)i;
			}
		return error_set(err, -EBADMSG, "kernel command line: %s%s is not a slot of "
				 "group %s", keys[k], found[k], g->name);
	}
	if (have[2])
		for (size_t i = 0; i < g->n_slots; i++)
			if (root_matches(l, &g->slots[i], found[2])) {
				if (ret_by)
					*ret_by = "root";
				return (int)i;
			}
	return error_set(err, -ENOENT, "kernel command line names no slot of group %s "
			 "(no flashd.slot=, rauc.slot= or matching root=)", g->name);
}

int slot_booted(const char *path, const struct layout *l, const struct layout_slot_group *g,
		const char **ret_by, struct error *err)
{
	_cleanup_free_ char *text = NULL;
	int r;

	if (!path)
		path = SLOT_DEFAULT_CMDLINE;
	r = util_read_file(path, 64 * 1024, &text, NULL);
	if (r < 0)
		return error_set(err, r, "%s: %s", path, strerror(-r));
	return slot_booted_from_cmdline(text, l, g, ret_by, err);
}

/* Kernel root= argument for a slot's rootfs, "" when flashd boot finds it. */
static void root_args(const struct layout *l, const struct layout_slot *s, char *buf, size_t len)
{
	const struct layout_image_target *t = &s->rootfs;

	buf[0] = '\0';
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		snprintf(buf, len, "root=/dev/mtdblock%d rootfstype=squashfs ro",
			 layout_partition_index(l, t->part));
		return;
	case LAYOUT_STORAGE_UBI:
		/* squashfs needs a block device: the kernel makes ubiblock<u>_<id>
		 * of the static volume (root=ubiN:vol is UBIFS only); the volume id
		 * is the layout's index (provisioning creates them so) */
		for (size_t u = 0; u < l->n_ubis; u++)
			for (size_t v = 0; l->ubis[u].part == t->part && v < l->ubis[u].n_volumes; v++)
				if (!strcmp(l->ubis[u].volumes[v].name, t->ubi_volume)) {
					snprintf(buf, len, "ubi.mtd=%s ubi.block=%zu,%s root=/dev/ubiblock%zu_%zu "
						 "rootfstype=squashfs ro", t->part->name, u, t->ubi_volume,
						 u, v);
					return;
				}
		return;
	case LAYOUT_STORAGE_FILE:
	case _LAYOUT_STORAGE_MAX:
		return;
	}
}

/* The script line setting the U-Boot commands that load the slot's kernel
 * to ${kernel_addr_r}; none without a kernel in the slot (the board's
 * flashd_boot_cmd loads it then). */
static void kernel_load(const struct layout_slot *s, char *buf, size_t len)
{
	const struct layout_image_target *t = &s->kernel;

	buf[0] = '\0';
	if (!s->has_kernel)
		return;
	switch (t->storage) {
	case LAYOUT_STORAGE_NOR:
	case LAYOUT_STORAGE_NAND:
		snprintf(buf, len, "    setenv flashd_kernel_load 'mtd read %s ${kernel_addr_r}'\n",
			 t->part->name);
		return;
	case LAYOUT_STORAGE_UBI:
		snprintf(buf, len, "    setenv flashd_kernel_load 'ubi part %s && ubi read "
			 "${kernel_addr_r} %s'\n", t->part->name, t->ubi_volume);
		return;
	case LAYOUT_STORAGE_FILE:
	case _LAYOUT_STORAGE_MAX:
		return;
	}
}

/* A lost env (BOOT_ORDER unset): the default order is the slots whose
 * seal 'mtd read' finds intact (slot_state_seal), never "every slot". The
 * read address is cleared first: a failed read leaves nothing to match. */
static void seal_default_order(const struct layout_slot_group *g, FILE *out)
{
	fprintf(out, "if test -z \"${BOOT_ORDER}\"; then\n"
		"  echo \"flashd: BOOT_ORDER unset (env lost): booting only sealed slots\"\n"
		"  test -n \"${flashd_seal_addr}\" || setenv flashd_seal_addr ${kernel_addr_r}\n"
		"  setexpr flashd_seal_addr4 ${flashd_seal_addr} + 4\n"
		"  setenv BOOT_ORDER\n");
	for (size_t i = 0; i < g->n_slots; i++) {
		const struct layout_slot *s = &g->slots[i];
		const char *n = s->name;

		fprintf(out, "  mw.l ${flashd_seal_addr} 0 2\n"
			"  if mtd read %s ${flashd_seal_addr} 0x%llx 0x%x && "
			"itest.l *${flashd_seal_addr} == 0x%x && itest.l *${flashd_seal_addr4} == "
			"0x%x; then\n"
			"    if test -n \"${BOOT_ORDER}\"; then setenv BOOT_ORDER \"${BOOT_ORDER} %s\"; "
			"else setenv BOOT_ORDER %s; fi\n"
			"  fi\n", s->rootfs.part->name, (unsigned long long)slot_seal_offset(s),
			slot_seal_read_len(s), SLOT_SEAL_WORD0, SLOT_SEAL_WORD1, n, n);
	}
	fprintf(out, "fi\n");
}

int slot_bootscript(const struct layout *l, FILE *out)
{
	const struct layout_slot_group *g;
	unsigned max;
	char order[SLOT_MAX * SLOT_NAME_MAX + 1] = "";

	if (l->n_groups < 1)
		return -ENOENT;
	g = &l->groups[0];
	max = g->max_tries ? g->max_tries : SLOT_DEFAULT_MAX_TRIES;
	if (g->n_slots < 1 || g->n_slots > SLOT_MAX || max > SLOT_MAX_TRIES_LIMIT)
		return -EINVAL;
	for (size_t i = 0; i < g->n_slots; i++) {
		if (!slot_name_valid(g->slots[i].name))
			return -EINVAL;
		strcat(order, i ? " " : "");
		strcat(order, g->slots[i].name);
	}

	fprintf(out, "# flashd A/B boot script for %s (layout %s, slot group %s).\n"
		"# Generated by 'flashctl slot bootscript'; the contract is docs/boot-contract.md.\n"
		"# Build: mkimage -A arm -T script -C none -d THIS boot.scr\n"
		"# RAUC-compatible: BOOT_ORDER lists slots, BOOT_<x>_LEFT their tries left.\n"
		"# flashd_boot_cmd (default: load the kernel, bootm) may be overridden.\n",
		l->board ? l->board : "board",
		/* the file name only: the script must not depend on where it was made */
		l->path ? (strrchr(l->path, '/') ? strrchr(l->path, '/') + 1 : l->path) : "?",
		g->name);
	if (g->seal)
		seal_default_order(g, out);
	else
		fprintf(out, "test -n \"${BOOT_ORDER}\" || setenv BOOT_ORDER \"%s\"\n", order);
	for (size_t i = 0; i < g->n_slots; i++)
		fprintf(out, "test -n \"${BOOT_%s_LEFT}\" || setenv BOOT_%s_LEFT %u\n",
			g->slots[i].name, g->slots[i].name, max);
	fprintf(out, "setenv flashd_slot\n"
		"for s in ${BOOT_ORDER}; do\n");
	for (size_t i = 0; i < g->n_slots; i++) {
		const char *n = g->slots[i].name;
		char root[256], kern[256];

		root_args(l, &g->slots[i], root, sizeof(root));
		kernel_load(&g->slots[i], kern, sizeof(kern));
		fprintf(out, "  if test -z \"${flashd_slot}\" && test \"${s}\" = \"%s\" && "
			"test ${BOOT_%s_LEFT} -gt 0; then\n"
			"    setexpr BOOT_%s_LEFT ${BOOT_%s_LEFT} - 1\n"
			"    setenv flashd_slot %s\n"
			"    setenv flashd_root \"%s\"\n"
			"%s"
			"  fi\n", n, n, n, n, n, root, kern);
	}
	/* None left: give the slots in BOOT_ORDER their tries back and reset.
	 * A slot out of the order (marked bad: an interrupted install) stays
	 * out: booting it would run an image that was never verified. */
	fprintf(out, "done\n"
		"if test -z \"${flashd_slot}\"; then\n"
		"  echo \"flashd: no slot with tries left: resetting the counters of BOOT_ORDER (${BOOT_ORDER})\"\n"
		"  for s in ${BOOT_ORDER}; do\n");
	for (size_t i = 0; i < g->n_slots; i++)
		fprintf(out, "    if test \"${s}\" = \"%s\"; then setenv BOOT_%s_LEFT %u; fi\n",
			g->slots[i].name, g->slots[i].name, max);
	fprintf(out, "  done\n");
	fprintf(out, "  saveenv\n"
		"  reset\n"
		"fi\n"
		"saveenv\n"
		"setenv bootargs \"${flashd_bootargs} ${flashd_root} flashd.slot=${flashd_slot}\"\n"
		"test -n \"${flashd_boot_cmd}\" || setenv flashd_boot_cmd "
		"'run flashd_kernel_load && bootm ${kernel_addr_r}'\n"
		"echo \"flashd: booting slot ${flashd_slot}\"\n"
		"run flashd_boot_cmd\n"
		"echo \"flashd: booting slot ${flashd_slot} failed\"\n"
		"reset\n");
	return ferror(out) ? -EIO : 0;
}
