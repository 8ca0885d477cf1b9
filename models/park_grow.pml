/*
 * models/park_grow.pml - parking-lot table growth (src/park_impl.h, "Growth") against concurrent
 * park, unpark_all, unpark_one, timeouts, a requeue and a second grower; src/park_impl.h as fixed
 * for issue 12 (the requeue's pending count, taken again on a replaced table). Run by
 * scripts/check-models (`make check-models`); what it proves and what it does not:
 * docs/verification.md.
 *
 * Scenario (the basic configuration)
 *   P0  parks on A (no deadline).          P1  parks on B (no deadline).
 *   G1, G2  both grow the table to 2 buckets (grow(2), as self_register() does when threads
 *       arrive): one wins, the other must notice (the re-check of `cur` after locking) and return.
 *   W   st[A] = 1; lk_unpark_all(A) (lockless empty check: load `cur`, then the bucket's waiters);
 *       then, once both growers have returned, st[B] = 1 and lk_unpark_one(B) until it returns 0.
 *       So P1, when it parked before the growth, stays parked across it: growth must complete with a
 *       thread parked in the table (it never waits for the table to go idle).
 * Configurations
 *   -DOLD_SHARED  table 0 has one bucket that A and B share: growth also splits a queue.
 *   -DTIMED       adds P2, parked on A with a deadline (it may time out at any moment after it
 *                 queued; its lock_bucket_of_thread() then races the growth).
 *   -DREQUEUE     R wakes A instead of W: st[A] = 1, then lk_unpark_requeue(A -> B) (validate():
 *                 REQUEUE_ALL or UNPARK_ONE_REQUEUE_REST while st[B] == 0, else ABORT and
 *                 lk_unpark_all(A)); W only does st[B] = 1 and lk_unpark_one(B) until 0, without
 *                 waiting for the growth. The requeue counts itself on `to`'s bucket of the table it
 *                 loaded, locks the pair in that table and, if a grower replaced it, uncounts (on
 *                 the retired table) and retries on the new one.
 *   -DONE_GROWER  leaves G2 out. TIMED and REQUEUE run with one grower and for safety only: with
 *                 two growers they have 10-100x the states (minutes, not seconds), and a thread
 *                 with a deadline always returns, so liveness says nothing new about it.
 *
 * Tables: table 0 (the first, current at start), table 1 (G1's new table), table 2 (G2's). A bucket
 * index b belongs to table b / 2; table t hashes A to bucket 2t and B to 2t + 1 (with -DOLD_SHARED
 * table 0 hashes both to bucket 0).
 *
 * Memory model: sequentially consistent; every waiters update by a lock holder or a requeuer is an
 * atomic RMW, the grower's counts in the unpublished table and its poison are plain stores, as in
 * the source. (The Dekker pairs' fences and what removing each breaks: models/park.pml.) The
 * grower's stores, then the release store of `cur`, and the readers' acquire load of `cur`, are one
 * SC step each, in source order. Allocation is not modelled (grow() allocates before locking).
 *
 * Model step                       source (src/park_impl.h)
 *   lock(b) / unlock(b)            bucket_lock() / bucket_unlock()
 *   lock_bucket(addr)              lock_bucket(): t = cur (acquire), lock t's bucket, re-check
 *                                  cur == owner table (else unlock and retry)
 *   unpark(): empty check          empty_fast(): fence, t = cur (acquire), waiters of t's bucket == 0
 *                                  (two separate loads: a grower may run between them)
 *   parker                         LKP_PUBLIC(park) (lock_bucket, waiters++, validate, enqueue,
 *                                  unlock, sleep; deadline: lock_bucket_of_thread, unlink)
 *   unpark()                       LKP_PUBLIC(unpark_all) / LKP_PUBLIC(unpark_one) without callback
 *   requeuer (-DREQUEUE)           LKP_PUBLIC(unpark_requeue): the retry loop around
 *                                  waiters_add(pend, 1), dekker_fence, lock_bucket_pair_in(t, ...),
 *                                  waiters_add(pend, -1) on failure; then validate and the move as
 *                                  in models/park.pml
 *   grower                         grow(): t = cur; big enough -> return; lock every bucket of t in
 *                                  index order; re-check cur == t (else unlock all, retry); move
 *                                  every queued thread, in queue order, to the new table's bucket of
 *                                  its key, counting it there; old waiters = LKP_POISON; cur = new
 *                                  (release); unlock the old buckets
 *
 * Properties
 *   safety   assertions: I1 (no bucket lock held => every queued thread is in its key's bucket of the
 *            current table), I3 (a lock holder modifies only buckets of the current table, the
 *            grower excepted; the queues of a retired table stay empty), the waiter count of every
 *            current bucket equals its queue length plus the requeues pending on it, I2 (futex
 *            1 -> 0 once, off the queue, token first); and no invalid end state (every parker
 *            returns, both growers return).
 *   ltl done  <> (every parker returned and both growers returned), under weak fairness.
 *   I4 (retired tables add up to less than the current one) is arithmetic, not protocol: checked by
 *   tests/test_park_grow.c and tests/test_park_layouts.c (retired_bytes < table_bytes).
 *
 * @check safety          safety
 * @check safety_shared   safety        -DOLD_SHARED
 * @check safety_timed    safety        -DTIMED -DONE_GROWER
 * @check safety_requeue  safety        -DREQUEUE -DONE_GROWER
 * @check safety_rq_shared safety       -DREQUEUE -DONE_GROWER -DOLD_SHARED
 * @check live            ltl:done
 * @check live_shared     ltl:done      -DOLD_SHARED
 *
 * Mutants (scripts/check-models requires each to FAIL the listed checks, for the listed reason):
 *   NO_POISON          the grower zeroes the old counts instead of poisoning them: W loads the old
 *                      `cur`, the grower moves P0 and zeroes, W reads 0 and returns; P0 sleeps.
 * @mutant NO_POISON          safety=end live=cycle
 *   NO_RECHECK         lock_bucket() without the re-check of `cur`: a parker that waited for a bucket
 *                      lock the grower held queues itself in the retired table.
 * @mutant NO_RECHECK         safety=assert
 *   NO_GROWER_RECHECK  grow() without the re-check after locking: the losing grower publishes a
 *                      second new table built from the (empty) retired one; threads are lost.
 * @mutant NO_GROWER_RECHECK  safety=assert
 *   WAIT_IDLE          growth that waits for the table to go idle (no parked thread in the old
 *                      table) before it starts: the seed-000 resize that never completes under load.
 * @mutant WAIT_IDLE          safety=end live=cycle
 *   STALE_PEND         the requeue counts itself once, on the table it saw first, and retries only
 *                      the pair lock: after a growth its count is on a retired bucket, W reads the
 *                      new table's 0 and returns, and the requeued P0 sleeps on B.
 * @mutant STALE_PEND         safety_requeue=end
 */

