// SPDX-License-Identifier: MIT
/*
 * locklab/locklab.hpp - locklab's locks as C++ standard-library lock types (C++17 or later).
 *
 *   locklab::mutex               lk_mutex: Lockable and TimedLockable, like std::timed_mutex
 *   locklab::condition_variable  lk_cond, for std::unique_lock<locklab::mutex>, like
 *                                std::condition_variable for std::unique_lock<std::mutex>
 *   locklab::ttas_spin_lock      lk_spin_ttas   (Lockable)
 *   locklab::ticket_spin_lock    lk_spin_ticket (Lockable)
 *   locklab::mcs_spin_lock       lk_spin_mcs, with the per-thread nodes of lk_spin_mcs_*_tls
 *   locklab::queued_spin_lock    lk_qspinlock   (Lockable)
 *
 * They work with std::lock_guard, std::unique_lock, std::scoped_lock and std::lock. Each wraps one C
 * object (native_handle() returns its address) and adds nothing to it: same size, no allocation,
 * constexpr default constructor (constant-initialised at namespace scope, like std::mutex),
 * trivial destructor, neither copyable nor movable. Ordering is the C API's: lock is an acquire,
 * unlock a release operation; the C headers say which operation pairs with which.
 *
 * Where locklab differs from the standard library, and what misuse does:
 *
 *   - Misuse that the standard leaves undefined and locklab detects ends the program with one line on
 *     stderr and abort(): unlocking a lock that is not locked (EPERM from the C API), waiting with a
 *     unique_lock that does not own its mutex, waiting on one condition_variable with two different
 *     mutexes at the same time (EINVAL). These functions are noexcept, as the standard's are, so
 *     they cannot throw; libstdc++ with _GLIBCXX_ASSERTIONS treats broken preconditions the same way.
 *   - Misuse that is not detected (as with std::mutex): unlocking a lock another thread holds (no
 *     lock word has room for an owner; this simply releases it), unlocking a free ttas_spin_lock (its
 *     unlock is one store, as tbb::spin_mutex's: a second unlock in a row can release another
 *     thread's hold), locking a mutex or spin lock the
 *     caller already holds (deadlock; mcs_spin_lock detects it, see there), destroying a lock that is
 *     held or waited on. lk_mutex_destroy(m.native_handle()) reports EBUSY for that when it matters.
 *   - Errors the standard reports with exceptions are reported the same way: std::system_error with
 *     the C API's errno in std::generic_category() (mcs_spin_lock::lock: EDEADLK, ENOMEM). Built
 *     with -fno-exceptions, they print one line and abort() instead.
 *   - Timed waits: steady_clock deadlines wait on CLOCK_MONOTONIC and system_clock deadlines on
 *     CLOCK_REALTIME (a clock change moves a system_clock wait, as POSIX's CLOCK_REALTIME waits).
 *     Other clocks wait on steady_clock for the remaining time and re-check Clock::now(), as
 *     libstdc++ does. Relative waits (try_lock_for, wait_for) use steady_clock. A deadline so far
 *     away that it cannot be represented means "no deadline"; durations are rounded up to whole
 *     nanoseconds, so a wait never ends before its deadline on the clock it was given.
 *   - condition_variable::wait may wake spuriously, as std::condition_variable's may.
 *   - locklab::mutex is not recursive, and try_lock may take a free mutex that has waiters queued
 *     (barging), as std::mutex::try_lock may.
 *
 * Thread-safety annotations, deadlock detection and priority inheritance are not provided.
 */
#ifndef LOCKLAB_LOCKLAB_HPP
#define LOCKLAB_LOCKLAB_HPP

#ifndef __cplusplus
#error "locklab/locklab.hpp is the C++ interface; C programs include locklab/locklab.h"
#endif

#include <cerrno>
#include <chrono>
#include <condition_variable>	// std::cv_status
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>		// std::unique_lock
#include <system_error>
#include <time.h>		// CLOCK_MONOTONIC, CLOCK_REALTIME, struct timespec
#include <type_traits>

#include "locklab/cond.h"
#include "locklab/mutex.h"
#include "locklab/qspinlock.h"
#include "locklab/spin_mcs.h"
#include "locklab/spin_ticket.h"
#include "locklab/spin_ttas.h"

