/* SPDX-License-Identifier: MIT */
/*
 * docs/results/park-grow-2core/grow.c - how long one growth of the parking lot's table takes, timed
 * from outside through the public API: lk_park_reserve(2N) on a table of N buckets, single-threaded,
 * best and median of ROUNDS processes' worth (run.sh starts a fresh process per round, since a
 * table never shrinks). grow() holds every bucket of the old table from its first lock to the
 * publication of the new one (src/park_impl.h, "Growth"), so the old buckets' hold is at most this
 * time less the allocation and clearing of the new table, which it does before locking anything;
 * the second column times that allocation alone (posix_memalign + memset of the same size) to
 * bound the hold from below.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <locklab/park.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void)
{
	struct lk_park_stats st;

	if (lk_park_reserve(16))
		return 1;
	for (size_t n = 16; n < ((size_t)1 << 20); n *= 2) {
		lk_park_get_stats(&st);
		size_t bytes = st.table_bytes * 2;
		double t0 = now_us();
		void *p = NULL;

		if (posix_memalign(&p, 64, bytes))
			return 1;
		memset(p, 0, bytes);
		double alloc = now_us() - t0;

		free(p);
		t0 = now_us();
		if (lk_park_reserve(2 * n))
			return 1;
		double grow = now_us() - t0;

		printf("%zu %.1f %.1f\n", n, grow, alloc);
	}
	return 0;
}
