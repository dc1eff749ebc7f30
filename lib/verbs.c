// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The libibverbs calls CM programs make on PDs, MRs and AHs, and the
 * device queries.  Their objects live in the kernel, in the process's
 * session table.  As in libibverbs, calls that return an int return 0 or
 * an errno value (ibv_query_gid() and ibv_query_pkey(): -1 and errno),
 * and those that return a pointer return NULL with errno set.
 */
#include <endian.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kqp_priv.h"

KQP_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct kqp_alloc_pd cmd = {
		.size = sizeof(cmd),
		.device_index = kqp_dev_index(context),
	};
	struct kqp_lpd *pd;
	int ret;

	pd = kqp_ioctl_new(context->cmd_fd, KQP_IOCTL_ALLOC_PD, &cmd,
			   sizeof(*pd), &ret);
	if (!pd) {
		errno = -ret;
		return NULL;
	}
	pd->ibv.context = context;
	pd->ibv.handle = cmd.out_pd;
	return &pd->ibv;
}

KQP_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct kqp_dealloc_pd cmd = { .size = sizeof(cmd), .pd = ibpd->handle };
	struct kqp_lpd *pd = container_of(ibpd, struct kqp_lpd, ibv);
	int ret;

	/* The default PD belongs to the ids that use it. */
	if (pd->is_default)
		return EBUSY;
	ret = kqp_ioctl(ibpd->context->cmd_fd, KQP_IOCTL_DEALLOC_PD, &cmd);
	if (ret)
		return -ret;
	free(pd);
	return 0;
}

KQP_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					   size_t length, uint64_t iova,
					   unsigned int access)
{
	struct kqp_reg_mr cmd = {
		.size = sizeof(cmd),
		.pd = pd->handle,
		.access = access,
		.addr = (uintptr_t)addr,
		.length = length,
		.iova = iova,
	};
	struct kqp_lmr *mr;
	int ret;

	mr = kqp_ioctl_new(pd->context->cmd_fd, KQP_IOCTL_REG_MR, &cmd,
			   sizeof(*mr), &ret);
	if (!mr) {
		errno = -ret;
		return NULL;
	}
	mr->ibv.context = pd->context;
	mr->ibv.pd = pd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = cmd.out_mr;
	mr->ibv.lkey = cmd.out_lkey;
	mr->ibv.rkey = cmd.out_rkey;
	return &mr->ibv;
}

/*
 * <infiniband/verbs.h> turns these names into macros over inlines that
 * end up here; the exported symbols themselves are what binaries link.
 */
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port

KQP_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					  size_t length, uint64_t iova,
					  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, access);
}

KQP_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				     size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, access);
}

KQP_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct kqp_dereg_mr cmd = { .size = sizeof(cmd), .mr = ibmr->handle };
	int ret;

	ret = kqp_ioctl(ibmr->context->cmd_fd, KQP_IOCTL_DEREG_MR, &cmd);
	if (ret)
		return -ret;
	free(container_of(ibmr, struct kqp_lmr, ibv));
	return 0;
}

KQP_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					struct ibv_ah_attr *attr)
{
	struct kqp_create_ah cmd = { .size = sizeof(cmd), .pd = pd->handle };
	struct kqp_lah *ah;
	int ret;

	kqp_ah_attr_to_kern(&cmd.attr, attr);
	ah = kqp_ioctl_new(pd->context->cmd_fd, KQP_IOCTL_CREATE_AH, &cmd,
			   sizeof(*ah), &ret);
	if (!ah) {
		errno = -ret;
		return NULL;
	}
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	ah->ibv.handle = cmd.out_ah;
	return &ah->ibv;
}

/* One GID table entry, unused ones too (all zero); 0 or -errno. */
static int kqp_gid_entry(struct ibv_context *context, uint32_t port_num,
			 uint32_t index, struct ibv_gid_entry *entry)
{
	struct kqp_query_gid q = {
		.size = sizeof(q),
		.device_index = kqp_dev_index(context),
		.port_num = port_num,
		.index = index,
	};
	int ret;

	ret = kqp_ioctl(context->cmd_fd, KQP_IOCTL_QUERY_GID, &q);
	if (ret)
		return ret;
	memset(entry, 0, sizeof(*entry));
	memcpy(entry->gid.raw, q.out_gid, sizeof(entry->gid.raw));
	entry->gid_index = index;
	entry->port_num = port_num;
	entry->gid_type = q.out_gid_type;
	return 0;
}

