/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_cond.c - condition variables through liblocklab-preload.so, with every lock the
 * shim supports and with plain glibc; every count below is exact.
 *
 *   queue        P producers and C consumers through a bounded queue (one mutex, two condvars:
 *                not_full / not_empty); every 16th wakeup is a broadcast, every 8th wait a
 *                timedwait with a far deadline; each item is consumed exactly once
 *   glibc mutex  the shim's condvar with glibc's own mutexes: robust, priority-inheritance,
 *                priority-protect, process-shared (the wait releases and re-acquires them through
 *                glibc)
 *   glibc cond   a process-shared condvar (glibc's) with the shim's mutex: the shadow-mutex path
 *   destroy      waiters are broadcast, and the condvar is destroyed and its memory scribbled and
 *                freed at once: destroy waits for the woken waiters to leave (ASan sees any late
 *                access), as glibc's does
 *   old ABI      (x86_64) pthread_cond_*@GLIBC_2.2.5, the condvar ABI before glibc 2.3.2: a pointer-
 *                sized object, the same handoff works through it
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "preload_test.h"

/* ---- bounded queue ------------------------------------------------------------------------------- */

#define QCAP 4

struct queue {
	pthread_mutex_t *m;
	pthread_cond_t not_full, not_empty;
	long items[QCAP];
	int head, n;
	int producers_left;
	long per_producer;
	_Atomic long consumed, sum;
	_Atomic unsigned ops;
};

static void qwait(struct queue *q, pthread_cond_t *c)
{
	if (atomic_fetch_add(&q->ops, 1) % 8 == 7) {
		struct timespec ts = lkt_deadline_in(CLOCK_REALTIME, 3600 * 1000000000LL);
		int r = pthread_cond_timedwait(c, q->m, &ts);
		CHECK(r == 0);
	} else {
		CHECK_EQ(pthread_cond_wait(c, q->m), 0);
	}
}

static void qwake(struct queue *q, pthread_cond_t *c)
{
	if (atomic_fetch_add(&q->ops, 1) % 16 == 15)
		pthread_cond_broadcast(c);
	else
		pthread_cond_signal(c);
}

static void *producer(void *arg)
{
	struct queue *q = arg;

	for (long i = 1; i <= q->per_producer; i++) {
		CHECK_EQ(pthread_mutex_lock(q->m), 0);
		while (q->n == QCAP)
			qwait(q, &q->not_full);
		q->items[(q->head + q->n++) % QCAP] = i;
		qwake(q, &q->not_empty);
		CHECK_EQ(pthread_mutex_unlock(q->m), 0);
	}
	pthread_mutex_lock(q->m);
	q->producers_left--;
	pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(q->m);
	return NULL;
}

static void *consumer(void *arg)
{
	struct queue *q = arg;

	for (;;) {
		CHECK_EQ(pthread_mutex_lock(q->m), 0);
		while (q->n == 0 && q->producers_left)
			qwait(q, &q->not_empty);
		if (q->n == 0) {
			pthread_mutex_unlock(q->m);
			return NULL;
		}
		long v = q->items[q->head];
		q->head = (q->head + 1) % QCAP;
		q->n--;
		qwake(q, &q->not_full);
		CHECK_EQ(pthread_mutex_unlock(q->m), 0);
		atomic_fetch_add(&q->consumed, 1);
		atomic_fetch_add(&q->sum, v);
	}
}

static void run_queue(pthread_mutex_t *m, int np, int nc, long per)
{
	struct queue q = { .m = m, .producers_left = np, .per_producer = per };
	pthread_t t[16];

	CHECK_EQ(pthread_cond_init(&q.not_full, NULL), 0);
	q.not_empty = (pthread_cond_t)PTHREAD_COND_INITIALIZER;	/* static initialisation works too */
	for (int i = 0; i < np; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, producer, &q), 0);
	for (int i = 0; i < nc; i++)
		CHECK_EQ(pthread_create(&t[np + i], NULL, consumer, &q), 0);
	for (int i = 0; i < np + nc; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&q.consumed), np * per);
	CHECK_EQ(atomic_load(&q.sum), np * per * (per + 1) / 2);
	CHECK_EQ(pthread_cond_destroy(&q.not_full), 0);
	CHECK_EQ(pthread_cond_destroy(&q.not_empty), 0);
}

