/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_fork.c - fork() while other threads contend on the lot.
 *
 * The parent keeps hammer threads (never-sleeping waits) and producer/consumer pairs running, so at
 * the moment of fork() bucket locks are likely held and queues hold threads that will not exist in
 * the child (measured: a bucket lock in 27 of 40 forks, a parked consumer in 38 of 40). Each child
 * must still be able to park and unpark (a producer/consumer handoff) and to grow the table (many
 * new threads parked at once, then unparked by address), and must find nobody parked on the
 * addresses the parent's consumers sleep on (the child's handler emptied the queues: without it,
 * nothing here looked at those addresses, and a lot that kept the parent's queues passed).
 * Repeated a few times.
 */
#define LKT_FORKS_WITH_THREADS	/* lktest.h: TSan options, CHILD_THREADS */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>

#include <locklab/park.h>

#include "lktest.h"


#define NHAMMER 2
#define NPAIRS 2
#define CHILD_IDLE 40

static _Atomic bool stop;
static _Atomic uint32_t words[64];
static _Atomic uint64_t hammer_ops;

struct pair {
	_Atomic uint32_t count;
	_Atomic bool done;
	uint64_t target;	/* 0 = until stop */
	uint64_t posted, taken;	/* owner-written, read after join */
} __attribute__((aligned(64)));

static bool never(void *ctx)
{
	(void)ctx;
	return false;
}

static const struct lk_park_ops never_ops = { .validate = never };

static void *hammer(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;

	/* relaxed: a stop flag polled in a loop */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		lk_park(&words[rng % 64], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL);
		atomic_fetch_add_explicit(&hammer_ops, 1, memory_order_relaxed);	/* relaxed: a count */
	}
	return NULL;
}

static bool pair_wait_ok(void *ctx)
{
	struct pair *p = ctx;

	/* relaxed: under the bucket lock, ordered against the waker by the lot's fences */
	return atomic_load_explicit(&p->count, memory_order_relaxed) == 0 &&
	       !atomic_load_explicit(&p->done, memory_order_relaxed);
}

static const struct lk_park_ops pair_ops = { .validate = pair_wait_ok };

static void *pair_consumer(void *arg)
{
	struct pair *p = arg;

	for (;;) {
		uint32_t v = atomic_load_explicit(&p->count, memory_order_relaxed);	/* relaxed: hint */

		if (v) {
			/* acquire: pairs with the producer's release increment */
			if (atomic_compare_exchange_weak_explicit(&p->count, &v, v - 1, memory_order_acquire,
								  memory_order_relaxed))
				p->taken++;
			continue;
		}
		/* acquire: the producer's last post precedes its release store of done */
		if (atomic_load_explicit(&p->done, memory_order_acquire) &&
		    atomic_load_explicit(&p->count, memory_order_relaxed) == 0)
			return NULL;
		lk_park(&p->count, &pair_ops, p, 0, NULL, CLOCK_MONOTONIC, NULL);
	}
}

static void *pair_producer(void *arg)
{
	struct pair *p = arg;

	/* relaxed: stop flag polling */
	while (p->target ? p->posted < p->target : !atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* release: pairs with the consumer's acquire CAS */
		atomic_fetch_add_explicit(&p->count, 1, memory_order_release);
		p->posted++;
		lk_unpark_one(&p->count, NULL, NULL);
		if (p->posted & 1)
			while (atomic_load_explicit(&p->count, memory_order_relaxed) != 0)	/* relaxed: poll */
				sched_yield();
	}
	/* release: pairs with the consumer's acquire load of done */
	atomic_store_explicit(&p->done, true, memory_order_release);
	lk_unpark_all(&p->count, 0);
	return NULL;
}

static struct pair pairs[NPAIRS];	/* the parent's */
static _Atomic uint32_t idle_words[CHILD_IDLE];
static _Atomic int nparked;

static void idle_parked(void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&nparked, 1, memory_order_release);	/* release: test handshake */
}

static const struct lk_park_ops idle_ops = { .before_sleep = idle_parked };

static void *idle_main(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	lk_token_t tok = 0;

	if (lk_park(&idle_words[i], &idle_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &tok) != LK_PARK_UNPARKED ||
	    tok != 900 + i)
		_exit(3);
	return NULL;
}

static lk_token_t tok_cb(void *ctx, struct lk_unpark_result r)
{
	(void)r;
	return (lk_token_t)(uintptr_t)ctx;
}

