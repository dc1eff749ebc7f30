// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma_getaddrinfo() for IP addresses, and the endpoint helpers built on
 * it, with librdmacm's rules for turning hints into getaddrinfo() hints
 * and back.  Name resolution through ibacm or the SA (RAI_SA, AF_IB
 * service records) is not offered: EOPNOTSUPP.
 */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/rdma_verbs.h>

#include "kqp_priv.h"

static void kqp_rai_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;

	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}

	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

/* 0 or -ENOMEM, as kqp_ai_to_rai(). */
static int kqp_dup_addr(struct sockaddr **dst, socklen_t *dst_len,
			const struct sockaddr *src, socklen_t src_len)
{
	*dst = malloc(src_len);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, src_len);
	*dst_len = src_len;
	return 0;
}

static int kqp_ai_to_rai(struct rdma_addrinfo *rai,
			 const struct rdma_addrinfo *hints,
			 const struct addrinfo *ai)
{
	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	rai->ai_family = ai->ai_family;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname)
			rai->ai_src_canonname = strdup(ai->ai_canonname);
		return kqp_dup_addr(&rai->ai_src_addr, &rai->ai_src_len,
				    ai->ai_addr, ai->ai_addrlen);
	}
	if (ai->ai_canonname)
		rai->ai_dst_canonname = strdup(ai->ai_canonname);
	return kqp_dup_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
			    ai->ai_addr, ai->ai_addrlen);
}

KQP_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *rai;

	while (res) {
		rai = res;
		res = res->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}

/*
 * As librdmacm: -1 with errno for our own failures, but getaddrinfo()'s
 * own EAI_* code when name resolution fails.
 */
KQP_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints,
				struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	struct addrinfo ai_hints, *ai;
	int ret = 0;

	if (!res || (!service && !node && !hints))
		return kqp_err(EINVAL);
#ifdef RAI_SA
	if (hints && (hints->ai_flags & RAI_SA))
		return kqp_err(EOPNOTSUPP);
#endif

	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return kqp_err(ENOMEM);

	if (node || service) {
		if (hints) {
			kqp_rai_to_ai(&ai_hints, hints);
			ret = getaddrinfo(node, service, &ai_hints, &ai);
		} else {
			ret = getaddrinfo(node, service, NULL, &ai);
		}
		if (ret)
			goto err;
		ret = kqp_ai_to_rai(rai, hints ? hints : &nohints, ai);
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = kqp_dup_addr(&rai->ai_dst_addr, &rai->ai_dst_len,
					   hints->ai_dst_addr, hints->ai_dst_len);
	}
	if (ret)
		goto err_errno;

	if (!rai->ai_src_len && hints && hints->ai_src_len) {
		ret = kqp_dup_addr(&rai->ai_src_addr, &rai->ai_src_len,
				   hints->ai_src_addr, hints->ai_src_len);
		if (ret)
			goto err_errno;
	}
	*res = rai;
	return 0;

err_errno:
	ret = kqp_err(-ret);
err:
	rdma_freeaddrinfo(rai);
	return ret;
}

KQP_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			      struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct kqp_id *kid;
	int ret;

	if (!id || !res)
		return kqp_err(EINVAL);

	ret = kqp_create_id_qpt(NULL, &cm_id, NULL, res->ai_port_space,
				res->ai_qp_type);
	if (ret)
		return kqp_err(-ret);
	kid = to_kid(cm_id);

	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cm_id, res->ai_src_addr);
		if (ret)
			goto err;
		if (pd)
			cm_id->pd = pd;
		/* Each request rdma_get_request() returns gets a QP like it. */
		if (qp_init_attr) {
			kid->qp_init_attr = malloc(sizeof(*qp_init_attr));
			if (!kid->qp_init_attr) {
				ret = kqp_err(ENOMEM);
				goto err;
			}
			*kid->qp_init_attr = *qp_init_attr;
			kid->qp_init_attr->qp_type = res->ai_qp_type;
		}
		goto out;
	}

	ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr,
				2000);
	if (ret)
		goto err;
	ret = rdma_resolve_route(cm_id, 2000);
	if (ret)
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = res->ai_qp_type;
		ret = rdma_create_qp(cm_id, pd, qp_init_attr);
		if (ret)
			goto err;
	}

	if (res->ai_connect_len) {
		kid->connect = malloc(res->ai_connect_len);
		if (!kid->connect) {
			ret = kqp_err(ENOMEM);
			goto err;
		}
		memcpy(kid->connect, res->ai_connect, res->ai_connect_len);
		kid->connect_len = res->ai_connect_len;
	}
out:
	*id = cm_id;
	return 0;

err:
	rdma_destroy_ep(cm_id);
	return ret;
}

KQP_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
