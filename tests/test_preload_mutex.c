/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_mutex.c - pthread mutex semantics through liblocklab-preload.so, under every
 * lock the shim supports and under plain glibc (the "native" run: the same expectations must hold
 * there, so each errno below is glibc's, not ours):
 *
 *   static initializers   PTHREAD_MUTEX_INITIALIZER and the recursive, errorcheck and adaptive ones
 *                         work with no init call, with their type's behaviour
 *   normal/adaptive       trylock EBUSY (held by us or by another thread); unlock by a non-owner
 *                         returns 0 and releases; a double unlock returns 0
 *   errorcheck            relock EDEADLK, trylock by the owner EBUSY, unlock by a non-owner or of an
 *                         unlocked mutex EPERM
 *   recursive             nesting, trylock by the owner nests, EPERM for a non-owner and past the
 *                         last level, EAGAIN when the count would wrap (lock and trylock)
 *   destroy               EBUSY while held (each type) and while a thread waits with it in
 *                         pthread_cond_wait, 0 after the unlock, EINVAL for every use of a destroyed
 *                         mutex, 0 for a second destroy, usable again after init
 *   consistent            EINVAL on a mutex that is not robust
 *   errno                 a contended lock and unlock leave errno alone
 *   exclusion             a short count with a sleeping holder: lock really excludes
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "preload_test.h"

#if defined(LOCKLAB_SANITIZE_thread)
/* This test misuses mutexes on purpose (and the native run's clocklock is not intercepted by this
 * TSan): its mutex-misuse reports are expected; data races are still reported. */
const char *__tsan_default_options(void)
{
	return "report_mutex_bugs=0:report_destroy_locked=0";
}
#endif

struct other {
	pthread_mutex_t *m;
	int op;		/* 'l' lock, 'u' unlock, 't' trylock, 'h' lock, hold until released, unlock */
	int rc;
	_Atomic int held, release;
};

static void *other_main(void *arg)
{
	struct other *o = arg;

	switch (o->op) {
	case 'l':
		o->rc = pthread_mutex_lock(o->m);
		break;
	case 'u':
		o->rc = pthread_mutex_unlock(o->m);
		break;
	case 't':
		o->rc = pthread_mutex_trylock(o->m);
		break;
	case 'h':
		o->rc = pthread_mutex_lock(o->m);
		atomic_store(&o->held, 1);
		while (!atomic_load(&o->release))
			sched_yield();
		pthread_mutex_unlock(o->m);
		break;
	}
	return NULL;
}

/* Runs op on m in another thread and returns its result. */
static int in_other_thread(pthread_mutex_t *m, int op)
{
	struct other o = { .m = m, .op = op };
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, other_main, &o), 0);
	pthread_join(t, NULL);
	return o.rc;
}

static void init_type(pthread_mutex_t *m, int type)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	CHECK_EQ(pthread_mutexattr_settype(&a, type), 0);
	CHECK_EQ(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static void check_normal(pthread_mutex_t *m)
{
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
	CHECK_EQ(in_other_thread(m, 't'), EBUSY);
	/* glibc does not check the owner of a normal mutex: another thread's unlock releases it */
	CHECK_EQ(in_other_thread(m, 'u'), 0);
	CHECK_EQ(pthread_mutex_trylock(m), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	/* a double unlock returns 0 too (and leaves the mutex usable) */
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
}

static void check_errorcheck(pthread_mutex_t *m)
{
	CHECK_EQ(pthread_mutex_unlock(m), EPERM);	/* not locked */
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_mutex_lock(m), EDEADLK);
	CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
	CHECK_EQ(in_other_thread(m, 'u'), EPERM);	/* not the owner */
	CHECK_EQ(in_other_thread(m, 't'), EBUSY);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	CHECK_EQ(pthread_mutex_unlock(m), EPERM);
	CHECK_EQ(in_other_thread(m, 'l'), 0);		/* another thread takes it and keeps it */
	CHECK_EQ(pthread_mutex_unlock(m), EPERM);
	CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
}

static void check_recursive(pthread_mutex_t *m)
{
	CHECK_EQ(pthread_mutex_unlock(m), EPERM);
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_mutex_trylock(m), 0);
	CHECK_EQ(in_other_thread(m, 't'), EBUSY);
	CHECK_EQ(in_other_thread(m, 'u'), EPERM);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	CHECK_EQ(in_other_thread(m, 't'), EBUSY);	/* still held once */
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	CHECK_EQ(pthread_mutex_unlock(m), EPERM);	/* past the last level */
	CHECK_EQ(in_other_thread(m, 't'), 0);		/* free (the other thread keeps it: trylock) */
	CHECK_EQ(pthread_mutex_trylock(m), EBUSY);
}

