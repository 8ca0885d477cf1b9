/* SPDX-License-Identifier: MIT */
/*
 * src/park_impl.h - the parking lot, written once and instantiated per bucket layout.
 *
 * The includer defines, before including this file:
 *	LKP_LAYOUT		LKP_LAYOUT_PACKED, LKP_LAYOUT_SPLIT or LKP_LAYOUT_LEAN
 *	LKP_PUBLIC(name)	the external name of an API function (lk_##name, lab_park_lean_##name, ...)
 *	LKP_PRIV(name)		a unique name for an internal symbol (every internal name below goes
 *				through it, so several layouts can live in one translation unit)
 * src/park.c instantiates the library's layout as lk_*; lab/adapters/park_layouts.c all three as
 * lab_park_<layout>_*. Each instance has its own table, thread registry and fork handler.
 *
 * Data
 * ----
 *   table   (current one published through `cur`; never shrinks)
 *     +--------------------------------------------------------------+
 *     | nbuckets, shift, retired_next | bucket[0] | bucket[1] | ...  |  each bucket LKP_BUCKET_BYTES
 *     +--------------------------------------------------------------+
 *
 *   bucket, three layouts (one 64-byte line = one box):
 *     packed: [ lock | waiters | head | tail | table ]                    64 B
 *     split:  [ lock | waiters ] [ head | tail | table ]                  128 B (seed-000 patch: the
 *                                                                          queue and the back pointer
 *                                                                          on their own line)
 *     lean:   [ lock | waiters | head | tail ]                            64 B (no back pointer)
 *
 *   lock     bucket lock, 0 unlocked / 1 locked / 2 locked with sleepers (a futex word).
 *   waiters  threads queued in the bucket, plus parkers between enqueue-intent and validate, plus
 *            one per requeue in progress onto an address of the bucket (counted before its
 *            validate(), as the kernel's futex_requeue() does); atomic RMWs, read locklessly by
 *            unpark_all() and a callback-less unpark_one() to skip an empty bucket (the kernel's
 *            waiters_pending()).
 *   head/tail FIFO queue of parked threads (singly linked through thread_data.next); all the
 *            addresses that hash to the bucket share it, FIFO order per address follows.
 *   table    back pointer to the owning table, loaded before the bucket lock is taken, as the
 *            kernel's futex_hash() loads hb->priv; `lean` uses the table pointer it already has.
 *
 *   thread_data (thread-local, one per thread per instance)
 *     futex        1 while parked, 0 once unparked: the word the thread sleeps on (FUTEX_WAIT on its
 *                  own word, so two sleepers never share a kernel hash chain through us)
 *     key          the address the thread is parked on (changed by requeue under the bucket lock)
 *     next         queue link, protected by the bucket lock of the bucket holding the thread
 *     park_token, unpark_token, park_ns (monotonic enqueue time, for waited_ns)
 *
 * Invariants
 *   I1  a parked thread is in exactly one queue: that of bucket hash(key) of the current table.
 *   I2  thread.futex goes 1 -> 0 only under the lock of the bucket holding the thread, after the
 *       thread is removed from its queue and its unpark_token is written.
 *   I3  a bucket of a retired table is never modified again except that its lock is taken and
 *       dropped by threads that loaded the old table pointer; they see `cur` changed and retry.
 *   I4  tables only grow, at least doubling, from LKP_MIN_BUCKETS: the retired tables add up to
 *       less than the current one, so retired_bytes < table_bytes at all times (see "Growth").
 *
 * Thread states
 *
 *            park(): lock bucket, waiters++, validate
 *   running ------------------------------------------> queued (futex = 1), bucket unlocked,
 *      ^                                                 before_sleep(), FUTEX_WAIT(futex, 1)
 *      |  unpark*(): under bucket lock: dequeue,            |                      |
 *      |  token, futex = 0 (release); then FUTEX_WAKE      |                      | deadline
 *      +---------------------------------------------------+                      v
 *      |                          timeout: lock bucket of key; futex still 1 -> dequeue,
 *      +------------------------- timed_out(); else it was unparked meanwhile (UNPARKED)
 *
 * Growth (never waits for the table to go idle; the seed-000 pathology)
 *   A thread using the lot for the first time registers (live++); if the table then has fewer than
 *   LK_PARK_BUCKETS_PER_THREAD buckets per live thread, it grows it: allocate and clear the new
 *   table (no lock held), lock every bucket of the current table in index order, check the table
 *   is still current (another grower may have won; retry, keeping the new table if it is still
 *   big enough), move every queued thread to the new table (per-bucket queues are walked in
 *   order, so FIFO per address holds), set each old bucket's waiters to a poison value (lockless
 *   readers of a stale table then take the locked path and retry), push the old table on the
 *   retired list, publish the new table (release), unlock the old buckets. Every old bucket is held
 *   from its lock until the publication: 9-20 ns per old bucket on the 2-vCPU AMD guest, 49 us at
 *   4096 buckets, 0.5 ms at 32768 (docs/results/park-grow-2core/), once per doubling. Nothing
 *   waits for other threads, so growth completes however hard the buckets are hit: there is no
 *   reference count that must drain to zero.
 *   Old tables cannot be freed while a thread may still be spinning on one of their bucket locks,
 *   and tracking that would put a shared counter back on the fast path (the hot line PeterZ found).
 *   So they are kept, and bounded instead: the size at least doubles on each growth, so all the
 *   retired tables together are smaller than the current one (I4); the worst case is under 2x the
 *   current table. A child after fork() frees them (it is single-threaded then).
 *
 * Fork: the child inherits bucket locks possibly held by threads that do not exist in it and
 *   queues of threads that do not exist; a pthread_atfork child handler resets every bucket of the
 *   current table, frees the retired tables and sets the live count to the forking thread alone. It
 *   is registered by a library constructor (priority 101), so it runs before the child handlers a
 *   program registers in main() or in its default-priority constructors; a handler registered
 *   earlier (by a constructor that runs before ours) sees the parent's queues (docs/park.md).
 *
 * Memory ordering summary
 *   - bucket lock: acquire on lock, release on unlock (orders all queue and thread_data fields).
 *   - cur: release store by the grower, acquire load by users; the re-check after locking a
 *     bucket is ordered by the bucket lock itself (the grower publishes before unlocking).
 *   - waiters: Dekker pair.  parker: waiters++; fence(seq_cst); validate() reads the primitive's
 *     state.  waker: (caller changed the state); fence(seq_cst); reads waiters.  One of the two
 *     fences comes first in the total order, so either the waker sees the parker or the parker's
 *     validate() sees the new state (the kernel's futex_hb_waiters_inc()/pending() pairing).
 *     A requeue is a parker on `to` too: waiters(to's bucket)++; fence; lock both buckets;
 *     validate() reads `to`'s state; move; waiters += moved; waiters-- (the pending one).
 *   - futex word: release store by the unparker, acquire load by the parker (publishes the token).
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <locklab/park.h>
#include <locklab/relax.h>

#include "futex.h"
#include "test_hooks.h"
#include "park_internal.h"

#ifndef LKP_LAYOUT_PACKED
#define LKP_LAYOUT_PACKED 1
#define LKP_LAYOUT_SPLIT 2
#define LKP_LAYOUT_LEAN 3
#endif

#if !defined(LKP_LAYOUT) || !defined(LKP_PUBLIC) || !defined(LKP_PRIV)
#error "define LKP_LAYOUT, LKP_PUBLIC and LKP_PRIV before including park_impl.h"
#endif

#ifndef LKP_LIKELY
#define LKP_LIKELY(x) __builtin_expect(!!(x), 1)
#define LKP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

/* Internal names, made unique per instance (undone at the end of this file). */
#define bucket			LKP_PRIV(bucket)
#define table			LKP_PRIV(table)
#define thread_data		LKP_PRIV(thread_data)
#define wake_batch		LKP_PRIV(wake_batch)
#define cur			LKP_PRIV(cur)
#define live			LKP_PRIV(live)
#define nresizes		LKP_PRIV(nresizes)
#define retired			LKP_PRIV(retired)
#define retired_total		LKP_PRIV(retired_total)
#define tls_td			LKP_PRIV(tls_td)
#define td_key			LKP_PRIV(td_key)
#define once			LKP_PRIV(once)
#define once_init		LKP_PRIV(once_init)
#define thread_exit		LKP_PRIV(thread_exit)
#define atfork_child		LKP_PRIV(atfork_child)
#define atfork_register		LKP_PRIV(atfork_register)
#define bucket_lock		LKP_PRIV(bucket_lock)
#define bucket_lock_slow	LKP_PRIV(bucket_lock_slow)
#define bucket_unlock		LKP_PRIV(bucket_unlock)
#define hash_addr		LKP_PRIV(hash_addr)
#define table_alloc		LKP_PRIV(table_alloc)
#define table_bytes_of		LKP_PRIV(table_bytes_of)
#define get_table		LKP_PRIV(get_table)
#define get_table_slow		LKP_PRIV(get_table_slow)
#define grow			LKP_PRIV(grow)
#define self			LKP_PRIV(self)
#define self_register		LKP_PRIV(self_register)
#define lock_bucket		LKP_PRIV(lock_bucket)
#define lock_bucket_pair_in	LKP_PRIV(lock_bucket_pair_in)
#define unlock_bucket_pair	LKP_PRIV(unlock_bucket_pair)
#define lock_bucket_of_thread	LKP_PRIV(lock_bucket_of_thread)
#define waiters_add		LKP_PRIV(waiters_add)
#define queue_append		LKP_PRIV(queue_append)
#define queue_prepend		LKP_PRIV(queue_prepend)
#define park_common		LKP_PRIV(park_common)
#define queue_has		LKP_PRIV(queue_has)
#define now_ns			LKP_PRIV(now_ns)
#define deadline_passed		LKP_PRIV(deadline_passed)
#define bad_addr		LKP_PRIV(bad_addr)
#define wake_add		LKP_PRIV(wake_add)
#define wake_flush		LKP_PRIV(wake_flush)
#define empty_fast		LKP_PRIV(empty_fast)

