/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flashd binary's main: one program is the daemon (default), as
 * "flashd boot" the early-boot union assembly and, called as flashctl (a
 * link to this program), the command line tool, as busybox does: the
 * library is linked once (issue 18). main() only picks by the name it was
 * called by and its first argument, from the table below, and hands over;
 * it sits above daemon/, cli/ and boot/ so that none of them needs another. */
#include <stdbool.h>
#include <string.h>

#include "boot/boot.h"
#include "cli/flashctl.h"
#include "daemon/daemon.h"
#include "cleanup.h"

static const struct {
	const char *name;  /* argv[0]'s base name, or NULL: any */
	const char *verb;  /* argv[1], handed over as the callee's argv[0]; NULL: none */
	int (*main)(int argc, char **argv);
} commands[] = {
	{ "flashctl", NULL, flashctl_main },
	{ NULL, "boot", boot_main },
	{ NULL, NULL, daemon_main },
};

static bool matches(const char *want, const char *have)
{
	return !want || (have && !strcmp(want, have));
}

int main(int argc, char **argv)
{
	const char *name = argc > 0 ? strrchr(argv[0], '/') : NULL;

	name = name ? name + 1 : argc > 0 ? argv[0] : "";
	for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
		if (!matches(commands[i].name, name) ||
		    !matches(commands[i].verb, argc > 1 ? argv[1] : NULL))
			continue;
		if (commands[i].verb)
			return commands[i].main(argc - 1, argv + 1);
		return commands[i].main(argc, argv);
	}
	return 2; /* not reached: the last entry takes anything */
}
