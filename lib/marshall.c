// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Converters between kernel structures and the verbs ones: kqp's own
 * (struct kqp_path_rec, kqp_qp_attr, kqp_ah_attr, kqp_qp_cap), and
 * libibverbs' exported ones for the uverbs and ucma structures.  kqp
 * speaks neither of those ABIs, but the functions are part of
 * libibverbs' exported interface (old librdmacm builds call them), so a
 * preloaded libkqp must answer for them too.
 *
 * Each struct's fields are listed once, in a macro every form of it
 * shares: the kernel forms name their fields as libibverbs does.  As
 * libibverbs', the QP converters from the kernel leave qp_state alone.
 */
#include <string.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "kqp_priv.h"

/*
 * A path record has the same fields, in the same byte orders, in every
 * form; the GIDs are unions in libibverbs' and arrays in the kernel's.
 */
#define KQP_PATH_REC_COPY(dst, src) do {				\
	(dst)->dlid = (src)->dlid;					\
	(dst)->slid = (src)->slid;					\
	(dst)->raw_traffic = (src)->raw_traffic;			\
	(dst)->flow_label = (src)->flow_label;				\
	(dst)->hop_limit = (src)->hop_limit;				\
	(dst)->traffic_class = (src)->traffic_class;			\
	(dst)->reversible = (src)->reversible;				\
	(dst)->numb_path = (src)->numb_path;				\
	(dst)->pkey = (src)->pkey;					\
	(dst)->sl = (src)->sl;						\
	(dst)->mtu_selector = (src)->mtu_selector;			\
	(dst)->mtu = (src)->mtu;					\
	(dst)->rate_selector = (src)->rate_selector;			\
	(dst)->rate = (src)->rate;					\
	(dst)->packet_life_time_selector =				\
		(src)->packet_life_time_selector;			\
	(dst)->packet_life_time = (src)->packet_life_time;		\
	(dst)->preference = (src)->preference;				\
} while (0)

/* From a kernel form (kqp's or ucma's) to struct ibv_sa_path_rec. */
#define KQP_PATH_REC_FROM_KERN(dst, src) do {				\
	memcpy((dst)->dgid.raw, (src)->dgid, sizeof((dst)->dgid.raw));	\
	memcpy((dst)->sgid.raw, (src)->sgid, sizeof((dst)->sgid.raw));	\
	KQP_PATH_REC_COPY(dst, src);					\
} while (0)

#define KQP_PATH_REC_TO_KERN(dst, src) do {				\
	memcpy((dst)->dgid, (src)->dgid.raw, sizeof((dst)->dgid));	\
	memcpy((dst)->sgid, (src)->sgid.raw, sizeof((dst)->sgid));	\
	KQP_PATH_REC_COPY(dst, src);					\
} while (0)

void kqp_path_rec_from_kern(struct ibv_sa_path_rec *dst,
			    const struct kqp_path_rec *src)
{
	KQP_PATH_REC_FROM_KERN(dst, src);
}

KQP_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					    struct ib_user_path_rec *src)
{
	KQP_PATH_REC_FROM_KERN(dst, src);
}

KQP_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					  struct ibv_sa_path_rec *src)
{
	KQP_PATH_REC_TO_KERN(dst, src);
}

/* A GRH's fields but the GID, between struct lvalues @d and @s. */
#define KQP_GRH_COPY(d, s) do {						\
	(d).flow_label = (s).flow_label;				\
	(d).sgid_index = (s).sgid_index;				\
	(d).hop_limit = (s).hop_limit;					\
	(d).traffic_class = (s).traffic_class;				\
} while (0)

/* An address vector's fields outside its GRH. */
#define KQP_AH_ATTR_COPY(dst, src) do {					\
	(dst)->dlid = (src)->dlid;					\
	(dst)->sl = (src)->sl;						\
	(dst)->src_path_bits = (src)->src_path_bits;			\
	(dst)->static_rate = (src)->static_rate;			\
	(dst)->is_global = (src)->is_global;				\
	(dst)->port_num = (src)->port_num;				\
} while (0)

/* kqp's address vector has its GRH fields inline. */
void kqp_ah_attr_to_kern(struct kqp_ah_attr *dst,
			 const struct ibv_ah_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid, src->grh.dgid.raw, sizeof(dst->dgid));
	KQP_GRH_COPY(*dst, src->grh);
	KQP_AH_ATTR_COPY(dst, src);
}

void kqp_ah_attr_from_kern(struct ibv_ah_attr *dst,
			   const struct kqp_ah_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->grh.dgid.raw, src->dgid, sizeof(src->dgid));
	KQP_GRH_COPY(dst->grh, *src);
	KQP_AH_ATTR_COPY(dst, src);
}

KQP_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					   struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	KQP_GRH_COPY(dst->grh, src->grh);
	KQP_AH_ATTR_COPY(dst, src);
}

/* A QP's attributes but its state, capabilities and address vectors. */
#define KQP_QP_ATTR_COPY(dst, src) do {					\
	(dst)->cur_qp_state = (src)->cur_qp_state;			\
	(dst)->path_mtu = (src)->path_mtu;				\
	(dst)->path_mig_state = (src)->path_mig_state;			\
	(dst)->qkey = (src)->qkey;					\
	(dst)->rq_psn = (src)->rq_psn;					\
	(dst)->sq_psn = (src)->sq_psn;					\
	(dst)->dest_qp_num = (src)->dest_qp_num;			\
	(dst)->qp_access_flags = (src)->qp_access_flags;		\
	(dst)->pkey_index = (src)->pkey_index;				\
	(dst)->alt_pkey_index = (src)->alt_pkey_index;			\
	(dst)->en_sqd_async_notify = (src)->en_sqd_async_notify;	\
	(dst)->sq_draining = (src)->sq_draining;			\
	(dst)->max_rd_atomic = (src)->max_rd_atomic;			\
	(dst)->max_dest_rd_atomic = (src)->max_dest_rd_atomic;		\
	(dst)->min_rnr_timer = (src)->min_rnr_timer;			\
	(dst)->port_num = (src)->port_num;				\
	(dst)->timeout = (src)->timeout;				\
	(dst)->retry_cnt = (src)->retry_cnt;				\
	(dst)->rnr_retry = (src)->rnr_retry;				\
	(dst)->alt_port_num = (src)->alt_port_num;			\
	(dst)->alt_timeout = (src)->alt_timeout;			\
} while (0)

