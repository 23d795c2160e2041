/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "conf.h"
#include "layout.h"
#include "proto.h"
#include "util.h"

enum conf_kind {
	CONF_STRING,
	CONF_BOOL,
	CONF_SECONDS,
	CONF_COUNT,       /* 0..1000 */
	CONF_MSEC,        /* 1..600000 */
	CONF_SECONDS0,    /* 0 (none) .. 7 days */
	CONF_RATE,        /* bytes per second, 0 (none) .. 1 GiB */
	CONF_LIST,        /* repeatable: each line adds one */
	CONF_DOWNGRADE,   /* install_downgrade_policy: refuse, warn, allow */
	_CONF_KIND_MAX,
};

/* Every key the file may hold; anything else is an error. */
static const struct conf_key {
	const char *section;
	const char *key;
	enum conf_kind kind;
	size_t offset;
} conf_keys[] = {
	{ "flashd", "layout", CONF_STRING, offsetof(struct conf, layout) },
	{ "flashd", "target", CONF_STRING, offsetof(struct conf, target) },
	{ "flashd", "keyring", CONF_STRING, offsetof(struct conf, keyring) },
	{ "flashd", "socket", CONF_STRING, offsetof(struct conf, socket) },
	{ "flashd", "socket-group", CONF_STRING, offsetof(struct conf, socket_group) },
	{ "flashd", "state-dir", CONF_STRING, offsetof(struct conf, state_dir) },
	{ "flashd", "cmdline", CONF_STRING, offsetof(struct conf, cmdline) },
	{ "flashd", "allow-unsigned", CONF_BOOL, offsetof(struct conf, allow_unsigned) },
	{ "flashd", "downgrade", CONF_DOWNGRADE, offsetof(struct conf, downgrade) },
	{ "flashd", "idle-timeout", CONF_SECONDS, offsetof(struct conf, idle_timeout) },
	{ "flashd", "rauc-dbus", CONF_BOOL, offsetof(struct conf, rauc_dbus) },
	{ "health", "command", CONF_STRING, offsetof(struct conf, health_command) },
	{ "health", "timeout", CONF_SECONDS, offsetof(struct conf, health_timeout) },
	{ "health", "reboot-on-failure", CONF_BOOL, offsetof(struct conf, health_reboot) },
	{ "network", "ca-file", CONF_STRING, offsetof(struct conf, ca_file) },
	{ "network", "client-cert", CONF_STRING, offsetof(struct conf, client_cert) },
	{ "network", "client-key", CONF_STRING, offsetof(struct conf, client_key) },
	{ "network", "header", CONF_LIST, offsetof(struct conf, headers) },
	{ "network", "connect-timeout", CONF_SECONDS, offsetof(struct conf, connect_timeout) },
	{ "network", "stall-timeout", CONF_SECONDS, offsetof(struct conf, stall_timeout) },
	{ "network", "retries", CONF_COUNT, offsetof(struct conf, retries) },
	{ "network", "retry-delay", CONF_MSEC, offsetof(struct conf, retry_delay_ms) },
	{ "network", "netrc-file", CONF_STRING, offsetof(struct conf, netrc_file) },
	{ "network", "min-rate", CONF_RATE, offsetof(struct conf, min_rate) },
	{ "network", "min-rate-time", CONF_SECONDS, offsetof(struct conf, min_rate_time) },
	{ "network", "download-deadline", CONF_SECONDS0, offsetof(struct conf, deadline) },
	{ "network", "redirect-other-origin", CONF_BOOL, offsetof(struct conf, redirect_other_origin) },
	/* its former name: now followed without credentials and headers too */
	{ "network", "redirect-other-host", CONF_BOOL, offsetof(struct conf, redirect_other_origin) },
};

/* the sections of conf_keys, in the order flashd.conf(5) lists them */
static const char *const conf_sections[] = { "flashd", "health", "network" };

static const struct {
	uint64_t min, max;
	const char *what;
} conf_ranges[_CONF_KIND_MAX] = {
	[CONF_SECONDS] = { 1, 86400, "a number of seconds" },
	[CONF_COUNT] = { 0, 1000, "a count" },
	[CONF_MSEC] = { 1, 600000, "a number of milliseconds" },
	[CONF_SECONDS0] = { 0, 7 * 86400, "a number of seconds (0: none)" },
	[CONF_RATE] = { 0, 1 << 30, "a number of bytes per second (0: none)" },
};

static const struct {
	const char *word;
	bool value;
} conf_bools[] = {
	{ "1", true }, { "yes", true }, { "true", true }, { "on", true },
	{ "0", false }, { "no", false }, { "false", false }, { "off", false },
};

