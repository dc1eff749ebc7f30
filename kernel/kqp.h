/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp internal definitions shared by the module's objects.
 */
#ifndef KQP_H
#define KQP_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <rdma/ib_verbs.h>
#include <rdma/kqp-abi.h>

#define KQP_MODNAME "kqp"

/**
 * struct kqp_device - an RDMA device as kqp tracks it
 * @ibdev: the device; valid until the ib_client remove callback returns
 *
 * Created by the ib_client add callback and destroyed by its remove
 * callback; both run under kqp_devices_rwsem held for writing, so anyone
 * holding it for reading sees a live @ibdev.
 */
struct kqp_device {
	struct ib_device *ibdev;
};

/**
 * struct kqp_file - the context behind one open of /dev/kqp
 * @filp: the open file
 */
struct kqp_file {
	struct file *filp;
};

/**
 * struct kqp_ucmd - one ioctl being executed
 * @kfile: the file it was issued on
 * @ubuffer: the caller's argument
 * @user_size: the caller's idea of the argument's size
 * @cmd: kernel copy of the argument, zero-extended to the kernel's size
 */
struct kqp_ucmd {
	struct kqp_file *kfile;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int kqp_ucmd_respond(struct kqp_ucmd *ucmd, size_t cmd_len);

/* device.c */
int kqp_device_init(void);
void kqp_device_exit(void);
int kqp_query(struct kqp_ucmd *ucmd);

/* file.c */
extern const struct file_operations kqp_fops;

#endif /* KQP_H */