#define LKP_POISON	0x40000000u	/* waiters value of a retired bucket: never 0 */
#define LKP_SPIN	100		/* bucket-lock spins before sleeping: holds are short */
/* Smallest table. With at least 16 buckets the 64-byte headers of all retired tables (one per
 * doubling, at most 20 up to the 2^24-bucket cap) stay below the buckets the doublings saved, so
 * retired_bytes < table_bytes holds in bytes, not only in buckets (I4). */
#define LKP_MIN_BUCKETS	16

/*
 * The lockless "bucket is empty" pre-check needs the seq_cst fence pair described at the top.
 * ThreadSanitizer does not model atomic_thread_fence(), so under TSan the pre-check is compiled
 * out and every operation takes the bucket lock: everything TSan then sees is ordered by locks.
 */
#if defined(LOCKLAB_SANITIZE_thread)
#define LKP_PRECHECK 0
#define dekker_fence() do { } while (0)
#else
#define LKP_PRECHECK 1
/* seq_cst fence: the two halves of the waiters/state Dekker pair (see the top of this file) */
#define dekker_fence() atomic_thread_fence(memory_order_seq_cst)
#endif

/* ------------------------------------------------------------------------------------------------ */
/* Layout                                                                                            */

struct thread_data;
struct table;

#if LKP_LAYOUT == LKP_LAYOUT_PACKED
#define LKP_LAYOUT_NAME "packed"
#define LKP_BACKPTR 1
struct bucket {
	_Atomic uint32_t lock;
	_Atomic uint32_t waiters;
	struct thread_data *head, *tail;
	struct table *table;		/* set at allocation, never changed */
} __attribute__((aligned(64)));
#define BQ(b) (b)
#elif LKP_LAYOUT == LKP_LAYOUT_SPLIT
#define LKP_LAYOUT_NAME "split"
#define LKP_BACKPTR 1
struct bucket {
	_Atomic uint32_t lock;
	_Atomic uint32_t waiters;
	struct {
		struct thread_data *head, *tail;
		struct table *table;	/* set at allocation, never changed */
	} q __attribute__((aligned(64)));
} __attribute__((aligned(64)));
#define BQ(b) (&(b)->q)
#elif LKP_LAYOUT == LKP_LAYOUT_LEAN
#define LKP_LAYOUT_NAME "lean"
#define LKP_BACKPTR 0
struct bucket {
	_Atomic uint32_t lock;
	_Atomic uint32_t waiters;
	struct thread_data *head, *tail;
} __attribute__((aligned(64)));
#define BQ(b) (b)
#else
#error "unknown LKP_LAYOUT"
#endif

