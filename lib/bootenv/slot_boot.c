/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the bootloader and the kernel see of the slots: which slot is
 * running (the image mounted as the root, resolved through sysfs; the
 * slot the kernel command line names, for flashd boot and simulated
 * boards), and the U-Boot boot script that implements the contract
 * (docs/boot-contract.md). */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "board.h"
#include "cleanup.h"
#include "flash_blockdev.h"
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

/* The words of the command line slot_booted() reads; the last occurrence
 * of each counts, as in the kernel; an empty value is none. */
#define CMDLINE_KEYS(X)                                         \
	X(KEY_FLASHD_SLOT, "flashd.slot=")                       \
	X(KEY_RAUC_SLOT, "rauc.slot=")                           \
	X(KEY_ROOT, "root=")                                     \
	X(KEY_UBI_BLOCK, "ubi.block=")
enum cmdline_key { CMDLINE_KEYS(STRING_TABLE_ENUM) _KEY_MAX };
static const char *const cmdline_key_table[] = { CMDLINE_KEYS(STRING_TABLE_NAME) };

struct cmdline_args {
	char value[_KEY_MAX][256];
	bool have[_KEY_MAX];
};

/* The kernel hands every word after "--" to init: not ours. */
static void cmdline_parse(const char *cmdline, struct cmdline_args *a)
{
	char word[256];

	*a = (struct cmdline_args){ 0 };
	for (const char *p = cmdline; (p = next_word(p, word, sizeof(word)));) {
		if (!strcmp(word, "--"))
			break;
		for (size_t k = 0; k < _KEY_MAX; k++) {
			size_t len = strlen(cmdline_key_table[k]);
			if (!strncmp(word, cmdline_key_table[k], len) && word[len]) {
				snprintf(a->value[k], sizeof(a->value[k]), "%s", word + len);
				a->have[k] = true;
			}
		}
	}
}

/* The slot flashd.slot= (else rauc.slot=) names: its index, -ENOENT when
 * neither is there, -EBADMSG when it names no slot of g. */
static int cmdline_named(const struct cmdline_args *a, const struct layout_slot_group *g,
			 const char **ret_by, struct error *err)
{
	static const char *const by[] = { "flashd.slot", "rauc.slot" };

	for (size_t k = KEY_FLASHD_SLOT; k <= KEY_RAUC_SLOT; k++) {
		if (!a->have[k])
			continue;
		for (size_t i = 0; i < g->n_slots; i++)
			if (!strcmp(g->slots[i].name, a->value[k])) {
				if (ret_by)
					*ret_by = by[k];
				return (int)i;
			}
		return error_set(err, -EBADMSG, "kernel command line: %s%s is not a slot of "
				 "group %s", cmdline_key_table[k], a->value[k], g->name);
	}
	return -ENOENT;
}

int slot_booted_from_cmdline(const char *cmdline, const struct layout *l,
			     const struct layout_slot_group *g, const char **ret_by,
			     struct error *err)
{
	struct cmdline_args a;
	int r;

	/* flashd boot and the daemon on a simulator both ask here, so they
	 * never disagree on the running root */
	cmdline_parse(cmdline, &a);
	r = cmdline_named(&a, g, ret_by, err);
	if (r != -ENOENT)
		return r;
	if (a.have[KEY_ROOT])
		for (size_t i = 0; i < g->n_slots; i++)
			if (root_matches(l, &g->slots[i], a.value[KEY_ROOT])) {
				if (ret_by)
					*ret_by = "root";
				return (int)i;
			}
	/* a root the layout does not know (root=31:4, PARTUUID=, a ubiblock
	 * of another number) may well be a slot: unknown, never "none" */
	if (a.have[KEY_ROOT] || a.have[KEY_UBI_BLOCK])
		return error_set(err, SLOT_BOOTED_UNKNOWN, "kernel command line: %s%s names no slot "
				 "of group %s: the booted slot is unknown",
				 a.have[KEY_ROOT] ? "root=" : "ubi.block=",
				 a.value[a.have[KEY_ROOT] ? KEY_ROOT : KEY_UBI_BLOCK], g->name);
	return error_set(err, -ENOENT, "kernel command line names no slot of group %s "
			 "(no flashd.slot=, rauc.slot= or root=)", g->name);
}

/* ---- the mounted root ---- */

struct mount_entry {
	unsigned major, minor;
	char fstype[32];
	char source[256];
};

/* The last (topmost) mount on mountpoint in /proc/self/mountinfo's text:
 * "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ...". */
static bool mount_find(const char *text, const char *mountpoint, struct mount_entry *ret)
{
	bool found = false;

	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		struct mount_entry m = { 0 };
		char mp[PATH_MAX];
		const char *sep;

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &m.major, &m.minor, mp) != 3 ||
		    strcmp(mp, mountpoint))
			continue;
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep, " - %31s %255s", m.fstype, m.source) != 2)
			continue;
		*ret = m;
		found = true;
	}
	return found;
}

