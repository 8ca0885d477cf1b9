/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_unlock_hint.c - lk_mutex_unlock()'s guess (lk_mutex_unlock_hint, mutex.h): the
 * first CAS expects LOCKED | the word this thread's last unlock released with its second CAS. A
 * guess only ever saves a CAS; what the unlock does must not depend on it:
 *
 * 1. A new thread guesses nothing (0).
 * 2. Beside a spinner (word L|S|G, S and G written as a spinner's claim C writes them) the unlock
 *    releases to S|G and remembers S|G; the next unlock of such a word hits and does the same.
 * 3. A wrong guess (S|G, the word L alone) still releases, to 0, and the guess goes back to 0.
 * 4. With the guess S|G, an unlock of S|G (not locked: a spinner waits on a free word) returns EPERM
 *    and leaves the word alone, though "L | guess" would have been a word to release.
 * 5. With the guess S|G, an unlock of a word whose thread is parked and nobody spins (L|P|Q|G)
 *    must wake it through the slow path: a real waiter, parked (spinning off), must get the lock.
 * 6. A guess is per thread: another thread still guesses 0 after main's guess became S|G.
 * 7. After fork, the child's guess is its parent thread's (S|G with the parent's generation): an
 *    unlock of a word the forking thread held (L) releases it, and the child locks it again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lktest.h"
#include "locklab/mutex.h"

#define L LK_MUTEX_LOCKED
#define P LK_MUTEX_PARKED
#define S LK_MUTEX_SPINNING
/* S carries the fork generation that set it (GEN): this process never forked before main, so 1 */
#define GEN1 (1u << __builtin_ctz(LK_MUTEX_GEN_MASK))
#define Q_ONE (1u << __builtin_ctz(LK_MUTEX_QUEUED_MASK))

static uint32_t word(lk_mutex_t *mx)
{
	return atomic_load_explicit(&mx->word, memory_order_relaxed);	/* relaxed: observing bits */
}

static void set_word(lk_mutex_t *mx, uint32_t v)
{
	atomic_store_explicit(&mx->word, v, memory_order_relaxed);	/* relaxed: single-threaded setup */
}

static void *guess_of_new_thread(void *arg)
{
	*(uint32_t *)arg = lk_mutex_unlock_hint;
	return NULL;
}

static lk_mutex_t m5 = LK_MUTEX_INITIALIZER;
static int m5_data;

static void *waiter(void *arg)
{
	(void)arg;
	lk_mutex_lock(&m5);
	m5_data++;
	CHECK_EQ(lk_mutex_unlock(&m5), 0);
	return NULL;
}

int main(void)
{
	lk_mutex_t m = LK_MUTEX_INITIALIZER;
	pthread_t t;
	uint32_t other = 1;

	lkt_watchdog(60);

	/* 1 */
	CHECK_EQ(lk_mutex_unlock_hint, 0);

	/* 2: twice, the second time with the guess in place */
	for (int i = 0; i < 2; i++) {
		set_word(&m, L | S | GEN1);
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		CHECK_EQ(word(&m), S | GEN1);
		CHECK_EQ(lk_mutex_unlock_hint, S | GEN1);
	}

	/* 3 */
	set_word(&m, L);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(word(&m), 0);
	CHECK_EQ(lk_mutex_unlock_hint, 0);

	/* 4 */
	set_word(&m, L | S | GEN1);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(lk_mutex_unlock_hint, S | GEN1);
	CHECK_EQ(lk_mutex_unlock(&m), EPERM);
	CHECK_EQ(word(&m), S | GEN1);

	/* 5: spinning off, so the waiter parks; main's guess is S|G from 4 */
	struct lk_mutex_policy old, p;
	CHECK_EQ(lk_mutex_get_policy(&old), 0);
	p = old;
	p.spin_min_ns = p.spin_max_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	lk_mutex_lock(&m5);
	CHECK_EQ(pthread_create(&t, NULL, waiter, NULL), 0);
	while ((word(&m5) & (P | LK_MUTEX_QUEUED_MASK)) != (P | Q_ONE))
		usleep(100);
	CHECK_EQ(word(&m5) & (L | S), L);
	CHECK_EQ(lk_mutex_unlock_hint, S | GEN1);
	CHECK_EQ(lk_mutex_unlock(&m5), 0);	/* the guess misses; the slow path wakes the waiter */
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(m5_data, 1);
	CHECK_EQ(lk_mutex_unlock_hint, 0);
	CHECK_EQ(word(&m5), 0);
	CHECK_EQ(lk_mutex_set_policy(&old), 0);

	/* 6 */
	set_word(&m, L | S | GEN1);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(lk_mutex_unlock_hint, S | GEN1);
	CHECK_EQ(pthread_create(&t, NULL, guess_of_new_thread, &other), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(other, 0);

	/* 7: main's guess is S|G1; the child's generation is 2 */
	set_word(&m, 0);
	lk_mutex_lock(&m);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		bad |= lk_mutex_unlock_hint != (S | GEN1);
		bad |= lk_mutex_unlock(&m) != 0;
		bad |= word(&m) != 0;
		bad |= lk_mutex_trylock(&m) != 0;
		bad |= lk_mutex_unlock(&m) != 0;
		bad |= lk_mutex_unlock(&m) != EPERM;
		_exit(bad);
	}
	int st = 0;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(word(&m), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	CHECK_EQ(lk_mutex_destroy(&m5), 0);
	return lkt_done("test_mutex_unlock_hint");
}