/* The index of @gid of @type in the port's table, or -errno. */
static int kqp_find_gid(struct ibv_context *context, uint8_t port_num,
			const union ibv_gid *gid, uint32_t type)
{
	struct ibv_gid_entry e;
	uint32_t index;
	int ret;

	for (index = 0;; index++) {
		ret = kqp_gid_entry(context, port_num, index, &e);
		if (ret)
			return ret == -EINVAL ? -ENOENT : ret;
		if (e.gid_type == type && !memcmp(&e.gid, gid, sizeof(*gid)))
			return index;
	}
}

/* An IPv4 address as the GID RoCE v2 gives it: ::ffff:a.b.c.d. */
static void kqp_gid_from_ipv4(union ibv_gid *gid, const uint8_t *addr)
{
	memset(gid->raw, 0, 10);
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(gid->raw + 12, addr, 4);
}

/*
 * What the 40 bytes before a UD receive's payload hold: 6 for a GRH, 4 for
 * the IPv4 header RoCE v2 over IPv4 puts in their last 20 bytes, 0 for
 * neither.  A GRH has version 6 in its first nibble; in front of an IPv4
 * header the first 20 bytes are zero or stale, so anything else there
 * means IPv4 if the header says version 4.  Only when byte 0 reads as a
 * GRH may the IPv4 header still be the real one, and then its checksum
 * decides.  The checksum cannot decide alone: a sender need not fill it
 * in, and rxe's loopback path does not.
 */
static int kqp_grh_version(const struct ibv_grh *grh)
{
	const uint8_t *ip = (const uint8_t *)grh + 20;
	uint32_t sum = 0;
	int i;

	if (be32toh(grh->version_tclass_flow) >> 28 != 6)
		return ip[0] >> 4 == 4 ? 4 : 0;
	/* RoCE v2 sends no IPv4 options: the header is 5 words. */
	if (ip[0] != 0x45)
		return 6;
	for (i = 0; i < 20; i += 2)
		sum += (ip[i] << 8) | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff ? 4 : 6;
}

/*
 * The address vector that answers the sender of @wc.  On RoCE the GRH (or
 * the IPv4 header in its place) names both ends: the sender's GID becomes
 * the destination, and ours picks the source GID index.
 */
KQP_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
				   uint8_t port_num, struct ibv_wc *wc,
				   struct ibv_grh *grh,
				   struct ibv_ah_attr *ah_attr)
{
	struct ibv_port_attr port;
	union ibv_gid ours;
	uint32_t type;
	int ret, version;

	memset(ah_attr, 0, sizeof(*ah_attr));
	memset(&port, 0, sizeof(port));
	ret = ibv_query_port(context, port_num,
			     (struct _compat_ibv_port_attr *)&port);
	if (ret)
		return ret;
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH)) {
		/* RoCE always carries one; IB needs none. */
		if (port.link_layer == IBV_LINK_LAYER_ETHERNET)
			return kqp_err(EINVAL);
		return 0;
	}
	if (!grh)
		return kqp_err(EINVAL);

	ah_attr->is_global = 1;
	ah_attr->grh.hop_limit = 0xff;
	/* Only RoCE v2 puts an IPv4 header in the GRH's place. */
	version = port.link_layer == IBV_LINK_LAYER_ETHERNET ?
			  kqp_grh_version(grh) : 6;
	if (version == 4) {
		const uint8_t *ip = (const uint8_t *)grh + 20;

		kqp_gid_from_ipv4(&ah_attr->grh.dgid, ip + 12);
		kqp_gid_from_ipv4(&ours, ip + 16);
		ah_attr->grh.traffic_class = ip[1];
		type = IBV_GID_TYPE_ROCE_V2;
	} else if (version == 6) {
		uint32_t flow = be32toh(grh->version_tclass_flow);

		ah_attr->grh.dgid = grh->sgid;
		ours = grh->dgid;
		ah_attr->grh.traffic_class = (flow >> 20) & 0xff;
		ah_attr->grh.flow_label = flow & 0xfffff;
		type = port.link_layer == IBV_LINK_LAYER_ETHERNET ?
			       IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
	} else {
		return kqp_err(EPROTONOSUPPORT);
	}
	ret = kqp_find_gid(context, port_num, &ours, type);
	/* A RoCE v1 packet carries a GRH too. */
	if (ret == -ENOENT && type == IBV_GID_TYPE_ROCE_V2 && version == 6)
		ret = kqp_find_gid(context, port_num, &ours,
				   IBV_GID_TYPE_ROCE_V1);
	if (ret < 0)
		return kqp_err(-ret);
	ah_attr->grh.sgid_index = ret;
	return 0;
}