/* The child: single-threaded at first; everything here must work. Exit status = failures. */
static int child(void)
{
	struct pair p = { .target = lkt_sanitized() ? 500 : 3000 };
	pthread_t pc, pp, idle[CHILD_IDLE];
	struct lk_park_stats s0, s1;

	alarm(30);	/* the inherited watchdog is not inherited: arm our own */
	lk_park_get_stats(&s0);
	if (s0.live_threads != 1)	/* only the forking thread (it parked before forking) */
		return 10;
	/* every address the parent's threads were hammering or sleeping on: no bucket left locked */
	for (unsigned i = 0; i < 64; i++)
		if (lk_park(&words[i], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL) != LK_PARK_INVALID)
			return 14;
	if (lk_unpark_all(&words[0], 0) != 0)	/* the parent's queued threads are gone */
		return 15;
	for (unsigned i = 0; i < NPAIRS; i++)	/* where the parent's consumers sleep: nobody */
		if (lk_unpark_all(&pairs[i].count, 0) != 0)
			return 19;
	if (!CHILD_THREADS) {
		struct timespec past = { 0, 0 };

		if (lk_park_reserve(s0.buckets * 4) != 0)
			return 16;
		lk_park_get_stats(&s1);
		if (s1.resizes <= s0.resizes || s1.buckets < s0.buckets * 4)
			return 17;
		if (lk_park(&words[1], NULL, NULL, 0, &past, CLOCK_MONOTONIC, NULL) != LK_PARK_TIMEDOUT)
			return 18;
		return 0;
	}
	pthread_create(&pc, NULL, pair_consumer, &p);
	pthread_create(&pp, NULL, pair_producer, &p);
	pthread_join(pp, NULL);
	pthread_join(pc, NULL);
	if (p.posted != p.taken)
		return 11;
	for (unsigned i = 0; i < CHILD_IDLE; i++) {
		pthread_create(&idle[i], NULL, idle_main, (void *)(uintptr_t)i);
		while (atomic_load_explicit(&nparked, memory_order_acquire) < (int)i + 1)	/* acquire: handshake */
			sched_yield();
	}
	lk_park_get_stats(&s1);
	if (s1.resizes <= s0.resizes || s1.buckets < LK_PARK_BUCKETS_PER_THREAD * (CHILD_IDLE + 1))
		return 12;
	for (unsigned i = 0; i < CHILD_IDLE; i++)
		if (lk_unpark_one(&idle_words[i], tok_cb, (void *)(uintptr_t)(900 + i)) != 1)
			return 13;
	for (unsigned i = 0; i < CHILD_IDLE; i++)
		pthread_join(idle[i], NULL);
	return 0;
}

int main(void)
{
	pthread_t ht[NHAMMER], pc[NPAIRS], pp[NPAIRS];
	int rounds = lkt_sanitized() ? 3 : 8;

#if defined(LOCKLAB_SANITIZE_address)
	/* Not a locklab limitation: gcc 12's libasan takes none of its allocator locks around fork(),
	 * so a child forked while another thread is inside malloc deadlocks on its first allocation of
	 * that size class (seen in CI: every child thread blocked in
	 * SizeClassAllocator64::GetFromAllocator, called from pthread_create). glibc's own malloc is
	 * fork-safe; this test runs in the normal, TSan and UBSan builds. */
	printf("test_park_fork: skipped under AddressSanitizer (libasan's allocator is not fork-safe "
	       "with other threads running)\n");
	return 77;
#endif
	lkt_watchdog(120);
	CHECK_EQ(lk_park(&words[0], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);
	for (unsigned i = 0; i < NHAMMER; i++)
		pthread_create(&ht[i], NULL, hammer, (void *)(uintptr_t)(i + 1));
	for (unsigned i = 0; i < NPAIRS; i++) {
		pthread_create(&pc[i], NULL, pair_consumer, &pairs[i]);
		pthread_create(&pp[i], NULL, pair_producer, &pairs[i]);
	}
	for (int r = 0; r < rounds; r++) {
		uint64_t h = atomic_load_explicit(&hammer_ops, memory_order_relaxed);	/* relaxed: poll */
		int status = 0;
		pid_t pid;

		while (atomic_load_explicit(&hammer_ops, memory_order_relaxed) < h + 2000)	/* relaxed: poll */
			sched_yield();
		pid = fork();
		if (pid == 0)
			_exit(child());
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status));
		if (WIFEXITED(status))
			CHECK_EQ(WEXITSTATUS(status), 0);
		else
			fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
	}
	/* release: the threads' polls (only a flag) */
	atomic_store_explicit(&stop, true, memory_order_release);
	for (unsigned i = 0; i < NPAIRS; i++) {
		pthread_join(pp[i], NULL);
		pthread_join(pc[i], NULL);
		CHECK_EQ(pairs[i].posted, pairs[i].taken);
	}
	for (unsigned i = 0; i < NHAMMER; i++)
		pthread_join(ht[i], NULL);
	return lkt_done("test_park_fork");
}
