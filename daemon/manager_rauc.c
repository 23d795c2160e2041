/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* RAUC's D-Bus API on the system bus (manager_rauc.h): the same install,
 * slot changes and status the io.flashd methods use, in RAUC's words.
 * RAUC's slots are "<group>.<index>" ("rootfs.0") with flashd's slot
 * names as their bootnames ("A"). Changes are root's and the socket
 * group's, checked here from the caller's credentials as the control
 * socket checks them (the bus policy says the same, but a permissive bus
 * configuration must not open flashd). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "cleanup.h"
#include "log.h"
#include "manager-internal.h"
#include "source_http.h"

#define RAUC_BUS_NAME "de.pengutronix.rauc"
#define RAUC_PATH "/"
#define RAUC_INTERFACE "de.pengutronix.rauc.Installer"
/* What RAUC's service answers with (a GIO error, G_IO_ERROR_FAILED_HANDLED,
 * as GDBus names it on the bus): clients match its name and message */
#define RAUC_ERROR_FAILED "org.gtk.GDBus.UnmappedGError.Quark._g_2dio_2derror_2dquark.Code30"
#define RAUC_BUSY "Already processing a different method"
#define RAUC_ERROR_NOT_SUPPORTED SD_BUS_ERROR_NOT_SUPPORTED
#define RAUC_ERROR_DENIED SD_BUS_ERROR_ACCESS_DENIED
#define RAUC_HEADERS_MAX 8
#define RAUC_HEADER_MAX 1024

struct rauc_install_args {
	const char *headers[RAUC_HEADERS_MAX + 1]; /* in the call's message */
	size_t n_headers;
};

struct manager_rauc {
	struct manager *m;
	sd_bus *bus;
	char operation[16];            /* "idle", "installing" */
	char last_error[ERROR_MSG_MAX];
	int percent, depth;
	char message[160];
	unsigned last_phase;           /* of the last Progress (a new step: a new line) */
	sd_bus_message *mark;          /* Mark active waiting for its slot's read */
	uid_t mark_uid;
};

/* Mark's states: RAUC's words, flashd's operations */
static const struct {
	const char *state;
	enum slot_op op;
	enum log_event ev;
	const char *done, *as;         /* RAUC's message: "<done> <slot><as>" */
} rauc_marks[] = {
	{ "good", SLOT_OP_MARK_GOOD, LOG_EVENT_SLOT_GOOD, "marked slot", " as good" },
	{ "bad", SLOT_OP_MARK_BAD, LOG_EVENT_SLOT_BAD, "marked slot", " as bad" },
	{ "active", SLOT_OP_ACTIVATE, LOG_EVENT_SLOT_ACTIVATED, "activated slot", "" },
};

/* ---- properties ---- */

static void emit(struct manager_rauc *r, const char *property)
{
	int e = sd_bus_emit_properties_changed(r->bus, RAUC_PATH, RAUC_INTERFACE, property, NULL);

	if (e < 0)
		log_debug("D-Bus: PropertiesChanged %s: %s", property, strerror(-e));
}

static void set_progress(struct manager_rauc *r, int percent, const char *message, int depth)
{
	r->percent = percent;
	r->depth = depth;
	snprintf(r->message, sizeof(r->message), "%s", message);
	/* one property per signal: the rauc command prints one of each */
	emit(r, "Progress");
}

static void set_operation(struct manager_rauc *r, const char *op)
{
	snprintf(r->operation, sizeof(r->operation), "%s", op);
	emit(r, "Operation");
}

static int prop_string(sd_bus *bus, const char *path, const char *interface,
		       const char *property, sd_bus_message *reply, void *userdata,
		       sd_bus_error *error)
{
	struct manager_rauc *r = userdata;
	struct manager *m = r->m;
	const char *v = "";
	int booted;

	if (!strcmp(property, "Operation"))
		v = r->operation;
	else if (!strcmp(property, "LastError"))
		v = r->last_error;
	else if (!strcmp(property, "Compatible"))
		v = m->layout->compatible ? m->layout->compatible : "";
	else if (!strcmp(property, "BootSlot") && (booted = manager_booted(m, NULL, NULL)) >= 0)
		v = m->group->slots[booted].name;
	/* Variant: flashd has none ("") */
	return sd_bus_message_append(reply, "s", v);
}