KQP_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
						struct ibv_wc *wc,
						struct ibv_grh *grh,
						uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

KQP_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct kqp_destroy_ah cmd = { .size = sizeof(cmd), .ah = ibah->handle };
	int ret;

	ret = kqp_ioctl(ibah->context->cmd_fd, KQP_IOCTL_DESTROY_AH, &cmd);
	if (ret)
		return -ret;
	free(container_of(ibah, struct kqp_lah, ibv));
	return 0;
}

/* The device's attributes in @a; 0 or -errno. */
static int kqp_query_device(struct ibv_context *context,
			    struct ibv_device_attr *a)
{
	struct kqp_query_device q = {
		.size = sizeof(q),
		.device_index = kqp_dev_index(context),
	};
	int ret;

	ret = kqp_ioctl(context->cmd_fd, KQP_IOCTL_QUERY_DEVICE, &q);
	if (ret)
		return ret;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%u.%u.%u",
		 (unsigned int)(q.out_fw_ver >> 32),
		 (unsigned int)(q.out_fw_ver >> 16) & 0xffff,
		 (unsigned int)q.out_fw_ver & 0xffff);
	a->node_guid = q.out_node_guid;
	a->sys_image_guid = q.out_sys_image_guid;
	a->max_mr_size = q.out_max_mr_size;
	a->page_size_cap = q.out_page_size_cap;
	a->vendor_id = q.out_vendor_id;
	a->vendor_part_id = q.out_vendor_part_id;
	a->hw_ver = q.out_hw_ver;
	a->max_qp = q.out_max_qp;
	a->max_qp_wr = q.out_max_qp_wr;
	a->device_cap_flags = (unsigned int)q.out_device_cap_flags;
	a->max_sge = q.out_max_sge;
	a->max_sge_rd = q.out_max_sge_rd;
	a->max_cq = q.out_max_cq;
	a->max_cqe = q.out_max_cqe;
	a->max_mr = q.out_max_mr;
	a->max_pd = q.out_max_pd;
	a->max_qp_rd_atom = q.out_max_qp_rd_atom;
	a->max_ee_rd_atom = q.out_max_ee_rd_atom;
	a->max_res_rd_atom = q.out_max_res_rd_atom;
	a->max_qp_init_rd_atom = q.out_max_qp_init_rd_atom;
	a->max_ee_init_rd_atom = q.out_max_ee_init_rd_atom;
	a->atomic_cap = q.out_atomic_cap;
	a->max_ee = q.out_max_ee;
	a->max_rdd = q.out_max_rdd;
	a->max_mw = q.out_max_mw;
	a->max_raw_ipv6_qp = q.out_max_raw_ipv6_qp;
	a->max_raw_ethy_qp = q.out_max_raw_ethy_qp;
	a->max_mcast_grp = q.out_max_mcast_grp;
	a->max_mcast_qp_attach = q.out_max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = q.out_max_total_mcast_qp_attach;
	a->max_ah = q.out_max_ah;
	a->max_srq = q.out_max_srq;
	a->max_srq_wr = q.out_max_srq_wr;
	a->max_srq_sge = q.out_max_srq_sge;
	a->max_pkeys = q.out_max_pkeys;
	a->local_ca_ack_delay = q.out_local_ca_ack_delay;
	a->phys_port_cnt = q.out_phys_port_cnt;
	return 0;
}

KQP_EXPORT int ibv_query_device(struct ibv_context *context,
				struct ibv_device_attr *a)
{
	return -kqp_query_device(context, a);
}

/*
 * The context op behind the inline ibv_query_device_ex(), with
 * libibverbs' checks of @input and @attr_size.  orig_attr is
 * ibv_query_device()'s; of the rest, only what kqp implements: the
 * extended flags are the basic ones (kqp has none of the upper bits:
 * no ODP, flush or atomic write), phys_port_cnt_ex the port count, and
 * the capabilities of features kqp lacks (ODP, timestamps, TSO, RSS, WQs,
 * packet pacing, raw packet, tag matching, CQ moderation, device memory)
 * zero.  Returns 0 or an errno value.
 */
