/*
 * models/park.pml - the parking lot's park / unpark_one / unpark_all / unpark_requeue with the
 * lockless empty check (bucket.waiters and the seq_cst fence Dekker pairs), against
 * src/park_impl.h as fixed for issue 12 defect 2 (commit "park: a requeue counts its waiters on the
 * target before validate()"). Run by scripts/check-models (`make check-models`); what it proves
 * and what it does not: docs/verification.md. Table growth is models/park_grow.pml.
 *
 * Scenario (a condition variable's broadcast, reduced to its protocol):
 *   P0, P1  park on A while st[A] == 0 (validate). P0 has a deadline (it may time out at any moment
 *           after it queued: its timeout path races the wakers and the requeue); P1 has none.
 *   P2      parks on B while st[B] == 0 (no deadline).
 *   R       the waker of A: st[A] = 1, then lk_unpark_requeue(A -> B). Its validate() returns, while
 *           st[B] == 0 (B's waker will wake them), REQUEUE_ALL or UNPARK_ONE_REQUEUE_REST (either),
 *           and ABORT once st[B] == 1; after ABORT, R wakes A itself with lk_unpark_all(A).
 *   W       the waker of B: st[B] = 1, then either lk_unpark_all(B), or lk_unpark_one(B) until it
 *           returns 0 (both without callback: both take the lockless empty check).
 *   A and B hash to different buckets, or with -DSAME_BUCKET to the same one.
 *
 * Memory model: sequentially consistent, and every waiters update an atomic RMW (as in the source:
 * atomic_fetch_add). The seq_cst fences are what make the Dekker pairs (a store or RMW, fence, a
 * load of the other side's variable) behave as SC on real hardware; the correct model therefore
 * contains no reordering. Each fence's mutant (NO_*_FENCE below) lets the load after the missing
 * fence be performed before the store/RMW before it - the store->load reordering that a seq_cst
 * fence forbids and acquire/release do not - and spin must find the lost wakeup that results.
 * Queues and thread_data fields are only touched under the bucket lock: one step each.
 *
 * Model step                       source (src/park_impl.h)
 *   lock(b) / unlock(b)            bucket_lock() / bucket_unlock() (the mutex3 futex lock itself is
 *                                  not modelled: a test-and-set that blocks)
 *   wadd(b, d)                     waiters_add(): atomic_fetch_add, relaxed
 *   park()                         LKP_PUBLIC(park): lock_bucket, waiters_add(+1), dekker_fence,
 *                                  validate, enqueue (key, futex = 1, queue_append), unlock, sleep
 *                                  while futex == 1; deadline: lock_bucket_of_thread (key re-check
 *                                  loop), futex still 1 -> unlink, waiters_add(-1)
 *   empty_fast()                   empty_fast(): dekker_fence, lockless waiters load == 0
 *   unpark()                       LKP_PUBLIC(unpark_all) / LKP_PUBLIC(unpark_one) without callback:
 *                                  empty_fast, lock, unlink (matching key), waiters_add(-n),
 *                                  wake_add (token, then futex = 0 release), unlock
 *   requeuer                       LKP_PUBLIC(unpark_requeue): waiters_add(pend = to's bucket, +1),
 *                                  dekker_fence, lock_bucket_pair_in (index order), validate;
 *                                  ABORT -> waiters_add(b2, -1); else unlink from `from` (one to
 *                                  wake for UNPARK_ONE_REQUEUE_REST), key = to, queue_append(b2),
 *                                  waiters_add(b1, -moved), waiters_add(b2, +requeued),
 *                                  waiters_add(b2, -1), wake_add, unlock (the retry of
 *                                  lock_bucket_pair_in on a replaced table is park_grow.pml's)
 *
 * Properties
 *   safety   assertions: I1 (no bucket lock held => a queued thread is in exactly one queue, that
 *            of its key's bucket, with futex == 1), I2 (futex goes 1 -> 0 once, under the bucket
 *            lock, after the thread left its queue, token first), the waiter count (no bucket lock
 *            held => waiters == queue length + requeues pending on the bucket), counts never
 *            negative; and no invalid end state: every parker returns (a thread asleep for ever is
 *            a deadlock of this bounded scenario: a lost wakeup).
 *   ltl all_return  <> (every parker returned), under weak fairness: no lost wakeup as liveness.
 *
 * @check safety         safety
 * @check safety_same    safety        -DSAME_BUCKET
 * @check live           ltl:all_return
 * @check live_same      ltl:all_return -DSAME_BUCKET
 *
 * Mutants (scripts/check-models requires each to FAIL the listed checks, for the listed reason):
 *   DEFECT2          issue 12 defect 2 exactly as in the code before the fix: lock the pair,
 *                    validate(), move, and only then add the requeued threads to `to`'s count (and
 *                    fence). W changes st[B] after validate() read it, sees waiters == 0 and returns:
 *                    the requeued P1 sleeps on B for ever.
 * @mutant DEFECT2          safety=end safety_same=end live=cycle
 *   NO_UNDO          the fix without its undo on ABORT: `to`'s count stays one too high.
 * @mutant NO_UNDO          safety=assert
 *   EARLY_UNDO       the pending count dropped before the requeued threads are counted on `to`
 *                    (waiters_add(b2, -1) first): a lockless reader can see 0 in between.
 * @mutant EARLY_UNDO       safety=end
 *   NO_PARK_FENCE    park() without the fence between waiters++ and validate().
 * @mutant NO_PARK_FENCE    safety=end
 *   NO_WAKER_FENCE   empty_fast() without its fence: W's read of waiters before its st[B] store.
 * @mutant NO_WAKER_FENCE   safety=end
 *   NO_REQUEUE_FENCE the requeue's pending count without the fence before validate().
 * @mutant NO_REQUEUE_FENCE safety=end
 *   NO_KEY_RECHECK   the timeout path locks the bucket of the key it read without re-checking the
 *                    key under the lock (lock_bucket_of_thread()'s loop): a requeue in between moved
 *                    the thread, and it unlinks itself from the wrong queue.
 * @mutant NO_KEY_RECHECK   safety=assert
 */