static int set_string(char **field, const char *value)
{
	char *s = strdup(value);

	if (!s)
		return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

int conf_new(struct conf **ret)
{
	_cleanup_(conf_freep) struct conf *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (set_string(&c->layout, LAYOUT_DEFAULT_PATH) < 0 ||
	    set_string(&c->target, "system") < 0 ||
	    set_string(&c->keyring, paths_keyring) < 0 ||
	    set_string(&c->socket, paths_socket) < 0 ||
	    set_string(&c->state_dir, paths_state_dir) < 0 ||
	    set_string(&c->cmdline, "/proc/cmdline") < 0)
		return -ENOMEM;
	/* as SWUpdate's -N: an older bundle, validly signed all the same, would
	 * bring back what a newer one fixed; root overrides it per install */
	c->downgrade = INSTALL_DOWNGRADE_POLICY_REFUSE;
	c->health_timeout = 60;
	c->idle_timeout = PROTO_IDLE_TIMEOUT_DEFAULT;
	c->health_reboot = true;
	c->rauc_dbus = true;
	c->connect_timeout = 30;
	c->stall_timeout = 60;
	c->retries = 5;
	c->retry_delay_ms = 1000;
	c->min_rate = 1024;
	c->min_rate_time = 60;
	c->deadline = 6 * 3600;
	*ret = TAKE_PTR(c);
	return 0;
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	free(c->layout);
	free(c->target);
	free(c->keyring);
	free(c->socket);
	free(c->socket_group);
	free(c->state_dir);
	free(c->cmdline);
	free(c->health_command);
	free(c->ca_file);
	free(c->client_cert);
	free(c->client_key);
	free(c->netrc_file);
	for (char **h = c->headers; h && *h; h++)
		free(*h);
	free(c->headers);
	free(c);
}

static int parse_bool(const char *v, bool *ret)
{
	for (size_t i = 0; i < ELEMENTSOF(conf_bools); i++)
		if (!strcasecmp(v, conf_bools[i].word)) {
			*ret = conf_bools[i].value;
			return 0;
		}
	return -EINVAL;
}

static int list_add(char ***list, const char *value)
{
	size_t n = 0;
	char **l;

	while (*list && (*list)[n])
		n++;
	l = realloc(*list, (n + 2) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	*list = l;
	l[n] = strdup(value);
	l[n + 1] = NULL;
	return l[n] ? 0 : -ENOMEM;
}

static int set_number(const struct conf_key *k, void *field, const char *value,
		      struct error *err)
{
	uint64_t n;
	int r = util_parse_size(value, &n);

	if (r < 0 || n < conf_ranges[k->kind].min || n > conf_ranges[k->kind].max)
		return error_set(err, -EINVAL, "'%s' is not %s (%" PRIu64 "..%" PRIu64 ")", value,
				 conf_ranges[k->kind].what, conf_ranges[k->kind].min,
				 conf_ranges[k->kind].max);
	*(uint32_t *)field = n;
	return 0;
}

static int set_value(struct conf *c, const struct conf_key *k, const char *value,
		     struct error *err)
{
	void *field = (char *)c + k->offset;
	int r;

	switch (k->kind) {
	case CONF_STRING:
	case CONF_LIST:
		if (!*value)
			return error_set(err, -EINVAL, "empty value");
		r = k->kind == CONF_LIST ? list_add(field, value) : set_string(field, value);
		return r < 0 ? error_set(err, r, "out of memory") : r;
	case CONF_BOOL:
		r = parse_bool(value, field);
		if (r < 0)
			return error_set(err, r, "'%s' is not a boolean (yes/no/true/false/1/0)",
					 value);
		return r;
	case CONF_DOWNGRADE:
		r = install_downgrade_policy_from_string(value);
		if (r < 0)
			return error_set(err, r, "'%s' is not a downgrade policy (refuse, warn, allow)",
					 value);
		*(enum install_downgrade_policy *)field = r;
		return 0;
	case CONF_SECONDS:
	case CONF_COUNT:
	case CONF_MSEC:
	case CONF_SECONDS0:
	case CONF_RATE:
		return set_number(k, field, value, err);
	case _CONF_KIND_MAX:
		break;
	}
	return -EINVAL;
}

int conf_set(struct conf *c, const char *section, const char *key, const char *value,
	       struct error *err)
{
	int r;

	for (size_t i = 0; i < ELEMENTSOF(conf_keys); i++) {
		const struct conf_key *k = &conf_keys[i];
		if (strcmp(k->key, key) || strcmp(k->section, section ? section : "flashd"))
			continue;
		r = set_value(c, k, value, err);
		return r < 0 ? error_prefix(err, r, "[%s] %s", k->section, key) : r;
	}
	return error_set(err, -EINVAL, "unknown key '%s' in section [%s]", key,
			 section ? section : "flashd");
}

static char *strip(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static bool known_section(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(conf_sections); i++)
		if (!strcmp(name, conf_sections[i]))
			return true;
	return false;
}

static int parse_line(struct conf *c, char *line, char *section, size_t seclen,
		      struct error *err)
{
	char *s = strip(line), *eq;

	if (!*s || *s == '#' || *s == ';')
		return 0;
	if (*s == '[') {
		char *end = strchr(s, ']');
		if (!end || end[1] != '\0')
			return error_set(err, -EINVAL, "malformed section header '%s'", s);
		*end = '\0';
		if (!known_section(s + 1))
			return error_set(err, -EINVAL, "unknown section [%s] (known: [flashd], "
					 "[health], [network])", s + 1);
		snprintf(section, seclen, "%s", s + 1);
		return 0;
	}
	eq = strchr(s, '=');
	if (!eq)
		return error_set(err, -EINVAL, "expected key=value, got '%s'", s);
	*eq = '\0';
	return conf_set(c, section, strip(s), strip(eq + 1), err);
}

int conf_load(struct conf *c, const char *path, bool missing_ok, struct error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[1024], section[32] = "flashd";
	unsigned lineno = 0;
	int r;

	if (!f) {
		r = -errno;
		if (r == -ENOENT && missing_ok)
			return 0;
		return error_set(err, r, "%s: %s", path, strerror(-r));
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			return error_set(err, -EINVAL, "%s:%u: line too long", path, lineno);
		r = parse_line(c, line, section, sizeof(section), err);
		if (r < 0)
			return error_prefix(err, r, "%s:%u", path, lineno);
	}
	return 0;
}
