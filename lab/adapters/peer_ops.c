/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/peer_ops.c - lab_lock_ops tables for the peers implemented outside C: oneTBB and
 * Abseil (lab/adapters/peer_tbb.cc, peer_absl.cc) and Rust std / parking_lot (peers/rust).
 *
 * Each table exists only when cmake/peers.cmake detected its library at build time and this is not a
 * sanitizer build (LAB_HAVE_TBB / LAB_HAVE_ABSL / LAB_HAVE_RUST); lab/registry.def lists the
 * others as missing, with the reason, so the lab carries on without them.
 *
 * Layout: every peer lock is one LAB_PEER_STATE-byte (64), LAB_PEER_ALIGN-aligned zeroed block
 * holding the peer's own object at offset 0 (see lab/adapters/peer_cxx.h). This file adds no state
 * and no atomics: the verbs are direct calls, and all ordering (acquire in lock/trylock, release
 * in unlock) is the peer library's own.
 *
 * The Rust objects' size is only known to the Rust compiler, so their init checks it against the
 * block (EOVERFLOW if it ever outgrew 64 bytes, instead of scribbling past the allocation).
 */
#include <errno.h>

#include "lab.h"
#include "peer_cxx.h"

#ifndef LAB_HAVE_TBB
#define LAB_HAVE_TBB 0
#endif
#ifndef LAB_HAVE_ABSL
#define LAB_HAVE_ABSL 0
#endif
#ifndef LAB_HAVE_RUST
#define LAB_HAVE_RUST 0
#endif

_Static_assert(LAB_PEER_STATE >= LAB_CACHELINE && LAB_PEER_ALIGN <= LAB_CACHELINE,
	       "the lab allocates LAB_CACHELINE-aligned blocks");

#define PEER_OPS(sym, p, init_fn, fl)		\
	const struct lab_lock_ops sym = {	\
		.size = LAB_PEER_STATE,		\
		.init = init_fn,		\
		.destroy = p##_destroy,		\
		.lock = p##_lock,		\
		.trylock = p##_trylock,		\
		.unlock = p##_unlock,		\
		.flags = (fl),			\
	}

#if LAB_HAVE_TBB
/* Spins with exponential backoff, then sched_yield(); unfair. */
PEER_OPS(lab_tbb_spin_ops, lab_tbb_spin, lab_tbb_spin_init, LAB_LOCK_SPINS);
/* MCS queue, each waiter spinning (backoff, then yield) on its own node: FIFO. */
PEER_OPS(lab_tbb_queuing_ops, lab_tbb_queuing, lab_tbb_queuing_init,
	 LAB_LOCK_SPINS | LAB_LOCK_FIFO | LAB_LOCK_THREAD_NODES);
#endif

#if LAB_HAVE_ABSL
/* Spins briefly, then blocks: a sleeping mutex. Its slow paths sleep in nanosleep() (MutexDelay, the
 * one-time TSC calibration in Enqueue) and read sysfs (open/read/close): cancellation points. */
PEER_OPS(lab_absl_mutex_ops, lab_absl, lab_absl_init, LAB_LOCK_CANCEL_POINTS);
#endif

#if LAB_HAVE_RUST
static int rust_fits(size_t size, size_t align)
{
	return size <= LAB_PEER_STATE && align <= LAB_PEER_ALIGN ? 0 : EOVERFLOW;
}

static int rust_std_init(void *l)
{
	int err = rust_fits(lab_rust_std_size(), lab_rust_std_align());

	return err ? err : lab_rust_std_init(l);
}

static int rust_pl_init(void *l)
{
	int err = rust_fits(lab_rust_pl_size(), lab_rust_pl_align());

	return err ? err : lab_rust_pl_init(l);
}

/* Futex mutex: spins a little, then sleeps. */
PEER_OPS(lab_rust_std_ops, lab_rust_std, rust_std_init, 0);
/* Spins a little (with yields), then parks in parking_lot's global table; eventually fair. */
PEER_OPS(lab_rust_pl_ops, lab_rust_pl, rust_pl_init, 0);
#endif
