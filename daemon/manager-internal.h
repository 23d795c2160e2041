/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the parts of the daemon share (daemon/manager*.c): the manager
 * itself, the running operation, and each part's entry points. Private to
 * daemon/, not a module of its own: daemon/manager.h is the daemon's
 * interface to main(). One part per concern:
 *   manager.c          life cycle, control socket, the io.flashd handler table
 *   manager_status.c   GetStatus, OverlayStatus, FlashInfo: the board's state
 *   manager_install.c  Install, Cancel: the install worker and its record
 *   manager_slot.c     MarkGood, MarkBad, Activate, Rollback: one env store each
 *   manager_env.c      GetEnv, SetEnv, ListEnv, OverlayReset
 *   manager_health.c   the health check of a slot on trial
 *   manager_rauc.c     RAUC's D-Bus API on the system bus: a second front end
 *                      of the same operations (manager_rauc.h) */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <systemd/sd-event.h>
#include <json-c/json.h>

#include "bundle.h"
#include "conf.h"
#include "env.h"
#include "error.h"
#include "install.h"
#include "layout.h"
#include "log.h"
#include "manager.h"
#include "oplock.h"
#include "proto.h"
#include "proto_flashd.h"
#include "record.h"
#include "slot.h"
#include "slot_boot.h"
#include "slot_change.h"
#include "source_http.h"
#include "worker.h"
#include "manager_rauc.h"

#define MANAGER_OVERLAY_RESET_VAR SLOT_OVERLAY_RESET_VAR
#define MANAGER_BOOT_STATE_FILE paths_boot_state
/* How long an op on a sim: board waits for the simulator file's lock
 * (nsim_set_lock_wait): the event loop 100 ms (a writer holds it for one
 * op; a user who can open the file could hold it for ever), the install
 * worker as long as the env lock (ENV_LOCK_TIMEOUT_MS) */
#define MANAGER_SIM_LOCK_WAIT_LOOP_USEC (100 * 1000ULL)
#define MANAGER_SIM_LOCK_WAIT_WORKER_USEC (ENV_LOCK_TIMEOUT_MS * 1000ULL)

/* What the install worker tells the daemon: a record of fixed size on the
 * report pipe (worker.h), progress or, once, the end. Strings are
 * NUL-terminated ("" = none). */
struct install_msg {
	bool final;
	enum install_phase phase;
	unsigned percent;
	uint64_t done, total;
	uint64_t downloaded;           /* bundle bytes received from the URL */
	bool from_url;
	char image[64];
	char slot[64];
	char version[BUNDLE_VERSION_MAX + 1];
	/* final only */
	int error;                     /* 0 or -errno; -ECANCELED: cancelled */
	bool invalid_bundle;           /* the bundle is what failed (flashctl exits 3) */
	char message[ERROR_MSG_MAX];
	char compatible[BUNDLE_COMPATIBLE_MAX + 1];
	char signer[256];
	struct install_stats stats;
};
_Static_assert(sizeof(struct install_msg) <= WORKER_MSG_MAX, "one atomic pipe write");

/* Activate's worker: its read of the slot (slot_verify_read). */
struct slot_read_report {
	int r;                         /* 1 read and equal; 0 or -errno: not */
	char message[ERROR_MSG_MAX];
};

struct operation {
	const char *name;              /* "install", "health-check"; NULL = idle */
	struct worker *worker;
	struct proto_call *call;
	int bundle_fd;
	struct source_http_url url;    /* the bundle's http(s) URL (checked), instead of
					* bundle_fd; url.url NULL: none */
	char **headers;                /* the URL's headers: flashd.conf's and the caller's
					* (RAUC's http-headers), NULL-terminated; NULL: the
					* configured ones */
	char *slot;                    /* requested target */
	struct install_slot decided;   /* the target, decided once before the worker */
	char *source;                  /* where the bundle comes from, for its record */
	bool allow_downgrade;          /* the caller overrides downgrade=refuse */
	struct oplock *lock;           /* the board's lock, until the worker has it */
	bool activate;
	bool cancelled;
	int health_slot;               /* the booted slot the health check runs for */
	struct slot_read_report read;  /* a slot read before slot_op: what its worker read */
	enum slot_op slot_op;          /* ... the change waiting for that read */
	enum log_event slot_event;     /* ... and its journal event */
	pid_t health_pgid;             /* the health check's process group, 0 = none */
	struct install_msg final;   /* the worker's end report (final: true once it came) */
	struct install_msg last;    /* the last progress report */
	bool has_progress;             /* last is set */
	sd_event_source *timeout;
	time_t started;
};