#define A	0
#define B	1
#ifdef TIMED
#define NPARK	3
#else
#define NPARK	2
#endif
#define W	3		/* thread ids: parkers 0..2, W 3, R 4 (the growers wake nobody) */
#define R	4
/* enum lk_requeue_op: the validate() returns used here */
#define ABORT			0
#define REQUEUE_ALL		1
#define UNPARK_ONE_REQUEUE_REST	2
#define NBK	6		/* 3 tables x 2 buckets */
#define QMAX	3
#define NONE	0		/* where[]: 0 = in no queue, else bucket + 1 */
#define POISON	64		/* LKP_POISON: never 0 */

#define OWNER(b)	((b) / 2)
#ifdef OLD_SHARED
#define H(t, k)		((t) == 0 -> 0 : 2 * (t) + (k))
#define NBUCKETS(t)	((t) == 0 -> 1 : 2)
#else
#define H(t, k)		(2 * (t) + (k))
#define NBUCKETS(t)	2
#endif

typedef queue { byte e[QMAX] };

byte cur;			/* the current table (`cur`) */
bit retired[3];			/* ghost: table t was replaced */
byte ngrown;			/* ghost: growers that returned */
bit lk[NBK];
byte nlocked;			/* ghost: bucket locks held */
short waiters[NBK];
byte pend[NBK];			/* ghost: requeues counted on the bucket and not uncounted yet */
queue q[NBK];
byte qlen[NBK];
byte key[NPARK];
bit futex[NPARK];
byte tok[NPARK];
byte where[NPARK];
bit st[2];
byte returned;

