/* SPDX-License-Identifier: MIT */
/*
 * tests/advise/quiet.c - locklab-advise-quiet: a program whose locks cannot matter, for
 * `locklab advise` (python/tests/test_advise.py).
 *
 *	locklab-advise-quiet [--iters N]
 *
 * One thread takes one mutex N times (default 2000000) around a checksum update. The lock profile
 * shows N acquisitions and none contended - a single thread cannot contend - so its total wait is
 * exactly 0 and `locklab advise` must say that locks do not matter, naming this mutex (created by
 * pthread_mutex_init in main: the profile's call site is that line) as the hottest lock.
 *
 * Output: "locklab-advise-quiet: iters=N checksum=0x..." (deterministic). Exit 2 for bad arguments.
 */
#include <inttypes.h>
#include <pthread.h>

#include "common.h"

int main(int argc, char **argv)
{
	uint64_t iters = 2000000, sum = 0;
	pthread_mutex_t m;

	advise_prog = "locklab-advise-quiet";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters"))
			iters = advise_uint(argc, argv, &i, 1, 1000000000);
		else
			advise_bad(argv[i], "--iters", argv[i]);
	}
	pthread_mutex_init(&m, NULL);
	for (uint64_t i = 0; i < iters; i++) {
		pthread_mutex_lock(&m);
		sum += advise_mix(i, 2);
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_destroy(&m);
	printf("%s: iters=%" PRIu64 " checksum=0x%" PRIx64 "\n", advise_prog, iters, sum);
	return 0;
}
