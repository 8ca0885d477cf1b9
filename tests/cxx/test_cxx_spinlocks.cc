// SPDX-License-Identifier: MIT
/*
 * tests/cxx/test_cxx_spinlocks.cc - locklab's spin locks as standard Lockables: ttas_spin_lock,
 * ticket_spin_lock, queued_spin_lock and mcs_spin_lock. For each: the type's properties, try_lock
 * against a holder on another thread, mutual exclusion under contention through std::lock_guard /
 * std::unique_lock / std::scoped_lock (two locks of one kind and mixed kinds, in opposite orders),
 * and unlock of an unlocked lock aborting with its message. mcs_spin_lock also reports relocking by
 * its holder (EDEADLK) and a fifth lock held at once (ENOMEM) as std::system_error, and a
 * std::scoped_lock over five MCS locks ends in that exception with every lock released.
 */
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include <locklab/locklab.hpp>

#include "cxxtest.h"

template <class L>
static void check_type()
{
	static_assert(!std::is_copy_constructible_v<L> && !std::is_move_constructible_v<L>);
	static_assert(!std::is_copy_assignable_v<L> && !std::is_move_assignable_v<L>);
	static_assert(std::is_nothrow_default_constructible_v<L> && std::is_trivially_destructible_v<L>);
	static_assert(sizeof(L) == sizeof(*std::declval<L &>().native_handle()));
	static_assert(noexcept(std::declval<L &>().unlock()));
	[[maybe_unused]] static constexpr L constant_initialised{};
}

// C's view of the lock behind native_handle(), for the checks below.
static bool c_locked(locklab::ttas_spin_lock &l) { return lk_spin_ttas_is_locked(l.native_handle()); }
static bool c_locked(locklab::ticket_spin_lock &l) { return lk_spin_ticket_is_locked(l.native_handle()); }
static bool c_locked(locklab::queued_spin_lock &l) { return lk_qspin_is_locked(l.native_handle()); }
static bool c_locked(locklab::mcs_spin_lock &l) { return lk_spin_mcs_is_locked(l.native_handle()); }

template <class L>
static void test_try_lock(const char *name)
{
	L l;
	CHECK(!c_locked(l));
	CHECK(l.try_lock());
	CHECK(c_locked(l));
	bool other = true;
	std::thread([&] { other = l.try_lock(); }).join();
	if (other)
		std::fprintf(stderr, "%s: try_lock succeeded on another thread while held\n", name);
	CHECK(!other);
	l.unlock();
	CHECK(!c_locked(l));
	std::thread([&] {
		other = l.try_lock();
		if (other)
			l.unlock();
	}).join();
	CHECK(other);
	{
		std::lock_guard<L> g(l);
		CHECK(c_locked(l));
	}
	CHECK(!c_locked(l));
}

template <class L>
static void test_exclusion(const char *name)
{
	L l;
	cxxt_exclusion(
		name, 4, lkt_sanitized() ? 1000 : 5000, lkt_sanitized() ? 30 : 100,
		[&](int t, long i) {
			if ((i + t) % 2 == 0) {
				l.lock();
				return false;
			}
			if (l.try_lock())
				return false;
			l.lock();	// (not a try_lock loop: a ticket lock refuses try_lock while anybody waits)
			return true;
		},
		[&](int, long) { l.unlock(); });
	CHECK(!c_locked(l));
}

// Two locks taken in opposite orders by two threads through std::scoped_lock: no deadlock.
template <class A, class B>
static void test_scoped_pair()
{
	const int iters = lkt_sanitized() ? 2000 : 20000;
	A a;
	B b;
	long both = 0;

	cxxt_two_threads(
		iters,
		[&](int) {
			std::scoped_lock g(a, b);
			both++;
		},
		[&](int) {
			std::scoped_lock g(b, a);
			both++;
		});
	CHECK_EQ(both, 2L * iters);
	CHECK(!c_locked(a) && !c_locked(b));
}

static int errno_of(const std::system_error &e)
{
	return e.code().category() == std::generic_category() ? e.code().value() : -1;
}

