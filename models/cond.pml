/*
 * models/cond.pml - lk_cond's wait / signal / broadcast with the requeue onto lk_mutex (issue 12
 * part 2, model d), against src/cond.c and the mutex side of it in src/mutex.c (CP, CR). Run by
 * scripts/check-models (`make check-models`); what it proves: docs/verification.md.
 *
 * Scenario (the usual predicate loop):
 *   W0, W1   lock m; while (!ready) lk_cond_wait(c, m); unlock m.
 *   S        lock m; ready = 1; then, in any of four ways: lk_cond_signal twice or lk_cond_broadcast,
 *            each before or after its unlock of m (the wake with m held requeues: REQUEUE_ONE /
 *            REQUEUE_ALL; with m free it unparks: UNPARK_ONE / UNPARK_ONE_REQUEUE_REST).
 * The mutex is lk_mutex's protocol as in models/mutex.pml: a contender may claim S (C) whenever S is
 * free and nobody is owed, then takes the free lock (SA) or gives up and parks again (SG); an unlock
 * that wakes a waiter sets W (UW, TOKEN_WAKE), which the woken thread clears when it runs (WC). No
 * deadlines.
 *
 * Model step                     source
 *   cond wait                     do_wait / wait_validate (c->mutex = m, queued on &c->mutex under
 *                                 c's bucket lock), wait_before_sleep (lk_mutex_unlock), sleep;
 *                                 woken: lk_mutex_lock_unparked(token)
 *   wake(all)                     wake(): c->mutex read without a lock; lk_unpark_requeue with both
 *                                 bucket locks (c's, then m's): signal_validate / broadcast_validate
 *                                 (mark_parked_if_locked = CP), the move, signal_callback /
 *                                 broadcast_callback (lkm_requeued = CR: H+n, Q+n, P if asked)
 *   mutex lock / unlock           F1, B, PP, V, SA, SG, F2/F3, unlock_slow (L first), U0 / UW / UH
 *
 * Properties (safety):
 *   no lost wakeup     no invalid end state: both waiters return (a waiter asleep for ever on the
 *                      condvar or on the mutex queue is a deadlock of this scenario);
 *   mutual exclusion   at most one thread holds m in its critical section, L set while one does;
 *   the requeued bound a waiter requeued onto m is owed from the requeue: at most (threads queued
 *                      on m ahead of it) other acquisitions start before its own, plus one when m
 *                      was free at the requeue (mutex invariant 6);
 *   bookkeeping        whenever no bucket lock is held: m's Q = its queue length, H = owed waiters
 *                      queued (requeued ones, park token 0), and H > 0 implies P;
 *                      c->mutex != 0 iff a thread is queued on c (cond invariant 1).
 *
 * @check safety       safety
 * @check lost_wakeup  safety  -DWAKEUP_ONLY
 *   (lost_wakeup: the same search without the requeued bound and without "H > 0 implies P", so
 *   that a requeue that forgets P shows as the lost wakeup it causes, not as its first symptom)
 *
 * Mutants (scripts/check-models requires each to FAIL the listed checks, for the listed reason):
 *   REQUEUE_NO_P     the requeue moves waiters onto m without setting PARKED (neither CP nor CR's
 *                    "asked"): m's unlock takes the inline path (no P) and wakes nobody; the
 *                    requeued waiter sleeps on m's queue for ever.
 * @mutant REQUEUE_NO_P       safety=assert lost_wakeup=end
 *   UNLOCK_BEFORE_QUEUE  the waiter releases m before it is queued on c (cond invariant 2 broken):
 *                    a signal in between finds nobody, and the waiter sleeps for ever.
 * @mutant UNLOCK_BEFORE_QUEUE safety=end lost_wakeup=end
 *   REQUEUE_NOT_OWED the requeue does not count the moved waiters in H: m's unlock wakes the head
 *                    (UW) and releases, so the requeued waiter can be overtaken.
 * @mutant REQUEUE_NOT_OWED   safety=assert
 */