#define A	0
#define B	1
#define NPARK	3		/* P0, P1 on A; P2 on B */
#define R	3		/* thread ids 3 and 4: the requeuer and B's waker (tokens: id + 1) */
#define W	4
#define NB	2
#define QMAX	3
#define NONE	0		/* where[]: 0 = in no queue, else bucket + 1 */

#ifdef SAME_BUCKET
#define H(k)	0
#else
#define H(k)	(k)
#endif

/* enum lk_requeue_op: the three validate() returns used here */
#define ABORT			0
#define REQUEUE_ALL		1
#define UNPARK_ONE_REQUEUE_REST	2

typedef queue { byte e[QMAX] };

bit lk[NB];			/* bucket.lock */
byte nlocked;			/* ghost: bucket locks held */
short waiters[NB];		/* bucket.waiters */
byte pend[NB];			/* ghost: requeues that counted themselves on the bucket and are not over */
queue q[NB];			/* bucket.head/tail: the FIFO, as an array */
byte qlen[NB];
byte key[NPARK];		/* thread_data.key */
bit futex[NPARK];		/* thread_data.futex */
byte tok[NPARK];		/* thread_data.unpark_token */
byte where[NPARK];		/* ghost: 1 + the bucket whose queue holds the thread, or NONE */
bit st[2];			/* the primitives' state: 1 = A's / B's wake condition published */
byte returned;			/* ghost: parkers that returned from park() */

inline wadd(b, d)		/* waiters_add(): atomic_fetch_add */
{
	d_step {
		waiters[b] = waiters[b] + d;
		assert(waiters[b] >= 0)
	}
}

inline wadd_pend(b)		/* the requeue's waiters_add(to's bucket, +1); ghost pend[] follows */
{
	d_step {
		waiters[b]++;
		pend[b]++
	}
}

inline lock(b)
{
	atomic { lk[b] == 0 -> lk[b] = 1; nlocked++ }
}

