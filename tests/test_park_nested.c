/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_nested.c - a park from inside a park is refused, and leaves the lot intact.
 *
 * A thread has one queue record, and it stays queued while lk_park runs before_sleep. The review
 * found that a park from there reused it: relinked into a second bucket (cutting the first queue),
 * the outer park returned UNPARKED though nobody unparked it, with the inner unparker's token, and
 * the record stayed linked under the old key, so the thread's next park on that address made a
 * one-node cycle and lk_unpark_all() never returned. locklab/park.h now says before_sleep may
 * unpark but not park, and the lot refuses such a park (-EDEADLK) before it locks anything:
 *   1. lk_park from before_sleep: -EDEADLK; the outer park times out as it should (nobody unparks
 *      it), lk_unpark_all returns, and the address then parks and unparks normally (token kept);
 *   2. blocking calls built on it: lk_mutex_timedlock on a held mutex and lk_cond_timedwait return
 *      EDEADLK (the condvar's mutex still held), and the mutex ends clean after its owner unlocks;
 *   3. lk_mutex_lock, which has no error to return, aborts with a message (in a child process)
 *      rather than return without the mutex;
 *   4. a fork from before_sleep: in the child, whose copy of the queue is gone, the park returns
 *      UNPARKED with the normal token (it crashed at its deadline, unlinking itself from a queue
 *      that no longer held it), and the child parks and unparks normally afterwards; the parent's
 *      park times out as usual.
 * Without the check: case 1's outer park returns 0 at once and the unpark_all hangs (watchdog).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <locklab/cond.h>
#include <locklab/mutex.h>
#include <locklab/park.h>

#include "lktest.h"

static _Atomic uint32_t word_a, word_b;
static lk_mutex_t held = LK_MUTEX_INITIALIZER;	/* held by holder_thread during a case */
static lk_mutex_t mine = LK_MUTEX_INITIALIZER;	/* the condvar's mutex, taken in before_sleep */
static lk_cond_t cv = LK_COND_INITIALIZER;
static _Atomic int holder_go, holder_in, parked;

enum what { INNER_PARK, INNER_TIMEDLOCK, INNER_CONDWAIT, INNER_LOCK, INNER_FORK };

struct nest {
	enum what what;
	int inner;		/* what the nested call returned (INNER_FORK: fork's) */
	bool still_held;	/* INNER_CONDWAIT: `mine` held by us after the refused wait */
};

static void nested_before_sleep(void *ctx)
{
	struct nest *n = ctx;
	struct timespec past = lkt_deadline_in(CLOCK_MONOTONIC, -1000000);
	struct timespec soon = lkt_deadline_in(CLOCK_MONOTONIC, 20000000);

	switch (n->what) {
	case INNER_PARK:
		n->inner = lk_park(&word_b, NULL, NULL, 0, &past, CLOCK_MONOTONIC, NULL);
		break;
	case INNER_TIMEDLOCK:
		n->inner = lk_mutex_timedlock(&held, CLOCK_MONOTONIC, &soon);
		break;
	case INNER_CONDWAIT:
		lk_mutex_lock(&mine);	/* free: taken without parking */
		n->inner = lk_cond_timedwait(&cv, &mine, CLOCK_MONOTONIC, &soon);
		/* relaxed: our own lock's word, read by its owner */
		n->still_held = atomic_load_explicit(&mine.word, memory_order_relaxed) & LK_MUTEX_LOCKED;
		if (n->still_held)
			CHECK_EQ(lk_mutex_unlock(&mine), 0);
		break;
	case INNER_LOCK:
		lk_mutex_lock(&held);	/* held by another thread: would park; aborts */
		n->inner = 0;
		break;
	case INNER_FORK:
		n->inner = fork();
		break;
	}
}

static const struct lk_park_ops nest_ops = { .before_sleep = nested_before_sleep };

/* Parks on word_a for 30 ms (nobody unparks it) with the nested call in before_sleep. */
static int outer_park_tok(struct nest *n, uint64_t *took_ns, lk_token_t *tok)
{
	struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, 30000000);
	uint64_t t0 = lkt_now_ns(CLOCK_MONOTONIC);
	int r = lk_park(&word_a, &nest_ops, n, 0, &dl, CLOCK_MONOTONIC, tok);

	*took_ns = lkt_now_ns(CLOCK_MONOTONIC) - t0;
	return r;
}

static int outer_park(struct nest *n, uint64_t *took_ns)
{
	lk_token_t tok = 12345;
	int r = outer_park_tok(n, took_ns, &tok);

	CHECK_EQ(tok, 12345);	/* a timed-out park writes no token */
	return r;
}

static void *holder_thread(void *arg)
{
	(void)arg;
	lk_mutex_lock(&held);
	atomic_store_explicit(&holder_in, 1, memory_order_release);	/* release: the test sees it held */
	/* acquire: pairs with main's release when the case is over */
	while (!atomic_load_explicit(&holder_go, memory_order_acquire))
		usleep(1000);
	CHECK_EQ(lk_mutex_unlock(&held), 0);
	return NULL;
}

static void hold_start(pthread_t *th)
{
	atomic_store(&holder_go, 0);
	atomic_store(&holder_in, 0);
	CHECK_EQ(pthread_create(th, NULL, holder_thread, NULL), 0);
	while (!atomic_load_explicit(&holder_in, memory_order_acquire))	/* acquire: see above */
		usleep(1000);
}

static void hold_end(pthread_t th)
{
	atomic_store_explicit(&holder_go, 1, memory_order_release);	/* release: see holder_thread */
	CHECK_EQ(pthread_join(th, NULL), 0);
}