static int prop_progress(sd_bus *bus, const char *path, const char *interface,
			 const char *property, sd_bus_message *reply, void *userdata,
			 sd_bus_error *error)
{
	struct manager_rauc *r = userdata;

	return sd_bus_message_append(reply, "(isi)", r->percent, r->message, r->depth);
}

/* ---- who may change anything ---- */

/* What the bus daemon read from the caller's socket when it connected
 * (SO_PEERCRED, SO_PEERGROUPS): its uid and groups, asked of the bus
 * (GetConnectionCredentials; libsystemd 252's creds lack the groups), never
 * /proc/PID (the pid may be another process by then). Only the socket
 * group matters to proto_peer_authorized(): it goes first. */
static int caller_peer(struct manager_rauc *r, sd_bus_message *msg, gid_t group,
		       struct proto_peer *peer)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
	bool has_uid = false;
	const char *key;
	uint32_t v;
	int k;

	k = sd_bus_call_method(r->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
			       "org.freedesktop.DBus", "GetConnectionCredentials", &e, &reply, "s",
			       sd_bus_message_get_sender(msg));
	if (k >= 0)
		k = sd_bus_message_enter_container(reply, 'a', "{sv}");
	while (k >= 0 && (k = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
		if ((k = sd_bus_message_read(reply, "s", &key)) < 0)
			break;
		if (!strcmp(key, "UnixUserID")) {
			k = sd_bus_message_read(reply, "v", "u", &v);
			peer->uid = v;
			has_uid = k >= 0;
		} else if (!strcmp(key, "UnixGroupIDs")) {
			k = sd_bus_message_enter_container(reply, 'v', "au");
			if (k >= 0)
				k = sd_bus_message_enter_container(reply, 'a', "u");
			while (k >= 0 && (k = sd_bus_message_read(reply, "u", &v)) > 0)
				if (v == group && group != (gid_t)-1)
					peer->groups[0] = group, peer->n_groups = 1;
			if (k >= 0)
				k = sd_bus_message_exit_container(reply);
			if (k >= 0)
				k = sd_bus_message_exit_container(reply);
		} else {
			k = sd_bus_message_skip(reply, "v");
		}
		if (k >= 0)
			k = sd_bus_message_exit_container(reply);
	}
	return k < 0 ? k : has_uid ? 0 : -ENODATA;
}

/* root or the socket group, as proto_peer_authorized() decides for the
 * control socket */
static int caller_check(struct manager_rauc *r, sd_bus_message *msg, uid_t *ret_uid,
			sd_bus_error *error)
{
	struct proto_peer peer = { .gid = (gid_t)-1 };
	gid_t group = proto_server_auth_group(r->m->server);

	if (caller_peer(r, msg, group, &peer) < 0)
		return sd_bus_error_set(error, RAUC_ERROR_DENIED,
					"flashd cannot tell who called: refused");
	*ret_uid = peer.uid;
	if (proto_peer_authorized(&peer, group) > 0)
		return 0;
	log_warning("D-Bus: %s.%s refused to uid %u: only root%s may change anything",
		    RAUC_INTERFACE, sd_bus_message_get_member(msg), peer.uid,
		    group == (gid_t)-1 ? "" : " and the socket group");
	return sd_bus_error_setf(error, RAUC_ERROR_DENIED, "uid %u may not %s: only root%s may "
				 "change anything (flashd.conf socket-group=)", peer.uid,
				 sd_bus_message_get_member(msg),
				 group == (gid_t)-1 ? "" : " and the socket group");
}

/* ---- install ---- */

/* A header line a caller may add to the URL's request: "Name: value",
 * printable, without a line break that would smuggle in more */
static bool header_valid(const char *h)
{
	const char *colon = strchr(h, ':');

	if (!colon || colon == h || colon[1] != ' ' || strlen(h) > RAUC_HEADER_MAX)
		return false;
	for (const char *p = h; *p; p++)
		if (*p < ' ' || *p > '~' || (p < colon && *p == ' '))
			return false;
	return true;
}

static int install_arg_bool(sd_bus_message *msg, const char *key, sd_bus_error *error)
{
	int v, e = sd_bus_message_read(msg, "v", "b", &v);

	if (e < 0)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "%s: not a boolean", key);
	/* what flashd does anyway: checks the board, its downgrade= policy, TLS */
	if (v)
		return sd_bus_error_setf(error, RAUC_ERROR_NOT_SUPPORTED, "%s is not supported: "
					 "flashd checks the bundle's compatible, its downgrade= "
					 "policy and the server's certificate (flashd.conf ca-file=) "
					 "for every install", key);
	return 0;
}