struct table {
	size_t nbuckets;
	unsigned shift;			/* 64 - log2(nbuckets) */
	struct table *retired_next;	/* link on the retired list */
	struct bucket b[];
};

struct thread_data {
	_Atomic uint32_t futex;		/* 1 parked, 0 unparked (I2) */
	_Atomic uintptr_t key;		/* written under the bucket lock; the owner reads it unlocked */
	struct thread_data *next;	/* queue link (bucket lock) */
	lk_token_t park_token;		/* owner writes before enqueueing, under the bucket lock */
	lk_token_t unpark_token;	/* unparker writes before futex = 0 (release) */
	uint64_t park_ns;
	bool in_park;			/* owner only: inside lk_park, so a park from before_sleep is refused */
	bool registered;		/* counted in `live`; thread_exit() runs at thread exit */
	bool exited;			/* thread_exit() ran: in a later TLS destructor, never counted again */
} __attribute__((aligned(64)));

static struct table *_Atomic cur;
static _Atomic size_t live;
static _Atomic uint64_t nresizes;
static struct table *_Atomic retired;
static _Atomic size_t retired_total;
static __thread struct thread_data tls_td;
static pthread_key_t td_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------------------------------------ */
/* Bucket lock: a three-state futex lock (Drepper's "mutex3"); holds are a few list operations.      */

static __attribute__((noinline, cold)) void bucket_lock_slow(_Atomic uint32_t *l)
{
	for (int i = 0; i < LKP_SPIN; i++) {
		uint32_t c = 0;

		/* relaxed: only a hint whether trying the CAS is worth it */
		if (atomic_load_explicit(l, memory_order_relaxed) == 0 &&
		    /* acquire: pairs with the release exchange in bucket_unlock() */
		    atomic_compare_exchange_weak_explicit(l, &c, 1, memory_order_acquire, memory_order_relaxed))
			return;
		lk_cpu_relax();
	}
	/* acquire: pairs with the release exchange in bucket_unlock(); 2 = "someone may sleep" */
	while (atomic_exchange_explicit(l, 2, memory_order_acquire) != 0)
		lk_futex_wait(l, 2, NULL, CLOCK_MONOTONIC);
}

static inline void bucket_lock(struct bucket *b)
{
	uint32_t c = 0;

	/* acquire: pairs with the release exchange in bucket_unlock() */
	if (LKP_UNLIKELY(!atomic_compare_exchange_strong_explicit(&b->lock, &c, 1, memory_order_acquire,
								   memory_order_relaxed)))
		bucket_lock_slow(&b->lock);
}

static inline void bucket_unlock(struct bucket *b)
{
	/* release: publishes the critical section to the next bucket_lock() (acquire) */
	if (LKP_UNLIKELY(atomic_exchange_explicit(&b->lock, 0, memory_order_release) == 2))
		lk_futex_wake(&b->lock, 1);
}

/* ------------------------------------------------------------------------------------------------ */
/* Table                                                                                             */

static inline size_t hash_addr(const struct table *t, const void *addr)
{
	/* Fibonacci hashing: the top bits of addr * 2^64/phi spread nearby addresses */
	return (size_t)(((uint64_t)(uintptr_t)addr * 0x9E3779B97F4A7C15ull) >> t->shift);
}

static inline size_t table_bytes_of(size_t n)
{
	return sizeof(struct table) + n * sizeof(struct bucket);
}

static struct table *table_alloc(size_t n)
{
	struct table *t;
	unsigned lg = 0;

	if (n < LKP_MIN_BUCKETS)
		n = LKP_MIN_BUCKETS;
	while (((size_t)1 << lg) < n)
		lg++;
	n = (size_t)1 << lg;
	if (posix_memalign((void **)&t, 64, table_bytes_of(n)))
		return NULL;
	memset(t, 0, table_bytes_of(n));
	t->nbuckets = n;
	t->shift = 64 - lg;
#if LKP_BACKPTR
	for (size_t i = 0; i < n; i++)
		BQ(&t->b[i])->table = t;
#endif
	return t;
}

static void atfork_child(void);
static void thread_exit(void *arg);

static void once_init(void)
{
	pthread_key_create(&td_key, thread_exit);
}

/*
 * The fork handler is registered when the library is loaded, not at the first park: child handlers
 * run in registration order, and a program registers its own (the glibc pattern "lock in prepare,
 * unlock in child") early in main(), before any thread parks. Registered lazily, ours came after
 * theirs, so their child handler ran against the parent's queues: an unpark there "woke" a thread that
 * does not exist in the child. Priority 101 (the first one not reserved for the implementation) puts
 * it ahead of every default-priority constructor of a statically linked program as well; what can
 * still come first is listed in docs/park.md ("Fork"). Only the handler: the table stays lazy.
 */
static __attribute__((constructor(101))) void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static __attribute__((noinline)) struct table *get_table_slow(void);

/* The current table, created on first use (with room for the threads registered so far). */
static inline struct table *get_table(void)
{
	/* acquire: pairs with the release publication in get_table_slow()/grow(): bucket contents */
	struct table *t = atomic_load_explicit(&cur, memory_order_acquire);

	return LKP_LIKELY(t) ? t : get_table_slow();
}

static __attribute__((noinline)) struct table *get_table_slow(void)
{
	size_t n = atomic_load_explicit(&live, memory_order_relaxed);	/* relaxed: sizing hint */
	struct table *t, *old = NULL;

	t = table_alloc(LK_PARK_BUCKETS_PER_THREAD * (n ? n : 1));

	if (!t)
		abort();	/* a few hundred bytes; nothing sensible to return from lk_park */
	/* release: publishes the zeroed buckets; acquire on failure: pairs with the winner's release */
	if (!atomic_compare_exchange_strong_explicit(&cur, &old, t, memory_order_acq_rel,
						     memory_order_acquire)) {
		free(t);
		return old;
	}
	/* relaxed: a statistic */
	atomic_fetch_add_explicit(&nresizes, 1, memory_order_relaxed);
	return t;
}

