/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fairness (issues 13 item 10 and 32 item 10): connections with work left
 * take turns on two run queues, and admission keeps a share of the
 * connections for root and the socket group. */
#include <errno.h>

#include "proto-internal.h"

/* ---- the run queue: connections with work left take turns ---- */

void proto_sched_remove(struct proto_conn *c)
{
	struct proto_runq *q = &c->server->runq[c->privileged];
	struct proto_conn **p;

	if (!c->queued)
		return;
	for (p = &q->head; *p; p = &(*p)->run_next)
		if (*p == c) {
			*p = c->run_next;
			break;
		}
	if (q->tail == c) {
		q->tail = NULL;
		for (struct proto_conn *i = q->head; i; i = i->run_next)
			q->tail = i;
	}
	c->run_next = NULL;
	c->queued = false;
	if (!q->head)
		(void) sd_event_source_set_enabled(q->src, SD_EVENT_OFF);
}

int proto_sched_run_cb(sd_event_source *src, void *userdata)
{
	struct proto_runq *q = userdata;
	struct proto_conn *c = q->head;

	if (!c) {
		(void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
		return 0;
	}
	proto_sched_remove(c);
	proto_conn_run(c, 0);
	return 0;
}

/* Queue c for a turn (a reply was queued, a call finished, calls wait). */
void proto_sched_wake(struct proto_conn *c)
{
	struct proto_runq *q = &c->server->runq[c->privileged];

	if (!q->src || !c->io_src || c->queued)
		return;
	c->queued = true;
	c->run_next = NULL;
	if (q->tail)
		q->tail->run_next = c;
	else
		q->head = c;
	q->tail = c;
	(void) sd_event_source_set_enabled(q->src, SD_EVENT_ON);
}

/* c is a better victim than best: no call in flight before one with a
 * call, then the one whose last call is oldest */
static bool conn_idler(const struct proto_conn *c, const struct proto_conn *best)
{
	if (!best || !c->current != !best->current)
		return !best || !c->current;
	return c->last_call < best->last_call;
}

/* The connection to close so that a newcomer holding `held` connections
 * of the shared pool gets in when the pool is full: the longest-idle one of
 * the uid holding the most, if that uid holds more than the newcomer.
 * Shares thus converge to an equal part per uid present, however the
 * connections were taken, and a uid that holds none always gets in (six
 * uids holding 8 each locked out a seventh: issue 32 item 10). Capping
 * each uid at the pool divided by the uids present would need the same
 * eviction when a new uid arrives, with a cap moving under everyone;
 * eviction alone is simpler. Root's and the socket group's connections are
 * never chosen. */
static struct proto_conn *server_victim(const struct proto_server *s, unsigned held)
{
	struct proto_conn *victim = NULL;
	unsigned most = held;

	for (struct proto_conn *c = s->conns; c; c = c->next) {
		unsigned n;

		if (c->privileged)
			continue;
		n = proto_server_uid_connections(s, c->peer.uid);
		if (n > most) {
			most = n;
			victim = c;
		} else if (victim && c->peer.uid == victim->peer.uid && conn_idler(c, victim)) {
			victim = c;
		}
	}
	return victim;
}

/* Room for one more connection of peer? Root and the socket group may
 * use every slot; everyone else shares all but PROTO_RESERVED_CONNECTIONS
 * of them, at most PROTO_MAX_CONNECTIONS_PER_UID per uid, and a newcomer
 * to a full pool takes the place of an idle connection of the uid that
 * holds the most (server_victim). So no number of connections from users
 * without rights locks root, or any other user, out. */
int proto_sched_admit(struct proto_server *s, const struct proto_peer *peer, bool privileged)
{
	unsigned unprivileged = 0, held = privileged ? 0 : proto_server_uid_connections(s, peer->uid);
	struct proto_conn *victim;

	for (const struct proto_conn *c = s->conns; c; c = c->next)
		unprivileged += !c->privileged;
	if (!privileged && held >= PROTO_MAX_CONNECTIONS_PER_UID)
		return -EUSERS;
	if (s->n_conns < PROTO_MAX_CONNECTIONS &&
	    (privileged || unprivileged < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS))
		return 0;
	victim = server_victim(s, held);
	if (!victim)
		return s->n_conns >= PROTO_MAX_CONNECTIONS ? -EMFILE : -ENOSPC;
	proto_server_log_limited(s, &s->evicted_log, &victim->peer,
			   "closing this uid's longest-idle connection: the connections for users "
			   "without rights are full and it holds the most (%u) of them",
			   proto_server_uid_connections(s, victim->peer.uid));
	proto_conn_free(victim);
	return 0;
}