/* The recursion counter at its limit: the next nesting must fail with EAGAIN (glibc's __count). */
static void check_recursive_overflow(void)
{
	pthread_mutex_t m;

	init_type(&m, PTHREAD_MUTEX_RECURSIVE);
	CHECK_EQ(pthread_mutex_lock(&m), 0);
	m.__data.__count = UINT_MAX;
	CHECK_EQ(pthread_mutex_lock(&m), EAGAIN);
	CHECK_EQ(pthread_mutex_trylock(&m), EAGAIN);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	CHECK_EQ(pthread_mutex_timedlock(&m, &ts), EAGAIN);
	m.__data.__count = 1;
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
}

static void check_destroy(int type)
{
	pthread_mutex_t m;

	init_type(&m, type);
	CHECK_EQ(pthread_mutex_lock(&m), 0);
	CHECK_EQ(pthread_mutex_destroy(&m), EBUSY);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
	/* glibc marks a destroyed mutex invalid: every use is EINVAL, a second destroy is 0 */
	CHECK_EQ(pthread_mutex_lock(&m), EINVAL);
	CHECK_EQ(pthread_mutex_trylock(&m), EINVAL);
	CHECK_EQ(pthread_mutex_unlock(&m), EINVAL);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	CHECK_EQ(pthread_mutex_timedlock(&m, &ts), EINVAL);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
	init_type(&m, type);
	CHECK_EQ(pthread_mutex_lock(&m), 0);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
}

/* destroy of a mutex another thread holds */
static void check_destroy_other(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct other o = { .m = &m, .op = 'h' };
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, other_main, &o), 0);
	while (!atomic_load(&o.held))
		sched_yield();
	CHECK_EQ(pthread_mutex_destroy(&m), EBUSY);
	atomic_store(&o.release, 1);
	pthread_join(t, NULL);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
}

struct cwait {
	pthread_mutex_t m;
	pthread_cond_t c;
	int waiting, go;	/* under m */
};

static void *cwait_main(void *arg)
{
	struct cwait *w = arg;

	pthread_mutex_lock(&w->m);
	w->waiting = 1;
	while (!w->go)
		pthread_cond_wait(&w->c, &w->m);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

/* glibc refuses to destroy a mutex a thread waits with inside pthread_cond_wait (EBUSY), though it
 * is unlocked at that moment */
static void check_destroy_with_cond_waiter(int type)
{
	struct cwait w = { .c = PTHREAD_COND_INITIALIZER };
	pthread_t t;

	init_type(&w.m, type);
	CHECK_EQ(pthread_create(&t, NULL, cwait_main, &w), 0);
	for (;;) {
		pthread_mutex_lock(&w.m);
		int in = w.waiting;
		pthread_mutex_unlock(&w.m);
		if (in)
			break;
		sched_yield();
	}
	CHECK_EQ(pthread_mutex_destroy(&w.m), EBUSY);
	pthread_mutex_lock(&w.m);
	w.go = 1;
	pthread_cond_broadcast(&w.c);
	pthread_mutex_unlock(&w.m);
	pthread_join(t, NULL);
	CHECK_EQ(pthread_mutex_destroy(&w.m), 0);
	CHECK_EQ(pthread_cond_destroy(&w.c), 0);
}

static void *release_later(void *arg)
{
	struct other *o = arg;
	struct timespec d = { 0, 20 * 1000 * 1000 };

	nanosleep(&d, NULL);
	atomic_store(&o->release, 1);
	return NULL;
}

static void check_errno(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct other o = { .m = &m, .op = 'h' };
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, other_main, &o), 0);
	while (!atomic_load(&o.held))
		sched_yield();
	/* release it in a while, so that our lock waits (parks) */
	pthread_t rel;
	CHECK_EQ(pthread_create(&rel, NULL, release_later, &o), 0);
	errno = 4321;
	CHECK_EQ(pthread_mutex_lock(&m), 0);
	CHECK_EQ(errno, 4321);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(errno, 4321);
	pthread_join(t, NULL);
	pthread_join(rel, NULL);
}

