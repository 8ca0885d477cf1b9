// SPDX-License-Identifier: MIT
/*
 * tests/cxx/cxxtest.h - what the C++ tests add to tests/lktest.h (CHECK, CHECK_EQ, the watchdog,
 * lkt_sanitized, lkt_done): a check that a piece of code aborts with a given message, a start gate
 * for threads, two threads running a loop each,
 * mutual exclusion under contention, and a user-defined clock (one that is neither steady_clock nor system_clock).
 */
#ifndef LOCKLAB_CXXTEST_H
#define LOCKLAB_CXXTEST_H

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lktest.h"

/*
 * Runs fn() in a forked child with stderr captured; true when the child was killed by SIGABRT and
 * its stderr contains `expect`. Call it before the test starts threads (fork copies only the caller).
 */
template <class F>
static bool cxxt_aborts_with(F fn, const char *expect)
{
	int fd[2];
	if (pipe(fd) != 0)
		return false;
	std::fflush(nullptr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		close(fd[1]);
		fn();
		_exit(0);	// fn() returned: it did not abort
	}
	close(fd[1]);
	std::string err;
	char buf[512];
	ssize_t n;
	while ((n = read(fd[0], buf, sizeof(buf))) > 0)
		err.append(buf, static_cast<size_t>(n));
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
	bool said = err.find(expect) != std::string::npos;
	if (!aborted || !said)
		std::fprintf(stderr, "expected SIGABRT with \"%s\"; child status 0x%x, stderr: %s\n", expect,
			     status, err.c_str());
	return aborted && said;
}

/* Threads wait at go.wait() until the main thread calls go.open(): they start contending together. */
struct cxxt_gate {
	std::atomic<bool> opened{false};
	void open() { opened.store(true, std::memory_order_release); }
	void wait() const
	{
		while (!opened.load(std::memory_order_acquire))
			std::this_thread::yield();
	}
};

/* Runs first(i) on one thread and second(i) on another, for i in [0, iters), both started together. */
template <class F1, class F2>
static void cxxt_two_threads(int iters, F1 first, F2 second)
{
	cxxt_gate go;
	std::thread t1([&] {
		go.wait();
		for (int i = 0; i < iters; i++)
			first(i);
	});
	std::thread t2([&] {
		go.wait();
		for (int i = 0; i < iters; i++)
			second(i);
	});
	go.open();
	t1.join();
	t2.join();
}

/*
 * Mutual exclusion under contention. `threads` threads, started together, run
 *	acquire(t, i); <critical section: an unprotected counter++, and a check that nobody else is in>;
 *	release(t, i);
 * (acquire returns true when it found the lock taken, e.g. a failed try_lock before lock) until each
 * has done at least min_iters sections AND `target` acquisitions have found the lock taken (contention really happened: on a busy 2-CPU machine short runs often execute one thread
 * after another), or 60 s (times LOCKLAB_TEST_TIMEOUT_SCALE) passed. The holder sleeps 10 us inside
 * every 256th section, so that waiters do meet a held lock, and outside every 256th, so that the
 * waiters of an unfair lock get it. Checks that the counter equals the
 * sections run, that no two threads were ever inside together, and that the contention target was met.
 */
template <class Acquire, class Release>
static void cxxt_exclusion(const char *name, int threads, long min_iters, long target, Acquire acquire,
			   Release release)
{
	long counter = 0;
	std::atomic<int> inside{0};
	std::atomic<long> overlaps{0}, contended{0}, sections{0};
	std::atomic<bool> stop{false};
	cxxt_gate go;
	std::vector<std::thread> ts;

	for (int t = 0; t < threads; t++)
		ts.emplace_back([&, t] {
			go.wait();
			long i = 0;
			for (; i < min_iters || !stop.load(std::memory_order_relaxed); i++) {
				/* relaxed (all): counters; the lock under test orders the counter */
				bool busy = inside.load(std::memory_order_relaxed) != 0;
				if (acquire(t, i) || busy)
					contended.fetch_add(1, std::memory_order_relaxed);
				if (inside.fetch_add(1, std::memory_order_relaxed) != 0)
					overlaps.fetch_add(1, std::memory_order_relaxed);
				counter++;
				/* now and then the holder sleeps inside: the others run and find the lock
				 * taken even when the machine is oversubscribed */
				if (i % 256 == 0)
					std::this_thread::sleep_for(std::chrono::microseconds(10));
				inside.fetch_sub(1, std::memory_order_relaxed);
				release(t, i);
				/* and now and then outside: an unfair lock's waiters get their turn */
				if (i % 256 == 128)
					std::this_thread::sleep_for(std::chrono::microseconds(10));
			}
			sections.fetch_add(i, std::memory_order_relaxed);
		});
	go.open();
	const char *scale = getenv("LOCKLAB_TEST_TIMEOUT_SCALE");
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::seconds(60 * (scale && atoi(scale) > 0 ? atoi(scale) : 1));
	while (contended.load(std::memory_order_relaxed) < target && std::chrono::steady_clock::now() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	stop.store(true, std::memory_order_relaxed);
	for (auto &t : ts)
		t.join();
	std::printf("%s: %ld critical sections on %d threads, %ld found the lock taken\n", name,
		    sections.load(), threads, contended.load());
	CHECK_EQ(counter, sections.load());
	CHECK_EQ(overlaps.load(), 0);
	CHECK(contended.load() >= target);
}

/* A clock of the program's own (steady_clock's time, shifted): the C++ wrappers' generic-clock path. */
struct cxxt_clock {
	using duration = std::chrono::microseconds;
	using rep = duration::rep;
	using period = duration::period;
	using time_point = std::chrono::time_point<cxxt_clock>;
	static constexpr bool is_steady = true;
	static time_point now() noexcept
	{
		return time_point(std::chrono::duration_cast<duration>(
			std::chrono::steady_clock::now().time_since_epoch() + std::chrono::hours(1)));
	}
};

#endif /* LOCKLAB_CXXTEST_H */