/* The slot env and the boot decision, with what status adds per slot. */
struct manager_slots {
	struct slot_env st;
	struct slot_decision decision;
	char *versions[SLOT_MAX];
	char *health[SLOT_MAX];  /* FLASHD_<x>_HEALTH */
	bool reset_pending;
	char booted_unknown[256]; /* why the running slot cannot be told ("": it can, or
				   * the root is on no slot): no slot is written then */
};

/* The board's state as GetStatus shows it, kept between calls
 * (manager_status.c): loaded from flash when the daemon changed it (its
 * own env stores, install events), when inotify says someone else wrote
 * the env or the files status reads, or when a client asks and it is
 * older than STATUS_MAX_AGE_USEC. Two parts, each with its own age: what
 * the env says (slots, env copies) and the rest (flash counters, the last
 * install record, flashd boot's record). */
struct manager_status {
	bool env_valid, board_valid;
	uint64_t env_loaded, board_loaded;   /* CLOCK_MONOTONIC usec of the last load */
	struct manager_slots v;
	bool blank;                          /* no valid env copy */
	struct json_object *env;             /* GetStatus "env" */
	struct json_object *flash;           /* the partitions and their counters */
	struct json_object *last_install;
	struct json_object *boot;            /* flashd boot's record (boot.json), or NULL */
	/* the last install's record when the state dir could not keep it
	 * (with record_error): shown instead of the older one the file has */
	struct json_object *unsaved_install;
	/* another process (a second flashd's worker) installs: its holder
	 * description, "" when none */
	char installer[96];
	int inotify_fd;
	unsigned loads;                      /* loads from flash so far (debug log) */
	char env_degraded[512];              /* what the journal was last told of it */
};

struct manager {
	struct conf *conf;
	struct layout *layout;
	const struct layout_slot_group *group;
	sd_event *event;
	struct proto_server *server;
	struct proto_method methods[_PROTO_FLASHD_METHOD_MAX + 1]; /* io.flashd, bound here */
	struct operation op;
	bool socket_owned;             /* bound by us (not systemd): unlink at exit */
	bool stopping;                 /* SIGTERM came during an install */
	sd_event_source *stop_timer;   /* gives up waiting for that install */
	struct manager_status status;
	struct manager_rauc *rauc;     /* RAUC's D-Bus API, NULL when off or no bus */
};

/* ---- manager.c: helpers every part uses ---- */
/* The board's operation lock for a change (oplock.h): taken without
 * waiting, the event loop never blocks on it. -EBUSY: err names the holder. */
int manager_lock_board(struct manager *m, const char *what, struct oplock **ret,
		       struct error *err);
/* Busy naming the holder, or InternalError. */
int manager_reply_lock_error(struct proto_call *call, int r, const struct error *err);
/* Busy (the env lock stayed taken past its bounded wait), or InternalError. */
int manager_reply_env_error(struct proto_call *call, int r, const struct error *err);
int manager_reply_busy(struct manager *m, struct proto_call *call);
int manager_open_env(struct manager *m, struct env **ret, struct error *err);
/* The running slot (slot_booted() on the daemon's board and command line). */
int manager_booted(struct manager *m, const char **ret_by, struct error *err);
/* Ends the running operation: worker, client call, bundle, lock, timeout. */
void manager_op_clear(struct manager *m);

/* ---- manager_status.c ---- */
enum {
	MANAGER_STATUS_ENV = 1 << 0,    /* slots, env copies */
	MANAGER_STATUS_BOARD = 1 << 1,  /* flash counters, install record, boot record */
	MANAGER_STATUS_ALL = MANAGER_STATUS_ENV | MANAGER_STATUS_BOARD,
};
int manager_status_init(struct manager *m);
void manager_status_done(struct manager *m);
/* Loads the env part of the state: the journal hears of a degraded env
 * (at start and when it changes). */
void manager_status_check_env(struct manager *m);
/* What changed through the daemon: loaded again before the next answer. */
void manager_status_invalidate(struct manager *m, unsigned what);
int manager_status_load_slots(struct manager *m, struct env *e, struct manager_slots *v,
			      struct error *err);
void manager_status_slots_done(struct manager_slots *v);
/* m->status made current for need (MANAGER_STATUS_*): loaded again when old
 * or invalid (the io.flashd status methods and manager_rauc.c read it). */
int manager_status_refresh(struct manager *m, unsigned need, struct error *err);
/* The last install's record could not be written (error -errno): status
 * shows r and says so. r NULL: written, the file is the truth again. */