namespace locklab {
namespace detail {

// Detected misuse inside a noexcept function: one line, then abort() (see the header comment).
[[noreturn]] inline void misuse(const char *where, int err, const char *what) noexcept
{
	std::fprintf(stderr, "%s: %s (%s)\n", where, what,
		     err == EPERM ? "EPERM" : err == EINVAL ? "EINVAL" : "error");
	std::abort();
}

// A C API error where the standard reports errors with exceptions (without exceptions, as
// libstdc++'s __throw_system_error does under -fno-exceptions: abort).
[[noreturn]] inline void throw_errno(int err, const char *where)
{
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
	throw std::system_error(err, std::generic_category(), where);
#else
	std::fprintf(stderr, "%s: %s\n", where, std::generic_category().message(err).c_str());
	std::abort();
#endif
}

// Deadlines beyond this many seconds since the clock's epoch (about 3000 years) are "never": the C
// API treats anything past year 2286 so, and clamping first keeps every conversion below in range.
constexpr long double never_s = 1e11L;

// A duration since a clock's epoch as a normalised timespec (tv_nsec in [0, 1e9)), rounded up to a
// whole nanosecond, saturated to +-never_s.
template <class Rep, class Period>
inline timespec to_timespec(const std::chrono::duration<Rep, Period> &d) noexcept
{
	using namespace std::chrono;
	const long double s_ld = duration<long double>(d).count();

	if (!(s_ld < never_s))	// also NaN for a floating-point Rep
		return timespec{static_cast<time_t>(never_s), 0};
	if (s_ld <= -never_s)
		return timespec{-static_cast<time_t>(never_s), 0};
	const seconds s = duration_cast<seconds>(d);
	nanoseconds ns = ceil<nanoseconds>(d - s);
	seconds whole = s;
	if (ns.count() < 0) {
		whole -= seconds(1);
		ns += seconds(1);
	} else if (ns >= seconds(1)) {
		whole += seconds(1);
		ns -= seconds(1);
	}
	return timespec{static_cast<time_t>(whole.count()), static_cast<long>(ns.count())};
}

// steady_clock::now() + rel, rounded up to the clock's tick and saturated at time_point::max().
template <class Rep, class Period>
inline std::chrono::steady_clock::time_point steady_after(const std::chrono::duration<Rep, Period> &rel)
{
	using namespace std::chrono;
	using tp = steady_clock::time_point;
	const tp now = steady_clock::now();

	if (!(duration<long double>(rel).count() > 0))
		return now;
	if (duration<long double>(rel) >= duration<long double>(tp::max() - now))
		return tp::max();
	return now + ceil<steady_clock::duration>(rel);
}

// abs - Clock::now(), or zero when abs has passed (abs - now could overflow for abs near min()).
template <class Clock, class Duration>
inline auto remaining(const std::chrono::time_point<Clock, Duration> &abs)
{
	const auto now = Clock::now();
	return now < abs ? abs - now : decltype(abs - now)::zero();
}

template <class Clock>
constexpr bool is_steady_v = std::is_same_v<Clock, std::chrono::steady_clock>;
template <class Clock>
constexpr bool is_system_v = std::is_same_v<Clock, std::chrono::system_clock>;

} // namespace detail

/*
 * lk_mutex (4 bytes, adaptive: spins while spinning pays, then parks). Meets the standard's Mutex,
 * Lockable and TimedLockable requirements; see locklab/mutex.h and docs/mutex.md.
 */
class mutex {
public:
	using native_handle_type = lk_mutex_t *;

	constexpr mutex() noexcept = default;
	~mutex() = default;
	mutex(const mutex &) = delete;
	mutex &operator=(const mutex &) = delete;

	// Blocks until acquired. Never throws (lk_mutex_lock cannot fail).
	void lock() { lk_mutex_lock(&m_); }

	// Acquires if free right now; never waits.
	bool try_lock() noexcept { return lk_mutex_trylock(&m_) == 0; }

	// Aborts when the mutex is not locked (EPERM).
	void unlock() noexcept
	{
		if (int e = lk_mutex_unlock(&m_))
			detail::misuse("locklab::mutex::unlock", e, "the mutex is not locked");
	}

	// try_lock_until(steady_clock::now() + rel). A zero or negative rel acts as try_lock.
	template <class Rep, class Period>
	bool try_lock_for(const std::chrono::duration<Rep, Period> &rel)
	{
		return try_lock_until(detail::steady_after(rel));
	}

	// Acquires, or returns false once Clock::now() >= abs. A deadline already past acts as try_lock.
	template <class Clock, class Duration>
	bool try_lock_until(const std::chrono::time_point<Clock, Duration> &abs)
	{
		if constexpr (detail::is_steady_v<Clock>) {
			return timedlock(CLOCK_MONOTONIC, detail::to_timespec(abs.time_since_epoch()));
		} else if constexpr (detail::is_system_v<Clock>) {
			return timedlock(CLOCK_REALTIME, detail::to_timespec(abs.time_since_epoch()));
		} else {
			for (;;) {
				if (try_lock_until(detail::steady_after(detail::remaining(abs))))
					return true;
				if (!(Clock::now() < abs))
					return false;
			}
		}
	}

