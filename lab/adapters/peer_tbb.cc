/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/peer_tbb.cc - oneTBB's tbb::spin_mutex and tbb::queuing_mutex (libtbb-dev) behind C
 * entry points; lab/adapters/peer_ops.c turns them into lab_lock_ops (lab.h is C-only: <stdatomic.h>).
 *
 * Compiled to nothing unless cmake/peers.cmake found TBB and this is not a sanitizer build
 * (LAB_HAVE_TBB).
 *
 * Layout: each lab lock is one zeroed, 64-byte-aligned block of LAB_PEER_STATE bytes; the TBB mutex
 * is constructed in place at offset 0 by init (placement new) and destroyed in place by destroy.
 *
 *	spin_mutex:    [ std::atomic<bool> flag ]  test-and-set with exponential backoff, then yield
 *	queuing_mutex: [ std::atomic<scoped_lock *> tail ]  MCS queue; nullptr = free
 *
 * queuing_mutex is an MCS lock whose queue node is a tbb::queuing_mutex::scoped_lock: it must live,
 * at a fixed address, from acquire() to release(). The lab's lock()/unlock() verbs have nowhere to
 * keep it, so each thread owns LAB_TBB_NODES node slots in thread-local storage, each tagged with
 * the lock it is queued on (nullptr = free):
 *
 *	free --lock(l)/trylock ok: placement-new scoped_lock, acquire--> tagged l
 *	tagged l --unlock(l): release, ~scoped_lock--> free
 *
 * Restriction (docs/peers.md): at most LAB_TBB_NODES queuing locks held or awaited by one thread at
 * once, unlocked by the thread that locked; a violation prints why and aborts (carrying on would
 * corrupt the queue). The slots are thread-private: plain accesses. All ordering is TBB's own:
 * acquire()/lock() end with an acquire load or RMW that pairs with release()/unlock()'s release
 * store in the previous holder.
 */
#ifndef LAB_HAVE_TBB
#define LAB_HAVE_TBB 0
#endif

#if LAB_HAVE_TBB

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <oneapi/tbb/queuing_mutex.h>
#include <oneapi/tbb/spin_mutex.h>

#include "peer_cxx.h"

static_assert(sizeof(tbb::spin_mutex) <= LAB_PEER_STATE && alignof(tbb::spin_mutex) <= LAB_PEER_ALIGN,
	      "tbb::spin_mutex does not fit the lab's lock block");
static_assert(sizeof(tbb::queuing_mutex) <= LAB_PEER_STATE &&
	      alignof(tbb::queuing_mutex) <= LAB_PEER_ALIGN,
	      "tbb::queuing_mutex does not fit the lab's lock block");

/* ---- tbb::spin_mutex ------------------------------------------------------------------------- */

static inline tbb::spin_mutex *spin(void *l)
{
	return static_cast<tbb::spin_mutex *>(l);
}

extern "C" int lab_tbb_spin_init(void *l)
{
	new (l) tbb::spin_mutex();
	return 0;
}

extern "C" void lab_tbb_spin_destroy(void *l)
{
	spin(l)->~spin_mutex();
}

extern "C" void lab_tbb_spin_lock(void *l)
{
	spin(l)->lock();
}

extern "C" int lab_tbb_spin_trylock(void *l)
{
	return spin(l)->try_lock() ? 0 : EBUSY;
}

extern "C" void lab_tbb_spin_unlock(void *l)
{
	spin(l)->unlock();
}

/* ---- tbb::queuing_mutex ---------------------------------------------------------------------- */

#define LAB_TBB_NODES 8

namespace {

struct tbb_slot {
	void *lock;	/* the mutex this node is queued on; nullptr = free */
	alignas(tbb::queuing_mutex::scoped_lock) unsigned char node[sizeof(tbb::queuing_mutex::scoped_lock)];

	tbb::queuing_mutex::scoped_lock *sl()
	{
		return std::launder(reinterpret_cast<tbb::queuing_mutex::scoped_lock *>(node));
	}
};

/* Thread-private (trivially constructible: no TLS constructor or destructor is registered). */
thread_local tbb_slot tbb_slots[LAB_TBB_NODES];

[[noreturn, gnu::cold]] void tbb_misuse(const char *what)
{
	std::fprintf(stderr, "locklab: tbb_queuing_mutex: %s (restriction of the lab adapter, see docs/peers.md)\n",
		     what);
	std::abort();
}

tbb_slot *tbb_slot_get(void *l)
{
	for (auto &s : tbb_slots) {
		if (!s.lock) {
			s.lock = l;
			new (s.node) tbb::queuing_mutex::scoped_lock();
			return &s;
		}
	}
	tbb_misuse("one thread holds or waits for more than 8 queuing mutexes");
}

void tbb_slot_put(tbb_slot *s)
{
	s->sl()->~scoped_lock();	/* released already: the destructor has nothing to do */
	s->lock = nullptr;
}

tbb::queuing_mutex *queuing(void *l)
{
	return static_cast<tbb::queuing_mutex *>(l);
}

} /* namespace */

extern "C" int lab_tbb_queuing_init(void *l)
{
	new (l) tbb::queuing_mutex();
	return 0;
}

extern "C" void lab_tbb_queuing_destroy(void *l)
{
	queuing(l)->~queuing_mutex();
}

extern "C" void lab_tbb_queuing_lock(void *l)
{
	tbb_slot_get(l)->sl()->acquire(*queuing(l));
}

extern "C" int lab_tbb_queuing_trylock(void *l)
{
	tbb_slot *s = tbb_slot_get(l);

	if (s->sl()->try_acquire(*queuing(l)))
		return 0;
	tbb_slot_put(s);	/* never queued: the tail CAS failed, no other thread saw the node */
	return EBUSY;
}

extern "C" void lab_tbb_queuing_unlock(void *l)
{
	for (auto &s : tbb_slots) {
		if (s.lock == l) {
			/* hands the lock to our successor through its node; ours leaves the queue */
			s.sl()->release();
			tbb_slot_put(&s);
			return;
		}
	}
	tbb_misuse("unlock of a lock this thread does not hold");
}

#endif /* LAB_HAVE_TBB */
