// SPDX-License-Identifier: MIT
//
// preload/absl_mode.cc - one call into Abseil for the shim (C cannot call absl's C++ API).
//
// Debian's libabsl is built with deadlock detection on (absl::OnDeadlockCycle::kAbort, the default of
// a build without NDEBUG): every absl::Mutex operation records the lock in a per-thread held-locks
// list and a global lock graph, and an unlock from a thread other than the locker aborts ("thread
// releasing lock it does not hold"). glibc lets any thread unlock a normal mutex, and programs do it,
// so with LOCKLAB_LOCK=absl_mutex the shim selects absl's release-build behaviour, kIgnore, before the
// first lock. Compiled only when cmake/peers.cmake found absl (LAB_HAVE_ABSL).
#include <absl/synchronization/mutex.h>

extern "C" void shim_absl_release_mode(void)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}
