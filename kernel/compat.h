/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What differs between the kernels kqp builds for (6.1 to 6.12 and on).
 */
#ifndef KQP_COMPAT_H
#define KQP_COMPAT_H

#include <linux/export.h>
#include <linux/mm.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void kqp_vm_flags_mod(struct vm_area_struct *vma,
				    vm_flags_t set, vm_flags_t clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
}
#else
#define kqp_vm_flags_mod vm_flags_mod
#endif

/*
 * kqp's exports live in the symbol namespace KQP, named with
 * EXPORT_SYMBOL_NS_GPL(sym, KQP_NS).  The namespace argument became a
 * string literal in 6.13; before, it was a bare name the macro stringified
 * (after expanding it, so KQP_NS works there too).  Importers are
 * unaffected: see MODULE_IMPORT_KQP() in <linux/kqp.h>.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define KQP_NS "KQP"
#else
#define KQP_NS KQP
#endif

/*
 * The table's poller is a vhost_task (poller.c): from 6.4, with the
 * handle_sigkill argument kqp uses from 6.11.  Elsewhere (6.1) the command
 * is EOPNOTSUPP.
 */
#if IS_ENABLED(CONFIG_VHOST_TASK) && \
	LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define KQP_HAVE_POLLER 1
#endif

#endif /* KQP_COMPAT_H */