inline lock(b)
{
	atomic { lk[b] == 0 -> lk[b] = 1; nlocked++ }
}

inline unlock(b)
{
	atomic { assert(lk[b] == 1); lk[b] = 0; nlocked-- }
}

/* lock_bucket(addr): b = the locked bucket of the current table */
inline lock_bucket(addr, b)
{
	do
	:: b = H(cur, addr);
	   lock(b);
#ifndef NO_RECHECK
	   if
	   :: cur != OWNER(b) -> unlock(b)
	   :: else -> break
	   fi
#else
	   break
#endif
	od;
	skip		/* (a break may not jump into a following d_step) */
}

inline wadd(b, d)		/* waiters_add() by a lock holder: only on the current table (I3) */
{
	d_step {
		assert(lk[b] == 1 && OWNER(b) == cur);
		waiters[b] = waiters[b] + d;
		assert(waiters[b] >= 0)
	}
}

/* the requeue's pending count: an atomic RMW without the bucket lock, on whatever table the
 * requeuer loaded (the undo after a failed lock_bucket_pair_in() lands on a retired table) */
inline pend_add(b, d)
{
	d_step {
		waiters[b] = waiters[b] + d;
		pend[b] = pend[b] + d
	}
}

inline lock_pair(b1, b2)	/* lock_bucket_pair_in(): index order */
{
	if
	:: b1 == b2 -> lock(b1)
	:: b1 < b2 -> lock(b1); lock(b2)
	:: b1 > b2 -> lock(b2); lock(b1)
	fi
}

inline unlock_pair(b1, b2)
{
	unlock(b1);
	if
	:: b1 != b2 -> unlock(b2)
	:: else -> skip
	fi
}

inline enqueue(b, t)
{
	d_step {
		assert(where[t] == NONE && qlen[b] < QMAX && lk[b] == 1 && OWNER(b) == cur);
		q[b].e[qlen[b]] = t;
		qlen[b]++;
		where[t] = b + 1
	}
}

inline unlink_at(b, i)
{
	where[q[b].e[i]] = NONE;
	do
	:: i + 1 < qlen[b] -> q[b].e[i] = q[b].e[i + 1]; i++
	:: else -> break
	od;
	qlen[b]--;
	q[b].e[qlen[b]] = 0
}

inline wake(me, t)
{
	assert(where[t] == NONE && futex[t] == 1);
	tok[t] = me + 1;
	futex[t] = 0
}

inline unpark(me, addr, all, n)
{
	n = 0;
	/* empty_fast(): load cur, then that table's bucket count */
	tb = cur;
	if
	:: waiters[H(tb, addr)] == 0 -> skip
	:: else ->
		lock_bucket(addr, b);
		d_step {
			i = 0;
			do
			:: i < qlen[b] && key[q[b].e[i]] == addr ->
				t = q[b].e[i];
				j = i;
				unlink_at(b, j);
				wake(me, t);
				n++;
				if
				:: !all -> break
				:: else -> skip
				fi
			:: i < qlen[b] && key[q[b].e[i]] != addr -> i++
			:: else -> break
			od;
			i = 0; j = 0; t = 0
		}
		wadd(b, -n);
		unlock(b)
	fi;
	tb = 0
}