/* Appends td at the tail of b's queue (FIFO per bucket). The caller holds b's lock, or b belongs to
 * a table no other thread can see yet (grow). */
static inline void queue_append(struct bucket *b, struct thread_data *td)
{
	td->next = NULL;
	if (BQ(b)->tail)
		BQ(b)->tail->next = td;
	else
		BQ(b)->head = td;
	BQ(b)->tail = td;
}

/* Puts td at the head of b's queue: in front of every thread parked on any address of the bucket. */
static inline void queue_prepend(struct bucket *b, struct thread_data *td)
{
	td->next = BQ(b)->head;
	BQ(b)->head = td;
	if (!BQ(b)->tail)
		BQ(b)->tail = td;
}

/*
 * Grow until the current table has at least `want` buckets. Never waits for quiescence. The new
 * table is allocated and cleared before any bucket is locked (a large memset under every bucket
 * lock would stall every park and unpark for its duration); it is kept for the retry when another
 * grower replaced the table first, and freed when that one is already big enough. Returns false
 * when the allocation failed and the table is still smaller than `want` (it keeps working as it
 * is: correct, only slower).
 */
static bool grow(size_t want)
{
	struct table *nt = NULL;

	for (;;) {
		struct table *t = get_table();

		if (t->nbuckets >= want) {
			free(nt);
			return true;
		}
		if (!nt) {
			LK_TEST_HOOK("park.grow", t);	/* test builds only: about to allocate, no lock held */
			nt = table_alloc(want);
			if (!nt)
				return false;
		}
		for (size_t i = 0; i < t->nbuckets; i++)
			bucket_lock(&t->b[i]);
		/* relaxed: the lock of b[0] (acquire) orders us after any grower that replaced t */
		if (atomic_load_explicit(&cur, memory_order_relaxed) != t) {
			for (size_t i = 0; i < t->nbuckets; i++)
				bucket_unlock(&t->b[i]);
			continue;
		}
		for (size_t i = 0; i < t->nbuckets; i++) {
			struct bucket *ob = &t->b[i];
			struct thread_data *td = BQ(ob)->head, *next;

			for (; td; td = next) {
				/* relaxed: key only changes under the bucket lock we hold */
				const void *k = (const void *)atomic_load_explicit(&td->key, memory_order_relaxed);
				struct bucket *nb = &nt->b[hash_addr(nt, k)];

				next = td->next;
				queue_append(nb, td);
				/* relaxed: nt is unpublished; the release store of cur publishes it */
				atomic_store_explicit(&nb->waiters,
						      atomic_load_explicit(&nb->waiters, memory_order_relaxed) + 1,
						      memory_order_relaxed);
			}
			BQ(ob)->head = BQ(ob)->tail = NULL;
			/* relaxed: lockless readers of the stale table only need to see "not empty"
			 * eventually; a reader that still sees 0 is covered by the fence pairing (see top) */
			atomic_store_explicit(&ob->waiters, LKP_POISON, memory_order_relaxed);
		}
		t->retired_next = atomic_load_explicit(&retired, memory_order_relaxed);
		/* release: pairs with the acquire in atfork_child(), which follows t->retired_next
		 * (growers themselves are serialised: they hold every bucket of the table they replace) */
		atomic_store_explicit(&retired, t, memory_order_release);
		atomic_fetch_add_explicit(&retired_total, table_bytes_of(t->nbuckets), memory_order_relaxed);
		/* release: pairs with the acquire in get_table(): the moved queues and counts */
		atomic_store_explicit(&cur, nt, memory_order_release);
		atomic_fetch_add_explicit(&nresizes, 1, memory_order_relaxed);	/* relaxed: statistic */
		for (size_t i = 0; i < t->nbuckets; i++)
			bucket_unlock(&t->b[i]);
		return true;
	}
}

static void thread_exit(void *arg)
{
	struct thread_data *td = arg;

	td->registered = false;
	td->exited = true;
	/* relaxed: a count; growth decisions tolerate staleness */
	atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
}

static __attribute__((noinline)) struct thread_data *self_register(void)
{
	struct thread_data *td = &tls_td;
	size_t n;

	/*
	 * A TLS destructor that runs after ours (thread_exit) may still park: the thread data is
	 * valid until the thread is gone, but registering again would count the thread live forever
	 * when this is the last destructor round (nothing would call thread_exit again). A thread whose
	 * FIRST use of the lot is in its last destructor round stays counted: a sizing hint one too
	 * high, the only case left (there is no portable way to see that the thread is exiting).
	 */
	if (td->exited)
		return td;
	pthread_once(&once, once_init);
	pthread_setspecific(td_key, td);	/* non-NULL value: thread_exit() runs at thread exit */
	td->registered = true;
	n = atomic_fetch_add_explicit(&live, 1, memory_order_relaxed) + 1;	/* relaxed: a count */
	if (get_table()->nbuckets < LK_PARK_BUCKETS_PER_THREAD * n)
		(void)grow(LK_PARK_BUCKETS_PER_THREAD * n);	/* no memory: the old table keeps working */
	return td;
}

static inline struct thread_data *self(void)
{
	return LKP_LIKELY(tls_td.registered) ? &tls_td : self_register();
}