static void queue_with_attr(int type, int protocol, int robust, int pshared, int np, int nc, long per)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;

	pthread_mutexattr_init(&a);
	CHECK_EQ(pthread_mutexattr_settype(&a, type), 0);
	CHECK_EQ(pthread_mutexattr_setprotocol(&a, protocol), 0);
	if (protocol == PTHREAD_PRIO_PROTECT)
		CHECK_EQ(pthread_mutexattr_setprioceiling(&a, sched_get_priority_min(SCHED_FIFO)), 0);
	CHECK_EQ(pthread_mutexattr_setrobust(&a, robust), 0);
	CHECK_EQ(pthread_mutexattr_setpshared(&a, pshared), 0);
	int r = pthread_mutex_init(&m, &a);
	pthread_mutexattr_destroy(&a);
	if (r == ENOTSUP) {
		fprintf(stderr, "  (mutex protocol %d not supported here: skipped)\n", protocol);
		return;
	}
	CHECK_EQ(r, 0);
	/* glibc refuses to lock a priority-protect mutex when it cannot raise the thread's priority
	 * (SCHED_FIFO denied, as in some containers): EINVAL, from glibc itself; skip that case */
	if (protocol == PTHREAD_PRIO_PROTECT && (r = pthread_mutex_lock(&m)) != 0) {
		fprintf(stderr, "  (priority-protect mutex: glibc's lock returns %d here: skipped)\n", r);
		CHECK_EQ(r, EINVAL);
		CHECK_EQ(pthread_mutex_destroy(&m), 0);
		return;
	}
	if (protocol == PTHREAD_PRIO_PROTECT)
		CHECK_EQ(pthread_mutex_unlock(&m), 0);
	run_queue(&m, np, nc, per);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
}

/* ---- a glibc (process-shared) condvar with the shim's mutex ----------------------------------- */

