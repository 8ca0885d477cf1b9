/*
 * models/mutex.pml - lk_mutex's word protocol (issue 12 part 2, model a): lock fast path, barging,
 * the one spinner (S), parking with validate(), the unlock's wake (UW) and handoff (UH), the handoff
 * deadline's timer (EX/EH) and a condvar waiter requeued onto the mutex (CR), against src/mutex.c
 * (its header comment names the transitions; docs/mutex.md "The word protocol, for modelling").
 * Run by scripts/check-models (`make check-models`); what it proves: docs/verification.md.
 *
 * Scenario:
 *   T0, T1   lock / critical section / unlock, ITERS times each (lk_mutex_lock, lk_mutex_unlock).
 *   T2       a condvar waiter: asleep on the condvar until A requeues it onto the mutex queue,
 *            owed (park token 0, counted in H); then woken by an unlock (normally with the lock
 *            handed over), critical section, unlock.
 *   A        the thread a broadcast woke: requeues T2 onto the mutex (CR; the mutex held or free,
 *            whichever it is at that moment: REQUEUE_ALL's CP + CR or UNPARK_ONE_REQUEUE_REST's CR),
 *            then locks / unlocks the mutex once.
 *   M        a misuser: unlocks the mutex once while it is free (lk_mutex_unlock of an unlocked
 *            mutex, possibly while T2 sits requeued on the free mutex: P and H set, L clear).
 * The spinner's budget is a nondeterministic give-up (SG) at any moment while the lock is held, and
 * so is its ask (SK, stop 33): at any moment while the lock is held and nobody is owed, whatever P,
 * W and Q say (the code asks only when they are clear and its side-table heuristics agree: a
 * subset of these runs), and its withdrawal (SW).
 * With -DTIMERS a parked waiter that is not owed may reach its handoff deadline at any moment
 * (lock_expired: EX takes a free lock, EH makes it owed). Without TIMERS nobody is rescued by a
 * timer, so a lost wakeup shows as an invalid end state (a thread asleep for ever).
 *
 * Memory model: sequentially consistent; every CAS/RMW on the word is one atomic step (a decision
 * on the value it replaces, and the new value). The bucket lock is a test-and-set that blocks; the
 * queue, tokens, H and Q change only under it (as in the source).
 *
 * Model step                     source (src/mutex.c, locklab/mutex.h)
 *   F1                            lk_mutex_lock: fetch_or L
 *   B / C / PP                    lock_slow: barge, claim S (H == 0), set P
 *   SA / SG                       spin(): take the free lock clearing S (and A); give up: -S -A +P
 *                                 (L set)
 *   SK / AK / SW                  spin(): ask (+A; L held, H == 0); handed over (S cleared by UA,
 *                                 L set): -A, acquired; withdraw (S still ours): -A
 *   UA                            unlock_slow: A and S set, H == 0 -> clear S, L kept: the lock
 *                                 goes to the spinner that asked
 *   V (park)                      lock_validate under BL: L && P -> Q+1, queue at the head if it
 *                                 parked before in this call and H == 0, else at the tail
 *   EX / EH (TIMERS)              lock_expired under BL, still queued, not owed
 *   G1                            lk_mutex_unlock inline, first CAS: the word == L | the thread's
 *                                 guess (stop 25, lk_mutex_unlock_hint) -> clear L
 *   F2/F3                         lk_mutex_unlock inline: !A && !(P && (!(S || WK) || H > 0)) -> clear L,
 *                                 the guess := the word it released (less L); otherwise the
 *                                 guess := 0 and unlock_slow
 *   unlock_slow                   L first (EPERM), UA, re-check F3, then BL: U0 / UW / UH
 *   CR                            lkm_requeued (+ CP): P, H+1, Q+1, T2 appended at the tail
 *
 * Properties (safety; assertions and end states):
 *   mutual exclusion   at most one thread in a critical section, and L set while one is;
 *   no lost wakeup     no invalid end state (without TIMERS: every thread finishes);
 *   the owed bound     once a waiter is owed (EH, or requeued), at most (threads queued ahead of
 *                      it then) other acquisitions start before its own, plus one when it was
 *                      requeued onto a free mutex (invariant 6); a handoff (UH) only goes to the
 *                      first owed waiter in queue order and keeps L; a handover to the spinner
 *                      (UA) counts as an acquisition like any other;
 *   the ask            only the S holder sets or clears A (invariant 10): SG and SW assert that A
 *                      is theirs;
 *   bookkeeping        whenever BL is free: Q == queue length, H == owed waiters queued (invariants
 *                      4, 5 without saturation), queue non-empty or H > 0 implies P;
 *   EPERM              an unlock of the free mutex changes nothing and wakes nobody.
 *
 * @check safety         safety
 * @check safety_timers  safety  -DTIMERS
 * @check safety_iter2   safety  -DITERS=2
 *
 * Mutants (scripts/check-models requires each to FAIL the listed checks, for the listed reason):
 *   SPIN_IGNORES_H   the inline unlock ignores H (F3 with S set releases although a waiter is owed)
 *                    and SG gives up only on its budget: the spinner takes the lock past an owed
 *                    waiter.
 * @mutant SPIN_IGNORES_H   safety=assert safety_timers=assert
 *   NO_L_CHECK       unlock_slow decides on P, S and H before it looks at L (the code before this
 *                    fix): the misuser's unlock of the free mutex hands it to the requeued T2.
 * @mutant NO_L_CHECK       safety=assert
 *   NO_HANDOFF       unlocks never hand over: with H > 0 they wake the head and release the lock
 *                    like UW (the design before issue 12): an owed waiter is overtaken.
 * @mutant NO_HANDOFF       safety=assert safety_timers=assert
 *   NO_VALIDATE      park without validate()'s check of L and P under the bucket lock: a waiter
 *                    sleeps after the unlock that should have woken it.
 * @mutant NO_VALIDATE      safety=end
 *   NO_WC            the woken thread never clears W: every later unlock takes F3 (W set) and
 *                    wakes nobody, so parked waiters sleep for ever.
 * @mutant NO_WC            safety=end
 *   GUESS_UNCHECKED  the unlock's guess is the word its first CAS found, whether or not F3 may
 *                    release that word: a later unlock that finds the same word (P, nobody awake)
 *                    releases it by G1 and wakes nobody.
 * @mutant GUESS_UNCHECKED  safety_iter2=end
 *   ASK_NO_GUARD     a newcomer claims S while A is set (C ignores A): during a handover (UA done,
 *                    AK not yet) it takes an S that the asker reads as "not handed yet"; the asker
 *                    withdraws, gives up and parks owning the lock: nobody ever releases it.
 * @mutant ASK_NO_GUARD     safety=end
 *   UA_IGNORES_H     the unlock hands the lock to the spinner that asked although a waiter is owed:
 *                    the owed waiter is overtaken.
 * @mutant UA_IGNORES_H     safety=assert
 */

