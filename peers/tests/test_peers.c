/* SPDX-License-Identifier: MIT */
/*
 * peers/tests/test_peers.c - what tests/test_stress_registry.c (which already runs every available
 * peer through pair / crowd / sleepy / trylock phases) does not cover about the peer adapters:
 *
 *   registry  every peer has its registry line; it is available exactly when cmake/peers.cmake said
 *             LAB_HAVE_<P>=1, and otherwise carries a reason (the sanitizer reason in sanitizer
 *             builds, where the uninstrumented peers must stay out).
 *   nested    2 threads each take the same 8 locks of one kind in the same order and release them in
 *             a scrambled order, N times: exact per-lock counts. For the MCS-style peers (ck_mcs,
 *             tbb_queuing_mutex) this drives all 8 per-thread node slots and their out-of-order
 *             lookup at unlock.
 *   tryslots  100 failed trylocks on a lock held by another thread must not leak node slots: the
 *             failing thread can still hold 8 other locks at once afterwards.
 *   misuse    (in a forked child) for the MCS-style peers a 9th simultaneously held lock, and for
 *             them and rust_std an unlock of a lock the thread does not hold, abort with a message
 *             naming the problem instead of corrupting the queue or carrying on.
 *
 * Registered by cmake/peers.cmake (the peers own this file); exit 77 never: the registry phase always
 * runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab.h"
#include "lktest.h"

#define NLOCKS 8	/* = the adapters' per-thread node slots */

struct peer {
	const char *name, *family;
	int have;	/* LAB_HAVE_<P> as cmake/peers.cmake defined it */
	int slots;	/* MCS-style: per-thread node slots, 9 held at once aborts */
	const char *unheld;	/* unlock of a lock not held aborts with this message (NULL: unchecked) */
};

static const struct peer peers[] = {
	{ "rust_std", "mutex", LAB_HAVE_RUST, 0, "not held" },
	{ "rust_parking_lot", "mutex", LAB_HAVE_RUST, 0, NULL },
	{ "absl_mutex", "mutex", LAB_HAVE_ABSL, 0, NULL },
	{ "tbb_spin_mutex", "spinlock", LAB_HAVE_TBB, 0, NULL },
	{ "tbb_queuing_mutex", "spinlock", LAB_HAVE_TBB, 1, "does not hold" },
	{ "ck_mcs", "spinlock", LAB_HAVE_CK, 1, "does not hold" },
	{ "ck_ticket", "spinlock", LAB_HAVE_CK, 0, NULL },
	{ "ck_fas", "spinlock", LAB_HAVE_CK, 0, NULL },
};

static void **make_locks(const struct lab_lock_ops *ops, int n)
{
	void **l = calloc((size_t)n, sizeof(*l));

	for (int i = 0; i < n; i++) {
		l[i] = lab_alloc_aligned(ops->size);
		CHECK_EQ(ops->init(l[i]), 0);
	}
	return l;
}

static void free_locks(const struct lab_lock_ops *ops, void **l, int n)
{
	for (int i = 0; i < n; i++) {
		if (ops->destroy)
			ops->destroy(l[i]);
		free(l[i]);
	}
	free(l);
}

/* ---- registry -------------------------------------------------------------------------------- */

static void test_registry(void)
{
	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		const struct peer *p = &peers[i];
		const struct lab_alg *a = lab_find(NULL, p->name);

		CHECK(a != NULL);
		if (!a)
			continue;
		CHECK(strcmp(a->family, p->family) == 0);
		CHECK(strcmp(a->opstype, "lock") == 0);
		if (p->have) {
			CHECK(a->ops != NULL && a->missing == NULL);
		} else {
			CHECK(a->ops == NULL && a->missing && a->missing[0]);
			if (lkt_sanitized())
				CHECK(a->missing && strstr(a->missing, "sanitizers"));
		}
		printf("  %-18s %s\n", p->name, a->missing ? a->missing : "available");
	}
}

/* ---- nested ---------------------------------------------------------------------------------- */

struct nested {
	const struct lab_lock_ops *ops;
	void **locks;
	uint64_t count[NLOCKS];		/* plain: count[k] only under locks[k] */
	unsigned iters;
	pthread_barrier_t start;
};

/* A release order that is neither the acquisition order nor its reverse. */
static const int scrambled[NLOCKS] = { 3, 0, 7, 1, 6, 2, 5, 4 };

static void *nested_worker(void *arg)
{
	struct nested *n = arg;

	pthread_barrier_wait(&n->start);
	for (unsigned it = 0; it < n->iters; it++) {
		for (int k = 0; k < NLOCKS; k++)	/* one global order: no deadlock */
			n->ops->lock(n->locks[k]);
		for (int k = 0; k < NLOCKS; k++)
			n->count[k]++;
		for (int k = 0; k < NLOCKS; k++)
			n->ops->unlock(n->locks[scrambled[k]]);
	}
	return NULL;
}

