/* SPDX-License-Identifier: MIT */
/*
 * src/lockstat.c - the statistics build's per-thread event counters (see src/lockstat.h). In the
 * normal build only the names and the zero-reporting readers exist.
 */
#include <string.h>

#include "lockstat.h"

const char *const lockstat_names[LOCKSTAT_NR] = {
#define LOCKSTAT_EVENT(name, desc) #name,
#include "lockstat_events.h"
#undef LOCKSTAT_EVENT
};

const char *const lockstat_descs[LOCKSTAT_NR] = {
#define LOCKSTAT_EVENT(name, desc) desc,
#include "lockstat_events.h"
#undef LOCKSTAT_EVENT
};

#if LOCKLAB_STATS
__thread uint64_t lockstat_counts[LOCKSTAT_NR];

bool lockstat_enabled(void)
{
	return true;
}

void lockstat_read(uint64_t out[LOCKSTAT_NR])
{
	memcpy(out, lockstat_counts, sizeof(lockstat_counts));
}

void lockstat_reset(void)
{
	memset(lockstat_counts, 0, sizeof(lockstat_counts));
}
#else
bool lockstat_enabled(void)
{
	return false;
}

void lockstat_read(uint64_t out[LOCKSTAT_NR])
{
	memset(out, 0, sizeof(uint64_t) * LOCKSTAT_NR);
}

void lockstat_reset(void)
{
}
#endif