static void pshared_cond_private_mutex(long per)
{
	struct queue q = { .m = NULL, .producers_left = 1, .per_producer = per };
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_condattr_t ca;
	pthread_t t[2];

	q.m = &m;
	pthread_condattr_init(&ca);
	CHECK_EQ(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
	CHECK_EQ(pthread_cond_init(&q.not_full, &ca), 0);
	CHECK_EQ(pthread_cond_init(&q.not_empty, &ca), 0);
	pthread_condattr_destroy(&ca);
	CHECK_EQ(pthread_create(&t[0], NULL, producer, &q), 0);
	CHECK_EQ(pthread_create(&t[1], NULL, consumer, &q), 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	CHECK_EQ(atomic_load(&q.consumed), per);
	CHECK_EQ(pthread_cond_destroy(&q.not_full), 0);
	CHECK_EQ(pthread_cond_destroy(&q.not_empty), 0);
}

/* ---- destroy right after broadcast -------------------------------------------------------------- */

struct dwait {
	pthread_mutex_t m;
	pthread_cond_t *c;
	int waiting, go;	/* under m */
};

static void *dwaiter(void *arg)
{
	struct dwait *d = arg;

	pthread_mutex_lock(&d->m);
	d->waiting++;
	while (!d->go)
		pthread_cond_wait(d->c, &d->m);
	pthread_mutex_unlock(&d->m);
	return NULL;
}

static void destroy_after_broadcast(int nwaiters)
{
	struct dwait d = { .m = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t[8];

	d.c = malloc(sizeof(*d.c));
	CHECK_EQ(pthread_cond_init(d.c, NULL), 0);
	for (int i = 0; i < nwaiters; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, dwaiter, &d), 0);
	for (;;) {
		pthread_mutex_lock(&d.m);
		int all = d.waiting == nwaiters;	/* all of them released m inside wait */
		if (all) {
			d.go = 1;
			pthread_cond_broadcast(d.c);
		}
		pthread_mutex_unlock(&d.m);
		if (all)
			break;
		sched_yield();
	}
	/* POSIX: no thread is blocked on it any more, so it may be destroyed and reused now */
	CHECK_EQ(pthread_cond_destroy(d.c), 0);
	memset(d.c, 0xa5, sizeof(*d.c));
	free(d.c);
	for (int i = 0; i < nwaiters; i++)
		pthread_join(t[i], NULL);
}

/* ---- the old condvar ABI ------------------------------------------------------------------------ */

#if defined(__x86_64__)
__asm__(".symver old_cond_init, pthread_cond_init@GLIBC_2.2.5");
__asm__(".symver old_cond_destroy, pthread_cond_destroy@GLIBC_2.2.5");
__asm__(".symver old_cond_wait, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver old_cond_signal, pthread_cond_signal@GLIBC_2.2.5");
__asm__(".symver old_cond_broadcast, pthread_cond_broadcast@GLIBC_2.2.5");
int old_cond_init(void *c, const pthread_condattr_t *a);
int old_cond_destroy(void *c);
int old_cond_wait(void *c, pthread_mutex_t *m);
int old_cond_signal(void *c);
int old_cond_broadcast(void *c);

struct old_pc {
	pthread_mutex_t m;
	void *c;		/* the old ABI's pthread_cond_t: one pointer */
	int slot, items;
	long sum;
};

static void *old_producer(void *arg)
{
	struct old_pc *o = arg;

	for (int i = 1; i <= o->items; i++) {
		pthread_mutex_lock(&o->m);
		while (o->slot)
			CHECK_EQ(old_cond_wait(&o->c, &o->m), 0);
		o->slot = i;
		old_cond_broadcast(&o->c);
		pthread_mutex_unlock(&o->m);
	}
	return NULL;
}

static void *old_consumer(void *arg)
{
	struct old_pc *o = arg;

	for (int i = 0; i < o->items; i++) {
		pthread_mutex_lock(&o->m);
		while (!o->slot)
			CHECK_EQ(old_cond_wait(&o->c, &o->m), 0);
		o->sum += o->slot;
		o->slot = 0;
		old_cond_signal(&o->c);
		pthread_mutex_unlock(&o->m);
	}
	return NULL;
}

static void old_abi(int items)
{
	struct old_pc o = { .m = PTHREAD_MUTEX_INITIALIZER, .items = items };
	pthread_t p, q;

	CHECK_EQ(old_cond_init(&o.c, NULL), 0);
	CHECK_EQ(pthread_create(&p, NULL, old_producer, &o), 0);
	CHECK_EQ(pthread_create(&q, NULL, old_consumer, &o), 0);
	pthread_join(p, NULL);
	pthread_join(q, NULL);
	CHECK_EQ(o.sum, (long)items * (items + 1) / 2);
	CHECK_EQ(old_cond_destroy(&o.c), 0);
}
#endif

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);
	bool spins = lkp_spins();
	long per = lkt_sanitized() ? 1000 : spins ? 2000 : 6000;

	lkt_watchdog(240);
	fprintf(stderr, "test_preload_cond: lock %s\n", lock);

	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	run_queue(&m, 2, 2, per);
	if (!spins)
		run_queue(&m, 4, 4, per / 4);
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	run_queue(&e, 2, 1, per / 4);

	queue_with_attr(PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_ROBUST, PTHREAD_PROCESS_PRIVATE,
			2, 2, per / 4);
	queue_with_attr(PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED,
			PTHREAD_PROCESS_PRIVATE, 2, 2, per / 4);
#if !defined(LOCKLAB_SANITIZE_thread)	/* TSan reports glibc's EINVAL for PP here as a bad mutex */
	queue_with_attr(PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_PROTECT, PTHREAD_MUTEX_STALLED,
			PTHREAD_PROCESS_PRIVATE, 2, 2, per / 4);
#endif
	queue_with_attr(PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED, PTHREAD_PROCESS_SHARED,
			2, 2, per / 4);

	pshared_cond_private_mutex(per / 4);
	for (int i = 0; i < 20; i++)
		destroy_after_broadcast(4);
#if defined(__x86_64__)
	old_abi((int)(per / 4));
#endif
	return lkt_done("test_preload_cond");
}