static int install_arg_headers(sd_bus_message *msg, struct rauc_install_args *a,
			       sd_bus_error *error)
{
	const char *h;
	int e = sd_bus_message_enter_container(msg, 'v', "as");

	if (e >= 0)
		e = sd_bus_message_enter_container(msg, 'a', "s");
	while (e >= 0 && (e = sd_bus_message_read(msg, "s", &h)) > 0) {
		if (a->n_headers == RAUC_HEADERS_MAX || !header_valid(h))
			return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "http-headers: "
						 "at most %d lines \"Name: value\" of printable "
						 "ASCII", RAUC_HEADERS_MAX);
		a->headers[a->n_headers++] = h;
	}
	if (e >= 0)
		e = sd_bus_message_exit_container(msg);
	if (e >= 0)
		e = sd_bus_message_exit_container(msg);
	return e < 0 ? sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "http-headers: not "
					 "an array of strings") : 0;
}

/* RAUC's install arguments: those that say what flashd does anyway, the
 * headers rauc-hawkbit-updater sends in streaming mode, and none that
 * flashd would ignore */
static int install_args(sd_bus_message *msg, struct rauc_install_args *a, sd_bus_error *error)
{
	const char *key;
	int e;

	e = sd_bus_message_enter_container(msg, 'a', "{sv}");
	while (e >= 0 && (e = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
		if ((e = sd_bus_message_read(msg, "s", &key)) < 0)
			break;
		if (!strcmp(key, "ignore-compatible") || !strcmp(key, "ignore-version-limit") ||
		    !strcmp(key, "tls-no-verify"))
			e = install_arg_bool(msg, key, error);
		else if (!strcmp(key, "http-headers"))
			e = install_arg_headers(msg, a, error);
		else
			/* tls-cert, tls-key, tls-ca, transaction-id, ...: flashd.conf's
			 * [network] says how flashd fetches */
			return sd_bus_error_setf(error, RAUC_ERROR_NOT_SUPPORTED, "install argument "
						 "'%s' is not supported by flashd (its [network] "
						 "settings are in flashd.conf)", key);
		if (e < 0 || (e = sd_bus_message_exit_container(msg)) < 0)
			break;
	}
	if (e < 0)
		return sd_bus_error_is_set(error) ? e : sd_bus_error_set_errno(error, e);
	return sd_bus_message_exit_container(msg);
}

/* A local bundle: opened by the daemon (a regular file), refused at once
 * when it is RAUC's (a squashfs with a CMS signature), which flashd cannot
 * install. */
static int open_local_bundle(const char *path, sd_bus_error *error)
{
	uint8_t head[BUNDLE_HEADER_SIZE];
	struct error err = {};
	_cleanup_close_ int fd = manager_install_open_path(path);
	unsigned major, minor, sigs;
	uint32_t size;
	ssize_t n;

	if (fd < 0)
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "cannot open the bundle %s: %s "
					 "(an absolute path of a regular file the daemon can "
					 "read, or an http(s) URL)", path, strerror(-fd));
	n = pread(fd, head, sizeof(head), 0);
	/* RAUC's bundles start with a squashfs (little-endian "hsqs") */
	if (n >= 4 && !memcmp(head, "hsqs", 4))
		return sd_bus_error_setf(error, RAUC_ERROR_NOT_SUPPORTED, "%s is a RAUC bundle "
					 "(squashfs with a CMS signature): flashd installs flashd "
					 "bundles only (flashctl bundle create)", path);
	if (n != (ssize_t)sizeof(head) ||
	    bundle_header_parse(head, &major, &minor, &size, &sigs, &err) < 0)
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "%s: %s", path,
					 err.msg[0] ? err.msg : "shorter than a bundle header");
	return TAKE_FD(fd);
}