	native_handle_type native_handle() noexcept { return &m_; }

private:
	bool timedlock(clockid_t clock, const timespec &ts)
	{
		int e = lk_mutex_timedlock(&m_, clock, &ts);
		if (e == 0)
			return true;
		if (e == ETIMEDOUT)
			return false;
		detail::throw_errno(e, "locklab::mutex::try_lock_until");
	}

	lk_mutex_t m_ = LK_MUTEX_INITIALIZER;
};

/*
 * lk_cond for std::unique_lock<locklab::mutex>: broadcast requeues the waiters onto the mutex
 * instead of waking them all at once. See locklab/cond.h and docs/cond.md.
 */
class condition_variable {
public:
	using native_handle_type = lk_cond_t *;

	constexpr condition_variable() noexcept = default;
	~condition_variable() = default;
	condition_variable(const condition_variable &) = delete;
	condition_variable &operator=(const condition_variable &) = delete;

	void notify_one() noexcept { lk_cond_signal(&c_); }
	void notify_all() noexcept { lk_cond_broadcast(&c_); }

	// Releases lk's mutex, sleeps until notified (or spuriously), re-acquires it.
	void wait(std::unique_lock<mutex> &lk) noexcept
	{
		check_owns(lk, "locklab::condition_variable::wait");
		if (int e = lk_cond_wait(&c_, lk.mutex()->native_handle()))
			misuse(e, "locklab::condition_variable::wait");
	}

	template <class Predicate>
	void wait(std::unique_lock<mutex> &lk, Predicate pred)
	{
		while (!pred())
			wait(lk);
	}

	// cv_status::timeout once Clock::now() >= abs; the mutex is held again either way.
	template <class Clock, class Duration>
	std::cv_status wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Duration> &abs)
	{
		if constexpr (detail::is_steady_v<Clock>) {
			return timedwait(lk, CLOCK_MONOTONIC, detail::to_timespec(abs.time_since_epoch()));
		} else if constexpr (detail::is_system_v<Clock>) {
			return timedwait(lk, CLOCK_REALTIME, detail::to_timespec(abs.time_since_epoch()));
		} else {
			wait_until(lk, detail::steady_after(detail::remaining(abs)));
			return Clock::now() < abs ? std::cv_status::no_timeout : std::cv_status::timeout;
		}
	}

	// Waits until pred() is true or the deadline passes; returns pred() (the last evaluation).
	template <class Clock, class Duration, class Predicate>
	bool wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Duration> &abs,
			Predicate pred)
	{
		while (!pred())
			if (wait_until(lk, abs) == std::cv_status::timeout)
				return pred();
		return true;
	}

	template <class Rep, class Period>
	std::cv_status wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &rel)
	{
		return wait_until(lk, detail::steady_after(rel));
	}

	template <class Rep, class Period, class Predicate>
	bool wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &rel, Predicate pred)
	{
		return wait_until(lk, detail::steady_after(rel), std::move(pred));
	}

	native_handle_type native_handle() noexcept { return &c_; }

private:
	static void check_owns(std::unique_lock<mutex> &lk, const char *where) noexcept
	{
		if (!lk.owns_lock())
			detail::misuse(where, EPERM, "the unique_lock does not own its mutex");
	}

	[[noreturn]] static void misuse(int e, const char *where) noexcept
	{
		detail::misuse(where, e, e == EPERM ? "the mutex is not locked"
						    : "another mutex is in use with this condition_variable");
	}

	std::cv_status timedwait(std::unique_lock<mutex> &lk, clockid_t clock, const timespec &ts) noexcept
	{
		check_owns(lk, "locklab::condition_variable::wait_until");
		int e = lk_cond_timedwait(&c_, lk.mutex()->native_handle(), clock, &ts);
		if (e == 0)
			return std::cv_status::no_timeout;
		if (e == ETIMEDOUT)
			return std::cv_status::timeout;
		misuse(e, "locklab::condition_variable::wait_until");
	}

	lk_cond_t c_ = LK_COND_INITIALIZER;
};

namespace detail {
// The spin locks whose C API is lock / trylock / unlock on one object, as one Lockable shape. Ops
// names the C functions (static members, not function-pointer template arguments: the C inline
// functions have internal linkage, and a type must be the same type in every translation unit).
template <class Ops>
class spin_lockable {
public:
	using native_handle_type = typename Ops::type *;

