// SPDX-License-Identifier: MIT
/*
 * tests/cxx/cxxtest.h - what the C++ tests add to tests/lktest.h (CHECK, CHECK_EQ, the watchdog,
 * lkt_sanitized, lkt_done): a check that a piece of code aborts with a given message, a start gate
 * for threads, and a user-defined clock (one that is neither steady_clock nor system_clock).
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
