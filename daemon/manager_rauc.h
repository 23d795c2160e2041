/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* RAUC's D-Bus API (de.pengutronix.rauc.Installer at / on the system bus,
 * bus name de.pengutronix.rauc): a second front end of the operations the
 * io.flashd methods run, so that the rauc command, rauc-hawkbit-updater
 * and HMIs written for RAUC drive flashd (docs/rauc.md). The manager tells
 * it of every install's progress and end (Operation, Progress, LastError,
 * Completed follow any install, whichever front end started it). Every
 * hook accepts NULL: the API is off (flashd.conf rauc-dbus=no) or there is
 * no system bus. */
#pragma once
#include <stdbool.h>
#include "slot.h"

struct manager;
struct manager_rauc;
struct install_msg;

/* Attaches to the manager's event loop. No system bus is no error: logged
 * once, *ret NULL. */
int manager_rauc_new(struct manager *m, struct manager_rauc **ret);
void manager_rauc_free(struct manager_rauc *r);
static inline void manager_rauc_freep(struct manager_rauc **r) { manager_rauc_free(*r); }

void manager_rauc_install_started(struct manager_rauc *r);
void manager_rauc_install_progress(struct manager_rauc *r, const struct install_msg *rep);
/* error: what failed (ok false) */
void manager_rauc_install_done(struct manager_rauc *r, bool ok, const char *error);
/* A Mark that promotes a slot that is not running (active, good): the read
 * ended (ok: equal to its signed image; else refusal says so, in
 * slot_verify_promotion's words); the change of slot name (NULL: the
 * booted one) and the answer follow. */
void manager_rauc_slot_read(struct manager *m, enum slot_op op, const char *name, bool ok,
			    const char *refusal);
