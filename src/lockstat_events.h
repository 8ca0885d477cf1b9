/* SPDX-License-Identifier: MIT */
/*
 * src/lockstat_events.h - THE list of slow-path events the statistics build counts (internal; the
 * kernel's lock_events_list.h in spirit). One line each:
 *
 *	LOCKSTAT_EVENT(name, "what one count means")
 *
 * src/lockstat.h turns the list into the enum and the per-thread counters; the lab reports every
 * event under its name (lab/workloads/mutex.c, "lock_stats"). A new event is one line here plus its
 * lockstat_inc() at the place it happens.
 *
 * lk_mutex (src/mutex.c):
 */
LOCKSTAT_EVENT(mutex_spin_start, "a waiter began a bounded spin on the lock word")
LOCKSTAT_EVENT(mutex_spin_success, "a spin ended with the lock acquired (no park)")
LOCKSTAT_EVENT(mutex_spin_ns_won, "ns in the relax loop of spins that took the lock (rounds x calibrated relax; no yields)")
LOCKSTAT_EVENT(mutex_spin_ns_lost, "ns in the relax loop of spins that gave up and parked (as mutex_spin_ns_won)")
LOCKSTAT_EVENT(mutex_spin_yield, "a spinner whose budget ran out yielded the CPU, still spinning (at most LKM_SPIN_YIELDS per spin)")
LOCKSTAT_EVENT(mutex_spin_ask, "a spinner alone behind the owner asked it to hand over the lock (lk_mutex_set_ask(1) only)")
LOCKSTAT_EVENT(mutex_spin_handed, "of mutex_spin_success: an unlock handed the lock to the spinner that asked")
LOCKSTAT_EVENT(mutex_park, "a waiter parked (went to sleep in the parking lot)")
LOCKSTAT_EVENT(mutex_wake, "an unlock woke a parked waiter")
LOCKSTAT_EVENT(mutex_handoff, "an unlock handed the lock directly to the woken waiter")
LOCKSTAT_EVENT(mutex_timeout, "a timed lock gave up at its deadline")
LOCKSTAT_EVENT(mutex_owed, "a parked waiter's handoff deadline passed with the lock held: it is owed the lock")
LOCKSTAT_EVENT(mutex_crowd_start, "a waiter began spinning beside the spinner instead of parking (LKM_CROWD builds only)")
LOCKSTAT_EVENT(mutex_crowd_success, "such a spin ended with the lock acquired (LKM_CROWD builds only)")
LOCKSTAT_EVENT(mutex_woken_took, "a waiter unparked without a handoff took the lock before parking again")
LOCKSTAT_EVENT(mutex_woken_repark, "a waiter unparked without a handoff parked again without taking the lock")
LOCKSTAT_EVENT(mutex_wake_more, "an unlock woke a waiter beside a spinner or a woken waiter (LKM_WAKE_MORE builds only)")