#define NT	3		/* W0, W1, S */
#define SIG	2
#define NOTOK	0
#define HANDOFF	1
#define WAKETOK	2		/* TOKEN_WAKE: the unlocker set W for the woken thread */
#define NORMAL	3
#define NONE	255
/* enum lk_requeue_op */
#define ABORT			0
#define REQUEUE_ALL		1
#define UNPARK_ONE_REQUEUE_REST	2
#define UNPARK_ONE		3
#define REQUEUE_ONE		4

bit L, P, S, WK;		/* m's word (no fork generation; no saturation) */
byte H, Q;
bit mbl, cbl;			/* the bucket locks of &m->word and &c->mutex */
byte mq[NT]; byte mqlen;	/* m's queue */
byte cq[NT]; byte cqlen;	/* c's queue */
bit inmq[NT], incq[NT];		/* ghost */
bit owedtok[NT];		/* park token on m's queue: owed (a requeued condvar waiter: 0) */
byte tok[NT];			/* unpark token */
bit cmutex;			/* c->mutex != 0 (one mutex in this model) */
bit ready;			/* the predicate, under m */
byte cs;			/* ghost: threads holding m outside lk_cond_wait */
bit owed_since[NT];		/* ghost: requeued and not yet acquired */
short budget[NT];		/* ghost: acquisitions by others it may still see */
byte returned;			/* ghost: waiters that returned */

inline lock_b(b)
{
	atomic { b == 0 -> b = 1 }
}

inline unlock_b(b)
{
	atomic { assert(b == 1); b = 0 }
}

/* t acquires m (in the acquisition's own atomic step) */
inline count_acq(t)
{
	j = 0;
	do
	:: j < NT ->
		if
#ifndef WAKEUP_ONLY
		:: j != t && owed_since[j] -> budget[j]--; assert(budget[j] >= 0)
#endif
		:: else -> skip
		fi;
		j++
	:: else -> break
	od;
	owed_since[t] = 0;
	j = 0
}

/* remove entry k of m's queue; k, kk clobbered */
inline unlink_mq(k, kk)
{
	kk = k;
	do
	:: kk + 1 < mqlen -> mq[kk] = mq[kk + 1]; kk++
	:: else -> break
	od;
	mqlen--;
	mq[mqlen] = 0
}

/* m's unpark callback with its filter, under m's bucket lock: U0 / UH / UW */
inline unlock_callback()
{
	d_step {
		if
		:: mqlen == 0 ->
			L = 0; P = 0; H = 0; Q = 0
		:: mqlen > 0 && H > 0 ->
			k = 0;
			do
			:: k < mqlen && !owedtok[mq[k]] -> k++
			:: else -> break
			od;
			assert(k < mqlen);
			w = mq[k];
			inmq[w] = 0;
			unlink_mq(k, kk);
			if
			:: mqlen > 0 -> Q--; H--
			:: else -> P = 0; H = 0; Q = 0
			fi;
			tok[w] = HANDOFF;
			count_acq(w)
		:: mqlen > 0 && H == 0 ->
			w = mq[0];
			inmq[w] = 0;
			k = 0;
			unlink_mq(k, kk);
			if
			:: mqlen > 0 -> Q--
			:: else -> P = 0; H = 0; Q = 0
			fi;
			L = 0;
			if
			:: !WK -> WK = 1; tok[w] = WAKETOK	/* one woken waiter in flight */
			:: else -> tok[w] = NORMAL
			fi
		fi;
		k = 0; kk = 0; w = 0
	}
}

#define MCOUNT_OK	(Q == mqlen && H == (inmq[0] && owedtok[0] -> 1 : 0) + (inmq[1] && owedtok[1] -> 1 : 0) + (inmq[2] && owedtok[2] -> 1 : 0))
#ifdef WAKEUP_ONLY
#define P_OK		true
#else
#define P_OK		(H == 0 || P == 1)
#endif
#define C_OK		(cmutex == (cqlen > 0 -> 1 : 0))
active proctype monitor()
{
end:
	atomic {
		mbl == 0 && cbl == 0 && !(MCOUNT_OK && P_OK && C_OK) ->
		assert(MCOUNT_OK);
		assert(P_OK);
		assert(C_OK)
	}
}

