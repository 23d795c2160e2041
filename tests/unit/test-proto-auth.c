/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Authorization: who may call what, the auth group, connection limits and
 * shares (the peers are plain structs: no user database). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "proto-fixture.h"
#include "testlib.h"

/* ---- authorization ---- */

TEST(test_peer_authorized)
{
	struct proto_peer p = { .pid = 99 };

	p.uid = 0;
	assert_int_equal(proto_peer_authorized(&p, (gid_t)-1), 1);
	p.uid = 1001, p.gid = 1001, p.n_groups = 2, p.groups[0] = 4242, p.groups[1] = 27;
	assert_int_equal(proto_peer_authorized(&p, (gid_t)-1), 0); /* root only */
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);      /* supplementary */
	assert_int_equal(proto_peer_authorized(&p, 1001), 1);      /* primary */
	assert_int_equal(proto_peer_authorized(&p, 5555), 0);
	p.n_groups = 0; /* the process dropped its groups: what its user may have counts not */
	assert_int_equal(proto_peer_authorized(&p, 4242), 0);
	p.gid = 4242; /* e.g. sg/newgrp: the process's gid counts */
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);
	/* a uid without a passwd entry is judged by its groups like any other */
	p.uid = 7777, p.gid = 7777;
	assert_int_equal(proto_peer_authorized(&p, 4242), 0);
	p.n_groups = 1, p.groups[0] = 4242;
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);
	p.gid = 4242, p.n_groups = 0;
	assert_int_equal(proto_peer_authorized(&p, 4242), 1);
	(void) state;
}

static void auth_case(gid_t group, uid_t uid, gid_t gid, const char *msg, bool allowed)
{
	struct proto_peer peer = { .pid = 42, .uid = uid, .gid = gid };
	_cleanup_json_ struct json_object *rep = NULL;
	struct fx *f;

	/* uid 1001 runs with the supplementary groups 4242 and 27 */
	if (uid == 1001)
		peer.n_groups = 2, peer.groups[0] = 4242, peer.groups[1] = 27;
	f = fx_new(&peer);

	proto_server_set_auth_group(f->server, group);
	assert_int_equal(feed(f, msg), 0);
	rep = one_reply(f);
	if (allowed)
		assert_null(get_str(rep, "error"));
	else
		assert_error(rep, PROTO_ERROR_PERMISSION_DENIED, NULL, NULL);
	assert_int_equal(proto_conn_peer(f->conn)->uid, uid);
	proto_server_free(f->server);
	free(f);
}

TEST(test_dispatch_auth)
{
	static const char set[] = "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{\"name\":\"x\"}}";
	static const char get[] = "{\"method\":\"io.flashd.GetStatus\"}";
	static const char bad_params[] = "{\"method\":\"io.flashd.SetEnv\",\"parameters\":{}}";

	auth_case((gid_t)-1, 0, 0, set, true);
	auth_case((gid_t)-1, 1001, 1001, set, false);
	auth_case((gid_t)-1, 1001, 1001, get, true);   /* reading is open */
	auth_case(4242, 1001, 1001, set, true);        /* member of the socket group */
	auth_case(4242, 1002, 1002, set, false);
	auth_case(4242, 1003, 1003, get, true);
	/* refused before the parameters are looked at */
	auth_case(4242, 1002, 1002, bad_params, false);
	(void) state;
}

/* Connection limits (issue 13 item 10): users without rights get at most
 * PROTO_MAX_CONNECTIONS_PER_UID each and all of them together all but
 * PROTO_RESERVED_CONNECTIONS; root and the socket group get the rest. A
 * newcomer to a full share takes the place of the longest-idle connection
 * of the uid holding the most, if that uid holds more than the newcomer
 * (issue 32 item 10: a seventh uid was locked out by six holding 8). */
TEST(test_connection_limits)
{
	_cleanup_proto_server_ struct proto_server *s = NULL;
	struct proto_peer p = { .pid = 1 };
	struct proto_conn *c;
	unsigned n = 0;

	assert_int_equal(proto_server_new(NULL, -1, test_methods, NULL, &s), 0);
	proto_server_set_auth_group(s, 4242);
	/* one uid: its limit */
	p.uid = p.gid = 1000;
	for (unsigned i = 0; i < PROTO_MAX_CONNECTIONS_PER_UID; i++, n++)
		assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_conn_new(s, -1, &p, &c), -EUSERS);
	/* more uids: up to the unprivileged share */
	for (uid_t u = 1001; n < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS; u++) {
		p.uid = p.gid = u;
		for (unsigned i = 0; i < PROTO_MAX_CONNECTIONS_PER_UID &&
		     n < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS; i++, n++)
			assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	}
	/* a fresh uid still gets in: one connection of a uid holding 8 goes */
	p.uid = p.gid = 2000;
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), n);
	assert_int_equal(proto_server_uid_connections(s, 2000), 1);
	/* and again, while others hold more than it */
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), n);
	assert_int_equal(proto_server_uid_connections(s, 2000), 2);
	/* the reserve: root, and a process with the socket group */
	p.uid = 0;
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	n++;
	p.uid = 2001, p.gid = 2001, p.n_groups = 1, p.groups[0] = 4242;
	for (; n < PROTO_MAX_CONNECTIONS; n++)
		assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), PROTO_MAX_CONNECTIONS);
	/* all full: root takes the place of a user without rights */
	p.uid = 0, p.n_groups = 0;
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_n_connections(s), PROTO_MAX_CONNECTIONS);
	(void) state;
}

/* Shares equal: nobody takes another's place; and root, with nothing
 * unprivileged to close, is refused at the total. */
TEST(test_connection_share_equal)
{
	_cleanup_proto_server_ struct proto_server *s = NULL;
	struct proto_peer p = { .pid = 1 };
	struct proto_conn *c;
	unsigned n;

	assert_int_equal(proto_server_new(NULL, -1, test_methods, NULL, &s), 0);
	for (n = 0; n < PROTO_MAX_CONNECTIONS - PROTO_RESERVED_CONNECTIONS; n++) {
		p.uid = p.gid = 1000 + n;
		assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	}
	p.uid = p.gid = 1000; /* holds 1, as everyone does */
	assert_int_equal(proto_conn_new(s, -1, &p, &c), -ENOSPC);
	p.uid = p.gid = 5000; /* holds none: one of the others' goes */
	assert_int_equal(proto_conn_new(s, -1, &p, &c), 0);
	assert_int_equal(proto_server_uid_connections(s, 5000), 1);
	assert_int_equal(proto_server_n_connections(s), n);

	_cleanup_proto_server_ struct proto_server *r = NULL;
	assert_int_equal(proto_server_new(NULL, -1, test_methods, NULL, &r), 0);
	p.uid = p.gid = 0;
	for (n = 0; n < PROTO_MAX_CONNECTIONS; n++)
		assert_int_equal(proto_conn_new(r, -1, &p, &c), 0);
	assert_int_equal(proto_conn_new(r, -1, &p, &c), -EMFILE);
	(void) state;
}

TEST_FIXTURE(test_auth_group_name, setup, teardown)
{
	struct fx *f = *state;

	/* the real group database: "root" exists everywhere */
	assert_int_equal(proto_server_set_auth_group_name(f->server, "root"), 0);
	assert_int_equal(proto_server_set_auth_group_name(f->server, "no-such-group-xyz"), -ENOENT);
}

TEST_GROUP(group_setup, NULL);
