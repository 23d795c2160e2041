/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flashd daemon: configuration, layout, keyring, the Varlink control
 * socket on sd-event, the install worker and the post-boot health check. */
#pragma once
#include <systemd/sd-event.h>
#include "conf.h"
#include "error.h"

struct manager;

/* Takes ownership of conf. Loads the layout and the keyring. */
int manager_new(struct conf *conf, struct manager **ret, struct error *err);
void manager_free(struct manager *m);
static inline void manager_freep(struct manager **m) { if (*m) manager_free(*m); }
#define _cleanup_manager_ __attribute__((cleanup(manager_freep)))

/* Event loop, signals, watchdog, control socket (socket activation or
 * bind), then the health check when the booted slot is on trial. */
int manager_startup(struct manager *m, struct error *err);
int manager_run(struct manager *m);