inline unlock(b)
{
	atomic { assert(lk[b] == 1); lk[b] = 0; nlocked-- }
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

inline enqueue(b, t)		/* queue_append(); caller holds b */
{
	d_step {
		assert(where[t] == NONE && qlen[b] < QMAX && lk[b] == 1);
		q[b].e[qlen[b]] = t;
		qlen[b]++;
		where[t] = b + 1
	}
}

inline unlink_at(b, i)		/* remove the entry at index i of b's queue (i is clobbered) */
{
	where[q[b].e[i]] = NONE;
	do
	:: i + 1 < qlen[b] -> q[b].e[i] = q[b].e[i + 1]; i++
	:: else -> break
	od;
	qlen[b]--;
	q[b].e[qlen[b]] = 0
}

inline wake(me, t)		/* wake_add(): token, then futex = 0 (release); after the unlink */
{
	assert(where[t] == NONE && futex[t] == 1);
	tok[t] = me + 1;
	futex[t] = 0
}

/*
 * lk_unpark_all(addr) / lk_unpark_one(addr, NULL, NULL); n = threads woken.
 * early: the caller's lockless read of waiters was already done (mutant NO_WAKER_FENCE), value ev.
 */
inline unpark(me, addr, all, n, early, ev)
{
	n = 0;
	/* empty_fast(): dekker_fence(), then the lockless load */
	if
	:: early -> e = (ev == 0); early = false
	:: else -> e = (waiters[H(addr)] == 0)
	fi;
	if
	:: e -> skip
	:: else ->
		lock(H(addr));
		d_step {
			i = 0;
			do
			:: i < qlen[H(addr)] && key[q[H(addr)].e[i]] == addr ->
				t = q[H(addr)].e[i];
				j = i;
				unlink_at(H(addr), j);
				wake(me, t);
				n++;
				if
				:: !all -> break
				:: else -> skip
				fi
			:: i < qlen[H(addr)] && key[q[H(addr)].e[i]] != addr -> i++
			:: else -> break
			od;
			i = 0; j = 0; t = 0
		}
		wadd(H(addr), -n);
		unlock(H(addr))
	fi
}

/* ---- lk_park(addr, validate: st[addr] == 0, deadline if timed) ------------------------------- */
proctype parker(byte t; byte addr; bool timed)
{
	byte b, k, i;
	bit v;			/* what validate() read */
	bool early = false;

	b = H(addr);
	lock(b);
#ifdef NO_PARK_FENCE
	if
	:: v = st[addr]; early = true	/* the load performed before the RMW became visible */
	:: skip
	fi;
#endif
	wadd(b, 1);
	/* dekker_fence() */
	if
	:: !early -> v = st[addr]
	:: else -> skip
	fi;
	if
	:: v == 1 ->			/* validate() false: LK_PARK_INVALID */
		wadd(b, -1);
		unlock(b);
		goto done
	:: else -> skip
	fi;
	d_step { key[t] = addr; futex[t] = 1 };
	enqueue(b, t);
	unlock(b);

	/* FUTEX_WAIT(futex, 1) until an unparker stores 0, or the deadline */
	if
	:: futex[t] == 0 -> goto unparked
	:: timed -> skip
	fi;
	/* deadline: lock_bucket_of_thread() - a requeue may move us meanwhile */
relock:
	k = key[t];
	lock(H(k));
#ifndef NO_KEY_RECHECK
	if
	:: key[t] != k -> unlock(H(k)); goto relock
	:: else -> skip
	fi;
#endif
	if
	:: futex[t] == 0 -> unlock(H(k)); goto unparked	/* an unparker beat the deadline */
	:: else -> skip
	fi;
	d_step {
		assert(where[t] == H(k) + 1);	/* I1: still queued, in its key's bucket */
		i = 0;
		do
		:: q[H(k)].e[i] == t -> break
		:: else -> i++
		od;
		unlink_at(H(k), i);
		i = 0;
		futex[t] = 0
	};
	wadd(H(k), -1);
	unlock(H(k));
	goto done;
unparked:
	assert(tok[t] != 0 && where[t] == NONE);	/* I2: the token was published with futex = 0 */
done:
	assert(where[t] == NONE);
	returned++
}

/* ---- R: st[A] = 1; lk_unpark_requeue(A, B, validate, NULL); on ABORT lk_unpark_all(A) ---------- */
active proctype requeuer()
{
	byte b1 = H(A), b2 = H(B), op, n, i, j, t, wk = NONE, ev;
	bool e, early = false, late = false;
	bit v;

	st[A] = 1;
#ifndef DEFECT2
#ifdef NO_REQUEUE_FENCE
	if
	:: late = true		/* the pending count becomes visible only after validate() read st[B] */
	:: skip
	fi;
#endif
	if
	:: !late -> wadd_pend(b2)	/* count on `to` first */
	:: else -> skip
	fi;
	/* dekker_fence() */
#endif
	lock_pair(b1, b2);
	v = st[B];		/* validate() */
#ifndef DEFECT2
	if
	:: late -> wadd_pend(b2)
	:: else -> skip
	fi;
#endif
	if
	:: v == 0 -> op = REQUEUE_ALL
	:: v == 0 -> op = UNPARK_ONE_REQUEUE_REST
	:: else -> op = ABORT
	fi;
	if
	:: op == ABORT ->
#if !defined(DEFECT2) && !defined(NO_UNDO)
		wadd(b2, -1);
#endif
#ifndef DEFECT2
		pend[b2]--;		/* ghost: the requeue is over */
#endif
		unlock_pair(b1, b2);
		unpark(R, A, true, n, early, ev);
		goto out
	:: else -> skip
	fi;
	/* unlink every thread parked on A from b1's queue, in order: the first one is woken for
	 * UNPARK_ONE_REQUEUE_REST, the others are appended to b2's queue with key = B */
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
#ifdef DEFECT2
	if
	:: n > 0 -> wadd(b2, n)		/* (and the fence, which no longer helps) */
	:: else -> skip
	fi;
#elif defined(EARLY_UNDO)
	wadd(b2, -1);
	wadd(b2, n);
	pend[b2]--;
#else
	wadd(b2, n);
	wadd(b2, -1);		/* the pending count goes after the requeued are counted */
	pend[b2]--;		/* ghost: the requeue is over */
#endif
	if
	:: wk != NONE -> d_step { wake(R, wk - 1); wk = NONE }
	:: else -> skip
	fi;
	unlock_pair(b1, b2);
out:
	skip
}

/* ---- W: st[B] = 1; lk_unpark_all(B), or lk_unpark_one(B) until nobody is left ----------------- */
active proctype waker()
{
	byte n, i, j, t, ev;
	bool e, early = false;

#ifdef NO_WAKER_FENCE
	if
	:: ev = waiters[H(B)]; early = true	/* empty_fast()'s load performed before the store */
	:: skip
	fi;
#endif
	st[B] = 1;
	if
	:: unpark(W, B, true, n, early, ev)
	:: do
	   :: unpark(W, B, false, n, early, ev);
	      if
	      :: n == 0 -> break
	      :: else -> skip
	      fi
	   od
	fi
}

/* the invariants, whenever no bucket lock is held (every queue change is done under one) */
#define I1(t)		(where[t] == NONE || (futex[t] == 1 && where[t] == H(key[t]) + 1))
#define COUNT(b)	(waiters[b] == qlen[b] + pend[b])
active proctype monitor()
{
end:
	atomic {
		nlocked == 0 && !(I1(0) && I1(1) && I1(2) && COUNT(0) && COUNT(1)) ->
		assert(I1(0) && I1(1) && I1(2));	/* (spin prints the one that fails) */
		assert(COUNT(0) && COUNT(1))
	}
}

init
{
	atomic {
		run parker(0, A, true);
		run parker(1, A, false);
		run parker(2, B, false)
	}
}

ltl all_return { <> (returned == NPARK) }
