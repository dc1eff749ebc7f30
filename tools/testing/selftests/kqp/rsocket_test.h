/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers rsocket.c (built against libkqp and rdma-core) and
 * rsocket_kqp.c share: the rsocket API only.
 */
#ifndef KQP_RSOCKET_TEST_H
#define KQP_RSOCKET_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>

/* A thread's raccept() on *@arg, which becomes its result or -errno. */
static inline void *accept_one(void *arg)
{
	int *s = arg, ret;

	ret = raccept(*s, NULL, NULL);
	*s = ret < 0 ? -errno : ret;
	return NULL;
}

/*
 * nc's connect: a new rsocket, non-blocking, rconnect()ed to @sin while a
 * thread accepts on @l, then rpoll() for POLLOUT for up to @ms.  *@c is
 * the new rsocket, *@a the accepted one (or -errno), *@revents what
 * rpoll() said.  rpoll()'s result: 1 once connected, 0 on timeout; -1 and
 * errno when a step before it failed (*@c or *@a may then be -1).
 */
static inline int rs_connect_polled(int l, const struct sockaddr_in *sin,
				    int ms, int *c, int *a, short *revents)
{
	struct pollfd p = { .events = POLLOUT };
	pthread_t t;
	int ret;

	*a = -1;
	*revents = 0;
	*c = rsocket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0 || rfcntl(*c, F_SETFL, O_NONBLOCK))
		return -1;
	*a = l;
	ret = pthread_create(&t, NULL, accept_one, a);
	if (ret) {
		*a = -1;
		errno = ret;
		return -1;
	}
	ret = rconnect(*c, (const struct sockaddr *)sin, sizeof(*sin));
	if (ret && errno == EINPROGRESS)
		ret = 0;
	if (!ret) {
		p.fd = *c;
		ret = rpoll(&p, 1, ms);
	}
	pthread_join(t, NULL);
	*revents = p.revents;
	return ret;
}

#endif /* KQP_RSOCKET_TEST_H */
