/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_reserve_nomem.c - lk_park_reserve says -ENOMEM when the table it asks for cannot
 * be allocated, and the lot keeps working on the table it has (the review found it said 0: a caller
 * sizing the lot up front was told it had 2^24 buckets and had 16).
 *
 * A child process limits its address space to what it uses plus 128 MiB (RLIMIT_AS) and reserves
 * 2^24 buckets (1 GiB or more): -ENOMEM, the table unchanged; then 4096 buckets: 0, grown; then a
 * thread parks and is unparked with its token. Skipped under TSan and ASan, which reserve terabytes
 * of address space for their shadow memory (a limit cannot leave room for them and none for the
 * table), and where the limit does not bite (an emulator that maps the guest's memory itself).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <locklab/park.h>

#include "lktest.h"

static _Atomic uint32_t word;
static _Atomic int parked;

static void count_parked(void *ctx)
{
	(void)ctx;
	atomic_store_explicit(&parked, 1, memory_order_release);	/* release: test handshake */
}

static const struct lk_park_ops ops = { .before_sleep = count_parked };

static void *parker(void *arg)
{
	lk_token_t tok = 0;

	CHECK_EQ(lk_park(&word, &ops, NULL, 0, NULL, CLOCK_MONOTONIC, &tok), LK_PARK_UNPARKED);
	*(lk_token_t *)arg = tok;
	return NULL;
}

static lk_token_t give_five(void *ctx, struct lk_unpark_result r)
{
	(void)ctx;
	(void)r;
	return 5;
}

/* The child's work; its exit status: 0 pass, 77 skip, 1 fail. */
static int child(void)
{
	long pages = 0, page = sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/statm", "r");
	struct lk_park_stats before, after;

	if (!f || fscanf(f, "%ld", &pages) != 1)
		return 77;
	fclose(f);
	struct rlimit rl = { .rlim_cur = (rlim_t)pages * (rlim_t)page + ((rlim_t)128 << 20) };

	rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_AS, &rl))
		return 77;
	void *probe = malloc((size_t)512 << 20);

	if (probe) {	/* the limit does not bite here */
		free(probe);
		fprintf(stderr, "skip: RLIMIT_AS does not limit allocations here\n");
		return 77;
	}
	CHECK_EQ(lk_park_reserve(16), 0);	/* the first table (created at first use) */
	lk_park_get_stats(&before);
	CHECK(before.buckets >= 16);
	CHECK_EQ(lk_park_reserve((size_t)1 << 24), -ENOMEM);
	lk_park_get_stats(&after);
	CHECK_EQ(after.buckets, before.buckets);
	CHECK_EQ(after.resizes, before.resizes);
	CHECK_EQ(lk_park_reserve(4096), 0);
	lk_park_get_stats(&after);
	CHECK(after.buckets >= 4096);
	CHECK_EQ(after.resizes, before.resizes + 1);

	pthread_t th;
	lk_token_t got = 0;

	CHECK_EQ(pthread_create(&th, NULL, parker, &got), 0);
	while (!atomic_load_explicit(&parked, memory_order_acquire))	/* acquire: count_parked */
		usleep(1000);
	CHECK_EQ(lk_unpark_one(&word, give_five, NULL), 1);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(got, 5);
	return lkt_failures ? 1 : 0;
}

int main(void)
{
	int status;

#if defined(LOCKLAB_SANITIZE_thread) || defined(LOCKLAB_SANITIZE_address)
	fprintf(stderr, "skip: TSan and ASan reserve terabytes of address space\n");
	return 77;
#endif
	lkt_watchdog(60);
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child());
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return 77;
	CHECK_EQ(WEXITSTATUS(status), 0);
	return lkt_done("test_park_reserve_nomem");
}