int kqp_query_device_ex(struct ibv_context *context,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int ret;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	ret = kqp_query_device(context, &a.orig_attr);
	if (ret)
		return -ret;
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	/* A caller built against an older struct gets the fields it has. */
	if (attr_size > sizeof(a))
		memset((char *)attr + sizeof(a), 0, attr_size - sizeof(a));
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

/*
 * The port's attributes into @a_out, of @len bytes: a caller built against
 * an older struct ibv_port_attr passes a shorter one, and gets only the
 * fields it has, as libibverbs gives them.
 */
int kqp_query_port_ex(struct ibv_context *context, uint8_t port_num,
		      struct ibv_port_attr *a_out, size_t len)
{
	struct kqp_query_port q = {
		.size = sizeof(q),
		.device_index = kqp_dev_index(context),
		.port_num = port_num,
	};
	struct ibv_port_attr attr = {}, *a = &attr;
	int ret;

	ret = kqp_ioctl(context->cmd_fd, KQP_IOCTL_QUERY_PORT, &q);
	if (ret)
		return -ret;
	a->state = q.out_state;
	a->max_mtu = q.out_max_mtu;
	a->active_mtu = q.out_active_mtu;
	a->gid_tbl_len = q.out_gid_tbl_len;
	a->port_cap_flags = q.out_port_cap_flags;
	a->max_msg_sz = q.out_max_msg_sz;
	a->bad_pkey_cntr = q.out_bad_pkey_cntr;
	a->qkey_viol_cntr = q.out_qkey_viol_cntr;
	a->pkey_tbl_len = q.out_pkey_tbl_len;
	a->lid = q.out_lid;
	a->sm_lid = q.out_sm_lid;
	a->lmc = q.out_lmc;
	a->max_vl_num = q.out_max_vl_num;
	a->sm_sl = q.out_sm_sl;
	a->subnet_timeout = q.out_subnet_timeout;
	a->init_type_reply = q.out_init_type_reply;
	a->active_width = q.out_active_width;
	a->active_speed = q.out_active_speed;
	a->phys_state = q.out_phys_state;
	a->link_layer = q.out_link_layer;
	a->flags = q.out_flags;
	a->port_cap_flags2 = q.out_port_cap_flags2;
	if (len > sizeof(attr)) {
		memset(a_out, 0, len);
		len = sizeof(attr);
	}
	memcpy(a_out, &attr, len);
	return 0;
}

/*
 * The exported ibv_query_port(), for binaries that call it directly:
 * libibverbs' IBVERBS_1.1 version, whose struct ends at flags (before
 * port_cap_flags2 was added), so that is all it writes.  The inline
 * ibv_query_port() of <infiniband/verbs.h> calls kqp_query_port_ex().
 */
KQP_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *compat)
{
	return kqp_query_port_ex(context, port_num,
				 (struct ibv_port_attr *)compat,
				 offsetof(struct ibv_port_attr,
					  port_cap_flags2));
}

KQP_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			     int index, union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int ret;

	/* As libibverbs: this one is -1 and errno. */
	if (index < 0)
		return kqp_err(EINVAL);
	ret = kqp_gid_entry(context, port_num, index, &e);
	if (ret)
		return kqp_err(-ret);
	*gid = e.gid;
	return 0;
}

KQP_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			      int index, __be16 *pkey)
{
	struct kqp_query_pkey q = {
		.size = sizeof(q),
		.device_index = kqp_dev_index(context),
		.port_num = port_num,
		.index = index,
	};
	int ret;

	if (index < 0)
		return kqp_err(EINVAL);
	ret = kqp_ioctl(context->cmd_fd, KQP_IOCTL_QUERY_PKEY, &q);
	if (ret)
		return kqp_err(-ret);
	*pkey = htobe16(q.out_pkey);
	return 0;
}

KQP_EXPORT int ibv_get_pkey_index(struct ibv_context *context,
				  uint8_t port_num, __be16 pkey)
{
	__be16 entry;
	int i;

	/* The table ends where the kernel refuses the index. */
	for (i = 0;; i++) {
		if (ibv_query_pkey(context, port_num, i, &entry))
			return -1;
		if (entry == pkey)
			return i;
	}
}

