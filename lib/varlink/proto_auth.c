/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Authorization on the flashd control socket: the peer's credentials as
 * the kernel saw them at connect, and who may change the board. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "proto-internal.h"

/* The supplementary groups of the peer: at most PROTO_PEER_MAX_GROUPS,
 * with keep (the socket group) first when the process is in it. */
static int peer_groups(int fd, gid_t keep, struct proto_peer *p)
{
	_cleanup_free_ gid_t *g = NULL;
	socklen_t len = 64 * sizeof(gid_t);
	size_t n;

	for (;;) {
		free(g);
		g = malloc(len);
		if (!g)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) == 0)
			break;
		if (errno != ERANGE || len > 65536 * sizeof(gid_t))
			return -errno;
	}
	n = len / sizeof(gid_t);
	for (size_t i = 0; i < n; i++)
		if (g[i] == keep && keep != (gid_t)-1)
			p->groups[p->n_groups++] = keep;
	for (size_t i = 0; i < n && p->n_groups < PROTO_PEER_MAX_GROUPS; i++)
		if (g[i] != keep || keep == (gid_t)-1)
			p->groups[p->n_groups++] = g[i];
	return 0;
}

int proto_auth_peer_from_socket(int fd, gid_t auth_group, struct proto_peer *ret)
{
	struct proto_peer p = { 0 };
	struct ucred uc;
	socklen_t l = sizeof(uc);
	int r;

	if (fd < 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) < 0)
		return -errno;
	p.pid = uc.pid;
	p.uid = uc.uid;
	p.gid = uc.gid;
	r = peer_groups(fd, auth_group, &p);
	if (r < 0)
		return r;
	*ret = p;
	return 0;
}

/* ---- authorization ---- */

int proto_peer_authorized(const struct proto_peer *peer, gid_t group)
{
	if (peer->uid == 0)
		return 1;
	if (group == (gid_t)-1)
		return 0;
	if (peer->gid == group)
		return 1;
	for (unsigned i = 0; i < peer->n_groups && i < PROTO_PEER_MAX_GROUPS; i++)
		if (peer->groups[i] == group)
			return 1;
	return 0;
}
