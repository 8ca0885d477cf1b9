/* SPDX-License-Identifier: MIT */
/*
 * locklab/atomic-internal.h - the atomic fields of locklab's public structs, for C11 and C++.
 * Internal: the public headers include it; programs include those.
 *
 * A public struct declares each atomic field as LK_ATOMIC(T), and the inline functions use the C11
 * generics (atomic_load_explicit(&l->word, memory_order_acquire), ...). Both work unchanged in C
 * and in C++17 or later:
 *
 *   C       LK_ATOMIC(T) is _Atomic(T); <stdatomic.h> provides the generics and memory_order.
 *   C++     LK_ATOMIC(T) is std::atomic<T>. The calls resolve to std::atomic_*_explicit by
 *           argument-dependent lookup (the first argument is a std::atomic<T> *), and the names
 *           memory_order and memory_order_* are declared in the global namespace with using-
 *           declarations - the same declarations C++23's <stdatomic.h> makes, so both may be
 *           included together. Nothing else is added to the global namespace.
 *
 * Same layout in both languages: for every T used here std::atomic<T> is lock-free, has the size of T
 * and is aligned to its size, as C11's _Atomic(T) is under GCC and Clang; the static_asserts below
 * check this at compile time, and tests/cxx/test_cxx_layout.cc compares every public struct's size,
 * alignment and field offsets as the C compiler and the C++ compiler see them. An object may
 * therefore be shared between C and C++ translation units (a lk_mutex_t in a C struct locked from
 * C++), which is what C++23 P0943 guarantees for _Atomic(T) and std::atomic<T>.
 *
 * Not C++ <stdatomic.h>: before C++23 it is either missing (libstdc++ 12 provides it for C++23
 * only) or the C header, which C++ cannot parse.
 */
#ifndef LOCKLAB_ATOMIC_INTERNAL_H
#define LOCKLAB_ATOMIC_INTERNAL_H

#ifdef __cplusplus

#if __cplusplus < 201703L
#error "locklab's headers need C++17 or later (aggregate initialisation of std::atomic members)"
#endif

/* extern "C++": a program may include a locklab header inside its own extern "C" block */
extern "C++" {
#include <atomic>
#include <cstdint>

#define LK_ATOMIC(T) std::atomic<T>

using std::memory_order;
using std::memory_order_relaxed;
using std::memory_order_consume;
using std::memory_order_acquire;
using std::memory_order_release;
using std::memory_order_acq_rel;
using std::memory_order_seq_cst;

/* C11 _Atomic(T) layout: size of T, aligned to its size, lock-free (no hidden lock inside). */
#define LK_ATOMIC_SAME_LAYOUT_(T)                                                                  \
	static_assert(sizeof(std::atomic<T>) == sizeof(T) && alignof(std::atomic<T>) == sizeof(T) &&  \
			      std::atomic<T>::is_always_lock_free,                                         \
		      "std::atomic<" #T "> does not have the layout of C11 _Atomic(" #T ")")
LK_ATOMIC_SAME_LAYOUT_(std::uint16_t);
LK_ATOMIC_SAME_LAYOUT_(std::uint32_t);
LK_ATOMIC_SAME_LAYOUT_(std::uint64_t);
LK_ATOMIC_SAME_LAYOUT_(int);
LK_ATOMIC_SAME_LAYOUT_(std::uintptr_t);
LK_ATOMIC_SAME_LAYOUT_(void *);
#undef LK_ATOMIC_SAME_LAYOUT_
}

#else /* C */

#include <stdatomic.h>

#define LK_ATOMIC(T) _Atomic(T)

#endif
#endif /* LOCKLAB_ATOMIC_INTERNAL_H */
