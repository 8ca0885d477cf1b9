// SPDX-License-Identifier: MIT
//
// preload/absl_mode.cc - the shim's setup of Abseil (C cannot call absl's C++ API).
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
// (NominalCPUFrequency, under a LowLevelCallOnce). A fork during those 3 ms gives the child a
// call-once that stays "running" forever: the child's first thread to join a non-empty queue
// spins in SpinLockWait for good (tests/test_preload_fork.c's early forks hung every time). So the
// shim reads the frequency here, at load, before the program can have a second thread. Left alone:
// absl's per-thread identity is allocated on a thread's first queued wait under a short spinlock;
// a fork inside that window (a few hundred ns, not ms) can still hang the child.
//
// Compiled only when cmake/peers.cmake found absl (LAB_HAVE_ABSL).
#include <absl/base/internal/cycleclock.h>
#include <absl/synchronization/mutex.h>

extern "C" void shim_absl_setup(void)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
	(void)absl::base_internal::CycleClock::Frequency();
}
