/* SPDX-License-Identifier: MIT */
/*
 * src/lockstat.h - slow-path event counters for the statistics build. Internal header: the library's
 * sources count, the lab reads; nothing here is exported (the symbols are not lk_*, see locklab.map).
 *
 * Build:   cmake -S . -B build-stats -DLOCKLAB_STATS=ON   (or `make build-stats`)
 *
 * In the normal build lockstat_inc() and lockstat_add() expand to nothing: the lock paths contain
 * no counting instruction, no branch and no TLS access (zero cost), and lockstat_read() reports
 * zeros with lockstat_enabled() false. In the statistics build every thread counts into its own
 * array (__thread, as lockref's per-thread statistics), so counting adds one increment of a line
 * only that thread writes: no shared cache line, no atomic.
 *
 * Events: the X-macro list in src/lockstat_events.h, LOCKSTAT_<name> in the enum below.
 *
 *	lockstat_inc(mutex_park);			count one event in the calling thread
 *	lockstat_add(mutex_spin_ns_won, ns);		add an amount (not evaluated when off)
 *	lockstat_read(out);				copy the calling thread's counters
 *	lockstat_reset();				zero the calling thread's counters
 *
 * A reader that wants a process-wide total has every thread read its own counters before it exits
 * (the lab's workers do so when their loop ends) and sums them: counters die with their thread.
 */
#ifndef LOCKLAB_SRC_LOCKSTAT_H
#define LOCKLAB_SRC_LOCKSTAT_H

#include <stdbool.h>
#include <stdint.h>

enum lockstat_event {
#define LOCKSTAT_EVENT(name, desc) LOCKSTAT_##name,
#include "lockstat_events.h"
#undef LOCKSTAT_EVENT
	LOCKSTAT_NR
};

extern const char *const lockstat_names[LOCKSTAT_NR];
extern const char *const lockstat_descs[LOCKSTAT_NR];

#if LOCKLAB_STATS
extern __thread uint64_t lockstat_counts[LOCKSTAT_NR];
/* plain increment: the array is private to the calling thread */
#define lockstat_inc(name) ((void)lockstat_counts[LOCKSTAT_##name]++)
#define lockstat_add(name, n) ((void)(lockstat_counts[LOCKSTAT_##name] += (uint64_t)(n)))
#else
#define lockstat_inc(name) ((void)0)
#define lockstat_add(name, n) ((void)0)
#endif

bool lockstat_enabled(void);			/* built with LOCKLAB_STATS */
void lockstat_read(uint64_t out[LOCKSTAT_NR]);	/* the calling thread's counters (zeros when disabled) */
void lockstat_reset(void);

#endif /* LOCKLAB_SRC_LOCKSTAT_H */
