// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * kqp: RDMA CM ids and kernel-owned QPs for userspace, over /dev/kqp.
 *
 * Module init and exit: the ib_client that tracks RDMA devices and the
 * misc device that userspace opens.
 */
#include <linux/debugfs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/seq_file.h>

#include "kqp.h"
#include "account.h"
#include "core.h"
#include "cq.h"
#include "qp_cache.h"

unsigned int kqp_max_backlog = 1024;
module_param_named(max_backlog, kqp_max_backlog, uint, 0644);
MODULE_PARM_DESC(max_backlog,
		 "Most connection requests a listener may have unreported (default 1024)");

unsigned int kqp_max_objects = 65536;
module_param_named(max_objects, kqp_max_objects, uint, 0644);
MODULE_PARM_DESC(max_objects,
		 "Most handles (ids, PDs, CQs, QPs, MRs, AHs) one user's contexts may hold together (default 65536)");

unsigned int kqp_max_mcast = 64;
module_param_named(max_mcast, kqp_max_mcast, uint, 0644);
MODULE_PARM_DESC(max_mcast,
		 "Most multicast groups one CM id may join (default 64)");

unsigned long kqp_max_mr_bytes;
module_param_named(max_mr_bytes, kqp_max_mr_bytes, ulong, 0644);
MODULE_PARM_DESC(max_mr_bytes,
		 "Most bytes one user's contexts may have registered together, in whole pages (default 0: an eighth of RAM)");

unsigned long kqp_max_queue_bytes;
module_param_named(max_queue_bytes, kqp_max_queue_bytes, ulong, 0644);
MODULE_PARM_DESC(max_queue_bytes,
		 "Most bytes of kernel memory, as kqp estimates it, one user's CQs, QPs and SRQs may take together (default 0: a sixteenth of RAM)");

static struct dentry *kqp_debugfs;

/*
 * The @pct percentile of the callback-to-ring delays, as the upper bound
 * of the log2 bucket it falls in (so within a factor of two); 0 if none.
 */
static u64 kqp_stats_quantile(const struct kqp_cq_stats *st, unsigned int pct)
{
	u64 total = 0, seen = 0, want;
	int b;

	for (b = 0; b < KQP_CQ_LAT_BUCKETS; b++)
		total += st->lat_hist[b];
	if (!total)
		return 0;
	want = div_u64(total * pct + 99, 100);
	for (b = 0; b < KQP_CQ_LAT_BUCKETS; b++) {
		seen += st->lat_hist[b];
		if (seen >= want)
			break;
	}
	return 2ULL << min(b, KQP_CQ_LAT_BUCKETS - 1);
}

/*
 * /sys/kernel/debug/kqp/completions: the completion path, from the
 * kernel CQ's callback to the entries being visible in the ring, over
 * every CQ, live or destroyed: polls, entries, the delay's sum, maximum,
 * and median and 99th percentile (to a power of two).
 */
static int kqp_completions_show(struct seq_file *m, void *v)
{
	struct kqp_cq_stats st;

	kqp_cq_stats_read(&st);
	seq_printf(m, "callbacks %llu\n", st.calls);
	seq_printf(m, "completions %llu\n", st.cqes);
	seq_printf(m, "callback_ns_total %llu\n", st.lat_ns_sum);
	seq_printf(m, "callback_ns_max %llu\n", st.lat_ns_max);
	seq_printf(m, "callback_ns_p50 %llu\n", kqp_stats_quantile(&st, 50));
	seq_printf(m, "callback_ns_p99 %llu\n", kqp_stats_quantile(&st, 99));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kqp_completions);

/*
 * /sys/kernel/debug/kqp/objects: one line per object type, "TYPE LIVE
 * MADE", over every context, then "contexts LIVE".
 */
static int kqp_objects_show(struct seq_file *m, void *v)
{
	static const char * const names[KQP_OBJ_MAX] = {
		[KQP_OBJ_CM_ID] = "cm_ids", [KQP_OBJ_PD] = "pds",
		[KQP_OBJ_CQ] = "cqs", [KQP_OBJ_QP] = "qps",
		[KQP_OBJ_MR] = "mrs", [KQP_OBJ_AH] = "ahs",
		[KQP_OBJ_SRQ] = "srqs",
	};
	unsigned int type;
	u32 live;
	u64 made;

	for (type = KQP_OBJ_CM_ID; type < KQP_OBJ_MAX; type++) {
		kqp_objects_read(type, &live, &made);
		seq_printf(m, "%s %u %llu\n", names[type], live, made);
	}
	seq_printf(m, "contexts %u\n", kqp_contexts_read());
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kqp_objects);

/* /sys/kernel/debug/kqp/resources: see kqp_device_resources_show(). */
static int kqp_resources_show(struct seq_file *m, void *v)
{
	return kqp_device_resources_show(m, v);
}
DEFINE_SHOW_ATTRIBUTE(kqp_resources);

struct workqueue_struct *kqp_wq;

static struct miscdevice kqp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KQP_MODNAME,
	.fops = &kqp_fops,
	/* Like /dev/infiniband/rdma_cm: any user may open it. */
	.mode = 0666,
};

static int __init kqp_init(void)
{
	int ret;

	/*
	 * Not WQ_HIGHPRI: the drains run for processes, outside their
	 * nice level and cgroup, and must not run ahead of everything else.
	 */
	kqp_wq = alloc_workqueue("kqp", 0, 0);
	if (!kqp_wq)
		return -ENOMEM;
	ret = kqp_device_init();
	if (ret)
		goto err_wq;

	ret = misc_register(&kqp_misc);
	if (ret)
		goto err_device;
	kqp_debugfs = debugfs_create_dir(KQP_MODNAME, NULL);
	debugfs_create_file("completions", 0444, kqp_debugfs, NULL,
			    &kqp_completions_fops);
	debugfs_create_file("objects", 0444, kqp_debugfs, NULL,
			    &kqp_objects_fops);
	debugfs_create_file("resources", 0444, kqp_debugfs, NULL,
			    &kqp_resources_fops);
	kqp_kapi_init(kqp_debugfs);
	kqp_qpc_debugfs_init(kqp_debugfs);
	return 0;

err_device:
	kqp_device_exit();
err_wq:
	destroy_workqueue(kqp_wq);
	return ret;
}

static void __exit kqp_exit(void)
{
	debugfs_remove_recursive(kqp_debugfs);
	misc_deregister(&kqp_misc);
	kqp_kapi_exit();
	kqp_device_exit();
	/* Every QP is gone; a drain_work may still be returning. */
	destroy_workqueue(kqp_wq);
	kqp_users_exit();
}

module_init(kqp_init);
module_exit(kqp_exit);

MODULE_DESCRIPTION("RDMA CM ids and kernel-owned QPs for userspace");
MODULE_LICENSE("Dual BSD/GPL");
