/* SPDX-License-Identifier: MIT */
/*
 * tests/advise/lockstate.c - locklab-advise-lockstate: a program whose output depends on the lock,
 * for `locklab advise --check-output` (python/tests/test_advise.py).
 *
 *	locklab-advise-lockstate [--out FILE] [--strict]
 *
 * It locks a mutex and prints the fields of the held pthread_mutex_t that glibc's own mutex sets:
 * __lock, __count, __nusers and __kind (not __owner: a thread id, different in every run). glibc's
 * normal mutex counts its users in __nusers (1 while held); the LD_PRELOAD shim keeps every other
 * lock's state elsewhere in the 40 bytes and leaves __nusers 0 on a fresh mutex, so the line is the
 * same in every run on one lock and differs between glibc and every other lock - deterministically,
 * which is what the --check-output test needs. (Programs that read pthread internals exist;
 * they are not portable, and this one is deliberately so.)
 *
 *	--out FILE   write the line to FILE instead of stdout (for --check-output FILE)
 *	--strict     insist on glibc's layout: print why on stderr and exit 3 when __nusers is not 1
 *	             (a program that fails under one lock but not under glibc)
 *
 * Exit status 0, 3 (--strict on another lock), 1 when FILE cannot be written, 2 for bad arguments.
 */
#include <pthread.h>

#include "common.h"

int main(int argc, char **argv)
{
	pthread_mutex_t m;
	const char *out = NULL;
	int strict = 0, lock;
	unsigned count, nusers;
	int kind;
	FILE *f = stdout;

	advise_prog = "locklab-advise-lockstate";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--strict"))
			strict = 1;
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else
			advise_bad(argv[i], "--out FILE or --strict", argv[i]);
	}
	pthread_mutex_init(&m, NULL);
	pthread_mutex_lock(&m);
	lock = m.__data.__lock;
	count = m.__data.__count;
	nusers = m.__data.__nusers;
	kind = m.__data.__kind;
	pthread_mutex_unlock(&m);
	pthread_mutex_destroy(&m);
	if (strict && nusers != 1) {
		fprintf(stderr, "%s: a held mutex has __nusers = %u, glibc's has 1: this program relies "
			"on glibc's pthread_mutex_t layout\n", advise_prog, nusers);
		return 3;
	}
	if (out && !(f = fopen(out, "w"))) {
		perror(out);
		return 1;
	}
	fprintf(f, "%s: held mutex: __lock=%d __count=%u __nusers=%u __kind=%d\n", advise_prog, lock,
		count, nusers, kind);
	if (out && fclose(f)) {
		perror(out);
		return 1;
	}
	return 0;
}