static void test_nested(const struct lab_lock_ops *ops, unsigned iters)
{
	struct nested n = { .ops = ops, .iters = iters };
	pthread_t th[2];

	n.locks = make_locks(ops, NLOCKS);
	pthread_barrier_init(&n.start, NULL, 2);
	for (int t = 0; t < 2; t++)
		CHECK_EQ(pthread_create(&th[t], NULL, nested_worker, &n), 0);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	for (int k = 0; k < NLOCKS; k++)
		CHECK_EQ(n.count[k], 2ull * iters);
	pthread_barrier_destroy(&n.start);
	free_locks(ops, n.locks, NLOCKS);
}

/* ---- tryslots -------------------------------------------------------------------------------- */

struct holder {
	const struct lab_lock_ops *ops;
	void *lock;
	pthread_barrier_t held, release;
};

static void *holder_worker(void *arg)
{
	struct holder *h = arg;

	h->ops->lock(h->lock);
	pthread_barrier_wait(&h->held);		/* the main thread now sees it held */
	pthread_barrier_wait(&h->release);
	h->ops->unlock(h->lock);
	return NULL;
}

static void test_tryslots(const struct lab_lock_ops *ops)
{
	struct holder h = { .ops = ops };
	void **others = make_locks(ops, NLOCKS);
	pthread_t th;
	int busy = 0;

	h.lock = lab_alloc_aligned(ops->size);
	CHECK_EQ(ops->init(h.lock), 0);
	pthread_barrier_init(&h.held, NULL, 2);
	pthread_barrier_init(&h.release, NULL, 2);
	CHECK_EQ(pthread_create(&th, NULL, holder_worker, &h), 0);
	pthread_barrier_wait(&h.held);
	for (int i = 0; i < 100; i++)
		busy += ops->trylock(h.lock) == EBUSY;
	CHECK_EQ(busy, 100);
	/* Would abort ("more than 8") had the failed trylocks kept their node slots. */
	for (int k = 0; k < NLOCKS; k++)
		CHECK_EQ(ops->trylock(others[k]), 0);
	for (int k = NLOCKS - 1; k >= 0; k--)
		ops->unlock(others[k]);
	pthread_barrier_wait(&h.release);
	pthread_join(th, NULL);
	CHECK_EQ(ops->trylock(h.lock), 0);	/* released by its holder: free again */
	ops->unlock(h.lock);

	pthread_barrier_destroy(&h.held);
	pthread_barrier_destroy(&h.release);
	if (ops->destroy)
		ops->destroy(h.lock);
	free(h.lock);
	free_locks(ops, others, NLOCKS);
}

/* ---- misuse ---------------------------------------------------------------------------------- */

/* Runs fn in a child; checks it died of SIGABRT after printing something containing `expect`. */
static void expect_abort(const struct lab_lock_ops *ops, void (*fn)(const struct lab_lock_ops *),
			 const char *expect)
{
	char buf[512] = "";
	size_t len = 0;
	ssize_t r;
	int fds[2], status = 0;
	pid_t pid;

	CHECK_EQ(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		dup2(fds[1], 2);
		close(fds[0]);
		fn(ops);
		_exit(0);	/* fn returned: no abort, the parent reports it */
	}
	close(fds[1]);
	while (len < sizeof(buf) - 1 && (r = read(fds[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(fds[0]);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	CHECK(strstr(buf, expect) != NULL);
	if (!strstr(buf, expect))
		fprintf(stderr, "  child said: '%s'\n", buf);
}

static void nine_held(const struct lab_lock_ops *ops)
{
	void **l = make_locks(ops, NLOCKS + 1);

	for (int k = 0; k <= NLOCKS; k++)
		ops->lock(l[k]);
}

static void unlock_unheld(const struct lab_lock_ops *ops)
{
	void **l = make_locks(ops, 2);

	ops->lock(l[0]);
	ops->unlock(l[1]);
}

int main(void)
{
	unsigned iters = lkt_sanitized() ? 200 : 2000;

	lkt_watchdog(60);
	printf("registry:\n");
	test_registry();
	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		const struct lab_alg *a = lab_find(NULL, peers[i].name);
		const struct lab_lock_ops *ops = a ? a->ops : NULL;

		if (!ops)
			continue;
		printf("  %-18s nested x%u, tryslots", a->name, iters);
		fflush(stdout);
		test_nested(ops, iters);
		test_tryslots(ops);
		if (peers[i].slots) {
			printf(", 9 held");
			expect_abort(ops, nine_held, "more than 8");
		}
		if (peers[i].unheld) {
			printf(", unheld unlock");
			expect_abort(ops, unlock_unheld, peers[i].unheld);
		}
		printf("\n");
	}
	return lkt_done("test_peers");
}
