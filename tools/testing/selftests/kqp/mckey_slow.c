// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A preload for mckey.sh's senders, stock and kqp alike: mckey leaves the
 * group and destroys its QP right after posting its sends, unsignaled,
 * and under TCG rxe has sent few of them (often none) by then.  Leaving a
 * group waits a second first, the time real hardware needs a thousand
 * times over; nothing else changes.  Put it before libkqp.so in
 * LD_PRELOAD, so that it runs first and then calls the next one.
 */
#include <dlfcn.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int (*next)(struct rdma_cm_id *, struct sockaddr *);

	next = (int (*)(struct rdma_cm_id *, struct sockaddr *))
		dlsym(RTLD_NEXT, "rdma_leave_multicast");
	sleep(1);
	return next ? next(id, addr) : -1;
}