static void atfork_child(void)
{
	/*
	 * Single-threaded now, but the tables may have been built by another thread of the parent an
	 * instant before the fork, and fork() orders nothing between that thread and this one.
	 * acquire (cur): pairs with the release publication in get_table_slow()/grow(): the header
	 * and buckets we reset. acquire (retired): pairs with its release store in grow(): the
	 * retired_next links we follow. Everything after is this thread's own: relaxed.
	 */
	struct table *t = atomic_load_explicit(&cur, memory_order_acquire);
	struct table *r = atomic_load_explicit(&retired, memory_order_acquire), *next;

	if (t) {
		for (size_t i = 0; i < t->nbuckets; i++) {
			atomic_store_explicit(&t->b[i].lock, 0, memory_order_relaxed);
			atomic_store_explicit(&t->b[i].waiters, 0, memory_order_relaxed);
			BQ(&t->b[i])->head = BQ(&t->b[i])->tail = NULL;
		}
	}
	for (; r; r = next) {	/* a grower interrupted by fork may have retired `t` already */
		next = r->retired_next;
		if (r != t)
			free(r);
	}
	atomic_store_explicit(&retired, NULL, memory_order_relaxed);
	atomic_store_explicit(&retired_total, 0, memory_order_relaxed);
	atomic_store_explicit(&live, tls_td.registered ? 1 : 0, memory_order_relaxed);
	/*
	 * A fork from before_sleep: the forking thread is queued (in_park, futex 1), and the queue it
	 * is in is gone in the child. Wake it as an unpark with the normal token would, so that its park
	 * returns UNPARKED (lk_cond: a spurious wakeup; lk_mutex: it tries again) instead of sleeping for
	 * ever or, at its deadline, unlinking itself from a queue that no longer holds it: the child
	 * crashed there (the re-review of stop 36). Forking anywhere else inside lk_park is forking from
	 * a callback under the bucket lock, which locklab/park.h forbids. Not recovered: an unparker
	 * that had dequeued us and run its callback but not yet stored our token (docs/park.md, "Fork").
	 */
	/* relaxed (both): the child's only thread, reading and writing its own futex word */
	if (tls_td.in_park && atomic_load_explicit(&tls_td.futex, memory_order_relaxed)) {
		tls_td.unpark_token = LK_TOKEN_NORMAL;
		tls_td.next = NULL;
		atomic_store_explicit(&tls_td.futex, 0, memory_order_relaxed);
	}
}

/* ------------------------------------------------------------------------------------------------ */
/* Bucket locking with the table re-check                                                          */

static inline struct bucket *lock_bucket(const void *addr)
{
	for (;;) {
		struct table *t = get_table();
		struct bucket *b = &t->b[hash_addr(t, addr)];
#if LKP_BACKPTR
		/* the back-pointer load: touches the bucket's line before the lock, as hb->priv does */
		struct table *owner = BQ(b)->table;
#else
		struct table *owner = t;
#endif
		bucket_lock(b);
		/* relaxed: a grower stores cur before unlocking this bucket; our acquire of the lock
		 * orders this load after that store */
		if (LKP_LIKELY(atomic_load_explicit(&cur, memory_order_relaxed) == owner))
			return b;
		bucket_unlock(b);
	}
}

/* Lock the buckets of a1 and a2 in table t; false (nothing locked) when t is no longer current. */
static bool lock_bucket_pair_in(struct table *t, const void *a1, const void *a2, struct bucket **b1,
				struct bucket **b2)
{
	size_t i1 = hash_addr(t, a1), i2 = hash_addr(t, a2);

	*b1 = &t->b[i1];
	*b2 = &t->b[i2];
	/* lock in index order: growers lock every bucket in index order too */
	if (i1 <= i2) {
		bucket_lock(*b1);
		if (i1 != i2)
			bucket_lock(*b2);
	} else {
		bucket_lock(*b2);
		bucket_lock(*b1);
	}
	/* relaxed: ordered by the bucket lock acquire, as in lock_bucket() */
	if (LKP_LIKELY(atomic_load_explicit(&cur, memory_order_relaxed) == t))
		return true;
	bucket_unlock(*b1);
	if (*b1 != *b2)
		bucket_unlock(*b2);
	return false;
}

static inline void unlock_bucket_pair(struct bucket *b1, struct bucket *b2)
{
	bucket_unlock(b1);
	if (b1 != b2)
		bucket_unlock(b2);
}

/* The bucket currently holding `td` (its key may be changed by a concurrent requeue). */
static struct bucket *lock_bucket_of_thread(struct thread_data *td)
{
	for (;;) {
		/* relaxed: re-checked under the bucket lock below */
		uintptr_t k = atomic_load_explicit(&td->key, memory_order_relaxed);
		struct bucket *b = lock_bucket((const void *)k);

		/* relaxed: requeue changes key only under the bucket lock we now hold */
		if (atomic_load_explicit(&td->key, memory_order_relaxed) == k)
			return b;
		bucket_unlock(b);
	}
}

/*
 * waiters += d. Usually under the bucket lock, but a requeuer counts its pending requeue on the
 * target bucket before locking it, so every update is an atomic RMW.
 */
static inline void waiters_add(struct bucket *b, int d)
{
	/* relaxed: a count; lockless readers are ordered by the seq_cst fences described at the top */
	atomic_fetch_add_explicit(&b->waiters, (uint32_t)d, memory_order_relaxed);
}


