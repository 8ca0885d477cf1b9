// SPDX-License-Identifier: MIT
/*
 * tests/cxx/test_cxx_condvar.cc - locklab::condition_variable with std::unique_lock<locklab::mutex>:
 *
 *   - no lost wakeup: two threads hand a turn back and forth with predicate waits and notify_one
 *     (the rhythm in which a lost wakeup hangs at once; the watchdog turns that into a failure);
 *   - a bounded queue with several producers and consumers, every item consumed exactly once, with
 *     consumers that use short wait_for timeouts (a waiter that times out as it is notified);
 *   - notify_all wakes every waiter;
 *   - wait_until / wait_for time out on steady_clock, system_clock and a user clock, not before the
 *     deadline, returning cv_status::timeout with the mutex held again; predicate forms return the
 *     predicate's value;
 *   - misuse aborts with its message: waiting with a unique_lock that does not own the mutex, and
 *     waiting on one condition_variable with two mutexes at once.
 */
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include <locklab/locklab.hpp>

#include "cxxtest.h"

using namespace std::chrono;
using namespace std::chrono_literals;
using ulock = std::unique_lock<locklab::mutex>;

static_assert(!std::is_copy_constructible_v<locklab::condition_variable>);
static_assert(!std::is_move_constructible_v<locklab::condition_variable>);
static_assert(std::is_trivially_destructible_v<locklab::condition_variable>);
static_assert(sizeof(locklab::condition_variable) == sizeof(lk_cond_t));
static_assert(noexcept(std::declval<locklab::condition_variable &>().notify_one()));
static_assert(noexcept(std::declval<locklab::condition_variable &>().notify_all()));
static_assert(noexcept(std::declval<locklab::condition_variable &>().wait(std::declval<ulock &>())));
static_assert(std::is_same_v<decltype(std::declval<locklab::condition_variable &>().wait_for(
				     std::declval<ulock &>(), 1s)),
			     std::cv_status>);
[[maybe_unused]] static constexpr locklab::condition_variable constant_initialised{};

// The mutex is held by the caller: another thread cannot take it.
static bool held_elsewhere(locklab::mutex &m)
{
	bool got = true;
	std::thread([&] {
		got = m.try_lock();
		if (got)
			m.unlock();
	}).join();
	return !got;
}

static void test_ping_pong()
{
	const int rounds = lkt_sanitized() ? 5000 : 100000;
	locklab::mutex m;
	locklab::condition_variable cv;
	int turn = 0;		// 0: ping's move, 1: pong's
	long moves = 0;

	auto player = [&](int me) {
		for (int i = 0; i < rounds; i++) {
			ulock lk(m);
			cv.wait(lk, [&] { return turn == me; });
			turn = 1 - me;
			moves++;
			lk.unlock();
			cv.notify_one();
		}
	};
	std::thread a(player, 0), b(player, 1);
	a.join();
	b.join();
	CHECK_EQ(moves, 2L * rounds);
}

static void test_queue()
{
	const int producers = 3, consumers = 3, per_producer = lkt_sanitized() ? 3000 : 40000;
	const size_t cap = 8;
	locklab::mutex m;
	locklab::condition_variable not_full, not_empty;
	std::deque<int> q;
	int producers_left = producers;
	std::vector<int> seen(static_cast<size_t>(producers * per_producer), 0);
	std::atomic<long> timeouts{0};
	std::vector<std::thread> ts;

	for (int p = 0; p < producers; p++)
		ts.emplace_back([&, p] {
			for (int i = 0; i < per_producer; i++) {
				ulock lk(m);
				not_full.wait(lk, [&] { return q.size() < cap; });
				q.push_back(p * per_producer + i);
				lk.unlock();
				not_empty.notify_one();
			}
			ulock lk(m);
			if (--producers_left == 0)
				not_empty.notify_all();
		});
	for (int c = 0; c < consumers; c++)
		ts.emplace_back([&, c] {
			for (;;) {
				ulock lk(m);
				bool ready;
				if (c == 0) {
					// very short timeouts: waiters that time out just as they are notified
					while (!(ready = not_empty.wait_for(lk, 50us, [&] {
						return !q.empty() || producers_left == 0;
					})))
						timeouts.fetch_add(1, std::memory_order_relaxed);
				} else if (c == 1) {
					ready = not_empty.wait_until(lk, system_clock::now() + 1h, [&] {
						return !q.empty() || producers_left == 0;
					});
				} else {
					not_empty.wait(lk, [&] { return !q.empty() || producers_left == 0; });
					ready = true;
				}
				CHECK(ready);
				if (q.empty())
					return;	// producers_left == 0
				int v = q.front();
				q.pop_front();
				seen[static_cast<size_t>(v)]++;
				lk.unlock();
				not_full.notify_one();
			}
		});
	for (auto &t : ts)
		t.join();
	long once = 0;
	for (int v : seen)
		once += v == 1;
	CHECK_EQ(once, (long)seen.size());
	std::printf("queue: %zu items, %ld short waits timed out\n", seen.size(), timeouts.load());
}