#ifndef ITERS
#define ITERS	1
#endif
#define NT	4		/* threads that take the lock: T0, T1, T2 (requeued), A */
#define RQ	2		/* T2 */
#define TA	3		/* A */
#define NOTOK	0
#define HANDOFF	1		/* TOKEN_HANDOFF: the lock is handed over, L kept */
#define WAKETOK	2		/* TOKEN_WAKE: the unlocker set W for the woken thread */
#define NORMAL	3		/* LK_TOKEN_NORMAL */

bit L, P, S, WK, AS;		/* the word: LOCKED, PARKED, SPINNING, WOKEN, ASKED */
byte spinner;			/* ghost: the thread that last claimed S (UA counts its acquisition) */
byte H, Q;			/* OWED, QUEUED (no saturation with 4 threads) */
bit bl;				/* the bucket lock of &m->word */
byte q[NT];			/* the bucket's FIFO (this address only) */
byte qlen;
bit inq[NT];			/* ghost: queued on the mutex */
bit owedtok[NT];		/* park token: owed (PARK_OWED, or 0 for a requeued condvar waiter) */
byte tok[NT];			/* unpark token, NOTOK until unparked */
byte cs;			/* ghost: threads in a critical section */
bit owed_since[NT];		/* ghost: owed and has not acquired since */
short budget[NT];		/* ghost: acquisitions by others it may still see before its own */
bit requeued;			/* ghost: A has requeued T2 */
/*
 * each thread's unlock guess (lk_mutex_unlock_hint): the word less L. Kept for T0 and T1 only, the
 * threads that unlock more than once: T2's and A's single unlock guesses 0, as a new thread's does.
 */