static int install(struct manager_rauc *r, sd_bus_message *msg, const char *source,
		   const struct rauc_install_args *a, sd_bus_error *error)
{
	struct manager *m = r->m;
	_cleanup_oplock_ struct oplock *lock = NULL;
	_cleanup_(source_http_url_done) struct source_http_url parsed = {};
	struct error err = {};
	bool url = !strncmp(source, "http://", 7) || !strncmp(source, "https://", 8);
	struct install_slot decided;
	int fd = -1, e;
	uid_t uid;

	if ((e = caller_check(r, msg, &uid, error)) < 0)
		return e;
	if (m->op.name)
		return sd_bus_error_set(error, RAUC_ERROR_FAILED, RAUC_BUSY);
	if (manager_install_precheck(m, NULL, &decided, &err) < 0 ||
	    manager_lock_board(m, "flashd install (D-Bus)", &lock, &err) < 0)
		return sd_bus_error_set(error, RAUC_ERROR_FAILED, err.msg);
	if (url && source_http_url_parse(source, &parsed, &err) < 0)
		return sd_bus_error_set(error, RAUC_ERROR_FAILED, err.msg);
	if (!url && (fd = open_local_bundle(source, error)) < 0)
		return fd;
	snprintf(r->last_error, sizeof(r->last_error), "%s", "");
	e = manager_install_start(m, &lock, &(struct manager_install_req){
			.fd = fd, .url = url ? &parsed : NULL, .decided = &decided, .activate = true,
			.source = url ? NULL : strdup(source), .uid = uid,
			.headers = url && a->n_headers ? a->headers : NULL }, NULL);
	if (e < 0)
		return sd_bus_error_set_errnof(error, -e, "cannot start the install: %s",
					       strerror(-e));
	return sd_bus_reply_method_return(msg, NULL);
}

static int method_install(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	const char *source;
	int e = sd_bus_message_read(msg, "s", &source);

	return e < 0 ? e : install(userdata, msg, source, &(struct rauc_install_args){}, error);
}

static int method_install_bundle(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct rauc_install_args a = {};
	const char *source;
	int e = sd_bus_message_read(msg, "s", &source);

	if (e >= 0)
		e = install_args(msg, &a, error);
	return e < 0 ? e : install(userdata, msg, source, &a, error);
}

void manager_rauc_install_started(struct manager_rauc *r)
{
	if (!r)
		return;
	r->last_phase = _INSTALL_PHASE_MAX;
	set_operation(r, "installing");
	set_progress(r, 0, "Installing", 1);
}

void manager_rauc_install_progress(struct manager_rauc *r, const struct install_msg *rep)
{
	char msg[sizeof(r->message)];

	if (!r)
		return;
	snprintf(msg, sizeof(msg), "%s%s%s%s%s%s", install_phase_to_string(rep->phase),
		 rep->image[0] ? " " : "", rep->image, rep->slot[0] ? " (slot " : "", rep->slot,
		 rep->slot[0] ? ")" : "");
	/* a line per step and per tenth: the rauc command prints each */
	if (rep->phase == r->last_phase && rep->percent / 10 == (unsigned)r->percent / 10)
		return;
	r->last_phase = rep->phase;
	set_progress(r, (int)rep->percent, msg, 2);
}

void manager_rauc_install_done(struct manager_rauc *r, bool ok, const char *error)
{
	int e;

	if (!r)
		return;
	if (!ok) {
		snprintf(r->last_error, sizeof(r->last_error), "%s", error ? error : "failed");
		emit(r, "LastError");
	}
	set_progress(r, 100, ok ? "Installing done." : "Installing failed.", 1);
	set_operation(r, "idle");
	/* RAUC's result: 0 success, 1 failed */
	e = sd_bus_emit_signal(r->bus, RAUC_PATH, RAUC_INTERFACE, "Completed", "i", ok ? 0 : 1);
	if (e < 0)
		log_warning("D-Bus: cannot send Completed: %s", strerror(-e));
}

/* ---- Info ---- */

static int method_info(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager_rauc *r = userdata;
	_cleanup_free_ char *buf = NULL;
	struct bundle_manifest man;
	uint8_t head[BUNDLE_HEADER_SIZE];
	struct error err = {};
	_cleanup_close_ int fd = -1;
	const char *path;
	unsigned major, minor, sigs;
	uint32_t size;
	uid_t uid;
	int e;

	if ((e = sd_bus_message_read(msg, "s", &path)) < 0)
		return e;
	/* the root daemon reads what the caller names: as for Install */
	if ((e = caller_check(r, msg, &uid, error)) < 0)
		return e;
	fd = open_local_bundle(path, error);
	if (fd < 0)
		return fd;
	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    bundle_header_parse(head, &major, &minor, &size, &sigs, &err) < 0 ||
	    !(buf = malloc(size)) ||
	    pread(fd, buf, size, BUNDLE_HEADER_SIZE) != (ssize_t)size ||
	    bundle_manifest_parse(buf, size, &man, &err) < 0)
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "%s: %s", path,
					 err.msg[0] ? err.msg : "cannot read its manifest");
	/* what the manifest says, before any signature check (an install
	 * checks it): a name, not a proof */
	return sd_bus_reply_method_return(msg, "ss", man.compatible, man.version);
}