static void test_notify_all()
{
	const int waiters = 8;
	locklab::mutex m;
	locklab::condition_variable cv;
	bool go = false;
	int waiting = 0, woke = 0;
	std::vector<std::thread> ts;

	for (int i = 0; i < waiters; i++)
		ts.emplace_back([&] {
			ulock lk(m);
			waiting++;
			cv.notify_all();	// tells the main thread (also waiting on cv) one more is here
			cv.wait(lk, [&] { return go; });
			woke++;
		});
	{
		ulock lk(m);
		cv.wait(lk, [&] { return waiting == waiters; });
		go = true;
	}
	cv.notify_all();
	for (auto &t : ts)
		t.join();
	CHECK_EQ(woke, waiters);
}

static void test_timeouts()
{
	locklab::mutex m;
	locklab::condition_variable cv;
	ulock lk(m);

	auto sd = steady_clock::now() + 30ms;
	CHECK(cv.wait_until(lk, sd) == std::cv_status::timeout);
	CHECK(steady_clock::now() >= sd);
	CHECK(lk.owns_lock() && held_elsewhere(m));

	auto yd = system_clock::now() + 30ms;
	CHECK(cv.wait_until(lk, yd) == std::cv_status::timeout);
	CHECK(system_clock::now() >= yd);
	CHECK(held_elsewhere(m));

	auto cd = cxxt_clock::now() + 30ms;
	CHECK(cv.wait_until(lk, cd) == std::cv_status::timeout);
	CHECK(cxxt_clock::now() >= cd);
	CHECK(held_elsewhere(m));

	auto s0 = steady_clock::now();
	CHECK(cv.wait_for(lk, 30ms) == std::cv_status::timeout);
	CHECK(steady_clock::now() - s0 >= 30ms);
	CHECK(held_elsewhere(m));

	// past deadlines time out at once, the mutex held again
	CHECK(cv.wait_for(lk, -1s) == std::cv_status::timeout);
	CHECK(cv.wait_until(lk, steady_clock::time_point{}) == std::cv_status::timeout);
	CHECK(cv.wait_until(lk, system_clock::time_point{} - 1500ms) == std::cv_status::timeout);
	CHECK(cv.wait_until(lk, cxxt_clock::now() - 1s) == std::cv_status::timeout);
	CHECK(cv.wait_until(lk, cxxt_clock::time_point::min()) == std::cv_status::timeout);
	CHECK(cv.wait_until(lk, steady_clock::time_point::min()) == std::cv_status::timeout);
	CHECK(held_elsewhere(m));

	// predicate forms: false on timeout with the predicate false; true at once when it holds
	int calls = 0;
	CHECK(!cv.wait_for(lk, 20ms, [&] { calls++; return false; }));
	CHECK(calls >= 2);	// checked before waiting and after the timeout
	CHECK(!cv.wait_until(lk, system_clock::now() + 20ms, [] { return false; }));
	CHECK(!cv.wait_until(lk, cxxt_clock::now() + 20ms, [] { return false; }));
	auto t0 = steady_clock::now();
	CHECK(cv.wait_for(lk, hours::max(), [] { return true; }));
	CHECK(cv.wait_until(lk, steady_clock::time_point::max(), [] { return true; }));
	CHECK(steady_clock::now() - t0 < 1h);	// it did not wait for the deadline (a sanity bound, not a timing)
	CHECK(held_elsewhere(m));

	// a notify before the deadline: no_timeout / true, on every clock, with far deadlines
	bool flag = false;
	for (int clock = 0; clock < 3; clock++) {
		flag = false;
		std::thread n([&] {
			std::this_thread::sleep_for(10ms);
			std::lock_guard<locklab::mutex> g(m);
			flag = true;
			cv.notify_one();
		});
		bool ok = clock == 0 ? cv.wait_for(lk, hours::max(), [&] { return flag; })
			: clock == 1 ? cv.wait_until(lk, system_clock::now() + 1h, [&] { return flag; })
				     : cv.wait_until(lk, cxxt_clock::time_point::max(), [&] { return flag; });
		CHECK(ok && flag);
		lk.unlock();
		n.join();
		lk.lock();
	}
}

int main()
{
	lkt_watchdog(300);
	// misuse first: cxxt_aborts_with forks, which must happen before any thread exists
	CHECK(cxxt_aborts_with(
		[] {
			locklab::mutex m;
			locklab::condition_variable cv;
			ulock lk(m, std::defer_lock);
			cv.wait(lk);
		},
		"locklab::condition_variable::wait: the unique_lock does not own its mutex"));
	CHECK(cxxt_aborts_with(
		[] {
			locklab::mutex m;
			locklab::condition_variable cv;
			ulock lk(m, std::defer_lock);
			cv.wait_for(lk, 1s);
		},
		"locklab::condition_variable::wait_until: the unique_lock does not own its mutex"));
	CHECK(cxxt_aborts_with(
		[] {
			// a thread waits with m1; this one then waits on the same condvar with m2
			static locklab::mutex m1, m2;
			static locklab::condition_variable cv;
			static bool waiting;
			std::thread t([] {
				ulock lk(m1);
				waiting = true;
				cv.wait(lk);	// never notified: the process aborts first
			});
			t.detach();
			for (;;) {
				ulock lk(m1);
				if (waiting)
					break;
			}
			ulock lk2(m2);
			cv.wait(lk2);
		},
		"locklab::condition_variable::wait: another mutex is in use with this condition_variable (EINVAL)"));
	test_ping_pong();
	test_queue();
	test_notify_all();
	test_timeouts();
	return lkt_done("test_cxx_condvar");
}