proctype thread(byte t)
{
	byte k, kk, j, w, ret, uret, op, n, wk, how;
	bit parked, invalid, all, before;

	/* ---- the program ---- */
	ret = 1;
	goto lock;
r1:
	skip;
	d_step { assert(L == 1); cs++; assert(cs == 1) };
	if
	:: t == SIG -> goto signaller
	:: else -> skip
	fi;
loop:
	if
	:: ready -> goto out
	:: else -> skip
	fi;
	/* lk_cond_wait(c, m) */
	d_step { cs-- };
#ifdef UNLOCK_BEFORE_QUEUE
	uret = 1;
	goto unlock;
u1:
#endif
	lock_b(cbl);
	d_step {			/* wait_validate: claim c for m; queued (token 0) */
		cmutex = 1;
		cq[cqlen] = t; cqlen++;
		incq[t] = 1
	};
	unlock_b(cbl);
#ifndef UNLOCK_BEFORE_QUEUE
	uret = 1;			/* wait_before_sleep: lk_mutex_unlock */
	goto unlock;
u1:
#endif
	tok[t] != NOTOK;		/* sleep on c, or on m's queue after a requeue */
	assert(!incq[t] && !inmq[t]);
	ret = 2;
	if				/* lk_mutex_lock_unparked(m, token) */
	:: tok[t] == HANDOFF -> tok[t] = NOTOK; goto r2
	:: tok[t] == WAKETOK -> tok[t] = NOTOK; WK = 0; parked = 0; goto slow	/* WC */
	:: tok[t] == NORMAL -> tok[t] = NOTOK; goto lock
	fi;
r2:
	skip;
	d_step { assert(L == 1); cs++; assert(cs == 1) };
	goto loop;
out:
	skip;
	d_step { cs-- };
	uret = 2;
	goto unlock;
u2:
	returned++;
	goto done;

	/* ---- the signaller ---- */
signaller:
	ready = 1;
	if
	:: all = 0
	:: all = 1
	fi;
	if
	:: before = 1
	:: before = 0
	fi;
	if
	:: before -> goto wake
	:: else -> d_step { cs-- }; uret = 3; goto unlock
	fi;
u3:
	goto wake;
woke:
	if
	:: before -> d_step { cs-- }; uret = 4; goto unlock
	:: else -> goto done
	fi;
u4:
	goto done;

	/* ---- wake(c, all): lk_cond_signal twice, or lk_cond_broadcast ---- */
wake:
	how = 0;
wake_again:
	if
	:: cmutex == 0 -> goto wake_done	/* k.seen == 0: nobody waits */
	:: else -> skip
	fi;
	lock_b(cbl);			/* lk_unpark_requeue: c's bucket, then m's */
	lock_b(mbl);
	d_step {
		/* validate */
		if
		:: cmutex == 0 -> op = ABORT
		:: else ->
			if
			:: all -> cmutex = 0
			:: else -> skip
			fi;
			if
			:: L == 1 ->
#ifndef REQUEUE_NO_P
				P = 1;			/* CP */
#endif
				op = (all -> REQUEUE_ALL : REQUEUE_ONE)
			:: else -> op = (all -> UNPARK_ONE_REQUEUE_REST : UNPARK_ONE)
			fi
		fi;
		/* the lot: unpark one, requeue the rest (or one) onto m's queue, in order (a prefix of c's) */
		wk = NONE; n = 0; k = 0;
		if
		:: (op == UNPARK_ONE || op == UNPARK_ONE_REQUEUE_REST) && cqlen > 0 ->
			wk = cq[0]; incq[wk] = 0; k = 1
		:: else -> skip
		fi;
		do
		:: (op == REQUEUE_ALL || op == UNPARK_ONE_REQUEUE_REST || (op == REQUEUE_ONE && n == 0)) && k < cqlen ->
			w = cq[k]; incq[w] = 0;
			mq[mqlen] = w; inmq[w] = 1;
#ifndef REQUEUE_NOT_OWED
			owedtok[w] = 1;			/* park token 0: owed */
#else
			owedtok[w] = 0;
#endif
			owed_since[w] = 1;
			budget[w] = mqlen + (L == 0 -> 1 : 0);	/* queued ahead, +1 on a free mutex */
			mqlen++;
			n++;
			k++
		:: else -> break
		od;
		kk = 0;				/* drop the k threads taken off c's queue */
		do
		:: kk + k < cqlen -> cq[kk] = cq[kk + k]; kk++
		:: else -> break
		od;
		do
		:: kk < cqlen -> cq[kk] = 0; kk++
		:: else -> break
		od;
		cqlen = cqlen - k;
		/* the callbacks */
		if
		:: !all && op != ABORT && cqlen == 0 -> cmutex = 0
		:: else -> skip
		fi;
		if
		:: n > 0 ->				/* CR: lkm_requeued */
#ifndef REQUEUE_NO_P
			if
			:: all && op == UNPARK_ONE_REQUEUE_REST -> P = 1
			:: else -> skip
			fi;
#endif
#ifndef REQUEUE_NOT_OWED
			H = H + n;
#endif
			Q = Q + n
		:: else -> skip
		fi;
		if
		:: wk != NONE -> tok[wk] = NORMAL
		:: else -> skip
		fi;
		k = 0; kk = 0; w = 0
	};
	unlock_b(mbl);
	unlock_b(cbl);
wake_done:
	how++;
	if
	:: !all && how < 2 -> goto wake_again
	:: else -> goto woke
	fi;

	/* ---- lk_mutex_lock (ret: where to go on) ---- */
lock:
	atomic {			/* F1 */
		if
		:: L == 0 -> L = 1; count_acq(t); goto locked
		:: else -> skip
		fi
	};
	parked = 0;
slow:
	atomic {			/* B, C (claim S: any time it is free and H == 0), or PP */
		if
		:: L == 0 -> L = 1; count_acq(t); goto locked
		:: L == 1 && !S && H == 0 -> S = 1; goto spin
		:: L == 1 -> P = 1
		fi
	};
	goto park;
spin:
	do
	:: atomic { L == 0 -> L = 1; S = 0; count_acq(t); goto locked }	/* SA */
	:: atomic { L == 1 -> S = 0; P = 1; break }			/* SG */
	od;
park:
	lock_b(mbl);
	d_step {
		if
		:: L == 1 && P == 1 ->		/* V */
			Q++;
			if
			:: parked && H == 0 ->
				k = mqlen;
				do
				:: k > 0 -> mq[k] = mq[k - 1]; k--
				:: else -> break
				od;
				mq[0] = t
			:: else -> mq[mqlen] = t
			fi;
			mqlen++;
			inmq[t] = 1; owedtok[t] = 0;
			parked = 1; invalid = 0; k = 0
		:: else -> invalid = 1
		fi
	};
	unlock_b(mbl);
	if
	:: invalid -> goto slow
	:: else -> skip
	fi;
	tok[t] != NOTOK;
	assert(!inmq[t]);
	if
	:: tok[t] == HANDOFF -> tok[t] = NOTOK; goto locked
	:: tok[t] == WAKETOK -> tok[t] = NOTOK; WK = 0; goto slow	/* WC */
	:: tok[t] == NORMAL -> tok[t] = NOTOK; goto slow
	fi;
locked:
	if
	:: ret == 1 -> goto r1
	:: ret == 2 -> goto r2
	fi;

	/* ---- lk_mutex_unlock (uret: where to go on) ---- */
unlock:
	atomic {			/* F2/F3 */
		assert(L == 1);
		if
		:: !(P && (!(S || WK) || H > 0)) -> L = 0; goto unlocked
		:: else -> skip
		fi
	};
	atomic {			/* unlock_slow: L first, then the re-check */
		assert(L == 1);
		if
		:: !(P && (!(S || WK) || H > 0)) -> L = 0; goto unlocked
		:: else -> skip
		fi
	};
	lock_b(mbl);
	unlock_callback();
	unlock_b(mbl);
unlocked:
	if
	:: uret == 1 -> goto u1
	:: uret == 2 -> goto u2
	:: uret == 3 -> goto u3
	:: uret == 4 -> goto u4
	fi;
done:
	skip
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run thread(SIG)
	}
}
