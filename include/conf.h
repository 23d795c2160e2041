/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* flashd.conf: the daemon's configuration (INI style, see flashd.conf(5)).
 * conf_load() fills defaults, then the file's values; errors name the
 * file, the line and the key. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "error.h"
#include "install.h"
#include "paths.h"

struct conf {
	char *layout;          /* [flashd] layout= board layout JSON */
	char *target;          /* [flashd] target= "system" (kernel MTD) or "sim:PATH" */
	char *keyring;         /* [flashd] keyring= directory of trusted public keys */
	char *socket;          /* [flashd] socket= control socket path */
	char *socket_group;    /* [flashd] socket-group= group allowed to change state */
	char *state_dir;       /* [flashd] state-dir= install records */
	char *cmdline;         /* [flashd] cmdline= where to read the booted slot */
	bool allow_unsigned;   /* [flashd] allow-unsigned= accept unsigned bundles */
	enum install_downgrade_policy downgrade; /* [flashd] downgrade= refuse|warn|allow */
	uint32_t idle_timeout; /* [flashd] idle-timeout= seconds without a call */
	bool rauc_dbus;        /* [flashd] rauc-dbus= serve RAUC's D-Bus API (manager_rauc.c) */
	char *health_command;  /* [health] command= run when the booted slot is on trial */
	uint32_t health_timeout; /* [health] timeout= seconds */
	bool health_reboot;    /* [health] reboot-on-failure= */
	/* [network]: installs from http(s) URLs (source_http.h) */
	char *ca_file;         /* ca-file= PEM CA bundle; unset: the system's */
	char *client_cert;     /* client-cert= PEM certificate (and key) */
	char *client_key;      /* client-key= PEM key, when not in client-cert */
	char **headers;        /* header= "Name: value", repeatable; NULL-terminated */
	uint32_t connect_timeout; /* connect-timeout= seconds */
	uint32_t stall_timeout;   /* stall-timeout= seconds without a byte */
	uint32_t retries;         /* retries= after a transient error, without progress */
	uint32_t retry_delay_ms;  /* retry-delay= ms before the first retry (doubled after) */
	char *netrc_file;         /* netrc-file= credentials per host, for the URL's origin */
	uint32_t min_rate;        /* min-rate= bytes/s over min-rate-time, else it fails; 0: none */
	uint32_t min_rate_time;   /* min-rate-time= seconds */
	uint32_t deadline;        /* download-deadline= seconds for a download; 0: none */
	bool redirect_other_origin; /* redirect-other-origin= follow, without credentials */
};

#define CONF_DEFAULT_PATH paths_conf

int conf_new(struct conf **ret); /* defaults only */
/* Load path over the defaults. A missing file is -ENOENT unless
 * missing_ok, in which case the defaults stay. */
int conf_load(struct conf *c, const char *path, bool missing_ok, struct error *err);
/* Apply one "section.key=value" or "key=value" override (command line). */
int conf_set(struct conf *c, const char *section, const char *key, const char *value,
	       struct error *err);
void conf_free(struct conf *c);
static inline void conf_freep(struct conf **c) { if (*c) conf_free(*c); }
#define _cleanup_conf_ __attribute__((cleanup(conf_freep)))
