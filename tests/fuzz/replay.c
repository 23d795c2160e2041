/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Replays a fuzz target's kept corpus (seeds and regression inputs) in the
 * normal gcc build, without libFuzzer, so `make check` (and its
 * ASan+UBSan run in CI) re-checks every input that ever crashed a target
 * even where clang is not installed. Linked with one fuzz-TARGET.c.
 *
 *   replay-TARGET [FILE|DIR...]   (default: $top_srcdir/tests/fuzz/corpus/TARGET)
 *
 * A target aborts on a broken invariant, so a failing input ends the run
 * with its name printed first. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET (the corpus name) must be defined"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "re");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;
	uint8_t *copy;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	do {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap = cap ? cap * 2 : 4096);

			if (!nb) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	/* an exact-size copy, so ASan sees a read past the end */
	copy = malloc(len ? len : 1);
	if (!copy) {
		free(buf);
		return -ENOMEM;
	}
	memcpy(copy, buf, len);
	free(buf);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
	return 0;
}

static int visible(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

static int replay_path(const char *path, unsigned *count)
{
	struct stat st;
	struct dirent **des = NULL;
	int n, r = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		r = replay_file(path);
		*count += r == 0;
		return r;
	}
	/* in name order, the same on every run */
	n = scandir(path, &des, visible, alphasort);
	if (n < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		char *file;

		if (r == 0) {
			if (asprintf(&file, "%s/%s", path, des[i]->d_name) < 0) {
				r = -ENOMEM;
			} else {
				r = replay_file(file);
				*count += r == 0;
				free(file);
			}
		}
		free(des[i]);
	}
	free(des);
	return r;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	char *dflt = NULL;
	int r = 0;

	if (argc < 2) {
		const char *top = getenv("top_srcdir");

		if (asprintf(&dflt, "%s/tests/fuzz/corpus/%s", top ? top : ".", FUZZ_TARGET) < 0)
			return 1;
		r = replay_path(dflt, &count);
		free(dflt);
	}
	for (int i = 1; i < argc && r == 0; i++)
		r = replay_path(argv[i], &count);
	if (r < 0)
		return 1;
	if (count == 0) {
		fprintf(stderr, "replay: no inputs for %s\n", FUZZ_TARGET);
		return 1;
	}
	printf("replay-%s: %u inputs, no invariant broken\n", FUZZ_TARGET, count);
	return 0;
}