void manager_status_unsaved_install(struct manager *m, const struct record *r, int error);
struct json_object *manager_status_overlay_json(struct manager *m, bool reset_pending);
int manager_status_get(struct proto_call *call, struct json_object *params, void *userdata);
int manager_status_slots(struct proto_call *call, struct json_object *params, void *userdata);
int manager_status_overlay(struct proto_call *call, struct json_object *params, void *userdata);
int manager_status_flash_info(struct proto_call *call, struct json_object *params,
			      void *userdata);

/* ---- manager_install.c ---- */
bool manager_install_running(const struct manager *m);
/* The io.flashd Progress object of a report (GetStatus, Install's replies). */
struct json_object *manager_install_progress_json(const struct install_msg *p);
int manager_install_method(struct proto_call *call, struct json_object *params, void *userdata);
int manager_install_cancel(struct proto_call *call, struct json_object *params, void *userdata);
/* GetHistory: the install records, and the one the state dir could not keep. */
int manager_install_history(struct proto_call *call, struct json_object *params, void *userdata);
/* What an install is started with, from either front end. */
struct manager_install_req {
	int fd;                        /* the bundle (taken), or -1 with url */
	struct source_http_url *url;   /* taken: the URL checked where it came in, or NULL */
	const char *slot;              /* NULL: the slot the A/B policy picks */
	const struct install_slot *decided; /* manager_install_precheck()'s decision */
	char *source;                  /* taken: where it comes from, for its record
					* (NULL with url: the URL without its secrets) */
	bool activate, allow_downgrade;
	uid_t uid;                     /* the caller, for the journal */
	const char *const *headers;    /* more "Name: value" lines for the URL, or NULL */
};
/* The install in the worker; call (NULL: the D-Bus front end) gets its
 * progress and end. *lock: the board's lock, handed to the worker.
 * Returns what the call was answered, or -errno without a call. */
int manager_install_start(struct manager *m, struct oplock **lock,
			  const struct manager_install_req *req, struct proto_call *call);
/* The target of an install into slot (NULL: the other one), decided once
 * (*ret, for manager_install_req.decided), and the A/B policy's refusal
 * before a worker starts: -EBUSY and err, ret->target the slot or -1. */
int manager_install_precheck(struct manager *m, const char *slot, struct install_slot *ret,
			     struct error *err);
/* A bundle a caller names by its absolute path: a regular file, opened
 * without blocking (fd or -errno). */
int manager_install_open_path(const char *path);
/* SIGTERM during an install: cancel it, answer its client, then exit. */
int manager_install_stop(struct manager *m);

/* ---- manager_slot.c ---- */
/* op on slot name (NULL = booted) in one env store, under the board's
 * lock; 1 = mark-bad with SLOT_KEEP_LAST kept the slot (degraded). On
 * failure *ret_kind and err say what went wrong, *ret_forcible (may be
 * NULL) whether SLOT_FORCE would pass. extra: one more variable {name,
 * value} for the same store, or NULL. */
int manager_slot_change(struct manager *m, enum slot_op op, const char *name, unsigned flags,
			const char *const extra[2], int *ret_idx, enum slot_change_fail *ret_kind,
			bool *ret_forcible, struct error *err);
/* The journal's event of a slot change by client. */
void manager_slot_event(struct manager *m, uid_t client, enum slot_op op, enum log_event ev,
			int idx);
/* op on slot name (NULL: the booted one) when it puts a slot that is not
 * running ahead of the booted one (activate, mark-good, rollback): that
 * slot's read in a worker first, then the change (call NULL: the end goes
 * to manager_rauc_slot_read()). 1: the read started; 0: none is needed,
 * change at once; -errno (err: the board's lock). */
int manager_slot_read_start(struct manager *m, enum slot_op op, enum log_event ev,
			    const char *name, struct proto_call *call, struct error *err);
int manager_slot_mark_good(struct proto_call *call, struct json_object *params, void *userdata);
int manager_slot_mark_bad(struct proto_call *call, struct json_object *params, void *userdata);
int manager_slot_activate(struct proto_call *call, struct json_object *params, void *userdata);
int manager_slot_rollback(struct proto_call *call, struct json_object *params, void *userdata);

/* ---- manager_env.c ---- */
int manager_env_get(struct proto_call *call, struct json_object *params, void *userdata);
int manager_env_set(struct proto_call *call, struct json_object *params, void *userdata);
int manager_env_list(struct proto_call *call, struct json_object *params, void *userdata);
int manager_env_overlay_reset(struct proto_call *call, struct json_object *params,
			      void *userdata);

/* ---- manager_health.c ---- */
/* Records a fallback the boot script made, then starts the health check
 * when the booted slot is on trial. */
int manager_health_start(struct manager *m);
