// SPDX-License-Identifier: MIT
//
// apps/cxx-queue.cc - locklab-app-cxx-queue: a C++ program that leans on the standard library's
// locks, for `locklab apps`: everything below reaches the shim through libstdc++'s calls into
// pthreads (std::mutex -> pthread_mutex_lock, std::condition_variable -> pthread_cond_wait and, for
// wait_for on steady_clock, pthread_cond_clockwait; std::timed_mutex -> pthread_mutex_clocklock;
// std::recursive_mutex -> a recursive pthread mutex).
//
//   P producers push N items each into a bounded queue (capacity K) guarded by one std::mutex and two
//   std::condition_variables (not_full, not_empty); C consumers pop them, hash each item with W
//   rounds of work outside the lock, and add the result to a total under a std::recursive_mutex
//   (locked twice, nested). Every 64th pop waits with wait_for (a timed wait that is woken in time);
//   a std::timed_mutex guards a counter with try_lock_for.
//
// The output is one line that does not depend on scheduling (a sum over items is order-free):
//
//	cxx-queue: producers=P consumers=C items=N*P checksum=0x...
//
// so `locklab apps` can check that every lock gives byte-identical output. Exit 0, or 2 on bad
// arguments (one line on stderr).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
	unsigned producers = 2, consumers = 2;
	uint64_t items = 200000;	// per producer
	unsigned capacity = 64;
	unsigned work = 50;
};

[[noreturn]] void bad(const char *opt, const char *what, const char *got)
{
	std::fprintf(stderr, "locklab-app-cxx-queue: %s: expected %s, got '%s'\n", opt, what, got);
	std::exit(2);
}

uint64_t parse(const char *opt, const char *v, uint64_t lo, uint64_t hi)
{
	char *end = nullptr;
	unsigned long long x = std::strtoull(v, &end, 10);

	if (!*v || *end || *v == '-' || x < lo || x > hi) {
		std::string what = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
		bad(opt, what.c_str(), v);
	}
	return x;
}

Options parse_args(int argc, char **argv)
{
	Options o;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i];
		if (i + 1 >= argc)
			bad(opt, "a value", "");
		const char *v = argv[++i];
		if (!std::strcmp(opt, "--producers"))
			o.producers = (unsigned)parse(opt, v, 1, 256);
		else if (!std::strcmp(opt, "--consumers"))
			o.consumers = (unsigned)parse(opt, v, 1, 256);
		else if (!std::strcmp(opt, "--items"))
			o.items = parse(opt, v, 1, 1000000000);
		else if (!std::strcmp(opt, "--capacity"))
			o.capacity = (unsigned)parse(opt, v, 1, 1u << 20);
		else if (!std::strcmp(opt, "--work"))
			o.work = (unsigned)parse(opt, v, 0, 1000000);
		else
			bad(opt, "--producers, --consumers, --items, --capacity or --work", opt);
	}
	return o;
}

uint64_t mix(uint64_t x, unsigned rounds)
{
	x += 0x9e3779b97f4a7c15ull;
	for (unsigned r = 0; r <= rounds; r++) {
		x ^= x >> 30;
		x *= 0xbf58476d1ce4e5b9ull;
		x ^= x >> 27;
		x *= 0x94d049bb133111ebull;
		x ^= x >> 31;
	}
	return x;
}

class Queue {
public:
	explicit Queue(unsigned cap) : cap_(cap) {}

	void push(uint64_t v)
	{
		std::unique_lock<std::mutex> lk(m_);
		not_full_.wait(lk, [&] { return q_.size() < cap_; });
		q_.push_back(v);
		lk.unlock();
		not_empty_.notify_one();
	}

	// false when the queue is closed and drained
	bool pop(uint64_t &v, bool timed)
	{
		std::unique_lock<std::mutex> lk(m_);
		if (timed) {
			// a timed wait on steady_clock (pthread_cond_clockwait); a timeout only loops
			while (!closed_ && q_.empty())
				not_empty_.wait_for(lk, std::chrono::milliseconds(50));
		} else {
			not_empty_.wait(lk, [&] { return closed_ || !q_.empty(); });
		}
		if (q_.empty())
			return false;
		v = q_.front();
		q_.pop_front();
		lk.unlock();
		not_full_.notify_one();
		return true;
	}

	void close()
	{
		{
			std::lock_guard<std::mutex> lk(m_);
			closed_ = true;
		}
		not_empty_.notify_all();
	}

private:
	std::mutex m_;
	std::condition_variable not_full_, not_empty_;
	std::deque<uint64_t> q_;
	unsigned cap_;
	bool closed_ = false;
};

} // namespace

int main(int argc, char **argv)
{
	Options o = parse_args(argc, argv);
	Queue q(o.capacity);
	std::recursive_mutex total_m;
	std::timed_mutex pops_m;
	uint64_t total = 0, pops = 0, timed_pops = 0;

	std::vector<std::thread> producers, consumers;
	for (unsigned p = 0; p < o.producers; p++)
		producers.emplace_back([&, p] {
			for (uint64_t i = 0; i < o.items; i++)
				q.push((uint64_t)p << 40 | i);
		});
	for (unsigned c = 0; c < o.consumers; c++)
		consumers.emplace_back([&] {
			uint64_t v, n = 0;
			while (q.pop(v, (n & 63) == 63)) {
				uint64_t h = mix(v, o.work);
				{
					std::lock_guard<std::recursive_mutex> a(total_m);
					std::lock_guard<std::recursive_mutex> b(total_m);	// nested: recursion
					total += h;
				}
				n++;
			}
			while (!pops_m.try_lock_for(std::chrono::seconds(1)))
				;
			pops += n;
			timed_pops += n / 64;
			pops_m.unlock();
		});
	for (auto &t : producers)
		t.join();
	q.close();
	for (auto &t : consumers)
		t.join();

	uint64_t expect = (uint64_t)o.producers * o.items;
	if (pops != expect) {
		std::fprintf(stderr, "locklab-app-cxx-queue: popped %llu items, pushed %llu (lost or duplicated)\n",
			     (unsigned long long)pops, (unsigned long long)expect);
		return 1;
	}
	std::printf("cxx-queue: producers=%u consumers=%u items=%llu checksum=0x%016llx\n", o.producers,
		    o.consumers, (unsigned long long)expect, (unsigned long long)total);
	return 0;
}
