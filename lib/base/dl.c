/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Libraries loaded on first use (dl.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "dl.h"

void *dl_sym(void **lib, const char *soname, const char *name)
{
	void *p;

	if (!*lib)
		*lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	p = *lib ? dlsym(*lib, name) : NULL;
	if (!p) {
		fprintf(stderr, "flashd: cannot load %s from %s: %s\n", name, soname, dlerror());
		abort();
	}
	return p;
}