/* ---- Mark ---- */

/* RAUC's slot identifiers: booted, other, <group>.<index>, a bootname */
static int slot_identify(struct manager *m, const char *id, int booted)
{
	size_t n = strlen(m->group->name);
	char *end;
	long i;

	if (!strcmp(id, "booted"))
		return booted;
	if (!strcmp(id, "other"))
		return booted >= 0 && m->group->n_slots == 2 ? 1 - booted : -1;
	if (!strncmp(id, m->group->name, n) && id[n] == '.') {
		i = strtol(id + n + 1, &end, 10);
		return !*end && end != id + n + 1 && i >= 0 && (size_t)i < m->group->n_slots ?
		       (int)i : -1;
	}
	for (size_t k = 0; k < m->group->n_slots; k++)
		if (!strcmp(m->group->slots[k].name, id))
			return (int)k;
	return -1;
}

static int mark_reply(struct manager *m, sd_bus_message *msg, size_t mark, int idx, uid_t uid)
{
	char name[128], done[192];

	manager_slot_event(m, uid, rauc_marks[mark].op, rauc_marks[mark].ev, idx);
	snprintf(name, sizeof(name), "%s.%d", m->group->name, idx);
	snprintf(done, sizeof(done), "%s %s%s", rauc_marks[mark].done, name, rauc_marks[mark].as);
	return sd_bus_reply_method_return(msg, "ss", name, done);
}

static int mark_change(struct manager *m, sd_bus_message *msg, size_t mark, int idx, uid_t uid,
		       sd_bus_error *error)
{
	enum slot_change_fail kind;
	struct error err = {};
	int e;

	e = manager_slot_change(m, rauc_marks[mark].op, m->group->slots[idx].name, 0, NULL, &idx,
				&kind, NULL, &err);
	if (e < 0)
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "%s of slot %s refused: %s",
					 slot_op_to_string(rauc_marks[mark].op),
					 m->group->slots[idx].name, error_message(&err));
	return mark_reply(m, msg, mark, idx, uid);
}

static int method_mark(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager_rauc *r = userdata;
	struct manager *m = r->m;
	const char *state, *id;
	struct error err = {};
	size_t mark = ELEMENTSOF(rauc_marks);
	int booted, idx, e;
	uid_t uid;

	if ((e = sd_bus_message_read(msg, "ss", &state, &id)) < 0)
		return e;
	if ((e = caller_check(r, msg, &uid, error)) < 0)
		return e;
	if (m->op.name)
		return sd_bus_error_set(error, RAUC_ERROR_FAILED, "already processing a different "
					"method");
	for (size_t i = 0; i < ELEMENTSOF(rauc_marks); i++)
		if (!strcmp(rauc_marks[i].state, state))
			mark = i;
	if (mark == ELEMENTSOF(rauc_marks))
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "unknown state '%s' (good, bad "
					 "or active)", state);
	booted = manager_booted(m, NULL, NULL);
	idx = slot_identify(m, id, booted < 0 ? -1 : booted);
	if (idx < 0)
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "no slot '%s' (booted, other, "
					 "%s.0..%zu or a bootname%s)", id, m->group->name,
					 m->group->n_slots - 1, booted < 0 ? "; the booted slot "
					 "is unknown" : "");
	/* a slot that is not running is read against its signed image
	 * before it is put ahead of the booted one (activate, mark-good),
	 * in a worker, as io.flashd's Activate and MarkGood do */
	e = rauc_marks[mark].op == SLOT_OP_MARK_BAD ? 0 :
	    manager_slot_read_start(m, rauc_marks[mark].op, rauc_marks[mark].ev,
				    m->group->slots[idx].name, NULL, &err);
	if (e == 0)
		return mark_change(m, msg, mark, idx, uid, error);
	if (e < 0)
		return sd_bus_error_setf(error, RAUC_ERROR_FAILED, "cannot read slot %s: %s",
					 m->group->slots[idx].name,
					 error_is_set(&err) ? err.msg : strerror(-e));
	r->mark = sd_bus_message_ref(msg);
	r->mark_uid = uid;
	return 1;
}