/*
 * Capabilities: struct kqp_qp_cap has ibv_qp_cap's fields, and uverbs' QP
 * attributes have them inline.
 */
#define KQP_QP_CAP_COPY(dst, src) do {					\
	(dst)->max_send_wr = (src)->max_send_wr;			\
	(dst)->max_recv_wr = (src)->max_recv_wr;			\
	(dst)->max_send_sge = (src)->max_send_sge;			\
	(dst)->max_recv_sge = (src)->max_recv_sge;			\
	(dst)->max_inline_data = (src)->max_inline_data;		\
} while (0)

/* A QP's states and attribute masks reach the kernel as given. */
KQP_SAME_AS_IBV(KQP_QPS_RESET, IBV_QPS_RESET);
KQP_SAME_AS_IBV(KQP_QPS_INIT, IBV_QPS_INIT);
KQP_SAME_AS_IBV(KQP_QPS_RTR, IBV_QPS_RTR);
KQP_SAME_AS_IBV(KQP_QPS_RTS, IBV_QPS_RTS);
KQP_SAME_AS_IBV(KQP_QPS_SQD, IBV_QPS_SQD);
KQP_SAME_AS_IBV(KQP_QPS_SQE, IBV_QPS_SQE);
KQP_SAME_AS_IBV(KQP_QPS_ERR, IBV_QPS_ERR);
KQP_SAME_AS_IBV(KQP_QP_ATTR_STATE, IBV_QP_STATE);
KQP_SAME_AS_IBV(KQP_QP_ATTR_CUR_STATE, IBV_QP_CUR_STATE);
KQP_SAME_AS_IBV(KQP_QP_ATTR_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY);
KQP_SAME_AS_IBV(KQP_QP_ATTR_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
KQP_SAME_AS_IBV(KQP_QP_ATTR_PKEY_INDEX, IBV_QP_PKEY_INDEX);
KQP_SAME_AS_IBV(KQP_QP_ATTR_PORT, IBV_QP_PORT);
KQP_SAME_AS_IBV(KQP_QP_ATTR_QKEY, IBV_QP_QKEY);
KQP_SAME_AS_IBV(KQP_QP_ATTR_AV, IBV_QP_AV);
KQP_SAME_AS_IBV(KQP_QP_ATTR_PATH_MTU, IBV_QP_PATH_MTU);
KQP_SAME_AS_IBV(KQP_QP_ATTR_TIMEOUT, IBV_QP_TIMEOUT);
KQP_SAME_AS_IBV(KQP_QP_ATTR_RETRY_CNT, IBV_QP_RETRY_CNT);
KQP_SAME_AS_IBV(KQP_QP_ATTR_RNR_RETRY, IBV_QP_RNR_RETRY);
KQP_SAME_AS_IBV(KQP_QP_ATTR_RQ_PSN, IBV_QP_RQ_PSN);
KQP_SAME_AS_IBV(KQP_QP_ATTR_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
KQP_SAME_AS_IBV(KQP_QP_ATTR_ALT_PATH, IBV_QP_ALT_PATH);
KQP_SAME_AS_IBV(KQP_QP_ATTR_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
KQP_SAME_AS_IBV(KQP_QP_ATTR_SQ_PSN, IBV_QP_SQ_PSN);
KQP_SAME_AS_IBV(KQP_QP_ATTR_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
KQP_SAME_AS_IBV(KQP_QP_ATTR_PATH_MIG_STATE, IBV_QP_PATH_MIG_STATE);
KQP_SAME_AS_IBV(KQP_QP_ATTR_CAP, IBV_QP_CAP);
KQP_SAME_AS_IBV(KQP_QP_ATTR_DEST_QPN, IBV_QP_DEST_QPN);

void kqp_qp_attr_to_kern(struct kqp_qp_attr *dst, const struct ibv_qp_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->qp_state = src->qp_state;
	KQP_QP_ATTR_COPY(dst, src);
	kqp_ah_attr_to_kern(&dst->ah_attr, &src->ah_attr);
	kqp_ah_attr_to_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
}

/* Leaves @dst's qp_state and cap alone: the callers' to set. */
void kqp_qp_attr_from_kern(struct ibv_qp_attr *dst,
			   const struct kqp_qp_attr *src)
{
	KQP_QP_ATTR_COPY(dst, src);
	kqp_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	kqp_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
}

KQP_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					   struct ib_uverbs_qp_attr *src)
{
	KQP_QP_ATTR_COPY(dst, src);
	KQP_QP_CAP_COPY(&dst->cap, src);
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
}

void kqp_qp_cap_to_kern(struct kqp_qp_cap *dst, const struct ibv_qp_cap *src)
{
	memset(dst, 0, sizeof(*dst));
	KQP_QP_CAP_COPY(dst, src);
}

void kqp_qp_cap_from_kern(struct ibv_qp_cap *dst, const struct kqp_qp_cap *src)
{
	KQP_QP_CAP_COPY(dst, src);
}