proctype parker(byte t; byte addr; bool timed)
{
	byte b, k, i;

	lock_bucket(addr, b);
	wadd(b, 1);
	if
	:: st[addr] == 1 -> wadd(b, -1); unlock(b); goto done	/* validate() false */
	:: else -> skip
	fi;
	d_step { key[t] = addr; futex[t] = 1 };
	enqueue(b, t);
	unlock(b);

	if
	:: futex[t] == 0 -> goto unparked
	:: timed -> skip
	fi;
	/* deadline: lock_bucket_of_thread(); growth may have moved us to another table */
	do
	:: k = key[t];
	   lock_bucket(k, b);
	   if
	   :: key[t] != k -> unlock(b)
	   :: else -> break
	   fi
	od;
	if
	:: futex[t] == 0 -> unlock(b); goto unparked
	:: else -> skip
	fi;
	d_step {
		assert(where[t] == b + 1);	/* I1 */
		i = 0;
		do
		:: q[b].e[i] == t -> break
		:: else -> i++
		od;
		unlink_at(b, i);
		i = 0;
		futex[t] = 0
	};
	wadd(b, -1);
	unlock(b);
	goto done;
unparked:
	assert(tok[t] != 0 && where[t] == NONE);
done:
	assert(where[t] == NONE);
	returned++
}

/* grow(2) by grower g (1 or 2), whose new table is table g */
proctype grower(byte g)
{
	byte t, b, i, x, nb;

retry:
	t = cur;
	if
	:: t != 0 -> goto out		/* the current table has enough buckets */
	:: else -> skip
	fi;
#ifdef WAIT_IDLE
	/* the design growth must not have: wait until no thread is parked in the old table */
	(waiters[H(0, A)] == 0 && waiters[H(0, B)] == 0);
#endif
	/* lock every bucket of t in index order */
	lock(H(t, A));
	if
	:: NBUCKETS(t) == 2 -> lock(H(t, B))
	:: else -> skip
	fi;
#ifndef NO_GROWER_RECHECK
	if
	:: cur != t ->
		unlock(H(t, A));
		if
		:: NBUCKETS(t) == 2 -> unlock(H(t, B))
		:: else -> skip
		fi;
		goto retry
	:: else -> skip
	fi;
#endif
	/* move every queued thread, in order, to its bucket of the new table; poison the old counts */
	d_step {
		b = H(t, A);
		do
		:: qlen[b] > 0 ->
			x = q[b].e[0];
			i = 0;
			unlink_at(b, i);
			nb = H(g, key[x]);
			q[nb].e[qlen[nb]] = x;
			qlen[nb]++;
			where[x] = nb + 1;
			waiters[nb]++
		:: else ->
#ifdef NO_POISON
			waiters[b] = 0;
#else
			waiters[b] = POISON;
#endif
			if
			:: NBUCKETS(t) == 2 && b == H(t, A) -> b = H(t, B)
			:: else -> break
			fi
		od;
		i = 0; x = 0; nb = 0; b = 0
	};
	d_step { retired[t] = 1; cur = g };	/* release store of cur */
	unlock(H(t, A));
	if
	:: NBUCKETS(t) == 2 -> unlock(H(t, B))
	:: else -> skip
	fi;
out:
	ngrown++
}

active proctype waker()
{
	byte n, i, j, t, tb, b;

#ifndef REQUEUE
	st[A] = 1;
	unpark(W, A, true, n);
	ngrown == 2;			/* B is woken only after the growth */
#endif
	st[B] = 1;
	do
	:: unpark(W, B, false, n);
	   if
	   :: n == 0 -> break
	   :: else -> skip
	   fi
	od
}