/* The slot whose rootfs leaf is, -ENOENT for none. */
static int leaf_slot(const struct layout_slot_group *g, const struct flash_blockdev *b)
{
	for (size_t i = 0; i < g->n_slots; i++) {
		const struct layout_image_target *t = &g->slots[i].rootfs;

		if (!t->part || strcmp(t->part->name, b->mtd_name))
			continue;
		switch (t->storage) {
		case LAYOUT_STORAGE_NOR:
		case LAYOUT_STORAGE_NAND:
			if (b->kind == FLASH_BLOCKDEV_MTD)
				return (int)i;
			break;
		case LAYOUT_STORAGE_UBI:
			if (b->kind == FLASH_BLOCKDEV_UBI && !strcmp(t->ubi_volume, b->vol_name))
				return (int)i;
			break;
		case LAYOUT_STORAGE_FILE:
		case _LAYOUT_STORAGE_MAX:
			break;
		}
	}
	return -ENOENT;
}

/* The slot the devices under the root belong to; -ENOENT when none is a
 * slot's rootfs (a disk, another partition). */
static int leaves_slot(const struct layout_slot_group *g, const struct flash_blockdev *b, int n,
		       struct error *err)
{
	int found = -ENOENT;

	for (int i = 0; i < n; i++) {
		int s;

		if (b[i].kind == FLASH_BLOCKDEV_UNKNOWN)
			return error_set(err, SLOT_BOOTED_UNKNOWN, "/ is on %s, which sysfs does not "
					 "resolve to a flash partition or a disk", b[i].dev);
		s = leaf_slot(g, &b[i]);
		if (s >= 0 && found >= 0 && s != found)
			return error_set(err, SLOT_BOOTED_UNKNOWN, "/ stands on slots %s and %s",
					 g->slots[found].name, g->slots[s].name);
		if (s >= 0)
			found = s;
	}
	return found;
}

/* The slot whose image is mounted as the root: with flashd boot's union
 * (or any overlay root) the image at /rom, else "/" itself, its device
 * resolved through sysfs (flash_blockdev.h). -ENOENT when the root is on
 * no slot (a disk, the network, RAM, a partition that is no slot's
 * rootfs); SLOT_BOOTED_UNKNOWN when it cannot be told (err says why). */
static int booted_by_mount(const struct slot_boot_where *w, const struct layout_slot_group *g,
			   struct error *err)
{
	struct flash_blockdev leaves[FLASH_BLOCKDEV_MAX];
	_cleanup_free_ char *text = NULL;
	struct mount_entry m;
	char path[PATH_MAX];
	int r, n;

	util_snprintf(path, sizeof(path), "%s/self/mountinfo", w->proc ? w->proc : "/proc");
	r = util_read_file(path, 1024 * 1024, &text, NULL);
	if (r < 0)
		return error_set(err, SLOT_BOOTED_UNKNOWN, "%s: %s", path, strerror(-r));
	if (!mount_find(text, "/", &m))
		return error_set(err, SLOT_BOOTED_UNKNOWN, "%s: nothing is mounted at /", path);
	if (!strcmp(m.fstype, "overlay") && !mount_find(text, "/rom", &m))
		return error_set(err, SLOT_BOOTED_UNKNOWN, "/ is an overlayfs union and no image is "
				 "mounted at /rom (where flashd boot puts it)");
	if (!strcmp(m.fstype, "ubifs")) {
		flash_blockdev_ubifs(w->sys, m.source, &leaves[0]);
		n = 1;
	} else if (m.major == 0) {
		return -ENOENT; /* no block device: the network, RAM */
	} else {
		n = flash_blockdev_leaves(w->sys, m.major, m.minor, leaves, ELEMENTSOF(leaves));
		if (n < 0)
			return error_set(err, SLOT_BOOTED_UNKNOWN, "the devices under / (%u:%u): %s",
					 m.major, m.minor, strerror(-n));
	}
	return leaves_slot(g, leaves, n, err);
}