/* Is any thread after `from` (or from the head when NULL) in b's queue parked on addr? */
static inline bool queue_has(struct bucket *b, struct thread_data *from, uintptr_t addr)
{
	for (struct thread_data *td = from ? from->next : BQ(b)->head; td; td = td->next)
		/* relaxed: key only changes under the bucket lock we hold */
		if (atomic_load_explicit(&td->key, memory_order_relaxed) == addr)
			return true;
	return false;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool deadline_passed(const struct timespec *d, clockid_t clock)
{
	struct timespec now;

	if (d->tv_sec < 0)
		return true;
	clock_gettime(clock, &now);
	return now.tv_sec > d->tv_sec || (now.tv_sec == d->tv_sec && now.tv_nsec >= d->tv_nsec);
}

static inline bool bad_addr(const void *addr)
{
	return !addr || ((uintptr_t)addr & 3);
}

/*
 * Waking: the unparker stores futex = 0 under the bucket lock (I2); from then on the thread may
 * return and exit, so its thread_data must not be touched again. The futex addresses are saved
 * first and FUTEX_WAKE is issued after the bucket is unlocked; a wake on the word of a thread that
 * already left is harmless (at worst a spurious wakeup of whoever reuses that memory, which every
 * futex user tolerates). A full batch is flushed under the lock.
 */
struct wake_batch {
	unsigned n;
	_Atomic uint32_t *w[32];
};

static inline void wake_flush(struct wake_batch *wb)
{
	for (unsigned i = 0; i < wb->n; i++)
		lk_futex_wake(wb->w[i], 1);
	wb->n = 0;
}

static inline void wake_add(struct wake_batch *wb, struct thread_data *td, lk_token_t token)
{
	_Atomic uint32_t *w = &td->futex;

	if (wb->n == 32)
		wake_flush(wb);
	td->unpark_token = token;
	/* release: pairs with the acquire load in the parker's sleep loop; publishes the token */
	atomic_store_explicit(w, 0, memory_order_release);
	wb->w[wb->n++] = w;
}

/* Lockless "nobody waits here" for callers without a callback to run under the lock. */
static inline bool empty_fast(const void *addr)
{
	struct table *t;

	if (!LKP_PRECHECK)
		return false;
	/* seq_cst fence: pairs with the fence after waiters++ in park() (Dekker, see top) */
	dekker_fence();
	/* acquire: pairs with the release publication of cur (the bucket array) */
	t = atomic_load_explicit(&cur, memory_order_acquire);
	if (!t)
		return true;	/* nobody ever parked */
	/* relaxed: ordered by the fence above */
	return atomic_load_explicit(&t->b[hash_addr(t, addr)].waiters, memory_order_relaxed) == 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* API                                                                                               */

/* lk_park (ops) and lkp_park_ex (xops): exactly one of the two is used (see park_internal.h). */
static int park_common(const void *addr, const struct lk_park_ops *ops, const struct lkp_park_ops *xops,
		       void *ctx, lk_token_t park_token, const struct timespec *deadline, clockid_t clock,
		       lk_token_t *unpark_token)
{
	void (*before_sleep)(void *) = xops ? xops->before_sleep : ops ? ops->before_sleep : NULL;
	void (*timed_out)(void *, const void *, bool) = xops ? xops->timed_out : ops ? ops->timed_out : NULL;
	struct thread_data *td;
	struct bucket *b;
	bool timed_out_now;
	bool was_last;
	int where = LKP_PARK_TAIL;
	uintptr_t k;

	if (bad_addr(addr))
		return -EINVAL;
	if (deadline && ((clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) || deadline->tv_nsec < 0 ||
			 deadline->tv_nsec >= 1000000000L))
		return -EINVAL;
	td = self();
	/*
	 * One record per thread, and it stays queued through before_sleep: a park from there (or from
	 * anything it calls that blocks: lk_mutex_lock, lk_cond_wait) would relink it into a second
	 * queue, cutting the first, and make this park return UNPARKED with nobody's token, the record
	 * still linked under the old key (a cycle at its next park). Refused before anything is locked.
	 * Owner-only field: no other thread reads it.
	 */
	if (td->in_park)
		return -EDEADLK;
	td->in_park = true;
	b = lock_bucket(addr);
	waiters_add(b, 1);
	/* seq_cst fence: pairs with the fence in empty_fast(): either the waker sees waiters != 0 or
	 * validate() below sees the waker's state change */
	dekker_fence();
	if (xops && xops->validate)
		where = xops->validate(ctx);
	else if (ops && ops->validate && !ops->validate(ctx))
		where = LKP_PARK_NO;
	if (where == LKP_PARK_NO) {
		waiters_add(b, -1);
		bucket_unlock(b);
		td->in_park = false;
		return LK_PARK_INVALID;
	}
	/* relaxed: the bucket lock orders these for every reader (all read under it) */
	atomic_store_explicit(&td->key, (uintptr_t)addr, memory_order_relaxed);
	atomic_store_explicit(&td->futex, 1, memory_order_relaxed);
	td->park_token = park_token;
	td->park_ns = now_ns();
	if (where == LKP_PARK_HEAD)
		queue_prepend(b, td);
	else
		queue_append(b, td);
	bucket_unlock(b);
	LK_TEST_HOOK("park.queued", addr);	/* test builds only: queued, not yet asleep */

	if (before_sleep)
		before_sleep(ctx);

sleep:
	timed_out_now = false;
	/* acquire: pairs with the release store in wake_add(); the unpark token is then visible */
	while (atomic_load_explicit(&td->futex, memory_order_acquire) != 0) {
		if (deadline) {
			if (deadline_passed(deadline, clock) ||
			    lk_futex_wait(&td->futex, 1, deadline, clock) == ETIMEDOUT) {
				timed_out_now = true;
				break;
			}
		} else {
			lk_futex_wait(&td->futex, 1, NULL, CLOCK_MONOTONIC);	/* 0/EAGAIN/EINTR: re-check */
		}
	}
	if (!timed_out_now)
		goto unparked;

	LK_TEST_HOOK("park.timeout", addr);	/* test builds only: timed out, bucket not yet locked */
	b = lock_bucket_of_thread(td);
	/* acquire: pairs with wake_add()'s release if an unparker beat the timeout */
	if (atomic_load_explicit(&td->futex, memory_order_acquire) == 0) {
		bucket_unlock(b);
		goto unparked;
	}
	k = atomic_load_explicit(&td->key, memory_order_relaxed);	/* relaxed: we hold the lock */
	/* still queued (I1): the primitive may keep us queued, in place, with a new deadline */
	if (xops && xops->expired && xops->expired(ctx, (const void *)k, &td->park_token, &deadline, &clock)) {
		bucket_unlock(b);
		goto sleep;
	}
	/* unlink, then tell the primitive, under the bucket lock */
	{
		struct thread_data **pp = &BQ(b)->head, *prev = NULL;

		while (*pp != td) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		*pp = td->next;
		if (BQ(b)->tail == td)
			BQ(b)->tail = prev;
	}
	waiters_add(b, -1);
	was_last = !queue_has(b, NULL, k);
	/* relaxed: nobody reads our futex word but us now that we are off the queue */
	atomic_store_explicit(&td->futex, 0, memory_order_relaxed);
	if (timed_out)
		timed_out(ctx, (const void *)k, was_last);
	bucket_unlock(b);
	td->in_park = false;
	return LK_PARK_TIMEDOUT;

unparked:
	if (unpark_token)
		*unpark_token = td->unpark_token;
	td->in_park = false;
	return LK_PARK_UNPARKED;
}

int LKP_PUBLIC(park)(const void *addr, const struct lk_park_ops *ops, void *ctx, lk_token_t park_token,
		     const struct timespec *deadline, clockid_t clock, lk_token_t *unpark_token)
{
	return park_common(addr, ops, NULL, ctx, park_token, deadline, clock, unpark_token);
}

/* Internal (park_internal.h): lk_park with head insertion and expired(). */
__attribute__((visibility("hidden"))) int LKP_PRIV(park_ex)(const void *addr, const struct lkp_park_ops *xops,
							  void *ctx, lk_token_t park_token,
							  const struct timespec *deadline, clockid_t clock,
							  lk_token_t *unpark_token)
{
	return park_common(addr, NULL, xops, ctx, park_token, deadline, clock, unpark_token);
}

/* Internal: is any thread queued on addr? The caller holds addr's bucket lock (a callback). */
__attribute__((visibility("hidden"))) bool LKP_PRIV(park_has_waiters_locked)(const void *addr)
{
	/* relaxed: the caller holds a bucket lock of the current table, which therefore stays current */
	struct table *t = atomic_load_explicit(&cur, memory_order_relaxed);

	return t && queue_has(&t->b[hash_addr(t, addr)], NULL, (uintptr_t)addr);
}

/* Internal: the same, taking addr's bucket lock. */
__attribute__((visibility("hidden"))) bool LKP_PRIV(park_has_waiters)(const void *addr)
{
	struct bucket *b;
	bool r;

	if (bad_addr(addr))
		return false;
	b = lock_bucket(addr);
	r = queue_has(b, NULL, (uintptr_t)addr);
	bucket_unlock(b);
	return r;
}

int LKP_PUBLIC(unpark_one)(const void *addr, lk_token_t (*callback)(void *ctx, struct lk_unpark_result r),
			   void *ctx)
{
	struct lk_unpark_result r = { 0 };
	struct wake_batch wb = { 0 };
	struct thread_data *td, *prev = NULL;
	struct bucket *b;
	lk_token_t token;

	if (bad_addr(addr))
		return -EINVAL;
	if (!callback && empty_fast(addr))
		return 0;
	b = lock_bucket(addr);
	for (td = BQ(b)->head; td; prev = td, td = td->next)
		/* relaxed: key only changes under the bucket lock we hold */
		if (atomic_load_explicit(&td->key, memory_order_relaxed) == (uintptr_t)addr)
			break;
	if (td) {
		if (prev)
			prev->next = td->next;
		else
			BQ(b)->head = td->next;
		if (BQ(b)->tail == td)
			BQ(b)->tail = prev;
		waiters_add(b, -1);
		r.unparked_threads = 1;
		r.have_more_threads = queue_has(b, prev, (uintptr_t)addr);
		r.waited_ns = now_ns() - td->park_ns;
	}
	token = callback ? callback(ctx, r) : LK_TOKEN_NORMAL;
	if (td)
		wake_add(&wb, td, token);
	bucket_unlock(b);
	wake_flush(&wb);
	return (int)r.unparked_threads;
}

int LKP_PUBLIC(unpark_all)(const void *addr, lk_token_t token)
{
	struct wake_batch wb = { 0 };
	struct thread_data *td, *next, **pp;
	struct bucket *b;
	int n = 0;

	if (bad_addr(addr))
		return -EINVAL;
	if (empty_fast(addr))
		return 0;
	b = lock_bucket(addr);
	BQ(b)->tail = NULL;
	for (pp = &BQ(b)->head, td = *pp; td; td = next) {
		next = td->next;
		/* relaxed: key only changes under the bucket lock we hold */
		if (atomic_load_explicit(&td->key, memory_order_relaxed) == (uintptr_t)addr) {
			*pp = next;
			n++;
			wake_add(&wb, td, token);	/* td is dead to us after this */
		} else {
			BQ(b)->tail = td;
			pp = &td->next;
		}
	}
	waiters_add(b, -n);
	bucket_unlock(b);
	wake_flush(&wb);
	return n;
}

int LKP_PUBLIC(unpark_requeue)(const void *from, const void *to, enum lk_requeue_op (*validate)(void *ctx),
			       lk_token_t (*callback)(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r),
			       void *ctx)
{
	struct lk_unpark_result r = { 0 };
	struct wake_batch wb = { 0 };
	struct thread_data *wake = NULL, *rq_head = NULL, *rq_tail = NULL, *td, *next, **pp;
	struct bucket *b1, *b2, *pend;
	enum lk_requeue_op op;
	unsigned max_requeue;
	lk_token_t token;

	if (bad_addr(from) || bad_addr(to) || !validate)
		return -EINVAL;
	/*
	 * Count the requeue on `to`'s bucket BEFORE validate() reads the state of `to` (the kernel's
	 * futex_hb_waiters_inc(hb2) before double_lock_hb): a waker of `to` that changes its state
	 * and then checks the count locklessly (empty_fast) either sees this pending count - and
	 * takes the bucket lock, finding the requeued threads once we are done - or validate() sees
	 * its state change. Counted after validate(), the waker could see 0 in between and leave
	 * the requeued threads asleep (issue 12, tests/test_park_requeue_race.c). The count must be
	 * on the table whose buckets we lock: retried with the table if a grower replaced it.
	 */
	for (;;) {
		struct table *t = get_table();

		pend = &t->b[hash_addr(t, to)];
		waiters_add(pend, 1);
		/* seq_cst fence: pairs with the fence in empty_fast() of a waker of `to` (Dekker) */
		dekker_fence();
		if (lock_bucket_pair_in(t, from, to, &b1, &b2))
			break;
		waiters_add(pend, -1);	/* a retired table: its counts are poisoned, never 0 */
	}
	op = validate(ctx);
	switch (op) {
	case LK_REQUEUE_UNPARK_ONE_REQUEUE_REST:
	case LK_REQUEUE_REQUEUE_ALL:
		max_requeue = ~0u;
		break;
	case LK_REQUEUE_REQUEUE_ONE:
		max_requeue = 1;
		break;
	case LK_REQUEUE_UNPARK_ONE:
		max_requeue = 0;
		break;
	default:	/* LK_REQUEUE_ABORT or garbage: nothing happens */
		waiters_add(b2, -1);	/* the pending requeue */
		unlock_bucket_pair(b1, b2);
		return op == LK_REQUEUE_ABORT ? 0 : -EINVAL;
	}
	BQ(b1)->tail = NULL;
	for (pp = &BQ(b1)->head, td = *pp; td; td = next) {
		next = td->next;
		/* relaxed: key only changes under the bucket lock we hold */
		if (atomic_load_explicit(&td->key, memory_order_relaxed) != (uintptr_t)from) {
			BQ(b1)->tail = td;
			pp = &td->next;
			continue;
		}
		if (!wake && (op == LK_REQUEUE_UNPARK_ONE_REQUEUE_REST || op == LK_REQUEUE_UNPARK_ONE)) {
			wake = td;
			r.unparked_threads = 1;
		} else if (r.requeued_threads < max_requeue) {
			td->next = NULL;
			if (rq_tail)
				rq_tail->next = td;
			else
				rq_head = td;
			rq_tail = td;
			r.requeued_threads++;
		} else {
			r.have_more_threads = true;
			BQ(b1)->tail = td;
			pp = &td->next;
			continue;
		}
		*pp = next;	/* unlink td from `from`'s queue */
	}
	waiters_add(b1, -(int)(r.unparked_threads + r.requeued_threads));
	if (rq_head) {
		for (td = rq_head; td; td = next) {
			next = td->next;
			/* relaxed: readers of key hold this bucket pair's lock, or re-check under it */
			atomic_store_explicit(&td->key, (uintptr_t)to, memory_order_relaxed);
			queue_append(b2, td);
		}
		waiters_add(b2, (int)r.requeued_threads);
	}
	/* the pending count goes only after the requeued threads are counted: it never reads 0 between */
	waiters_add(b2, -1);
	if (wake)
		r.waited_ns = now_ns() - wake->park_ns;
	token = callback ? callback(ctx, op, r) : LK_TOKEN_NORMAL;
	if (wake)
		wake_add(&wb, wake, token);
	unlock_bucket_pair(b1, b2);
	wake_flush(&wb);
	return (int)(r.unparked_threads + r.requeued_threads);
}

int LKP_PUBLIC(unpark_filter)(const void *addr, enum lk_filter_op (*filter)(void *ctx, lk_token_t park_token),
			      lk_token_t (*callback)(void *ctx, struct lk_unpark_result r), void *ctx)
{
	struct lk_unpark_result r = { 0 };
	struct wake_batch wb = { 0 };
	struct thread_data *head = NULL, *tail = NULL, *td, *next, **pp;
	struct bucket *b;
	lk_token_t token;
	bool stop = false;

	if (bad_addr(addr) || !filter)
		return -EINVAL;
	b = lock_bucket(addr);
	BQ(b)->tail = NULL;
	for (pp = &BQ(b)->head, td = *pp; td; td = next) {
		next = td->next;
		/* relaxed: key only changes under the bucket lock we hold */
		if (!stop && atomic_load_explicit(&td->key, memory_order_relaxed) == (uintptr_t)addr) {
			enum lk_filter_op f = filter(ctx, td->park_token);

			if (f == LK_FILTER_UNPARK) {
				*pp = next;
				td->next = NULL;
				if (tail)
					tail->next = td;
				else
					head = td;
				tail = td;
				if (!r.unparked_threads++)
					r.waited_ns = now_ns() - td->park_ns;
				continue;
			}
			r.have_more_threads = true;	/* skipped or stopped at: still parked */
			if (f != LK_FILTER_SKIP)
				stop = true;
		} else if (stop && atomic_load_explicit(&td->key, memory_order_relaxed) == (uintptr_t)addr) {
			r.have_more_threads = true;	/* relaxed: as above */
		}
		BQ(b)->tail = td;
		pp = &td->next;
	}
	waiters_add(b, -(int)r.unparked_threads);
	token = callback ? callback(ctx, r) : LK_TOKEN_NORMAL;
	for (td = head; td; td = next) {
		next = td->next;	/* read before wake_add(): td may be gone after it */
		wake_add(&wb, td, token);
	}
	bucket_unlock(b);
	wake_flush(&wb);
	return (int)r.unparked_threads;
}

void LKP_PUBLIC(park_get_stats)(struct lk_park_stats *st)
{
	/* acquire: pairs with the release publication of cur (nbuckets) */
	struct table *t = atomic_load_explicit(&cur, memory_order_acquire);

	memset(st, 0, sizeof(*st));
	st->buckets = t ? t->nbuckets : 0;
	st->bucket_bytes = sizeof(struct bucket);
	st->table_bytes = t ? table_bytes_of(t->nbuckets) : 0;
	/* relaxed: statistics, racy by nature */
	st->retired_bytes = atomic_load_explicit(&retired_total, memory_order_relaxed);
	st->live_threads = atomic_load_explicit(&live, memory_order_relaxed);
	st->resizes = atomic_load_explicit(&nresizes, memory_order_relaxed);
	st->layout = LKP_LAYOUT_NAME;
}

int LKP_PUBLIC(park_reserve)(size_t nbuckets)
{
	if (nbuckets == 0 || nbuckets > ((size_t)1 << 24))
		return -EINVAL;
	return grow(nbuckets) ? 0 : -ENOMEM;
}

#undef bucket
#undef table
#undef thread_data
#undef wake_batch
#undef cur
#undef live
#undef nresizes
#undef retired
#undef retired_total
#undef tls_td
#undef td_key
#undef once
#undef once_init
#undef thread_exit
#undef atfork_child
#undef atfork_register
#undef bucket_lock
#undef bucket_lock_slow
#undef bucket_unlock
#undef hash_addr
#undef table_alloc
#undef table_bytes_of
#undef get_table
#undef get_table_slow
#undef grow
#undef self
#undef self_register
#undef lock_bucket
#undef lock_bucket_pair_in
#undef unlock_bucket_pair
#undef lock_bucket_of_thread
#undef waiters_add
#undef queue_append
#undef queue_prepend
#undef park_common
#undef queue_has
#undef now_ns
#undef deadline_passed
#undef bad_addr
#undef wake_add
#undef wake_flush
#undef empty_fast
#undef BQ
#undef LKP_BACKPTR
#undef LKP_LAYOUT_NAME
#undef LKP_POISON
#undef LKP_SPIN
#undef LKP_MIN_BUCKETS
#undef LKP_PRECHECK
#undef dekker_fence
