/* SPDX-License-Identifier: MIT */
/*
 * src/futex.h - thin wrappers over the futex(2) system call (private futexes only). Internal header.
 *
 * lk_futex_wait(uaddr, val, abs, clock):
 *   sleeps while *uaddr == val. Returns 0 when woken (possibly spuriously: callers always re-check their
 *   condition), EAGAIN when *uaddr != val at the time of the call (the kernel's value check, done under
 *   its hash-bucket lock, is what makes "check then sleep" free of lost wakeups), EINTR when a signal
 *   interrupted the sleep, ETIMEDOUT when the absolute deadline `abs` on `clock` (CLOCK_MONOTONIC or
 *   CLOCK_REALTIME) passed. abs == NULL sleeps without a deadline. Uses FUTEX_WAIT_BITSET so that the
 *   deadline is absolute on the chosen clock.
 * lk_futex_wake(uaddr, n): wakes up to n waiters; returns how many were woken.
 * lk_futex_requeue(uaddr, nwake, uaddr2, nrequeue, val): FUTEX_CMP_REQUEUE; returns woken+requeued or
 *   -EAGAIN when *uaddr != val.
 */
#ifndef LOCKLAB_SRC_FUTEX_H
#define LOCKLAB_SRC_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline int lk_futex_wait(_Atomic uint32_t *uaddr, uint32_t val, const struct timespec *abs,
				clockid_t clock)
{
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;

	if (abs && clock == CLOCK_REALTIME)
		op |= FUTEX_CLOCK_REALTIME;
	if (syscall(SYS_futex, uaddr, op, val, abs, NULL, FUTEX_BITSET_MATCH_ANY) == 0)
		return 0;
	return errno;
}

static inline int lk_futex_wake(_Atomic uint32_t *uaddr, int n)
{
	long r = syscall(SYS_futex, uaddr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);

	return r < 0 ? 0 : (int)r;
}

static inline int lk_futex_requeue(_Atomic uint32_t *uaddr, int nwake, _Atomic uint32_t *uaddr2,
				   int nrequeue, uint32_t val)
{
	long r = syscall(SYS_futex, uaddr, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, nwake,
			 (void *)(uintptr_t)nrequeue, uaddr2, val);

	return r < 0 ? -errno : (int)r;
}

#endif /* LOCKLAB_SRC_FUTEX_H */