bit gP[NT], gS[NT], gW[NT];
byte gH[NT], gQ[NT];

inline lock_bl()
{
	atomic { bl == 0 -> bl = 1 }
}

inline unlock_bl()
{
	atomic { assert(bl == 1); bl = 0 }
}

/* remove the entry at index k of the queue (k, kk clobbered) */
inline unlink_at(k, kk)
{
	inq[q[k]] = 0;
	kk = k;
	do
	:: kk + 1 < qlen -> q[kk] = q[kk + 1]; kk++
	:: else -> break
	od;
	qlen--;
	q[qlen] = 0
}

/*
 * t acquires the lock (in the same atomic step as the acquisition: F1, B, SA, EX, or the UH that
 * hands it over): every other owed waiter sees one more acquisition before its own.
 */
inline count_acq(t)
{
	j = 0;
	do
	:: j < NT ->
		if
		:: j != t && owed_since[j] -> budget[j]--; assert(budget[j] >= 0)
		:: else -> skip
		fi;
		j++
	:: else -> break
	od;
	owed_since[t] = 0;
	j = 0
}

/* t enters its critical section: mutual exclusion */
inline enter_cs()
{
	d_step {
		assert(L == 1);
		cs++;
		assert(cs == 1)
	}
}

/*
 * The unpark callback with the filter, under BL (U0 / UW / UH). Whoever runs it held L (or, in the
 * mutant NO_L_CHECK, the misuser who did not).
 */
inline unlock_callback()
{
	d_step {
		if
		:: qlen == 0 ->					/* U0 */
			L = 0; P = 0; H = 0; Q = 0
#ifndef NO_HANDOFF
		:: qlen > 0 && H > 0 ->				/* UH: the first owed waiter */
			k = 0;
			do
			:: k < qlen && !owedtok[q[k]] -> k++
			:: else -> break
			od;
			assert(k < qlen);			/* invariant 4: one is queued */
			w = q[k];
			unlink_at(k, kk);
			if
			:: qlen > 0 -> Q--; H--
			:: else -> P = 0; H = 0; Q = 0
			fi;
			tok[w] = HANDOFF;			/* L kept */
			count_acq(w)
		:: qlen > 0 && H == 0 ->			/* UW: the head */
#else
		:: qlen > 0 ->					/* UW whatever H says */
#endif
			w = q[0];
			k = 0;
			if
			:: owedtok[w] -> H--			/* (NO_HANDOFF only: H == 0 otherwise) */
			:: else -> skip
			fi;
			unlink_at(k, kk);
			if
			:: qlen > 0 -> Q--
			:: else -> P = 0; H = 0; Q = 0
			fi;
			L = 0;
			if
			:: !WK -> WK = 1; tok[w] = WAKETOK	/* one woken waiter in flight */
			:: else -> tok[w] = NORMAL
			fi
		fi;
		k = 0; kk = 0
	}
}

/* whenever the bucket lock is free: invariants 4 and 5 (no saturation), P follows the queue */
#define OW(t)	(inq[t] && owedtok[t] -> 1 : 0)
#define INV	(Q == qlen && H == OW(0) + OW(1) + OW(2) + OW(3) && ((qlen == 0 && H == 0) || P == 1))
active proctype monitor()
{
end:
	atomic {
		bl == 0 && !INV ->
		assert(Q == qlen);
		assert(H == OW(0) + OW(1) + OW(2) + OW(3));
		assert((qlen == 0 && H == 0) || P == 1)
	}
}