struct excl {
	pthread_mutex_t *m;
	long counter;		/* plain: only the mutex protects it */
	int inside;		/* plain: who is in the critical section */
	int bad;
	int n;			/* threads */
	_Atomic int gate;	/* their common start (lkt_gate_pass) */
};

static void *excl_main(void *arg)
{
	struct excl *x = arg;

	lkt_gate_pass(&x->gate, x->n);
	for (int i = 0; i < 400; i++) {
		pthread_mutex_lock(x->m);
		if (x->inside)
			x->bad++;
		x->inside = 1;
		long c = x->counter;
		if ((i & 31) == 0) {
			struct timespec d = { 0, 50000 };
			nanosleep(&d, NULL);
		}
		x->counter = c + 1;
		x->inside = 0;
		pthread_mutex_unlock(x->m);
	}
	return NULL;
}

static void check_exclusion(pthread_mutex_t *m)
{
	int n = lkp_spins() ? 2 : 4;
	struct excl x = { .m = m, .n = n };
	pthread_t t[4];

	for (int i = 0; i < n; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, excl_main, &x), 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(x.counter, 400L * n);
	CHECK_EQ(x.bad, 0);
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);

	lkt_watchdog(120);
	fprintf(stderr, "test_preload_mutex: lock %s\n", lock);

	pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t s_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
	pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	check_normal(&s_normal);
	check_normal(&s_adaptive);
	check_errorcheck(&s_errorcheck);
	check_recursive(&s_recursive);

	pthread_mutex_t d_normal, d_adaptive, d_errorcheck, d_recursive, d_default;
	init_type(&d_normal, PTHREAD_MUTEX_NORMAL);
	init_type(&d_adaptive, PTHREAD_MUTEX_ADAPTIVE_NP);
	init_type(&d_errorcheck, PTHREAD_MUTEX_ERRORCHECK);
	init_type(&d_recursive, PTHREAD_MUTEX_RECURSIVE);
	CHECK_EQ(pthread_mutex_init(&d_default, NULL), 0);
	check_normal(&d_normal);
	check_normal(&d_adaptive);
	check_normal(&d_default);
	check_errorcheck(&d_errorcheck);
	check_recursive(&d_recursive);

	check_recursive_overflow();
	check_destroy(PTHREAD_MUTEX_NORMAL);
	check_destroy(PTHREAD_MUTEX_ERRORCHECK);
	check_destroy(PTHREAD_MUTEX_RECURSIVE);
	check_destroy_other();
	check_destroy_with_cond_waiter(PTHREAD_MUTEX_NORMAL);
	check_destroy_with_cond_waiter(PTHREAD_MUTEX_ERRORCHECK);

	pthread_mutex_t c = PTHREAD_MUTEX_INITIALIZER;
	CHECK_EQ(pthread_mutex_consistent(&c), EINVAL);

	check_errno();
	pthread_mutex_t x1 = PTHREAD_MUTEX_INITIALIZER, x2 = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	check_exclusion(&x1);
	check_exclusion(&x2);
	return lkt_done("test_preload_mutex");
}
