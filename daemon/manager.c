/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's life cycle: configuration and layout, the event
 * loop with its signals and watchdog, the control socket and its io.flashd
 * handler table, and the helpers the other parts (manager-internal.h)
 * share. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "cleanup_json.h"
#include "flash.h"
#include "keyring.h"
#include "log.h"
#include "slot_boot.h"
#include "manager-internal.h"
#include "util.h"

#define STOP_GRACE_USEC (10ULL * 1000000ULL)

/* ---- helpers ---- */

int manager_lock_board(struct manager *m, const char *what, struct oplock **ret,
		       struct error *err)
{
	struct oplock_holder h;
	char who[96];
	int r = oplock_acquire(m->conf->target, what, ret, &h);

	if (r == -EBUSY)
		return error_set(err, r, "%s holds the lock of %s",
				 oplock_holder_describe(&h, who, sizeof(who)), m->conf->target);
	if (r < 0)
		return error_set(err, r, "cannot take the lock of %s: %s", m->conf->target,
				 strerror(-r));
	return r;
}

int manager_reply_lock_error(struct proto_call *call, int r, const struct error *err)
{
	if (r == -EBUSY)
		return proto_error_string(call, PROTO_ERROR_BUSY, "operation", error_message(err));
	return proto_error_errno(call, r, error_message(err));
}

int manager_reply_env_error(struct proto_call *call, int r, const struct error *err)
{
	/* the env lock stayed taken past its bounded wait: "env busy" */
	if (r == -EBUSY)
		return proto_error_string(call, PROTO_ERROR_BUSY, "operation", err->msg);
	return proto_error_errno(call, r, err->msg[0] ? err->msg : strerror(-r));
}

int manager_reply_busy(struct manager *m, struct proto_call *call)
{
	return proto_error_string(call, PROTO_ERROR_BUSY, "operation", m->op.name);
}

int manager_booted(struct manager *m, const char **ret_by, struct error *err)
{
	const struct slot_boot_where w = { .cmdline = m->conf->cmdline, .target = m->conf->target };

	return slot_booted(&w, m->layout, m->group, ret_by, err);
}

int manager_open_env(struct manager *m, struct env **ret, struct error *err)
{
	return env_open_layout(m->layout, m->conf->target, NULL, 0, ret, err);
}

void manager_op_clear(struct manager *m)
{
	struct operation *op = &m->op;

	/* everything the health check started, before its supervisor goes */
	if (op->health_pgid > 0)
		kill(-op->health_pgid, SIGKILL);
	worker_free(op->worker);
	proto_call_unref(op->call);
	if (op->bundle_fd >= 0)
		close(op->bundle_fd);
	free(op->slot);
	source_http_url_done(&op->url);
	for (char **h = op->headers; h && *h; h++)
		free(*h);
	free(op->headers);
	free(op->source);
	oplock_release(op->lock);
	sd_event_source_disable_unref(op->timeout);
	*op = (struct operation){ .bundle_fd = -1 };
	/* what it changed (env, record, counters) shows in the next answer */
	manager_status_invalidate(m, MANAGER_STATUS_ALL);
	sd_notify(0, "STATUS=idle");
}

static const proto_method_fn manager_handlers[_PROTO_FLASHD_METHOD_MAX] = {
	[PROTO_FLASHD_GET_STATUS] = manager_status_get,
	[PROTO_FLASHD_INSTALL] = manager_install_method,
	[PROTO_FLASHD_CANCEL] = manager_install_cancel,
	[PROTO_FLASHD_MARK_GOOD] = manager_slot_mark_good,
	[PROTO_FLASHD_MARK_BAD] = manager_slot_mark_bad,
	[PROTO_FLASHD_ACTIVATE] = manager_slot_activate,
	[PROTO_FLASHD_ROLLBACK] = manager_slot_rollback,
	[PROTO_FLASHD_OVERLAY_RESET] = manager_env_overlay_reset,
	[PROTO_FLASHD_OVERLAY_STATUS] = manager_status_overlay,
	[PROTO_FLASHD_GET_ENV] = manager_env_get,
	[PROTO_FLASHD_SET_ENV] = manager_env_set,
	[PROTO_FLASHD_LIST_ENV] = manager_env_list,
	[PROTO_FLASHD_FLASH_INFO] = manager_status_flash_info,
	[PROTO_FLASHD_SLOT_STATUS] = manager_status_slots,
	[PROTO_FLASHD_GET_HISTORY] = manager_install_history,
};

/* ---- life cycle ---- */

static void proto_log(void *userdata, const struct proto_peer *peer, const char *msg)
{
	/* no peer for problems before a connection exists (accept failed,
	 * connection limit reached) */
	if (!peer)
		log_warning("control socket: %s", msg);
	else
		log_warning("control socket (pid %d uid %u): %s", (int)peer->pid, peer->uid, msg);
}

