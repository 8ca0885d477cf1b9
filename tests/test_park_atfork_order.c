/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_atfork_order.c - the parking lot is reset in a fork child BEFORE any child handler
 * the program registered in main() runs (review of issue 12, finding 3).
 *
 * pthread_atfork child handlers run in registration order. The glibc pattern "lock in prepare, unlock
 * in child" registers its handlers early in main(), before any thread has parked. If the lot
 * registered its own reset lazily (at the process's first park), the program's child handler would
 * run first and see the parent's queues: an unpark there "wakes" a thread that does not exist in the
 * child (and a lock built on the lot hands itself to it), a park sees phantom neighbours.
 *
 * Here, for the library's lot and each of the lab's three layout instances: a child handler is
 * registered at the top of main(), before any park; a parent thread then parks on `words[i]` (queued:
 * its before_sleep ran); fork(). In the child handler, on each lot:
 *   - lk_park with a deadline already past must time out with was_last_thread = true (nobody else
 *     is queued on the address in the child),
 *   - lk_unpark_one must unpark nobody (returns 0, its callback sees 0 unparked and no more threads),
 *   - lk_unpark_all, lk_unpark_filter and lk_unpark_requeue must find nobody (0).
 * The child then parks a new thread and unparks it by address (a single-threaded park/unpark round
 * under TSan, which cannot start threads after a multi-threaded fork). The parent unparks its
 * threads with their own token afterwards: the child's calls must not have touched them.
 */
#define LKT_FORKS_WITH_THREADS	/* lktest.h: TSan options, CHILD_THREADS */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>

#include <locklab/park.h>

#include "lab.h"
#include "lab_park.h"
#include "lktest.h"


/* every registry entry of family `layout`: the lab's three layout instances and the library's lot */
#define NLOTS_MAX 8
static const struct lab_layout_ops *lots[NLOTS_MAX];
static size_t NLOTS;
#define PARENT_TOKEN 0x5eed

static _Atomic uint32_t words[NLOTS_MAX], others[NLOTS_MAX];
static _Atomic int queued[NLOTS_MAX];

/* ---- the parent's parked threads ---------------------------------------------------------------- */

static void mark_queued(void *ctx)
{
	/* release: main polls with acquire; the thread is in the queue (bucket unlocked) */
	atomic_store_explicit(&queued[(uintptr_t)ctx], 1, memory_order_release);
}

static const struct lk_park_ops queued_ops = { .before_sleep = mark_queued };

static void *parent_parker(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	lk_token_t tok = 0;

	CHECK_EQ(lots[i]->park(&words[i], &queued_ops, (void *)i, 0, NULL, CLOCK_MONOTONIC, &tok),
		 LK_PARK_UNPARKED);
	CHECK_EQ(tok, PARENT_TOKEN);
	return NULL;
}

/* ---- what the child handler records (checked by the child's main code) --------------------------- */

struct child_seen {
	int park_status;
	int was_last;		/* -1: timed_out() did not run */
	int one, one_cb_unparked, one_cb_more;
	int all, filter, requeue;
};

static struct child_seen seen[NLOTS_MAX];

static void record_last(void *ctx, const void *addr, bool was_last_thread)
{
	(void)addr;
	((struct child_seen *)ctx)->was_last = was_last_thread;
}

static const struct lk_park_ops past_ops = { .timed_out = record_last };

static lk_token_t record_one(void *ctx, struct lk_unpark_result r)
{
	struct child_seen *s = ctx;

	s->one_cb_unparked = (int)r.unparked_threads;
	s->one_cb_more = r.have_more_threads;
	return 1;
}

static enum lk_filter_op unpark_every(void *ctx, lk_token_t park_token)
{
	(void)ctx;
	(void)park_token;
	return LK_FILTER_UNPARK;
}

static enum lk_requeue_op requeue_all(void *ctx)
{
	(void)ctx;
	return LK_REQUEUE_REQUEUE_ALL;
}

/* Registered in main() before any park: runs before the lot's own reset unless the lot registered
 * its handler earlier (from a constructor). Single-threaded, as every child handler. */
static void user_child_handler(void)
{
	for (size_t i = 0; i < NLOTS; i++) {
		struct child_seen *s = &seen[i];
		struct timespec past = { 0, 0 };

		s->was_last = -1;
		s->park_status = lots[i]->park(&words[i], &past_ops, s, 0, &past, CLOCK_MONOTONIC, NULL);
		s->one_cb_unparked = s->one_cb_more = -1;
		s->one = lots[i]->unpark_one(&words[i], record_one, s);
		s->all = lots[i]->unpark_all(&words[i], 2);
		s->filter = lots[i]->unpark_filter(&words[i], unpark_every, NULL, NULL);
		s->requeue = lots[i]->unpark_requeue(&words[i], &others[i], requeue_all, NULL, NULL);
	}
}

/* ---- the child's own park/unpark round --------------------------------------------------------- */

static _Atomic uint32_t child_word;
static _Atomic int child_queued;

static void child_mark(void *ctx)
{
	(void)ctx;
	atomic_store_explicit(&child_queued, 1, memory_order_release);	/* release: see mark_queued */
}

static const struct lk_park_ops child_ops = { .before_sleep = child_mark };

struct child_arg {
	size_t lot;
	lk_token_t tok;
	int status;
};

static void *child_parker(void *arg)
{
	struct child_arg *a = arg;

	a->status = lots[a->lot]->park(&child_word, &child_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &a->tok);
	return NULL;
}

static int child_main(void)
{
	for (size_t i = 0; i < NLOTS; i++) {
		const struct child_seen *s = &seen[i];

		if (s->one || s->one_cb_unparked || s->all || s->filter || s->requeue || s->was_last != 1)
			fprintf(stderr, "child handler, lot %s: past-deadline park status %d was_last %d; "
				"unpark_one %d (callback: %d unparked, more %d), unpark_all %d, filter %d, "
				"requeue %d: the parent's queue was still there\n", lots[i]->name,
				s->park_status, s->was_last, s->one, s->one_cb_unparked, s->one_cb_more, s->all,
				s->filter, s->requeue);
		CHECK_EQ(s->park_status, LK_PARK_TIMEDOUT);
		CHECK_EQ(s->was_last, 1);
		CHECK_EQ(s->one, 0);
		CHECK_EQ(s->one_cb_unparked, 0);
		CHECK_EQ(s->one_cb_more, 0);
		CHECK_EQ(s->all, 0);
		CHECK_EQ(s->filter, 0);
		CHECK_EQ(s->requeue, 0);

		if (CHILD_THREADS) {
			struct child_arg a = { .lot = i, .tok = 0, .status = -1 };
			pthread_t t;

			atomic_store_explicit(&child_queued, 0, memory_order_relaxed);
			CHECK_EQ(pthread_create(&t, NULL, child_parker, &a), 0);
			while (!atomic_load_explicit(&child_queued, memory_order_acquire))	/* acquire: handshake */
				sched_yield();
			CHECK_EQ(lots[i]->unpark_all(&child_word, 77), 1);
			pthread_join(t, NULL);
			CHECK_EQ(a.status, LK_PARK_UNPARKED);
			CHECK_EQ(a.tok, 77);
		} else {
			struct timespec past = { 0, 0 };

			CHECK_EQ(lots[i]->park(&child_word, NULL, NULL, 0, &past, CLOCK_MONOTONIC, NULL),
				 LK_PARK_TIMEDOUT);
			CHECK_EQ(lots[i]->unpark_all(&child_word, 0), 0);
		}
	}
	return lkt_failures ? 1 : 0;
}

int main(void)
{
	pthread_t t[NLOTS_MAX];
	int st;

	/* first thing, before any park: as programs register their fork handlers */
	CHECK_EQ(pthread_atfork(NULL, NULL, user_child_handler), 0);
	lkt_watchdog(120);
	for (size_t i = 0; i < lab_registry_len; i++) {
		if (strcmp(lab_registry[i].family, "layout") == 0 && lab_registry[i].ops && NLOTS < NLOTS_MAX)
			lots[NLOTS++] = lab_registry[i].ops;
	}
	CHECK(NLOTS >= 4);	/* packed, split, lean and the library's own */

	for (size_t i = 0; i < NLOTS; i++) {
		CHECK_EQ(pthread_create(&t[i], NULL, parent_parker, (void *)i), 0);
		while (!atomic_load_explicit(&queued[i], memory_order_acquire))	/* acquire: see mark_queued */
			sched_yield();
	}

	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();

	if (pid == 0)
		_exit(child_main());
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* the parent's threads are still parked, untouched by the child */
	for (size_t i = 0; i < NLOTS; i++) {
		CHECK_EQ(lots[i]->unpark_all(&words[i], PARENT_TOKEN), 1);
		pthread_join(t[i], NULL);
	}
	return lkt_done("test_park_atfork_order");
}
