/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Bundle versions compared as Debian compares package versions
 * (deb-version(7), dpkg's verrevcmp): [epoch:]upstream[-revision]; each
 * part is compared as alternating runs of non-digits (letters sort before
 * other characters, '~' before everything, even the end) and numbers
 * (compared as numbers). So 1.10 > 1.9, 2.0~rc1 < 2.0 < 2.0.1 < 2.0a,
 * 1:0.5 > 9.9, and semver's 1.0.0-rc.1 < 1.0.0 only when written
 * 1.0.0~rc.1 (Debian's rule for pre-releases). A version string says what
 * the bundle's signer called it, nothing about what a slot holds: callers
 * choose the strings they compare (install.c: the downgrade policy). */
#pragma once
#include <stdbool.h>

/* <0, 0, >0 as a sorts before, with, after b. */
int version_compare(const char *a, const char *b);
/* A version version_compare() reads as Debian does: an optional epoch of
 * digits and ':', then a part that starts with a digit (dpkg warns on
 * anything else; it is compared all the same). */
bool version_is_debian(const char *v);