static void count_parked(void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&parked, 1, memory_order_release);	/* release: test handshake */
}

static const struct lk_park_ops count_ops = { .before_sleep = count_parked };

static void *plain_parker(void *arg)
{
	lk_token_t tok = 0;

	CHECK_EQ(lk_park(&word_a, &count_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &tok), LK_PARK_UNPARKED);
	*(lk_token_t *)arg = tok;
	return NULL;
}

static lk_token_t give_seven(void *ctx, struct lk_unpark_result r)
{
	(void)ctx;
	CHECK_EQ(r.unparked_threads, 1);
	CHECK(!r.have_more_threads);
	return 7;
}

/* The address still works: one thread parks, one unpark wakes it with the token chosen. */
static void address_still_works(void)
{
	pthread_t th;
	lk_token_t got = 0;

	atomic_store(&parked, 0);
	CHECK_EQ(pthread_create(&th, NULL, plain_parker, &got), 0);
	while (!atomic_load_explicit(&parked, memory_order_acquire))	/* acquire: count_parked */
		usleep(1000);
	CHECK_EQ(lk_unpark_one(&word_a, give_seven, NULL), 1);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(got, 7);
	CHECK_EQ(lk_unpark_all(&word_a, 0), 0);
	CHECK_EQ(lk_unpark_all(&word_b, 0), 0);
}

static void case_inner_park(void)
{
	struct nest n = { .what = INNER_PARK, .inner = 1 };
	uint64_t ns;

	CHECK_EQ(outer_park(&n, &ns), LK_PARK_TIMEDOUT);
	CHECK_EQ(n.inner, -EDEADLK);
	CHECK(ns >= 30000000);	/* it slept to its deadline: the refused park did not end it */
	CHECK_EQ(lk_unpark_all(&word_a, 0), 0);	/* nobody left queued; returns (the old code: a cycle) */
	address_still_works();
	/* twice in a row: the refusal left the thread able to park again */
	n.inner = 1;
	CHECK_EQ(outer_park(&n, &ns), LK_PARK_TIMEDOUT);
	CHECK_EQ(n.inner, -EDEADLK);
	address_still_works();
}

static void case_blocking_calls(void)
{
	struct nest n = { .what = INNER_TIMEDLOCK, .inner = -1 };
	pthread_t th;
	uint64_t ns;

	hold_start(&th);
	CHECK_EQ(outer_park(&n, &ns), LK_PARK_TIMEDOUT);
	CHECK_EQ(n.inner, EDEADLK);
	hold_end(th);
	CHECK_EQ(lk_mutex_trylock(&held), 0);	/* free again, nobody queued on it */
	CHECK_EQ(lk_mutex_unlock(&held), 0);
	/* relaxed: nobody else uses it now */
	CHECK_EQ(atomic_load_explicit(&held.word, memory_order_relaxed), 0);

	n = (struct nest){ .what = INNER_CONDWAIT, .inner = -1 };
	CHECK_EQ(outer_park(&n, &ns), LK_PARK_TIMEDOUT);
	CHECK_EQ(n.inner, EDEADLK);
	CHECK(n.still_held);	/* the refused wait never released it */
	CHECK_EQ(atomic_load_explicit(&mine.word, memory_order_relaxed), 0);	/* relaxed: ours */
	CHECK_EQ(lk_cond_destroy(&cv), 0);
	address_still_works();
}

/* lk_mutex_lock cannot say EDEADLK: in a child, it must die of SIGABRT, saying why on stderr. */
static void case_lock_aborts(void)
{
	int fds[2], status;
	char buf[512] = { 0 };
	ssize_t got = 0, r;

	CHECK_EQ(pipe(fds), 0);
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		struct nest n = { .what = INNER_LOCK, .inner = -1 };
		pthread_t th;
		uint64_t ns;

		dup2(fds[1], 2);
		close(fds[0]);
		hold_start(&th);
		outer_park(&n, &ns);
		_exit(n.inner == 0 ? 3 : 4);	/* returned: the bug this case is about */
	}
	close(fds[1]);
	while ((r = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += r;
	close(fds[0]);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status));
	CHECK_EQ(WTERMSIG(status), SIGABRT);
	CHECK(strstr(buf, "lk_mutex_lock would block inside a parking-lot before_sleep callback") != NULL);
}

/* A fork from before_sleep: the child's park returns at once, woken; the parent's times out. */
static void case_fork(void)
{
	struct nest n = { .what = INNER_FORK, .inner = -1 };
	lk_token_t tok = 12345;
	uint64_t ns;
	int r = outer_park_tok(&n, &ns, &tok), status;

	CHECK(n.inner >= 0);
	if (n.inner == 0) {	/* the child */
		CHECK_EQ(r, LK_PARK_UNPARKED);
		CHECK_EQ(tok, LK_TOKEN_NORMAL);
		CHECK(ns < 30000000);	/* woken at the fork, not at the deadline */
		address_still_works();
		_exit(lkt_failures ? 1 : 0);
	}
	CHECK_EQ(r, LK_PARK_TIMEDOUT);
	CHECK_EQ(tok, 12345);
	CHECK_EQ(waitpid(n.inner, &status, 0), n.inner);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	address_still_works();
}

int main(void)
{
	lkt_watchdog(60);
	case_inner_park();
	case_blocking_calls();
	case_lock_aborts();
	case_fork();
	CHECK_EQ(lk_mutex_destroy(&held), 0);	/* last: case_lock_aborts' child used it after case 2 */
	return lkt_done("test_park_nested");
}
