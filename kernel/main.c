// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * kqp: RDMA CM ids and kernel-owned QPs for userspace, over /dev/kqp.
 *
 * Module init and exit: the ib_client that tracks RDMA devices and the
 * misc device that userspace opens.
 */
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "kqp.h"

unsigned int kqp_max_backlog = 1024;
module_param_named(max_backlog, kqp_max_backlog, uint, 0644);
MODULE_PARM_DESC(max_backlog,
		 "Most connection requests a listener may have unreported (default 1024)");

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

	ret = kqp_device_init();
	if (ret)
		return ret;

	ret = misc_register(&kqp_misc);
	if (ret)
		goto err_device;
	return 0;

err_device:
	kqp_device_exit();
	return ret;
}

static void __exit kqp_exit(void)
{
	misc_deregister(&kqp_misc);
	kqp_device_exit();
}

module_init(kqp_init);
module_exit(kqp_exit);

MODULE_DESCRIPTION("RDMA CM ids and kernel-owned QPs for userspace");
MODULE_LICENSE("Dual BSD/GPL");
