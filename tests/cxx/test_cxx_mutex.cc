// SPDX-License-Identifier: MIT
/*
 * tests/cxx/test_cxx_mutex.cc - locklab::mutex as a standard Lockable / TimedLockable: every member,
 * with std::lock_guard, std::unique_lock, std::scoped_lock and std::lock; mutual exclusion under
 * contention; timed-lock timeouts on steady_clock, system_clock and a user clock (never before the
 * deadline); deadlines that cannot be represented (duration::max(), infinity, before the epoch);
 * scoped_lock over two mutexes taken in opposite orders (deadlock avoidance through try_lock); and
 * unlock of an unlocked mutex aborting with its message.
 */
#include <cmath>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <locklab/locklab.hpp>

#include "cxxtest.h"

using namespace std::chrono;
using namespace std::chrono_literals;

// ---- the type, at compile time ------------------------------------------------------------------

static_assert(!std::is_copy_constructible_v<locklab::mutex> && !std::is_copy_assignable_v<locklab::mutex>);
static_assert(!std::is_move_constructible_v<locklab::mutex> && !std::is_move_assignable_v<locklab::mutex>);
static_assert(std::is_nothrow_default_constructible_v<locklab::mutex>);
static_assert(std::is_trivially_destructible_v<locklab::mutex>);
static_assert(sizeof(locklab::mutex) == sizeof(lk_mutex_t));
static_assert(std::is_same_v<decltype(std::declval<locklab::mutex &>().native_handle()), lk_mutex_t *>);
static_assert(noexcept(std::declval<locklab::mutex &>().try_lock()));
static_assert(noexcept(std::declval<locklab::mutex &>().unlock()));
// constexpr constructor: a namespace-scope mutex is constant-initialised, like std::mutex
[[maybe_unused]] static constexpr locklab::mutex constant_initialised{};
static locklab::mutex global_mutex;

// ---- helpers ------------------------------------------------------------------------------------

// Holds `m` on another thread until release() (or destruction).
struct holder {
	locklab::mutex &m;
	std::atomic<int> state{0};	// 0 starting, 1 holds m, 2 asked to release
	std::thread t;
	milliseconds linger;

	explicit holder(locklab::mutex &mu, milliseconds release_delay = 0ms) : m(mu), linger(release_delay)
	{
		t = std::thread([this] {
			m.lock();
			state.store(1, std::memory_order_release);
			while (state.load(std::memory_order_acquire) != 2)
				std::this_thread::sleep_for(1ms);
			std::this_thread::sleep_for(linger);	// the releaser is (usually) blocked by now
			m.unlock();
		});
		while (state.load(std::memory_order_acquire) != 1)
			std::this_thread::yield();
	}
	void release() { state.store(2, std::memory_order_release); }
	~holder()
	{
		release();
		t.join();
	}
};

// ---- tests --------------------------------------------------------------------------------------

static void test_basic()
{
	locklab::mutex m;

	CHECK(m.try_lock());
	CHECK(!m.try_lock());				// not recursive
	CHECK_EQ(lk_mutex_trylock(m.native_handle()), EBUSY);	// the C API sees the same lock
	m.unlock();
	CHECK_EQ(lk_mutex_trylock(m.native_handle()), 0);
	CHECK(!m.try_lock());
	CHECK_EQ(lk_mutex_unlock(m.native_handle()), 0);
	m.lock();
	m.unlock();
	CHECK_EQ(lk_mutex_destroy(m.native_handle()), 0);	// unlocked, nobody waiting

	global_mutex.lock();
	CHECK(!global_mutex.try_lock());
	global_mutex.unlock();

	{
		std::lock_guard<locklab::mutex> g(m);
		CHECK(!m.try_lock());
	}
	CHECK(m.try_lock());
	m.unlock();

	std::unique_lock<locklab::mutex> lk(m, std::defer_lock);
	CHECK(!lk.owns_lock());
	CHECK(lk.try_lock());
	lk.unlock();
	CHECK(lk.try_lock_for(1s));
	lk.unlock();
	CHECK(lk.try_lock_until(steady_clock::now() + 1s));
	lk.unlock();
	CHECK(lk.try_lock_until(system_clock::now() + 1s));
	lk.unlock();
	lk.lock();
	CHECK(lk.owns_lock());
	locklab::mutex *raw = lk.release();
	CHECK(raw == &m && !m.try_lock());
	std::unique_lock<locklab::mutex> adopted(m, std::adopt_lock);
	CHECK(adopted.owns_lock());
}

// Every way of taking the mutex, from several threads at once: an unprotected counter stays exact
// and no two threads are ever inside together (ThreadSanitizer also sees any unordered access).
static void test_exclusion()
{
	const int threads = 4;
	locklab::mutex m;
	std::unique_lock<locklab::mutex> held[threads];	// per thread, for the unique_lock paths

	cxxt_exclusion(
		"mutex", threads, lkt_sanitized() ? 2000 : 20000, lkt_sanitized() ? 100 : 1000,
		[&](int t, long i) {
			bool busy = false;
			switch ((i + t) % 6) {
			case 0:
				m.lock();
				break;
			case 1:
				held[t] = std::unique_lock<locklab::mutex>(m);
				break;
			case 2:
				while (!m.try_lock()) {
					busy = true;
					std::this_thread::yield();
				}
				break;
			case 3:
				if (!m.try_lock_for(1h))
					std::abort();
				break;
			case 4:
				if (!m.try_lock_until(system_clock::now() + 1h))
					std::abort();
				break;
			default:
				held[t] = std::unique_lock<locklab::mutex>(m, std::try_to_lock);
				if (!held[t].owns_lock()) {
					busy = true;
					held[t].lock();
				}
				break;
			}
			return busy;
		},
		[&](int t, long i) {
			if ((i + t) % 6 == 1 || (i + t) % 6 == 5)
				held[t].unlock();
			else
				m.unlock();
		});
}