int manager_new(struct conf *conf, struct manager **ret, struct error *err)
{
	_cleanup_(manager_freep) struct manager *m = calloc(1, sizeof(*m));
	int r;

	if (!m) {
		conf_free(conf);
		return -ENOMEM;
	}
	m->conf = conf;
	m->op.bundle_fd = -1;
	m->status.inotify_fd = -1;
	/* env access on the event loop waits for the env lock 1 s at most */
	env_set_lock(NULL, ENV_LOCK_TIMEOUT_LOOP_MS);
	flash_sim_set_lock_wait(MANAGER_SIM_LOCK_WAIT_LOOP_USEC);
	r = layout_load(conf->layout, &m->layout, err);
	if (r < 0)
		return error_prefix(err, r, "layout");
	if (!m->layout->n_groups)
		return error_set(err, -EINVAL, "layout %s has no slot group", conf->layout);
	m->group = &m->layout->groups[0];
	/* the install worker reads the keys (libcrypto is loaded there only,
	 * lib/bundle/crypto_dl.c); the daemon only says when there are none */
	r = keyring_dir_count(conf->keyring);
	if (r == 0 || r == -ENOENT)
		/* no keys: only unsigned bundles could pass, and only when allowed */
		log_warning("no trusted keys in %s: signed bundles will be refused%s",
			    conf->keyring, conf->allow_unsigned ? "" : ", and so will unsigned ones");
	else if (r < 0)
		return error_set(err, r, "keyring %s: %s", conf->keyring, strerror(-r));
	*ret = TAKE_PTR(m);
	return 0;
}

void manager_free(struct manager *m)
{
	if (!m)
		return;
	manager_op_clear(m);
	manager_rauc_free(m->rauc);
	manager_status_done(m);
	sd_event_source_disable_unref(m->stop_timer);
	proto_server_free(m->server);
	if (m->socket_owned)
		unlink(m->conf->socket);
	sd_event_unref(m->event);
	layout_free(m->layout);
	conf_free(m->conf);
	free(m);
}

static int on_stop_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	log_error("the install did not stop within %llu s: killing it; the target slot stays "
		  "marked bad", STOP_GRACE_USEC / 1000000ULL);
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	sd_notify(0, "STOPPING=1");
	if (!m->stopping && manager_install_running(m) && m->op.worker) {
		/* Let the worker stop between two erase blocks (never inside an env
		 * store), record the install as cancelled and answer its client;
		 * then exit. A second signal, or the grace time, exits at once. */
		log_info("received %s: cancelling the install, then stopping",
			 strsignal(si->ssi_signo));
		if (manager_install_stop(m) >= 0 &&
		    sd_event_add_time_relative(m->event, &m->stop_timer, CLOCK_MONOTONIC,
					       STOP_GRACE_USEC, 0, on_stop_timeout, m) >= 0)
			return 0;
	}
	log_info("received %s, stopping", strsignal(si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int listen_socket(struct manager *m, int *ret_fd, struct error *err)
{
	int r = proto_listen_activated(ret_fd);

	if (r > 0) {
		log_info("listening on the socket passed by systemd");
		return 0;
	}
	if (r < 0)
		return error_set(err, r, "socket activation: expected one AF_UNIX stream socket "
				 "from systemd");
	r = proto_listen(m->conf->socket, ret_fd);
	m->socket_owned = r >= 0;
	if (r < 0)
		return error_set(err, r, "cannot listen on %s: %s%s", m->conf->socket, strerror(-r),
				 r == -EADDRINUSE ? " (another flashd is running)" : "");
	log_info("listening on %s", m->conf->socket);
	return r;
}

int manager_startup(struct manager *m, struct error *err)
{
	sigset_t mask;
	int fd = -1, r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = sd_event_default(&m->event);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGTERM, on_signal, m);
	if (r >= 0)
		r = sd_event_add_signal(m->event, NULL, SIGINT, on_signal, m);
	if (r >= 0)
		r = sd_event_set_watchdog(m->event, true);
	if (r < 0)
		return error_set(err, r, "event loop: %s", strerror(-r));
	manager_status_init(m);
	r = listen_socket(m, &fd, err);
	if (r < 0)
		return r;
	proto_flashd_bind(m->methods, manager_handlers);
	r = proto_server_new(m->event, fd, m->methods, m, &m->server);
	if (r < 0) {
		close(fd);
		return error_set(err, r, "control socket: %s", strerror(-r));
	}
	proto_server_set_info(m->server, "flashd project", "flashd", PACKAGE_VERSION, NULL);
	proto_server_set_log(m->server, proto_log, m);
	proto_server_set_idle_timeout(m->server, (uint64_t)m->conf->idle_timeout * 1000000);
	if (m->conf->socket_group) {
		r = proto_server_set_auth_group_name(m->server, m->conf->socket_group);
		if (r < 0)
			return error_set(err, r, "socket-group=%s: no such group",
					 m->conf->socket_group);
	}
	if (m->conf->rauc_dbus)
		manager_rauc_new(m, &m->rauc); /* none without a system bus: logged */
	manager_health_start(m);
	manager_status_check_env(m);
	return 0;
}

int manager_run(struct manager *m)
{
	int r;

	sd_notifyf(0, "READY=1\nSTATUS=idle, board %s", m->layout->board ? m->layout->board : "?");
	log_info("ready: board %s, layout %s, target %s", m->layout->board ? m->layout->board : "?",
		 m->conf->layout, m->conf->target);
	r = sd_event_loop(m->event);
	sd_notify(0, "STOPPING=1");
	return r;
}
