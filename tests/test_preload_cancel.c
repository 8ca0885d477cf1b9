/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_cancel.c - pthread_cond_wait/timedwait/clockwait are cancellation points, through
 * liblocklab-preload.so under every shim lock and under plain glibc:
 *
 *   blocked      a thread blocked in wait is cancelled: it ends with PTHREAD_CANCELED, and its
 *                cleanup handler runs with the mutex held again (an errorcheck mutex: the handler's
 *                unlock returns 0, which only the owner gets), so the mutex is free afterwards
 *   pending      a cancellation requested while cancellation was disabled acts when the thread,
 *                re-enabled, enters wait: same cleanup guarantees
 *   no lost signal  two waiters, both inside wait each round; one signal and a cancellation of one
 *                waiter race, round after round: whichever waiter is cancelled, the token is
 *                always taken by someone (a cancelled waiter that consumed the wakeup must pass
 *                it on)
 *
 * Under ThreadSanitizer the pthread_cancel unwinding crosses TSan's interceptors; that is supported,
 * but the no-lost-signal rounds are reduced there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "preload_test.h"

enum { WAIT, TIMEDWAIT, CLOCKWAIT };

struct waiter {
	pthread_mutex_t m;
	pthread_cond_t c;
	int how;
	int registered;		/* under m: the waiter is about to wait */
	_Atomic int cleanup_unlock_rc;	/* what the handler's unlock returned (-1: handler not run) */
	_Atomic int disable_first;
	_Atomic int may_enable;
};

static void cleanup(void *arg)
{
	struct waiter *w = arg;

	atomic_store(&w->cleanup_unlock_rc, pthread_mutex_unlock(&w->m));
}

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	int old;

	if (atomic_load(&w->disable_first)) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		while (!atomic_load(&w->may_enable))
			sched_yield();
	}
	pthread_mutex_lock(&w->m);
	w->registered = 1;
	pthread_cleanup_push(cleanup, w);
	if (atomic_load(&w->disable_first))
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);	/* not a cancellation point */
	for (;;) {
		struct timespec ts = lkt_deadline_in(w->how == CLOCKWAIT ? CLOCK_MONOTONIC : CLOCK_REALTIME,
						     3600 * 1000000000LL);
		if (w->how == WAIT)
			pthread_cond_wait(&w->c, &w->m);
		else if (w->how == TIMEDWAIT)
			pthread_cond_timedwait(&w->c, &w->m, &ts);
		else
			pthread_cond_clockwait(&w->c, &w->m, CLOCK_MONOTONIC, &ts);
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void check_blocked(int how, bool pending)
{
	struct waiter w = { .how = how };
	pthread_mutexattr_t a;
	pthread_t t;
	void *res = NULL;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	CHECK_EQ(pthread_mutex_init(&w.m, &a), 0);
	pthread_mutexattr_destroy(&a);
	CHECK_EQ(pthread_cond_init(&w.c, NULL), 0);
	atomic_store(&w.cleanup_unlock_rc, -1);
	atomic_store(&w.disable_first, pending);
	CHECK_EQ(pthread_create(&t, NULL, waiter_main, &w), 0);
	if (pending) {
		CHECK_EQ(pthread_cancel(t), 0);		/* deferred until it enables and waits */
		atomic_store(&w.may_enable, 1);
	} else {
		/* wait until it is inside pthread_cond_wait: registered, and it released the mutex */
		for (;;) {
			pthread_mutex_lock(&w.m);
			int r = w.registered;
			pthread_mutex_unlock(&w.m);
			if (r)
				break;
			sched_yield();
		}
		CHECK_EQ(pthread_cancel(t), 0);
	}
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&w.cleanup_unlock_rc), 0);	/* the handler ran holding the mutex */
	CHECK_EQ(pthread_mutex_trylock(&w.m), 0);		/* and it is free now */
	CHECK_EQ(pthread_mutex_unlock(&w.m), 0);
	CHECK_EQ(pthread_cond_destroy(&w.c), 0);
	CHECK_EQ(pthread_mutex_destroy(&w.m), 0);
}

/* ---- a cancelled waiter must not swallow a signal ------------------------------------------------- */

struct race {
	pthread_mutex_t m;
	pthread_cond_t c;
	int tokens;		/* under m */
	int taken[2];		/* under m */
	int waiting;		/* under m: racers inside pthread_cond_wait() */
};

struct racer {
	struct race *r;
	int id;
	int in_wait;		/* under m */
};

/* runs with m held: a cancelled pthread_cond_wait() takes the mutex back before the handlers */
static void racer_cleanup(void *arg)
{
	struct racer *x = arg;

	if (x->in_wait) {
		x->in_wait = 0;
		x->r->waiting--;
	}
	pthread_mutex_unlock(&x->r->m);
}

static void *racer_main(void *arg)
{
	struct racer *x = arg;
	struct race *r = x->r;

	pthread_mutex_lock(&r->m);
	pthread_cleanup_push(racer_cleanup, x);
	for (;;) {
		while (r->tokens == 0) {
			r->waiting++;
			x->in_wait = 1;
			pthread_cond_wait(&r->c, &r->m);
			x->in_wait = 0;
			r->waiting--;
		}
		r->tokens--;
		r->taken[x->id]++;
	}
	pthread_cleanup_pop(0);
	return NULL;
}

static void check_no_lost_signal(int rounds)
{
	struct race r = { .m = PTHREAD_MUTEX_INITIALIZER, .c = PTHREAD_COND_INITIALIZER };
	struct racer x[2] = { { &r, 0, 0 }, { &r, 1, 0 } };
	pthread_t t[2];

	CHECK_EQ(pthread_create(&t[1], NULL, racer_main, &x[1]), 0);
	for (int i = 0; i < rounds; i++) {
		CHECK_EQ(pthread_create(&t[0], NULL, racer_main, &x[0]), 0);
		/*
		 * until both wait: then the signal wakes one of them, and when that is racer 0 the
		 * cancel races its wake-up (a few yields are not always enough: where creating a
		 * thread is slow, as under qemu-user, racer 0 may not wait yet, and then racer 1
		 * takes the token and the race is not run)
		 */
		for (;;) {
			pthread_mutex_lock(&r.m);
			if (r.waiting == 2)
				break;
			pthread_mutex_unlock(&r.m);
			sched_yield();
		}
		int before = r.taken[0] + r.taken[1];
		r.tokens = 1;
		pthread_cond_signal(&r.c);
		pthread_cancel(t[0]);		/* may hit the waiter the signal woke */
		pthread_mutex_unlock(&r.m);
		pthread_join(t[0], NULL);
		/* the token must be taken: by racer 0 before it was cancelled, or by racer 1 */
		for (;;) {
			pthread_mutex_lock(&r.m);
			int done = r.tokens == 0 && r.taken[0] + r.taken[1] == before + 1;
			pthread_mutex_unlock(&r.m);
			if (done)
				break;
			sched_yield();
		}
	}
	pthread_cancel(t[1]);
	pthread_join(t[1], NULL);
	CHECK_EQ(r.taken[0] + r.taken[1], rounds);
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);

	lkt_watchdog(120);
	fprintf(stderr, "test_preload_cancel: lock %s\n", lock);
	for (int how = WAIT; how <= CLOCKWAIT; how++) {
		check_blocked(how, false);
		check_blocked(how, true);
	}
	check_no_lost_signal(lkt_sanitized() ? 50 : 300);
	return lkt_done("test_preload_cancel");
}