	constexpr spin_lockable() noexcept = default;
	~spin_lockable() = default;
	spin_lockable(const spin_lockable &) = delete;
	spin_lockable &operator=(const spin_lockable &) = delete;

	void lock() noexcept { Ops::lock(&l_); }
	bool try_lock() noexcept { return Ops::trylock(&l_) == 0; }
	// Aborts when the lock is not locked (EPERM; not ttas_spin_lock, whose unlock checks nothing).
	void unlock() noexcept
	{
		if (int e = Ops::unlock(&l_))
			misuse(Ops::unlock_name, e, "the lock is not locked");
	}
	native_handle_type native_handle() noexcept { return &l_; }

private:
	typename Ops::type l_{};	// all zero: the unlocked state (the C _INIT macros)
};

struct ttas_ops {
	using type = lk_spin_ttas;
	static constexpr const char *unlock_name = "locklab::ttas_spin_lock::unlock";
	static void lock(type *l) noexcept { lk_spin_ttas_lock(l); }
	static int trylock(type *l) noexcept { return lk_spin_ttas_trylock(l); }
	static int unlock(type *l) noexcept { return lk_spin_ttas_unlock(l); }
};
struct ticket_ops {
	using type = lk_spin_ticket;
	static constexpr const char *unlock_name = "locklab::ticket_spin_lock::unlock";
	static void lock(type *l) noexcept { lk_spin_ticket_lock(l); }
	static int trylock(type *l) noexcept { return lk_spin_ticket_trylock(l); }
	static int unlock(type *l) noexcept { return lk_spin_ticket_unlock(l); }
};
struct queued_ops {
	using type = lk_qspinlock;
	static constexpr const char *unlock_name = "locklab::queued_spin_lock::unlock";
	static void lock(type *l) noexcept { lk_qspin_lock(l); }
	static int trylock(type *l) noexcept { return lk_qspin_trylock(l); }
	static int unlock(type *l) noexcept { return lk_qspin_unlock(l); }
};
} // namespace detail

// TTAS with exponential backoff, then yields: 4 bytes, unfair; its unlock is one store and checks
// nothing (locklab/spin_ttas.h, "Misuse").
class ttas_spin_lock : public detail::spin_lockable<detail::ttas_ops> {
};

// Ticket lock: 4 bytes, FIFO; try_lock fails while anybody holds or waits (locklab/spin_ticket.h).
class ticket_spin_lock : public detail::spin_lockable<detail::ticket_ops> {
};

// The kernel's queued spinlock: 4 bytes, FIFO after the pending waiter (locklab/qspinlock.h).
class queued_spin_lock : public detail::spin_lockable<detail::queued_ops> {
};

/*
 * MCS queue lock (8 bytes; each waiter spins on its own node). The nodes come from a per-thread
 * table (lk_spin_mcs_lock_tls), so one thread may hold at most LK_SPIN_MCS_TLS_DEPTH (4) MCS locks
 * at once. Unlike the other locks here it detects two misuses, and reports them as exceptions
 * (std::system_error, generic_category) from lock() and try_lock(): EDEADLK when this thread
 * already holds the lock (the standard's resource_deadlock_would_occur), ENOMEM when it already
 * holds four. try_lock throws too (not only lock) so that std::lock and std::scoped_lock over more
 * than four MCS locks end with the exception, every lock released, instead of retrying forever.
 * unlock() aborts when this thread does not hold the lock (EPERM).
 */
class mcs_spin_lock {
public:
	using native_handle_type = lk_spin_mcs *;

	constexpr mcs_spin_lock() noexcept = default;
	~mcs_spin_lock() = default;
	mcs_spin_lock(const mcs_spin_lock &) = delete;
	mcs_spin_lock &operator=(const mcs_spin_lock &) = delete;

	void lock()
	{
		if (int e = lk_spin_mcs_lock_tls(&l_))
			detail::throw_errno(e, "locklab::mcs_spin_lock::lock");
	}
	bool try_lock()
	{
		int e = lk_spin_mcs_trylock_tls(&l_);
		if (e == 0)
			return true;
		if (e == EBUSY)
			return false;
		detail::throw_errno(e, "locklab::mcs_spin_lock::try_lock");
	}
	void unlock() noexcept
	{
		if (int e = lk_spin_mcs_unlock_tls(&l_))
			detail::misuse("locklab::mcs_spin_lock::unlock", e, "this thread does not hold the lock");
	}
	native_handle_type native_handle() noexcept { return &l_; }

private:
	lk_spin_mcs l_ = LK_SPIN_MCS_INIT;
};

} // namespace locklab

#endif /* LOCKLAB_LOCKLAB_HPP */
