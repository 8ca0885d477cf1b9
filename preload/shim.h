/* SPDX-License-Identifier: MIT */
/*
 * preload/shim.h - internal interfaces of liblocklab-preload.so (preload/shim.c, preload/stat.c).
 *
 * The shim replaces glibc's pthread_mutex_* and pthread_cond_* in an unmodified, dynamically linked
 * program (LD_PRELOAD) with locklab's locks; docs/shim.md is the user's description. This header
 * holds what the two halves share: the lock profile's entry points (stat.c, LOCKLAB_STAT=1), the
 * clock, and the per-thread id cache.
 *
 * Nothing here is exported from the library: the version scripts (preload/<arch>.map) export only the
 * pthread symbols, with glibc's symbol versions, and the locklab_preload_* introspection calls.
 */
#ifndef LOCKLAB_PRELOAD_SHIM_H
#define LOCKLAB_PRELOAD_SHIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define SHIM_HIDDEN __attribute__((visibility("hidden")))

/* ---- misuse the shim detects and counts (the profile's "misuse" object, in this order) ---------- */
#define SHIM_MISUSE_LIST(X)							\
	X(unlock_unlocked)	/* unlock of a mutex nobody holds (double unlock) */	\
	X(unlock_not_owner)	/* unlock by a thread that does not hold it */		\
	X(destroy_locked)	/* pthread_mutex_destroy of a held mutex: EBUSY */	\
	X(relock)		/* errorcheck mutex locked again by its owner: EDEADLK */ \
	X(use_after_destroy)	/* lock/unlock of a destroyed mutex: EINVAL */

enum shim_misuse {
#define X(name) SHIM_MISUSE_##name,
	SHIM_MISUSE_LIST(X)
#undef X
	SHIM_MISUSE_N
};

enum shim_obj { SHIM_OBJ_MUTEX = 0, SHIM_OBJ_COND = 1 };

/* How an object's call site was recorded. */
enum shim_site { SHIM_SITE_INIT = 0, SHIM_SITE_FIRST_USE = 1 };

/* ---- the profile (preload/stat.c) ----------------------------------------------------------------- */

/* True when LOCKLAB_STAT=1: written once by shim_init() before it publishes the mode (release), read
 * after the acquire of the init state or through shim_slow (see shim.c). */
extern SHIM_HIDDEN bool shim_stat_on;

struct shim_stat;

/* Reads LOCKLAB_STAT_FILE and sets up the table; returns 0 or an exit status after one line on stderr. */
SHIM_HIDDEN int shim_stat_init(const char *lock_name);
/*
 * The entry of object `obj`, created on first sight with `site` (a return address in the program) and
 * `how`; `kind` is the mutex's __kind (or the condvar's clock) when created. NULL when the table is
 * full (the object is counted in "objects_dropped").
 */
SHIM_HIDDEN struct shim_stat *shim_stat_get(const void *obj, enum shim_obj type, int kind, void *site,
					    enum shim_site how);
/* An object was (re)initialised by an init call at `site`. */
SHIM_HIDDEN void shim_stat_inited(const void *obj, enum shim_obj type, int kind, void *site);
SHIM_HIDDEN void shim_stat_destroyed(struct shim_stat *e);

/* A lock/trylock/timedlock call got the mutex; contended: the first attempt failed, it waited wait_ns. */
SHIM_HIDDEN void shim_stat_acquired(struct shim_stat *e, bool contended, uint64_t wait_ns);
/* A recursive mutex was locked again by its owner (counted, no hold time). */
SHIM_HIDDEN void shim_stat_recursive(struct shim_stat *e);
/* trylock found it held; timedlock gave up. */
SHIM_HIDDEN void shim_stat_trylock_busy(struct shim_stat *e);
SHIM_HIDDEN void shim_stat_timedout(struct shim_stat *e, uint64_t wait_ns);
/* The holder releases it (hold time ends). */
SHIM_HIDDEN void shim_stat_released(struct shim_stat *e);
SHIM_HIDDEN void shim_stat_misuse(struct shim_stat *e, enum shim_misuse what);

/* Condition variables. */
SHIM_HIDDEN void shim_stat_cond_waited(struct shim_stat *e, uint64_t wait_ns, bool timedout);
SHIM_HIDDEN void shim_stat_cond_signalled(struct shim_stat *e, bool broadcast, bool had_waiters);

/* In the child after fork(): start a fresh profile (the parent's counts stay the parent's). */
SHIM_HIDDEN void shim_stat_fork_child(void);

/* ---- shared helpers (preload/shim.c) ------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds (vDSO). */
static inline uint64_t shim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The name of the lock in use ("lk_mutex", "glibc", ...). */
SHIM_HIDDEN const char *shim_lock_name(void);

/* Print "locklab-preload: <msg>" on stderr with write(2) (no stdio: usable before main and at exit). */
SHIM_HIDDEN void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* LOCKLAB_PRELOAD_SHIM_H */