proctype thread(byte t)
{
	byte k, kk, j, w, n, iter;
	bit may_spin, parked, owed, invalid, took, head, asked;

	if
	:: t == RQ ->			/* asleep on the condvar until requeued onto the mutex */
		requeued == 1;
		n = 1; iter = 0;
		goto wait
	:: t == TA ->			/* the woken thread: requeue T2 (CR), then lock the mutex */
		lock_bl();
		d_step {
			P = 1; H++; Q++;
			q[qlen] = RQ; qlen++;
			inq[RQ] = 1; owedtok[RQ] = 1;
			owed_since[RQ] = 1;
			budget[RQ] = qlen - 1 + (L == 0 -> 1 : 0);
			requeued = 1
		};
		unlock_bl();
		n = 1
	:: else -> n = ITERS
	fi;

	iter = 0;
lock:
	if
	:: iter == n -> goto done
	:: else -> skip
	fi;
	/* F1 */
	atomic {
		if
		:: L == 0 -> L = 1; count_acq(t); goto got
		:: else -> skip
		fi
	};
	may_spin = 1; parked = 0; owed = 0;
slow:
	atomic {
		if
		:: L == 0 -> L = 1; count_acq(t); goto got		/* B */
#ifdef ASK_NO_GUARD
		:: L == 1 && may_spin && !S && H == 0 -> S = 1; spinner = t; goto spin	/* C */
		:: L == 1 && !(may_spin && !S && H == 0) -> P = 1	/* PP (or P already set) */
#else
		:: L == 1 && may_spin && !S && !AS && H == 0 -> S = 1; spinner = t; goto spin	/* C */
		:: L == 1 && !(may_spin && !S && !AS && H == 0) -> P = 1	/* PP (or P already set) */
#endif
		fi
	};
	goto park;
spin:
	do
	:: atomic { L == 0 && S -> assert(!AS || asked); L = 1; S = 0; AS = 0; asked = 0; count_acq(t); goto got }	/* SA */
	:: atomic { L == 1 && S && !asked && !AS && H == 0 -> AS = 1; asked = 1 }	/* SK */
	:: atomic { asked && L == 1 && !S -> assert(AS); AS = 0; asked = 0; goto got }	/* AK: UA handed it over */
	:: atomic { asked && S -> assert(AS); AS = 0; asked = 0 }	/* SW */
	:: atomic { L == 1 && S -> assert(!AS || asked); S = 0; AS = 0; asked = 0; P = 1; break }	/* SG: the budget is spent, or H > 0 */
	od;
	may_spin = 0;
park:
	lock_bl();
	d_step {
#ifdef NO_VALIDATE
		if
		:: true ->
#else
		if
		:: L == 1 && P == 1 ->					/* V */
#endif
			P = 1;
			Q++;
			head = parked && H == 0;
			if
			:: head ->
				k = qlen;
				do
				:: k > 0 -> q[k] = q[k - 1]; k--
				:: else -> break
				od;
				q[0] = t
			:: else -> q[qlen] = t
			fi;
			qlen++;
			inq[t] = 1; owedtok[t] = owed;
			parked = 1; invalid = 0; k = 0
		:: else -> invalid = 1
		fi
	};
	unlock_bl();
	if
	:: invalid -> goto slow
	:: else -> skip
	fi;
wait:
	if
	:: tok[t] != NOTOK -> skip
#ifdef TIMERS
	:: !owed && t != RQ ->			/* the handoff deadline: lock_expired() under BL */
		lock_bl();
		d_step {
			if
			:: tok[t] != NOTOK -> skip	/* an unpark won */
			:: else ->
				assert(inq[t]);
				if
				:: L == 0 ->		/* EX, then TO: leave the queue */
					L = 1; took = 1;
					count_acq(t);
					k = 0;
					do
					:: q[k] != t -> k++
					:: else -> break
					od;
					unlink_at(k, kk);
					if
					:: qlen > 0 -> Q--
					:: else -> P = 0; H = 0; Q = 0
					fi
				:: else ->		/* EH: owed, in place */
					H++; owed = 1; owedtok[t] = 1;
					owed_since[t] = 1;
					k = 0;
					do
					:: q[k] != t -> k++
					:: else -> break
					od;
					budget[t] = k	/* the threads queued ahead of it */
				fi;
				k = 0; kk = 0
			fi
		};
		unlock_bl();
		if
		:: took -> took = 0; goto got
		:: else -> goto wait
		fi
#endif
	fi;
	/* unparked */
	assert(!inq[t]);
	if
	:: tok[t] == HANDOFF -> tok[t] = NOTOK; goto got
	:: tok[t] == WAKETOK ->
		tok[t] = NOTOK;
#ifndef NO_WC
		WK = 0;					/* WC: it runs; W is its to clear */
#endif
		may_spin = 1; owed = 0; goto slow
	:: tok[t] == NORMAL -> tok[t] = NOTOK; may_spin = 1; owed = 0; goto slow
	fi;
got:
	enter_cs();
	/* critical section */
	d_step { cs-- };
	/* unlock: G1, the first CAS, expecting L | the guess */
	atomic {
		assert(L == 1);
		if
		:: !AS && P == gP[t] && S == gS[t] && WK == gW[t] && H == gH[t] && Q == gQ[t] -> L = 0; goto unlocked
#ifdef GUESS_UNCHECKED
		:: else ->
			if
			:: t < RQ -> gP[t] = P; gS[t] = S; gW[t] = WK; gH[t] = H; gQ[t] = Q
			:: else -> skip
			fi
#else
		:: else -> skip
#endif
		fi
	};
	/* F2/F3, and the next guess */
	atomic {
		assert(L == 1);
		if
#ifdef SPIN_IGNORES_H
		:: !AS && !(P && !(S || WK)) ->
#else
		:: !AS && !(P && (!(S || WK) || H > 0)) ->
#endif
#ifndef GUESS_UNCHECKED
			if
			:: t < RQ -> gP[t] = P; gS[t] = S; gW[t] = WK; gH[t] = H; gQ[t] = Q
			:: else -> skip
			fi;
#endif
			L = 0; goto unlocked
		:: else ->
#ifndef GUESS_UNCHECKED
			gP[t] = 0; gS[t] = 0; gW[t] = 0; gH[t] = 0; gQ[t] = 0
#else
			skip
#endif
		fi
	};
	/* unlock_slow: L first, then UA or the re-check (one CAS) */
	atomic {
		assert(L == 1);		/* the owner's unlock never finds L clear */
		if
#ifdef UA_IGNORES_H
		:: AS && S -> S = 0; count_acq(spinner); goto unlocked	/* UA */
		:: !(AS && S) && !(P && (!(S || WK) || H > 0)) -> L = 0; goto unlocked
#else
		:: AS && S && H == 0 -> S = 0; count_acq(spinner); goto unlocked	/* UA */
		:: !(AS && S && H == 0) && !(P && (!(S || WK) || H > 0)) -> L = 0; goto unlocked
#endif
		:: else -> skip
		fi
	};
	lock_bl();
	unlock_callback();
	unlock_bl();
unlocked:
	iter++;
	goto lock;
done:
	skip
}

/* M: lk_mutex_unlock() of the mutex while it is free */
active proctype misuser()
{
	byte k, kk, j, w;

	atomic {
		L == 0 ->
		/* unlock_slow's first test (the inline path sends P && (!S || H > 0) there) */
#ifdef NO_L_CHECK
		if
		:: P && (!(S || WK) || H > 0) -> skip		/* on to the bucket: nothing stops it */
		:: else -> goto eperm
		fi
#else
		goto eperm				/* L clear: EPERM, nothing changes */
#endif
	};
	lock_bl();
	unlock_callback();
	unlock_bl();
eperm:
	skip
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run thread(RQ);
		run thread(TA)
	}
}