// A timed attempt on a held mutex fails, and not before its deadline on the clock it was given.
static void test_timeouts()
{
	locklab::mutex m;
	holder h(m);

	auto s0 = steady_clock::now();
	CHECK(!m.try_lock_for(30ms));
	CHECK(steady_clock::now() - s0 >= 30ms);

	auto sd = steady_clock::now() + 30ms;
	CHECK(!m.try_lock_until(sd));
	CHECK(steady_clock::now() >= sd);

	auto yd = system_clock::now() + 30ms;
	CHECK(!m.try_lock_until(yd));
	CHECK(system_clock::now() >= yd);

	auto cd = cxxt_clock::now() + 30ms;
	CHECK(!m.try_lock_until(cd));
	CHECK(cxxt_clock::now() >= cd);

	// fractional and coarse durations round up, not down
	auto f0 = steady_clock::now();
	const duration<double, std::milli> frac(20.5);
	CHECK(!m.try_lock_for(frac));
	CHECK(steady_clock::now() - f0 >= frac);

	// deadlines already past: an immediate failure on every clock
	CHECK(!m.try_lock_for(0s));
	CHECK(!m.try_lock_for(-1s));
	CHECK(!m.try_lock_until(steady_clock::time_point{}));
	CHECK(!m.try_lock_until(system_clock::time_point{} - 1500ms));	// before the epoch: tv_nsec stays in range
	CHECK(!m.try_lock_until(system_clock::time_point::min()));
	CHECK(!m.try_lock_until(cxxt_clock::now() - 1s));
	CHECK(!m.try_lock_until(cxxt_clock::time_point::min()));	// no overflow computing the rest
	CHECK(!m.try_lock_until(steady_clock::time_point::min()));

	// through std::unique_lock's timed constructors and members
	std::unique_lock<locklab::mutex> a(m, 10ms);
	CHECK(!a.owns_lock());
	std::unique_lock<locklab::mutex> b(m, steady_clock::now() + 10ms);
	CHECK(!b.owns_lock());
	std::unique_lock<locklab::mutex> c(m, std::try_to_lock);
	CHECK(!c.owns_lock());
	CHECK(!c.try_lock_until(system_clock::now() + 10ms));
}

// Deadlines that are far away, or not representable as a timespec, mean "no deadline": a held mutex
// released later is acquired; nothing overflows (UBSan checks the conversions).
static void test_far_deadlines()
{
	locklab::mutex m;

	CHECK(m.try_lock_for(hours::max()));
	m.unlock();
	CHECK(m.try_lock_for(duration<double>(INFINITY)));
	m.unlock();
	CHECK(m.try_lock_for(duration<double>(NAN)));		// NaN: no time at all, acts as try_lock
	m.unlock();
	CHECK(m.try_lock_until(steady_clock::time_point::max()));
	m.unlock();
	CHECK(m.try_lock_until(system_clock::time_point::max()));
	m.unlock();
	CHECK((m.try_lock_until(time_point<steady_clock, hours>(hours::max()))));
	m.unlock();
	CHECK(m.try_lock_until(cxxt_clock::time_point::max()));
	m.unlock();

	// the waiter blocks (the holder lingers 20 ms after being asked) and then gets the mutex
	for (int clock = 0; clock < 4; clock++) {
		holder h(m, 20ms);
		h.release();
		bool got = clock == 0 ? m.try_lock_for(hours::max())
			 : clock == 1 ? m.try_lock_until(steady_clock::time_point::max())
			 : clock == 2 ? m.try_lock_until(system_clock::now() + hours(24 * 365))
				      : m.try_lock_until(cxxt_clock::now() + 1h);
		CHECK(got);
		if (got)
			m.unlock();
	}
}

// Two threads take the same two mutexes in opposite orders through std::scoped_lock / std::lock;
// the standard's deadlock avoidance (lock one, try_lock the other, back off) must never hang.
static void test_scoped_lock_two()
{
	const int iters = lkt_sanitized() ? 2000 : 20000;
	locklab::mutex a, b;
	long both = 0;

	cxxt_two_threads(
		iters,
		[&](int) {
			std::scoped_lock g(a, b);
			both++;
		},
		[&](int i) {
			if (i & 1) {
				std::scoped_lock g(b, a);
				both++;
			} else {
				std::lock(b, a);
				std::lock_guard<locklab::mutex> gb(b, std::adopt_lock), ga(a, std::adopt_lock);
				both++;
			}
		});
	CHECK_EQ(both, 2L * iters);
	CHECK(a.try_lock() && b.try_lock());
	a.unlock();
	b.unlock();
}

int main()
{
	lkt_watchdog(300);
	// misuse first: cxxt_aborts_with forks, which must happen before any thread exists
	CHECK(cxxt_aborts_with([] { locklab::mutex m; m.unlock(); },
			       "locklab::mutex::unlock: the mutex is not locked (EPERM)"));
	CHECK(cxxt_aborts_with([] { locklab::mutex m; m.lock(); m.unlock(); m.unlock(); },
			       "locklab::mutex::unlock: the mutex is not locked"));
	test_basic();
	test_exclusion();
	test_timeouts();
	test_far_deadlines();
	test_scoped_lock_two();
	return lkt_done("test_cxx_mutex");
}
