/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * libkqp's own calls, beside the librdmacm and libibverbs API it
 * implements.
 */
#ifndef KQP_KQP_H
#define KQP_KQP_H

#include <rdma/kqp-abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What the process's session holds in the kernel: ids, PDs (default ones
 * apart), CQs, QPs, MRs, AHs.  Returns 0, or -1 with errno.
 */
int kqp_query_context(struct kqp_ctx_info *info);

#ifdef __cplusplus
}
#endif

#endif /* KQP_KQP_H */