void manager_rauc_slot_read(struct manager *m, enum slot_op op, const char *name, bool ok,
			    const char *refusal)
{
	struct manager_rauc *r = m->rauc;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = r ? TAKE_PTR(r->mark) : NULL;
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	size_t mark = ELEMENTSOF(rauc_marks);
	int idx = -1;

	if (!msg)
		return;
	for (size_t i = 0; i < ELEMENTSOF(rauc_marks); i++)
		if (rauc_marks[i].op == op)
			mark = i;
	for (size_t i = 0; name && i < m->group->n_slots; i++)
		if (!strcmp(m->group->slots[i].name, name))
			idx = (int)i;
	if (!ok || idx < 0 || mark == ELEMENTSOF(rauc_marks)) {
		if (ok)
			refusal = "no such slot or mark";
		log_warning("%s", refusal);
		sd_bus_reply_method_errorf(msg, RAUC_ERROR_FAILED, "%s", refusal);
		return;
	}
	if (mark_change(m, msg, mark, idx, r->mark_uid, &error) < 0)
		sd_bus_reply_method_error(msg, &error);
}

/* ---- status ---- */

static int append_entry(sd_bus_message *reply, const char *key, const char *type, ...)
{
	va_list ap;
	int e;

	e = sd_bus_message_open_container(reply, 'e', "sv");
	if (e >= 0)
		e = sd_bus_message_append(reply, "s", key);
	if (e >= 0)
		e = sd_bus_message_open_container(reply, 'v', type);
	if (e >= 0) {
		va_start(ap, type);
		e = sd_bus_message_appendv(reply, type, ap);
		va_end(ap);
	}
	if (e >= 0)
		e = sd_bus_message_close_container(reply);
	return e < 0 ? e : sd_bus_message_close_container(reply);
}

/* RAUC's dictionary of slot i, from flashd's view of it */
static int append_slot(struct manager *m, sd_bus_message *reply, size_t i)
{
	const struct manager_slots *v = &m->status.v;
	const struct layout_slot *s = &m->group->slots[i];
	enum slot_tries h = slot_tries_of(&v->st, i);
	enum slot_record rec = v->st.slots[i].record;
	char name[128];
	int e;

	snprintf(name, sizeof(name), "%s.%zu", m->group->name, i);
	e = sd_bus_message_open_container(reply, 'r', "sa{sv}");
	if (e >= 0)
		e = sd_bus_message_append(reply, "s", name);
	if (e >= 0)
		e = sd_bus_message_open_container(reply, 'a', "{sv}");
	if (e >= 0)
		e = append_entry(reply, "class", "s", m->group->name);
	if (e >= 0)
		e = append_entry(reply, "device", "s", s->rootfs.part ? s->rootfs.part->name :
				 s->rootfs.file ? s->rootfs.file : "");
	if (e >= 0)
		e = append_entry(reply, "type", "s", layout_storage_to_string(s->rootfs.storage));
	if (e >= 0)
		e = append_entry(reply, "bootname", "s", s->name);
	/* RAUC: booted, or inactive (no other slot of this class runs) */
	if (e >= 0)
		e = append_entry(reply, "state", "s", (int)i == v->decision.booted ? "booted" :
				 "inactive");
	/* RAUC's U-Boot backend: good while in BOOT_ORDER with tries left */
	if (e >= 0)
		e = append_entry(reply, "boot-status", "s", h == SLOT_TRIES_FULL ||
				 h == SLOT_TRIES_USED ? "good" : "bad");
	if (e >= 0 && v->versions[i])
		e = append_entry(reply, "bundle.version", "s", v->versions[i]);
	if (e >= 0 && rec != SLOT_RECORD_NONE)
		e = append_entry(reply, "status", "s", slot_record_to_string(rec));
	if (e >= 0)
		e = sd_bus_message_close_container(reply);
	return e < 0 ? e : sd_bus_message_close_container(reply);
}

static int status_load(struct manager *m, sd_bus_error *error)
{
	struct error err = {};
	int e = manager_status_refresh(m, MANAGER_STATUS_ENV, &err);

	return e < 0 ? sd_bus_error_setf(error, RAUC_ERROR_FAILED, "cannot read the slot env: "
					 "%s", error_message(&err)) : 0;
}