#ifdef REQUEUE
/* R: st[A] = 1; lk_unpark_requeue(A, B, validate, NULL); on ABORT lk_unpark_all(A) */
active proctype requeuer()
{
	byte tr, pb, b1, b2, op, n, i, j, t, tb, b, wk = NONE;

	st[A] = 1;
#ifndef STALE_PEND
	/* count on `to`'s bucket of the table about to be locked, fence, lock the pair in that table;
	 * when a grower replaced it meanwhile: unlock, uncount (on the retired table), retry */
	do
	:: tr = cur;
	   pb = H(tr, B);
	   pend_add(pb, 1);
	   b1 = H(tr, A);
	   b2 = pb;
	   lock_pair(b1, b2);
	   if
	   :: cur == tr -> break
	   :: else -> unlock_pair(b1, b2); pend_add(pb, -1)
	   fi
	od;
#else
	/* counted once, on the table first seen; the pair is locked in whatever table is current */
	pb = H(cur, B);
	pend_add(pb, 1);
	do
	:: tr = cur;
	   b1 = H(tr, A);
	   b2 = H(tr, B);
	   lock_pair(b1, b2);
	   if
	   :: cur == tr -> break
	   :: else -> unlock_pair(b1, b2)
	   fi
	od;
#endif
	/* validate(): requeue onto B while B's condition is unpublished */
	if
	:: st[B] == 0 -> op = REQUEUE_ALL
	:: st[B] == 0 -> op = UNPARK_ONE_REQUEUE_REST
	:: else -> op = ABORT
	fi;
	if
	:: op == ABORT ->
		pend_add(pb, -1);
		unlock_pair(b1, b2);
		unpark(R, A, true, n);
		goto out
	:: else -> skip
	fi;
	d_step {
		n = 0;
		i = 0;
		do
		:: i < qlen[b1] && key[q[b1].e[i]] == A ->
			t = q[b1].e[i];
			j = i;
			unlink_at(b1, j);
			if
			:: op == UNPARK_ONE_REQUEUE_REST && wk == NONE -> wk = t + 1
			:: else ->
				key[t] = B;
				q[b2].e[qlen[b2]] = t;
				qlen[b2]++;
				where[t] = b2 + 1;
				n++
			fi
		:: i < qlen[b1] && key[q[b1].e[i]] != A -> i++
		:: else -> break
		od;
		i = 0; j = 0; t = 0
	};
	wadd(b1, -(n + (wk != NONE -> 1 : 0)));
	wadd(b2, n);
	pend_add(pb, -1);		/* the pending count goes after the requeued are counted */
	if
	:: wk != NONE -> d_step { wake(R, wk - 1); wk = NONE }
	:: else -> skip
	fi;
	unlock_pair(b1, b2);
out:
	skip
}
#endif

/* the invariants whenever no bucket lock is held */
#define I1(t)	(where[t] == NONE || (futex[t] == 1 && where[t] == H(cur, key[t]) + 1))
#define INUSE(b)	((b) == H(OWNER(b), A) || (b) == H(OWNER(b), B))
#define BKT(b)	(!INUSE(b) || \
		 (OWNER(b) == cur && waiters[b] == qlen[b] + pend[b]) || \
		 (retired[OWNER(b)] && qlen[b] == 0) || \
		 (OWNER(b) != cur && !retired[OWNER(b)] && qlen[b] == 0 && waiters[b] == 0))
active proctype monitor()
{
end:
	atomic {
		nlocked == 0 && !(I1(0) && I1(1) && I1(NPARK - 1) && BKT(0) && BKT(1) && BKT(2) &&
				  BKT(3) && BKT(4) && BKT(5)) ->
		assert(I1(0) && I1(1) && I1(NPARK - 1));	/* (spin prints the one that fails) */
		assert(BKT(0) && BKT(1) && BKT(2) && BKT(3) && BKT(4) && BKT(5))
	}
}

init
{
	atomic {
		run parker(0, A, false);
		run parker(1, B, false);
#ifdef TIMED
		run parker(2, A, true);
#endif
		run grower(1);
#ifndef ONE_GROWER
		run grower(2)
#else
		ngrown++	/* G2 does not exist: counted as returned */
#endif
	}
}

ltl done { <> (returned == NPARK && ngrown == 2) }
