// SPDX-License-Identifier: MIT
//
// preload/absl_mode.cc - the shim's calls into Abseil (C cannot call absl's C++ API).
//
// Debian's libabsl is built with deadlock detection on (absl::OnDeadlockCycle::kAbort, the default of
// a build without NDEBUG): every absl::Mutex operation records the lock in a per-thread held-locks
// list and a global lock graph, and an unlock from a thread other than the locker aborts ("thread
// releasing lock it does not hold"). glibc lets any thread unlock a normal mutex, and programs do it,
// so with LOCKLAB_LOCK=absl_mutex the shim selects absl's release-build behaviour, kIgnore, before the
// first lock.
//
// absl is not fork-safe while it builds its lazily initialised globals, and it registers no atfork
// handlers. The one that bites is the cycle clock's frequency: the first time a thread joins a
// non-empty absl::Mutex queue, absl reads it, and on x86 the first read measures the TSC for ~3 ms
// (NominalCPUFrequency, under a LowLevelCallOnce). A fork during those 3 ms gave the child a
// call-once that stays "running" forever: the child's first thread to join a non-empty queue spun in
// SpinLockWait for good (CI's failure of tests/test_preload_fork.c [absl_mutex]). So the shim's
// atfork prepare handler reads the frequency first (shim_absl_prefork): it returns at once when the
// measurement is done, waits for it when another thread is measuring, and measures when nobody has
// yet - in every case the child inherits a finished call-once. Not at load: absl keeps its lazy
// measurement, which tests/test_preload_nocancel.c relies on to open its cancellation window.
// Cancellation is disabled around the read: the measurement sleeps (nanosleep), and a cancellation
// acting there would leave the call-once "running" in the parent itself. Not on a thread that a signal
// handler interrupted inside absl's lock (shim.c, in_blocking_lock): the measurement may be that
// thread's own, and waiting for it would hang the parent (tests/test_preload_sigfork.c); such a child
// may inherit a running call-once, as before. Left alone: absl allocates a thread's identity on its
// first queued wait (LowLevelAlloc, which may mmap, under its arena spinlock) and frees it at thread
// exit under its free-list spinlock; a fork inside those windows (up to µs, not ms) can still hang
// the child.
//
// Compiled only when cmake/peers.cmake found absl (LAB_HAVE_ABSL).
#include <pthread.h>

#include <absl/base/internal/cycleclock.h>
#include <absl/synchronization/mutex.h>

extern "C" void shim_absl_release_mode(void)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

extern "C" void shim_absl_prefork(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	(void)absl::base_internal::CycleClock::Frequency();
	pthread_setcancelstate(old, &old);
}