static int method_get_slot_status(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager_rauc *r = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	int e;

	if ((e = status_load(r->m, error)) < 0)
		return e;
	e = sd_bus_message_new_method_return(msg, &reply);
	if (e >= 0)
		e = sd_bus_message_open_container(reply, 'a', "(sa{sv})");
	for (size_t i = 0; e >= 0 && i < r->m->group->n_slots; i++)
		e = append_slot(r->m, reply, i);
	if (e >= 0)
		e = sd_bus_message_close_container(reply);
	return e < 0 ? e : sd_bus_send(NULL, reply, NULL);
}

/* the slot the next boot starts (RAUC: the bootloader's primary) */
static int method_get_primary(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager_rauc *r = userdata;
	char name[128];
	int e, next;

	if ((e = status_load(r->m, error)) < 0)
		return e;
	next = r->m->status.v.decision.next_boot;
	if (next < 0)
		return sd_bus_error_set(error, RAUC_ERROR_FAILED, "no slot boots next: BOOT_ORDER "
					"names none");
	snprintf(name, sizeof(name), "%s.%d", r->m->group->name, next);
	return sd_bus_reply_method_return(msg, "s", name);
}

/* ---- the bus ---- */

static const sd_bus_vtable rauc_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD_WITH_NAMES("Install", "s", SD_BUS_PARAM(source), "", ,
				 method_install, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("InstallBundle", "sa{sv}", SD_BUS_PARAM(source) SD_BUS_PARAM(args),
				 "", , method_install_bundle, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("Info", "s", SD_BUS_PARAM(bundle), "ss",
				 SD_BUS_PARAM(compatible) SD_BUS_PARAM(version), method_info,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("Mark", "ss", SD_BUS_PARAM(state) SD_BUS_PARAM(slot_identifier),
				 "ss", SD_BUS_PARAM(slot_name) SD_BUS_PARAM(message), method_mark,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("GetSlotStatus", "", , "a(sa{sv})",
				 SD_BUS_PARAM(slot_status_array), method_get_slot_status,
				 SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("GetPrimary", "", , "s", SD_BUS_PARAM(primary),
				 method_get_primary, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_PROPERTY("Operation", "s", prop_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("LastError", "s", prop_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Progress", "(isi)", prop_progress, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Compatible", "s", prop_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Variant", "s", prop_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	/* changes only with the running root: read each time */
	SD_BUS_PROPERTY("BootSlot", "s", prop_string, 0, 0),
	SD_BUS_SIGNAL_WITH_NAMES("Completed", "i", SD_BUS_PARAM(result), 0),
	SD_BUS_VTABLE_END
};

static int on_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	const sd_bus_error *e = sd_bus_message_get_error(reply);

	if (e)
		log_warning("D-Bus: cannot own %s (%s): RAUC's D-Bus API is off (does rauc.service "
			    "run, or does the bus policy lack flashd's file?)", RAUC_BUS_NAME,
			    e->message ? e->message : e->name);
	else
		log_info("D-Bus: serving RAUC's API as %s on the system bus", RAUC_BUS_NAME);
	return 0;
}

int manager_rauc_new(struct manager *m, struct manager_rauc **ret)
{
	_cleanup_(manager_rauc_freep) struct manager_rauc *r = calloc(1, sizeof(*r));
	int e;

	*ret = NULL;
	if (!r)
		return -ENOMEM;
	r->m = m;
	snprintf(r->operation, sizeof(r->operation), "idle");
	e = sd_bus_open_system(&r->bus);
	if (e < 0) {
		log_info("no system bus (%s): RAUC's D-Bus API is off", strerror(-e));
		return 0;
	}
	(void)sd_bus_set_exit_on_disconnect(r->bus, 0);
	e = sd_bus_add_object_vtable(r->bus, NULL, RAUC_PATH, RAUC_INTERFACE, rauc_vtable, r);
	if (e >= 0)
		e = sd_bus_request_name_async(r->bus, NULL, RAUC_BUS_NAME, 0, on_name, r);
	if (e >= 0)
		e = sd_bus_attach_event(r->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
	if (e < 0) {
		log_warning("D-Bus: %s: RAUC's D-Bus API is off", strerror(-e));
		return 0;
	}
	*ret = TAKE_PTR(r);
	return 0;
}

void manager_rauc_free(struct manager_rauc *r)
{
	if (!r)
		return;
	sd_bus_message_unref(r->mark);
	sd_bus_flush_close_unref(r->bus);
	free(r);
}