static void test_mcs_errors()
{
	locklab::mcs_spin_lock l;
	l.lock();
	int err = 0;
	try {
		l.lock();
	} catch (const std::system_error &e) {
		err = errno_of(e);
		CHECK(e.code() == std::errc::resource_deadlock_would_occur);
	}
	CHECK_EQ(err, EDEADLK);
	err = 0;
	try {
		(void)l.try_lock();
	} catch (const std::system_error &e) {
		err = errno_of(e);
	}
	CHECK_EQ(err, EDEADLK);
	l.unlock();

	// one thread holds at most LK_SPIN_MCS_TLS_DEPTH MCS locks
	locklab::mcs_spin_lock ls[LK_SPIN_MCS_TLS_DEPTH + 1];
	for (int i = 0; i < LK_SPIN_MCS_TLS_DEPTH; i++)
		ls[i].lock();
	err = 0;
	try {
		ls[LK_SPIN_MCS_TLS_DEPTH].lock();
	} catch (const std::system_error &e) {
		err = errno_of(e);
	}
	CHECK_EQ(err, ENOMEM);
	CHECK(!c_locked(ls[LK_SPIN_MCS_TLS_DEPTH]));
	for (int i = 0; i < LK_SPIN_MCS_TLS_DEPTH; i++)
		ls[i].unlock();

	// scoped_lock over five: the exception comes out, and every lock is free again
	static_assert(LK_SPIN_MCS_TLS_DEPTH == 4, "the scoped_lock below names five locks");
	err = 0;
	try {
		std::scoped_lock g(ls[0], ls[1], ls[2], ls[3], ls[4]);
	} catch (const std::system_error &e) {
		err = errno_of(e);
	}
	CHECK_EQ(err, ENOMEM);
	for (auto &x : ls)
		CHECK(!c_locked(x));
	std::scoped_lock four(ls[0], ls[1], ls[2], ls[3]);	// four is fine
	for (int i = 0; i < 4; i++)
		CHECK(c_locked(ls[i]));
}

int main()
{
	lkt_watchdog(300);
	check_type<locklab::ttas_spin_lock>();
	check_type<locklab::ticket_spin_lock>();
	check_type<locklab::queued_spin_lock>();
	check_type<locklab::mcs_spin_lock>();

	// misuse first: cxxt_aborts_with forks, which must happen before any thread exists
	// spin_ttas does not report it (one release store, as tbb::spin_mutex; locklab/spin_ttas.h):
	// the lock stays free and usable
	{
		locklab::ttas_spin_lock l;
		l.unlock();
		CHECK(!lk_spin_ttas_is_locked(l.native_handle()));
		CHECK(l.try_lock());
		l.unlock();
		CHECK(!lk_spin_ttas_is_locked(l.native_handle()));
	}
	CHECK(cxxt_aborts_with([] { locklab::ticket_spin_lock l; l.unlock(); },
			       "locklab::ticket_spin_lock::unlock: the lock is not locked (EPERM)"));
	CHECK(cxxt_aborts_with([] { locklab::queued_spin_lock l; l.unlock(); },
			       "locklab::queued_spin_lock::unlock: the lock is not locked (EPERM)"));
	CHECK(cxxt_aborts_with([] { locklab::mcs_spin_lock l; l.unlock(); },
			       "locklab::mcs_spin_lock::unlock: this thread does not hold the lock (EPERM)"));

	test_try_lock<locklab::ttas_spin_lock>("ttas");
	test_try_lock<locklab::ticket_spin_lock>("ticket");
	test_try_lock<locklab::queued_spin_lock>("queued");
	test_try_lock<locklab::mcs_spin_lock>("mcs");
	test_exclusion<locklab::ttas_spin_lock>("ttas");
	test_exclusion<locklab::ticket_spin_lock>("ticket");
	test_exclusion<locklab::queued_spin_lock>("queued");
	test_exclusion<locklab::mcs_spin_lock>("mcs");
	test_scoped_pair<locklab::ttas_spin_lock, locklab::ttas_spin_lock>();
	test_scoped_pair<locklab::ticket_spin_lock, locklab::queued_spin_lock>();
	test_scoped_pair<locklab::mcs_spin_lock, locklab::mcs_spin_lock>();
	test_scoped_pair<locklab::queued_spin_lock, locklab::mcs_spin_lock>();
	test_mcs_errors();
	return lkt_done("test_cxx_spinlocks");
}