/*
 * The netdev a RoCE GID belongs to, as sysfs names it; 0 where it has
 * none (InfiniBand) or sysfs cannot say.
 */
static uint32_t kqp_gid_ifindex(struct ibv_context *context,
				uint32_t port_num, uint32_t index)
{
	char dir[PATH_MAX], name[IF_NAMESIZE + 1], file[32];

	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s/ports/%u/gid_attrs/ndevs",
		 ibv_get_sysfs_path(), context->device->name, port_num);
	snprintf(file, sizeof(file), "%u", index);
	if (ibv_read_sysfs_file(dir, file, name, sizeof(name)) <= 0)
		return 0;
	return if_nametoindex(name);
}

static bool kqp_gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid, &zero, sizeof(zero));
}

/*
 * What the inline ibv_query_gid_ex() calls.  @entry_size is the caller's
 * sizeof(struct ibv_gid_entry); a smaller one gets the fields it has.
 * Returns 0 or an errno value: ENODATA for an unused entry, EINVAL past
 * the table, as the kernel answers libibverbs.
 */
KQP_EXPORT int _ibv_query_gid_ex(struct ibv_context *context,
				 uint32_t port_num, uint32_t gid_index,
				 struct ibv_gid_entry *entry, uint32_t flags,
				 size_t entry_size)
{
	struct ibv_gid_entry e;
	int ret;

	if (flags || !entry_size)
		return EINVAL;
	ret = kqp_gid_entry(context, port_num, gid_index, &e);
	if (ret)
		return -ret;
	if (kqp_gid_is_zero(&e.gid))
		return ENODATA;
	e.ndev_ifindex = kqp_gid_ifindex(context, port_num, gid_index);
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

/*
 * What the inline ibv_query_gid_table() calls: every used entry of every
 * port, in order.  Returns their number, or a negative errno value:
 * -EINVAL when they do not fit in @max_entries.
 */
KQP_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					struct ibv_gid_entry *entries,
					size_t max_entries, uint32_t flags,
					size_t entry_size)
{
	struct kqp_ibv_device *kdev = to_kctx(context)->kdev;
	size_t n = 0, len = entry_size < sizeof(struct ibv_gid_entry) ?
				    entry_size : sizeof(struct ibv_gid_entry);
	uint32_t port, i;
	int ret;

	if (flags || !entry_size)
		return -EINVAL;
	for (port = 1; port <= kdev->phys_port_cnt; port++) {
		struct kqp_query_port q = {
			.size = sizeof(q),
			.device_index = kdev->index,
			.port_num = port,
		};

		ret = kqp_ioctl(context->cmd_fd, KQP_IOCTL_QUERY_PORT, &q);
		if (ret)
			return ret;
		for (i = 0; i < q.out_gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			ret = kqp_gid_entry(context, port, i, &e);
			if (ret)
				return ret;
			if (kqp_gid_is_zero(&e.gid))
				continue;
			if (n == max_entries)
				return -EINVAL;
			e.ndev_ifindex = kqp_gid_ifindex(context, port, i);
			memcpy((char *)entries + n * entry_size, &e, len);
			n++;
		}
	}
	return n;
}

/*
 * The kernel pins registered memory with ib_umem, and kernels since 5.13
 * copy pinned pages for a child at fork() instead of sharing them, so
 * there is nothing to prepare: what libibverbs reports as "unneeded".
 */
KQP_EXPORT int ibv_fork_init(void)
{
	return 0;
}

KQP_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

KQP_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

KQP_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/*
 * IBVERBS_PRIVATE_34 is libibverbs' interface to its providers, except
 * that rdma-core's own ibv_devinfo calls this one.  The values are
 * libibverbs' sysfs GID types: 0 for IB and RoCE v1, 1 for RoCE v2.  An
 * unused entry reads as 0.  Returns 0, or -1 for an index past the
 * table.
 */
KQP_EXPORT int ibv_query_gid_type(struct ibv_context *context,
				  uint8_t port_num, unsigned int index,
				  int *type)
{
	struct ibv_gid_entry e;
	int ret;

	ret = kqp_gid_entry(context, port_num, index, &e);
	if (ret)
		return kqp_err(-ret);
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? 1 : 0;
	return 0;
}