int slot_booted(const struct slot_boot_where *w, const struct layout *l,
		const struct layout_slot_group *g, const char **ret_by, struct error *err)
{
	const char *path = w->cmdline ? w->cmdline : SLOT_DEFAULT_CMDLINE;
	_cleanup_free_ char *text = NULL;
	struct cmdline_args a;
	struct error merr = {};
	int r, m;

	r = util_read_file(path, 64 * 1024, &text, NULL);
	if (r < 0)
		return error_set(err, r, "%s: %s", path, strerror(-r));
	/* a simulated board's kernel is its command line */
	if (w->target && board_target_parse(w->target, NULL) == BOARD_TARGET_SIM)
		return slot_booted_from_cmdline(text, l, g, ret_by, err);
	m = booted_by_mount(w, g, &merr);
	if (m >= 0) {
		if (ret_by)
			*ret_by = "mounted root";
		return m;
	}
	/* / does not show a slot: one the command line names is guarded */
	cmdline_parse(text, &a);
	r = cmdline_named(&a, g, ret_by, err);
	if (r != -ENOENT)
		return r;
	if (m == -ENOENT)
		return error_set(err, -ENOENT, "/ is on no slot of group %s", g->name);
	return error_set(err, m, "%s: the booted slot is unknown (boot through 'flashd boot', or "
			 "put flashd.slot=NAME on the kernel command line)", merr.msg);
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

/* The lines that make slot i the one to boot (after the caller's test). */
static void bootscript_select(const struct layout *l, const struct layout_slot *s,
			     const char *indent, FILE *out)
{
	char root[256], kern[256];

	root_args(l, s, root, sizeof(root));
	kernel_load(s, kern, sizeof(kern));
	fprintf(out, "%ssetenv flashd_slot %s\n"
		"%ssetenv flashd_root \"%s\"\n", indent, s->name, indent, root);
	if (kern[0])
		fprintf(out, "%s%s", indent, kern + 4); /* kern is indented by 4 */
}

/* saveenv failed (a dead env copy: U-Boot writes the copy not in use and
 * does not fall back): the try just taken is not counted, so a slot that
 * does not boot would be tried forever. Boot the chosen slot only when it
 * is recorded good (or has no record: a board without flashd's records);
 * else the first slot of BOOT_ORDER recorded good; with none, the chosen
 * one (nothing better can boot). flashd_saveenv_emulated=1: a test
 * harness writes the counters back itself (qemu's pflash cannot). */
static void bootscript_unsaved(const struct layout *l, const struct layout_slot_group *g, FILE *out)
{
	fprintf(out, "setenv flashd_unsaved\n"
		"saveenv || test -n \"${flashd_saveenv_emulated}\" || setenv flashd_unsaved 1\n"
		"if test -n \"${flashd_unsaved}\"; then\n"
		"  echo \"flashd: saveenv failed: this try of slot ${flashd_slot} is not counted\"\n"
		"  setenv flashd_keep\n");
	for (size_t i = 0; i < g->n_slots; i++) {
		const char *n = g->slots[i].name;
		fprintf(out, "  if test \"${flashd_slot}\" = \"%s\" && test \"${FLASHD_%s_STATE}\" = good; "
			"then setenv flashd_keep 1; fi\n"
			"  if test \"${flashd_slot}\" = \"%s\" && test -z \"${FLASHD_%s_STATE}\"; "
			"then setenv flashd_keep 1; fi\n", n, n, n, n);
	}
	fprintf(out, "  if test -z \"${flashd_keep}\"; then\n"
		"    for s in ${BOOT_ORDER}; do\n");
	for (size_t i = 0; i < g->n_slots; i++) {
		const char *n = g->slots[i].name;
		fprintf(out, "      if test -z \"${flashd_keep}\" && test \"${s}\" = \"%s\" && "
			"test \"${FLASHD_%s_STATE}\" = good; then\n"
			"        setenv flashd_keep 1\n", n, n);
		bootscript_select(l, &g->slots[i], "        ", out);
		fprintf(out, "      fi\n");
	}
	fprintf(out, "    done\n"
		"    if test -n \"${flashd_keep}\"; then\n"
		"      echo \"flashd: a slot on trial needs a counted try: booting slot ${flashd_slot}, "
		"recorded good\"\n"
		"    else\n"
		"      echo \"flashd: no slot of BOOT_ORDER is recorded good: booting slot "
		"${flashd_slot} without a counted try\"\n"
		"    fi\n"
		"  fi\n"
		"fi\n");
}

/* A lost env (BOOT_ORDER unset): the default order is the slots whose
 * seal 'mtd read' finds intact (slot_env_seal), never "every slot". The
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

		fprintf(out, "  if test -z \"${flashd_slot}\" && test \"${s}\" = \"%s\" && "
			"test ${BOOT_%s_LEFT} -gt 0; then\n"
			"    setexpr BOOT_%s_LEFT ${BOOT_%s_LEFT} - 1\n", n, n, n, n);
		bootscript_select(l, &g->slots[i], "    ", out);
		fprintf(out, "  fi\n");
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
		"fi\n");
	bootscript_unsaved(l, g, out);
	fprintf(out, "setenv bootargs \"${flashd_bootargs} ${flashd_root} flashd.slot=${flashd_slot}\"\n"
		"test -n \"${flashd_boot_cmd}\" || setenv flashd_boot_cmd "
		"'run flashd_kernel_load && bootm ${kernel_addr_r}'\n"
		"echo \"flashd: booting slot ${flashd_slot}\"\n"
		"run flashd_boot_cmd\n"
		"echo \"flashd: booting slot ${flashd_slot} failed\"\n"
		"reset\n");
	return ferror(out) ? -EIO : 0;
}
