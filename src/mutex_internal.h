/* SPDX-License-Identifier: MIT */
/*
 * src/mutex_internal.h - what lk_cond (src/cond.c) does to an lk_mutex's word besides locking it.
 * Internal header, hidden symbols. Both run under the bucket lock of &m->word (a requeue's callbacks
 * hold it; a waiter's timed_out() runs under it). Transitions CP, CR and CT of src/mutex.c.
 */
#ifndef LOCKLAB_SRC_MUTEX_INTERNAL_H
#define LOCKLAB_SRC_MUTEX_INTERNAL_H

#include <stdbool.h>

#include "locklab/mutex.h"

/* CP: if m is locked, set PARKED (tagged with this process's fork generation) and return true. */
__attribute__((visibility("hidden"))) bool lkm_mark_parked_if_locked(lk_mutex_t *m);

/* n condvar waiters were appended to m's queue: each is owed a handoff; set PARKED if asked. */
__attribute__((visibility("hidden"))) void lkm_requeued(lk_mutex_t *m, unsigned n, bool set_parked);

/* A requeued condvar waiter timed out on m's queue: it leaves the owed count, and PARKED if last. */
__attribute__((visibility("hidden"))) void lkm_requeued_timed_out(lk_mutex_t *m, bool was_last_thread);

#endif /* LOCKLAB_SRC_MUTEX_INTERNAL_H */
