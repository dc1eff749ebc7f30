// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A program an administrator's user builds against the installed
 * libkqp-dev: cc check-deb-prog.c $(pkg-config --cflags --libs kqp).  Uses
 * librdmacm's API and libkqp's own kqp/kqp.h (with the uapi header it
 * includes).
 *
 *   prog loaded     /dev/kqp is there: an event channel, and the session
 *                   kqp_query_context() describes
 *   prog unloaded   no /dev/kqp: rdma_create_event_channel() fails with
 *                   ENOENT, as libkqp promises
 *
 * Exits 0 when libkqp did what was expected.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <kqp/kqp.h>

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct kqp_ctx_info info;

	if (argc != 2 || (strcmp(argv[1], "loaded") && strcmp(argv[1], "unloaded"))) {
		fprintf(stderr, "usage: %s loaded|unloaded\n", argv[0]);
		return 2;
	}
	errno = 0;
	ch = rdma_create_event_channel();
	if (!strcmp(argv[1], "unloaded")) {
		if (ch || errno != ENOENT) {
			fprintf(stderr, "prog: rdma_create_event_channel: %p, errno %d, not NULL and ENOENT\n",
				(void *)ch, errno);
			return 1;
		}
		printf("prog: no /dev/kqp: rdma_create_event_channel: %s\n", strerror(errno));
		return 0;
	}
	if (!ch) {
		perror("prog: rdma_create_event_channel");
		return 1;
	}
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (kqp_query_context(&info)) {
		perror("prog: kqp_query_context");
		return 1;
	}
	printf("prog: event channel fd %d; session: %u files, %u CM ids, %u QPs\n",
	       ch->fd, info.out_files, info.out_cm_ids, info.out_qps);
	rdma_destroy_event_channel(ch);
	return 0;
}
