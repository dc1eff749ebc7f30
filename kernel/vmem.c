// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory the kernel shares with a process through mmap(): a CQ's ring,
 * a QP's submission rings.
 *
 * It is vmalloc() memory, and each mapping holds a reference on its
 * pages, so the pages live until the object that made them and every
 * mapping of them let go, whatever order that happens in.  The charge
 * to the user's max_queue_bytes follows the pages, not the object: a
 * process that destroys its CQs and QPs but keeps their rings mapped
 * still pays for them (the memory cgroup does anyway, GFP_KERNEL_ACCOUNT).
 * So a struct kqp_vmem is counted: one reference for its object, one for
 * each VMA that maps it (vm_ops open and close, which also see splits,
 * mremap() and exit).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "kqp.h"
#include "account.h"

/**
 * struct kqp_vmem - mappable memory, charged until its last user is gone
 * @ref: the object's reference, and one per VMA
 * @mem: the memory, zeroed at allocation
 * @bytes: its size, page aligned
 * @user: charged @bytes, and held until they are uncharged
 */
struct kqp_vmem {
	refcount_t ref;
	void *mem;
	size_t bytes;
	struct kqp_user *user;
};

/*
 * @bytes (page aligned) of zeroed memory, charged to the caller's user
 * and cgroup.  ENOMEM past max_queue_bytes, or without memory.
 */
struct kqp_vmem *kqp_vmem_alloc(struct kqp_ucontext *uctx, size_t bytes)
{
	struct kqp_vmem *v;
	int ret;

	v = kzalloc(sizeof(*v), GFP_KERNEL_ACCOUNT);
	if (!v)
		return ERR_PTR(-ENOMEM);
	v->user = kqp_user_charge(uctx, bytes);
	if (IS_ERR(v->user)) {
		ret = PTR_ERR(v->user);
		goto err_free;
	}
	/* The caller chose the size: its failure is not the log's business. */
	v->mem = __vmalloc(bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
				  __GFP_NOWARN);
	if (!v->mem) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	v->bytes = bytes;
	refcount_set(&v->ref, 1);
	return v;

err_uncharge:
	kqp_user_uncharge(v->user, bytes);
err_free:
	kfree(v);
	return ERR_PTR(ret);
}

void *kqp_vmem_addr(const struct kqp_vmem *v)
{
	return v->mem;
}

size_t kqp_vmem_size(const struct kqp_vmem *v)
{
	return v->bytes;
}

/* Drop a reference; the last one frees and uncharges.  Process context. */
void kqp_vmem_put(struct kqp_vmem *v)
{
	if (!v || !refcount_dec_and_test(&v->ref))
		return;
	vfree(v->mem);
	kqp_user_uncharge(v->user, v->bytes);
	kfree(v);
}

/* A VMA split off, or copied by mremap(): one more mapping. */
static void kqp_vmem_vm_open(struct vm_area_struct *vma)
{
	struct kqp_vmem *v = vma->vm_private_data;

	refcount_inc(&v->ref);
}

static void kqp_vmem_vm_close(struct vm_area_struct *vma)
{
	kqp_vmem_put(vma->vm_private_data);
}

static const struct vm_operations_struct kqp_vmem_vm_ops = {
	.open = kqp_vmem_vm_open,
	.close = kqp_vmem_vm_close,
};

/*
 * Map all of @v: the length must be its size, the mapping shared, never
 * executable, and not inherited at fork().  The caller holds a reference
 * (its object's) for the duration.
 */
int kqp_vmem_mmap(struct kqp_vmem *v, struct vm_area_struct *vma)
{
	size_t off;
	int ret;

	if (vma->vm_end - vma->vm_start != v->bytes ||
	    !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* VM_IO: MADV_DOFORK cannot undo VM_DONTCOPY, GUP cannot pin it. */
	kqp_vm_flags_mod(vma, VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY | VM_IO,
			 VM_MAYEXEC);
	for (off = 0; off < v->bytes; off += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page((char *)v->mem + off));
		/* mmap() unmaps what was inserted, and calls no close. */
		if (ret)
			return ret;
	}
	refcount_inc(&v->ref);
	vma->vm_private_data = v;
	vma->vm_ops = &kqp_vmem_vm_ops;
	return 0;
}
